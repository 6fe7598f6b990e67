"""Every committed stack (or ``make e2e STACKS=...``), applied to a fresh local cluster, answers as its plan says.

Per stack: the real CLI plans it; a fresh cluster starts with Kueue configured as the stack's Kueue install would
configure it; the released AIPerf operator runs with the env the program's operator patch sets; every object the
program declares is applied server-side in dependency order (a rejection by the API server or a webhook fails the
run, with the object and the message); every ClusterQueue must become Active and every LocalQueue ready. Then each
declared AIPerfJob is created on its own (an empty cluster, as the plan's admission proof assumes): the operator must
create a JobSet with the queue and priority labels, stored suspended; Kueue must create a Workload and admit it on the
flavors, with the pod counts and requests, that ``plan.json`` predicts.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from aiperf_kueue.common.quantity import canonical, parse
from tests.e2e.cluster import ClusterError, LocalCluster, _deadline_loop
from tests.e2e.conftest import OUT, ROOT, ClusterFactory, Report
from tests.e2e.nodes import create_nodes, declared_pools, node_objects
from tests.e2e.operator import resolve_to_loopback, start_operator
from tests.e2e.stackrun import Plan, apply_order, kueue_manager_config, object_of, operator_env, plan_stack, ref

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
ADMISSION_TIMEOUT = 90


def stack_files() -> list[Path]:
    """``STACKS`` from ``make e2e`` (paths), else every committed stack and the e2e suite's own stacks."""
    given = os.environ.get("AIPERF_KUEUE_E2E_STACKS", "").split()
    if given:
        return [Path(p).resolve() for p in given]
    own = [p for p in sorted((ROOT / "tests/e2e/stacks").glob("Pulumi.*.yaml")) if "never-fits" not in p.name]
    return sorted((ROOT / "stacks").glob("Pulumi.*.yaml")) + own  # never-fits: test_never_fits.py


def stack_id(path: Path) -> str:
    """``dev`` for ``Pulumi.dev.yaml``."""
    return path.name.removeprefix("Pulumi.").removesuffix(".yaml")


@dataclass
class JobResult:
    """What the cluster answered for one AIPerfJob."""

    name: str
    namespace: str
    cluster: dict[str, Any] = field(default_factory=dict)
    plan: dict[str, Any] = field(default_factory=dict)
    differences: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """Report form."""
        return {
            "name": self.name,
            "namespace": self.namespace,
            "cluster": self.cluster,
            "plan": self.plan,
            "match": not self.differences,
            "differences": self.differences,
        }


@dataclass
class StackRun:
    """One stack on its own cluster."""

    plan: Plan
    cluster: LocalCluster
    applied: list[str] = field(default_factory=list)
    rejections: list[dict[str, str]] = field(default_factory=list)
    queues: dict[str, Any] = field(default_factory=dict)
    jobs: list[JobResult] = field(default_factory=list)


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions", []) if c["type"] == kind), None)


def _apply_all(run: StackRun, objects: list[dict[str, Any]]) -> None:
    for obj in objects:
        if obj["kind"] == "Namespace" and obj.get("_patch"):
            obj = {k: v for k, v in obj.items() if k != "_patch"}
            # NamespacePatch: the namespace exists elsewhere; the program only adds labels and annotations.
            run.cluster.kubectl("create", "namespace", obj["metadata"]["name"], check=False)
        result = run.cluster.apply([obj], check=False)
        if result.returncode == 0:
            run.applied.append(ref(obj))
        else:
            run.rejections.append({"object": ref(obj), "message": result.stderr.strip()})


def _user_secrets(run: StackRun, jobs: list[dict[str, Any]]) -> None:
    """The Secrets the jobs read their endpoint credentials from, created as docs/secrets.md tells users to
    (``kubectl create secret generic NAME --from-literal=KEY=...``): the program never holds the key."""
    wanted: dict[tuple[str, str], set[str]] = {}
    for job in jobs:
        ns = job["metadata"]["namespace"]
        for env in ((job["spec"].get("podTemplate") or {}).get("env") or []):
            ref = (env.get("valueFrom") or {}).get("secretKeyRef")
            if ref:
                wanted.setdefault((ns, ref["name"]), set()).add(ref["key"])
    for (ns, name), keys in sorted(wanted.items()):
        literals = [f"--from-literal={k}=e2e-not-a-real-key" for k in sorted(keys)]
        run.cluster.kubectl("create", "secret", "generic", name, "-n", ns, *literals)


