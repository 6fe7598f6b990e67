"""Kueue 0.20's API surface, emulated on the real 0.19.2 cluster: the released AIPerf 0.13.0 operator against it.

**An emulation of 0.20's API surface, not Kueue 0.20 itself** (docs/e2e.md): the Go module proxy serves no Kueue
0.20.x, so this runs Kueue 0.19.2 and patches every ``kueue.x-k8s.io`` CRD to ``served: false`` for v1beta1, which
is what 0.20 changed for a client (issue 31). Kueue's controller works through v1beta2 (its storage version from
0.16) and goes on admitting; the operator, which reads LocalQueues only through v1beta1, gets the API server's 404.

The dev stack, pinned to Kueue 0.20.7, is planned by the real CLI and applied; the operator runs with the env the
program sets (its default queue ``aiperf-queue``). Then:

- the declared AIPerfJob (no ``queueName``, as the plan writes it on 0.20) gets a JobSet labelled with the default
  queue, stored suspended, and Kueue admits its Workload exactly as ``plan.json`` predicts;
- the same job with ``spec.scheduling.queueName`` (what ``aiperf kube profile --queue-name`` writes) is Failed by
  the operator's preflight with the message the plan's preflight table predicts for that route.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.cluster import LocalCluster, _deadline_loop
from tests.e2e.conftest import OUT, ROOT, ClusterFactory, Report
from tests.e2e.nodes import create_nodes, declared_pools, node_objects
from tests.e2e.operator import resolve_to_loopback, start_operator
from tests.e2e.stackrun import Plan, apply_order, kueue_manager_config, object_of, operator_env, plan_stack
from tests.e2e.test_stacks import StackRun, _apply_all, _delete_job, _run_job, _wait_queues

GROUP = "kueue.x-k8s.io"
NAMESPACE, QUEUE = "aiperf-benchmarks", "aiperf-queue"


def unserve_v1beta1(cluster: LocalCluster) -> list[str]:
    """Patch every Kueue CRD to stop serving v1beta1 (storage stays v1beta2), then wait until the API server's
    discovery drops the group version. Returns the CRDs patched."""
    patched = []
    for crd in cluster.get_json("crds")["items"]:
        if crd["spec"]["group"] != GROUP:
            continue
        versions = [v["name"] for v in crd["spec"]["versions"]]
        if "v1beta1" not in versions:
            continue
        index = versions.index("v1beta1")
        patch = f'[{{"op":"replace","path":"/spec/versions/{index}/served","value":false}}]'
        cluster.kubectl("patch", "crd", crd["metadata"]["name"], "--type=json", "-p", patch)
        patched.append(crd["metadata"]["name"])
    for _ in _deadline_loop(f"{GROUP}/v1beta1 gone from discovery", 60, interval=0.5):
        if cluster.kubectl("get", "--raw", f"/apis/{GROUP}/v1beta1", check=False).returncode != 0:
            break
    return sorted(patched)


@dataclass
class Emulated:
    """The planned stack on its cluster, the CRDs patched, and the AIPerfJobs it declares (not yet created)."""

    plan: Plan
    run: StackRun
    patched: list[str]
    jobs: list[dict[str, Any]]


@pytest.fixture(scope="module")
def emulated(new_cluster: ClusterFactory, aiperf_venv: Path, report: Report) -> Emulated:
    """The dev stack pinned to 0.20.7, planned and applied to a 0.19.2 cluster whose Kueue CRDs serve v1beta2 only."""
    stack_file = OUT / "stacks" / "Pulumi.kueue-v1beta1-gone.yaml"
    stack_file.parent.mkdir(parents=True, exist_ok=True)
    dev = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text()
    assert "version: 0.19.2" in dev
    stack_file.write_text(dev.replace("version: 0.19.2", "version: 0.20.7"))
    plan = plan_stack(stack_file, OUT / "plans" / "kueue-v1beta1-gone")
    cluster = new_cluster("kueue-v1beta1-gone", kueue_manager_config(plan))
    patched = unserve_v1beta1(cluster)
    run = StackRun(plan, cluster)
    ordered = [object_of(r) for r in apply_order(plan.resources)]
    objects = [o for o in ordered if o["kind"] != "AIPerfJob"]
    jobs = [o for o in ordered if o["kind"] == "AIPerfJob"]
    create_nodes(cluster, node_objects(declared_pools(stack_file)))  # the operator's node checks read them
    resolve_to_loopback(u for j in jobs for u in j["spec"]["benchmark"]["endpoint"].get("urls", []))
    start_operator(cluster, aiperf_venv, operator_env(plan), cluster.dir)
    _apply_all(run, objects)
    cqs = [o["metadata"]["name"] for o in objects if o["kind"] == "ClusterQueue"]
    lqs = [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects if o["kind"] == "LocalQueue"]
    _wait_queues(run, cqs, lqs)
    report.checks["kueueV1beta1GoneEmulation"] = {"crdsUnserved": patched}
    return Emulated(plan, run, patched, jobs)


def test_every_kueue_crd_serves_only_v1beta2(emulated: Emulated) -> None:
    run, patched = emulated.run, emulated.patched
    # At least every kind the program writes or the operator reads; 0.19.2 has more (MultiKueue, Topology, ...).
    assert {
        "clusterqueues.kueue.x-k8s.io",
        "cohorts.kueue.x-k8s.io",
        "localqueues.kueue.x-k8s.io",
        "resourceflavors.kueue.x-k8s.io",
        "workloadpriorityclasses.kueue.x-k8s.io",
        "workloads.kueue.x-k8s.io",
    } <= set(patched), patched
    for name in patched:
        crd = run.cluster.get_json("crd", name)
        served = {v["name"]: v["served"] for v in crd["spec"]["versions"]}
        assert served.get("v1beta1") is False and served.get("v1beta2") is True, (name, served)
    lq_v1beta1 = run.cluster.kubectl(
        "get", "--raw", f"/apis/{GROUP}/v1beta1/namespaces/{NAMESPACE}/localqueues/{QUEUE}", check=False
    )
    assert lq_v1beta1.returncode != 0 and "NotFound" in lq_v1beta1.stderr, lq_v1beta1.stderr
    assert run.rejections == []
    assert run.queues == {
        "clusterQueues": {"benchmarks": "True"},
        "localQueues": {f"{NAMESPACE}/{QUEUE}": "True"},
    }


def test_the_default_queue_route_is_admitted_through_v1beta2(emulated: Emulated, report: Report) -> None:
    plan, run = emulated.plan, emulated.run
    (job,) = emulated.jobs
    assert job["spec"]["scheduling"] == {}
    (row,) = plan.data["jobs"]
    result = _run_job(run, job, row)
    report.checks["kueueV1beta1GoneDefaultQueue"] = result.as_dict()
    _delete_job(run, job)
    assert result.differences == []
    assert (result.cluster["admitted"], result.cluster["queueLabel"], result.cluster["storedSuspended"]) == (
        True,
        QUEUE,
        True,
    )
    (preflight,) = [r for r in plan.data["preflight"] if r["kind"] == "AIPerfJob"]
    assert (preflight["status"], preflight["message"]) == ("SKIP", "Kueue not installed (queue check skipped)")


def test_an_explicit_queue_fails_the_released_operators_preflight(emulated: Emulated, report: Report) -> None:
    plan, run = emulated.plan, emulated.run
    (declared,) = emulated.jobs
    job: dict[str, Any] = copy.deepcopy(declared)
    job["metadata"]["name"] = "smoke-queue-name"
    job["spec"]["scheduling"] = {"queueName": QUEUE}
    run.cluster.apply([job])
    status: dict[str, Any] = {}
    for _ in _deadline_loop("the operator's verdict on smoke-queue-name", 90, interval=0.5):
        status = run.cluster.get_json("aiperfjob", "smoke-queue-name", "-n", NAMESPACE).get("status") or {}
        if status.get("phase") in ("Failed", "Running", "Queued", "Initializing"):
            break
    report.checks["kueueV1beta1GoneExplicitQueue"] = {"phase": status.get("phase"), "error": status.get("error")}
    (row,) = [r for r in plan.data["preflight"] if r["kind"] == "aiperf kube profile" and r["queueName"] == QUEUE]
    assert (row["status"], row["message"]) == (
        "FAIL",
        "Kueue is not installed, but LocalQueue 'aiperf-queue' was explicitly requested. Install Kueue or remove "
        "scheduling.queueName from spec.",
    )
    assert (status.get("phase"), status.get("error")) == ("Failed", f"Pre-flight failed: Kueue Queue: {row['message']}")
    assert run.cluster.get_json("jobsets", "-n", NAMESPACE)["items"] == []
