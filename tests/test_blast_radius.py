"""Blast radius: a small config change touches only the resources it must, and a plan is reproducible.

Each test runs the whole program on an in-memory variation of the prod stack and compares every
registered resource (inputs and options) with prod's own run, by URN.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from aiperf_kueue.cli.cli import main
from aiperf_kueue.cli.engine import run_program
from tests.support import CHECKED_STACKS, committed_run, stack_file, stack_values

Values = dict[str, Any]
CQ = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
OPERATOR_CHART = (
    "urn:pulumi:prod::aiperf-kueue::aiperf-kueue:index:AIPerfOperator$kubernetes:helm.sh/v4:Chart::operator-chart"
)


@dataclass(frozen=True)
class Change:
    """What a config change did to the registered resources, by URN."""

    before: dict[str, dict[str, Any]]
    after: dict[str, dict[str, Any]]

    @property
    def added(self) -> set[str]:
        return set(self.after) - set(self.before)

    @property
    def removed(self) -> set[str]:
        return set(self.before) - set(self.after)

    @property
    def changed(self) -> set[str]:
        """Resources in both runs whose record differs in anything: inputs, parent, dependencies, options."""
        return {u for u in set(self.before) & set(self.after) if self.before[u] != self.after[u]}

    def changed_fields(self, urn: str) -> set[str]:
        return {k for k in self.after[urn] if self.after[urn][k] != self.before[urn][k]}


def _by_urn(resources: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["urn"]: r for r in resources}


def change(edit: Callable[[Values], None]) -> Change:
    """prod's run, and the run of prod's values after ``edit``."""
    values, secret_keys = stack_values("prod")
    edit(values)
    after = run_program("prod", values, secret_keys)
    return Change(_by_urn(committed_run("prod").resources), _by_urn(after.resources))


def _at(value: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def assert_no_replacement(result: Change) -> None:
    """No changed resource changed at a path its ``replaceOnChanges`` names (no replace, no re-create)."""
    for urn in result.changed:
        before, after = result.before[urn], result.after[urn]
        for path in after["replaceOnChanges"]:
            if path == "*":
                assert before["inputs"] == after["inputs"], urn
            else:
                assert _at(before["inputs"], path) == _at(after["inputs"], path), (urn, path)


def _children(result: Change, component: str) -> set[str]:
    return {u for u, r in result.after.items() if r["parent"] == component}


# --------------------------------------------------------------------------- a pool grows


@pytest.mark.parametrize("pool", [0, 1, 2])
def test_a_pools_node_count_changes_only_cluster_queue_inputs(pool: int) -> None:
    def grow(values: Values) -> None:
        values["inventory"]["pools"][pool]["nodes"] += 2

    result = change(grow)
    assert result.added == set() and result.removed == set()
    assert result.changed, "more nodes must mean more quota somewhere"
    for urn in result.changed:
        assert result.after[urn]["type"] == CQ, urn
        assert result.changed_fields(urn) == {"inputs"}, urn
        # Only the quotas moved: name, labels, cohort, selector, policies are as they were.
        before, after = result.before[urn]["inputs"], result.after[urn]["inputs"]
        assert {k: v for k, v in after.items() if k != "spec"} == {k: v for k, v in before.items() if k != "spec"}
        assert {k: v for k, v in after["spec"].items() if k != "resourceGroups"} == {
            k: v for k, v in before["spec"].items() if k != "resourceGroups"
        }
    assert_no_replacement(result)


def test_every_cluster_queue_sharing_the_pool_gets_its_new_quota() -> None:
    # gpu-h100 is shared by all three teams: each of them changes, and nothing else.
    result = change(lambda v: v["inventory"]["pools"][1].__setitem__("nodes", 6))
    names = {result.after[u]["name"] for u in result.changed}
    assert names == {"queues-cq-team-a", "queues-cq-team-b", "queues-cq-research"}


# --------------------------------------------------------------------------- a namespace is added


def _add_namespace(cq: int, namespace: dict[str, Any], at: int | None = None) -> Callable[[Values], None]:
    def edit(values: Values) -> None:
        namespaces = values["queues"]["clusterQueues"][cq]["namespaces"]
        namespaces.insert(len(namespaces) if at is None else at, namespace)

    return edit


NEW_NAMESPACES = [
    pytest.param(
        _add_namespace(0, {"name": "bench-new"}), "ns-bench-new", "Namespace", ["aiperf-queue"], id="first-cq-appended"
    ),
    pytest.param(
        _add_namespace(1, {"name": "bench-new", "defaultQueue": True}),
        "ns-bench-new",
        "Namespace",
        ["aiperf-queue", "default"],
        id="default-queue",
    ),
    pytest.param(
        _add_namespace(2, {"name": "bench-new"}, at=0),
        "ns-bench-new",
        "Namespace",
        ["aiperf-queue"],
        id="last-cq-prepended",
    ),
    pytest.param(
        _add_namespace(1, {"name": "shared-new", "create": False}),
        "ns-shared-new",
        "NamespacePatch",
        ["aiperf-queue"],
        id="existing-namespace",
    ),
]


@pytest.mark.parametrize(("edit", "prefix", "namespace_kind", "local_queues"), NEW_NAMESPACES)
def test_a_new_namespace_adds_only_its_own_resources(
    edit: Callable[[Values], None], prefix: str, namespace_kind: str, local_queues: list[str]
) -> None:
    result = change(edit)
    # Under the stack's one BenchmarkNamespaces component (``ns``): the namespace (or its label patch), its
    # LocalQueues and its RoleBinding; no component of its own.
    added = sorted((result.after[u]["type"].rsplit(":", 1)[-1], result.after[u]["name"]) for u in result.added)
    assert added == sorted(
        [
            *(("LocalQueue", f"{prefix}-lq-{q}") for q in local_queues),
            (namespace_kind, f"{prefix}-ns"),
            ("RoleBinding", f"{prefix}-rolebinding"),
        ]
    )
    assert {result.after[u]["parent"].rsplit("::", 1)[-1] for u in result.added} == {"ns"}
    assert result.removed == set()
    # Nothing else changes: no ClusterQueue (its namespaceSelector is a label), no chart, no job.
    assert result.changed == set()


def test_the_operator_charts_benchmark_namespace_stays_when_a_namespace_is_added() -> None:
    before = committed_run("prod")
    [chart] = [r for r in before.resources if r["urn"] == OPERATOR_CHART]
    assert chart["inputs"]["values"]["benchmarkNamespace"]["name"] == "bench-team-a"
    for edit in (_add_namespace(0, {"name": "bench-new"}), _add_namespace(2, {"name": "bench-new"}, at=0)):
        after = change(edit).after[OPERATOR_CHART]
        assert after == chart
        assert after["inputs"]["values"]["benchmarkNamespace"]["name"] == "bench-team-a"


def test_a_namespace_inserted_first_of_all_renames_the_charts_benchmark_namespace() -> None:
    """The one inherent exception: the chart names the first benchmark namespace of the first ClusterQueue
    (with ``create: false`` it is only a label for it). Inserting a namespace before that one changes the
    operator chart's values; appending anywhere, or inserting in any other ClusterQueue, does not."""
    result = change(_add_namespace(0, {"name": "bench-first"}, at=0))
    assert result.changed == {OPERATOR_CHART}
    assert result.after[OPERATOR_CHART]["inputs"]["values"]["benchmarkNamespace"]["name"] == "bench-first"


