"""Node objects for a stack's declared inventory, created through the API (no kubelet).

The AIPerf operator's preflight reads the cluster's Nodes ("can any node fit the largest pod?"), so the e2e cluster
needs Nodes that look like the cluster the stack describes: per pool, ``nodes`` Nodes with the pool's labels, taints
and per-node allocatable CPU, memory and GPUs, and a Ready condition. kube-controller-manager runs without the node
lifecycle controller, so nothing marks them unreachable for lack of heartbeats.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.cluster import LocalCluster

PROJECT = "aiperf-kueue"


def declared_pools(stack_file: Path) -> list[dict[str, Any]]:
    """The ``aiperf-kueue:inventory`` pools exactly as the stack file writes them."""
    config = (yaml.safe_load(stack_file.read_text()) or {}).get("config") or {}
    inventory = config.get(f"{PROJECT}:inventory") or {}
    return list(inventory.get("pools") or [])


def node_objects(pools: Iterable[Mapping[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(Node, status) per declared node, named ``<pool>-<n>``."""
    out = []
    for pool in pools:
        allocatable: dict[str, str] = {"cpu": str(pool["cpu"]), "memory": str(pool["memory"]), "pods": "110"}
        if pool.get("gpus"):
            allocatable[str(pool.get("gpuResource") or "nvidia.com/gpu")] = str(pool["gpus"])
        for i in range(int(pool["nodes"])):
            name = f"{pool['name']}-{i}"
            labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **(pool.get("nodeLabels") or {})}
            spec: dict[str, Any] = {}
            if pool.get("nodeTaints"):
                spec["taints"] = [dict(t) for t in pool["nodeTaints"]]
            node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": spec}
            out.append((node, ready_status(allocatable)))
    return out


def ready_status(allocatable: Mapping[str, str]) -> dict[str, Any]:
    """A Node status with ``allocatable`` (= capacity) and a Ready condition."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "capacity": dict(allocatable),
        "allocatable": dict(allocatable),
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "e2e node (no kubelet)",
                "lastHeartbeatTime": now,
                "lastTransitionTime": now,
            }
        ],
    }


def create_nodes(cluster: LocalCluster, nodes: Iterable[tuple[dict[str, Any], dict[str, Any]]]) -> list[str]:
    """Create each Node, then set its status through the status subresource; return the names."""
    names = []
    for node, status in nodes:
        cluster.apply([node])
        cluster.kubectl(
            "patch", "node", node["metadata"]["name"], "--subresource=status", "--type=merge",
            "-p", json.dumps({"status": status}),
        )
        # The TaintNodesByCondition admission plugin taints every new Node not-ready; the node lifecycle
        # controller (off here, see the module docstring) would lift it once Ready.
        cluster.kubectl("taint", "node", node["metadata"]["name"], "node.kubernetes.io/not-ready:NoSchedule-")
        names.append(node["metadata"]["name"])
    return names
