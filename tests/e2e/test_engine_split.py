"""The two-stack layout for big fleets on the real engine (issue 27): an installs-only stack and a fleet stack.

One cluster, two stacks of this program, each with its own state file: the *platform* stack is ``dev`` with its
``queues``, ``jobs`` and ``priorityClasses`` left out (installs only: both charts and the readiness gate); the
*fleet* stack is ``dev`` with ``kueue.install`` and ``jobset.install`` false (flavors, ClusterQueue, namespace,
LocalQueue, RBAC and the job). So the charts' CRDs, 80 % of a single stack's state, are in no checkpoint of the
fleet's ``pulumi up``; ``make bench-engine BENCH_ENGINE_ARGS="--split"`` measures what that saves (docs/scale.md).
Checked here: each state holds what its stack declares and nothing of the other's, the fleet's job is admitted as
its plan predicts, with the platform's Kueue, and neither stack previews a change after its ``up``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.cluster import _deadline_loop
from tests.e2e.conftest import BUILD, JOBSET_MODULE, KUEUE_MODULE, OUT, ROOT, ClusterFactory, Report
from tests.e2e.engine import (
    PROJECT,
    Engine,
    EngineRun,
    cluster_config,
    e2e_config,
    engine_run,
    installed_elsewhere,
    installs_only,
)
from tests.e2e.operator import start_operator_for, stop_operator
from tests.e2e.stackrun import plan_stack

STACK = ROOT / "stacks" / "Pulumi.dev.yaml"
CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
CHART = "kubernetes:helm.sh/v4:Chart"
QUEUE_TYPES = ("ResourceFlavor", "ClusterQueue", "LocalQueue", "AIPerfJob")


def _types(run: EngineRun) -> dict[str, int]:
    return dict(Counter(resource["type"] for resource in run.state()))


def _queue_objects(types: dict[str, int]) -> dict[str, int]:
    return {t.rsplit(":", 1)[1]: n for t, n in sorted(types.items()) if t.rsplit(":", 1)[1] in QUEUE_TYPES}


@pytest.fixture(scope="module")
def split(
    new_cluster: ClusterFactory, binaries: dict[str, str], aiperf_venv: Path
) -> Iterator[tuple[EngineRun, EngineRun]]:
    """The platform stack, then the fleet stack, deployed to one cluster from empty."""
    cluster = new_cluster("engine-split", controllers=False)
    config = e2e_config(STACK, KUEUE_MODULE, JOBSET_MODULE)
    with engine_run("platform", STACK, cluster, binaries, BUILD.PULUMI_KUBERNETES, installs_only(config)) as platform:
        assert platform.up().summary.result == "succeeded"
        # The fleet stack: its own backend and state file, on the same cluster and chart controllers.
        engine = Engine(binaries, OUT / "engine" / f"{cluster.dir.name}-fleet", cluster.kubeconfig,
                        BUILD.PULUMI_KUBERNETES)
        fleet_config = {f"{PROJECT}:cluster": cluster_config(cluster), **installed_elsewhere(config)}
        work = engine.project_dir("fleet", fleet_config)
        plan = plan_stack(work / "stacks" / "Pulumi.fleet.yaml", OUT / "engine-plans" / f"{cluster.dir.name}-fleet")
        start_operator_for(cluster, plan, aiperf_venv)
        try:
            fleet = EngineRun("fleet", cluster, engine, work, engine.stack("fleet", work), platform.controllers, plan,
                              fleet_config)
            assert fleet.up().summary.result == "succeeded"
            yield platform, fleet
        finally:
            stop_operator(cluster)
        assert platform.controllers.errors == []


def test_the_platform_stack_holds_the_charts_and_nothing_that_queues(
    split: tuple[EngineRun, EngineRun], report: Report
) -> None:
    platform, _ = split
    types = _types(platform)
    # Kueue 0.19.2's eleven CRDs and JobSet 0.12.0's one, each kept (and protected) by this stack.
    assert (types.get(CRD), types.get(CHART), _queue_objects(types)) == (12, 2, {})
    report.checks["two stacks: platform"] = f"{sum(types.values())} resources, {platform.state_bytes()} bytes of state"


def test_the_fleet_stack_holds_its_queues_and_job_and_no_chart(
    split: tuple[EngineRun, EngineRun], report: Report
) -> None:
    _, fleet = split
    types = _types(fleet)
    assert (types.get(CRD), types.get(CHART), _queue_objects(types)) == (
        None, None, {"AIPerfJob": 1, "ClusterQueue": 1, "LocalQueue": 1, "ResourceFlavor": 1},
    )
    report.checks["two stacks: fleet"] = f"{sum(types.values())} resources, {fleet.state_bytes()} bytes of state"


def test_the_fleet_job_is_admitted_as_planned(split: tuple[EngineRun, EngineRun], report: Report) -> None:
    _, fleet = split
    predicted = {(j["namespace"], j["clusterQueue"]) for j in fleet.plan.data["jobs"]}
    assert predicted == {("aiperf-benchmarks", "benchmarks")}
    admitted: set[tuple[str, str]] = set()
    for _ in _deadline_loop("the fleet stack's job to be admitted", 120, interval=0.5):
        for workload in fleet.cluster.get_json("workloads", "-n", "aiperf-benchmarks")["items"]:
            admission = (workload.get("status") or {}).get("admission")
            if admission:
                admitted.add((workload["metadata"]["namespace"], admission["clusterQueue"]))
        if admitted:
            break
    assert admitted == predicted
    report.checks["two stacks: admitted"] = f"{sorted(admitted)}, as planned"


def test_neither_stack_previews_a_change(split: tuple[EngineRun, EngineRun]) -> None:
    for run in split:
        assert set(run.preview(expect_no_changes=True).change_summary) == {"same"}, run.name
