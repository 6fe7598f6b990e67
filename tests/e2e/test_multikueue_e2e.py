"""A MultiKueue fleet on three real local control planes: one manager, two workers, each with Kueue 0.19.2 and
JobSet 0.12.0 from the same built binaries.

Each stack is planned by the real CLI from the fleet's stack files and its Kubernetes objects applied as
``tests/e2e/stackrun.py`` does (the harness runs Kueue and JobSet itself, in place of the charts). The manager's
kubeconfig Secrets get, in place of the plan's ``[secret ...]``, a kubeconfig per worker as ``docs/multikueue.md``
tells users to make it: a token of the worker's ``multikueue`` ServiceAccount (``kubectl create token``), the
worker's loopback API server and its CA as data. A JobSet that only the bigger worker has room for is submitted on
the manager: Kueue's webhook marks it ``managedBy: kueue.x-k8s.io/multikueue``, the manager admits it on the fleet's
quota and MultiKueue dispatches it to that worker, whose own Kueue admits it.

Also here: the kubeconfigs only client-go's exec and proxy-url checks refuse, against the manager's Kueue.

Not here: ``pulumi up`` of the three stacks (the objects are applied from the plans; the nightly
``test_multikueue_engine.py`` runs it), an AIPerfJob (the JobSet is submitted directly, here and there).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiperf_kueue.upstream.kueue_kubeconfig import kubeconfig_problems
from tests.e2e.cluster import LocalCluster
from tests.e2e.conftest import DEFAULT_AIPERF_VENV, OUT, ClusterFactory
from tests.e2e.living import start_living, sync_fleet
from tests.e2e.nodes import create_nodes, node_objects
from tests.e2e.operator import resolve_to_loopback, start_operator, stop_operator
from tests.e2e.stackrun import Plan, apply_order, kueue_manager_config, object_of, operator_env, plan_stack, ref

ROOT = Path(__file__).resolve().parents[2]
FLEET = ROOT / "tests" / "fleet_stacks"
STACKS = {"manager": "fleet", "east": "gpu-east", "west": "gpu-west"}
#: east holds 1.8 cores after headroom, west 14.4: a pod of 4 cores fits west only.
POOLS = {
    "gpu-east": [{"name": "cpu-small", "nodes": 1, "cpu": "2", "memory": "8Gi"}],
    "gpu-west": [{"name": "cpu", "nodes": 1, "cpu": "16", "memory": "64Gi"}],
}
#: How long the manager's Kueue waits for a lost worker (``multikueue.workerLostTimeout``; Kueue's default is 15m).
LOST_TIMEOUT = "30s"
NAMESPACE = "aiperf-benchmarks"
PROBE = "mk-probe"
WAIT = 240.0


@dataclass
class Fleet:
    """The three clusters, and what the run measured."""

    clusters: dict[str, LocalCluster]
    stacks: Path
    applied: dict[str, list[str]] = field(default_factory=dict)
    lost: list[str] = field(default_factory=list)
    """The manager Workload's MultiKueue check, each change, after its worker was stopped."""
    rejections: list[str] = field(default_factory=list)
    kueue_configs: dict[str, Any] = field(default_factory=dict)
    """Each cluster's Kueue manager config, from its plan (a stopped worker comes back with its own)."""
    plans: dict[str, Plan] = field(default_factory=dict)
    aiperf_job: dict[str, Any] = field(default_factory=dict)
    """What the AIPerfJob test saw: the worker, and the objects each side has."""
    seconds: dict[str, float] = field(default_factory=dict)
    memory_mib: dict[str, float] = field(default_factory=dict)


def _stack_files(directory: Path) -> None:
    """The committed fleet, with worker pools of different room (the manager's AIPerfJob is applied by its test)."""
    directory.mkdir(parents=True, exist_ok=True)
    for path in FLEET.glob("Pulumi.*.yaml"):
        doc = yaml.safe_load(path.read_text())
        config = doc["config"]
        stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
        if stack in POOLS:
            config["aiperf-kueue:inventory"] = {"headroom": 10, "pools": POOLS[stack]}
        else:
            config["aiperf-kueue:multikueue"]["workerLostTimeout"] = LOST_TIMEOUT
        (directory / path.name).write_text(yaml.safe_dump(doc, sort_keys=False))


