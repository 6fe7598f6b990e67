"""Cohort trees: config, the planner's arithmetic over the tree, the Cohort objects, the refusals and warnings."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from aiperf_kueue.cli import cli
from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.plan import manifests
from aiperf_kueue.plan.stack_warnings import stack_warnings
from aiperf_kueue.workload.admission import JobsReport
from tests.support import ROOT, plan_values
from tests.test_markdown import mermaid_graph

CPU_POOL = {"name": "cpu", "nodes": 1, "cpu": "10", "memory": "10Gi"}


def tree_stack(
    cohorts: list[dict[str, Any]], cqs: list[dict[str, Any]], kueue: dict[str, Any] | None = None, **queues: Any
) -> dict[str, Any]:
    for cq in cqs:
        cq.setdefault("namespaces", [{"name": f"ns-{cq['name']}"}])
    values: dict[str, Any] = {
        "inventory": {"headroom": 0, "pools": [CPU_POOL]},
        "queues": {"cohorts": cohorts, "clusterQueues": cqs, **queues},
    }
    if kueue is not None:
        values["kueue"] = kueue
    return values


#: org -> dept-x (own 10 %) -> team-a 30 %, team-b 20 %; org -> dept-y -> team-c 40 % (lends at most 1 CPU).
THREE_LEVELS = tree_stack(
    [
        {"name": "org"},
        {"name": "dept-x", "parentName": "org", "share": 10},
        {"name": "dept-y", "parentName": "org", "lendingLimit": {"cpu": {"cpu": "1"}}},
    ],
    [
        {"name": "team-a", "cohortName": "dept-x", "share": 30, "borrowingLimit": {"cpu": {"cpu": "2"}}},
        {"name": "team-b", "cohortName": "dept-x", "share": 20},
        {"name": "team-c", "cohortName": "dept-y", "share": 40},
    ],
)


def test_subtree_quotas_and_reach_are_kueues_down_the_tree() -> None:
    _, plan = plan_values(THREE_LEVELS)
    assert plan.parents == {
        "dept-x": "org",
        "dept-y": "org",
        "team-a": "dept-x",
        "team-b": "dept-x",
        "team-c": "dept-y",
    }
    assert plan.cohorts == ("org", "dept-x", "dept-y")
    cpu = {name: plan.subtree_quota(name, "cpu", "cpu") for name in ("org", "dept-x", "dept-y")}
    # dept-x: own 1 + team-a 3 + team-b 2; dept-y: team-c's 4 (it keeps 3 by its lendingLimit 1, lends 1 up);
    # org: dept-x's 6 + the 1 dept-y lends.
    assert cpu == {"org": 7, "dept-x": 6, "dept-y": 4}
    assert plan.local_quota("dept-y", "cpu", "cpu") == 3
    reach = {cq: plan.max_capacity(cq, "cpu", "cpu") for cq in ("team-a", "team-b", "team-c")}
    # team-a: its 3 + at most 2 borrowed; team-b: all of org's 7; team-c: dept-y keeps 3 for it, plus org's 7.
    assert reach == {"team-a": 5, "team-b": 7, "team-c": 10}
    assert plan.borrowable("team-c", "cpu", "cpu") == 6


def test_cohort_table_is_what_plan_prints_and_exports() -> None:
    _, plan = plan_values(THREE_LEVELS)
    table = plan.cohort_table()
    assert table["cohorts"]["dept-x"] == {
        "parent": "org",
        "own": {"cpu": {"cpu": "1", "memory": "1Gi"}},
        "subtree": {"cpu": {"cpu": "6", "memory": "6Gi"}},
        "borrowingLimits": {},
        "lendingLimits": {},
    }
    assert table["cohorts"]["dept-y"]["lendingLimits"] == {"cpu": {"cpu": "1"}}
    assert table["clusterQueues"]["team-c"] == {"parent": "dept-y", "reach": {"cpu": {"cpu": "10", "memory": "10Gi"}}}


def test_cohort_objects_carry_parent_own_quota_limits_and_weight() -> None:
    values = tree_stack(
        [{"name": "org"}, {"name": "dept", "parentName": "org", "share": 10, "fairSharing": {"weight": "0.5"}}],
        [{"name": "team", "cohortName": "dept", "share": 90}],
    )
    config, plan = plan_values(values)
    assert manifests.cohort("org", plan, config.queues)["spec"] == {}
    dept = manifests.cohort("dept", plan, config.queues)
    assert (dept["apiVersion"], dept["kind"], dept["metadata"]["name"]) == ("kueue.x-k8s.io/v1beta2", "Cohort", "dept")
    assert dept["spec"] == {
        "parentName": "org",
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory"],
                "flavors": [
                    {
                        "name": "cpu",
                        "resources": [{"name": "cpu", "nominalQuota": "1"}, {"name": "memory", "nominalQuota": "1Gi"}],
                    }
                ],
            }
        ],
        "fairSharing": {"weight": "500m"},
    }
    cq = manifests.cluster_queue(
        config.queues.cluster_queues[0], plan, config.queues.cohort_of(config.queues.cluster_queues[0])
    )
    assert cq["spec"]["cohortName"] == "dept"


def test_flat_cohort_is_still_a_tree_of_one() -> None:
    values = tree_stack([], [{"name": "a", "share": 60}, {"name": "b", "share": 40}], cohort="all")
    config, plan = plan_values(values)
    assert (plan.parents, plan.cohorts) == ({"a": "all", "b": "all"}, ("all",))
    assert plan.max_capacity("a", "cpu", "cpu") == 10
    assert manifests.cohort("all", plan, config.queues)["spec"] == {}


def test_a_queue_may_join_the_flat_cohort_or_a_tree_cohort() -> None:
    values = tree_stack(
        [{"name": "lab", "parentName": "all"}],
        [{"name": "a", "share": 50}, {"name": "b", "cohortName": "lab", "share": 50}],
        cohort="all",
    )
    _, plan = plan_values(values)
    assert plan.parents == {"lab": "all", "a": "all", "b": "lab"}
    assert plan.cohorts == ("lab", "all")
    assert plan.max_capacity("a", "cpu", "cpu") == 10


def _problems(values: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as err:
        plan_values(values)
    return err.value.lines()


def test_unknown_parent_cycle_and_root_limits_are_refused() -> None:
    values = tree_stack(
        [
            {"name": "org", "borrowingLimit": {"cpu": {"cpu": "1"}}},
            {"name": "x", "parentName": "y"},
            {"name": "y", "parentName": "x"},
            {"name": "z", "parentName": "nowhere"},
        ],
        [{"name": "a", "cohortName": "org", "share": 50}, {"name": "b", "cohortName": "lost", "share": 50}],
    )
    assert _problems(values) == [
        "test.yaml: aiperf-kueue:queues.cohorts[0].borrowingLimit: borrowingLimit needs parentName: Kueue rejects "
        "it on a root Cohort, which has no parent to borrow from or lend to",
        "test.yaml: aiperf-kueue:queues.cohorts[3].parentName: unknown Cohort 'nowhere'; Cohorts: org, x, y, z "
        "(Kueue would treat it as an empty Cohort and cut this subtree off the rest of the tree)",
        "test.yaml: aiperf-kueue:queues.cohorts[1].parentName: Cohort 'x' is its own ancestor (x -> y -> x); Kueue "
        "stops admitting in every ClusterQueue of a tree with a cycle",
        "test.yaml: aiperf-kueue:queues.cohorts[2].parentName: Cohort 'y' is its own ancestor (y -> x -> y); Kueue "
        "stops admitting in every ClusterQueue of a tree with a cycle",
        "test.yaml: aiperf-kueue:queues.clusterQueues[1].cohortName: unknown Cohort 'lost'; Cohorts: org, x, y, z "
        "(declare it in queues.cohorts)",
    ]


def test_names_must_be_unique_across_cohorts_and_cluster_queues() -> None:
    values = tree_stack([{"name": "org"}, {"name": "org"}, {"name": "a"}], [{"name": "a", "cohortName": "org"}])
    assert _problems(values) == [
        "test.yaml: aiperf-kueue:queues.cohorts[1].name: duplicate Cohort name 'org' (also at queues.cohorts[0])",
        "test.yaml: aiperf-kueue:queues.cohorts[2].name: Cohort 'a' has the name of a ClusterQueue of this stack; "
        "give one of them another name",
    ]


def test_cohort_shares_count_against_the_pool_with_the_queues() -> None:
    values = tree_stack(
        [{"name": "org"}, {"name": "dept", "parentName": "org", "share": 30}],
        [{"name": "a", "cohortName": "dept", "share": 80}],
    )
    assert _problems(values) == [
        "test.yaml: aiperf-kueue:queues.cohorts[1].share: shares of pool 'cpu' add up to 110%, more than 100% "
        "(a 80, dept 30)"
    ]


def test_a_tree_needs_the_v1beta2_cohort_api() -> None:
    values = tree_stack(
        [{"name": "org"}], [{"name": "a", "cohortName": "org", "share": 100}], kueue={"version": "0.10.1"}
    )
    assert _problems(values) == [
        "test.yaml: aiperf-kueue:queues.cohorts: a Cohort tree needs Kueue's v1beta2 Cohort API (parentName, "
        "resourceGroups, fairSharing), and this stack writes Kueue 0.10.1's v1beta1 objects (Cohort v1alpha1); fix: "
        "kueue.version 0.15.0 or newer with kueue.apiVersion v1beta2 (auto picks it from 0.16.0), or one flat "
        "queues.cohort"
    ]


def test_cohort_share_and_nominal_quota_are_exclusive() -> None:
    values = tree_stack(
        [{"name": "org", "share": 10, "nominalQuota": {"cpu": {"cpu": "1"}}}], [{"name": "a", "cohortName": "org"}]
    )
    assert _problems(values) == [
        "test.yaml: aiperf-kueue:queues.cohorts[0]: set at most one of share and nominalQuota; both are set"
    ]


def test_borrowing_without_reclaim_is_asked_per_tree() -> None:
    values = tree_stack(
        [{"name": "org"}, {"name": "dept-x", "parentName": "org"}, {"name": "dept-y", "parentName": "org"}],
        [
            {"name": "team-a", "cohortName": "dept-x", "share": 50},
            {"name": "team-c", "cohortName": "dept-y", "share": 50},
        ],
    )
    config, plan = plan_values(values)
    warnings = [w for w in stack_warnings(config, plan, JobsReport(())) if "reclaim" in w]
    assert warnings == [
        "queues.clusterQueues[0]: ClusterQueue 'team-a' lends to and borrows from cohort 'dept-x' (in the tree of "
        "'org'), but no member of the cohort tree can reclaim (preemption.reclaimWithinCohort is Never or unset "
        "everywhere): lent quota stays with the borrower's jobs until they finish, so nominal quota is not "
        "guaranteed; fix: set preemption.reclaimWithinCohort: Any (or LowerPriority) on each member that lends, so "
        "it can take its quota back, or stop the sharing with lendingLimit / borrowingLimit 0",
        "queues.clusterQueues[1]: ClusterQueue 'team-c' lends to and borrows from cohort 'dept-y' (in the tree of "
        "'org'), but no member of the cohort tree can reclaim (preemption.reclaimWithinCohort is Never or unset "
        "everywhere): lent quota stays with the borrower's jobs until they finish, so nominal quota is not "
        "guaranteed; fix: set preemption.reclaimWithinCohort: Any (or LowerPriority) on each member that lends, so "
        "it can take its quota back, or stop the sharing with lendingLimit / borrowingLimit 0",
    ]
    reclaiming = tree_stack(
        values["queues"]["cohorts"],
        [{**cq, "preemption": {"reclaimWithinCohort": "Any"}} for cq in values["queues"]["clusterQueues"]],
    )
    config, plan = plan_values(reclaiming)
    assert [w for w in stack_warnings(config, plan, JobsReport(())) if "reclaim" in w] == []


def test_two_separate_trees_do_not_borrow_from_each_other() -> None:
    values = tree_stack(
        [{"name": "left"}, {"name": "right"}],
        [{"name": "a", "cohortName": "left", "share": 50}, {"name": "b", "cohortName": "right", "share": 50}],
    )
    _, plan = plan_values(values)
    assert (plan.root("a"), plan.root("b")) == ("left", "right")
    assert (plan.max_capacity("a", "cpu", "cpu"), plan.max_capacity("b", "cpu", "cpu")) == (Fraction(5), Fraction(5))


SCENARIO_STACK = ROOT / "tests" / "e2e" / "scenarios" / "cohort-tree-reclaim" / "02-a2.yaml"


def test_plan_prints_the_tree_and_the_review_draws_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["plan", str(SCENARIO_STACK), "--out", str(tmp_path / "text")]) == 0
    out = capsys.readouterr().out
    start = out.index("Cohort tree")
    assert out[start : out.index("\n\n", start)].splitlines()[2:] == [
        "  node                       what     flavor  cpu  memory",
        "  Cohort org                 subtree  cpu     8    16Gi",
        "  ├─ Cohort dept-x           subtree  cpu     4    8Gi",
        "  │  └─ ClusterQueue team-a  reach    cpu     8    16Gi",
        "  └─ Cohort dept-y           subtree  cpu     4    8Gi",
        "     └─ ClusterQueue team-c  reach    cpu     8    16Gi",
    ]
    data = json.loads((tmp_path / "text" / "plan.json").read_text())
    assert data["cohorts"]["cohorts"]["dept-y"]["parent"] == "org"
    assert cli.main(["plan", str(SCENARIO_STACK), "--format", "markdown", "--out", str(tmp_path / "md")]) == 0
    nodes, edges, _ = mermaid_graph(capsys.readouterr().out)
    assert [(a, b) for a, b in edges if a.startswith("cohort")] == [
        ("cohort3", "cohort1"),
        ("cohort3", "cohort2"),
        ("cohort1", "cq1"),
        ("cohort2", "cq2"),
    ]
    assert [n for n in nodes if n.startswith("cohort")] == ["cohort1", "cohort2", "cohort3"]
