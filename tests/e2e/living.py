"""The living cluster: kube-scheduler and a kwok-managed fake GPU fleet made from a stack's own inventory.

On top of :class:`~tests.e2e.cluster.LocalCluster` (etcd, kube-apiserver, kube-controller-manager), this adds:

- **kube-scheduler** v1.36.3 (``k8s.io/kubernetes``, the API server's wrapper module), on loopback, with the
  harness's admin kubeconfig and its default profile. Every benchmark pod is placed by the real scheduler among the
  fleet's nodes, with Kueue's flavor nodeSelectors and tolerations;
- the chart controllers' pods stay off the fleet: they run as local processes, and :mod:`tests.e2e.charts` binds
  them to the tainted control-plane node and plays their kubelet. The API server's ``PodNodeSelector`` admission
  plugin (upstream, off by default) gives every pod of a controller namespace the node selector
  ``node-role.kubernetes.io/control-plane=``, from that namespace's ``scheduler.alpha.kubernetes.io/node-selector``
  annotation: :func:`pin_controller_namespaces` creates those namespaces with it before ``pulumi up``, which then
  adopts them (server-side apply; the annotation is another field manager's, so no diff);
- **kwok** v0.8.0 (``sigs.k8s.io/kwok``, ``cmd/kwok``), managing only the fleet nodes
  (``--manage-all-nodes=false --manage-nodes-with-label-selector``), with kwok's own ``general`` pod Stages from its
  module (``kustomize/stage/pod/general``) and the ``fast`` node Stage, changed only in their delays: a pod is
  created and Running/Ready about a second after it is bound; it Succeeds only when it carries kwok's own
  ``pod-complete.stage.kwok.x-k8s.io/delay`` annotation (:data:`RUN_UNTIL`), at the time the annotation names; a
  deleted pod goes at once (the kubelet's part of a graceful delete);
- **the fleet**: per inventory pool, ``nodes`` Nodes named ``<pool>-<n>`` with the pool's labels, taints and per-node
  allocatable (cpu, memory, the GPU resource, extra resources, pods 110 unless the pool says otherwise): the numbers
  the quota planner reads, through the program's own loader.

kwok's fake pod IPs come from :data:`POD_CIDR` (TEST-NET-2, RFC 5737), which ``e2e/sandbox.sh`` puts on loopback: a
dial to a fake pod lands on loopback and is refused, nothing leaves the sandbox.
"""

from __future__ import annotations

import copy
import datetime
import json
import ssl
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Self

import yaml

from aiperf_kueue.config.inventory import Inventory
from aiperf_kueue.stackfile.loader import parse_config, read_stack
from tests.e2e.cluster import ClusterError, LocalCluster, free_port, module_dir
from tests.e2e.nodes import ready_status

KWOK_MODULE = "sigs.k8s.io/kwok@v0.8.0"
#: Every fleet node carries this label: kwok manages exactly these nodes and the scheduler places pods only on them.
FLEET_LABEL = "e2e.aiperf-kueue/fleet"
#: kwok's own annotation for the pod-complete Stage's delay: an RFC 3339 time (or a Go duration) after which the
#: pod Succeeds. The harness sets it from a scenario's ``runSeconds``; a pod without it runs until the scenario ends.
RUN_UNTIL = "pod-complete.stage.kwok.x-k8s.io/delay"
POD_CIDR = "198.51.100.0/24"
NODE_IP = "198.51.100.254"
#: Delays of kwok's pod Stages here, milliseconds (kwok's defaults add up to 5 s of random jitter per stage).
STAGE_DELAY_MS = {"pod-create": 0, "pod-ready": 1000, "pod-complete": 0, "pod-delete": 0}


# --- the fleet -------------------------------------------------------------------------------------------------------