def _rss_mib(cluster: LocalCluster) -> float:
    """Resident memory of every process the cluster started (etcd, API server, controller manager, Kueue, JobSet)."""
    total = 0
    for proc in cluster.processes.values():
        try:
            status = Path(f"/proc/{proc.popen.pid}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


def _worker_kubeconfig(worker: LocalCluster) -> str:
    """A kubeconfig for the worker's ``multikueue`` ServiceAccount: a token, the loopback server, the CA as data."""
    token = worker.kubectl("create", "token", "multikueue", "-n", "kueue-system", "--duration=1h").stdout.strip()
    assert worker.pki is not None
    ca = base64.b64encode(worker.pki.ca_crt.read_bytes()).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "worker",
                "cluster": {"server": f"https://127.0.0.1:{worker.ports.apiserver}", "certificate-authority-data": ca},
            }
        ],
        "users": [{"name": "multikueue", "user": {"token": token}}],
        "contexts": [{"name": "worker", "context": {"cluster": "worker", "user": "multikueue"}}],
        "current-context": "worker",
    }
    return yaml.safe_dump(config)


def _wait(what: str, check: Any, timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(1)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


def _get(cluster: LocalCluster, *args: str) -> Any:
    result = cluster.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(result.stdout) if result.returncode == 0 else None


def _jobset(name: str, requests: dict[str, str] | None) -> dict[str, Any]:
    """A JobSet of one pod in the fleet's LocalQueue, requesting REQUESTS (None: nothing)."""
    container: dict[str, Any] = {"name": "c", "image": "registry.invalid/probe:1"}
    if requests is not None:
        container["resources"] = {"requests": requests}
    pod = {"restartPolicy": "Never", "containers": [container]}
    job = {"parallelism": 1, "completions": 1, "template": {"spec": pod}}
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"kueue.x-k8s.io/queue-name": "aiperf-queue"}},
        "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": job}}]},
    }


def _probe_pods(cluster: LocalCluster, name: str = PROBE) -> list[str]:
    """``<node>/<phase>`` of each pod of the probe JobSet (or JobSet ``name``) on CLUSTER, sorted."""
    pods = _get(cluster, "pods", "-n", NAMESPACE, "-l", f"jobset.sigs.k8s.io/jobset-name={name}") or {}
    return sorted(f"{p['spec'].get('nodeName')}/{p['status'].get('phase')}" for p in pods.get("items") or [])


def _probe_workload(cluster: LocalCluster, name: str = PROBE) -> dict[str, Any] | None:
    """The Workload of the probe JobSet, or of JobSet ``name`` (Kueue names it ``jobset-<name>-<hash>``)."""
    workloads = (_get(cluster, "workloads", "-n", NAMESPACE) or {}).get("items") or []
    mine = [w for w in workloads if any(o.get("name") == name for o in w["metadata"].get("ownerReferences", []))]
    return mine[0] if mine else None


def _condition(obj: Any, kind: str) -> str | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return str(cond.get("status"))
    return None