# --------------------------------------------------------------------------- a job is added


def _add_job(values: Values) -> None:
    job = copy.deepcopy(values["jobs"][0])
    job["name"] = "llama-latency-2"
    job["namespace"] = "bench-team-b"
    job.pop("priorityClass", None)
    values["jobs"].append(job)


def test_a_new_job_adds_only_that_job() -> None:
    result = change(_add_job)
    [added] = result.added
    assert result.after[added]["type"] == "kubernetes:aiperf.nvidia.com/v1alpha1:AIPerfJob"
    assert result.after[added]["name"] == "jobs-bench-team-b-llama-latency-2"
    assert result.removed == set()
    assert result.changed == set()


def test_a_new_sweep_point_adds_only_that_job() -> None:
    result = change(lambda v: v["sweeps"][0]["concurrency"].append(2048))
    assert {result.after[u]["name"] for u in result.added} == {"jobs-bench-research-llama-sweep-c2048"}
    assert result.removed == set() and result.changed == set()


# --------------------------------------------------------------------------- URNs are stable


def _reorder(values: Values) -> None:
    queues = values["queues"]["clusterQueues"]
    queues.reverse()
    for cq in queues:
        cq["namespaces"].reverse()
    values["jobs"].reverse()
    values["sweeps"].reverse()
    values["priorityClasses"].reverse()


def _retune(values: Values) -> None:
    values["inventory"]["headroom"] = 10
    values["inventory"]["pools"][0]["cpu"] = "95"
    values["queues"]["clusterQueues"][0]["namespaces"][0]["labels"] = {"team": "a"}
    values["priorityClasses"][0]["value"] = 2000
    values["sweeps"][0]["requestsPerConcurrency"] = 5


@pytest.mark.parametrize("edit", [_reorder, _retune], ids=["reordered", "retuned"])
def test_urns_are_unchanged_when_nothing_is_renamed(edit: Callable[[Values], None]) -> None:
    result = change(edit)
    assert set(result.after) == set(result.before)
    assert result.changed, "the edit should have changed something"


def test_reordering_changes_no_resource_but_the_ones_whose_order_is_meaningful() -> None:
    # Order matters only where it is meaning: ClusterQueue quotas (largest-remainder ties go to the
    # earlier queue) and the chart's first benchmark namespace. Jobs and namespaces are keyed by name.
    result = change(_reorder)
    for urn in result.changed:
        assert result.after[urn]["type"] in (CQ, "kubernetes:helm.sh/v4:Chart"), urn
    assert_no_replacement(result)


# --------------------------------------------------------------------------- reproducible plans

FILES = ("manifests.yaml", "resources.json", "plan.json", "charts.yaml")


@pytest.mark.parametrize("stack", CHECKED_STACKS)
def test_plan_twice_in_one_process_is_byte_identical(stack: str, tmp_path: Path) -> None:
    path = str(stack_file(stack))
    assert main(["plan", path, "--out", str(tmp_path / "a")]) == 0
    assert main(["plan", path, "--out", str(tmp_path / "b")]) == 0
    # Across processes: tests/test_byte_stable.py.
    for name in FILES:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
