"""A MultiKueue fleet deployed by ``pulumi up`` of its three stacks, each onto its own local control plane.

One Pulumi project directory holds the fleet's three stack files (a worker's plan reads its manager's, the
manager's reads its workers'), one file backend holds their states (the manager reads each worker's
``multikueueKubeconfig`` output by stack reference). Kueue's and JobSet's charts are installed for real and
:class:`~tests.e2e.charts.ChartControllers` runs their controllers, as in ``test_engine.py``. The set-up order
is docs/multikueue.md's: each worker is deployed once (with ``multikueue.server`` it mints a token of its
``multikueue`` ServiceAccount and exports the kubeconfig built from it as a secret output), then the manager.
A JobSet only the bigger worker has room for is submitted on the manager and must run there.
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.charts import ChartControllers
from tests.e2e.cluster import LocalCluster
from tests.e2e.conftest import BUILD, JOBSET_MODULE, KUEUE_MODULE, OUT, ROOT, ClusterFactory
from tests.e2e.engine import PROJECT, Engine, cluster_config, e2e_config
from tests.e2e.test_multikueue_e2e import _get, _wait

#: A secret's signature in Pulumi's state (the property-value wire format).
SECRET_SIG = "4dabf18193072939515e22adb298388d"
FLEET = ROOT / "tests" / "fleet_stacks"
ROLES = {"fleet": "manager", "gpu-east": "east", "gpu-west": "west"}
POOLS = {
    "gpu-east": [{"name": "cpu-small", "nodes": 1, "cpu": "2", "memory": "8Gi"}],
    "gpu-west": [{"name": "cpu", "nodes": 1, "cpu": "16", "memory": "64Gi"}],
}
NAMESPACE = "aiperf-benchmarks"
PROBE = "mk-engine-probe"
WAIT = 240.0


@dataclass
class Deployed:
    """The three stacks after ``pulumi up``, their clusters, and what the run measured."""

    clusters: dict[str, LocalCluster]
    states: dict[str, list[dict[str, Any]]]
    state: Path
    """The file backend's directory."""
    tokens: list[str] = field(default_factory=list)
    """The workers' ServiceAccount tokens: what must never be in a state in clear."""
    seconds: dict[str, float] = field(default_factory=dict)


def _minted_token(worker: LocalCluster) -> str:
    """The token Kubernetes' token controller wrote into the worker's ``multikueue-token`` Secret."""
    data = worker.kubectl("get", "secret", "multikueue-token", "-n", "kueue-system", "-o", "jsonpath={.data.token}")
    return base64.b64decode(data.stdout).decode()