@pytest.fixture(scope="module")
def fleet(new_cluster: ClusterFactory) -> Iterator[Fleet]:
    started = time.monotonic()
    stacks = OUT / "multikueue" / "stacks"
    shutil.rmtree(stacks, ignore_errors=True)
    _stack_files(stacks)
    plans = {
        role: plan_stack(stacks / f"Pulumi.{s}.yaml", OUT / "multikueue" / "plans" / s) for role, s in STACKS.items()
    }
    configs = {role: kueue_manager_config(plans[role]) for role in STACKS}
    # The workers are living clusters (kube-scheduler, kwok nodes from their stacks' inventories): a dispatched
    # JobSet's pods are scheduled there and run. The manager runs no pods.
    # The manager gets the AIPerf CRDs (its operator runs in the AIPerfJob test).
    clusters = {
        role: new_cluster(f"mk-{role}", configs[role], aiperf=role == "manager", living=role != "manager")
        for role in STACKS
    }
    run = Fleet(clusters, stacks, kueue_configs=configs, plans=plans)
    run.seconds["clustersUp"] = round(time.monotonic() - started, 1)
    # Workers first (docs/multikueue.md's set-up order), then their kubeconfigs, then the manager.
    for role in ("east", "west", "manager"):
        cluster, applied = clusters[role], run.applied.setdefault(role, [])
        for resource in apply_order(plans[role].resources):
            obj = object_of(resource)
            if obj["kind"] == "AIPerfJob":
                continue
            if obj["kind"] == "Secret" and obj["metadata"]["name"].startswith("multikueue-"):
                worker = obj["metadata"]["name"].removeprefix("multikueue-")
                obj = {**obj, "stringData": {"kubeconfig": _worker_kubeconfig(clusters[worker])}}
            result = cluster.apply([obj], check=False)
            if result.returncode == 0:
                applied.append(ref(obj))
            else:
                run.rejections.append(f"{role}: {ref(obj)}: {result.stderr.strip()}")
        if role != "manager":
            sync_fleet(cluster, stacks / f"Pulumi.{STACKS[role]}.yaml")
    run.seconds["applied"] = round(time.monotonic() - started, 1)
    run.memory_mib = {role: round(_rss_mib(c), 1) for role, c in clusters.items()}
    yield run
    report = {
        "seconds": run.seconds,
        "memoryMiB": {**run.memory_mib, "total": round(sum(run.memory_mib.values()), 1)},
        "applied": run.applied,
        "rejections": run.rejections,
        "workerLost": run.lost,
        "aiperfJob": run.aiperf_job,
    }
    (OUT / "multikueue" / "report.json").write_text(json.dumps(report, indent=2) + "\n")


def test_every_object_of_the_three_plans_is_accepted(fleet: Fleet) -> None:
    assert fleet.rejections == []
    assert [
        r
        for r in fleet.applied["manager"]
        if r.split("/")[0] in ("MultiKueueCluster", "MultiKueueConfig", "AdmissionCheck")
    ] == [
        "MultiKueueCluster/east",
        "MultiKueueCluster/west",
        "MultiKueueConfig/aiperf-fleet",
        "AdmissionCheck/multikueue",
    ]


def _unsuspended(worker: LocalCluster) -> dict[str, Any] | None:
    """The probe's JobSet on WORKER once its Kueue has unsuspended it; ``None`` before."""
    remote = _get(worker, "jobset", PROBE, "-n", NAMESPACE)
    return remote if remote is not None and remote["spec"].get("suspend") is False else None


def test_the_manager_reaches_both_workers_and_its_queue_is_active(fleet: Fleet) -> None:
    manager = fleet.clusters["manager"]
    for name in ("east", "west"):
        _wait(
            f"MultiKueueCluster {name} Active",
            lambda n=name: _condition(_get(manager, "multikueuecluster", n), "Active") == "True",
        )
    _wait(
        "AdmissionCheck multikueue Active",
        lambda: _condition(_get(manager, "admissioncheck", "multikueue"), "Active") == "True",
    )
    _wait(
        "ClusterQueue benchmarks Active",
        lambda: _condition(_get(manager, "clusterqueue", "benchmarks"), "Active") == "True",
    )


def _variants(real: dict[str, Any], east: LocalCluster) -> dict[str, dict[str, Any]]:
    """Kubeconfigs that only client-go's exec and proxy-url checks tell apart, each with a twin client-go takes:
    an exec plugin over plain http (Kueue's own exec refusal is for TLS only), and a proxy of each scheme."""
    plugin = {"command": "/bin/true", "apiVersion": "client.authentication.k8s.io/v1", "interactiveMode": "Never"}
    over_http = json.loads(json.dumps(real))
    over_http["clusters"][0]["cluster"]["server"] = f"http://127.0.0.1:{east.ports.apiserver}"
    variants = {}
    for name, user in (("exec-http-incomplete", {"exec": {"command": "/bin/true"}}), ("exec-http", {"exec": plugin})):
        doc = json.loads(json.dumps(over_http))
        doc["users"][0]["user"] = user
        variants[name] = doc
    # A loopback port nothing listens on: the good proxy leads nowhere, so that cluster fails to connect instead.
    for name, proxy in (("proxy-ftp", "ftp://127.0.0.1:9"), ("proxy-socks5", "socks5://127.0.0.1:9")):
        doc = json.loads(json.dumps(real))
        doc["clusters"][0]["cluster"]["proxy-url"] = proxy
        variants[name] = doc
    return variants


