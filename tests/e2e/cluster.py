"""A real Kubernetes control plane with real Kueue and JobSet, as local processes on loopback.

etcd, kube-apiserver and kube-controller-manager come from ``k8s.io/kubernetes`` and ``go.etcd.io/etcd`` and Kueue and
JobSet from their own modules (built by ``e2e/build.py``). There are no containers, no kubelet and no scheduler:
Kueue admits Workloads and JobSet creates Jobs, whose pods stay Pending. Kueue's and JobSet's CRDs and webhook
configurations come from the modules' ``config/components`` trees, rewritten as controller-runtime's envtest does:
every ``service`` reference becomes ``url: https://127.0.0.1:<port>/<path>`` with this run's CA bundle.

The cluster must run inside the sandbox made by ``e2e/sandbox.sh`` (a network namespace with only loopback, so
nothing can reach a Service cluster IP or any other address, and a private overlay on ``/etc`` for the one path
Kueue hard-codes). :class:`LocalCluster` refuses to start outside it.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import itertools
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.pki import FRONT_PROXY_CLIENT, Pki, make_pki

#: Every cluster whose processes may be running: the trap (:func:`install_trap`) ends them on SIGTERM/SIGHUP.
_LIVE: set[LocalCluster] = set()

SANDBOX_ENV = "AIPERF_KUEUE_E2E_SANDBOX"
KUEUE_METRICS_CERTS = Path("/etc/kueue/metrics/certs")  # hard-coded in kueue's cmd/kueue/main.go


class ClusterError(RuntimeError):
    """A process did not come up, or an API call failed, with the log lines that say why."""


def end_all_clusters() -> None:
    """SIGKILL the process group of every cluster still running (the trap, and ``atexit``)."""
    for cluster in list(_LIVE):
        cluster.kill_group()
    _LIVE.clear()


def install_trap() -> None:
    """On SIGTERM or SIGHUP, end every cluster's processes before the harness dies (the default action of both
    would leave them running). SIGINT raises KeyboardInterrupt, whose unwinding stops the clusters; ``atexit``
    covers a normal exit. SIGKILL cannot be trapped: ``e2e/sandbox.sh`` runs the suite as PID 1 of a PID namespace
    of its own, so the kernel ends everything in it when the sandbox goes."""

    def handler(signum: int, _frame: object) -> None:
        end_all_clusters()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, handler)
    atexit.register(end_all_clusters)


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


# Ports are handed out below the kernel's ephemeral range and never twice: a port from bind(0) is an ephemeral
# one, and between the harness picking it and a controller binding it, any outgoing connection may take it (a fleet
# cluster's Kueue lost its metrics port that way and exited). Each process starts at its own offset, so two
# harness processes in one sandbox do not walk the same ports; `make e2e`'s two pytest-xdist workers (gw0, gw1) take
# disjoint halves of the 16 offsets, so they never do.
_PORT_LOCK = threading.Lock()
_PORT_FLOOR = 10000


def _port_slot() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if worker.startswith("gw") and worker[2:].isdigit():
        return (int(worker[2:]) * 8 + os.getpid() % 8) % 16
    return os.getpid() % 16


_SLOT = _port_slot()
_next_port = _PORT_FLOOR + _SLOT * 1000
# Each cluster gets a Service range of its own, 10.0.N.0/24 (the sandbox puts 10.0.0.0/16 on loopback): the charts'
# controllers listen on their Services' cluster IPs, and two clusters that run at once (a fleet, or make e2e's two
# workers) must not hand out the same one. N follows the port slot, so two workers never share one either.
_service_ranges = itertools.count()


def service_range() -> tuple[str, str]:
    """``(CIDR, the kubernetes Service's IP)`` for the next cluster this process starts."""
    n = (_SLOT * 16 + next(_service_ranges) % 16) % 256
    return f"10.0.{n}.0/24", f"10.0.{n}.1"


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now, below the ephemeral range, never the same one twice in this process."""
    global _next_port
    ceiling = _ephemeral_low()
    with _PORT_LOCK:
        for _ in range(ceiling - _PORT_FLOOR):
            port = _next_port
            _next_port = _next_port + 1 if _next_port + 1 < ceiling else _PORT_FLOOR
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
            return port
    raise ClusterError(f"no free TCP port on 127.0.0.1 below {ceiling}")


_MODULE_DIRS: dict[str, Path] = {}
_MODULE_LOCK = threading.Lock()


def module_dir(module: str) -> Path:
    """The Go module cache directory of ``module@version`` (downloaded if absent; read-only).

    Asked once per module and process, under a lock: a second ``go mod download`` of the same module, while
    another build wrote the module cache, has failed a test."""
    with _MODULE_LOCK:
        if module not in _MODULE_DIRS:
            out = subprocess.run(
                ["go", "mod", "download", "-json", module], check=True, capture_output=True, text=True, timeout=600
            ).stdout
            _MODULE_DIRS[module] = Path(json.loads(out)["Dir"])
        return _MODULE_DIRS[module]


@dataclass
class Process:
    """One process the harness started, with its log."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 30) -> str:
        """The last lines of its log."""
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout: float = 15) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds; only this process, by its PID."""
        if self.popen.poll() is not None:
            return
        self.popen.send_signal(signal.SIGTERM)
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(10)


@dataclass
class Ports:
    """Every port the cluster listens on, all on 127.0.0.1."""

    etcd_client: int = field(default_factory=free_port)
    etcd_peer: int = field(default_factory=free_port)
    apiserver: int = field(default_factory=free_port)
    kcm: int = field(default_factory=free_port)
    kueue_webhook: int = field(default_factory=free_port)
    kueue_health: int = field(default_factory=free_port)
    kueue_metrics: int = field(default_factory=free_port)
    jobset_webhook: int = field(default_factory=free_port)
    jobset_health: int = field(default_factory=free_port)


def _deadline_loop(what: str, timeout: float, interval: float = 0.25) -> Iterator[int]:
    """Yield attempt numbers until ``timeout`` seconds pass, then raise :class:`ClusterError`."""
    end = time.monotonic() + timeout
    attempt = 0
    while time.monotonic() < end:
        yield attempt
        attempt += 1
        time.sleep(interval)
    raise ClusterError(f"timed out after {timeout:g} s waiting for {what}")


class LocalCluster:
    """etcd + kube-apiserver + kube-controller-manager + Kueue + JobSet, started and stopped by this object."""

    def __init__(self, binaries: Mapping[str, str], workdir: Path, *, kueue_module: str, jobset_module: str) -> None:
        self.bin = {k: Path(v) for k, v in binaries.items()}
        self.dir = workdir
        self.kueue_module = kueue_module
        self.jobset_module = jobset_module
        self.ports = Ports()
        self.processes: dict[str, Process] = {}
        self.pki: Pki | None = None
        self.kubeconfig = self.dir / "kubeconfig"
        self.kueue_config: dict[str, Any] | None = None
        self.apiserver_args: list[str] = []
        """Extra kube-apiserver flags (the living cluster's admission plugin, :mod:`tests.e2e.living`)."""
        self.pgid: int | None = None
        """The process group every process of this cluster runs in (the first one's PID): one ``killpg`` ends them
        all, whoever started them (the chart watcher's thread starts controllers too)."""

    # --- lifecycle -------------------------------------------------------------------------------------------------

    def start(self, kueue_manager_config: Mapping[str, Any] | None = None, *, controllers: bool = True) -> None:
        """Bring everything up, in order; on any failure stop what was started and raise with its log.

        ``controllers=False`` starts only the control plane: for a program that installs Kueue's and JobSet's charts
        itself (see :mod:`tests.e2e.charts`)."""
        self._require_sandbox()
        self.dir.mkdir(parents=True, exist_ok=True)
        self.service_cidr, service_ip = service_range()
        self.pki = make_pki(self.dir / "pki", service_ip)
        self._write_kubeconfig()
        self._bring_up(kueue_manager_config, controllers=controllers)

    def resume(self, kueue_manager_config: Mapping[str, Any] | None = None, *, controllers: bool = True) -> None:
        """Start a stopped cluster again on what it kept: its etcd data, certificates, service-account key and ports,
        as a control plane that comes back after an outage (a kubeconfig made for it before still works)."""
        if self.pki is None or self.processes:
            raise ClusterError("resume: only a cluster that was started and then stopped comes back")
        self._require_sandbox()
        self._bring_up(kueue_manager_config, controllers=controllers)

    @staticmethod
    def _require_sandbox() -> None:
        if os.environ.get(SANDBOX_ENV) != "1":
            raise ClusterError(
                f"the e2e cluster runs only inside e2e/sandbox.sh ({SANDBOX_ENV}=1): a private network namespace "
                "with loopback only and a private /etc overlay; run it with `make e2e`"
            )

    def _bring_up(self, kueue_manager_config: Mapping[str, Any] | None, *, controllers: bool) -> None:
        try:
            self._start_etcd()
            self._start_apiserver()
            self._start_controller_manager()
            if controllers:
                self.install_crds()
                self.start_jobset()
                self.start_kueue(kueue_manager_config or {})
                self._install_webhooks()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop every process this cluster started, newest first; then SIGKILL whatever is left in its process group
        (a process started by a thread while this ran, or a child of one)."""
        for proc in reversed(list(self.processes.values())):
            proc.stop()
        self.processes.clear()
        self.kill_group()
        _LIVE.discard(self)

    def kill_group(self) -> None:
        """SIGKILL the cluster's process group (the trap's part; no-op when it is gone)."""
        if self.pgid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pgid, signal.SIGKILL)

    def _spawn(self, name: str, argv: Sequence[str | Path], env: Mapping[str, str] | None = None) -> Process:
        log = self.dir / "logs" / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        handle = log.open("ab")
        try:
            popen = self._popen(argv, handle, env)
        finally:
            handle.close()
        proc = Process(name, popen, log)
        self.processes[name] = proc
        return proc

    def _popen(self, argv: Sequence[str | Path], handle: Any, env: Mapping[str, str] | None) -> subprocess.Popen[bytes]:
        """Start a process in the cluster's own process group (a new one for the first process, or when every
        member has exited), never in the harness's: a signal to the harness's group does not reach it half-way, and
        the trap ends the whole group at once."""
        _LIVE.add(self)
        for group in ([self.pgid] if self.pgid is not None else []) + [0]:
            try:
                popen = subprocess.Popen(
                    [str(a) for a in argv],
                    stdout=handle,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env={**os.environ, **(env or {})},
                    cwd=self.dir,
                    process_group=group,
                )
            except PermissionError:
                continue  # the group has no member left: start a new one
            if group == 0:
                self.pgid = popen.pid
            return popen
        raise ClusterError(f"could not start {argv[0]}")

    def _check_alive(self, proc: Process) -> None:
        if proc.popen.poll() is not None:
            raise ClusterError(f"{proc.name} exited with {proc.popen.returncode}:\n{proc.tail()}")

    def _wait_http(
        self, proc: Process, url: str, *, tls: bool, timeout: float = 90, context: ssl.SSLContext | None = None
    ) -> None:
        """Wait until URL answers 200 while PROC lives. ``tls``: over the cluster's CA and admin certificate;
        otherwise CONTEXT (``None``: plain HTTP, or a server of its own certificate the caller's context accepts)."""
        if tls:
            assert self.pki is not None
            context = ssl.create_default_context(cafile=str(self.pki.ca_crt))
            context.load_cert_chain(str(self.pki.admin_crt), str(self.pki.admin_key))
        for _ in _deadline_loop(f"{proc.name} at {url}", timeout):
            self._check_alive(proc)
            try:
                with urllib.request.urlopen(url, timeout=2, context=context) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError, ssl.SSLError):
                continue

    def _wait_tls(self, proc: Process, port: int, timeout: float = 90) -> None:
        assert self.pki is not None
        context = ssl.create_default_context(cafile=str(self.pki.ca_crt))
        for _ in _deadline_loop(f"{proc.name}'s TLS on 127.0.0.1:{port}", timeout):
            self._check_alive(proc)
            try:
                with (
                    socket.create_connection(("127.0.0.1", port), timeout=2) as sock,
                    context.wrap_socket(sock, server_hostname="127.0.0.1"),
                ):
                    return
            except (OSError, ssl.SSLError):
                continue

    # --- control plane ---------------------------------------------------------------------------------------------

    def _write_kubeconfig(self) -> None:
        assert self.pki is not None
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "e2e",
                    "cluster": {
                        "server": f"https://127.0.0.1:{self.ports.apiserver}",
                        "certificate-authority": str(self.pki.ca_crt),
                    },
                }
            ],
            "users": [
                {
                    "name": "admin",
                    "user": {
                        "client-certificate": str(self.pki.admin_crt),
                        "client-key": str(self.pki.admin_key),
                    },
                }
            ],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "admin"}}],
            "current-context": "e2e",
        }
        self.kubeconfig.write_text(yaml.safe_dump(config))
        self.kubeconfig.chmod(0o600)

    def _start_etcd(self) -> None:
        p = self.ports
        proc = self._spawn(
            "etcd",
            [
                self.bin["etcd"],
                "--name=e2e",
                f"--data-dir={self.dir / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{p.etcd_client}",
                f"--advertise-client-urls=http://127.0.0.1:{p.etcd_client}",
                f"--listen-peer-urls=http://127.0.0.1:{p.etcd_peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{p.etcd_peer}",
                f"--initial-cluster=e2e=http://127.0.0.1:{p.etcd_peer}",
                "--listen-metrics-urls=",
                "--unsafe-no-fsync",
                "--quota-backend-bytes=4294967296",
            ],
        )
        self._wait_http(proc, f"http://127.0.0.1:{p.etcd_client}/health", tls=False)

    @property
    def audit_log(self) -> Path:
        """The API server's audit log: every JobSet create, request and stored object (after webhooks)."""
        return self.dir / "audit.log"

    def audit_events(self) -> list[dict[str, Any]]:
        """The audit log's events, parsed."""
        if not self.audit_log.exists():
            return []
        return [json.loads(line) for line in self.audit_log.read_text().splitlines() if line.strip()]

    def _start_apiserver(self) -> None:
        assert self.pki is not None
        k = self.pki
        policy = self.dir / "audit-policy.yaml"
        policy.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "audit.k8s.io/v1",
                    "kind": "Policy",
                    "omitStages": ["RequestReceived"],
                    "rules": [
                        {
                            "level": "RequestResponse",
                            "verbs": ["create"],
                            "resources": [{"group": "jobset.x-k8s.io", "resources": ["jobsets"]}],
                        },
                        {"level": "None"},
                    ],
                }
            )
        )
        proc = self._spawn(
            "kube-apiserver",
            [
                self.bin["kube-apiserver"],
                f"--etcd-servers=http://127.0.0.1:{self.ports.etcd_client}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.ports.apiserver}",
                f"--tls-cert-file={k.apiserver_crt}",
                f"--tls-private-key-file={k.apiserver_key}",
                f"--client-ca-file={k.ca_crt}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={k.sa_pub}",
                f"--service-account-signing-key-file={k.sa_key}",
                f"--service-cluster-ip-range={self.service_cidr}",
                "--authorization-mode=RBAC",
                "--allow-privileged=true",
                # The default `kubernetes` Endpoints would carry the host's address; nothing may dial it.
                "--endpoint-reconciler-type=none",
                # The aggregation layer, as kubeadm configures it: without a front-proxy client cert the API server
                # calls an aggregated API (Kueue's visibility server, which the Kueue chart registers) anonymously,
                # its discovery answers 403, and the namespace controller, which needs complete discovery, never
                # finishes deleting a namespace.
                f"--requestheader-client-ca-file={k.ca_crt}",
                f"--requestheader-allowed-names={FRONT_PROXY_CLIENT}",
                "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                f"--proxy-client-cert-file={k.proxy_crt}",
                f"--proxy-client-key-file={k.proxy_key}",
                f"--audit-policy-file={policy}",
                f"--audit-log-path={self.audit_log}",
                "--audit-log-format=json",
                *self.apiserver_args,
            ],
        )
        self._wait_http(proc, f"https://127.0.0.1:{self.ports.apiserver}/readyz", tls=True, timeout=120)

    def _start_controller_manager(self) -> None:
        assert self.pki is not None
        proc = self._spawn(
            "kube-controller-manager",
            [
                self.bin["kube-controller-manager"],
                f"--kubeconfig={self.kubeconfig}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.ports.kcm}",
                "--leader-elect=false",
                f"--root-ca-file={self.pki.ca_crt}",
                f"--service-account-private-key-file={self.pki.sa_key}",
                # No kubelet posts node heartbeats here: without this, Node objects that tests create would
                # be tainted unreachable after the grace period.
                "--controllers=*,-node-lifecycle-controller",
            ],
        )
        for _ in _deadline_loop("the namespace `default` ServiceAccount", 90):
            self._check_alive(proc)
            if self.kubectl("get", "serviceaccount", "default", "-n", "default", check=False).returncode == 0:
                return

    # --- Kueue and JobSet ------------------------------------------------------------------------------------------

    def _ca_b64(self) -> str:
        assert self.pki is not None
        return base64.b64encode(self.pki.ca_pem).decode()

    def kueue_crds(self) -> list[dict[str, Any]]:
        """Kueue's CRDs from ``config/components/crd``, with the conversion webhooks its kustomization enables,
        pointed at the local Kueue."""
        base = module_dir(self.kueue_module) / "config" / "components" / "crd"
        kustomization = yaml.safe_load((base / "kustomization.yaml").read_text())
        crds = {}
        for resource in kustomization["resources"]:
            crd = yaml.safe_load((base / resource).read_text())
            crds[crd["metadata"]["name"]] = crd
        for patch_ref in kustomization.get("patches", []):
            patch = yaml.safe_load((base / patch_ref["path"]).read_text())
            webhook = patch["spec"]["conversion"]["webhook"]
            crds[patch["metadata"]["name"]]["spec"]["conversion"] = {
                "strategy": patch["spec"]["conversion"]["strategy"],
                "webhook": {
                    "conversionReviewVersions": webhook["conversionReviewVersions"],
                    "clientConfig": {
                        "url": f"https://127.0.0.1:{self.ports.kueue_webhook}{webhook['clientConfig']['service']['path']}",
                        "caBundle": self._ca_b64(),
                    },
                },
            }
        return list(crds.values())

    def jobset_crds(self) -> list[dict[str, Any]]:
        """JobSet's CRD from ``config/components/crd/bases`` (its kustomization enables no conversion webhook)."""
        base = module_dir(self.jobset_module) / "config" / "components" / "crd"
        kustomization = yaml.safe_load((base / "kustomization.yaml").read_text())
        return [yaml.safe_load((base / r).read_text()) for r in kustomization["resources"]]

    def install_crds(self) -> None:
        """Apply Kueue's and JobSet's CRDs and wait until they are Established."""
        crds = [*self.kueue_crds(), *self.jobset_crds()]
        self.apply(crds)
        names = [c["metadata"]["name"] for c in crds]
        self.kubectl("wait", "--for=condition=Established", "--timeout=60s", *[f"crd/{n}" for n in names])
        # Applied, not created: a cluster that comes back (:meth:`resume`) has them already.
        self.apply(
            [
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
                for n in ("kueue-system", "jobset-system")
            ]
        )

    def _webhook_certs(self, name: str) -> Path:
        assert self.pki is not None
        directory = self.dir / f"{name}-certs"
        directory.mkdir(exist_ok=True)
        shutil.copyfile(self.pki.webhook_crt, directory / "tls.crt")
        shutil.copyfile(self.pki.webhook_key, directory / "tls.key")
        return directory

    def start_jobset(self) -> None:
        """Run JobSet's manager out of cluster with its own config, webhook on 127.0.0.1."""
        base = module_dir(self.jobset_module) / "config" / "components" / "manager"
        config = yaml.safe_load((base / "controller_manager_config.yaml").read_text())
        config.update(
            {
                "leaderElection": {"leaderElect": False},
                "internalCertManagement": {"enable": False},
                "webhook": {
                    "host": "127.0.0.1",
                    "port": self.ports.jobset_webhook,
                    "certDir": str(self._webhook_certs("jobset")),
                },
                "health": {"healthProbeBindAddress": f"127.0.0.1:{self.ports.jobset_health}"},
                # With internal certs off JobSet points metrics at a hard-coded cert dir; no metrics needed.
                "metrics": {"bindAddress": "0"},
            }
        )
        path = self.dir / "jobset-config.yaml"
        path.write_text(yaml.safe_dump(config))
        proc = self._spawn("jobset", [self.bin["jobset"], f"--config={path}", f"--kubeconfig={self.kubeconfig}"])
        self._wait_http(proc, f"http://127.0.0.1:{self.ports.jobset_health}/readyz", tls=False)
        self._wait_tls(proc, self.ports.jobset_webhook)

    def start_kueue(self, manager_config: Mapping[str, Any]) -> None:
        """Run Kueue's manager out of cluster with ``manager_config`` (the program's), served on 127.0.0.1."""
        assert self.pki is not None
        config = dict(manager_config) or yaml.safe_load(
            (module_dir(self.kueue_module) / "config/components/manager/controller_manager_config.yaml").read_text()
        )
        config.update(
            {
                "namespace": "kueue-system",
                "leaderElection": {"leaderElect": False},
                "internalCertManagement": {"enable": False},
                "webhook": {
                    "host": "127.0.0.1",
                    "port": self.ports.kueue_webhook,
                    "certDir": str(self._webhook_certs("kueue")),
                },
                "health": {"healthProbeBindAddress": f"127.0.0.1:{self.ports.kueue_health}"},
                "metrics": {**config.get("metrics", {}), "bindAddress": f"127.0.0.1:{self.ports.kueue_metrics}"},
            }
        )
        self.kueue_config = config
        KUEUE_METRICS_CERTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.pki.webhook_crt, KUEUE_METRICS_CERTS / "tls.crt")
        shutil.copyfile(self.pki.webhook_key, KUEUE_METRICS_CERTS / "tls.key")
        path = self.dir / "kueue-config.yaml"
        path.write_text(yaml.safe_dump(config))
        proc = self._spawn(
            "kueue",
            [
                self.bin["kueue"],
                f"--config={path}",
                f"--kubeconfig={self.kubeconfig}",
                # Beta and on by default: it serves the visibility API from certs that only exist in-cluster.
                "--feature-gates=VisibilityOnDemand=false",
            ],
        )
        self._wait_http(proc, f"http://127.0.0.1:{self.ports.kueue_health}/readyz", tls=False, timeout=120)
        self._wait_tls(proc, self.ports.kueue_webhook)

    def restart_kueue(self, manager_config: Mapping[str, Any]) -> None:
        """Stop Kueue and start it again with another manager configuration."""
        proc = self.processes.pop("kueue", None)
        if proc:
            proc.stop()
        self.start_kueue(manager_config)

    def _rewrite_webhooks(self, config: dict[str, Any], prefix: str, port: int) -> dict[str, Any]:
        config["metadata"]["name"] = f"{prefix}-{config['metadata']['name']}"
        for hook in config["webhooks"]:
            service = hook["clientConfig"].pop("service")
            hook["clientConfig"]["url"] = f"https://127.0.0.1:{port}{service['path']}"
            hook["clientConfig"]["caBundle"] = self._ca_b64()
        return config

    def kueue_webhooks(self) -> list[dict[str, Any]]:
        """Kueue's webhook configurations, with the namespaceSelector its kustomization copies onto job hooks."""
        base = module_dir(self.kueue_module) / "config" / "components" / "webhook"
        configs = {d["kind"]: d for d in yaml.safe_load_all((base / "manifests.yaml").read_text()) if d}
        kustomization = yaml.safe_load((base / "kustomization.yaml").read_text())
        for patch_ref in kustomization.get("patches", []):
            patch = yaml.safe_load(patch_ref["patch"])
            target = configs[patch["kind"]]
            for hook_patch in patch["webhooks"]:
                for hook in target["webhooks"]:
                    if hook["name"] == hook_patch["name"]:
                        hook.update({k: v for k, v in hook_patch.items() if k != "name"})
        for replacement in kustomization.get("replacements", []):
            source = replacement["source"]
            src_hook = source["fieldPath"].split("[name=")[1].split("]")[0]
            value = next(h for h in configs[source["kind"]]["webhooks"] if h["name"] == src_hook)["namespaceSelector"]
            for target in replacement["targets"]:
                for path in target["fieldPaths"]:
                    name = path.split("[name=")[1].split("]")[0]
                    for hook in configs[target["select"]["kind"]]["webhooks"]:
                        if hook["name"] == name:
                            hook["namespaceSelector"] = value
        return [self._rewrite_webhooks(c, "kueue", self.ports.kueue_webhook) for c in configs.values()]

    def jobset_webhooks(self) -> list[dict[str, Any]]:
        """JobSet's webhook configurations with its kustomization's JSON patches (``replace`` only)."""
        base = module_dir(self.jobset_module) / "config" / "components" / "webhook"
        configs = {d["metadata"]["name"]: d for d in yaml.safe_load_all((base / "manifests.yaml").read_text()) if d}
        kustomization = yaml.safe_load((base / "kustomization.yaml").read_text())
        for patch_ref in kustomization.get("patches", []):
            target = configs[patch_ref["target"]["name"]]
            for op in yaml.safe_load((base / patch_ref["path"]).read_text()):
                if op["op"] != "replace" or not op["path"].startswith("/webhooks/"):
                    raise ClusterError(f"unsupported JSON patch in JobSet's kustomization: {op}")
                target["webhooks"][int(op["path"].split("/")[2])] = op["value"]
        return [self._rewrite_webhooks(c, "jobset", self.ports.jobset_webhook) for c in configs.values()]

    def _install_webhooks(self) -> None:
        # Only once both servers answer: the hooks fail closed (failurePolicy: Fail).
        self.apply([*self.jobset_webhooks(), *self.kueue_webhooks()])

    # --- API access ------------------------------------------------------------------------------------------------

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run the built kubectl against this cluster."""
        result = subprocess.run(
            [str(self.bin["kubectl"]), f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise ClusterError(f"kubectl {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}")
        return result

    def apply(self, objects: Sequence[Mapping[str, Any]], *, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``kubectl apply --server-side`` of ``objects``, in the order given."""
        text = yaml.safe_dump_all(list(objects), sort_keys=False)
        return self.kubectl(
            "apply", "--server-side", "--field-manager=aiperf-kueue-e2e", "-f", "-", input=text, check=check
        )

    def get_json(self, *args: str) -> Any:
        """``kubectl get ... -o json``, parsed."""
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def uids(self, *resources: str) -> dict[str, str]:
        """``kind/namespace/name`` → UID of every object of each of ``resources`` (``clusterqueues.kueue.x-k8s.io``,
        ``namespaces``, ...) in every namespace: what a change must keep to keep the live objects."""
        out = {}
        for resource in resources:
            for item in self.get_json(resource, "-A")["items"]:
                meta = item["metadata"]
                out[f"{item['kind']}/{meta.get('namespace', '')}/{meta['name']}"] = meta["uid"]
        return out

    @contextlib.contextmanager
    def env(self) -> Iterator[dict[str, str]]:
        """Environment for clients of this cluster (KUBECONFIG)."""
        yield {"KUBECONFIG": str(self.kubeconfig)}
