"""The load the upgrade e2es keep running through ``pulumi up``: JobSets on the benchmark namespace's LocalQueue, on a
living cluster (:mod:`tests.e2e.living`), as AIPerf's operator makes them.

Each JobSet asks for :data:`CPU` CPUs in one pod: one fits the ``dev`` stack's ClusterQueue (7.2 CPUs: 8 less its 10 %
headroom) and its one kwok node (8 CPUs), two do not. So the first is admitted and its pod placed by kube-scheduler on
the fleet's node and Running (kwok), and the second waits for quota with its Job suspended and no pod.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from tests.e2e.cluster import LocalCluster, _deadline_loop, module_dir
from tests.e2e.engine import PROJECT
from tests.e2e.living import pods_by_jobset
from tests.support import missing_input

NAMESPACE = "aiperf-benchmarks"
QUEUE = "aiperf-queue"
#: Each JobSet's one pod asks for this many CPUs.
CPU = "5"
#: The ``dev`` stack's one fleet node (its pool ``default``, one node).
NODE = "default-0"


def jobset(name: str) -> dict[str, Any]:
    """A JobSet of one Job of one pod on the namespace's LocalQueue (its image is never pulled: kwok runs the pod)."""
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"kueue.x-k8s.io/queue-name": QUEUE}},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "bench",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "parallelism": 1,
                            "completions": 1,
                            "backoffLimit": 0,
                            "template": {
                                "spec": {
                                    "restartPolicy": "Never",
                                    "containers": [
                                        {
                                            "name": "bench",
                                            "image": "registry.invalid/never-pulled:1",
                                            "resources": {"requests": {"cpu": CPU, "memory": "1Gi"}},
                                        }
                                    ],
                                }
                            },
                        }
                    },
                }
            ]
        },
    }


def owned(cluster: LocalCluster, resource: str, owner_kind: str) -> dict[str, dict[str, Any]]:
    """The ``resource`` objects of the benchmark namespace whose first owner is a ``owner_kind``, by owner name."""
    out = {}
    for item in cluster.get_json(resource, "-n", NAMESPACE)["items"]:
        owners = item["metadata"].get("ownerReferences") or []
        if owners and owners[0]["kind"] == owner_kind:
            out[owners[0]["name"]] = item
    return out


def workloads(cluster: LocalCluster) -> dict[str, dict[str, Any]]:
    """JobSet name → its Workload."""
    return owned(cluster, "workloads.kueue.x-k8s.io", "JobSet")


def admission(workload: dict[str, Any]) -> dict[str, Any] | None:
    """The Workload's admission: its ClusterQueue and, per pod set, its flavors and count (None while pending)."""
    admitted = (workload.get("status") or {}).get("admission")
    if not admitted:
        return None
    return {
        "clusterQueue": admitted["clusterQueue"],
        "podSets": [
            {"name": p["name"], "flavors": p.get("flavors"), "count": p.get("count")}
            for p in admitted["podSetAssignments"]
        ],
    }


def pending_reason(workload: dict[str, Any]) -> str | None:
    """The reason of a ``QuotaReserved: False`` condition (None when quota is reserved or nothing was said yet)."""
    for condition in (workload.get("status") or {}).get("conditions") or []:
        if condition["type"] == "QuotaReserved" and condition["status"] == "False":
            return str(condition["reason"])
    return None


def evictions(workload: dict[str, Any]) -> dict[str, list[str]]:
    """What would say the Workload lost its admission at some point: the evictions Kueue counts in
    ``status.schedulingStats`` and the ``Evicted``/``Preempted`` conditions that are True (an evicted Workload keeps
    them, with the reason, until it is admitted again)."""
    status = workload.get("status") or {}
    return {
        "schedulingStats.evictions": sorted(
            f"{e.get('reason')}/{e.get('underlyingCause', '')}: {e.get('count')}"
            for e in (status.get("schedulingStats") or {}).get("evictions") or []
        ),
        "conditions": sorted(
            f"{c['type']}: {c.get('reason')}"
            for c in status.get("conditions") or []
            if c["type"] in ("Evicted", "Preempted") and c["status"] == "True"
        ),
    }


