"""Run the controllers of the Kueue and JobSet charts that ``pulumi up`` installed, as local processes.

With ``pulumi up`` installing the real charts (from the Go module zips' ``charts/`` directories), the cluster gets
everything a Helm install creates: CRDs, RBAC, ConfigMaps, webhook configurations and APIServices that reach their
Services, Deployments. There is no kubelet, so the harness does what the kubelet and the container runtime would:

- it runs each chart's controller binary, the release the Deployment names (its image tag, else its chart's
  ``app.kubernetes.io/version`` label: ``v0.15.0`` runs ``kueue-v0.15.0``, JobSet ``0.11.1`` ``jobset-v0.11.1``, the
  pinned versions ``kueue`` and ``jobset``), with
  the chart's own ConfigMap, and restarts it when that changes (an upgrade rolls the Deployment), changing only where it
  listens: the webhook server on its Service's cluster IP and port (``e2e/sandbox.sh`` puts the whole Service range on
  loopback, so the API server's Service-backed webhook calls land here), Kueue's visibility server on its Service's
  cluster IP and port (the APIServices), health and metrics on free loopback ports; leader election off;
- it copies the webhook certificate Secret that the controller's own internal cert management writes into the
  directory the controller reads (the kubelet's Secret volume);
- it reports the Deployment's pod Running and Ready once the webhook answers (:mod:`tests.e2e.incluster`);
- a Kueue whose visibility server cannot run out of cluster (0.15: it takes its delegated authentication only from
  the in-cluster config, not ``--kubeconfig``) runs with ``VisibilityOnDemand`` off: its visibility APIService is
  unavailable while it runs (nothing here reads it).

A background thread does this as soon as each chart's Deployment exists, so the program's readiness gate sees the
controller come up while ``pulumi up`` runs.
"""

from __future__ import annotations

import base64
import re
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.cluster import LocalCluster, Process, free_port
from tests.e2e.conftest import BUILD
from tests.e2e.incluster import _host_node, _run_pod
from tests.e2e.kube import Kube

#: Where JobSet's cert rotator waits for its certificate whatever the config says (sigs.k8s.io/jobset
#: pkg/util/cert); a tmpfs private to the sandbox (e2e/sandbox.sh).
JOBSET_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")

#: The version each controller's default binary (``kueue``, ``jobset``) is built at; other versions are binaries
#: named ``<controller>-<version>`` (``kueue-v0.15.0``, ``jobset-v0.11.1``), built by ``e2e/build.py`` from their own
#: wrappers.
DEFAULT_VERSIONS = {"kueue": BUILD.KUEUE, "jobset": BUILD.JOBSET}
#: Kueue releases whose visibility server cannot run out of cluster (sigs.k8s.io/kueue v0.15.0
#: pkg/visibility/server.go: a fixed ``:8082``, and delegated authentication from the in-cluster config only, which
#: needs the kubelet's service-account mount); their Configuration has no ``visibilityServer`` (strict decoding
#: refuses one). They run with the VisibilityOnDemand feature gate off.
NO_VISIBILITY = frozenset({"v0.15.0"})


@dataclass
class ChartController:
    """One chart's controller: where it is, and when it came up."""

    name: str
    namespace: str
    deployment: str
    binary: str
    started_at: float | None = None
    serving_at: float | None = None
    """When the watcher first found the webhook port open (at most one pass after it opened)."""
    refused_at: float | None = None
    """When the last probe that found the webhook port closed began, since the process started: the webhook did
    not serve yet at some moment after this."""
    process: Process | None = None
    cert_dir: Path | None = None
    secret: str | None = None
    restarts: int = 0
    starts: int = 0
    """Processes started: the first, and one per restart, rollout or reconfiguration."""
    config_text: str | None = None
    """The chart's manager configuration the running process was started with."""
    image: str | None = None
    """The Deployment's image the running process stands for (a new one is an upgrade: restart)."""
    version: str | None = None
    """The release the running binary is (``v0.19.2``), from the image's tag."""
    log: list[str] = field(default_factory=list)


#: Consecutive failed passes of the watcher that count as an error.
FAILED_PASSES = 3
#: Seconds a started controller may take to serve its webhook before it is restarted, as a liveness probe would.
LIVENESS_SECONDS = 120
#: Restarts of one controller after which its crash loop is reported as an error (it is still restarted, as the
#: kubelet would: one started before its CRDs are established exits a few times, and that is normal).
RESTARTS_REPORTED = 10


def image_of(deployment: Mapping[str, Any]) -> str:
    """The image of the Deployment's ``manager`` container (the first container if none is called that)."""
    containers = deployment["spec"]["template"]["spec"]["containers"]
    return str(next((x for x in containers if x.get("name") == "manager"), containers[0])["image"])


