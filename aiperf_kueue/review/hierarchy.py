"""HEAD's queues as a tree: Cohorts (and their parents) → ClusterQueues → LocalQueues → namespaces, read from
its resources."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aiperf_kueue.review.resource_diff import CLUSTER_QUEUE_SUFFIX

LOCAL_QUEUE_SUFFIX = ":LocalQueue"
COHORT_SUFFIX = ":Cohort"


@dataclass(frozen=True)
class LocalQueueNode:
    """A LocalQueue in HEAD: its namespace, name and ClusterQueue."""

    namespace: str
    name: str
    cluster_queue: str


@dataclass(frozen=True)
class Hierarchy:
    """HEAD's queues: cohort → ClusterQueues → LocalQueues → namespaces."""

    cluster_queues: dict[str, str | None]
    """ClusterQueue → its cohort (``None``: none)."""

    local_queues: tuple[LocalQueueNode, ...]

    cohort_parents: dict[str, str] = field(default_factory=dict)
    """Cohort → its parent Cohort (``spec.parentName``), for the Cohorts that have one."""


def _sub(mapping: dict[str, Any], key: str) -> dict[str, Any]:
    """``mapping[key]`` when it is a mapping, else an empty one."""
    value = mapping.get(key)
    return value if isinstance(value, dict) else {}


def hierarchy(resources: list[dict[str, Any]]) -> Hierarchy:
    """Cohorts, ClusterQueues and LocalQueues as HEAD declares them (``spec.cohortName``,
    or ``spec.cohort`` before v1beta2; ``spec.clusterQueue``)."""
    cluster_queues: dict[str, str | None] = {}
    local_queues: list[LocalQueueNode] = []
    cohort_parents: dict[str, str] = {}
    for r in resources:
        inputs = _sub(r, "inputs")
        meta, spec = _sub(inputs, "metadata"), _sub(inputs, "spec")
        if r["type"].endswith(CLUSTER_QUEUE_SUFFIX) and isinstance(meta.get("name"), str):
            cohort = spec.get("cohortName", spec.get("cohort"))
            cluster_queues[meta["name"]] = cohort if isinstance(cohort, str) else None
        elif r["type"].endswith(COHORT_SUFFIX) and isinstance(meta.get("name"), str):
            parent = spec.get("parentName")
            if isinstance(parent, str) and parent:
                cohort_parents[meta["name"]] = parent
        elif r["type"].endswith(LOCAL_QUEUE_SUFFIX) and isinstance(meta.get("name"), str):
            local_queues.append(
                LocalQueueNode(str(meta.get("namespace", "")), meta["name"], str(spec.get("clusterQueue", "")))
            )
    return Hierarchy(cluster_queues, tuple(local_queues), cohort_parents)
