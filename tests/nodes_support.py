"""Small Node objects in the documented shape, for tests that need a node list of their own."""

from __future__ import annotations

from typing import Any


def node(
    name: str,
    labels: dict[str, str] | None = None,
    *,
    cpu: str = "8",
    memory: str = "32Gi",
    gpus: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    ready: str = "True",
    unschedulable: bool = False,
) -> dict[str, Any]:
    """A Node as `kubectl get nodes -o json` lists it (the fields the inventory reads, and a few more)."""
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110", **(gpus or {})}
    spec: dict[str, Any] = {"podCIDR": "10.244.0.0/24"}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {
            "allocatable": allocatable,
            "capacity": allocatable,
            "conditions": [{"type": "Ready", "status": ready, "reason": "KubeletReady"}],
        },
    }


def node_list(*nodes: dict[str, Any]) -> dict[str, Any]:
    """``kubectl get nodes -o json`` of these nodes."""
    return {"apiVersion": "v1", "kind": "List", "items": list(nodes), "metadata": {"resourceVersion": ""}}
