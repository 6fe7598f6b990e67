"""``inventory import``: nodes into pools (literal pools per cloud), then the quotas they plan to."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from aiperf_kueue.cli.cli import main
from aiperf_kueue.inventory.inventory_nodes import dns_label, existing_pools, import_inventory
from aiperf_kueue.inventory.node_list import Node, parse_nodes
from aiperf_kueue.inventory.stack_edit import inventory_value
from aiperf_kueue.stackfile.loader import read_stack
from tests.support import STACKS, plan_values

NODES = Path(__file__).parent / "nodes"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def nodes_of(name: str) -> list[Node]:
    return parse_nodes(json.loads((NODES / name).read_text()), name)


def tainted(text: str) -> str:
    return (
        f"tainted {text}: Kueue admits a pod on this flavor only if the pod, or the pool's tolerations, tolerate that"
    )


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


# --- Pools per cloud ------------------------------------------------------------------------------------------


def test_gke_pools_by_node_pool_label() -> None:
    result = import_inventory(nodes_of("gke.json"))
    assert inventory_value(result, None) == {
        "pools": [
            {
                "name": "cpu-pool",
                "nodes": 2,
                "cpu": "31850m",
                "memory": "123389216Ki",
                "nodeLabels": {"cloud.google.com/gke-nodepool": "cpu-pool"},
            },
            {
                "name": "h100-pool",
                "nodes": 3,
                "cpu": "207410m",
                "memory": "1865488324Ki",
                "gpus": 8,
                "nodeLabels": {"cloud.google.com/gke-nodepool": "h100-pool"},
                "nodeTaints": [GPU_TAINT],
            },
        ]
    }
    assert result.skipped == (("gke-bench-h100-pool-6c2a9d41-x1vc", ("cordoned (spec.unschedulable)",)),)
    assert [p.notes for p in result.pools] == [
        (),
        (
            # One node's newer driver reserves 512Mi more; the minimum leaves 512Mi out on the other two.
            "memory: 2 of 3 nodes have more than the minimum 1865488324Ki (up to 1866012612Ki); 1Gi left out",
            tainted("nvidia.com/gpu=present:NoSchedule"),
        ),
    ]
    assert result.warnings == ()


def test_eks_pools_by_node_group_and_karpenter_node_pool_not_ready_left_out() -> None:
    result = import_inventory(nodes_of("eks.json"))
    assert inventory_value(result, None) == {
        "pools": [
            {
                "name": "system",
                "nodes": 2,
                "cpu": "7910m",
                "memory": "31369192Ki",
                "nodeLabels": {"eks.amazonaws.com/nodegroup": "system"},
            },
            {
                "name": "gpu-p5",
                "nodes": 2,
                "cpu": "191450m",
                "memory": "2057427628Ki",
                "gpus": 8,
                "nodeLabels": {"eks.amazonaws.com/nodegroup": "gpu-p5"},
                # The NotReady node's node.kubernetes.io/unreachable taints are Kubernetes' own: never a pool's.
                "nodeTaints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
            },
            {
                "name": "gpu-inference",
                "nodes": 1,
                "cpu": "47810m",
                "memory": "389012180Ki",
                "gpus": 4,
                "nodeLabels": {"karpenter.sh/nodepool": "gpu-inference"},
                "nodeTaints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
            },
        ]
    }
    assert result.skipped == (
        (
            "ip-10-0-102-4.ec2.internal",
            ("NotReady (Ready is Unknown, NodeStatusUnknown: Kubelet stopped posting node status.)",),
        ),
    )


def test_aks_pools_by_agent_pool() -> None:
    result = import_inventory(nodes_of("aks.json"))
    assert inventory_value(result, None) == {
        "pools": [
            {
                "name": "system",
                "nodes": 1,
                "cpu": "3860m",
                "memory": "12880980Ki",
                "nodeLabels": {"kubernetes.azure.com/agentpool": "system"},
                "nodeTaints": [{"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"}],
            },
            {
                "name": "cpu",
                "nodes": 2,
                "cpu": "31580m",
                "memory": "119758448Ki",
                "nodeLabels": {"kubernetes.azure.com/agentpool": "cpu"},
            },
            {
                # AKS's accelerator label only says "nvidia": the machine type names the GPU.
                "name": "gpua100",
                "nodes": 2,
                "cpu": "95690m",
                "memory": "896904540Ki",
                "gpus": 4,
                "nodeLabels": {"kubernetes.azure.com/agentpool": "gpua100"},
                "nodeTaints": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}],
            },
        ]
    }
    assert result.skipped == (("aks-gpua100-16180339-vmss000002", ("cordoned (spec.unschedulable)",)),)


def test_mig_partitioned_node_gets_its_own_pool_with_the_mig_resource() -> None:
    result = import_inventory(nodes_of("onprem-mig.json"))
    a100 = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
    assert inventory_value(result, None) == {
        "pools": [
            {"name": "cpu", "nodes": 1, "cpu": "64", "memory": "263825976Ki"},
            {
                "name": "nvidia-a100-sxm4-80gb",
                "nodes": 1,
                "cpu": "256",
                "memory": "2113373168Ki",
                "gpus": 8,
                "nodeLabels": {**a100, "nvidia.com/mig.config": "all-disabled"},
                "nodeTaints": [GPU_TAINT],
            },
            {
                "name": "nvidia-a100-sxm4-80gb-mig-1g-10gb",
                "nodes": 1,
                "cpu": "256",
                "memory": "2113373168Ki",
                "gpus": 16,
                "gpuResource": "nvidia.com/mig-1g.10gb",
                "nodeLabels": {**a100, "nvidia.com/mig.config": "all-balanced"},
                "nodeTaints": [GPU_TAINT],
            },
        ]
    }
    assert result.pools[2].notes == (
        "not imported: nvidia.com/mig-2g.20gb, nvidia.com/mig-3g.40gb (a pool has one gpuResource; give those GPUs a "
        "pool of their own with --group-by, or list them in queues.coveredResources and the pool's extraResources)",
        tainted("nvidia.com/gpu=present:NoSchedule"),
    )
    assert result.skipped == (("cp-1", ("control-plane (taint node-role.kubernetes.io/control-plane:NoSchedule)",)),)
    # An unlabelled worker beside GPU nodes: its pool cannot select it alone, and the import says so.
    assert result.warnings == (
        "nodes cpu-01: no label tells them from the other pools' nodes, so their pool's nodeLabels {} (every node) "
        "also select dgx-a100-01, dgx-a100-02; Kueue cannot steer pods to either; label the nodes of each pool and "
        "run again with --group-by LABEL",
    )


def test_group_by_a_node_pool_label() -> None:
    result = import_inventory(nodes_of("gke.json"), group_by=["cloud.google.com/gke-nodepool"])
    value = inventory_value(result, None)
    assert [(p["name"], p["nodes"], p["nodeLabels"]) for p in value["pools"]] == [
        ("cpu-pool", 2, {"cloud.google.com/gke-nodepool": "cpu-pool"}),
        ("h100-pool", 3, {"cloud.google.com/gke-nodepool": "h100-pool"}),
    ]


def test_group_by_leaves_out_nodes_without_the_label() -> None:
    result = import_inventory(nodes_of("eks.json"), group_by=["eks.amazonaws.com/nodegroup"])
    assert [(p.name, len(p.nodes)) for p in result.pools] == [("system", 2), ("gpu-p5", 2)]
    assert result.skipped[-1] == ("ip-10-0-130-66.ec2.internal", ("no label eks.amazonaws.com/nodegroup (--group-by)",))


def test_gpu_counts_that_differ_in_a_pool_are_said() -> None:
    document = json.loads((NODES / "gke.json").read_text())
    document["items"][3]["status"]["allocatable"]["nvidia.com/gpu"] = "7"
    result = import_inventory(parse_nodes(document, "gke.json"))
    assert result.pools[1].gpus == 7
    assert result.pools[1].notes[1] == "nvidia.com/gpu: 2 of 3 nodes have more than the minimum 7 (up to 8); 2 left out"


def test_pool_names_are_dns_labels() -> None:
    assert dns_label("NVIDIA-H100-80GB-HBM3") == "nvidia-h100-80gb-hbm3"
    assert dns_label("p5.48xlarge") == "p5-48xlarge"
    assert dns_label("Standard_ND96isr_H100_v5") == "standard-nd96isr-h100-v5"
    assert dns_label("--") == "pool"
    assert dns_label("a" * 70) == "a" * 63


# --- Updating a stack's pools -----------------------------------------------------------------------------------


def prod_inventory() -> Any:
    return read_stack(STACKS / "Pulumi.prod.yaml").values["inventory"]


def test_reimport_matches_the_stacks_pools_by_node_labels_and_keeps_the_rest() -> None:
    current = prod_inventory()
    result = import_inventory(nodes_of("prod.json"), existing=existing_pools(current))
    tolerations = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert inventory_value(result, current) == {
        "headroom": 5,
        "pools": [
            {
                "name": "cpu",
                "nodes": 4,
                "cpu": "63770m",
                "memory": "263442132Ki",
                "nodeLabels": {"node-pool": "cpu"},
            },
            {
                "name": "gpu-h100",
                "nodes": 4,
                "cpu": "191450m",
                "memory": "1910Gi",
                "gpus": 8,
                "nodeLabels": {"node-pool": "gpu-h100"},
                "nodeTaints": [GPU_TAINT],
                "tolerations": tolerations,
            },
            {
                "name": "gpu-a100",
                "nodes": 2,
                "cpu": "95690m",
                "memory": "904Gi",
                "gpus": 8,
                "nodeLabels": {"node-pool": "gpu-a100"},
                "nodeTaints": [GPU_TAINT],
                "tolerations": tolerations,
            },
        ],
    }


def test_a_pool_no_node_matches_is_kept_or_pruned() -> None:
    document = json.loads((NODES / "prod.json").read_text())
    document["items"] = [n for n in document["items"] if not n["metadata"]["name"].startswith("a100-")]
    nodes = parse_nodes(document, "prod.json")
    current = prod_inventory()
    kept = import_inventory(nodes, existing=existing_pools(current))
    assert [p["name"] for p in inventory_value(kept, current)["pools"]] == ["cpu", "gpu-h100", "gpu-a100"]
    assert kept.warnings == (
        "pool 'gpu-a100' kept as it is: no Ready node matches its nodeLabels {node-pool: gpu-a100}; if those nodes "
        "are gone, run again with --prune or remove it (and the ClusterQueues' references to it) by hand",
    )
    pruned = import_inventory(nodes, existing=existing_pools(current), prune=True)
    assert [p["name"] for p in inventory_value(pruned, current)["pools"]] == ["cpu", "gpu-h100"]
    assert [p.name for p in pruned.pruned] == ["gpu-a100"]


def test_new_nodes_beside_the_stacks_pools_become_new_pools() -> None:
    document = json.loads((NODES / "prod.json").read_text())
    extra = json.loads((NODES / "eks.json").read_text())["items"][-1]  # the Karpenter L40S node, no node-pool label
    document["items"].append(extra)
    current = prod_inventory()
    result = import_inventory(parse_nodes(document, "prod.json"), existing=existing_pools(current))
    pools = inventory_value(result, current)["pools"]
    assert [(p["name"], p["nodes"], p.get("nodeLabels")) for p in pools] == [
        ("cpu", 4, {"node-pool": "cpu"}),
        ("gpu-h100", 4, {"node-pool": "gpu-h100"}),
        ("gpu-a100", 2, {"node-pool": "gpu-a100"}),
        ("gpu-inference", 1, {"karpenter.sh/nodepool": "gpu-inference"}),
    ]


# --- Import, then plan ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fixture", "quotas"),
    [
        (
            "gke.json",
            {
                "benchmarks": {
                    "cpu-pool": {"cpu": "63700m", "memory": "240994Mi", "nvidia.com/gpu": 0},
                    "h100-pool": {"cpu": "622230m", "memory": "5465297Mi", "nvidia.com/gpu": 24},
                }
            },
        ),
        (
            "eks.json",
            {
                "benchmarks": {
                    "system": {"cpu": "15820m", "memory": "61267Mi", "nvidia.com/gpu": 0},
                    "gpu-p5": {"cpu": "382900m", "memory": "4018413Mi", "nvidia.com/gpu": 16},
                    "gpu-inference": {"cpu": "47810m", "memory": "379894Mi", "nvidia.com/gpu": 4},
                }
            },
        ),
        (
            "aks.json",
            {
                "benchmarks": {
                    "system": {"cpu": "3860m", "memory": "12579Mi", "nvidia.com/gpu": 0},
                    "cpu": {"cpu": "63160m", "memory": "233903Mi", "nvidia.com/gpu": 0},
                    "gpua100": {"cpu": "191380m", "memory": "1751766Mi", "nvidia.com/gpu": 8},
                }
            },
        ),
        (
            "onprem-mig.json",
            {
                "benchmarks": {
                    "cpu": {"cpu": "64", "memory": "257642Mi", "nvidia.com/gpu": 0, "nvidia.com/mig-1g.10gb": 0},
                    "nvidia-a100-sxm4-80gb": {
                        "cpu": "256",
                        "memory": "2063840Mi",
                        "nvidia.com/gpu": 8,
                        "nvidia.com/mig-1g.10gb": 0,
                    },
                    "nvidia-a100-sxm4-80gb-mig-1g-10gb": {
                        "cpu": "256",
                        "memory": "2063840Mi",
                        "nvidia.com/gpu": 0,
                        "nvidia.com/mig-1g.10gb": 16,
                    },
                }
            },
        ),
    ],
)
def test_import_into_a_new_stack_then_plan(tmp_path: Path, fixture: str, quotas: dict[str, Any]) -> None:
    # nodes × the smallest node's allocatable, all to the starter ClusterQueue (share 100, no headroom).
    stack = tmp_path / "Pulumi.imported.yaml"
    code, out, err = run("inventory", "import", str(NODES / fixture), "--stack", str(stack))
    assert (code, err) == (0, "")
    assert f"Wrote aiperf-kueue:inventory to {stack}." in out
    _, plan = plan_values(read_stack(stack).values)
    assert plan.quota_table() == quotas


def test_reimport_prod_then_plan(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.prod.yaml"
    shutil.copy(STACKS / "Pulumi.prod.yaml", stack)
    code, _, err = run("inventory", "import", str(NODES / "prod.json"), "--stack", str(stack))
    assert (code, err) == (0, "")
    _, plan = plan_values(read_stack(stack).values)
    # The stack's shares (team-a 50; team-b cpu 30, gpu-h100 25, gpu-a100 50; research cpu 20, gpu-h100 25) of
    # nodes × the smallest node, less 5% headroom on cpu and memory: cpu pool 4 × 63770m × 0.95 = 242326m,
    # 4 × 263442132Ki × 0.95 = 977617Mi; gpu-h100 727510m, 7432192Mi, 32 GPUs; gpu-a100 181811m, 1758822Mi, 16.
    assert plan.quota_table() == {
        "team-a": {
            "cpu": {"cpu": "121163m", "memory": "488809Mi", "nvidia.com/gpu": 0},
            "gpu-h100": {"cpu": "363755m", "memory": "3629Gi", "nvidia.com/gpu": 16},
            "gpu-a100": {"cpu": "90906m", "memory": "879411Mi", "nvidia.com/gpu": 8},
        },
        "team-b": {
            "cpu": {"cpu": "72698m", "memory": "293285Mi", "nvidia.com/gpu": 0},
            "gpu-h100": {"cpu": "181878m", "memory": "1858048Mi", "nvidia.com/gpu": 8},
            "gpu-a100": {"cpu": "90905m", "memory": "879411Mi", "nvidia.com/gpu": 8},
        },
        "research": {
            "cpu": {"cpu": "48465m", "memory": "195523Mi", "nvidia.com/gpu": 0},
            "gpu-h100": {"cpu": "181877m", "memory": "1858048Mi", "nvidia.com/gpu": 8},
            "gpu-a100": {"cpu": "0", "memory": "0", "nvidia.com/gpu": 0},
        },
    }


def test_import_summary_and_dry_run(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.prod.yaml"
    shutil.copy(STACKS / "Pulumi.prod.yaml", stack)
    before = stack.read_text()
    code, out, err = run("inventory", "import", str(NODES / "prod.json"), "--stack", str(stack), "--dry-run")
    assert (code, err, stack.read_text()) == (0, "", before)
    summary, _, change = out.partition("\nDry run: nothing written. The change:\n")
    assert summary.splitlines() == [
        f"Imported 10 Ready nodes from {NODES / 'prod.json'} into {stack} (aiperf-kueue:inventory):",
        "",
        "Pools (3), each sized by its smallest node (quota = nodes × per node):",
        '  cpu: 4 nodes × cpu 63770m, memory 263442132Ki; nodeLabels {"node-pool": "cpu"} (updated: cpu 63 → 63770m, '
        "memory 250Gi → 263442132Ki)",
        "    - memory: 3 of 4 nodes have more than the minimum 263442132Ki (up to 263546580Ki); 306Mi left out",
        '  gpu-h100: 4 nodes × cpu 191450m, memory 1910Gi, 8 nvidia.com/gpu; nodeLabels {"node-pool": "gpu-h100"}; '
        "nodeTaints nvidia.com/gpu=present:NoSchedule (updated: cpu 190 → 191450m, memory 1900Gi → 1910Gi)",
        f"    - {tainted('nvidia.com/gpu=present:NoSchedule')}",
        '  gpu-a100: 2 nodes × cpu 95690m, memory 904Gi, 8 nvidia.com/gpu; nodeLabels {"node-pool": "gpu-a100"}; '
        "nodeTaints nvidia.com/gpu=present:NoSchedule (updated: cpu 94 → 95690m, memory 900Gi → 904Gi)",
        f"    - {tainted('nvidia.com/gpu=present:NoSchedule')}",
    ]
    assert change.startswith(f"--- {stack}\n+++ {stack}\n@@ -9,14 +9,14 @@\n")
    assert [line for line in change.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")] == [
        '-        cpu: "63"',
        "-        memory: 250Gi",
        '+        cpu: "63770m"',
        "+        memory: 263442132Ki",
        '-        cpu: "190"',
        "-        memory: 1900Gi",
        '+        cpu: "191450m"',
        "+        memory: 1910Gi",
        '-        cpu: "94"',
        "-        memory: 900Gi",
        '+        cpu: "95690m"',
        "+        memory: 904Gi",
    ]


def test_a_second_import_of_the_same_nodes_writes_nothing(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.gke.yaml"
    assert run("inventory", "import", str(NODES / "gke.json"), "--stack", str(stack))[0] == 0
    first = stack.read_text()
    code, out, _ = run("inventory", "import", str(NODES / "gke.json"), "--stack", str(stack))
    assert (code, stack.read_text()) == (0, first)
    assert out.endswith(f"\n{stack} already says this: nothing to write.\n")


def test_an_import_the_queues_no_longer_fit_is_written_and_says_why(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.prod.yaml"
    shutil.copy(STACKS / "Pulumi.prod.yaml", stack)
    document = json.loads((NODES / "prod.json").read_text())
    document["items"] = [n for n in document["items"] if not n["metadata"]["name"].startswith("a100-")]
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps(document))
    code, _, err = run("inventory", "import", str(nodes), "--stack", str(stack), "--prune")
    assert code == 0
    assert [p["name"] for p in read_stack(stack).values["inventory"]["pools"]] == ["cpu", "gpu-h100"]
    assert err.splitlines()[:2] == [
        "",
        "The stack does not plan with this inventory yet (fix before pulumi up):",
    ]
    assert (
        "  Pulumi.prod.yaml: aiperf-kueue:queues.clusterQueues[0].lendingLimit.gpu-a100: unknown pool 'gpu-a100'; "
        "pools: cpu, gpu-h100" in err.splitlines()
    )
