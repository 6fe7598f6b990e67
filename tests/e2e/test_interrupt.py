"""Nothing is left behind by an interrupted run.

A living cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok) is started by
:mod:`tests.e2e.hold_cluster`, the harness in miniature, and then killed mid-run:

- with SIGTERM to the harness process: its trap (:func:`tests.e2e.cluster.install_trap`) kills the cluster's
  process group before it dies;
- with SIGKILL to a whole sandbox (``e2e/sandbox.sh`` run inside this one): nothing can be trapped, and the kernel
  ends every process of the sandbox's PID namespace when its init goes.

Either way no process that names the cluster's directory on its command line is left.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.e2e.conftest import OUT, ROOT

STACK = ROOT / "tests" / "e2e" / "scenarios" / "capacity-grows" / "01-j1.yaml"


def _holders(marker: str) -> list[tuple[int, str]]:
    """(PID, command line) of every process whose command line names ``marker`` (the test's own excepted)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append((int(entry.name), cmdline[:120]))
    return found


def _start(workdir: Path, *, sandboxed: bool) -> subprocess.Popen[bytes]:
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    manifest = os.environ.get("AIPERF_KUEUE_E2E_BINARIES") or OUT / "binaries.json"
    argv = [sys.executable, "-m", "tests.e2e.hold_cluster", str(manifest), str(workdir), str(STACK)]
    if sandboxed:
        argv = [str(ROOT / "e2e" / "sandbox.sh"), *argv]
    log = (workdir.parent / f"{workdir.name}.log").open("wb")
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    end = time.monotonic() + 180
    while not (workdir / "ready").exists():
        assert proc.poll() is None, f"the held cluster exited {proc.returncode}; see {log.name}"
        assert time.monotonic() < end, "the held cluster did not come up in 180 s"
        time.sleep(0.5)
    return proc


def _left_after(marker: str, seconds: float = 20) -> list[tuple[int, str]]:
    end = time.monotonic() + seconds
    left = _holders(marker)
    while left and time.monotonic() < end:
        time.sleep(0.5)
        left = _holders(marker)
    return left


def test_sigterm_to_the_harness_ends_every_cluster_process() -> None:
    workdir = OUT / "interrupt" / "sigterm"
    proc = _start(workdir, sandboxed=False)
    started = json.loads((workdir / "ready").read_text())
    assert sorted(started) == ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"]
    assert len(_holders(str(workdir))) >= 5
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == -signal.SIGTERM
    assert _left_after(str(workdir)) == []


def test_sigkill_of_the_sandbox_ends_every_process_in_it() -> None:
    workdir = OUT / "interrupt" / "sigkill"
    proc = _start(workdir, sandboxed=True)
    assert len(_holders(str(workdir))) >= 6  # the held harness and its five cluster processes
    proc.kill()  # unshare, the sandbox's top: --kill-child takes its init, and the PID namespace goes with it
    proc.wait(30)
    assert _left_after(str(workdir)) == []