def test_kueue_refuses_exactly_the_exec_and_proxy_kubeconfigs_the_port_refuses(fleet: Fleet) -> None:
    manager, east = fleet.clusters["manager"], fleet.clusters["east"]
    real = yaml.safe_load(_worker_kubeconfig(east))
    variants = _variants(real, east)
    for name, doc in variants.items():
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": f"probe-{name}", "namespace": "kueue-system"},
            "stringData": {"kubeconfig": yaml.safe_dump(doc)},
        }
        source = {"kubeConfig": {"location": f"probe-{name}", "locationType": "Secret"}}
        cluster = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "MultiKueueCluster",
            "metadata": {"name": f"probe-{name}"},
            "spec": {"clusterSource": source},
        }
        manager.apply([secret, cluster])

    def reasons() -> dict[str, str] | None:
        found = {}
        for name in variants:
            for cond in (_get(manager, "multikueuecluster", f"probe-{name}") or {}).get("status", {}).get(
                "conditions"
            ) or []:
                if cond.get("type") == "Active":
                    found[name] = f"{cond['status']}/{cond.get('reason')}"
        return found if len(found) == len(variants) else None

    seen = _wait("an Active condition on each probe MultiKueueCluster", reasons)
    for name in variants:
        manager.kubectl("delete", "multikueuecluster", f"probe-{name}", "--wait=false", check=False)
        manager.kubectl("delete", "secret", f"probe-{name}", "-n", "kueue-system", "--wait=false", check=False)
    refused = {name: reason.endswith("/InsecureKubeConfig") for name, reason in seen.items()}
    predicted = {name: bool(kubeconfig_problems(doc)) for name, doc in variants.items()}
    assert (refused, seen) == (predicted, seen)
    assert refused == {"exec-http-incomplete": True, "exec-http": False, "proxy-ftp": True, "proxy-socks5": False}