def _wait_queues(run: StackRun, cluster_queues: list[str], local_queues: list[tuple[str, str]]) -> None:
    state: dict[str, Any] = {}
    for _ in _deadline_loop("ClusterQueues Active and LocalQueues ready", 60, interval=0.5):
        cqs = {c["metadata"]["name"]: c for c in run.cluster.get_json("clusterqueues")["items"]}
        lqs = {
            (q["metadata"]["namespace"], q["metadata"]["name"]): q
            for q in run.cluster.get_json("localqueues", "-A")["items"]
        }
        state = {
            "clusterQueues": {n: (_condition(cqs.get(n, {}), "Active") or {}).get("status") for n in cluster_queues},
            "localQueues": {
                f"{ns}/{n}": (_condition(lqs.get((ns, n), {}), "Active") or {}).get("status") for ns, n in local_queues
            },
        }
        if all(v == "True" for part in state.values() for v in part.values()):
            break
    run.queues = state


def _jobset_created(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any] | None:
    """The JobSet as the operator sent it and as the API server stored it (after webhooks), from the audit log."""
    found = None
    for event in cluster.audit_events():
        obj = event.get("responseObject") or {}
        meta = obj.get("metadata") or {}
        # The operator's preflight dry-runs the create first (dryRun=All): not the JobSet it runs.
        if "dryRun=" in event.get("requestURI", ""):
            continue
        ok = event.get("responseStatus", {}).get("code", 0) < 300
        if ok and event.get("verb") == "create" and meta.get("namespace") == namespace and meta.get("name") == name:
            found = {"request": event.get("requestObject") or {}, "stored": obj}
    return found


def _sum_usage(assignments: list[dict[str, Any]]) -> dict[str, Fraction]:
    total: dict[str, Fraction] = {}
    for a in assignments:
        for resource, amount in (a.get("resourceUsage") or {}).items():
            total[resource] = total.get(resource, Fraction(0)) + parse(amount)
    return total


