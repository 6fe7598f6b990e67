"""What :mod:`tests.e2e.bench_engine` runs beside a measured command: a watch for the first admitted benchmark, the
Secrets a user creates once their namespaces exist, and the cap that stops a long ``pulumi up`` as Ctrl-C does."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from tests.e2e.cluster import LocalCluster
from tests.e2e.stackrun import Plan


class AdmissionWatch:
    """``kubectl get workloads -A --watch``: when the first Workload is admitted (the watch is restarted until
    Kueue's CRDs exist, for a ``pulumi up`` that installs them)."""

    TEMPLATE = '{.metadata.namespace}/{.metadata.name}{" "}{.status.admission.clusterQueue}{"\\n"}'

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.started = time.monotonic()
        self.first: tuple[float, str] | None = None
        self._stop = threading.Event()
        self._proc: subprocess.Popen[str] | None = None
        self._thread = threading.Thread(target=self._run, name="admission-watch", daemon=True)

    def __enter__(self) -> AdmissionWatch:
        self.started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
        self._thread.join(15)

    def _run(self) -> None:
        argv = [
            str(self.cluster.bin["kubectl"]), f"--kubeconfig={self.cluster.kubeconfig}",
            "get", "workloads.kueue.x-k8s.io", "-A", "--watch", "-o", f"jsonpath={self.TEMPLATE}",
        ]
        while not self._stop.is_set() and self.first is None:
            self._proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            assert self._proc.stdout is not None
            for line in self._proc.stdout:
                name, _, queue = line.strip().partition(" ")
                if queue and self.first is None:
                    self.first = (time.monotonic(), f"{name} on {queue}")
                    self._proc.terminate()
                    break
            self._proc.wait(15)
            self._stop.wait(0.5)

    def wait(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the first admission (it may come after the command that caused it)."""
        end = time.monotonic() + timeout
        while self.first is None and time.monotonic() < end:
            time.sleep(0.25)

    def seconds(self) -> float | None:
        """Seconds from the start of the watch (just before the measured command) to the first admission."""
        return None if self.first is None else self.first[0] - self.started


class UserSecrets:
    """Creates the Secrets the jobs read their endpoint key from as soon as each namespace exists, as a user who
    follows docs/secrets.md would once ``pulumi up`` has made the namespace."""

    def __init__(self, cluster: LocalCluster, plan: Plan) -> None:
        self.cluster = cluster
        self.wanted: dict[tuple[str, str], set[str]] = {}
        for resource in plan.resources:
            inputs = resource.get("inputs") or {}
            if inputs.get("kind") != "AIPerfJob":
                continue
            namespace = inputs["metadata"]["namespace"]
            for env in ((inputs["spec"].get("podTemplate") or {}).get("env") or []):
                ref = (env.get("valueFrom") or {}).get("secretKeyRef")
                if ref:
                    self.wanted.setdefault((namespace, ref["name"]), set()).add(ref["key"])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="user-secrets", daemon=True)

    def __enter__(self) -> UserSecrets:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(15)

    def _run(self) -> None:
        left = dict(self.wanted)
        while left and not self._stop.is_set():
            for (namespace, name), keys in list(left.items()):
                if self.cluster.kubectl("get", "namespace", namespace, check=False).returncode != 0:
                    continue
                literals = [f"--from-literal={k}=bench-not-a-real-key" for k in sorted(keys)]
                self.cluster.kubectl("create", "secret", "generic", name, "-n", namespace, *literals, check=False)
                del left[(namespace, name)]
            self._stop.wait(0.25)


def _cli_children() -> list[int]:
    """PIDs of the ``pulumi`` CLI processes this process started (the Automation API runs it as a direct child)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        comm, rest = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()
        if comm == "pulumi" and int(rest[1]) == os.getpid():
            found.append(int(stat.parent.name))
    return found


class UpCap:
    """Stops the running ``pulumi up`` after ``seconds`` with SIGINT, as a user's Ctrl-C does: the engine starts no
    new step, finishes those in flight, writes the state and exits. ``None``: no cap."""

    def __init__(self, seconds: float | None) -> None:
        self.fired = False
        self._timer = threading.Timer(seconds, self._fire) if seconds else None

    def _fire(self) -> None:
        self.fired = True
        for pid in _cli_children():
            os.kill(pid, signal.SIGINT)

    def __enter__(self) -> UpCap:
        if self._timer is not None:
            self._timer.start()
        return self

    def __exit__(self, *_: object) -> None:
        if self._timer is not None:
            self._timer.cancel()
