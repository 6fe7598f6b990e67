"""Reading a node: why it is left out, which taints are the pool's, which GPUs it has."""

from __future__ import annotations

from fractions import Fraction

from aiperf_kueue.config import Taint
from aiperf_kueue.inventory.node_list import parse_nodes
from tests.nodes_support import node, node_list


def test_reasons_a_node_is_left_out() -> None:
    being_deleted = node("w-5")
    being_deleted["metadata"]["deletionTimestamp"] = "2026-03-02T09:00:00Z"
    no_condition = node("w-6")
    no_condition["status"]["conditions"] = []
    nodes = parse_nodes(
        node_list(
            node("w-1"),
            node(
                "w-2", taints=[{"key": "ToBeDeletedByClusterAutoscaler", "value": "1772441000", "effect": "NoSchedule"}]
            ),
            node(
                "w-3",
                taints=[
                    {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"}
                ],
            ),
            # A control-plane node that takes workloads (PreferNoSchedule, or no taint: kind's single node) is a worker.
            node(
                "w-4",
                {"node-role.kubernetes.io/control-plane": ""},
                taints=[{"key": "node-role.kubernetes.io/control-plane", "effect": "PreferNoSchedule"}],
            ),
            being_deleted,
            no_condition,
            node(
                "cp-1", taints=[{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}], unschedulable=True
            ),
        ),
        "nodes.json",
    )
    assert {n.name: n.skip for n in nodes} == {
        "w-1": (),
        "w-2": ("being removed by the autoscaler (taint ToBeDeletedByClusterAutoscaler=1772441000:NoSchedule)",),
        "w-3": (
            "not initialised by the cloud provider yet "
            "(taint node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule)",
        ),
        "w-4": (),
        "w-5": ("being deleted (metadata.deletionTimestamp)",),
        "w-6": ("NotReady (no Ready condition reported)",),
        "cp-1": (
            "cordoned (spec.unschedulable)",
            "control-plane (taint node-role.kubernetes.io/master:NoSchedule)",
        ),
    }


def test_kubernetes_condition_taints_are_not_the_pools() -> None:
    taints = [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
        {"key": "dedicated", "value": "bench", "effect": "PreferNoSchedule"},
    ]
    (only,) = parse_nodes(node_list(node("g-1", taints=taints)), "nodes.json")
    assert only.pool_taints == (
        Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule"),
        Taint(key="dedicated", value="bench", effect="PreferNoSchedule"),
    )


def test_gpu_resources_whole_gpus_first_then_mig_slices_by_count() -> None:
    gpus = {
        "nvidia.com/mig-3g.40gb": "2",
        "nvidia.com/mig-1g.10gb": "7",
        "nvidia.com/gpu": "0",
        "amd.com/gpu": "8",
        "nvidia.com/mig-2g.20gb": "2",
    }
    (only,) = parse_nodes(node_list(node("g-1", gpus=gpus)), "nodes.json")
    assert only.gpu_resources() == {
        "amd.com/gpu": 8,
        "nvidia.com/mig-1g.10gb": 7,
        "nvidia.com/mig-2g.20gb": 2,
        "nvidia.com/mig-3g.40gb": 2,
    }
    assert only.gpu() == ("amd.com/gpu", 8)
    assert only.count("memory") == Fraction(32 * 2**30)


def test_a_single_node_document_is_a_list_of_one() -> None:
    (only,) = parse_nodes(node("w-1"), "node.json")
    assert (only.name, only.eligible) == ("w-1", True)
