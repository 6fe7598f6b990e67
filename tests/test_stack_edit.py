"""The stack file round trip: only ``aiperf-kueue:inventory`` changes; comments and other keys stay byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.inventory.inventory_nodes import existing_pools, import_inventory
from aiperf_kueue.inventory.node_list import parse_nodes
from aiperf_kueue.inventory.stack_edit import apply_import, set_inventory
from tests.nodes_support import node, node_list
from tests.support import STACKS

NODES = node_list(
    node("cpu-1", {"pool": "cpu"}, cpu="16", memory="64Gi"),
    node(
        "gpu-1",
        {"pool": "gpu"},
        cpu="96",
        memory="900Gi",
        gpus={"nvidia.com/gpu": "8"},
        taints=[{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
    ),
)


def edited(text: str, nodes: dict[str, Any] = NODES) -> str:
    """``text`` after importing ``nodes`` into it, as ``inventory import`` does."""
    config = (yaml.safe_load(text) or {}).get("config")
    current = config.get("aiperf-kueue:inventory") if isinstance(config, dict) else None
    result = import_inventory(parse_nodes(nodes, "nodes.json"), existing=existing_pools(current))
    return set_inventory(text, "Pulumi.test.yaml", lambda found: apply_import(found, result))


def test_prod_reimport_changes_only_the_figures_that_changed() -> None:
    original = (STACKS / "Pulumi.prod.yaml").read_text()
    nodes = json.loads((Path(__file__).parent / "nodes" / "prod.json").read_text())
    expected = original
    for old, new in [
        ('cpu: "63"\n        memory: 250Gi\n', 'cpu: "63770m"\n        memory: 263442132Ki\n'),
        ('cpu: "190"\n        memory: 1900Gi\n', 'cpu: "191450m"\n        memory: 1910Gi\n'),
        ('cpu: "94"\n        memory: 900Gi\n', 'cpu: "95690m"\n        memory: 904Gi\n'),
    ]:
        assert expected.count(old) == 1
        expected = expected.replace(old, new)
    # Everything else, the comment above the first pool, the tolerations and every other key included, as it was.
    assert edited(original, nodes) == expected


def test_comments_flow_style_secrets_and_four_space_indents_outside_the_entry_stay() -> None:
    original = (
        "# Team cluster.   \n"
        "encryptionsalt: v1:abc=\n"
        "config:\n"
        "    # Which Kueue.\n"
        "    aiperf-kueue:kueue:\n"
        "        version: 0.19.2   # pinned\n"
        "    kubernetes:context: bench   \n"
        "    aiperf-kueue:inventory:\n"
        "        headroom: 5\n"
        "        pools:\n"
        "            -   name: gpu # the H100s\n"
        "                nodes: 2\n"
        "                cpu: '90'\n"
        "                memory: 800Gi\n"
        "                nodeLabels: {pool: gpu}\n"
        "                tolerations:\n"
        "                  - {key: nvidia.com/gpu, operator: Exists}\n"
        "    # Secrets stay secrets.\n"
        "    aiperf-kueue:queues:\n"
        "        clusterQueues: [{name: a, share: 100, namespaces: [{name: x}]}]\n"
        "    aiperf-kueue:operator:\n"
        "        values:\n"
        "            token:\n"
        "                secure: v1:AAAABBBB\n"
    )
    lines = original.splitlines(keepends=True)
    assert edited(original) == "".join(
        [
            *lines[:8],
            "        headroom: 5\n",
            "        pools:\n",
            "            - name: cpu\n",
            "              nodes: 1\n",
            '              cpu: "16"\n',
            "              memory: 64Gi\n",
            "            - name: gpu   # the H100s\n",
            "              nodes: 1\n",
            '              cpu: "96"\n',
            "              memory: 900Gi\n",
            "              gpus: 8\n",
            "              nodeLabels: {pool: gpu}\n",
            "              nodeTaints:\n",
            "                  - key: nvidia.com/gpu\n",
            "                    effect: NoSchedule\n",
            "              tolerations:\n",
            "                  - {key: nvidia.com/gpu, operator: Exists}\n",
            *lines[17:],
        ]
    )


def test_a_new_entry_goes_after_kueue_and_before_the_next_keys_comment() -> None:
    original = (
        "config:\n"
        "  aiperf-kueue:kueue:\n"
        "    version: 0.19.2\n"
        "\n"
        "  # The queues.\n"
        "  aiperf-kueue:queues:\n"
        "    clusterQueues:\n"
        "    - name: a\n"
        "      share: 100\n"
    )
    assert edited(original) == (
        "config:\n"
        "  aiperf-kueue:kueue:\n"
        "    version: 0.19.2\n"
        "  aiperf-kueue:inventory:\n"
        "    pools:\n"
        # The file writes sequences unindented; so do the new lines.
        "    - name: cpu\n"
        "      nodes: 1\n"
        '      cpu: "16"\n'
        "      memory: 64Gi\n"
        "    - name: gpu\n"
        "      nodes: 1\n"
        '      cpu: "96"\n'
        "      memory: 900Gi\n"
        "      gpus: 8\n"
        "      nodeTaints:\n"
        "      - key: nvidia.com/gpu\n"
        "        effect: NoSchedule\n"
        "\n"
        "  # The queues.\n"
        "  aiperf-kueue:queues:\n"
        "    clusterQueues:\n"
        "    - name: a\n"
        "      share: 100\n"
    )


def test_the_comment_after_a_last_entry_stays_after_it() -> None:
    original = (
        "config:\n"
        "  aiperf-kueue:queues:\n"
        "    clusterQueues:\n"
        "      - name: a\n"
        "        share: 100\n"
        "  aiperf-kueue:inventory:\n"
        "    pools:\n"
        "      - name: cpu\n"
        "        nodes: 1\n"
        '        cpu: "8"\n'
        "        memory: 16Gi\n"
        "        nodeLabels:\n"
        "          pool: cpu\n"
        "# Trailing comment about the salt.\n"
        "encryptionsalt: v1:xyz=\n"
    )
    assert edited(original) == (
        "config:\n"
        "  aiperf-kueue:queues:\n"
        "    clusterQueues:\n"
        "      - name: a\n"
        "        share: 100\n"
        "  aiperf-kueue:inventory:\n"
        "    pools:\n"
        "      - name: cpu\n"
        "        nodes: 1\n"
        '        cpu: "16"\n'
        "        memory: 64Gi\n"
        "        nodeLabels:\n"
        "          pool: cpu\n"
        "      - name: gpu\n"
        "        nodes: 1\n"
        '        cpu: "96"\n'
        "        memory: 900Gi\n"
        "        gpus: 8\n"
        "        nodeTaints:\n"
        "          - key: nvidia.com/gpu\n"
        "            effect: NoSchedule\n"
        "# Trailing comment about the salt.\n"
        "encryptionsalt: v1:xyz=\n"
    )


def test_crlf_line_ends_stay() -> None:
    original = (
        "config:\r\n"
        "  aiperf-kueue:inventory:\r\n"
        "    pools:\r\n"
        "      - name: cpu\r\n"
        "        nodes: 3\r\n"
        '        cpu: "8"\r\n'
        "        memory: 16Gi\r\n"
        "        nodeLabels:\r\n"
        "          pool: cpu\r\n"
        "  aiperf-kueue:queues: {}\r\n"
    )
    result = edited(original)
    assert result.count("\r\n") == result.count("\n") == 18
    assert result.startswith(
        "config:\r\n  aiperf-kueue:inventory:\r\n    pools:\r\n      - name: cpu\r\n        nodes: 1\r\n"
    )
    assert result.endswith("            effect: NoSchedule\r\n  aiperf-kueue:queues: {}\r\n")


def test_a_file_without_config_gets_one_appended() -> None:
    assert edited("encryptionsalt: v1:xyz=\n").startswith(
        "encryptionsalt: v1:xyz=\nconfig:\n  aiperf-kueue:inventory:\n    pools:\n      - name: cpu\n"
    )


def test_an_empty_flow_config_is_written_anew() -> None:
    result = edited("config: {}\n")
    assert yaml.safe_load(result) == {
        "config": {
            "aiperf-kueue:inventory": {
                "pools": [
                    {"name": "cpu", "nodes": 1, "cpu": "16", "memory": "64Gi"},
                    {
                        "name": "gpu",
                        "nodes": 1,
                        "cpu": "96",
                        "memory": "900Gi",
                        "gpus": 8,
                        "nodeTaints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
                    },
                ]
            }
        }
    }


def test_label_values_yaml_would_misread_are_quoted() -> None:
    nodes = node_list(node("n", {"nvidia.com/gpu.present": "true"}, gpus={"nvidia.com/gpu": "1"}))
    document = json.loads(json.dumps(nodes))
    document["items"][0]["metadata"]["labels"]["k8s.amazonaws.com/accelerator"] = "yes"
    result = edited("config:\n  aiperf-kueue:queues: {}\n", document)
    assert '          k8s.amazonaws.com/accelerator: "yes"\n' in result
    assert yaml.safe_load(result)["config"]["aiperf-kueue:inventory"]["pools"][0]["nodeLabels"] == {
        "k8s.amazonaws.com/accelerator": "yes"
    }


def test_a_stack_file_that_is_not_yaml_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as caught:
        set_inventory("config:\n  a: [\n", "Pulumi.test.yaml", lambda found: found)
    assert caught.value.lines() == [
        "Pulumi.test.yaml: not valid YAML at line 3, column 1: expected the node content, but found '<stream end>'"
    ]
