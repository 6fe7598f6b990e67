"""Run a scenario on a fresh living cluster: ``pulumi up`` of each revision, a bounded wait for Kueue to settle, and
one record per AIPerfJob per step in ``out/e2e/scenarios/<scenario>/<NN>.json``.

The cluster is :class:`~tests.e2e.cluster.LocalCluster` with :mod:`tests.e2e.living` (kube-scheduler, kwok and the
stack's fleet). The real CLI and provider (:mod:`tests.e2e.engine`) ``pulumi up`` each revision as a user edits the
stack file: Kueue's and JobSet's charts are installed for real and their controllers run by
:class:`~tests.e2e.charts.ChartControllers`; the operator chart is not installed (``operator.install: false``, no
package ships it) and the released 0.13.0 operator runs as a local process with the env the program's patch sets.

**Settled** means: for :data:`QUIET_SECONDS` nothing in the records changed, and nothing is still on its way: every
AIPerfJob has its JobSet's Workload (or a final operator phase), every admitted, unfinished Workload has all its pods
Running, no pod with a fake run time is still running, no pod is left on a node the fleet deleted, and every job whose
pods all Succeeded (its controller's results now served, :mod:`tests.e2e.fake_controller`) has its final operator
phase. A step that
does not settle within its ``settleSeconds`` fails, naming the workloads still changing and why.

Each ``pulumi up`` runs with ``PULUMI_SKIP_CHECKPOINTS=true`` (the engine writes the state once, at the end, not after
every step): a scenario proves what Kueue does with what the program declares, and the per-step checkpoints of the
first ``up`` (the charts' 4 MB of state rewritten after each of its ~130 steps) were a third of a scenario's time. The
engine's default settings are proven by ``tests/e2e/test_engine.py`` and measured by
``make bench-engine``. ``AIPERF_KUEUE_E2E_CHECKPOINTS=1`` runs the scenarios with checkpoints, as users run them.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import time
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from aiperf_kueue.simulate.explain import explain
from tests.e2e.bench_watch import UserSecrets
from tests.e2e.benchmark_push import ControllerPush, PhaseWatch
from tests.e2e.charts import ChartControllers
from tests.e2e.cluster import LocalCluster
from tests.e2e.engine import PROJECT, Engine, EngineRun, cluster_config, e2e_config
from tests.e2e.fake_controller import ResultsServer
from tests.e2e.kube import Kube, list_custom
from tests.e2e.living import (
    APISERVER_ARGS,
    RunTimes,
    controller_namespaces,
    pin_controller_namespaces,
    pods_by_jobset,
    start_living,
    sync_fleet,
)
from tests.e2e.operator import (
    HEARTBEAT_EXPIRY_SECONDS,
    install_aiperf_crds,
    resolve_to_loopback,
    start_operator,
    stop_operator,
)
from tests.e2e.scenario import Scenario, Step
from tests.e2e.stackrun import Plan, operator_env, plan_stack

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "out" / "e2e"
JOB_LABEL = "aiperf-kueue/job"
#: Seconds the records must stay the same before a step counts as settled.
QUIET_SECONDS = 6.0
FINAL_PHASES = frozenset({"Completed", "Failed", "Cancelled"})
#: Seconds after its creation by which AIPerf 0.13.0's operator has looked at a job nothing pushes for: its heartbeat
#: watchdog (every 10 s) runs the monitor that sets ``Queued`` once the creation is older than the controller heartbeat
#: expiry (10 s as the harness runs the operator, :data:`tests.e2e.operator.HEARTBEAT_EXPIRY_SECONDS`; 30 s by
#: default), plus a margin. A pending job still ``Pending`` younger than this is on its way.
OPERATOR_LOOK_SECONDS = HEARTBEAT_EXPIRY_SECONDS + 15.0
#: The record fields that say what Kueue and the operator did (the timing fields are left out of comparisons).
RECORD_FIELDS = (
    "job", "namespace", "admitted", "clusterQueue", "flavors", "preemptedCount", "preemptionReason", "evictionReasons",
    "finished",
    "podsRunning", "podsSucceeded", "operatorPhase",
)


def rolled_back(phases: list[str]) -> bool:
    """Whether 0.13.0 wrote ``Running`` and then an earlier phase again: a JobSet-readiness event of its that met a
    write conflict (422) is retried after the controller's ``profiling`` push was handled, and its stale
    ``Initializing`` overwrites ``Running`` (``handle_jobset_progress_event``; seen in operator logs, docs/e2e.md).
    Nothing the harness fakes moves such a job on: a real controller's next change of ``subPhase`` comes when its
    profiling ends, so the step waits no longer for it and the record keeps what 0.13.0 wrote."""
    return "Running" in phases and phases[-1] in ("Pending", "Queued", "Initializing")


PhasesByStep = Mapping[str, Mapping[str, tuple[str, tuple[str, ...]]]]


def unexpected_phases(got: PhasesByStep, expected: PhasesByStep) -> dict[str, Any]:
    """Per step and run, each (operatorPhase, operatorPhases) that is neither the expected one nor, for a run expected
    ``Running``, the expected phases followed by 0.13.0's rollback to ``Initializing`` (:func:`rolled_back`); a run
    missing on either side too. Empty when every run is as expected."""
    wrong: dict[str, Any] = {}
    for step in sorted({*got, *expected}):
        seen, wanted = got.get(step, {}), expected.get(step, {})
        for key in sorted({*seen, *wanted}):
            if key not in seen or key not in wanted:
                wrong[f"{step} {key}"] = seen.get(key, "missing")
                continue
            phase, phases = wanted[key]
            allowed = [wanted[key]]
            if phase == "Running":
                allowed.append(("Initializing", (*phases, "Initializing")))
            if seen[key] not in allowed:
                wrong[f"{step} {key}"] = seen[key]
    return wrong


class SettleError(AssertionError):
    """A step did not settle in time: the workloads still changing, and why."""


@dataclass
class JobTimes:
    """When the harness first saw a job's AIPerfJob, its Workload admitted and a pod Running (monotonic seconds)."""

    up_started: float
    admitted: float | None = None
    running: float | None = None


