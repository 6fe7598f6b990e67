"""``simulate`` over Cohort trees: Kueue's quota arithmetic climbing the tree, and reclaim across it."""

from __future__ import annotations

from pathlib import Path

from aiperf_kueue.plan.stack_plan import StackPlan, plan_values
from aiperf_kueue.simulate.preempt import Preemptor
from aiperf_kueue.simulate.quota import Quota
from aiperf_kueue.simulate.world import FR, SimClusterQueue, SimCohort, SimJob, build_world, milli
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
        ("team-a/a2", [150.0], [300.0], None),
        ("team-c/c1", [300.0], [], None),
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


# --------------------------------------------------------------------------- Kueue's own vectors

CPU: FR = ("default", "cpu")


def _cq(name: str, cohort: str, nominal: int = 0, lending: int | None = None) -> SimClusterQueue:
    return SimClusterQueue(
        name,
        cohort,
        ("default",),
        ("cpu",),
        {CPU: nominal},
        {},
        {} if lending is None else {CPU: lending},
        within_cluster_queue="LowerPriority",
        reclaim_within_cohort="Any",
    )


def _wl(name: str, cq: str, priority: int, cpu: int, order: int) -> SimJob:
    job = SimJob("ns", name, order, cq, priority, [], None, False)
    job.usage = {CPU: cpu}
    job.state, job.admitted_at = "admitted", 0.0
    return job


def _targets(
    cohorts: list[SimCohort], queues: list[SimClusterQueue], admitted: list[SimJob], incoming: SimJob
) -> list[tuple[str, str]]:
    by_name = {q.name: q for q in queues}
    quota = Quota(by_name, {c.name: c for c in cohorts})
    running: dict[str, list[SimJob]] = {}
    for w in admitted:
        quota.add(w.cluster_queue, w.usage)
        running.setdefault(w.cluster_queue, []).append(w)
    preemptor = Preemptor(by_name, quota, running, fair_sharing=False, strategies=())
    found = preemptor.targets(incoming, by_name[incoming.cluster_queue], incoming.usage, {CPU})
    return [(t.job.name, t.reason) for t in found]


def test_kueue_vector_preempt_with_hierarchical_advantage() -> None:
    # Kueue v0.19.2 preemption_hierarchical_test.go "preempt with hierarchical advantage": r ← c(2 CPU) ← q(0),
    # r ← q_borrowing(0) using 2 CPU; 2 CPU for q fit c's quota, so the borrower in r is reclaimed.
    cohorts = [SimCohort("r", None), SimCohort("c", "r", {CPU: 2000})]
    queues = [_cq("q", "c"), _cq("q_borrowing", "r")]
    admitted = [_wl("admitted2", "q_borrowing", 0, 2000, 0)]
    incoming = _wl("in", "q", 0, 2000, 1)
    assert _targets(cohorts, queues, admitted, incoming) == [("admitted2", "InCohortReclamation")]


def test_kueue_vector_prefer_to_preempt_hierarchical_candidate() -> None:
    # Kueue v0.19.2 preemption_hierarchical_test.go "prefer to preempt hierarchical candidate": the borrower
    # of priority 1 in r goes before q's own workload of priority -2.
    cohorts = [SimCohort("r", None), SimCohort("c", "r", {CPU: 2000})]
    queues = [_cq("q", "c"), _cq("q_borrowing", "r")]
    admitted = [_wl("admitted_borrowing", "q_borrowing", 1, 1000, 0), _wl("admitted_same_queue", "q", -2, 1000, 1)]
    incoming = _wl("in", "q", 0, 1000, 2)
    assert _targets(cohorts, queues, admitted, incoming) == [("admitted_borrowing", "InCohortReclamation")]


def test_kueue_vector_respect_lending_limits() -> None:
    # Kueue v0.19.2 preemption_hierarchical_test.go "respect lending limits": q (3 CPU, lendingLimit 2) in
    # c (2 CPU) in r; q_borrowing in r uses 4; q's 5 CPU (priority -2) still reclaims it.
    cohorts = [SimCohort("r", None), SimCohort("c", "r", {CPU: 2000})]
    queues = [_cq("q", "c", 3000, lending=2000), _cq("q_borrowing", "r")]
    admitted = [_wl("admitted_borrowing", "q_borrowing", 0, 4000, 0)]
    incoming = _wl("in", "q", -2, 5000, 1)
    quota_check = Quota({q.name: q for q in queues}, {c.name: c for c in cohorts})
    assert (quota_check.potential(queues[0], CPU), quota_check.subtree["r"][CPU]) == (5000, 4000)
    assert _targets(cohorts, queues, admitted, incoming) == [("admitted_borrowing", "InCohortReclamation")]


def test_kueue_vector_avoid_queues_within_nominal_quota() -> None:
    # Kueue v0.19.2 preemption_hierarchical_test.go "avoid queues within nominal quota": q_nominal's
    # priority -10 workload is within its own 2 CPU and is spared; the borrower q_borrowing is preempted.
    cohorts = [SimCohort("r", None), SimCohort("c", "r", {CPU: 2000})]
    queues = [_cq("q_nominal", "r", 2000), _cq("q", "c"), _cq("q_borrowing", "r")]
    admitted = [_wl("admitted1", "q_nominal", -10, 2000, 0), _wl("admitted2", "q_borrowing", 0, 2000, 1)]
    incoming = _wl("in", "q", 0, 2000, 2)
    assert _targets(cohorts, queues, admitted, incoming) == [("admitted2", "InCohortReclamation")]
