"""The two-stack layout for big fleets on the real engine (issue 27): an installs-only stack and a fleet stack.

One cluster, two stacks of this program, each with its own state file: the *platform* stack is ``dev`` with its
``queues``, ``jobs`` and ``priorityClasses`` left out (installs only: both charts and the readiness gate); the
*fleet* stack is ``dev`` with ``kueue.install`` and ``jobset.install`` false (flavors, ClusterQueue, namespace,
LocalQueue, RBAC and the job). So the charts' CRDs, 80 % of a single stack's state, are in no checkpoint of the
fleet's ``pulumi up``; ``make bench-engine BENCH_ENGINE_ARGS="--split"`` measures what that saves (docs/scale.md).
Checked here: each state holds what its stack declares and nothing of the other's, the fleet's job is admitted as
its plan predicts, with the platform's Kueue, and neither stack previews a change after its ``up``.

And a cluster already deployed as one stack splits in two without losing an object: ``aiperf-kueue split`` prints
the ``pulumi state move`` that carries the installs to a new platform stack, run here as printed; then neither
stack's ``up`` deletes, replaces or updates an object, and every CRD, queue, namespace, job and Kueue's Deployment
keeps its UID.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
        engine = Engine(
            binaries, OUT / "engine" / f"{cluster.dir.name}-fleet", cluster.kubeconfig, BUILD.PULUMI_KUBERNETES,
            checkpoints=False,
        )
        fleet_config = {f"{PROJECT}:cluster": cluster_config(cluster), **installed_elsewhere(config)}
        work = engine.project_dir("fleet", fleet_config)
        plan = plan_stack(work / "stacks" / "Pulumi.fleet.yaml", OUT / "engine-plans" / f"{cluster.dir.name}-fleet")
        start_operator_for(cluster, plan, aiperf_venv)
        try:
            fleet = EngineRun(
                "fleet", cluster, engine, work, engine.stack("fleet", work), platform.controllers, plan, fleet_config
            )
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
        None,
        None,
        {"AIPerfJob": 1, "ClusterQueue": 1, "LocalQueue": 1, "ResourceFlavor": 1},
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


#: The objects whose UIDs the split must keep: the charts' CRDs, every queue object, the namespaces, the job and Kueue's
#: controller.
KEPT = (
    "customresourcedefinitions",
    *(f"{k}.kueue.x-k8s.io" for k in ("resourceflavors", "clusterqueues", "localqueues", "workloadpriorityclasses")),
    "namespaces",
    "aiperfjobs.aiperf.nvidia.com",
    "deployments",
)


def _objects(changes: dict[str, list[str]]) -> dict[str, list[str]]:
    """The changes to anything but a component of this program and the readiness gate (neither holds an object)."""
    return {
        action: names
        for action, urns in changes.items()
        if (
            names := [
                u.rsplit("::", 1)[1]
                for u in urns
                if "aiperf-kueue:index:" not in u.rsplit("$", 1)[-1] and "KueueReadinessGate" not in u
            ]
        )
    }


def test_a_live_single_stack_splits_in_two_and_keeps_every_object(
    new_cluster: ClusterFactory, binaries: dict[str, str], report: Report
) -> None:
    cluster = new_cluster("engine-split-live", controllers=False)
    config = e2e_config(STACK, KUEUE_MODULE, JOBSET_MODULE)
    with engine_run("live", STACK, cluster, binaries, BUILD.PULUMI_KUBERNETES, config) as live:
        assert live.up().summary.result == "succeeded"
        before = cluster.uids(*KEPT)
        assert sum(k.startswith("CustomResourceDefinition/") for k in before) >= 12  # Kueue's 11, JobSet's 1
        # The new platform stack, in the live stack's backend; the live stack's file edited to install nothing.
        on_cluster: dict[str, Any] = {f"{PROJECT}:cluster": cluster_config(cluster)}
        work = live.engine.project_dir("live-platform", {**on_cluster, **installs_only(config)})
        platform = EngineRun(
            "live-platform",
            cluster,
            live.engine,
            work,
            live.engine.stack("live-platform", work),
            live.controllers,
            live.plan,
            {**on_cluster, **installs_only(config)},
        )
        live.set_config({**on_cluster, **installed_elsewhere(config)})
        export = live.engine.dir / "live-export.json"
        live.engine.cli("stack", "export", "--stack", "live", "--file", str(export), cwd=live.work)
        split = subprocess.run(
            [
                sys.executable,
                "-m",
                "aiperf_kueue.cli.cli",
                "split",
                str(platform.stack_file),
                str(live.stack_file),
                "--state",
                str(export),
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=300,
            check=False,
        )
        assert (split.returncode, split.stderr.splitlines()) == (
            0,
            [
                "Then: pulumi up --stack live-platform (nothing to change), then pulumi up --stack live.",
                "live's next up creates again kueue, kueue-ready: moved, and declared by both stacks; no Kubernetes "
                "object (components and the readiness gate)",
            ],
        )
        moves = [line for line in split.stdout.splitlines() if "urn:pulumi:live::" in line]
        # Run as printed, from the platform's project directory (its stack file holds its secrets provider's salt).
        moved = subprocess.run(
            ["bash", "-c", split.stdout],
            capture_output=True,
            text=True,
            cwd=work,
            env={**os.environ, **live.engine.env},
            timeout=300,
            check=False,
        )
        assert moved.returncode == 0, moved.stdout + moved.stderr

        # The platform stack now holds the charts: nothing to do. The fleet creates its own gate, and its component.
        assert set(platform.preview().change_summary) == {"same"}
        assert platform.up().summary.result == "succeeded"
        assert _objects(platform.changes()) == {}
        live.preview()
        preview = _objects(live.changes())
        assert sorted(u.rsplit("::", 1)[1] for u in live.changes().get("create", [])) == ["kueue", "kueue-ready"]
        assert live.up().summary.result == "succeeded"
        assert (preview, _objects(live.changes()), set(live.changes())) == ({}, {}, {"create"})
        assert cluster.uids(*KEPT) == before
        types = _types(platform)
        assert (types.get(CRD), types.get(CHART), _queue_objects(types)) == (12, 2, {})
        assert _queue_objects(_types(live)) == {"AIPerfJob": 1, "ClusterQueue": 1, "LocalQueue": 1, "ResourceFlavor": 1}
        for run in (platform, live):
            assert set(run.preview(expect_no_changes=True).change_summary) == {"same"}, run.name
        assert live.controllers.errors == []
        report.checks["two stacks: a live stack split"] = (
            f"{len(moves)} resources moved by `pulumi state move`, {len(before)} objects kept with their UIDs"
        )
