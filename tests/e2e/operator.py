"""The released AIPerf operator (``aiperf`` on PyPI) as a local kopf process against the e2e cluster.

It runs from its own virtualenv (``AIPERF_VENV``, made by ``make oracle``) with the env the program's operator
``DeploymentPatch`` sets, cluster-wide (``--all-namespaces``) and standalone (no kopf peering objects). Its CRDs
(AIPerfJob, AIPerfSweep) come from ``../shared/reference/aiperf/``: no package ships them.

Service DNS: the operator probes each job's endpoint before it builds the JobSet, and a name that does not resolve
fails the job. In a real cluster the cluster DNS resolves ``<svc>.<ns>.svc``; here the sandbox's private ``/etc/hosts``
maps each endpoint host to 127.0.0.1, where nothing listens (the probe then only warns: unreachable).
"""

from __future__ import annotations

import fcntl
import os
import urllib.parse
from collections.abc import Iterable, Mapping
from pathlib import Path

from tests.e2e.cluster import LocalCluster, Process, _deadline_loop, free_port
from tests.e2e.stackrun import Plan, operator_env

#: ``../shared`` beside the repository, or ``AIPERF_KUEUE_SHARED`` (as for the unit suite: a worktree elsewhere).
SHARED = Path(os.environ.get("AIPERF_KUEUE_SHARED") or Path(__file__).resolve().parents[3] / "shared")
SHARED_AIPERF = SHARED / "reference" / "aiperf"
CRD_FILES = ("aiperfjobs.aiperf.nvidia.com.crd.yaml", "aiperfsweeps.aiperf.nvidia.com.crd.yaml")
HOSTS = Path("/etc/hosts")


def aiperf_crds() -> list[Path]:
    """The AIPerfJob and AIPerfSweep CRD files (only ../shared has them)."""
    paths = [SHARED_AIPERF / name for name in CRD_FILES]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"AIPerf CRDs not found: {', '.join(missing)} (../shared/reference/aiperf)")
    return paths


def install_aiperf_crds(cluster: LocalCluster) -> None:
    """Apply the AIPerf CRDs and wait until they are Established."""
    for path in aiperf_crds():
        cluster.kubectl("apply", "--server-side", "-f", str(path))
    cluster.kubectl(
        "wait", "--for=condition=Established", "--timeout=60s",
        "crd/aiperfjobs.aiperf.nvidia.com", "crd/aiperfsweeps.aiperf.nvidia.com",
    )


def _sandboxed() -> bool:
    return os.environ.get("AIPERF_KUEUE_E2E_SANDBOX") == "1"


