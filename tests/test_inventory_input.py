"""Bad node lists and bad arguments: exit 2, one clear line naming the input, nothing written."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from aiperf_kueue.cli.cli import main
from tests.nodes_support import node, node_list
from tests.support import STACKS

EXPECTED = "give the output of `kubectl get nodes -o json` (or -o yaml)"


def run(*argv: str, stdin: str | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        if stdin is not None:
            saved = sys.stdin
            sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode()))
            try:
                code = main(list(argv))
            finally:
                sys.stdin = saved
        else:
            code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def stack(tmp_path: Path) -> Path:
    path = tmp_path / "Pulumi.prod.yaml"
    shutil.copy(STACKS / "Pulumi.prod.yaml", path)
    return path


def write(tmp_path: Path, content: Any) -> Path:
    path = tmp_path / "nodes.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        # `kubectl get nodes` without -o json: the table.
        (
            "NAME     STATUS   ROLES           AGE   VERSION\ncp-1     Ready    control-plane   20d   v1.32.2\n",
            f"not JSON or YAML of a node list (plain text: a table?); {EXPECTED}",
        ),
        # -o yaml of something else.
        (
            "apiVersion: v1\nkind: Pod\n",
            f"not a node list: kind 'Pod', expected kind List or NodeList with items; {EXPECTED}",
        ),
        (
            "a: [\n",
            "not valid YAML at line 2, column 1: did not find expected node content (while parsing a flow node); "
            + EXPECTED,
        ),
        ("", f"not JSON (Expecting value at line 1 column 1); {EXPECTED}"),
        ("[]", f"not a node list: a JSON array; {EXPECTED}"),
        (
            '{"kind": "Deployment"}',
            f"not a node list: kind 'Deployment', expected kind List or NodeList with items; {EXPECTED}",
        ),
        ('{"items": []}', f"not a node list: no kind, expected kind List or NodeList with items; {EXPECTED}"),
        ('{"kind": "List", "items": {}}', "items: must be a list of Node objects, got a JSON object"),
        ("[" * 100_000, f"not JSON this program reads (nested too deeply); {EXPECTED}"),
    ],
)
def test_not_a_node_list(tmp_path: Path, stack: Path, content: str, problem: str) -> None:
    before = stack.read_text()
    nodes = write(tmp_path, content)
    assert run("inventory", "import", str(nodes), "--stack", str(stack)) == (2, "", f"{nodes}: {problem}\n")
    assert stack.read_text() == before


def test_a_pod_list_names_each_item(tmp_path: Path, stack: Path) -> None:
    pods = {"apiVersion": "v1", "kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "web-0"}}, "text"]}
    nodes = write(tmp_path, pods)
    assert run("inventory", "import", str(nodes), "--stack", str(stack)) == (
        2,
        "",
        f"{nodes}: items[0]: kind 'Pod', expected Node\n{nodes}: items[1]: not a Node object (a JSON string)\n",
    )


def test_nodes_without_allocatable_or_with_bad_fields(tmp_path: Path, stack: Path) -> None:
    no_allocatable = node("gpu-7")
    del no_allocatable["status"]["allocatable"]
    bad_quantity = node("gpu-8", cpu="lots")
    no_memory = node("gpu-9")
    del no_memory["status"]["allocatable"]["memory"]
    bad_taint = node("gpu-10", taints=[{"key": "nvidia.com/gpu", "effect": "Sometimes"}])
    nameless = node("x")
    del nameless["metadata"]["name"]
    document = node_list(node("ok-1"), no_allocatable, bad_quantity, no_memory, bad_taint, nameless, node("ok-1"))
    nodes = write(tmp_path, document)
    before = stack.read_text()
    code, out, err = run("inventory", "import", str(nodes), "--stack", str(stack))
    assert (code, out, stack.read_text()) == (2, "", before)
    assert err.splitlines() == [
        f"{nodes}: items[1] (node 'gpu-7'): no status.allocatable; the inventory is sized from what the scheduler can "
        "hand out, which the kubelet reports there once the node has registered",
        f'{nodes}: items[2] (node \'gpu-8\'): status.allocatable["cpu"] must be a Kubernetes quantity such as "16", '
        '"1500m" or "64Gi", got "lots"',
        f"{nodes}: items[3] (node 'gpu-9'): status.allocatable has no memory",
        f"{nodes}: items[4] (node 'gpu-10'): spec.taints[0] must have a key, an optional label value and an effect "
        '(NoSchedule, PreferNoSchedule, NoExecute), got {"effect": "Sometimes", "key": "nvidia.com/gpu"}',
        f"{nodes}: items[5]: no metadata.name",
        f"{nodes}: items[6]: node 'ok-1' is listed twice (also items[0])",
    ]


def test_no_node_to_import(tmp_path: Path, stack: Path) -> None:
    nodes = write(tmp_path, node_list(node("w-1", unschedulable=True), node("w-2", ready="False")))
    before = stack.read_text()
    assert run("inventory", "import", str(nodes), "--stack", str(stack)) == (
        2,
        "",
        f"{nodes}: no Ready, schedulable node to import (2 left out)\n"
        f"{nodes}: w-1: cordoned (spec.unschedulable)\n"
        f"{nodes}: w-2: NotReady (Ready is False, KubeletReady)\n",
    )
    assert stack.read_text() == before


def test_a_missing_file_and_argument_mistakes(tmp_path: Path, stack: Path) -> None:
    missing = tmp_path / "nope.json"
    assert run("inventory", "import", str(missing), "--stack", str(stack)) == (
        2,
        "",
        f"{missing}: cannot read: No such file or directory\n",
    )
    assert run("inventory", "import", "--stack", str(stack)) == (
        2,
        "",
        "NODES: missing: give a file from `kubectl get nodes -o json`, - for standard input, or --kubeconfig\n",
    )
    assert run("inventory", "import", "n.json", "--kubeconfig", "k", "--stack", str(stack)) == (
        2,
        "",
        "n.json: give either NODES or --kubeconfig, not both\n",
    )
    assert run("inventory", "import", "n.json", "--context", "c", "--stack", str(stack)) == (
        2,
        "",
        "n.json: --context needs --kubeconfig\n",
    )


def test_a_stack_file_that_is_not_yaml(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.bad.yaml"
    stack.write_text("config:\n  aiperf-kueue:inventory: [\n")
    nodes = write(tmp_path, node_list(node("w-1")))
    code, out, err = run("inventory", "import", str(nodes), "--stack", str(stack))
    assert (code, out) == (2, "")
    assert err == (
        f"{stack}: aiperf-kueue:inventory: not valid YAML at line 3, column 1: did not find expected node content "
        "(while parsing a flow node)\n"
    )
    assert stack.read_text() == "config:\n  aiperf-kueue:inventory: [\n"


def test_nodes_from_standard_input(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.small.yaml"
    code, out, err = run(
        "inventory", "import", "-", "--stack", str(stack), stdin=json.dumps(node_list(node("w-1", cpu="4")))
    )
    assert (code, err) == (0, "")
    assert out.startswith(f"Imported 1 Ready node from <stdin> into a new stack file {stack}")
    assert stack.read_text() == (
        "# Inventory written by `aiperf-kueue inventory import`; review it before `pulumi up`.\n"
        "config:\n"
        "  aiperf-kueue:inventory:\n"
        "    pools:\n"
        "      - name: cpu\n"
        "        nodes: 1\n"
        '        cpu: "4"\n'
        "        memory: 32Gi\n"
        "  # A starting point: one ClusterQueue with every pool's quota. Edit it.\n"
        "  aiperf-kueue:queues:\n"
        "    clusterQueues:\n"
        "      - name: benchmarks\n"
        "        share: 100\n"
        "        namespaces:\n"
        "          - name: aiperf-benchmarks\n"
    )


def test_drift_bad_input_exits_2(tmp_path: Path) -> None:
    nodes = write(tmp_path, "{")
    code, out, err = run("drift", "prod", str(nodes), "--exit-code")
    assert (code, out) == (2, "")
    assert (
        err == f"{nodes}: not JSON (Expecting property name enclosed in double quotes at line 1 column 2); {EXPECTED}\n"
    )
    assert run("drift", "prod", str(nodes), "--out", str(tmp_path)) == (
        2,
        "",
        f"{tmp_path}: --out is a directory: drift writes one JSON file\n",
    )


def test_an_inventory_kueue_would_reject_is_not_written(tmp_path: Path, stack: Path) -> None:
    taints = [{"key": f"team-{i}", "value": "only", "effect": "NoSchedule"} for i in range(9)]
    nodes = write(tmp_path, node_list(node("w-1", {"node-pool": "cpu"}, taints=taints)))
    before = stack.read_text()
    assert run("inventory", "import", str(nodes), "--stack", str(stack)) == (
        2,
        "",
        f"{stack}: aiperf-kueue:inventory.pools[0].nodeTaints: must have at most 8 items, got 9\n",
    )
    assert stack.read_text() == before
