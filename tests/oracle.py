"""The exactness oracle: AIPerf 0.13.0's own operator code, in its own virtualenv.

``make oracle`` builds that virtualenv (``requirements-aiperf.txt``) at ``$AIPERF_VENV``
(default ``~/.cache/aiperf-kueue/venvs/aiperf-0.13.0``). :class:`Oracle` runs
``tests/aiperf_oracle/harness.py`` with its Python: the real ``on_create`` handler against a
stub Kubernetes API (the calls it answers are listed there and asserted by the tests). One
harness process serves every job of one operator env, so the release's settings singletons
read exactly the env the program sets.

Without the virtualenv the oracle tests skip, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from aiperf_kueue.config import StackConfig
from aiperf_kueue.config.aiperf_spec import AIPerfJobSpec
from aiperf_kueue.plan import manifests
from aiperf_kueue.plan.submit import benchmark_namespaces, default_queue, namespace_annotations

VERSION = "0.13.0"
HARNESS = Path(__file__).resolve().parent / "aiperf_oracle" / "harness.py"
DEFAULT_VENV = Path.home() / ".cache" / "aiperf-kueue" / "venvs" / f"aiperf-{VERSION}"

#: The Kubernetes API calls the stub answers (``harness.ROUTES``), as (method, name).
STUBBED_CALLS = [
    ["GET", "version"],
    ["GET", "list jobsets (cluster)"],
    ["POST", "create selfsubjectaccessreview"],
    ["GET", "list deployments"],
    ["GET", "list nodes"],
    ["GET", "list pods (all namespaces)"],
    ["GET", "list resourcequotas"],
    ["GET", "list networkpolicies"],
    ["GET", "read secret"],
    ["GET", "read serviceaccount"],
    ["GET", "read localqueue"],
    ["GET", "list localqueues"],
    ["GET", "read namespace"],
    ["POST", "create jobset"],
    ["POST", "create role"],
    ["POST", "create rolebinding"],
    ["POST", "create configmap"],
]


def oracle_python() -> Path:
    """The oracle virtualenv's Python; skip (fail under ``CI=true``) when it is not built."""
    venv = Path(os.environ.get("AIPERF_VENV") or DEFAULT_VENV)
    python = venv / "bin" / "python"
    if not python.is_file():
        message = f"the AIPerf {VERSION} oracle virtualenv is not at {venv}: run `make oracle` (AIPERF_VENV={venv})"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return python


class Oracle:
    """Harness processes of the released operator, one per operator env, kept for the session."""

    def __init__(self, python: Path) -> None:
        self.python = python
        self._processes: dict[tuple[tuple[str, str], ...], subprocess.Popen[str]] = {}

    def _process(self, env: Mapping[str, str]) -> subprocess.Popen[str]:
        key = tuple(sorted(env.items()))
        process = self._processes.get(key)
        if process is None or process.poll() is not None:
            # Only the operator's env and what Python needs: nothing of this process's AIPERF_* leaks in.
            base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
            process = subprocess.Popen(
                [str(self.python), str(HARNESS)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                env={**base, **env},
            )
            self._processes[key] = process
        return process

    def ask(self, env: Mapping[str, str], request: dict[str, Any]) -> dict[str, Any]:
        """One request to the harness of ``env``; its answer."""
        process = self._process(env)
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(request) + "\n")
        process.stdin.flush()
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"the oracle harness exited with {process.wait()}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def create(self, env: Mapping[str, str], cluster: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
        """The operator's ``on_create`` for ``job`` (name, namespace, spec) in ``cluster``."""
        return self.ask(env, {"cluster": cluster, "job": job})

    def validate(self, spec: dict[str, Any], env: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The operator's spec validation alone."""
        return self.ask(env or {}, {"validate": spec})

    def close(self) -> None:
        """End every harness process this oracle started."""
        for process in self._processes.values():
            if process.poll() is None:
                assert process.stdin is not None
                process.stdin.close()
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=30)
        self._processes.clear()


@pytest.fixture(scope="session", name="oracle")
def oracle_fixture() -> Iterator[Oracle]:
    """The session's :class:`Oracle`."""
    found = Oracle(oracle_python())
    try:
        yield found
    finally:
        found.close()


def stack_cluster(config: StackConfig, secrets: Mapping[str, Mapping[str, list[str]]] | None = None) -> dict[str, Any]:
    """The cluster a stack creates, as the stub API serves it: its benchmark namespaces with
    their annotations, their LocalQueues, one Ready node per pool node (labels, taints,
    allocatable), and ``secrets`` (namespace → Secret → keys) that exist besides."""
    default = default_queue(config)
    namespaces: dict[str, Any] = {}
    local_queues: dict[str, list[str]] = {}
    for _, _, ns in benchmark_namespaces(config):
        namespaces[ns.name] = {"annotations": namespace_annotations(ns, default), "labels": {}}
        local_queues[ns.name] = list(manifests.local_queue_names(ns))
    nodes = [
        {
            "name": f"{pool.name}-{i}",
            "labels": dict(pool.node_labels),
            "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in pool.node_taints],
            "cpu": pool.cpu,
            "memory": pool.memory,
        }
        for pool in config.inventory.pools
        for i in range(pool.nodes)
    ]
    return {
        "namespaces": namespaces,
        "localQueues": local_queues,
        "nodes": nodes,
        "kueueInstalled": True,
        "secrets": {ns: dict(s) for ns, s in (secrets or {}).items()},
    }


def jobset_view(jobset: dict[str, Any]) -> dict[str, Any]:
    """What :func:`aiperf_kueue.workload.job_shape.predicted_jobset` predicts, read from a real JobSet."""
    spec = jobset["spec"]
    out: dict[str, Any] = {"name": jobset["metadata"]["name"], "labels": jobset["metadata"]["labels"]}
    if "suspend" in spec:
        out["suspend"] = spec["suspend"]
    if "ttlSecondsAfterFinished" in spec:
        out["ttlSecondsAfterFinished"] = spec["ttlSecondsAfterFinished"]
    jobs = []
    for rj in spec["replicatedJobs"]:
        pod = rj["template"]["spec"]["template"]["spec"]
        jobs.append(
            {
                "name": rj["name"],
                "replicas": rj["replicas"] * rj["template"]["spec"]["parallelism"],
                "containers": [{"name": c["name"], "resources": c.get("resources")} for c in pod["containers"]],
                "initContainers": [c.get("resources") for c in pod.get("initContainers", [])],
            }
        )
    out["replicatedJobs"] = jobs
    return out


def accepted_here(spec: dict[str, Any]) -> bool:
    """Whether the program's port takes the AIPerfJob ``spec`` (``scheduling`` is the operator's, not AIPerf's):
    the side the differential tests compare with :meth:`Oracle.validate`."""
    job = {k: v for k, v in copy.deepcopy(spec).items() if k != "scheduling"}
    try:
        AIPerfJobSpec.model_validate(job)
    except ValidationError:
        return False
    return True