@dataclass
class StepResult:
    """One step: its records and how it went."""

    step: str
    records: list[dict[str, Any]]
    up_seconds: float
    settle_seconds: float
    fleet: dict[str, list[str]]
    explain: list[str] = field(default_factory=list)
    """``aiperf-kueue explain``'s lines for the settled step, from the same objects as the records."""

    def counts(self) -> dict[str, int]:
        """Jobs admitted / pending / preempted (at least once) / finished."""
        return {
            "admitted": sum(1 for r in self.records if r["admitted"] and not r["finished"]),
            "pending": sum(1 for r in self.records if not r["admitted"] and not r["finished"]),
            "preempted": sum(1 for r in self.records if r["preemptedCount"]),
            "finished": sum(1 for r in self.records if r["finished"]),
        }


@dataclass
class ScenarioResult:
    """Every step of a scenario, and where its records are."""

    name: str
    out: Path
    steps: list[StepResult] = field(default_factory=list)
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)
    """What the harness's helpers (chart watcher, run-time annotator) reported."""
    failure: str | None = None
    """Why the scenario stopped before its last step (a failed ``pulumi up``, a step that did not settle)."""


def _condition(obj: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return None


def _true(obj: Mapping[str, Any], kind: str) -> bool:
    return (_condition(obj, kind) or {}).get("status") == "True"


def evicting(workload: Mapping[str, Any]) -> str | None:
    """Why a Workload still holds quota that Kueue has taken back, or None. Kueue 0.19 marks a preempted Workload
    ``Evicted`` (and ``Preempted``) at once, but releases its quota (``QuotaReserved``, ``Admitted`` False) only when
    the JobSet is suspended and its pods are gone; ``SetQuotaReservation`` resets ``Evicted`` on readmission. Until
    then the pods still read Running and the preemptor waits: a pause that can outlast :data:`QUIET_SECONDS` on a
    loaded machine (a CI run settled ``fair-sharing`` there, between the preemption and the preemptor's admission)."""
    if not (_true(workload, "Evicted") and _true(workload, "QuotaReserved")):
        return None
    reason = (_condition(workload, "Evicted") or {}).get("reason") or "Evicted"
    return f"evicted ({reason}), its quota not released yet"


class Observer:
    """Reads AIPerfJobs, Workloads and benchmark pods through the ``kubernetes`` client and makes the records."""

    def __init__(
        self,
        cluster: LocalCluster,
        phases: PhaseWatch | None = None,
        look_seconds: float = OPERATOR_LOOK_SECONDS,
        results: ResultsServer | None = None,
    ) -> None:
        self.kube = Kube(cluster.kubeconfig)
        self.results = results
        self.finished: dict[str, dict[str, Any]] = {}
        """The record of each job seen finished, as it was when its controller's results were served: 0.13.0 then
        deletes the JobSet, and with it the Workload and pods the record was made from."""
        self.look_seconds = look_seconds
        self.custom = k8s.CustomObjectsApi(self.kube.core.api_client)
        self.times: dict[str, JobTimes] = {}
        self.phases = phases
        self.explained: list[str] = []
        """``aiperf-kueue explain``'s lines at the last observation."""

    def close(self) -> None:
        """Release the client."""
        self.kube.close()

    def _list(self, group: str, version: str, plural: str) -> list[dict[str, Any]]:
        return list_custom(self.custom, group, version, plural)["items"]

    def job_of_jobset(self) -> dict[tuple[str, str], str]:
        """(namespace, JobSet name) → the job's config name."""
        out = {}
        for job in self._list("aiperf.nvidia.com", "v1alpha1", "aiperfjobs"):
            meta = job["metadata"]
            jobset = (job.get("status") or {}).get("jobSetName")
            if jobset:
                out[(meta["namespace"], jobset)] = (meta.get("labels") or {}).get(JOB_LABEL, meta["name"])
        return out

    def observe(self, up_started: float, run_jobs: Mapping[str, float]) -> tuple[list[dict[str, Any]], list[str]]:
        """The records now, and what is still on its way (empty: nothing)."""
        jobs = self._list("aiperf.nvidia.com", "v1alpha1", "aiperfjobs")
        workloads = self._list("kueue.x-k8s.io", "v1beta2", "workloads")
        by_owner: dict[tuple[str, str], dict[str, Any]] = {}
        for w in workloads:
            for owner in w["metadata"].get("ownerReferences") or []:
                if owner.get("kind") == "JobSet":
                    by_owner[(w["metadata"]["namespace"], owner["name"])] = w
        pods = self.kube.pods_labelled("jobset.sigs.k8s.io/jobset-name")
        pods_of = pods_by_jobset(pods)
        nodes = self.kube.node_names()
        # explain's view of the same moment: why each waiting job waits (aiperf_kueue.simulate.explain).
        self.explained = [
            e.line()
            for e in explain(
                workloads,
                self._list("kueue.x-k8s.io", "v1beta2", "clusterqueues"),
                self._list("kueue.x-k8s.io", "v1beta2", "localqueues"),
                jobs,
                cohorts=self._list("kueue.x-k8s.io", "v1beta2", "cohorts"),
            )
        ]
        now = time.monotonic()
        wall = datetime.datetime.now(datetime.UTC)
        records, busy = [], []
        for job in jobs:
            meta, status = job["metadata"], job.get("status") or {}
            key = f"{meta['namespace']}/{meta['name']}"
            times = self.times.setdefault(key, JobTimes(up_started))
            name = (meta.get("labels") or {}).get(JOB_LABEL, meta["name"])
            jobset = status.get("jobSetName")
            phase = status.get("phase")
            workload = by_owner.get((meta["namespace"], jobset or "")) or {}
            wstatus = workload.get("status") or {}
            admission = wstatus.get("admission") or {}
            flavors: dict[str, str] = {}
            for assignment in admission.get("podSetAssignments") or []:
                flavors.update(assignment.get("flavors") or {})
            evictions = (wstatus.get("schedulingStats") or {}).get("evictions") or []
            live = [p for p in pods_of.get((meta["namespace"], jobset or ""), []) if
                    not p["metadata"].get("deletionTimestamp")]
            running = sum(1 for p in live if (p.get("status") or {}).get("phase") == "Running")
            succeeded = sum(1 for p in live if (p.get("status") or {}).get("phase") == "Succeeded")
            admitted = _true(workload, "Admitted")
            finished = _true(workload, "Finished")
            if admitted and times.admitted is None:
                times.admitted = now
            if running and times.running is None:
                times.running = now
            record = {
                "job": name,
                "object": meta["name"],
                "namespace": meta["namespace"],
                "admitted": admitted,
                "clusterQueue": admission.get("clusterQueue"),
                "flavors": dict(sorted(flavors.items())),
                "preemptedCount": sum(int(e.get("count", 0)) for e in evictions if e.get("reason") == "Preempted"),
                # Kueue's Preempted condition says by whom: InClusterQueue, InCohortReclamation, ...
                "preemptionReason": (_condition(workload, "Preempted") or {}).get("reason")
                if _true(workload, "Preempted")
                else None,
                "evictionReasons": sorted(
                    {"/".join(x for x in (e.get("reason"), e.get("underlyingCause")) if x) for e in evictions}
                ),
                "finished": finished,
                "podsRunning": running,
                "podsSucceeded": succeeded,
                "operatorPhase": phase,
                # Every phase 0.13.0 wrote to this AIPerfJob, in order (watched), up to the one read here.
                "operatorPhases": self.phases.phases_at(key, phase) if self.phases else [],
                "secondsToAdmission": None if times.admitted is None else round(times.admitted - times.up_started, 1),
                "secondsToRunning": None if times.running is None else round(times.running - times.up_started, 1),
            }
            if workload and finished and succeeded and len(live) == succeeded and jobset and self.results is not None:
                # Every pod Succeeded: the benchmark is done, and its controller now answers the results fetch.
                self.finished.setdefault(key, record)
                self.results.finished(meta["namespace"], jobset)
            elif not workload and key in self.finished:
                record = {**self.finished[key], "operatorPhase": phase, "operatorPhases": record["operatorPhases"]}
            records.append(record)
            if key in self.finished and phase not in FINAL_PHASES:
                busy.append(f"{key}: finished, operator phase {phase}: its results fetch is on its way")
            if not workload and phase not in FINAL_PHASES:
                busy.append(f"{key}: no Workload yet (operator phase {phase})")
            why_evicting = evicting(workload)
            if why_evicting:
                busy.append(f"{key}: {why_evicting}")
            pods_wanted = sum(int(p.get("count", 0)) for p in (workload.get("spec") or {}).get("podSets") or [])
            if admitted and not finished and running < pods_wanted:
                why = sorted(
                    {
                        str((_condition(p, "PodScheduled") or {}).get("message") or "not scheduled yet")
                        for p in live
                        if (p.get("status") or {}).get("phase") == "Pending"
                    }
                )
                busy.append(f"{key}: admitted, {running} of {pods_wanted} pods Running ({'; '.join(why)[:300]})")
            created = datetime.datetime.fromisoformat(meta["creationTimestamp"].replace("Z", "+00:00"))
            age = (wall - created).total_seconds()
            if workload and not admitted and not finished and phase == "Pending" and age < self.look_seconds:
                busy.append(f"{key}: pending, operator phase Pending for {age:.0f} s (0.13.0 looks within "
                            f"{self.look_seconds:g} s)")
            if (
                admitted
                and not finished
                and pods_wanted
                and running >= pods_wanted
                and phase not in ("Running", *FINAL_PHASES)
                and not rolled_back(record["operatorPhases"])
            ):
                busy.append(f"{key}: all {running} pods Running, operator phase {phase}, not Running yet")
            # A pod bound to a node the fleet no longer has still reads Running (no kubelet reports otherwise) until
            # kube-controller-manager's pod GC deletes it, 40 s after the node went (its fixed quarantine).
            orphans = sorted(
                p["metadata"]["name"]
                for p in live
                if (p.get("spec") or {}).get("nodeName") not in (None, *nodes)
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            )
            if orphans:
                busy.append(f"{key}: pods on a deleted node, until pod GC removes them: {', '.join(orphans)}")
            if running and name in run_jobs and not finished:
                busy.append(f"{key}: {running} pods still running their {run_jobs[name]:g} s")
        records.sort(key=lambda r: (r["namespace"], r["job"], r["object"]))
        return records, busy

    def settle(self, step: Step, up_started: float, run_jobs: Mapping[str, float]) -> list[dict[str, Any]]:
        """Wait until the records stay the same for :data:`QUIET_SECONDS` with nothing on its way; at most the step's
        ``settleSeconds`` (then :class:`SettleError`)."""
        deadline = time.monotonic() + step.settle_seconds
        last: list[dict[str, Any]] | None = None
        since = time.monotonic()
        changed: list[str] = []
        while True:
            records, busy = self.observe(up_started, run_jobs)
            comparable = [{k: r[k] for k in (*RECORD_FIELDS, "object")} for r in records]
            now = time.monotonic()
            if comparable != last:
                before = {(r["namespace"], r["object"]): r for r in last or []}
                changed = [
                    f"{r['namespace']}/{r['object']}"
                    for r in comparable
                    if before.get((r["namespace"], r["object"])) != r
                ]
                last, since = comparable, now
            elif not busy and now - since >= QUIET_SECONDS:
                return records
            if now > deadline:
                raise SettleError(
                    f"step {step.name} did not settle within {step.settle_seconds:g} s; still changing: "
                    f"{'; '.join(busy) or ', '.join(changed) + ' (changed in the last ' + f'{now - since:.0f} s)'}"
                )
            time.sleep(0.5)


def _jobs_of(plan: Plan) -> list[dict[str, Any]]:
    return [r["inputs"] for r in plan.resources if (r.get("inputs") or {}).get("kind") == "AIPerfJob"]


def run_scenario(
    scenario: Scenario,
    binaries: Mapping[str, str],
    aiperf_venv: Path,
    *,
    kueue_module: str,
    jobset_module: str,
    provider_version: str,
    out: Path = OUT,
    operator_look_seconds: float = OPERATOR_LOOK_SECONDS,
) -> ScenarioResult:
    """Run every step of ``scenario`` on a fresh living cluster and write its records. A step that fails ends the
    scenario (:attr:`ScenarioResult.failure`) with the records so far. The cluster and every process it started are
    stopped on the way out, pass or fail.

    ``operator_look_seconds``: how long a step waits for the operator to move a pending job from Pending to Queued
    (0: not at all, the phase of a pending job then depends on timing; the project's scenarios that assert no
    phases save the ~20 s this costs)."""
    started = time.monotonic()
    records_dir = out / "scenarios" / scenario.name
    for old in records_dir.glob("*.json"):
        old.unlink()
    records_dir.mkdir(parents=True, exist_ok=True)
    result = ScenarioResult(scenario.name, records_dir)
    workdir = out / "clusters" / f"scenario-{scenario.name}"
    # A fresh cluster: no etcd data, certificates or logs of an earlier run.
    shutil.rmtree(workdir, ignore_errors=True)
    cluster = LocalCluster(binaries, workdir, kueue_module=kueue_module, jobset_module=jobset_module)
    stack = f"scenario-{scenario.name}"
    # What needs no cluster runs while the cluster starts (the harness's waits leave the cores idle): the engine's
    # plugin install, then every revision's offline plan in step order. Each plan is still read at its own step, so
    # a revision that does not plan fails that step, as before.
    prepare = ThreadPoolExecutor(max_workers=2, thread_name_prefix=f"prepare-{scenario.name}")
    operator_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"operator-{scenario.name}")
    engine_made = prepare.submit(
        Engine, binaries, out / "engine" / stack, cluster.kubeconfig, provider_version,
        checkpoints=os.environ.get("AIPERF_KUEUE_E2E_CHECKPOINTS") == "1",
    )
    plans = {
        step.name: prepare.submit(plan_stack, step.stack, out / "scenario-plans" / scenario.name / step.name)
        for step in scenario.steps
    }
    try:
        cluster.apiserver_args = list(APISERVER_ARGS)
        cluster.start(controllers=False)
        install_aiperf_crds(cluster)
        start_living(cluster)
        pin_controller_namespaces(cluster, controller_namespaces(scenario.steps[0].stack))
        engine = engine_made.result()
        phases = PhaseWatch(cluster.kubeconfig)
        results = ResultsServer(cluster)
        observer = Observer(cluster, phases, operator_look_seconds, results)
        operator_env_now: dict[str, str] | None = None
        with (
            ChartControllers(cluster) as controllers,
            RunTimes(cluster, observer.job_of_jobset) as run_times,
            phases,
            ControllerPush(cluster.kubeconfig) as push,
            results,
        ):
            run: EngineRun | None = None
            try:
                for step in scenario.steps:
                    plan = plans[step.name].result()
                    fleet = sync_fleet(cluster, step.stack)
                    jobs = _jobs_of(plan)
                    resolve_to_loopback(
                        (u for j in jobs for u in j["spec"]["benchmark"]["endpoint"].get("urls", [])), cluster
                    )
                    env = operator_env(plan)
                    # The operator (re)starts while `pulumi up` runs: its import and kopf's start take ~3 s, and the
                    # first AIPerfJob comes at the end of the up. It is live, or the step fails, before the settle.
                    operator_starting: Future[Any] | None = None
                    if env != operator_env_now:
                        stop_operator(cluster)
                        operator_starting = operator_pool.submit(start_operator, cluster, aiperf_venv, env, cluster.dir)
                        operator_env_now = env
                    # Each revision deploys to this scenario's cluster, named as a user's stack names its own.
                    config = {
                        f"{PROJECT}:cluster": cluster_config(cluster),
                        **e2e_config(step.stack, kueue_module, jobset_module),
                    }
                    if run is None:
                        work = engine.project_dir(stack, config)
                        run = EngineRun(stack, cluster, engine, work, engine.stack(stack, work), controllers, plan,
                                        config)
                    else:
                        run.set_config(config)
                        run.plan = plan
                    run_times.set(step.run_seconds)
                    up_started = time.monotonic()
                    with UserSecrets(cluster, plan):
                        up = run.up()
                    up_seconds = time.monotonic() - up_started
                    if operator_starting is not None:
                        operator_starting.result()
                    # The engine's step events, relative to the start of the up: where an up's time went.
                    (engine.dir / f"events-{step.number}.json").write_text(
                        json.dumps([{**e, "at": round(e["at"] - up_started, 2)} for e in run.events], indent=1)
                    )
                    if up.summary.result != "succeeded":
                        raise AssertionError(f"pulumi up of {step.stack} {up.summary.result}:\n{up.stderr}")
                    run_jobs = dict(run_times.seconds)
                    records = observer.settle(step, up_started, run_jobs)
                    step_result = StepResult(
                        step.name, records, round(up_seconds, 1), round(time.monotonic() - up_started - up_seconds, 1),
                        fleet,
                    )
                    result.steps.append(step_result)
                    (records_dir / f"{step.number}.json").write_text(
                        json.dumps({"step": step.name, "workloads": records}, indent=2) + "\n"
                    )
                    step_result.explain = list(observer.explained)
                    (records_dir / f"{step.number}.explain.txt").write_text("\n".join(step_result.explain) + "\n")
            except Exception as exc:
                result.failure = f"{type(exc).__name__}: {exc}"
                # What the cluster looked like, for reading after the run (the cluster is stopped below).
                for what in ("pods", "nodes", "workloads", "aiperfjobs"):
                    dump = cluster.kubectl("get", what, "-A", "-o", "wide", check=False)
                    (workdir / f"at-failure-{what}.txt").write_text(dump.stdout + dump.stderr)
            finally:
                result.errors += controllers.errors + run_times.errors + phases.errors + push.errors
                # What the operator asked the faked results API (tests/e2e/fake_controller.py), in order.
                (records_dir / "results-served.txt").write_text("".join(f"{line}\n" for line in results.served))
                observer.close()
    finally:
        # Plans not read (a step failed first) are not waited for; the one running ends with its subprocess.
        prepare.shutdown(wait=True, cancel_futures=True)
        operator_pool.shutdown(wait=True, cancel_futures=True)
        cluster.stop()
        result.seconds = round(time.monotonic() - started, 1)
    return result

