"""The load the upgrade e2es keep running through ``pulumi up``: JobSets on the benchmark namespace's LocalQueue, on a
living cluster (:mod:`tests.e2e.living`), as AIPerf's operator makes them.

Each JobSet asks for :data:`CPU` CPUs in one pod: one fits the ``dev`` stack's ClusterQueue (7.2 CPUs: 8 less its 10 %
headroom) and its one kwok node (8 CPUs), two do not. So the first is admitted and its pod placed by kube-scheduler on
the fleet's node and Running (kwok), and the second waits for quota with its Job suspended and no pod.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.e2e.cluster import LocalCluster, _deadline_loop
from tests.e2e.living import pods_by_jobset

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