NOT_EVICTED: dict[str, list[str]] = {"schedulingStats.evictions": [], "conditions": []}


def pods(cluster: LocalCluster) -> dict[str, list[dict[str, Any]]]:
    """JobSet name → its pods that are not being deleted, each as ``{uid, node, phase, restarts}`` (``restarts``: of
    its containers, as kwok reports them)."""
    items = cluster.get_json("pods", "-n", NAMESPACE, "-l", "jobset.sigs.k8s.io/jobset-name")["items"]
    return {
        name: [
            {
                "uid": p["metadata"]["uid"],
                "node": p["spec"].get("nodeName"),
                "phase": p["status"].get("phase"),
                "restarts": sum(c.get("restartCount", 0) for c in p["status"].get("containerStatuses") or []),
            }
            for p in group
            if not p["metadata"].get("deletionTimestamp")
        ]
        for (_, name), group in pods_by_jobset(items).items()
    }


def running_on(node: str, group: list[dict[str, Any]]) -> bool:
    """One pod, Running on ``node``, never restarted."""
    return [(p["node"], p["phase"], p["restarts"]) for p in group] == [(node, "Running", 0)]


def jobset_status(cluster: LocalCluster, name: str) -> dict[str, Any]:
    """The JobSet's restarts (the field is left out while 0) and its replicated jobs' counts."""
    status = cluster.get_json("jobsets.jobset.x-k8s.io", name, "-n", NAMESPACE).get("status") or {}
    return {
        "restarts": status.get("restarts", 0),
        "replicatedJobsStatus": [
            {k: r.get(k, 0) for k in ("name", "active", "ready", "succeeded", "failed", "suspended")}
            for r in status.get("replicatedJobsStatus") or []
        ],
    }


def wait_for(what: str, check: Callable[[], object], timeout: float = 180) -> None:
    """Poll ``check`` every 2 s until it is truthy; fail naming ``what`` after ``timeout`` s."""
    for _ in _deadline_loop(what, timeout, interval=2):
        if check():
            return


#: The first JobSet's status while its one pod runs: never restarted, its Job active and ready.
ONE_POD_RUNNING = {
    "restarts": 0,
    "replicatedJobsStatus": [{"name": "bench", "active": 1, "ready": 1, "succeeded": 0, "failed": 0, "suspended": 0}],
}
#: The first JobSet's admission, before and after either upgrade.
ADMITTED = {
    "clusterQueue": "benchmarks",
    "podSets": [{"name": "bench", "flavors": {"cpu": "default", "memory": "default"}, "count": 1}],
}


def pinned(config: dict[str, Any], key: str, module: str, version: str, **extra: str) -> dict[str, Any]:
    """CONFIG with the ``<project>:<key>`` install (``kueue`` or ``jobset``) pinned to VERSION, its chart from
    that release's module zip (``charts/<key>`` of MODULE), and EXTRA settings."""
    out = copy.deepcopy(config)
    out[f"{PROJECT}:{key}"] = {
        **(out.get(f"{PROJECT}:{key}") or {}),
        "version": version,
        **extra,
        "chart": str(module_dir(module) / "charts" / key),
    }
    return out


def require_binary(binaries: dict[str, str], name: str, what: str) -> None:
    """Fail (under ``CI=true``) or skip when the e2e manifest has no NAME binary (the old release of WHAT)."""
    if not Path(binaries.get(name, "")).is_file():
        missing_input(
            f"no {name} binary in the e2e manifest: build it with `python3 e2e/build.py --manifest "
            f"out/e2e/binaries.json` (the upgrade e2e runs the {what} version the stack pins)"
        )