def fleet_nodes(stack_file: Path) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(Node, status) per node of the stack's ``inventory``, read with the program's loader (the key alone: a
    MultiKueue worker's stack takes its ``queues`` from its manager's)."""
    values = read_stack(stack_file).values
    inventory = Inventory.model_validate(values["inventory"])
    out = []
    for pool in inventory.pools:
        allocatable: dict[str, str] = {"cpu": str(pool.cpu), "memory": str(pool.memory), "pods": "110"}
        if pool.gpus:
            allocatable[str(pool.gpu_resource)] = str(pool.gpus)
        allocatable.update({str(k): str(v) for k, v in pool.extra_resources.items()})
        for i in range(int(pool.nodes)):
            name = f"{pool.name}-{i}"
            labels = {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "type": "kwok",
                FLEET_LABEL: str(pool.name),
                **{str(k): str(v) for k, v in pool.node_labels.items()},
            }
            taints = [t.model_dump(by_alias=True, exclude_none=True) for t in pool.node_taints]
            node = {
                "apiVersion": "v1",
                "kind": "Node",
                # kwok's own annotation: a node it manages, whose status it owns.
                "metadata": {"name": name, "labels": labels, "annotations": {"kwok.x-k8s.io/node": "fake"}},
                "spec": {"taints": taints} if taints else {},
            }
            out.append((node, ready_status(allocatable)))
    return out


def sync_fleet(cluster: LocalCluster, stack_file: Path) -> dict[str, list[str]]:
    """Make the fleet the stack's inventory: new nodes created Ready, changed ones re-labelled and re-sized, nodes
    no pool has any more deleted (their pods are then removed by kube-controller-manager's pod GC, and their Jobs
    make new ones). Returns ``{"created": [...], "updated": [...], "deleted": [...]}``."""
    wanted = {n["metadata"]["name"]: (n, s) for n, s in fleet_nodes(stack_file)}
    existing = {
        n["metadata"]["name"]: n for n in cluster.get_json("nodes", "-l", FLEET_LABEL)["items"]
    }
    changes: dict[str, list[str]] = {"created": [], "updated": [], "deleted": []}
    for name, (node, status) in sorted(wanted.items()):
        old = existing.get(name)
        if old is not None:
            same = (
                old["metadata"].get("labels") == node["metadata"]["labels"]
                and (old["spec"].get("taints") or []) == [t for t in node["spec"].get("taints", [])]
                and old.get("status", {}).get("allocatable") == status["allocatable"]
            )
            if same:
                continue
            changes["updated"].append(name)
        else:
            changes["created"].append(name)
        cluster.apply([node])
        cluster.kubectl(
            "patch", "node", name, "--subresource=status", "--type=merge", "-p", json.dumps({"status": status})
        )
        if old is None:
            # TaintNodesByCondition taints every new Node not-ready; the node lifecycle controller that would lift it
            # is off (no kubelet heartbeats here).
            cluster.kubectl("taint", "node", name, "node.kubernetes.io/not-ready:NoSchedule-", check=False)
    for name in sorted(set(existing) - set(wanted)):
        cluster.kubectl("delete", "node", name, "--wait=false")
        changes["deleted"].append(name)
    return changes


# --- kube-scheduler and kwok ------------------------------------------------------------------------------------


#: The admission plugin that keeps controller pods off the fleet, and the annotation it reads.
APISERVER_ARGS = ["--enable-admission-plugins=PodNodeSelector"]
NODE_SELECTOR_ANNOTATION = "scheduler.alpha.kubernetes.io/node-selector"
CONTROL_PLANE_SELECTOR = "node-role.kubernetes.io/control-plane="


def controller_namespaces(stack_file: Path) -> list[str]:
    """The namespaces whose pods the harness runs as processes: Kueue's, JobSet's and the operator's."""
    config = parse_config(read_stack(stack_file).values, str(stack_file))
    return sorted({config.kueue.namespace, config.jobset.namespace, config.operator.namespace})


def pin_controller_namespaces(cluster: LocalCluster, namespaces: Iterable[str]) -> None:
    """Create the controller namespaces with the node-selector annotation (before ``pulumi up`` creates them)."""
    cluster.apply(
        [
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": ns, "annotations": {NODE_SELECTOR_ANNOTATION: CONTROL_PLANE_SELECTOR}},
            }
            for ns in namespaces
        ]
    )


