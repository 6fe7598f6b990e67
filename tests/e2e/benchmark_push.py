"""The AIPerfJob side of a living cluster: the phases AIPerf 0.13.0's operator reports, and the one call of a running
benchmark that kwok's fake pods cannot make.

**What the operator needs from a benchmark.** 0.13.0's operator sets an AIPerfJob ``Pending`` when it creates the
JobSet. Its broad monitor, which sets ``Queued`` while Kueue keeps the JobSet suspended and ``Initializing`` once a
worker pod is ready, runs only when the controller's heartbeat has expired (``heartbeat_watchdog`` every 10 s, with
the AIPerfJob's creation as the reference until a first heartbeat: 30 s by default,
``AIPERF_K8S_CONTROLLER_HEARTBEAT_EXPIRY_SECONDS``; ``aiperf/operator/handlers/monitor.py``). The benchmark's
controller drives the rest: its API service patches the AIPerfJob's ``status.subPhase``
(``aiperf/api/routers/progress.py``), and the operator projects ``configuring`` onto ``Initializing`` and
``profiling`` onto ``Running`` (``monitor.py``, ``_controller_subphase_target``).
On kwok's nodes no container runs, so nothing pushes.

:class:`ControllerPush` makes those pushes, and only them, through the status subresource, as the benchmark pod's
service account (impersonated), so each passes the RBAC the program declares for benchmark pods (the
``<operator>-benchmark`` Role) or fails the scenario: ``subPhase: configuring`` once the controller's pod is Running
(0.13.0 projects it onto ``Initializing``), then ``subPhase: profiling`` once the operator says ``Initializing`` and
every pod of the job's JobSet is Running. The controller's results API, once every pod Succeeded, is the other
fake (:mod:`tests.e2e.fake_controller`); nothing else it would write (heartbeats, progress, metrics) is faked.

:class:`PhaseWatch` watches AIPerfJobs and keeps, per object, every phase the operator wrote, in order: the sequence
the records' ``operatorPhases`` field shows.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch as k8s_watch

from tests.e2e.kube import list_custom, read_list
from tests.e2e.living import Poller

GROUP, VERSION, PLURAL = "aiperf.nvidia.com", "v1alpha1", "aiperfjobs"
JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
#: AIPerf 0.13.0's ``SystemState`` values the controller pushes: while it sets its services up, and once its
#: benchmark runs.
CONFIGURING = "configuring"
PROFILING = "profiling"
#: Seconds each watch request lasts before it is renewed: also how long stopping the watch may take.
WATCH_SECONDS = 5


def _client(kubeconfig: Path, headers: Mapping[str, str] | None = None) -> k8s.ApiClient:
    api: k8s.ApiClient = k8s_config.new_client_from_config(config_file=str(kubeconfig))
    for key, value in (headers or {}).items():
        api.set_default_header(key, value)
    return api


def next_push(job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> str | None:
    """The ``subPhase`` a real controller would push now, or None: ``configuring`` once its pod is Running while the
    operator still says ``Pending`` or ``Queued`` (the controller starts and configures its services), then
    ``profiling`` once the operator says ``Initializing`` and every live pod of the JobSet is Running (the workers
    are up: the benchmark starts)."""
    status = job.get("status") or {}
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    running = [p for p in live if (p.get("status") or {}).get("phase") == "Running"]
    controller = any((p["metadata"].get("labels") or {}).get(REPLICATED_JOB_LABEL) == "controller" for p in running)
    if not controller:
        return None
    phase, sub = status.get("phase"), status.get("subPhase")
    if phase in ("Pending", "Queued") and sub not in (CONFIGURING, PROFILING):
        return CONFIGURING
    if phase == "Initializing" and sub != PROFILING and len(running) == len(live):
        return PROFILING
    return None


class ControllerPush(Poller):
    """Pushes ``subPhase: profiling`` for each AIPerfJob whose benchmark would now profile (see the module)."""

    what = "controller push"

    def __init__(self, kubeconfig: Path) -> None:
        super().__init__()
        self.kubeconfig = kubeconfig
        self._api = _client(kubeconfig)
        self._custom = k8s.CustomObjectsApi(self._api)
        self.pushed: list[str] = []
        """``namespace/name: subPhase`` of each push, in order."""

    def close(self) -> None:
        """Close the client."""
        self._api.close()

    def _push(self, namespace: str, name: str, service_account: str, sub_phase: str) -> None:
        # As the benchmark pod's service account: the program's benchmark ClusterRole, bound in the namespace, must
        # allow it.
        user = f"system:serviceaccount:{namespace}:{service_account}"
        api = _client(self.kubeconfig, {"Impersonate-User": user})
        try:
            k8s.CustomObjectsApi(api).patch_namespaced_custom_object_status(
                GROUP, VERSION, namespace, PLURAL, name, {"status": {"subPhase": sub_phase}}, _request_timeout=20
            )
        finally:
            api.close()
        self.pushed.append(f"{namespace}/{name}: {sub_phase}")

    def pass_once(self) -> None:
        """One pass over the AIPerfJobs."""
        jobs = list_custom(self._custom, GROUP, VERSION, PLURAL)["items"]
        waiting = [j for j in jobs if (j.get("status") or {}).get("phase") in ("Pending", "Queued", "Initializing")]
        if not waiting:
            return
        plain = read_list(self._api, "/api/v1/pods", {"labelSelector": JOBSET_LABEL})["items"]
        for job in waiting:
            meta = job["metadata"]
            jobset = (job.get("status") or {}).get("jobSetName")
            mine = [
                p for p in plain
                if p["metadata"]["namespace"] == meta["namespace"]
                and (p["metadata"].get("labels") or {}).get(JOBSET_LABEL) == jobset
            ]
            push = next_push(job, mine) if jobset else None
            if push is not None:
                account = next(
                    (p["spec"].get("serviceAccountName") or "default" for p in mine
                     if p["metadata"]["labels"].get(REPLICATED_JOB_LABEL) == "controller"),
                    "default",
                )
                self._push(meta["namespace"], meta["name"], account, push)


class PhaseWatch:
    """Every ``status.phase`` the operator wrote, per AIPerfJob (``namespace/name``), consecutive repeats dropped."""

    def __init__(self, kubeconfig: Path) -> None:
        self._api = _client(kubeconfig)
        self._custom = k8s.CustomObjectsApi(self._api)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._phases: dict[str, list[str]] = {}
        self._thread = threading.Thread(target=self._run, name="phase-watch", daemon=True)
        self.errors: list[str] = []

    def __enter__(self) -> PhaseWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(WATCH_SECONDS + 10)
        self._api.close()

    def phases(self, key: str) -> list[str]:
        """The phases seen of ``namespace/name`` so far."""
        with self._lock:
            return list(self._phases.get(key, []))

    def phases_at(self, key: str, sampled: str | None) -> list[str]:
        """The phases of ``namespace/name`` up to ``sampled``, the phase a read of the object just gave: the watch may
        have seen a later write already (cut there) or not yet seen that one (added), so the two agree."""
        return phases_until(self.phases(key), sampled)

    def _see(self, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        phase = (obj.get("status") or {}).get("phase")
        if not phase:
            return
        with self._lock:
            seen = self._phases.setdefault(f"{meta.get('namespace')}/{meta.get('name')}", [])
            if not seen or seen[-1] != phase:
                seen.append(str(phase))

    def _run(self) -> None:
        version: str | None = None
        failures = 0
        while not self._stop.is_set():
            try:
                if version is None:
                    listed = list_custom(self._custom, GROUP, VERSION, PLURAL)
                    for obj in listed["items"]:
                        self._see(obj)
                    version = listed["metadata"]["resourceVersion"]
                stream = k8s_watch.Watch().stream(
                    self._custom.list_cluster_custom_object, GROUP, VERSION, PLURAL,
                    resource_version=version, timeout_seconds=WATCH_SECONDS, allow_watch_bookmarks=True,
                )
                for event in stream:
                    obj = event["object"]
                    if event["type"] == "ERROR":
                        version = None  # expired (410 Gone): list again
                        break
                    version = (obj.get("metadata") or {}).get("resourceVersion") or version
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self._see(obj)
                    if self._stop.is_set():
                        break
                failures = 0
            except Exception as exc:
                failures += 1
                version = None
                if failures == 3:
                    self.errors.append(f"phase watch: 3 watches failed, last: {type(exc).__name__}: {exc}")
                self._stop.wait(1)


def phases_until(seen: list[str], sampled: str | None) -> list[str]:
    """``seen`` (a watch's phases, in order) cut after the last ``sampled``, or with ``sampled`` added if the watch has
    not seen it yet (see :meth:`PhaseWatch.phases_at`)."""
    if not sampled:
        return list(seen)
    if sampled in seen:
        return seen[: len(seen) - seen[::-1].index(sampled)]
    return [*seen, sampled]