def steps_of(events: Iterable[Mapping[str, Any]]) -> dict[str, Counter[str]]:
    """Engine steps of the last ``up`` per resource type: ``{type: Counter(op)}`` (``same`` left out)."""
    out: dict[str, Counter[str]] = {}
    for event in events:
        if event["op"] not in ("outputs", "same", "read", "refresh"):
            out.setdefault(event["type"], Counter())[event["op"]] += 1
    return out


def deletes_and_replaces(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """``<kind> <name> <op>`` of every delete and replace step of the last ``up``, sorted."""
    return sorted(
        {
            f"{e['type'].rsplit(':', 1)[1]} {e['urn'].rsplit('::', 1)[1]} {e['op']}"
            for e in events
            if e["op"] in ("delete", "replace", "delete-replaced")
        }
    )


def start_load(
    cluster: LocalCluster, what: str, also: Callable[[], bool] = lambda: True
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Submit the load before the upgrade and check it: the first JobSet admitted (:data:`ADMITTED`; WHAT names the
    wait, ALSO must hold too), its one pod Running on :data:`NODE`, its JobSet :data:`ONE_POD_RUNNING`; then the second,
    pending, with no pod. Returns the Workloads and the first's pod."""
    cluster.apply([jobset("first")])
    wait_for(
        what,
        lambda: (
            admission(workloads(cluster).get("first", {}))
            and also()
            and running_on(NODE, pods(cluster).get("first", []))
            # the Job controller counts the pod ready, then JobSet its Job
            and jobset_status(cluster, "first") == ONE_POD_RUNNING
        ),
    )
    cluster.apply([jobset("second")])
    wait_for(
        "the second JobSet's Workload to wait for quota", lambda: pending_reason(workloads(cluster).get("second", {}))
    )
    before_wl = workloads(cluster)
    assert admission(before_wl["first"]) == ADMITTED
    assert admission(before_wl["second"]) is None
    assert pending_reason(before_wl["second"]) == "Pending"
    before_pods = pods(cluster)
    (first_pod,) = before_pods["first"]
    assert (first_pod["node"], first_pod["phase"], first_pod["restarts"]) == (NODE, "Running", 0)
    assert "second" not in before_pods  # its Job is suspended: no pod
    assert jobset_status(cluster, "first") == ONE_POD_RUNNING
    return before_wl, first_pod


def assert_kept(cluster: LocalCluster, first_pod: dict[str, Any]) -> None:
    """After the upgrade: the first kept, not taken back and given again (its admission, never evicted or
    preempted, the same pod Running on the same node, its JobSet never restarted); the second still pending."""
    after_wl = workloads(cluster)
    assert admission(after_wl["first"]) == ADMITTED
    assert evictions(after_wl["first"]) == NOT_EVICTED
    # The same pod (a phase never goes back to Running, and kwok counts container restarts).
    assert pods(cluster)["first"] == [first_pod]
    assert jobset_status(cluster, "first") == ONE_POD_RUNNING
    assert pending_reason(after_wl["second"]) == "Pending"
    assert "second" not in pods(cluster)


def second_runs_once_first_leaves(
    cluster: LocalCluster, what: str, also: Callable[[], bool] = lambda: True
) -> dict[str, dict[str, Any]]:
    """Delete the first JobSet and wait (WHAT names the wait) until the second is admitted, ALSO holds and its pod
    Runs where the first's did; check it was admitted as the first was and never evicted. Returns the Workloads."""
    cluster.kubectl("delete", "jobset", "first", "-n", NAMESPACE, "--wait=false")
    wait_for(
        what,
        lambda: (
            "first" not in workloads(cluster)
            and admission(workloads(cluster).get("second", {}))
            and also()
            and running_on(NODE, pods(cluster).get("second", []))
        ),
    )
    final = workloads(cluster)
    assert admission(final["second"]) == ADMITTED
    assert evictions(final["second"]) == NOT_EVICTED
    assert [(p["node"], p["phase"], p["restarts"]) for p in pods(cluster)["second"]] == [(NODE, "Running", 0)]
    return final