def scheduler_config(kubeconfig: Path) -> dict[str, Any]:
    """kube-scheduler's configuration: the default profile, no leader election."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "leaderElection": {"leaderElect": False},
    }


def kwok_stages(kwok_dir: Path) -> list[dict[str, Any]]:
    """kwok's own Stages (``general`` for pods, ``fast`` for nodes) with this harness's delays; the pod-complete
    Stage fires only for a pod that carries :data:`RUN_UNTIL`."""
    stages: list[dict[str, Any]] = []
    for sub in ("pod/general", "node/fast"):
        base = kwok_dir / "kustomize" / "stage" / sub
        kustomization = yaml.safe_load((base / "kustomization.yaml").read_text())
        for resource in kustomization["resources"]:
            stages.append(yaml.safe_load((base / resource).read_text()))
    for stage in stages:
        name = stage["metadata"]["name"]
        delay = stage["spec"].get("delay")
        if delay is None:
            continue
        delay = copy.deepcopy(delay)
        delay.pop("jitterDurationMilliseconds", None)
        delay.pop("jitterDurationFrom", None)
        delay["durationMilliseconds"] = STAGE_DELAY_MS.get(name, delay.get("durationMilliseconds", 0))
        stage["spec"]["delay"] = delay
        if name == "pod-complete":
            key = f'.metadata.annotations["{RUN_UNTIL}"]'
            if delay.get("durationFrom", {}).get("expressionFrom") != key:
                raise ClusterError(f"kwok's pod-complete Stage no longer reads its delay from {RUN_UNTIL}: {delay}")
            stage["spec"]["selector"]["matchExpressions"].append({"key": key, "operator": "Exists"})
    names = sorted(s["metadata"]["name"] for s in stages)
    if not {"pod-create", "pod-ready", "pod-complete", "pod-delete"} <= set(names):
        raise ClusterError(f"kwok {KWOK_MODULE} Stages changed: {names}")
    return stages


def _wait_https_unverified(cluster: LocalCluster, name: str, url: str, timeout: float = 90) -> None:
    """Wait for a self-signed HTTPS health endpoint (kube-scheduler makes its own serving certificate)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    cluster._wait_http(cluster.processes[name], url, tls=False, timeout=timeout, context=context)


def start_scheduler(cluster: LocalCluster) -> None:
    """Run kube-scheduler against ``cluster`` and wait for its health endpoint."""
    path = cluster.dir / "kube-scheduler.yaml"
    path.write_text(yaml.safe_dump(scheduler_config(cluster.kubeconfig)))
    port = free_port()
    cluster._spawn(
        "kube-scheduler",
        [
            cluster.bin["kube-scheduler"],
            f"--config={path}",
            f"--authentication-kubeconfig={cluster.kubeconfig}",
            f"--authorization-kubeconfig={cluster.kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={cluster.dir / 'kube-scheduler-certs'}",
        ],
    )
    _wait_https_unverified(cluster, "kube-scheduler", f"https://127.0.0.1:{port}/healthz")


def start_kwok(cluster: LocalCluster) -> None:
    """Run kwok for the fleet nodes with :func:`kwok_stages`, and wait for its health endpoint."""
    path = cluster.dir / "kwok.yaml"
    path.write_text(yaml.safe_dump_all(kwok_stages(module_dir(KWOK_MODULE)), sort_keys=False))
    port = free_port()
    proc = cluster._spawn(
        "kwok",
        [
            cluster.bin["kwok"],
            f"--config={path}",
            f"--kubeconfig={cluster.kubeconfig}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-label-selector={FLEET_LABEL}",
            f"--cidr={POD_CIDR}",
            f"--node-ip={NODE_IP}",
            f"--server-address=127.0.0.1:{port}",
        ],
    )
    cluster._wait_http(proc, f"http://127.0.0.1:{port}/healthz", tls=False)