def _add_hosts(path: Path, address: str, hosts: Iterable[str]) -> None:
    """Append ``address host`` for each host not in ``path`` yet, under an exclusive lock: ``make e2e``'s two workers
    share the sandbox's /etc/hosts. Written in place (never replaced), so a bind mount of the file sees it."""
    with path.open("a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        text = handle.read()
        known = set(text.split())
        new = [h for h in hosts if h not in known]
        if new:
            handle.write(("" if not text or text.endswith("\n") else "\n") + "".join(f"{address} {h}\n" for h in new))


def resolve_to_loopback(urls: Iterable[str], cluster: LocalCluster | None = None) -> None:
    """Map every URL's host to 127.0.0.1 in the sandbox's private /etc/hosts (never the host's: see cluster.py), and
    in ``cluster``'s operator's own copy of it when that operator runs already (:func:`operator_hosts`)."""
    hosts = sorted({urllib.parse.urlsplit(u).hostname or "" for u in urls} - {"", "localhost", "127.0.0.1"})
    if not hosts:
        return
    if not _sandboxed():
        raise RuntimeError("refusing to edit /etc/hosts outside the e2e sandbox")
    _add_hosts(HOSTS, "127.0.0.1", hosts)
    if cluster is not None and operator_hosts(cluster).exists():
        _add_hosts(operator_hosts(cluster), "127.0.0.1", hosts)


def operator_hosts(cluster: LocalCluster) -> Path:
    """The operator's own /etc/hosts: the sandbox's, plus names only this cluster's operator resolves (a finished
    benchmark's controller, :mod:`tests.e2e.fake_controller`). Two scenarios that run at once (``make e2e``'s two
    workers) may have a controller of the same name, each answered by its own fake at its own address."""
    return cluster.dir / "operator-hosts"


def resolve_for_operator(cluster: LocalCluster, host: str, address: str) -> None:
    """Map ``host`` to ``address`` for ``cluster``'s operator only."""
    if not _sandboxed():
        raise RuntimeError("refusing to edit an operator's hosts outside the e2e sandbox")
    _add_hosts(operator_hosts(cluster), address, [host])


#: The controller heartbeat settings the operator runs with here (AIPerf 0.13.0 ``K8sEnvironment.CONTROLLER_HEARTBEAT``,
#: defaults 10 s and 30 s; the expiry must be at least twice the interval): see :func:`start_operator`.
HEARTBEAT_INTERVAL_SECONDS = 5.0
HEARTBEAT_EXPIRY_SECONDS = 10.0


def start_operator(cluster: LocalCluster, venv: Path, env: Mapping[str, str], workdir: Path) -> Process:
    """Start ``kopf run -m aiperf.operator.main`` and wait for its liveness endpoint."""
    kopf = venv / "bin" / "kopf"
    if not kopf.is_file():
        raise FileNotFoundError(f"{kopf} not found: run `make oracle` (AIPERF_VENV={venv})")
    port = free_port()
    results = workdir / "operator-results"
    results.mkdir(parents=True, exist_ok=True)
    proc_env = {
        **env,
        "KUBECONFIG": str(cluster.kubeconfig),
        "AIPERF_RESULTS_DIR": str(results),
        # Harness plumbing, not benchmark settings: no Prometheus endpoint (it would take a fixed port), and no
        # wait for kubelets to sync the benchmark ConfigMap (there is no kubelet).
        "AIPERF_METRICS_PORT": "0",
        "AIPERF_CONFIGMAP_PROPAGATION_DELAY_SECONDS": "0",
        # No benchmark controller runs here, so none sends heartbeats, and 0.13.0's broad monitor (the one that says
        # Queued while Kueue holds a job) waits for the first heartbeat's expiry, counted from the job's creation:
        # 30 s by default. 10 s here (with a 5-s interval: the expiry must be at least twice it) brings the same
        # phases about 20 s sooner; where a real controller runs, its heartbeats keep the monitor out of its way.
        "AIPERF_K8S_CONTROLLER_HEARTBEAT_INTERVAL_SECONDS": str(HEARTBEAT_INTERVAL_SECONDS),
        "AIPERF_K8S_CONTROLLER_HEARTBEAT_EXPIRY_SECONDS": str(HEARTBEAT_EXPIRY_SECONDS),
        "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}",
    }
    argv: list[str | Path] = [
        kopf, "run", "-m", "aiperf.operator.main", "--all-namespaces", "--standalone",
        f"--liveness=http://127.0.0.1:{port}/healthz",
    ]
    if _sandboxed():
        # Its own mount namespace, where /etc/hosts is operator_hosts(cluster): the sandbox's entries, then this
        # cluster's own (kept across a restart of the operator).
        hosts = operator_hosts(cluster)
        with HOSTS.open() as shared:
            fcntl.flock(shared, fcntl.LOCK_SH)
            base = shared.read().splitlines()
        # A restart keeps the cluster's own lines, once each, after the sandbox's.
        own = [line for line in (hosts.read_text().splitlines() if hosts.exists() else []) if line not in base]
        hosts.write_text("".join(f"{line}\n" for line in [*base, *own]))
        argv = [
            "unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
            'mount --bind "$1" /etc/hosts && shift && exec "$@"', "sh", hosts, *argv,
        ]
    proc = cluster._spawn("aiperf-operator", argv, env=proc_env)
    cluster._wait_http(proc, f"http://127.0.0.1:{port}/healthz", tls=False, timeout=120)
    return proc


def start_operator_for(cluster: LocalCluster, plan: Plan, venv: Path) -> Process:
    """Start the operator for a stack's offline plan: every job's endpoint host resolved to loopback, then the
    operator with the env the plan's ``DeploymentPatch`` sets (none when the stack does not install it)."""
    jobs = [r["inputs"] for r in plan.resources if (r.get("inputs") or {}).get("kind") == "AIPerfJob"]
    resolve_to_loopback((u for j in jobs for u in j["spec"]["benchmark"]["endpoint"].get("urls", [])), cluster)
    return start_operator(cluster, venv, operator_env(plan), cluster.dir)


def stop_operator(cluster: LocalCluster) -> None:
    """Stop the operator process, if running."""
    proc = cluster.processes.pop("aiperf-operator", None)
    if proc:
        proc.stop()


__all__ = [
    "_deadline_loop", "aiperf_crds", "install_aiperf_crds", "operator_hosts", "resolve_for_operator",
    "resolve_to_loopback", "start_operator", "start_operator_for",
]