@pytest.fixture(scope="module")
def deployed(new_cluster: ClusterFactory, binaries: dict[str, str]) -> Iterator[Deployed]:
    started = time.monotonic()
    clusters = {role: new_cluster(f"mk-engine-{role}", aiperf=False, controllers=False) for role in ROLES.values()}
    engine = Engine(binaries, OUT / "engine" / "multikueue", clusters["manager"].kubeconfig, BUILD.PULUMI_KUBERNETES)
    work = engine.dir / "project"
    (work / "stacks").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / "Pulumi.yaml", work / "Pulumi.yaml")
    (work / "venv").symlink_to(ROOT / "venv")
    for stack, role in ROLES.items():
        config = e2e_config(FLEET / f"Pulumi.{stack}.yaml", KUEUE_MODULE, JOBSET_MODULE)
        config.pop(f"{PROJECT}:jobs", None)  # no operator runs here: the probe is a JobSet
        config[f"{PROJECT}:cluster"] = cluster_config(clusters[role])
        if stack in POOLS:
            config[f"{PROJECT}:inventory"] = {"headroom": 10, "pools": POOLS[stack]}
            # The worker mints its manager's token and exports the kubeconfig: its API server as the manager
            # reaches it (both on loopback here).
            config[f"{PROJECT}:multikueue"]["server"] = f"https://127.0.0.1:{clusters[role].ports.apiserver}"
        (work / "stacks" / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    states: dict[str, list[dict[str, Any]]] = {}
    with contextlib.ExitStack() as controllers:
        for role in ROLES.values():
            controllers.enter_context(ChartControllers(clusters[role]))
        run = Deployed(clusters, states, engine.state)
        run.seconds["clustersUp"] = round(time.monotonic() - started, 1)

        def up(stack: str) -> None:
            begun = time.monotonic()
            handle = engine.stack(stack, work)
            result = handle.up(color="never")
            assert result.summary.result == "succeeded", result.stderr
            states[stack] = list(engine.export(handle).get("resources", []))
            run.seconds[f"up {stack}" + (" again" if f"up {stack}" in run.seconds else "")] = round(
                time.monotonic() - begun, 1
            )

        for stack in ("gpu-east", "gpu-west"):
            up(stack)  # it mints its token and exports multikueueKubeconfig
            run.tokens.append(_minted_token(clusters[ROLES[stack]]))
        up("fleet")
        run.seconds["deployed"] = round(time.monotonic() - started, 1)
        yield run
    report = OUT / "multikueue" / "engine-report.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(json.dumps({"seconds": run.seconds}, indent=2) + "\n")


def test_no_kubeconfig_is_in_clear_in_any_state(deployed: Deployed) -> None:
    """The file backend's states as stored (the Automation API's export shows secrets: it runs --show-secrets)."""
    secrets = [r for r in deployed.states["fleet"] if r["type"] == "kubernetes:core/v1:Secret"]
    ours = sorted(n for r in secrets if (n := r["inputs"]["metadata"]["name"]).startswith("multikueue-"))
    assert ours == ["multikueue-east", "multikueue-west"]
    stored = sorted((deployed.state / ".pulumi" / "stacks" / PROJECT).glob("*.json"))
    assert [p.name for p in stored] == ["fleet.json", "gpu-east.json", "gpu-west.json"]
    for path in stored:
        text = path.read_text()
        assert "certificate-authority-data" not in text, path.name
        assert deployed.tokens and not any(token in text for token in deployed.tokens), path.name
    east = json.loads((deployed.state / ".pulumi" / "stacks" / PROJECT / "gpu-east.json").read_text())
    root = next(r for r in east["checkpoint"]["latest"]["resources"] if r["type"] == "pulumi:pulumi:Stack")
    assert sorted(root["outputs"]["multikueueKubeconfig"]) == [SECRET_SIG, "ciphertext"]


def test_a_jobset_submitted_on_the_deployed_manager_runs_on_the_worker_with_room(deployed: Deployed) -> None:
    manager, east, west = (deployed.clusters[r] for r in ("manager", "east", "west"))
    for name in ("east", "west"):
        _wait(
            f"MultiKueueCluster {name} Active",
            lambda n=name: any(
                c.get("type") == "Active" and c.get("status") == "True"
                for c in ((_get(manager, "multikueuecluster", n) or {}).get("status") or {}).get("conditions") or []
            ),
        )
    pod = {
        "restartPolicy": "Never",
        "containers": [
            {"name": "c", "image": "registry.invalid/probe:1", "resources": {"requests": {"cpu": "4", "memory": "1Gi"}}}
        ],
    }
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": PROBE, "namespace": NAMESPACE, "labels": {"kueue.x-k8s.io/queue-name": "aiperf-queue"}},
        "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {"template": {"spec": pod}}}}]},
    }
    started = time.monotonic()
    # The JobSet chart's webhook serves its own certificate once its controller has written it into the webhook
    # configuration: under load the first calls can fail TLS verification (seen once), so retry, bounded.
    _wait("the JobSet accepted on the manager", lambda: manager.apply([jobset], check=False).returncode == 0, 120)
    assert _get(manager, "jobset", PROBE, "-n", NAMESPACE)["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    remote = _wait("the JobSet on west", lambda: _get(west, "jobset", PROBE, "-n", NAMESPACE))
    assert remote["spec"].get("suspend") is False
    _wait("no JobSet on east", lambda: _get(east, "jobset", PROBE, "-n", NAMESPACE) is None)
    deployed.seconds["dispatch"] = round(time.monotonic() - started, 1)