def of_template(pod: Mapping[str, Any], deployment: Mapping[str, Any]) -> bool:
    """Whether ``pod`` was made from ``deployment``'s current pod template: the same container images and every
    annotation of the template (a chart's config checksum), as a ReplicaSet of the current revision makes it."""
    template = deployment["spec"]["template"]
    images = [x.get("image") for x in template["spec"]["containers"]]
    if [x.get("image") for x in pod["spec"]["containers"]] != images:
        return False
    wanted = (template.get("metadata") or {}).get("annotations") or {}
    have = pod["metadata"].get("annotations") or {}
    return all(have.get(k) == v for k, v in wanted.items())


def binary_for(c: ChartController, deployment: Mapping[str, Any], built: Mapping[str, Any]) -> tuple[str, str]:
    """``(binary name, version)`` for the release ``deployment`` runs: its image's tag when that is a version
    (``v0.15.0``); else its ``app.kubernetes.io/version`` label, the chart's version (the Go module zips' charts
    tag their images by branch, ``release-0.15`` or ``main``: their release builds set the tag); else, for a
    ``release-X.Y`` tag, the one built binary of that minor. A release with no binary raises: the harness must not
    run another version than the chart's."""
    image = image_of(deployment)
    tag = image.rsplit(":", 1)[-1]
    versions = {DEFAULT_VERSIONS[c.name]: c.binary}
    for name in built:
        if name.startswith(f"{c.binary}-v"):
            versions[name.removeprefix(f"{c.binary}-")] = name
    label = str(deployment["metadata"].get("labels", {}).get("app.kubernetes.io/version", ""))
    label = f"v{label}" if label and not label.startswith("v") else label
    minor = re.fullmatch(r"release-(\d+\.\d+)", tag)
    by_minor = [v for v in versions if minor and v.lstrip("v").rsplit(".", 1)[0] == minor.group(1)]
    for candidate in (tag, label, *(by_minor if len(by_minor) == 1 else ())):
        if candidate in versions:
            return versions[candidate], candidate
    raise RuntimeError(
        f"no {c.name} binary for image {image}, version label {label or 'none'} (built: {sorted(versions)}): "
        "see e2e/build.py"
    )