def test_a_jobset_submitted_on_the_manager_runs_on_the_worker_with_room(fleet: Fleet) -> None:
    manager, east, west = fleet.clusters["manager"], fleet.clusters["east"], fleet.clusters["west"]
    started = time.monotonic()
    jobset = _jobset(PROBE, {"cpu": "4", "memory": "1Gi"})
    manager.apply([jobset])
    # Kueue's JobSet webhook on the manager: the ClusterQueue carries a MultiKueue admission check.
    assert _get(manager, "jobset", PROBE, "-n", NAMESPACE)["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"

    def dispatched() -> str | None:
        workload = _probe_workload(manager)
        return (workload.get("status") or {}).get("clusterName") if workload else None

    assert _wait("the manager's Workload dispatched", dispatched) == "west"
    # MultiKueue creates the worker's copy suspended; the worker's own Kueue admits and unsuspends it a moment later.
    remote = _wait("the JobSet on west, unsuspended", lambda: _unsuspended(west))
    assert remote["spec"]["suspend"] is False
    _wait("no JobSet left on east", lambda: _get(east, "jobset", PROBE, "-n", NAMESPACE) is None)
    # West's kube-scheduler places the pod on its one node (the pool ``cpu``); kwok runs it.
    assert _wait("the probe's pod Running on west", lambda: _probe_pods(west) == ["cpu-0/Running"])
    assert _probe_pods(east) == []
    fleet.seconds["dispatch"] = round(time.monotonic() - started, 1)


def test_an_aiperfjob_on_the_manager_fails_its_node_check_or_reaches_a_worker_as_its_jobset_alone(
    fleet: Fleet,
) -> None:
    """The released operator runs on the manager, as ``pulumi up`` would install it there, and the manager plan's
    AIPerfJob is applied. With no node on the manager, the operator's preflight fails it. With a node that fits its
    largest pod, the operator builds its JobSet and the ConfigMap its pods mount; MultiKueue dispatches the
    JobSet to a worker with room, whose scheduler places its pods and kwok runs them; the ConfigMap every pod mounts
    stays on the manager. Both are what ``plan`` warns about for a manager's jobs."""
    manager = fleet.clusters["manager"]
    plan = fleet.plans["manager"]
    (job,) = [o for o in (object_of(r) for r in apply_order(plan.resources)) if o["kind"] == "AIPerfJob"]
    job_name = job["metadata"]["name"]
    resolve_to_loopback(job["spec"]["benchmark"]["endpoint"]["urls"])
    venv = Path(os.environ.get("AIPERF_VENV") or DEFAULT_AIPERF_VENV)
    start_operator(manager, venv, operator_env(plan), manager.dir)
    try:
        manager.apply([job])
        failed = _wait(
            "the AIPerfJob Failed by the operator",
            lambda: (
                (j := _get(manager, "aiperfjob", job_name, "-n", NAMESPACE))
                and (j.get("status") or {}).get("phase") == "Failed"
                and j
            ),
        )
        assert failed["status"]["error"] == (
            "Pre-flight failed: Per-Node Schedulability: No single node can fit the largest pod (3.4 CPU, 6.0Gi "
            "mem). Add larger nodes or reduce pod resource requirements."
        )
        manager.kubectl("delete", "aiperfjob", job_name, "-n", NAMESPACE, "--timeout=60s")
        # A node of the manager's own that fits the largest pod (no kubelet: the harness sets it Ready).
        create_nodes(manager, node_objects([{"name": "manager", "nodes": 1, "cpu": "16", "memory": "64Gi"}]))
        manager.apply([job])

        def owned_jobset() -> dict[str, Any] | None:
            for item in (_get(manager, "jobsets", "-n", NAMESPACE) or {}).get("items") or []:
                if any(o.get("kind") == "AIPerfJob" and o.get("name") == job_name for o in _owners(item)):
                    return dict(item)
            return None

        jobset = _wait("the operator's JobSet on the manager", owned_jobset)
        assert jobset["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
        name = jobset["metadata"]["name"]  # AIPerf 0.13.0: aiperf-<job id>; its ConfigMap <name>-config
        seen: dict[str, Any] = {}

        def dispatched() -> str | None:
            for w in (_get(manager, "workloads", "-n", NAMESPACE) or {}).get("items") or []:
                if any(o.get("name") == name for o in _owners(w)):
                    seen["workload"] = w
                    return (w.get("status") or {}).get("clusterName")
            return None

        try:
            worker_name = _wait("the job's Workload dispatched", dispatched)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the manager's Workload: {json.dumps(seen.get('workload'))}") from None
        worker = fleet.clusters[worker_name]
        remote = _wait(
            f"the JobSet on {worker_name}, unsuspended",
            lambda: (r := _get(worker, "jobset", name, "-n", NAMESPACE)) and r["spec"].get("suspend") is False and r,
        )
        volumes = [
            v
            for rj in remote["spec"]["replicatedJobs"]
            for v in rj["template"]["spec"]["template"]["spec"].get("volumes") or []
            if v.get("configMap")
        ]
        assert {v["configMap"]["name"] for v in volumes} == {f"{name}-config"}

        def pods() -> list[str]:
            found = _get(worker, "pods", "-n", NAMESPACE, "-l", f"jobset.sigs.k8s.io/jobset-name={name}") or {}
            return sorted(p["status"].get("phase", "") for p in found.get("items") or [])

        # The controller pod and one worker pod, placed by the worker's scheduler; kwok runs them.
        assert _wait(f"the job's pods Running on {worker_name}", lambda: pods() == ["Running", "Running"])
        sides = {
            side: {
                kind: _get(cluster, kind, f"{name}-config" if kind == "configmap" else name, "-n", NAMESPACE)
                is not None
                for kind in ("configmap", "jobset")
            }
            for side, cluster in (("manager", manager), ("worker", worker))
        }
        fleet.aiperf_job = {"worker": worker_name, "objects": sides, "phase": _phase(manager, job_name)}
        assert sides == {
            "manager": {"configmap": True, "jobset": True},
            "worker": {"configmap": False, "jobset": True},
        }
        # Gone again before the worker-lost test: the AIPerfJob's deletion reaches the worker's copy.
        manager.kubectl("delete", "aiperfjobs", "--all", "-n", NAMESPACE, "--wait=false")
        _wait(f"the JobSet gone from {worker_name}", lambda: _get(worker, "jobset", name, "-n", NAMESPACE) is None)
    finally:
        stop_operator(manager)


def test_a_worker_stopped_mid_run_loses_its_job_to_a_worker_with_room_and_nothing_is_lost(fleet: Fleet) -> None:
    """Stop west (every process of its control plane) while it runs the probe; give east room (its stack's pool
    grows, re-planned and applied); the manager's Kueue re-dispatches after workerLostTimeout."""
    manager, east, west = fleet.clusters["manager"], fleet.clusters["east"], fleet.clusters["west"]
    jobset_uid = _get(manager, "jobset", PROBE, "-n", NAMESPACE)["metadata"]["uid"]
    before = _probe_workload(manager)
    assert before is not None and before["status"]["clusterName"] == "west"
    started = time.monotonic()
    west.stop()
    doc = yaml.safe_load((fleet.stacks / "Pulumi.gpu-east.yaml").read_text())
    doc["config"]["aiperf-kueue:inventory"]["pools"] = [
        {"name": "cpu-small", "nodes": 1, "cpu": "16", "memory": "64Gi"}
    ]
    (fleet.stacks / "Pulumi.gpu-east.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    grown = plan_stack(fleet.stacks / "Pulumi.gpu-east.yaml", OUT / "multikueue" / "plans" / "gpu-east-grown")
    for resource in apply_order(grown.resources):
        obj = object_of(resource)
        if obj["kind"] in ("ResourceFlavor", "ClusterQueue"):
            east.apply([obj])
    assert sync_fleet(east, fleet.stacks / "Pulumi.gpu-east.yaml") == {
        "created": [],
        "updated": ["cpu-small-0"],
        "deleted": [],
    }

    def moved() -> bool:
        workload = _probe_workload(manager) or {}
        checks = (workload.get("status") or {}).get("admissionChecks") or []
        seen = "; ".join(f"{c.get('state')}: {c.get('message', '')}" for c in checks)
        cluster = (workload.get("status") or {}).get("clusterName")
        entry = f"{round(time.monotonic() - started)}s cluster={cluster} {seen}"
        if not fleet.lost or fleet.lost[-1].split(" ", 1)[1] != entry.split(" ", 1)[1]:
            fleet.lost.append(entry)
        return cluster == "east"

    _wait("the Workload re-dispatched to east", moved, timeout=WAIT * 2)
    # MultiKueue creates the worker's copy suspended; the worker's own Kueue admits and unsuspends it a moment later.
    remote = _wait("the JobSet on east, unsuspended", lambda: _unsuspended(east))
    assert remote["spec"]["suspend"] is False
    # Nothing lost on the manager: the same JobSet, and the same Workload, now admitted through east.
    assert _get(manager, "jobset", PROBE, "-n", NAMESPACE)["metadata"]["uid"] == jobset_uid
    after = _probe_workload(manager)
    assert after is not None and after["metadata"]["uid"] == before["metadata"]["uid"]
    assert _wait("the probe's pod Running on east", lambda: _probe_pods(east) == ["cpu-small-0/Running"])
    fleet.seconds["redispatchAfterWorkerLost"] = round(time.monotonic() - started, 1)


def test_a_lost_worker_that_comes_back_keeps_its_stale_run_and_the_redispatched_one_is_deleted(fleet: Fleet) -> None:
    """West comes back (the same etcd, certificates and ports) with the probe's JobSet it held when it stopped, and
    its kwok pod. What Kueue 0.19.2's manager does then (``multikueue/workload.go``, ``reconcileGroup``): of the two
    admitted remote copies it keeps the one admitted first, west's stale one, and deletes the run it re-dispatched
    to east; the manager's Workload still names east (``clusterName`` is immutable), and every reconcile of it fails
    with "attempting to change immutable ClusterName". docs/multikueue.md tells users how to avoid it."""
    manager, east, west = fleet.clusters["manager"], fleet.clusters["east"], fleet.clusters["west"]
    before = _probe_workload(manager)
    if before is None or (before.get("status") or {}).get("clusterName") != "east":
        pytest.fail("the worker-lost test did not leave the probe running on east")
    jobset_uid = _get(manager, "jobset", PROBE, "-n", NAMESPACE)["metadata"]["uid"]
    started = time.monotonic()
    west.resume(fleet.kueue_configs["west"])
    start_living(west)
    # What west kept through its outage: the copy the manager dispatched before it stopped, still unsuspended.
    stale = _get(west, "jobset", PROBE, "-n", NAMESPACE)
    assert stale is not None and stale["spec"]["suspend"] is False
    stale_uid = stale["metadata"]["uid"]
    _wait(
        "MultiKueueCluster west Active again",
        lambda: _condition(_get(manager, "multikueuecluster", "west"), "Active") == "True",
    )
    _wait("the re-dispatched JobSet deleted from east", lambda: _get(east, "jobset", PROBE, "-n", NAMESPACE) is None)
    _wait("no probe pod left on east", lambda: _probe_pods(east) == [])
    log = manager.dir / "logs" / "kueue.log"
    _wait(
        "the manager's reconcile failing on the immutable clusterName",
        lambda: 'attempting to change immutable ClusterName from \\"east\\" to \\"west\\"' in log.read_text(),
    )
    fleet.seconds["redispatchedRunDeletedAfterWorkerBack"] = round(time.monotonic() - started, 1)
    # West's stale run goes on; the manager's objects are the same ones, its Workload still naming east.
    assert _get(west, "jobset", PROBE, "-n", NAMESPACE)["metadata"]["uid"] == stale_uid
    assert _wait("the stale run's pod Running on west", lambda: _probe_pods(west) == ["cpu-0/Running"])
    after = _probe_workload(manager)
    assert after is not None
    assert (after["metadata"]["uid"], after["status"]["clusterName"]) == (before["metadata"]["uid"], "east")
    assert _get(manager, "jobset", PROBE, "-n", NAMESPACE)["metadata"]["uid"] == jobset_uid


#: The second probe, for the runbook (the first one's manager Workload is left broken by the test above).
PROBE2 = "mk-probe-2"
#: The label MultiKueue puts on every object it copies to a worker (Kueue 0.19.2, ``kueue.x-k8s.io/multikueue-origin``).
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"


def _remote(cluster: LocalCluster, name: str) -> dict[str, Any] | None:
    return _get(cluster, "jobset", name, "-n", NAMESPACE)


def _apply_manager(fleet: Fleet, plan: Plan) -> list[str]:
    """Apply the manager plan's objects as the fixture does (each worker's Secret with a fresh kubeconfig), and delete
    the MultiKueue objects the manager has that the plan no longer declares, as ``pulumi up`` would: what changed."""
    manager = fleet.clusters["manager"]
    changed: list[str] = []
    declared = set()
    for resource in apply_order(plan.resources):
        obj = object_of(resource)
        if obj["kind"] == "AIPerfJob":
            continue
        if obj["kind"] == "Secret" and obj["metadata"]["name"].startswith("multikueue-"):
            worker = obj["metadata"]["name"].removeprefix("multikueue-")
            obj = {**obj, "stringData": {"kubeconfig": _worker_kubeconfig(fleet.clusters[worker])}}
        declared.add((obj["kind"], obj["metadata"]["name"]))
        manager.apply([obj])
    for item in (_get(manager, "multikueuecluster") or {}).get("items") or []:
        name = item["metadata"]["name"]
        if ("MultiKueueCluster", name) not in declared:
            manager.kubectl("delete", "multikueuecluster", name)
            manager.kubectl("delete", "secret", f"multikueue-{name}", "-n", "kueue-system")
            changed.append(f"deleted MultiKueueCluster {name}")
    return changed


def test_the_runbook_for_a_lost_worker_keeps_the_redispatched_run(fleet: Fleet) -> None:
    """docs/multikueue.md's runbook, run: a second probe runs on a worker W, W is lost and the manager re-dispatches to
    the other worker O; before W is back, W is taken out of the manager's ``multikueue.workers`` (its plan applied);
    once W is up, what MultiKueue left on it is deleted by its origin label; then W is added back. The run on O is
    kept, the manager's Workload names O, and W holds no copy."""
    manager = fleet.clusters["manager"]
    # The first probe's broken Workload (test above) goes first, and with it west's stale copy: MultiKueue deletes a
    # deleted Workload's copies on every worker it reaches.
    manager.kubectl("delete", "jobset", PROBE, "-n", NAMESPACE)
    _wait("the first probe's Workload gone from the manager", lambda: _probe_workload(manager) is None)
    _wait("west's stale copy of it deleted", lambda: _remote(fleet.clusters["west"], PROBE) is None)
    started = time.monotonic()
    manager.apply([_jobset(PROBE2, {"cpu": "4", "memory": "1Gi"})])

    def dispatched() -> str | None:
        workload = _probe_workload(manager, PROBE2)
        return (workload.get("status") or {}).get("clusterName") if workload else None

    def running_on(cluster: LocalCluster) -> bool:
        """The second probe's one pod Running on CLUSTER (whichever node)."""
        return [p.split("/")[1] for p in _probe_pods(cluster, PROBE2)] == ["Running"]

    lost_name = _wait("the second probe dispatched", dispatched)
    kept_name = "east" if lost_name == "west" else "west"
    lost, kept = fleet.clusters[lost_name], fleet.clusters[kept_name]
    _wait(f"the second probe's pod Running on {lost_name}", lambda: running_on(lost))
    lost.stop()
    _wait(f"the second probe re-dispatched to {kept_name}", lambda: dispatched() == kept_name, timeout=WAIT * 2)
    remote = _wait(f"the second probe's JobSet on {kept_name}", lambda: _remote(kept, PROBE2))
    kept_uid = remote["metadata"]["uid"]
    assert ORIGIN_LABEL in remote["metadata"]["labels"], remote["metadata"]["labels"]
    _wait(f"its pod Running on {kept_name}", lambda: running_on(kept))

    # 1. Before the lost worker is back: out of the manager's config, the manager's plan applied (pulumi up).
    doc = yaml.safe_load((fleet.stacks / "Pulumi.fleet.yaml").read_text())
    workers = doc["config"]["aiperf-kueue:multikueue"]["workers"]
    doc["config"]["aiperf-kueue:multikueue"]["workers"] = [w for w in workers if w["name"] != lost_name]
    without = fleet.stacks / "runbook" / "Pulumi.fleet.yaml"
    without.parent.mkdir(exist_ok=True)
    for other in fleet.stacks.glob("Pulumi.gpu-*.yaml"):
        shutil.copy(other, without.parent / other.name)
    without.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert _apply_manager(fleet, plan_stack(without, OUT / "multikueue" / "plans" / "fleet-without")) == [
        f"deleted MultiKueueCluster {lost_name}"
    ]
    # 2. The lost worker comes back; what MultiKueue left on it is deleted by its origin label.
    lost.resume(fleet.kueue_configs[lost_name])
    start_living(lost)
    cleared = lost.kubectl("delete", "jobsets,workloads", "-A", "-l", ORIGIN_LABEL).stdout
    assert f'"{PROBE2}" deleted' in cleared, cleared
    # 3. Added back: the manager's whole plan again.
    assert _apply_manager(fleet, fleet.plans["manager"]) == []
    _wait(
        f"MultiKueueCluster {lost_name} Active again",
        lambda: _condition(_get(manager, "multikueuecluster", lost_name), "Active") == "True",
    )
    # Kept: the re-dispatched run (same object, its pod still Running), the manager's Workload naming it. Checked
    # over 30 s, several of MultiKueue's reconciles of the Workload.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert (_remote(kept, PROBE2) or {}).get("metadata", {}).get("uid") == kept_uid
        assert dispatched() == kept_name
        assert _remote(lost, PROBE2) is None
        time.sleep(2)
    assert running_on(kept)
    fleet.seconds["runbook"] = round(time.monotonic() - started, 1)


def _phase(cluster: LocalCluster, name: str) -> str | None:
    job = _get(cluster, "aiperfjob", name, "-n", NAMESPACE) or {}
    return (job.get("status") or {}).get("phase")


def _owners(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return list(obj["metadata"].get("ownerReferences") or [])