def start_living(cluster: LocalCluster) -> None:
    """kube-scheduler and kwok on a running control plane."""
    for name in ("kube-scheduler", "kwok"):
        if name not in cluster.bin or not cluster.bin[name].is_file():
            raise ClusterError(f"binary {name} missing from the manifest: rebuild with python3 e2e/build.py")
    start_scheduler(cluster)
    start_kwok(cluster)


# --- run times -------------------------------------------------------------------------------------------------------


def _parse_time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


class Poller:
    """A background thread that calls :meth:`pass_once` every 0.5 s while the ``with`` block runs; three failed passes
    in a row are one entry in :attr:`errors` (named by :attr:`what`), which the scenario reports."""

    what = "poller"

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=self.what, daemon=True)
        self.errors: list[str] = []

    def pass_once(self) -> None:
        """One pass; the subclass's work."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the subclass's clients once the thread has stopped."""

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(30)
        self.close()

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                self.pass_once()
                failures = 0
            except Exception as exc:
                failures += 1
                if failures == 3:
                    self.errors.append(f"{self.what}: 3 passes failed, last: {type(exc).__name__}: {exc}")
            self._stop.wait(0.5)


class RunTimes(Poller):
    """Gives each benchmark pod its fake run time: when a pod of a job with ``runSeconds`` is Running, it is annotated
    :data:`RUN_UNTIL` = its start + the job's seconds, and kwok's pod-complete Stage makes it Succeed then. The job
    of a pod is found through its JobSet: the AIPerfJob whose ``status.jobSetName`` it is, config name from the
    ``aiperf-kueue/job`` label."""

    what = "run-time annotator"

    def __init__(self, cluster: LocalCluster, job_of_jobset: Callable[[], Mapping[tuple[str, str], str]]) -> None:
        from tests.e2e.kube import Kube

        super().__init__()
        self.cluster = cluster
        self.seconds: dict[str, float] = {}
        self._job_of_jobset = job_of_jobset
        self._kube = Kube(cluster.kubeconfig)
        self._lock = threading.Lock()
        self.annotated: dict[str, str] = {}

    def set(self, seconds: Mapping[str, float]) -> None:
        """The run times from this step on (a time once given to a pod stays with it)."""
        with self._lock:
            self.seconds.update(seconds)

    def close(self) -> None:
        """Close the client."""
        self._kube.close()

    def pass_once(self) -> None:
        """One pass over the running benchmark pods."""
        with self._lock:
            seconds = dict(self.seconds)
        if not seconds:
            return
        jobs = self._job_of_jobset()
        for pod in self._kube.pods_labelled("jobset.sigs.k8s.io/jobset-name"):
            meta, status = pod["metadata"], pod.get("status") or {}
            annotations, labels = meta.get("annotations") or {}, meta.get("labels") or {}
            if RUN_UNTIL in annotations or status.get("phase") != "Running" or not status.get("startTime"):
                continue
            job = jobs.get((meta["namespace"], labels.get("jobset.sigs.k8s.io/jobset-name", "")))
            if job is None or job not in seconds:
                continue
            started = datetime.datetime.fromisoformat(status["startTime"].replace("Z", "+00:00"))
            until = started + datetime.timedelta(seconds=seconds[job])
            stamp = until.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            self._kube.core.patch_namespaced_pod(
                meta["name"], meta["namespace"], {"metadata": {"annotations": {RUN_UNTIL: stamp}}}, _request_timeout=20
            )
            self.annotated[f"{meta['namespace']}/{meta['name']}"] = stamp


def pods_by_jobset(pods: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], list[Mapping[str, Any]]]:
    """Pods grouped by (namespace, JobSet name)."""
    out: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for pod in pods:
        meta = pod["metadata"]
        name = (meta.get("labels") or {}).get("jobset.sigs.k8s.io/jobset-name")
        if name:
            out.setdefault((meta["namespace"], name), []).append(pod)
    return out