class ChartControllers:
    """Watches for the charts' Deployments and runs their controllers; stop() ends everything it started."""

    def __init__(
        self,
        cluster: LocalCluster,
        *,
        delay_start: Mapping[str, threading.Event] | None = None,
        ready_early: frozenset[str] = frozenset(),
    ) -> None:
        self.cluster = cluster
        self.controllers = [
            ChartController("jobset", "jobset-system", "jobset-controller", "jobset"),
            ChartController("kueue", "kueue-system", "kueue-controller-manager", "kueue"),
        ]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chart-controllers", daemon=True)
        # Controller name → an event a test sets when that controller may start (the readiness gate must wait).
        self.delay_start = dict(delay_start or {})
        # Controllers whose pods report Ready before their webhook serves: the window the readiness gate exists
        # for (a Deployment Ready while its webhook still refuses connections, kubernetes-sigs/kueue#12022).
        self.ready_early = ready_early
        self.errors: list[str] = []
        self._kube: Kube | None = None

    def __enter__(self) -> ChartControllers:
        # The node the controllers' pods are bound to (tainted control-plane, outside every pool).
        _host_node(self.cluster)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop the watcher and the controller processes it started."""
        self._stop.set()
        self._thread.join(120)
        if self._thread.is_alive():
            self.errors.append("the chart watcher did not stop within 120 s")
        for c in self.controllers:
            if c.process:
                c.process.stop()
                self.cluster.processes.pop(f"chart-{c.name}", None)

    def by_name(self, name: str) -> ChartController:
        """The controller called ``name`` (``kueue``, ``jobset``)."""
        return next(c for c in self.controllers if c.name == name)

    @property
    def kube(self) -> Kube:
        """The watcher thread's own client."""
        assert self._kube is not None
        return self._kube

    def _run(self) -> None:
        failures: list[str] = []
        self._kube = Kube(self.cluster.kubeconfig)
        try:
            while not self._stop.is_set():
                try:
                    for c in self.controllers:
                        self._step(c)
                    failures.clear()
                except Exception as exc:
                    # One failed pass is retried (a request timing out on a loaded machine, say). A step that
                    # keeps failing is the harness's or the cluster's fault and fails the test.
                    failures.append(f"{type(exc).__name__}: {exc}")
                    if len(failures) == FAILED_PASSES:
                        self.errors.append(f"{FAILED_PASSES} passes in a row failed: {failures}")
                self._stop.wait(0.5)
        finally:
            self._kube.close()

    def describe(self) -> str:
        """What the watcher saw, for a failure message: each controller's restarts, log and process output."""
        lines = [f"chart watcher errors: {self.errors or 'none'}"]
        for c in self.controllers:
            lines.append(
                f"{c.name}: starts {c.starts}, restarts {c.restarts}, serving {c.serving_at is not None}, "
                f"running {c.process is not None and c.process.popen.poll() is None}; log {c.log[-5:]}"
            )
            if c.process is not None:
                lines.append(f"{c.name} output (last lines):\n{c.process.tail(15)}")
        return "\n".join(lines)

    def _pods(self, c: ChartController) -> list[dict[str, Any]]:
        """The pods of ``c``'s Deployment (their ReplicaSets are named after it)."""
        pods = self.kube.pods(c.namespace)
        return [
            p for p in pods
            if (p["metadata"].get("ownerReferences") or [{}])[0].get("name", "").startswith(f"{c.deployment}-")
        ]

    def _stop_process(self, c: ChartController) -> None:
        if c.process is not None:
            c.process.stop()
            self.cluster.processes.pop(f"chart-{c.name}", None)
        c.process = None
        c.serving_at = None
        c.refused_at = None

    def _step(self, c: ChartController) -> None:
        pods = self._pods(c)
        deployment = self.kube.deployment(c.namespace, c.deployment)
        for pod in pods:
            if pod["metadata"].get("deletionTimestamp"):
                # The kubelet's part of a graceful delete: stop the container, then remove the pod for good. A pod
                # of an earlier template that a rollout scales away is not the process's: the process already
                # stands for the new pod (restarted below on the new image or configuration), and stopping it
                # then left the webhook refusing calls after the readiness gate had passed (a Kueue upgrade).
                if deployment is None or of_template(pod, deployment):
                    self._stop_process(c)
                self.kube.delete_pod_now(c.namespace, pod["metadata"]["name"])
        if deployment is None or deployment["metadata"].get("deletionTimestamp"):
            # Uninstalled (pulumi destroy): the controller goes with its pods.
            self._stop_process(c)
            return
        if c.process is None:
            held = self.delay_start.get(c.name)
            if held is not None and not held.is_set():
                if c.name in self.ready_early:
                    self._report_ready(c, pods)
                return
            self._start(c, deployment)
            return
        if c.process.popen.poll() is not None:
            # The kubelet restarts a container that exits (restartPolicy Always): a controller started before
            # its CRDs are established exits ("no matches for kind"), as it would crash-loop in a pod.
            c.restarts += 1
            c.log.append(f"exited {c.process.popen.returncode}; restart {c.restarts}")
            if c.restarts == RESTARTS_REPORTED:
                self.errors.append(f"{c.name} exited {c.restarts} times; last output:\n{c.process.tail()}")
            c.process = None
            c.serving_at = None
            c.refused_at = None
            self._stop.wait(min(2 * c.restarts, 10))
            return
        if (image_of(deployment), binary_for(c, deployment, self.cluster.bin)[1]) != (c.image, c.version):
            # A new image or release (an upgrade, a rollback): the Deployment rolls out a pod of the new version.
            # Here: the process stops, and the next pass starts the binary of the new version.
            c.log.append(f"image {c.image} -> {image_of(deployment)}: restarted")
            self._stop_process(c)
            return
        if self._config_changed(c, deployment):
            # A new manager configuration: the chart rolls the Deployment (its pod template carries the
            # config's checksum) and the new pod starts with it. Here: restart the process.
            c.log.append("configuration changed: restarted")
            self._stop_process(c)
            return
        self._sync_certs(c)
        if c.serving_at is None and c.started_at is not None and time.monotonic() - c.started_at > LIVENESS_SECONDS:
            # The kubelet's liveness probe: a controller that never serves is restarted, not waited for forever.
            c.log.append(f"not serving after {LIVENESS_SECONDS} s: restarted")
            self._stop_process(c)
            return
        if c.serving_at is None:
            probed = time.monotonic()
            if self._serving(c):
                c.serving_at = time.monotonic()
            else:
                c.refused_at = probed
        if c.serving_at is not None:
            self._report_ready(c, pods)

    def _report_ready(self, c: ChartController, pods: list[dict[str, Any]]) -> None:
        for pod in pods:
            ready = [x for x in (pod.get("status") or {}).get("conditions", []) if x["type"] == "Ready"]
            if not pod["metadata"].get("deletionTimestamp") and not (ready and ready[0]["status"] == "True"):
                _run_pod(self.kube, c.namespace, pod)

    def _service(self, namespace: str, suffix: str) -> dict[str, Any] | None:
        for svc in self.kube.services(namespace):
            if svc["metadata"]["name"].endswith(suffix):
                return svc
        return None

    def _start(self, c: ChartController, deployment: Mapping[str, Any]) -> None:
        if self._stop.is_set():
            return  # stopping: a process started now would outlive stop()
        volumes = deployment["spec"]["template"]["spec"].get("volumes") or []
        config_map = next(v["configMap"]["name"] for v in volumes if "configMap" in v)
        cm = self.kube.config_map(c.namespace, config_map)
        if cm is None:
            return
        # A pod whose Secret volume does not exist yet stays ContainerCreating: the controller does not start
        # (started early, Kueue's cert bootstrap fails on the missing Secret and the process hangs instead of exiting).
        for volume in volumes:
            name = (volume.get("secret") or {}).get("secretName")
            if name and self.kube.secret(c.namespace, name) is None:
                return
        c.config_text = cm["data"]["controller_manager_config.yaml"]
        config = yaml.safe_load(c.config_text)
        webhook = self._service(c.namespace, "-webhook-service")
        visibility = self._service(c.namespace, "-visibility-server") if c.name == "kueue" else {}
        if webhook is None or visibility is None:
            return  # the chart's Services are not created yet: the pod would not start either
        c.cert_dir = self.cluster.dir / f"chart-{c.name}-certs"
        c.cert_dir.mkdir(parents=True, exist_ok=True)
        port = webhook["spec"]["ports"][0]["port"]
        config["webhook"] = {**(config.get("webhook") or {}), "host": webhook["spec"]["clusterIP"], "port": port,
                             "certDir": str(c.cert_dir)}
        config["health"] = {**(config.get("health") or {}), "healthProbeBindAddress": f"127.0.0.1:{free_port()}"}
        config["metrics"] = {**(config.get("metrics") or {}), "bindAddress": f"127.0.0.1:{free_port()}"}
        config["leaderElection"] = {"leaderElect": False}
        internal = config.get("internalCertManagement") or {}
        c.secret = internal.get("webhookSecretName") or f"{c.name}-webhook-server-cert"
        image = image_of(deployment)
        binary, version = binary_for(c, deployment, self.cluster.bin)
        args = [str(self.cluster.bin[binary]), f"--kubeconfig={self.cluster.kubeconfig}"]
        if c.name == "kueue":
            assert visibility
            if version in NO_VISIBILITY:
                args.append("--feature-gates=VisibilityOnDemand=false")
            else:
                config["visibilityServer"] = {
                    "bindAddress": visibility["spec"]["clusterIP"],
                    "bindPort": visibility["spec"]["ports"][0]["port"],
                }
            config["namespace"] = c.namespace
            # Kueue writes the metrics certs to this fixed path only with internal certs off; on here.
        path = self.cluster.dir / f"chart-{c.name}-config.yaml"
        path.write_text(yaml.safe_dump(config))
        args.insert(1, f"--config={path}")
        if c.name == "jobset":
            args = _own_jobset_cert_dir(c.cert_dir, args)
        c.process = self.cluster._spawn(f"chart-{c.name}", args)
        c.image, c.version = image, version
        c.log.append(f"started {binary} for {image}")
        c.started_at = time.monotonic()
        c.refused_at = None
        c.starts += 1

    def _config_changed(self, c: ChartController, deployment: Mapping[str, Any]) -> bool:
        volumes = deployment["spec"]["template"]["spec"].get("volumes") or []
        config_map = next(v["configMap"]["name"] for v in volumes if "configMap" in v)
        cm = self.kube.config_map(c.namespace, config_map)
        text = ((cm or {}).get("data") or {}).get("controller_manager_config.yaml")
        return text is not None and c.config_text is not None and text != c.config_text

    def _sync_certs(self, c: ChartController) -> None:
        assert c.cert_dir is not None and c.secret is not None
        secret = self.kube.secret(c.namespace, c.secret)
        for key, value in ((secret or {}).get("data") or {}).items():
            data = base64.b64decode(value)
            target = c.cert_dir / key
            if not target.exists() or target.read_bytes() != data:
                target.write_bytes(data)

    def _serving(self, c: ChartController) -> bool:
        assert c.process is not None
        config = yaml.safe_load((self.cluster.dir / f"chart-{c.name}-config.yaml").read_text())
        try:
            with socket.create_connection((config["webhook"]["host"], config["webhook"]["port"]), timeout=1):
                return True
        except OSError:
            return False


def _own_jobset_cert_dir(cert_dir: Path, args: list[str]) -> list[str]:
    """ARGS run in a mount namespace of their own, where JobSet's hard-coded certificate directory
    (:data:`JOBSET_CERT_DIR`) is CERT_DIR: in a fleet, every cluster's chart JobSet controller wrote to the one
    path and overwrote the others' certificates. ``unshare`` without ``--fork`` and ``exec`` keep the PID, so the
    harness still ends the controller itself."""
    script = 'mkdir -p "$1" && mount --bind "$2" "$1" && shift 2 && exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh",
            str(JOBSET_CERT_DIR), str(cert_dir), *args]
