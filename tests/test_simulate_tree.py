"""``simulate`` over Cohort trees: Kueue's quota arithmetic climbing the tree, and reclaim across it."""

from __future__ import annotations

from pathlib import Path

from aiperf_kueue.plan.stack_plan import StackPlan, plan_values
from aiperf_kueue.simulate.quota import Quota
from aiperf_kueue.simulate.world import build_world, milli
from aiperf_kueue.stackfile.loader import read_stack_file
from tests.stack_variants import variant_text
from tests.support import ROOT
from tests.test_simulate import run, timeline

E2E_SCENARIOS = ROOT / "tests" / "e2e" / "scenarios"


def test_a_department_borrowing_limit_and_a_reclaim_across_departments() -> None:
    result = run("tree-limits")
    # team-a holds five jobs' worth at most: its own, dept-x's own, team-b's idle one, and one of team-c's two
    # (dept-x's borrowingLimit): the fifth waits. team-c's second job reclaims across org from team-a.
    assert timeline(result) == [
        ("team-a/a1", [0.0], [], None),
        ("team-a/a2", [0.0], [], None),
        ("team-a/a3", [0.0], [], None),
        ("team-a/a4", [0.0], [30.0], None),
        ("team-a/a5", [], [], None),
        ("team-c/c1", [30.0], [], None),
        ("team-c/c2", [30.0], [], None),
    ]
    assert [e.detail for e in result.outcome.events if e.kind == "preempted"] == ["by team-c/c2 (InCohortReclamation)"]


def test_the_living_clusters_tree_reclaim_is_predicted() -> None:
    # tests/e2e/scenarios/cohort-tree-reclaim: what Kueue 0.19.2 did on the living cluster (test_scenarios.py there).
    result = run("cohort-tree-reclaim", E2E_SCENARIOS / "cohort-tree-reclaim")
    assert timeline(result) == [
        ("team-a/a1", [0.0], [], None),
        ("team-a/a2", [90.0], [180.0], None),
        ("team-c/c1", [180.0], [], None),
    ]
    assert [e.detail for e in result.outcome.events if e.kind == "preempted"] == ["by team-c/c1 (InCohortReclamation)"]


def _org_tree(tmp_path: Path) -> StackPlan:
    path = tmp_path / "Pulumi.prod-org-tree.yaml"
    path.write_text(variant_text(ROOT / "stacks", "prod-org-tree"))
    values, _ = read_stack_file(path)
    return plan_values(values, str(path), ROOT)


def test_the_simulators_capacity_is_the_planners_on_an_empty_cluster(tmp_path: Path) -> None:
    plan = _org_tree(tmp_path)
    world = build_world(plan)
    quota = Quota(world.queues, world.cohorts)
    cells = [(p.name, r) for p in plan.queues.pools for r in plan.queues.covered_resources]
    pairs = {
        (cq, cell): (quota.potential(world.queues[cq], cell), milli(plan.queues.max_capacity(cq, *cell)))
        for cq in world.queues
        for cell in cells
    }
    assert len(pairs) == 27  # three ClusterQueues, three pools, three resources
    assert {k: a for k, (a, b) in pairs.items() if a != b} == {}
    # research (labs) may borrow at most 8 A100s: its own 0 + labs' borrowingLimit.
    assert pairs[("research", ("gpu-a100", "nvidia.com/gpu"))][0] == 8000
    # Empty, each ClusterQueue may take now all it could ever hold.
    assert all(quota.available(world.queues[cq], cell) == a for (cq, cell), (a, _) in pairs.items())


def test_usage_climbs_the_tree_and_comes_back(tmp_path: Path) -> None:
    plan = _org_tree(tmp_path)
    world = build_world(plan)
    quota = Quota(world.queues, world.cohorts)
    gpu = ("gpu-a100", "nvidia.com/gpu")
    team_a = world.queues["team-a"]
    # team-a keeps 4 of its 8 A100s (lendingLimit 4): its first 4 stay in team-a, the next 6 climb to product,
    # which keeps nothing (no lendingLimit), so they climb on to org.
    quota.add("team-a", {gpu: 10_000})
    assert (quota.usage["team-a"][gpu], quota.usage["product"][gpu], quota.usage["org"][gpu]) == (10_000, 6_000, 6_000)
    # product's SubtreeQuota of A100s is 12 (team-a lends 4, team-b 8): 6 are left for team-a, with its own none.
    assert quota.available(team_a, gpu) == 6_000
    assert quota.node_share("product") == 0.0  # product borrows nothing from org
    quota.add("team-a", {gpu: 10_000}, -1)
    assert (quota.usage["team-a"][gpu], quota.usage["product"][gpu], quota.usage["org"][gpu]) == (0, 0, 0)


def test_fair_sharing_hands_borrowed_quota_out_by_the_departments_weights() -> None:
    result = run("tree-fairsharing")
    admitted = [job for job, at, _, _ in timeline(result) if at]
    # Each team runs its own job; of the lender's three, dept-y (weight 2) gets two and dept-x one. Which of a
    # team's equal jobs run is Kueue's arrival order ("either"), so they are counted per team.
    assert (sum(j.startswith("team-a/") for j in admitted), sum(j.startswith("team-b/") for j in admitted)) == (2, 3)
    assert [e.kind for e in result.outcome.events].count("preempted") == 0