def _run_job(run: StackRun, job: dict[str, Any], plan_row: dict[str, Any]) -> JobResult:
    meta = job["metadata"]
    result = JobResult(meta["name"], meta["namespace"], plan=plan_row)
    cluster = run.cluster
    started = time.monotonic()
    applied = cluster.apply([job], check=False)
    if applied.returncode != 0:
        run.rejections.append({"object": ref(job), "message": applied.stderr.strip()})
        result.cluster = {"admitted": False, "rejected": applied.stderr.strip()}
        result.differences = [f"rejected by the API server: {applied.stderr.strip()}"]
        return result
    aiperf_job: dict[str, Any] = {}
    jobset: dict[str, Any] | None = None
    try:
        for _ in _deadline_loop(f"the operator's JobSet for {ref(job)}", ADMISSION_TIMEOUT, interval=0.5):
            aiperf_job = cluster.get_json("aiperfjob", meta["name"], "-n", meta["namespace"])
            status = aiperf_job.get("status") or {}
            if status.get("phase") == "Failed":
                break
            name = status.get("jobSetName")
            if name and (jobset := _jobset_created(cluster, meta["namespace"], name)):
                break
    except ClusterError:
        pass
    status = aiperf_job.get("status") or {}
    if jobset is None:
        result.cluster = {"admitted": False, "operator": status.get("phase"), "error": status.get("error")}
        result.differences = [
            f"the operator created no JobSet (phase {status.get('phase')}): {status.get('error') or 'no error given'}"
        ]
        return result
    stored, request = jobset["stored"], jobset["request"]
    labels = stored["metadata"].get("labels", {})
    workload: dict[str, Any] = {}
    try:
        for _ in _deadline_loop(f"Kueue's admission of {ref(job)}", ADMISSION_TIMEOUT, interval=0.5):
            workloads = cluster.get_json("workloads", "-n", meta["namespace"])["items"]
            mine = [
                w for w in workloads
                if any(o.get("uid") == stored["metadata"]["uid"] for o in w["metadata"].get("ownerReferences", []))
            ]
            if mine:
                workload = mine[0]
                if (workload.get("status") or {}).get("admission"):
                    break
    except ClusterError:
        pass
    seconds = round(time.monotonic() - started, 1)
    admission = (workload.get("status") or {}).get("admission") or {}
    assignments = admission.get("podSetAssignments", [])
    flavors: dict[str, str] = {}
    for a in assignments:
        for resource, flavor in (a.get("flavors") or {}).items():
            flavors[f"{a['name']}/{resource}"] = flavor
    usage = _sum_usage(assignments)
    pending = _condition(workload, "QuotaReserved") or {}
    result.cluster = {
        "admitted": bool(admission),
        "clusterQueue": admission.get("clusterQueue"),
        "workload": workload.get("metadata", {}).get("name"),
        "queueLabel": labels.get(QUEUE_LABEL),
        "priorityLabel": labels.get(PRIORITY_LABEL),
        "storedSuspended": stored.get("spec", {}).get("suspend"),
        "operatorSentSuspend": request.get("spec", {}).get("suspend"),
        "podSets": [{"name": p["name"], "count": p["count"]} for p in (workload.get("spec") or {}).get("podSets", [])],
        "pods": sum(p["count"] for p in (workload.get("spec") or {}).get("podSets", [])),
        "flavors": flavors,
        "requests": {k: str(canonical(k, v)) for k, v in sorted(usage.items()) if v},
        "secondsToAdmission": seconds if admission else None,
        "pendingMessage": pending.get("message") if not admission else None,
    }
    if admission:
        # What the ClusterQueue borrowed from its cohort while this job alone ran on it.
        cq: dict[str, Any] = {}
        for _ in _deadline_loop("the ClusterQueue's status to count the admitted job", 30, interval=0.5):
            cq = cluster.get_json("clusterqueue", admission["clusterQueue"])
            if (cq.get("status") or {}).get("admittedWorkloads", 0) >= 1:
                break
        borrowed = [
            r for f in (cq.get("status") or {}).get("flavorsUsage", []) for r in f.get("resources", [])
            if parse(str(r.get("borrowed", "0"))) > 0
        ]
        result.cluster["borrowing"] = bool(borrowed)
    result.differences = compare(result.cluster, plan_row, usage)
    return result


def compare(real: dict[str, Any], plan: dict[str, Any], usage: dict[str, Fraction]) -> list[str]:
    """Every way the cluster's answer differs from the plan's prediction."""
    out = []
    if real["admitted"] != plan["fits"]:
        out.append(f"admitted {real['admitted']}, plan fits {plan['fits']}")
    if real["queueLabel"] != plan["queue"]:
        out.append(f"queue label {real['queueLabel']!r}, plan {plan['queue']!r}")
    if real["priorityLabel"] != plan.get("priorityClass"):
        out.append(f"priority label {real['priorityLabel']!r}, plan {plan.get('priorityClass')!r}")
    if real["storedSuspended"] is not True:
        out.append(f"JobSet stored with suspend={real['storedSuspended']!r}")
    if real["pods"] != plan["pods"]:
        out.append(f"{real['pods']} pods, plan {plan['pods']}")
    if real["admitted"]:
        if real["clusterQueue"] != plan["clusterQueue"]:
            out.append(f"ClusterQueue {real['clusterQueue']}, plan {plan['clusterQueue']}")
        planned = {k: parse(v) for k, v in plan["requests"].items()}
        if {k: v for k, v in usage.items() if v} != planned:
            out.append(f"requests {real['requests']}, plan {plan['requests']}")
        if real.get("borrowing") != plan.get("borrowing"):
            out.append(f"borrowing {real.get('borrowing')}, plan {plan.get('borrowing')}")
        if sorted(set(real["flavors"].values())) != sorted(plan["flavor"]):
            out.append(f"flavors {sorted(set(real['flavors'].values()))}, plan {plan['flavor']}")
    return out


