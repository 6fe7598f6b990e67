"""``aiperf-kueue drift``: each discrepancy between a stack's pools and the nodes, and the exit codes."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aiperf_kueue.cli.cli import main
from aiperf_kueue.inventory.drift import compare
from aiperf_kueue.inventory.node_list import parse_nodes
from aiperf_kueue.stackfile.loader import read_stack
from tests.support import STACKS, plan_values, stack_values

NODES = Path(__file__).parent / "nodes"
#: What the cluster in tests/nodes/prod.json has: every pool of stacks/Pulumi.prod.yaml, at or above what it declares.
PROD_NODES = json.loads((NODES / "prod.json").read_text())

Edit = Callable[[dict[str, Any], dict[str, dict[str, Any]]], None]


def findings(edit: Edit) -> list[dict[str, Any]]:
    """Drift of the prod stack against prod.json after ``edit(document, nodes by name)``."""
    document = copy.deepcopy(PROD_NODES)
    edit(document, {n["metadata"]["name"]: n for n in document["items"]})
    config, plan = plan_values(stack_values("prod")[0])
    return [f.as_dict() for f in compare(config, plan, parse_nodes(document, "nodes.json")).findings]


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def h100_shortfall(gpus: dict[str, Any]) -> dict[str, Any]:
    """gpu-h100 with one of its 4 nodes gone: a quarter of each ClusterQueue's cpu and memory quota has no node
    behind it (shares team-a 50, team-b 25, research 25 of 4 × 190 × 0.95 = 722 cpu and 7220Gi)."""
    return {
        "cpu": {
            "nominalQuota": "722",
            "backed": "541500m",
            "missing": "180500m",
            "byClusterQueue": {"team-a": "90250m", "team-b": "45125m", "research": "45125m"},
        },
        "memory": {
            "nominalQuota": "7220Gi",
            "backed": "5415Gi",
            "missing": "1805Gi",
            "byClusterQueue": {"team-a": "924160Mi", "team-b": "462080Mi", "research": "462080Mi"},
        },
        "nvidia.com/gpu": {"nominalQuota": "32", **gpus},
    }


def h100_message(gpus: str) -> str:
    return (
        "cpu: nominalQuota 722, the Ready nodes back 541500m, 180500m promised without capacity (team-a 90250m, "
        "team-b 45125m, research 45125m); memory: nominalQuota 7220Gi, the Ready nodes back 5415Gi, 1805Gi promised "
        f"without capacity (team-a 924160Mi, team-b 462080Mi, research 462080Mi); nvidia.com/gpu: {gpus}"
    )


def test_the_cluster_the_stack_describes_does_not_drift() -> None:
    assert findings(lambda document, nodes: None) == []


def test_a_cordoned_node_leaves_fewer_nodes_and_quota_without_capacity() -> None:
    def cordon(document: dict[str, Any], nodes: dict[str, dict[str, Any]]) -> None:
        nodes["h100-04"]["spec"]["unschedulable"] = True

    assert findings(cordon) == [
        {
            "pool": "gpu-h100",
            "check": "fewer-nodes",
            "message": "declares 4 nodes, 3 Ready and schedulable (h100-04: cordoned (spec.unschedulable))",
            "details": {
                "declared": 4,
                "ready": 3,
                "leftOut": [{"name": "h100-04", "reasons": ["cordoned (spec.unschedulable)"]}],
            },
        },
        {
            "pool": "gpu-h100",
            "check": "quota-exceeds-capacity",
            "message": h100_message(
                "nominalQuota 32, the Ready nodes back 24, 8 promised without capacity (team-a 4, team-b 2, research 2)"
            ),
            "details": {
                "resources": h100_shortfall(
                    {"backed": "24", "missing": "8", "byClusterQueue": {"team-a": "4", "team-b": "2", "research": "2"}}
                )
            },
        },
    ]


def test_a_not_ready_node_is_named_with_its_reason() -> None:
    def not_ready(document: dict[str, Any], nodes: dict[str, dict[str, Any]]) -> None:
        ready = nodes["h100-03"]["status"]["conditions"][-1]
        ready.update(status="False", reason="KubeletNotReady", message="container runtime is down")

    found = findings(not_ready)
    assert [f["check"] for f in found] == ["fewer-nodes", "quota-exceeds-capacity"]
    assert found[0]["message"] == (
        "declares 4 nodes, 3 Ready and schedulable (h100-03: NotReady (Ready is False, KubeletNotReady: container "
        "runtime is down))"
    )


def test_allocatable_below_the_declared_per_node() -> None:
    def shrink(document: dict[str, Any], nodes: dict[str, dict[str, Any]]) -> None:
        nodes["a100-02"]["status"]["allocatable"]["memory"] = "890Gi"

    assert findings(shrink) == [
        {
            "pool": "gpu-a100",
            "check": "allocatable-below",
            "message": "1 node below the declared allocatable per node: a100-02 memory 890Gi < 900Gi",
            "details": {
                "nodes": [{"node": "a100-02", "resource": "memory", "declared": "900Gi", "allocatable": "890Gi"}]
            },
        },
        {
            # (900 + 890)Gi × 0.95 = 1741312Mi back 1710Gi of quota: 9.5Gi short, team-a and team-b 50 each.
            "pool": "gpu-a100",
            "check": "quota-exceeds-capacity",
            "message": "memory: nominalQuota 1710Gi, the Ready nodes back 1741312Mi, 9728Mi promised without capacity "
            "(team-a 4864Mi, team-b 4864Mi)",
            "details": {
                "resources": {
                    "memory": {
                        "nominalQuota": "1710Gi",
                        "backed": "1741312Mi",
                        "missing": "9728Mi",
                        "byClusterQueue": {"team-a": "4864Mi", "team-b": "4864Mi"},
                    }
                }
            },
        },
    ]


def test_gpus_per_node_that_differ() -> None:
    def lose_a_gpu(document: dict[str, Any], nodes: dict[str, dict[str, Any]]) -> None:
        nodes["h100-02"]["status"]["allocatable"]["nvidia.com/gpu"] = "7"

    assert findings(lose_a_gpu) == [
        {
            "pool": "gpu-h100",
            "check": "gpus-differ",
            "message": "declares 8 nvidia.com/gpu per node: h100-02 7",
            "details": {
                "gpuResource": "nvidia.com/gpu",
                "nodes": [{"node": "h100-02", "declared": 8, "allocatable": 7, "gpuResources": {"nvidia.com/gpu": 7}}],
            },
        },
        {
            "pool": "gpu-h100",
            "check": "quota-exceeds-capacity",
            # The one missing GPU goes to the largest share (largest remainder, as the planner apportions).
            "message": "nvidia.com/gpu: nominalQuota 32, the Ready nodes back 31, 1 promised without capacity "
            "(team-a 1)",
            "details": {
                "resources": {
                    "nvidia.com/gpu": {
                        "nominalQuota": "32",
                        "backed": "31",
                        "missing": "1",
                        "byClusterQueue": {"team-a": "1"},
                    }
                }
            },
        },
    ]


def test_a_node_partitioned_into_mig_slices_has_none_of_the_declared_gpus() -> None:
    def partition(document: dict[str, Any], nodes: dict[str, dict[str, Any]]) -> None:
        allocatable = nodes["a100-01"]["status"]["allocatable"]
        allocatable.update({"nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "56"})

    found = findings(partition)
    assert found[0] == {
        "pool": "gpu-a100",
        "check": "gpus-differ",
        "message": "declares 8 nvidia.com/gpu per node: a100-01 0 (has nvidia.com/mig-1g.10gb 56)",
        "details": {
            "gpuResource": "nvidia.com/gpu",
            "nodes": [
                {"node": "a100-01", "declared": 8, "allocatable": 0, "gpuResources": {"nvidia.com/mig-1g.10gb": 56}}
            ],
        },
    }
    assert found[1]["details"]["resources"]["nvidia.com/gpu"]["byClusterQueue"] == {"team-a": "4", "team-b": "4"}


def test_nodes_that_match_no_pool_are_unused_capacity() -> None:
    def add_l40s(document: dict[str, Any], nodes: dict[str, dict[str, Any]]) -> None:
        document["items"].append(json.loads((NODES / "eks.json").read_text())["items"][-1])

    assert findings(add_l40s) == [
        {
            "pool": None,
            "check": "unmatched-nodes",
            "message": "no pool's nodeLabels select 1 Ready node: ip-10-0-130-66.ec2.internal (cpu 47810m, memory "
            "389012180Ki, nvidia.com/gpu 4: capacity no quota hands out)",
            "details": {
                "nodes": [
                    {
                        "node": "ip-10-0-130-66.ec2.internal",
                        "cpu": "47810m",
                        "memory": "389012180Ki",
                        "gpuResources": {"nvidia.com/gpu": 4},
                    }
                ]
            },
        }
    ]


def test_more_nodes_than_declared() -> None:
    def add_cpu_node(document: dict[str, Any], nodes: dict[str, dict[str, Any]]) -> None:
        extra = copy.deepcopy(nodes["cpu-04"])
        extra["metadata"]["name"] = "cpu-05"
        document["items"].append(extra)

    assert findings(add_cpu_node) == [
        {
            "pool": "cpu",
            "check": "more-nodes",
            "message": "declares 4 nodes, 5 Ready nodes match: no quota hands out the capacity of the 1 node more",
            "details": {"declared": 4, "ready": 5},
        }
    ]


def test_a_pool_whose_labels_match_no_node() -> None:
    def remove_a100(document: dict[str, Any], nodes: dict[str, dict[str, Any]]) -> None:
        document["items"] = [n for n in document["items"] if not n["metadata"]["name"].startswith("a100-")]

    found = findings(remove_a100)
    assert found[0] == {
        "pool": "gpu-a100",
        "check": "no-nodes",
        "message": "nodeLabels {node-pool: gpu-a100} select no node; the stack declares 2 nodes",
        "details": {"declared": 2, "nodeLabels": {"node-pool": "gpu-a100"}},
    }
    assert found[1]["details"]["resources"] == {
        "cpu": {
            "nominalQuota": "178600m",
            "backed": "0",
            "missing": "178600m",
            "byClusterQueue": {"team-a": "89300m", "team-b": "89300m"},
        },
        "memory": {
            "nominalQuota": "1710Gi",
            "backed": "0",
            "missing": "1710Gi",
            "byClusterQueue": {"team-a": "855Gi", "team-b": "855Gi"},
        },
        "nvidia.com/gpu": {
            "nominalQuota": "16",
            "backed": "0",
            "missing": "16",
            "byClusterQueue": {"team-a": "8", "team-b": "8"},
        },
    }


def test_taints_that_differ_from_node_taints() -> None:
    def retaint(document: dict[str, Any], nodes: dict[str, dict[str, Any]]) -> None:
        nodes["h100-01"]["spec"]["taints"] = [{"key": "dedicated", "value": "bench", "effect": "NoSchedule"}]

    assert findings(retaint) == [
        {
            "pool": "gpu-h100",
            "check": "taints-differ",
            "message": "h100-01 tainted dedicated=bench:NoSchedule (not in nodeTaints: admitted pods may not tolerate "
            "it); lacks nvidia.com/gpu=present:NoSchedule",
            "details": {
                "nodes": [
                    {
                        "node": "h100-01",
                        "undeclared": ["dedicated=bench:NoSchedule"],
                        "absent": ["nvidia.com/gpu=present:NoSchedule"],
                    }
                ]
            },
        }
    ]


def test_quota_no_clusterqueue_holds_absorbs_a_missing_node_first() -> None:
    # One ClusterQueue with half of a 2-node pool: losing a node leaves the quota fully backed.
    values = {
        "inventory": {"pools": [{"name": "cpu", "nodes": 2, "cpu": "8", "memory": "32Gi", "nodeLabels": {"p": "c"}}]},
        "queues": {"clusterQueues": [{"name": "a", "share": 50, "namespaces": [{"name": "x"}]}]},
    }
    config, plan = plan_values(values)
    nodes = {
        "kind": "List",
        "items": [
            {
                "metadata": {"name": "c1", "labels": {"p": "c"}},
                "status": {
                    "allocatable": {"cpu": "8", "memory": "32Gi"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        ],
    }
    assert [f.check for f in compare(config, plan, parse_nodes(nodes, "n")).findings] == ["fewer-nodes"]


# --- The command ------------------------------------------------------------------------------------------------


def test_drift_table_and_exit_codes(tmp_path: Path) -> None:
    document = copy.deepcopy(PROD_NODES)
    document["items"][7]["spec"]["unschedulable"] = True  # h100-04
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps(document))
    code, out, err = run("drift", "prod", str(nodes))
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"Drift of stack prod (stacks/Pulumi.prod.yaml) against {nodes}: 2 findings",
        "",
        "POOL      NODES  CPU/NODE       MEMORY/NODE          GPUS/NODE  STATUS",
        "cpu       4 → 4  63 → 63770m    250Gi → 263442132Ki  0 → 0      ok",
        "gpu-h100  4 → 3  190 → 191450m  1900Gi → 1910Gi      8 → 8      drift",
        "gpu-a100  2 → 2  94 → 95690m    900Gi → 904Gi        8 → 8      ok",
        "",
        "gpu-h100: fewer-nodes: declares 4 nodes, 3 Ready and schedulable (h100-04: cordoned (spec.unschedulable))",
        "gpu-h100: quota-exceeds-capacity: "
        + h100_message(
            "nominalQuota 32, the Ready nodes back 24, 8 promised without capacity (team-a 4, team-b 2, research 2)"
        ),
    ]
    assert run("drift", "prod", str(nodes), "--exit-code")[0] == 3
    assert run("drift", "prod", str(NODES / "prod.json"), "--exit-code")[0] == 0


def test_drift_writes_json(tmp_path: Path) -> None:
    out_file = tmp_path / "report" / "drift.json"
    code, out, _ = run("drift", "prod", str(NODES / "prod.json"), "--out", str(out_file))
    assert code == 0
    assert out.endswith(f"\nNo drift: every pool's Ready nodes back what the stack declares.\n\nWrote {out_file}\n")
    report = json.loads(out_file.read_text())
    assert report == {
        "stack": "prod",
        "stackFile": "stacks/Pulumi.prod.yaml",
        "nodes": str(NODES / "prod.json"),
        "drifted": False,
        "pools": [
            {
                "name": "cpu",
                "declared": {"nodes": 4, "cpu": "63", "memory": "250Gi", "gpus": 0, "gpuResource": "nvidia.com/gpu"},
                "found": {"nodes": 4, "cpu": "63770m", "memory": "263442132Ki", "gpus": 0},
                "readyNodes": ["cpu-01", "cpu-02", "cpu-03", "cpu-04"],
                "leftOut": [],
            },
            {
                "name": "gpu-h100",
                "declared": {"nodes": 4, "cpu": "190", "memory": "1900Gi", "gpus": 8, "gpuResource": "nvidia.com/gpu"},
                "found": {"nodes": 4, "cpu": "191450m", "memory": "1910Gi", "gpus": 8},
                "readyNodes": ["h100-01", "h100-02", "h100-03", "h100-04"],
                "leftOut": [],
            },
            {
                "name": "gpu-a100",
                "declared": {"nodes": 2, "cpu": "94", "memory": "900Gi", "gpus": 8, "gpuResource": "nvidia.com/gpu"},
                "found": {"nodes": 2, "cpu": "95690m", "memory": "904Gi", "gpus": 8},
                "readyNodes": ["a100-01", "a100-02"],
                "leftOut": [],
            },
        ],
        "findings": [],
        "skippedNodes": [],
    }


@pytest.mark.parametrize("fixture", ["gke.json", "eks.json", "aks.json", "onprem-mig.json"])
def test_a_freshly_imported_stack_does_not_drift_from_its_nodes(tmp_path: Path, fixture: str) -> None:
    stack = tmp_path / "Pulumi.imported.yaml"
    assert run("inventory", "import", str(NODES / fixture), "--stack", str(stack))[0] == 0
    code, out, err = run("drift", str(stack), str(NODES / fixture), "--exit-code")
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == f"Drift of stack imported ({stack}) against {NODES / fixture}: no drift"


def test_drift_of_an_invalid_stack_exits_2_with_its_problems(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.bad.yaml"
    shutil.copy(STACKS / "Pulumi.dev.yaml", stack)
    stack.write_text(stack.read_text().replace("nodes: 1", "nodes: 0"))
    code, out, err = run("drift", str(stack), str(NODES / "prod.json"))
    assert (code, out) == (2, "")
    assert err == f"{stack}: aiperf-kueue:inventory.pools[0].nodes: must be >= 1, got 0\n"
    assert read_stack(stack).values["inventory"]["pools"][0]["nodes"] == 0
