"""``python -m tests.e2e.bench_engine``: the program under the real Pulumi engine on the local cluster, timed.

The second half of ``make bench`` (the first, :mod:`tests.bench`, is offline). It runs inside
``e2e/sandbox.sh`` with the e2e harness: the CLI and provider built from source (:mod:`tests.e2e.engine`), a fresh
local control plane per measurement (:mod:`tests.e2e.cluster`), the Kueue and JobSet charts installed by ``pulumi up``
and their controllers run by :class:`~tests.e2e.charts.ChartControllers`, and the released AIPerf operator as a
process (:mod:`tests.e2e.operator`).

``prod`` first (the committed stack with the e2e's changes: local chart paths, no operator chart), on its own fresh
cluster: repeated offline plans of the stack file, ``pulumi up`` from empty with the time to the first benchmark
admitted, then repeated no-change ``pulumi preview`` runs.

Then per fleet size (10, 100 and 1,000 benchmark namespaces over three ClusterQueues, one AIPerfJob per
ClusterQueue), on one fresh cluster, in this order:

1. ``aiperf-kueue plan`` of the stack file (a fresh process, as users run it): the offline plan's time;
2. ``pulumi up`` of the same stack with no benchmark namespaces (the *platform*: namespaces of the installs, both
   charts, the readiness gate, flavors, cohort, ClusterQueues, priority classes), from empty;
3. ``kubectl apply --server-side -f manifests.yaml`` of the plan of step 1 (the harness's kubectl, one process): the
   platform's objects again, unchanged, and every benchmark namespace's objects and the jobs, created;
4. the benchmark namespaces deleted and waited for (the cluster back to the platform alone);
5. ``pulumi up`` of the whole stack with the engine's per-step checkpoints off (``PULUMI_SKIP_CHECKPOINTS``: only
   the final state is written), then ``pulumi preview --expect-no-changes``;
6. back to the platform (``pulumi up`` of the platform stack, checkpoints off) and step 4 again;
7. ``pulumi up`` of the whole stack as users run it, checkpoints on, stopped after ``--up-cap`` seconds as a Ctrl-C
   stops it (the engine finishes the steps in flight and writes the state); a stopped update's total is
   extrapolated by :func:`~tests.e2e.bench_report.extrapolate` and labelled so.

So steps 3, 5 and 7 create the same objects on the same API server, and 5 against 7 is what the checkpoints cost.
During each, a watch on Kueue's Workloads records when the first benchmark is admitted (the operator makes the
JobSet, Kueue admits its Workload).

Engine figures come from the engine's own events (:class:`~tests.e2e.engine.EngineRun` records the time of each
resource's pre-step and outputs events), see :func:`~tests.e2e.bench_report.step_stats`.

After the checkpointed ``up`` of each size, issue 27's one-namespace edit (:func:`_one_namespace_edit`). Prints
the tables and issue 27's table (:func:`~tests.e2e.bench_report.goals`), and writes the whole report to
``bench/results.json``. ``--quick`` stops at 100 namespaces. Times are wall-clock seconds; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from pulumi import automation as auto

from tests.bench import fleet
from tests.bench.__main__ import machine
from tests.e2e.bench_report import (
    chart_state_bytes,
    extrapolate,
    goals,
    marginal,
    op_counts,
    phases,
    state_by_type,
    step_stats,
    table,
    targets,
    up_seconds,
    write_results,
)
from tests.e2e.bench_watch import AdmissionWatch, UpCap, UserSecrets
from tests.e2e.charts import ChartControllers
from tests.e2e.cluster import LocalCluster, _deadline_loop
from tests.e2e.conftest import BUILD, DEFAULT_AIPERF_VENV, JOBSET_MODULE, KUEUE_MODULE, OUT, ROOT
from tests.e2e.engine import (
    PROJECT,
    Engine,
    EngineRun,
    cluster_config,
    e2e_config,
    installed_elsewhere,
    installs_only,
    skip_checkpoints,
)
from tests.e2e.nodes import create_nodes, declared_pools, node_objects
from tests.e2e.operator import install_aiperf_crds, start_operator_for, stop_operator
from tests.e2e.stackrun import CLI, Plan, load_plan

BENCH = OUT / "bench"
DEFAULT_SIZES = (10, 100, 1000)
#: ``--quick``: the CI smoke, stopping at 100 namespaces.
QUICK_SIZES = (10, 100)
#: Where a run's whole report goes (``--json``).
RESULTS = ROOT / "bench" / "results.json"
CLUSTER_QUEUES = 3
#: Every engine's settings beyond the defaults, from ``--backend-query`` and ``--engine-env`` (set once by
#: :func:`main`, recorded in the report's ``method``): a file-backend URL query and more environment for the CLI.
ENGINE_SETTINGS: dict[str, Any] = {"backendQuery": "", "env": {}}


# --- stacks ------------------------------------------------------------------------------------------------------


def fleet_config(namespaces: int) -> dict[str, Any]:
    """Stack config (``aiperf-kueue:`` keys) of ``namespaces`` benchmark namespaces over three ClusterQueues, with one
    AIPerfJob in each of the first namespaces (one per ClusterQueue). The jobs read no Secret: the operator's
    preflight would fail a job whose Secret does not exist yet, and none can exist before its namespace."""
    values = fleet.fleet_values(fleet.FleetSize(CLUSTER_QUEUES, namespaces, 1, 0))
    jobs = []
    for job in values["jobs"][: min(namespaces, CLUSTER_QUEUES)]:
        spec = {k: v for k, v in job["spec"].items() if k != "podTemplate"}
        jobs.append({**job, "spec": spec})
    values["jobs"] = jobs
    values["sweeps"] = []
    return {f"{PROJECT}:{key}": value for key, value in values.items()}


def write_stack_file(path: Path, config: Mapping[str, Any]) -> Path:
    """``path`` holding ``config: ...`` (the form the offline plan and the e2e's :func:`e2e_config` read)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"config": dict(config)}, sort_keys=False))
    return path


def timed_plan(stack_file: Path, out: Path) -> tuple[float, Plan]:
    """``aiperf-kueue plan STACK --out DIR`` in a fresh process, as users run it: its wall time and the plan."""
    started = time.monotonic()
    result = subprocess.run(
        [str(CLI), "plan", str(stack_file), "--out", str(out)], capture_output=True, text=True, timeout=900, cwd=ROOT
    )
    seconds = time.monotonic() - started
    if result.returncode != 0:
        raise RuntimeError(f"plan {stack_file} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return seconds, load_plan(out)


# --- one measurement -----------------------------------------------------------------------------------------------


@contextmanager
def fresh_cluster(name: str, binaries: Mapping[str, str]) -> Iterator[LocalCluster]:
    """A fresh control plane (no Kueue, no JobSet: ``pulumi up`` installs their charts) with the AIPerf CRDs."""
    workdir = BENCH / "clusters" / name
    shutil.rmtree(workdir, ignore_errors=True)
    cluster = LocalCluster(binaries, workdir, kueue_module=KUEUE_MODULE, jobset_module=JOBSET_MODULE)
    try:
        cluster.start(controllers=False)
        install_aiperf_crds(cluster)
        yield cluster
    finally:
        cluster.stop()


def _engine(binaries: Mapping[str, str], name: str, kubeconfig: Path) -> Engine:
    """A new engine (private home and backend) for stack ``name``, with the run's :data:`ENGINE_SETTINGS`."""
    return Engine(
        binaries, BENCH / "engine" / name, kubeconfig, BUILD.PULUMI_KUBERNETES,
        backend_query=ENGINE_SETTINGS["backendQuery"], env=ENGINE_SETTINGS["env"],
    )


@contextmanager
def engine_on(
    name: str, cluster: LocalCluster, binaries: Mapping[str, str], config: dict[str, Any], plan: Plan
) -> Iterator[EngineRun]:
    """A new stack ``name`` with ``config``, deploying to ``cluster`` by name, and the charts' controllers running."""
    config = {f"{PROJECT}:cluster": cluster_config(cluster), **config}
    engine = _engine(binaries, name, cluster.kubeconfig)
    work = engine.project_dir(name, config)
    stack = engine.stack(name, work)
    with ChartControllers(cluster) as controllers:
        yield EngineRun(name, cluster, engine, work, stack, controllers, plan, config)
        if controllers.errors:
            raise RuntimeError(f"chart controllers: {controllers.errors}")


def _up(run: EngineRun, what: str) -> tuple[float, auto.UpResult]:
    started = time.monotonic()
    result = run.up()
    seconds = time.monotonic() - started
    if result.summary.result != "succeeded":
        raise RuntimeError(f"pulumi up ({what}) {result.summary.result}:\n{result.stderr}")
    return seconds, result


def _preview(run: EngineRun) -> dict[str, Any]:
    """A no-change ``pulumi preview``: its time, where it went, and per resource type how long its steps took."""
    started = time.monotonic()
    result = run.preview(expect_no_changes=True)
    ended = time.monotonic()
    changes = op_counts(result.change_summary)
    if set(changes) != {"same"}:
        raise RuntimeError(f"preview found changes: {changes}\n{result.stdout}")
    stats = step_stats(run.events, same=True)
    return {
        "seconds": ended - started,
        "same": changes["same"],
        "phases": phases(stats, started, ended),
        "engine": stats,
    }


def _manifest_objects(plan: Plan) -> list[tuple[str, str | None, str]]:
    return [
        (d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"])
        for d in yaml.safe_load_all((plan.dir / "manifests.yaml").read_text())
        if d
    ]


def _clear_namespaces(cluster: LocalCluster, names: set[str], timeout: float = 3600) -> float:
    """Delete the benchmark namespaces and wait until they are gone: the cluster holds the platform alone again.
    Returns the seconds it took."""
    started = time.monotonic()
    cluster.kubectl("delete", "namespace", *sorted(names), "--wait=false", "--ignore-not-found", timeout=600)
    for _ in _deadline_loop(f"{len(names)} deleted namespaces to be gone", timeout, interval=2):
        left = {n["metadata"]["name"] for n in cluster.get_json("namespaces")["items"]} & names
        if not left:
            break
    return time.monotonic() - started


def _echo(message: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')}] {message}", flush=True)


def _measured_up(
    run: EngineRun, cluster: LocalCluster, what: str, admission_timeout: float, cap: float | None = None
) -> dict[str, Any]:
    """``pulumi up`` with the admission watch: its time, the engine's step statistics, the first admission. Stopped
    at ``cap`` seconds, it reports what it completed (``stopped``) and how fast."""
    stopped = False
    with AdmissionWatch(cluster) as watch, UpCap(cap) as up_cap:
        started = time.monotonic()
        try:
            _, result = _up(run, what)
            changes = op_counts(result.summary.resource_changes)
        except auto.CommandError:
            if not up_cap.fired:
                raise
            stopped, changes = True, {}
        ended = time.monotonic()
        if not stopped:
            watch.wait(admission_timeout)
    seconds = ended - started
    stats = step_stats(run.events)
    # Steps that finished: every create of a completed update, the completed ones of a stopped update.
    created = stats["steps"] if stopped else changes.get("create", 0)
    return {
        "seconds": seconds,
        "stopped": stopped,
        "changes": changes,
        "created": created,
        "perCreatedResourceMs": 1000 * seconds / created if created else None,
        "firstAdmittedSeconds": watch.seconds(),
        "firstAdmitted": watch.first[1] if watch.first else None,
        # Issue 27's "first job admitted, as a share of the update's time".
        "firstAdmittedShare": (watch.seconds() or 0) / seconds if watch.seconds() is not None and seconds else None,
        "stateBytes": run.state_bytes(),
        "phases": phases(stats, started, ended),
        "engine": stats,
    }


def _kubectl_apply(cluster: LocalCluster, plan: Plan, objects: int, admission_timeout: float) -> dict[str, Any]:
    with AdmissionWatch(cluster) as watch:
        started = time.monotonic()
        cluster.kubectl("apply", "--server-side", "-f", str(plan.dir / "manifests.yaml"), timeout=3600)
        seconds = time.monotonic() - started
        watch.wait(admission_timeout)
    return {
        "seconds": seconds,
        "objects": objects,
        "perObjectMs": 1000 * seconds / objects,
        "firstAdmittedSeconds": watch.seconds(),
        "firstAdmitted": watch.first[1] if watch.first else None,
    }


def _planned_fleet(
    name: str, config: Mapping[str, Any]
) -> tuple[float, Plan, list[tuple[str, str | None, str]], set[str]]:
    """The offline plan of exactly the stack file pulumi reads (local chart paths, no operator chart), timed; the
    objects of its ``manifests.yaml`` and the benchmark namespaces among them."""
    planned = write_stack_file(BENCH / "planned" / f"Pulumi.{name}.yaml", config)
    plan_seconds, plan = timed_plan(planned, BENCH / "plans" / name)
    objects = _manifest_objects(plan)
    bench_namespaces = {n for kind, _, n in objects if kind == "Namespace" and n.startswith("bench-")}
    return plan_seconds, plan, objects, bench_namespaces


def _stack_beside(base: EngineRun, name: str, config: dict[str, Any], plan: Plan, binaries: Mapping[str, str]
                  ) -> EngineRun:
    """A second stack ``name`` deploying ``config`` with its own backend and state file, on ``base``'s cluster and
    chart controllers (one set per cluster): the fleet stack of the two-stack layout."""
    engine = _engine(binaries, name, base.cluster.kubeconfig)
    work = engine.project_dir(name, config)
    return EngineRun(name, base.cluster, engine, work, engine.stack(name, work), base.controllers, plan, config)


def bench_size(
    namespaces: int, binaries: Mapping[str, str], venv: Path, admission_timeout: float, up_cap: float | None
) -> dict[str, Any]:
    """Steps 1 to 7 of the module docstring for one fleet size, on one fresh cluster."""
    name = f"bench-{namespaces}"
    full_file = write_stack_file(BENCH / "stacks" / f"Pulumi.{name}.yaml", fleet_config(namespaces))
    base_file = write_stack_file(BENCH / "stacks" / f"Pulumi.{name}-platform.yaml", fleet_config(0))
    full = e2e_config(full_file, KUEUE_MODULE, JOBSET_MODULE)
    platform = e2e_config(base_file, KUEUE_MODULE, JOBSET_MODULE)
    plan_seconds, plan, objects, bench_namespaces = _planned_fleet(name, full)
    out: dict[str, Any] = {
        "namespaces": namespaces,
        "clusterQueues": CLUSTER_QUEUES,
        "jobs": len(full[f"{PROJECT}:jobs"]),
        "planResources": len(plan.resources),
        "manifestObjects": len(objects),
        "offlinePlan": plan_seconds,
    }
    _echo(f"{name}: offline plan {plan_seconds:.1f} s, {len(plan.resources)} resources, {len(objects)} objects")
    with fresh_cluster(name, binaries) as cluster:
        create_nodes(cluster, node_objects(declared_pools(full_file)))
        start_operator_for(cluster, plan, venv)
        # Every rewrite of the stack file keeps the cluster it deploys to (pulumi up refuses a stack naming none).
        full, platform = ({f"{PROJECT}:cluster": cluster_config(cluster), **c} for c in (full, platform))
        with engine_on(name, cluster, binaries, platform, plan) as run:
            seconds, result = _up(run, "platform")
            out["platformUp"] = {
                "seconds": seconds,
                "changes": op_counts(result.summary.resource_changes),
                "stateBytes": run.state_bytes(),
            }
            _echo(f"{name}: platform up {seconds:.1f} s")

            out["kubectlApply"] = kubectl = _kubectl_apply(cluster, plan, len(objects), admission_timeout)
            _echo(f"{name}: kubectl apply {kubectl['seconds']:.1f} s; first admitted after "
                  f"{kubectl['firstAdmittedSeconds']}")
            out["namespaceCleanupSeconds"] = _clear_namespaces(cluster, bench_namespaces)
            _echo(f"{name}: namespaces deleted in {out['namespaceCleanupSeconds']:.1f} s")

            run.set_config(full)
            with skip_checkpoints(run):
                out["pulumiUpSkipCheckpoints"] = skip = _measured_up(run, cluster, "no checkpoints", admission_timeout)
            _record_state(out, run, namespaces, out["platformUp"]["stateBytes"])
            _echo(f"{name}: pulumi up without checkpoints {skip['seconds']:.1f} s ({skip['created']} created); "
                  f"first admitted after {skip['firstAdmittedSeconds']}")
            out["noChangePreview"] = preview = _preview(run)
            out["previewOverPlan"] = preview["seconds"] / plan_seconds
            _echo(f"{name}: no-change preview {preview['seconds']:.1f} s ({preview['same']} same)")

            seconds = _back_to_no_namespaces(out, run, platform, "platform again", cluster, bench_namespaces)
            _echo(f"{name}: back to the platform in {seconds:.1f} s, namespaces deleted in "
                  f"{out['namespaceCleanupSeconds2']:.1f} s")

            run.set_config(full)
            out["pulumiUp"] = up = _measured_up(run, cluster, "checkpoints", admission_timeout, up_cap)
            _finish_size(out)
            _echo(f"{name}: pulumi up {up['seconds']:.1f} s ({up['created']} created"
                  f"{', STOPPED at the cap' if up['stopped'] else ''}); first admitted after "
                  f"{up['firstAdmittedSeconds']}")
            if not up["stopped"]:
                out["oneNamespaceEdit"] = edit = _one_namespace_edit(run, cluster, namespaces)
                _echo(f"{name}: one-namespace edit: kubectl {edit['kubectlSeconds']:.1f} s, preview "
                      f"{edit['previewSeconds']:.1f} s, up {edit['upSeconds']:.1f} s")
        stop_operator(cluster)
    return out


def _one_namespace_edit(
    run: EngineRun, cluster: LocalCluster, namespaces: int, *, charts_elsewhere: bool = False
) -> dict[str, Any]:
    """Issue 27's one-namespace edit on the stack ``run`` holds: one more benchmark namespace (its Namespace,
    LocalQueue and RoleBinding). First ``kubectl apply --server-side`` of exactly that namespace's objects from
    the offline plan, then the namespace deleted, then ``pulumi preview`` and ``pulumi up`` (checkpoints on) of the
    edited stack file, as a user runs them. ``charts_elsewhere``: the stack is :func:`bench_split`'s fleet stack."""
    name = f"{'split' if charts_elsewhere else 'bench'}-{namespaces}-edit"
    edited = e2e_config(
        write_stack_file(BENCH / "stacks" / f"Pulumi.{name}.yaml", fleet_config(namespaces + 1)),
        KUEUE_MODULE,
        JOBSET_MODULE,
    )
    if charts_elsewhere:
        edited = installed_elsewhere(edited)
    _, plan = timed_plan(write_stack_file(BENCH / "planned" / f"Pulumi.{name}.yaml", edited), BENCH / "plans" / name)
    edited = {f"{PROJECT}:cluster": cluster_config(cluster), **edited}
    added = f"bench-{namespaces:05d}"
    docs = [
        d
        for d in yaml.safe_load_all((plan.dir / "manifests.yaml").read_text())
        if d
        and (d["metadata"].get("namespace") == added or (d["kind"], d["metadata"]["name"]) == ("Namespace", added))
    ]
    manifest = BENCH / "plans" / name / "one-namespace.yaml"
    manifest.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    started = time.monotonic()
    cluster.kubectl("apply", "--server-side", "-f", str(manifest), timeout=600)
    kubectl = time.monotonic() - started
    _clear_namespaces(cluster, {added})
    run.set_config(edited)
    started = time.monotonic()
    preview = run.preview()
    preview_seconds = time.monotonic() - started
    up_started = time.monotonic()
    _, result = _up(run, "one-namespace edit")
    return {
        "namespace": added,
        "objects": len(docs),
        "kubectlSeconds": kubectl,
        "previewSeconds": preview_seconds,
        "previewChanges": op_counts(preview.change_summary),
        "upSeconds": time.monotonic() - up_started,
        "upChanges": op_counts(result.summary.resource_changes),
        "stateBytes": run.state_bytes(),
    }


def _finish_size(out: dict[str, Any]) -> None:
    """The ratios of one size, and the extrapolation of a stopped update."""
    up, skip, kubectl = out["pulumiUp"], out["pulumiUpSkipCheckpoints"], out["kubectlApply"]["seconds"]
    if up["stopped"]:
        rate = up["engine"]["lastWindowStepsPerSecond"]
        up["extrapolation"] = extrapolate(
            up["seconds"], up["created"], skip["created"], rate, up["stateBytes"], out["finalStateBytes"]
        )
    seconds, _ = up_seconds(out)
    out["upOverKubectl"] = seconds / kubectl
    out["skipCheckpointsUpOverKubectl"] = skip["seconds"] / kubectl
    # What the engine spends on each step's checkpoint (the whole state rewritten): the same creates with and
    # without; for a stopped update, the average over the steps it completed.
    out["checkpointMsPerStep"] = (
        up["perCreatedResourceMs"] - skip["perCreatedResourceMs"]
        if up["perCreatedResourceMs"] and skip["perCreatedResourceMs"]
        else None
    )


def _record_state(out: dict[str, Any], run: EngineRun, namespaces: int, platform_bytes: int = 0) -> None:
    """The stack's state after a whole ``up``: its size, the charts' part, per resource type, and every benchmark
    namespace's share (its Namespace, LocalQueues, RoleBinding; the few jobs counted in): what each checkpoint
    rewrites per namespace. ``platform_bytes``: the state of the same stack without namespaces (none for the fleet
    stack of two, which holds no platform)."""
    final_state = json.loads(run.state_file.read_text())
    out["finalStateBytes"] = run.state_bytes()
    out["chartStateBytes"] = chart_state_bytes(final_state)
    out["stateByType"] = state_by_type(final_state)
    out["stateBytesPerNamespace"] = (out["finalStateBytes"] - platform_bytes) / namespaces


def _back_to_no_namespaces(
    out: dict[str, Any], run: EngineRun, config: dict[str, Any], what: str, cluster: LocalCluster, names: set[str]
) -> float:
    """``pulumi up`` of ``config`` (the stack without benchmark namespaces), checkpoints off, then the namespaces
    deleted by hand (they and the jobs in them are retained on delete); its seconds."""
    run.set_config(config)
    with skip_checkpoints(run):
        seconds, result = _up(run, what)
    out["pulumiRemoveSkipCheckpoints"] = {"seconds": seconds, "changes": op_counts(result.summary.resource_changes)}
    out["namespaceCleanupSeconds2"] = _clear_namespaces(cluster, names)
    return seconds


def bench_split(
    namespaces: int, binaries: Mapping[str, str], venv: Path, admission_timeout: float, up_cap: float | None = None
) -> dict[str, Any]:
    """The two-stack layout (issue 27's "CRDs out of the per-step state", measured): on one fresh cluster, the
    *platform* stack (installs only: the size's config with ``queues``, ``jobs`` and ``priorityClasses`` left out) is
    ``pulumi up``-ed; then ``kubectl apply`` of the fleet's plan, the namespaces deleted; then the *fleet* stack (the
    size's config with ``install: false`` for Kueue and JobSet, so its state holds no chart) ``pulumi up``-ed with the
    per-step checkpoints off, back to no benchmark namespace (checkpoints off), the namespaces deleted, and ``pulumi
    up``-ed again as users run it, checkpoints on; its no-change preview and the one-namespace edit. Same fleet, same
    objects as :func:`bench_size`'s, in the same order."""
    name = f"split-{namespaces}"
    full_file = write_stack_file(BENCH / "stacks" / f"Pulumi.{name}.yaml", fleet_config(namespaces))
    empty_file = write_stack_file(BENCH / "stacks" / f"Pulumi.{name}-empty.yaml", fleet_config(0))
    full = e2e_config(full_file, KUEUE_MODULE, JOBSET_MODULE)
    platform, fleet_only = installs_only(full), installed_elsewhere(full)
    fleet_empty = installed_elsewhere(e2e_config(empty_file, KUEUE_MODULE, JOBSET_MODULE))
    plan_seconds, plan, objects, bench_namespaces = _planned_fleet(name, fleet_only)
    out: dict[str, Any] = {
        "namespaces": namespaces,
        "planResources": len(plan.resources),
        "manifestObjects": len(objects),
        "offlinePlan": plan_seconds,
    }
    with fresh_cluster(name, binaries) as cluster:
        create_nodes(cluster, node_objects(declared_pools(full_file)))
        start_operator_for(cluster, plan, venv)
        platform, fleet_only, fleet_empty = (
            {f"{PROJECT}:cluster": cluster_config(cluster), **c} for c in (platform, fleet_only, fleet_empty)
        )
        with engine_on(f"{name}-platform", cluster, binaries, platform, plan) as base:
            seconds, _ = _up(base, "platform stack")
            out["platformUp"] = {"seconds": seconds, "stateBytes": base.state_bytes()}
            _echo(f"{name}: platform stack up {seconds:.1f} s, its state {base.state_bytes()} bytes")
            out["kubectlApply"] = kubectl = _kubectl_apply(cluster, plan, len(objects), admission_timeout)
            out["namespaceCleanupSeconds"] = _clear_namespaces(cluster, bench_namespaces)
            _echo(f"{name}: kubectl apply {kubectl['seconds']:.1f} s")
            run = _stack_beside(base, name, fleet_only, plan, binaries)
            with skip_checkpoints(run):
                out["pulumiUpSkipCheckpoints"] = skip = _measured_up(
                    run, cluster, "fleet stack, no checkpoints", admission_timeout
                )
            _record_state(out, run, namespaces)
            _echo(f"{name}: fleet stack up without checkpoints {skip['seconds']:.1f} s "
                  f"({skip['seconds'] / kubectl['seconds']:.1f}x kubectl)")
            _back_to_no_namespaces(out, run, fleet_empty, "fleet stack, no namespaces", cluster, bench_namespaces)
            run.set_config(fleet_only)
            out["pulumiUp"] = up = _measured_up(run, cluster, "fleet stack", admission_timeout, up_cap)
            if not up["stopped"]:
                _record_state(out, run, namespaces)
            _finish_size(out)
            _echo(f"{name}: fleet stack up {up['seconds']:.1f} s ({up['created']} created"
                  f"{', STOPPED at the cap' if up['stopped'] else ''}, {out['upOverKubectl']:.1f}x kubectl); first "
                  f"admitted after {up['firstAdmittedSeconds']}; state {out['finalStateBytes']} bytes")
            if not up["stopped"]:
                out["noChangePreview"] = preview = _preview(run)
                _echo(f"{name}: fleet stack no-change preview {preview['seconds']:.1f} s ({preview['same']} same)")
                out["oneNamespaceEdit"] = edit = _one_namespace_edit(run, cluster, namespaces, charts_elsewhere=True)
                _echo(f"{name}: one-namespace edit: kubectl {edit['kubectlSeconds']:.1f} s, preview "
                      f"{edit['previewSeconds']:.1f} s, up {edit['upSeconds']:.1f} s")
        stop_operator(cluster)
    return out


def bench_prod(binaries: Mapping[str, str], venv: Path, repeat: int, admission_timeout: float) -> dict[str, Any]:
    """``prod`` on a fresh cluster: ``repeat`` offline plans, up from empty (and the first admission), then
    ``repeat`` no-change previews."""
    source = ROOT / "stacks" / "Pulumi.prod.yaml"
    config = e2e_config(source, KUEUE_MODULE, JOBSET_MODULE)
    planned = write_stack_file(BENCH / "planned" / "Pulumi.prod.yaml", config)
    plans = [timed_plan(planned, BENCH / "plans" / "prod") for _ in range(repeat)]
    plan = plans[-1][1]
    out: dict[str, Any] = {
        "stackFile": "stacks/Pulumi.prod.yaml (e2e: local chart paths, operator.install false)",
        "planResources": len(plan.resources),
        "offlinePlan": {"runs": [s for s, _ in plans], "median": statistics.median(s for s, _ in plans)},
    }
    _echo(f"prod: offline plan {out['offlinePlan']['median']:.1f} s (median of {repeat})")
    with fresh_cluster("prod", binaries) as cluster:
        create_nodes(cluster, node_objects(declared_pools(source)))
        start_operator_for(cluster, plan, venv)
        with engine_on("prod", cluster, binaries, config, plan) as run:
            with UserSecrets(cluster, plan):
                out["upFromEmpty"] = up = _measured_up(run, cluster, "prod", admission_timeout)
            _echo(f"prod: up from empty {up['seconds']:.1f} s; first admitted after {up['firstAdmittedSeconds']}")
            previews = [_preview(run) for _ in range(repeat)]
            out["noChangePreview"] = {
                "runs": [p["seconds"] for p in previews],
                "median": statistics.median(p["seconds"] for p in previews),
                "same": previews[-1]["same"],
                "phases": [p["phases"] for p in previews],
                "engine": previews[-1]["engine"],
            }
            _echo(f"prod: no-change preview {out['noChangePreview']['median']:.1f} s (median of {repeat})")
        stop_operator(cluster)
    out["previewOverPlan"] = out["noChangePreview"]["median"] / out["offlinePlan"]["median"]
    return out


def bench_prod_split(binaries: Mapping[str, str], venv: Path, repeat: int) -> dict[str, Any]:
    """``prod`` as two stacks on a fresh cluster: the platform (installs only) up, then the fleet stack's
    ``repeat`` offline plans, its up from empty and ``repeat`` no-change previews: issue 27's preview and
    plan-vs-preview figures for the fleet half, the stack a reviewer previews for a quota change."""
    source = ROOT / "stacks" / "Pulumi.prod.yaml"
    config = e2e_config(source, KUEUE_MODULE, JOBSET_MODULE)
    platform, fleet_only = installs_only(config), installed_elsewhere(config)
    planned = write_stack_file(BENCH / "planned" / "Pulumi.prod-fleet.yaml", fleet_only)
    plans = [timed_plan(planned, BENCH / "plans" / "prod-fleet") for _ in range(repeat)]
    plan = plans[-1][1]
    out: dict[str, Any] = {
        "planResources": len(plan.resources),
        "offlinePlan": {"runs": [s for s, _ in plans], "median": statistics.median(s for s, _ in plans)},
    }
    with fresh_cluster("prod-split", binaries) as cluster:
        create_nodes(cluster, node_objects(declared_pools(source)))
        start_operator_for(cluster, plan, venv)
        platform, fleet_only = ({f"{PROJECT}:cluster": cluster_config(cluster), **c} for c in (platform, fleet_only))
        with engine_on("prod-platform", cluster, binaries, platform, plan) as base:
            seconds, _ = _up(base, "prod platform stack")
            out["platformUp"] = {"seconds": seconds, "stateBytes": base.state_bytes()}
            run = _stack_beside(base, "prod-fleet", fleet_only, plan, binaries)
            with UserSecrets(cluster, plan):
                seconds, _ = _up(run, "prod fleet stack")
            out["fleetUp"] = {"seconds": seconds, "stateBytes": run.state_bytes()}
            previews = [_preview(run) for _ in range(repeat)]
            out["noChangePreview"] = {
                "runs": [p["seconds"] for p in previews],
                "median": statistics.median(p["seconds"] for p in previews),
                "same": previews[-1]["same"],
            }
        stop_operator(cluster)
    out["previewOverPlan"] = out["noChangePreview"]["median"] / out["offlinePlan"]["median"]
    _echo(f"prod as two stacks: platform up {out['platformUp']['seconds']:.1f} s, fleet up "
          f"{out['fleetUp']['seconds']:.1f} s, fleet no-change preview {out['noChangePreview']['median']:.1f} s "
          f"(median of {repeat}), offline plan {out['offlinePlan']['median']:.1f} s: "
          f"{out['previewOverPlan']:.1f}x")
    return out


def main(argv: list[str] | None = None) -> int:
    """Console entry point."""
    parser = argparse.ArgumentParser(prog="python -m tests.e2e.bench_engine", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="benchmark namespaces per fleet")
    parser.add_argument(
        "--quick", action="store_true", help=f"the CI smoke: sizes {','.join(map(str, QUICK_SIZES))} (stops at 100)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="prod's no-change previews and offline plans")
    parser.add_argument(
        "--up-cap",
        type=float,
        default=0,
        help="seconds after which the checkpointed pulumi up is stopped and extrapolated (default 0: never, measured)",
    )
    parser.add_argument("--no-prod", action="store_true", help="skip the prod measurements")
    parser.add_argument(
        "--split", action="store_true", help="also each size with the charts in a stack of their own (bench_split)"
    )
    parser.add_argument(
        "--split-only",
        action="store_true",
        help="only the two-stack layout (implies --split): the one-stack fleets and prod are not measured",
    )
    parser.add_argument(
        "--backend-query",
        default="",
        help="a query for every file backend's URL, such as metadata=skip (gocloud fileblob: no MD5 sidecar files)",
    )
    parser.add_argument(
        "--engine-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="more environment for the CLI and its plugins, such as GOGC=off or GOMEMLIMIT=2GiB (repeatable)",
    )
    parser.add_argument(
        "--pulumi-cli",
        type=Path,
        default=None,
        metavar="PATH",
        help="another pulumi CLI binary to measure in place of the built one (its `pulumi version` is recorded)",
    )
    parser.add_argument("--admission-timeout", type=float, default=180, help="seconds to wait for an admission")
    parser.add_argument("--json", type=Path, default=RESULTS, help=f"results file (default {RESULTS})")
    args = parser.parse_args(argv)
    # Absolute now: the Automation API's inline program changes the working directory to the stack's project.
    args.json = args.json.resolve()
    if args.quick:
        args.sizes = ",".join(map(str, QUICK_SIZES))
    args.split = args.split or args.split_only
    bad_env = [e for e in args.engine_env if "=" not in e or not e.split("=", 1)[0]]
    if bad_env:
        parser.error(f"--engine-env wants KEY=VALUE, got {bad_env[0]!r}")
    if args.pulumi_cli is not None and not (args.pulumi_cli.is_file() and os.access(args.pulumi_cli, os.X_OK)):
        parser.error(f"--pulumi-cli {args.pulumi_cli}: not an executable file")
    ENGINE_SETTINGS.update(backendQuery=args.backend_query, env=dict(e.split("=", 1) for e in args.engine_env))
    manifest = Path(os.environ.get("AIPERF_KUEUE_E2E_BINARIES") or OUT / "binaries.json")
    if not manifest.is_file():
        raise SystemExit(f"{manifest} not found: run `make e2e-build` first")
    binaries: dict[str, str] = json.loads(manifest.read_text())["binaries"]
    cli_version = BUILD.PULUMI_CLI
    if args.pulumi_cli is not None:
        binaries["pulumi"] = str(args.pulumi_cli.resolve())
        cli_version = subprocess.run(
            [binaries["pulumi"], "version"], check=True, capture_output=True, text=True, timeout=60
        ).stdout.strip()
    venv = Path(os.environ.get("AIPERF_VENV") or DEFAULT_AIPERF_VENV)
    if not (venv / "bin" / "kopf").is_file():
        raise SystemExit(f"no AIPerf operator virtualenv at {venv}: run `make oracle` first")
    load_before = os.getloadavg()
    started = time.monotonic()
    single = not args.split_only
    prod = (
        bench_prod(binaries, venv, max(1, args.repeat), args.admission_timeout) if single and not args.no_prod else None
    )
    sizes = [
        bench_size(int(n), binaries, venv, args.admission_timeout, args.up_cap or None)
        for n in args.sizes.split(",")
        if n.strip() and single
    ]
    sizes.sort(key=lambda s: int(s["namespaces"]))
    split: dict[str, Any] | None = (
        {
            "prod": None if args.no_prod else bench_prod_split(binaries, venv, max(1, args.repeat)),
            "sizes": [
                bench_split(int(n), binaries, venv, args.admission_timeout, args.up_cap or None)
                for n in args.sizes.split(",")
                if n.strip()
            ],
        }
        if args.split
        else None
    )
    report: dict[str, Any] = {
        "measuredAt": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {**machine(), "loadAverageBefore": load_before, "loadAverageAfter": os.getloadavg()},
        "versions": {
            "pulumiCli": cli_version,
            "pulumi-resource-kubernetes": BUILD.PULUMI_KUBERNETES,
            "kubernetes": BUILD.KUBERNETES,
            "kueue": BUILD.KUEUE,
            "jobset": BUILD.JOBSET,
        },
        "method": {
            "cluster": "a fresh local control plane for prod and one per fleet size (tests/e2e/cluster.py)",
            "order": "prod: offline plans, up from empty, no-change previews; per size: offline plan; platform up "
            "from empty; kubectl apply --server-side of manifests.yaml; benchmark namespaces deleted; pulumi up of "
            "the whole stack without checkpoints; no-change preview; back to the platform; namespaces deleted; "
            "pulumi up of the whole stack with checkpoints, stopped at upCapSeconds",
            "engine": "Automation API (pulumi up --skip-preview), inline program running __main__.py in the bench "
            "process; local file backend; passphrase secrets; the CLI's default parallelism",
            "admitted": "seconds from the command's start to the first Workload with status.admission "
            "(kubectl watch)",
            "upCapSeconds": args.up_cap or None,
            # Beyond the defaults (none unless --backend-query or --engine-env): every engine of the run had them.
            "engineSettings": dict(ENGINE_SETTINGS),
        },
        "totalSeconds": time.monotonic() - started,
        "prod": prod,
        "sizes": sizes,
        "split": split,
    }
    report["marginal"] = marginal(sizes)
    report["targets"] = targets(sizes, prod)
    report["goals"] = goals(sizes, prod, split)
    m = report["machine"]
    print(
        f"aiperf-kueue bench, real engine: {m['cores']} cores ({m['cpu'] or 'unknown CPU'}), load "
        f"{load_before[0]:.1f} before, pulumi {BUILD.PULUMI_CLI}, pulumi-resource-kubernetes {BUILD.PULUMI_KUBERNETES}"
    )
    if ENGINE_SETTINGS["backendQuery"] or ENGINE_SETTINGS["env"]:
        print(f"engine settings beyond the defaults: backend query {ENGINE_SETTINGS['backendQuery'] or '-'}, env "
              f"{' '.join(f'{k}={v}' for k, v in ENGINE_SETTINGS['env'].items()) or '-'}")
    for line in table(report):
        print(line)
    write_results(args.json, report)
    print(f"\nWrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