def _delete_job(run: StackRun, job: dict[str, Any]) -> None:
    meta = job["metadata"]
    run.cluster.kubectl("delete", "aiperfjob", meta["name"], "-n", meta["namespace"], "--wait=false", check=False)
    for _ in _deadline_loop(f"{ref(job)} and its Workload gone", 90, interval=0.5):
        left = run.cluster.get_json("workloads", "-n", meta["namespace"])["items"]
        js = run.cluster.get_json("jobsets", "-n", meta["namespace"])["items"]
        if not left and not js:
            return


@pytest.fixture(scope="module", params=stack_files(), ids=stack_id)
def stack_run(
    request: pytest.FixtureRequest, new_cluster: ClusterFactory, aiperf_venv: Path, report: Report
) -> Iterator[StackRun]:
    """Plan, start, apply, then create every job in turn; the report is written whatever the assertions say."""
    path: Path = request.param
    plan = plan_stack(path, OUT / "plans" / stack_id(path))
    cluster = new_cluster(stack_id(path), kueue_manager_config(plan))
    run = StackRun(plan, cluster)
    ordered = apply_order(plan.resources)
    objects: list[dict[str, Any]] = []
    jobs: list[dict[str, Any]] = []
    for resource in ordered:
        obj = object_of(resource)
        if resource["type"].endswith("NamespacePatch"):
            obj["_patch"] = True
        (jobs if obj["kind"] == "AIPerfJob" else objects).append(obj)
    create_nodes(cluster, node_objects(declared_pools(path)))
    resolve_to_loopback(u for j in jobs for u in j["spec"]["benchmark"]["endpoint"].get("urls", []))
    start_operator(cluster, aiperf_venv, operator_env(plan), cluster.dir)
    _apply_all(run, objects)
    _user_secrets(run, jobs)
    cqs = [o["metadata"]["name"] for o in objects if o["kind"] == "ClusterQueue"]
    lqs = [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects if o["kind"] == "LocalQueue"]
    _wait_queues(run, cqs, lqs)
    # An AIPerfJob is named <config name>-<digest of its spec>: plan.json's rows carry that name as objectName.
    rows = {(r["namespace"], r["objectName"]): r for r in plan.data.get("jobs", [])}
    for job in jobs:
        meta = job["metadata"]
        row = rows.get((meta["namespace"], meta["name"]), {})
        run.jobs.append(_run_job(run, job, row))
        _delete_job(run, job)
    report.stacks[plan.stack] = {
        "stackFile": str(path),
        "applied": len(run.applied),
        "rejections": run.rejections,
        "queues": run.queues,
        "jobs": [j.as_dict() for j in run.jobs],
    }
    yield run
    cluster.stop()


def test_nothing_rejected(stack_run: StackRun) -> None:
    assert stack_run.rejections == []


def test_queues_active(stack_run: StackRun) -> None:
    # Every queue the plan declares, each Active (an empty set would prove nothing: a stack has both kinds).
    planned_cqs = sorted(stack_run.plan.data["quotas"])
    planned_lqs = sorted(f"{ns}/{q}" for ns, queues in stack_run.plan.data["localQueues"].items() for q in queues)
    assert (sorted(stack_run.queues["clusterQueues"]), sorted(stack_run.queues["localQueues"])) == (
        planned_cqs,
        planned_lqs,
    )
    assert len(planned_cqs) >= 1 and len(planned_lqs) >= 1
    statuses = {v for part in stack_run.queues.values() for v in part.values()}
    assert statuses == {"True"}, json.dumps(stack_run.queues, indent=1)


def test_every_declared_job_answers_as_planned(stack_run: StackRun) -> None:
    declared = [r["name"] for r in stack_run.plan.data.get("jobs", [])]
    assert len(stack_run.jobs) >= len(declared)
    assert {j.name: j.differences for j in stack_run.jobs} == {j.name: [] for j in stack_run.jobs}
