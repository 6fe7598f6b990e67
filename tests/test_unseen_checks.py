"""What a stack-file fuzzer the project had never seen found (issue 32), each now one clean line, exit 2.

Quantities in units that make no sense for their resource, invisible characters in strings that reach
a manifest, a dataset ``type`` AIPerf has no model for, and a damaged ``plan --out`` directory read by
``diff``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from aiperf_kueue.cli.cli import main
from aiperf_kueue.common import display
from tests.support import ROOT

DEV = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text()
PROD = ROOT / "stacks" / "Pulumi.prod.yaml"


def _dev_with(old: str, new: str) -> str:
    assert DEV.count(old) == 1, old
    return DEV.replace(old, new)


def _plan(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """``plan`` of a stack file holding ``text``: its stderr lines (exit 2, nothing written)."""
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(text)
    assert main(["plan", str(path), "--out", str(tmp_path / "out")]) == 2
    printed = capsys.readouterr()
    assert printed.out == ""
    assert not (tmp_path / "out").exists()
    return [line.removeprefix(f"{display.escape(str(path))}: ") for line in printed.err.splitlines()]


POOL_CPU = '        cpu: "8"\n'
POOL_MEMORY = "        memory: 16Gi\n"
URL = "            urls: [http://mock-llm.aiperf-benchmarks.svc:8000]\n"


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            POOL_CPU,
            '        cpu: "8Gi"\n',
            'aiperf-kueue:inventory.pools[0].cpu: must be CPU cores such as "16", "1500m" or "0.5", got \'8Gi\': '
            "Gi is a binary suffix, for bytes (memory), not cores",
        ),
        (
            POOL_CPU,
            '        cpu: "2Ki"\n',
            'aiperf-kueue:inventory.pools[0].cpu: must be CPU cores such as "16", "1500m" or "0.5", got \'2Ki\': '
            "Ki is a binary suffix, for bytes (memory), not cores",
        ),
        (
            POOL_MEMORY,
            "        memory: 16000m\n",
            'aiperf-kueue:inventory.pools[0].memory: must be a whole number of bytes such as "64Gi" or "500M", '
            "got '16000m': m counts fractions (milli, micro, nano), which memory has none of",
        ),
        (
            "          memory: 512Mi\n",
            "          memory: 512Mi\n      workerPod:\n        cpu: 4k\n",
            'aiperf-kueue:operator.sizing.workerPod.cpu: must be CPU cores the operator can read, such as "2", '
            '"0.5" or "1500m" (no k, M, G or exponent suffix: it parses them as plain numbers), got \'4k\'',
        ),
        (
            URL,
            '            urls: ["http://mock\\u200bllm:8000"]\n',
            'aiperf-kueue:jobs[0].spec.benchmark.endpoint.urls[0]: "http://mock\\u200bllm:8000" holds the invisible '
            "control character \\u200b (a terminal escape or a bidi control); no config value needs one: remove it",
        ),
        (
            URL,
            URL + '            headers: {X-Team: "a\\r\\nX-Evil: 1"}\n',
            'aiperf-kueue:jobs[0].spec.benchmark.endpoint.headers: smoke: header X-Team: value "a\\r\\nX-Evil: 1" '
            "holds a line break or control character",
        ),
        (
            "          models: [mock-model]\n",
            '          models: ["mock\\nmodel"]\n',
            'aiperf-kueue:jobs[0].spec.benchmark.models: smoke: model name "mock\\nmodel" holds a line break or '
            "control character",
        ),
        (
            "              type: synthetic\n",
            "              type: 12345678901234567890123456789012345678901\n",
            "aiperf-kueue:jobs[0].spec.benchmark: smoke: datasets[0].type must be one of synthetic, file, public "
            "(AIPerf 0.13.0's dataset types), got 1.2345678901234568e+40",
        ),
        (
            "              type: synthetic\n",
            "              type: synthetic\n              promtps: {isl: 10}\n",
            "aiperf-kueue:jobs[0].spec.benchmark: smoke: datasets[0]: unknown key 'promtps' for a synthetic dataset "
            "(did you mean 'prompts'?); allowed: audio, entries, images, isl, name, osl, prefixPrompts, prompts, "
            "randomSeed, rankings, sampling, systemPrompt, systemPromptFile, turnDelay, turnDelayRatio, turns, "
            "type, video",
        ),
    ],
    ids=[
        "cpu-gi",
        "cpu-ki",
        "memory-milli",
        "sizing-cpu-k",
        "url-zero-width",
        "header-crlf",
        "model-newline",
        "dataset-type-41-digits",
        "dataset-unknown-key",
    ],
)
def test_nonsense_is_one_clean_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, expected: str
) -> None:
    assert _plan(tmp_path, _dev_with(old, new), capsys) == [expected]


def test_a_pool_cpu_in_kilo_cores_plans(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Valid (1000 cores a node): it used to crash the schedulability check's float parse.
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(_dev_with(POOL_CPU, "        cpu: 1k\n"))
    assert main(["plan", str(path), "--out", str(tmp_path / "out")]) == 0
    assert "  benchmarks    default  900 (100%)" in capsys.readouterr().out


@pytest.fixture(scope="module")
def prod_plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("plan") / "prod"
    assert main(["plan", str(PROD), "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("borrowingLimits", ["x"], "borrowingLimits: must be {ClusterQueue: {flavor: {resource: quantity}}}, got"),
        ("lendingLimits", {"team-a": 3}, "lendingLimits: must be {ClusterQueue: {flavor: {resource: quantity}}}, got"),
        ("provider", 7, "provider: must be {setting: value}, got 7"),
        # Found by the fuzzer on main (seed 2026, case 8417): an int as plan.json's kueue crashed diff.
        ("kueue", 7, "kueue: must be {version, apiVersion, source}, got 7"),
        ("cluster", ["a"], "cluster: must be {context, kubeconfig, currentContext, namedBy, target}, got"),
        ("kueueBoundary", {"a": 1}, "kueueBoundary: must be a list of steps (text), got"),
    ],
)
def test_diff_reads_a_damaged_plan_json_with_one_line(
    prod_plan: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, value: object, expected: str
) -> None:
    damaged = tmp_path / "damaged"
    shutil.copytree(prod_plan, damaged)
    data = json.loads((damaged / "plan.json").read_text())
    data[key] = value
    (damaged / "plan.json").write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["diff", str(prod_plan), str(damaged)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"{damaged}/plan.json: {expected}")


def test_shares_over_100_percent_in_a_fleet_name_the_first_few(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queues = "".join(
        f"      - name: team-{i}\n        share: 1\n        namespaces: [{{name: ns-{i}}}]\n" for i in range(1000)
    )
    text = DEV.split("  aiperf-kueue:queues:\n")[0] + "  aiperf-kueue:queues:\n    clusterQueues:\n" + queues
    assert _plan(tmp_path, text, capsys) == [
        "aiperf-kueue:queues.clusterQueues[100].share: shares of pool 'default' add up to 101%, more than 100% "
        "(team-0 1, team-1 1, team-2 1 … and 997 more)"
    ]


def test_a_problem_found_twice_is_printed_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stack = tmp_path / "Pulumi.x.yaml"
    stack.write_text(DEV)
    # The same path as the stack and as --out: one line about it, not two.
    bad = str(tmp_path / "bad\u202e.yaml")
    assert main(["plan", bad, "--out", bad]) == 2
    assert capsys.readouterr().err.count("\n") == 1


# --- inventory import of a real node list, then drift of the stack just written


def _node(name: str, cpu: str, memory: str, **spec: object) -> dict[str, object]:
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
    if name.startswith("cp-"):
        labels["node-role.kubernetes.io/control-plane"] = ""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


#: A control-plane node, two CPU nodes whose memory differs by 0.04% (kubelet reservations), one cordoned.
NODE_LIST = {
    "apiVersion": "v1",
    "kind": "List",
    "metadata": {"resourceVersion": ""},
    "items": [
        _node(
            "cp-1", "4", "8025340Ki", taints=[{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
        ),
        _node("worker-1", "7910m", "31710296Ki"),
        _node("worker-2", "7910m", "31698712Ki"),
        _node("worker-3", "7910m", "31710296Ki", unschedulable=True),
    ],
}


@pytest.mark.parametrize("form", ["json", "yaml"])
def test_import_groups_near_identical_nodes_and_drift_is_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], form: str
) -> None:
    nodes = tmp_path / f"nodes.{form}"
    nodes.write_text(json.dumps(NODE_LIST) if form == "json" else yaml.safe_dump(NODE_LIST))
    stack = tmp_path / "Pulumi.lab.yaml"
    assert main(["inventory", "import", str(nodes), "--stack", str(stack)]) == 0
    out = capsys.readouterr().out
    assert "  cpu: 2 nodes × cpu 7910m, memory 31698712Ki (new)\n" in out
    assert "  - cp-1: control-plane (taint node-role.kubernetes.io/control-plane:NoSchedule)\n" in out
    assert "  - worker-3: cordoned (spec.unschedulable)\n" in out
    assert (
        "        memory: 31698712Ki  # the smallest of 2 nodes (up to 31710296Ki): nodes whose allocatable differs "
        "a little are one pool, sized by its smallest node\n"
    ) in stack.read_text()
    assert main(["drift", str(stack), str(nodes), "--exit-code"]) == 0
    assert "no drift" in capsys.readouterr().out


@pytest.mark.parametrize("cloud", ["gke", "eks", "aks"])
def test_a_clouds_node_list_imports_and_drifts_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cloud: str
) -> None:
    nodes = ROOT / "tests" / "nodes" / f"{cloud}.json"
    stack = tmp_path / "Pulumi.cloud.yaml"
    assert main(["inventory", "import", str(nodes), "--stack", str(stack)]) == 0
    capsys.readouterr()
    assert main(["drift", str(stack), str(nodes), "--exit-code"]) == 0
    assert "no drift" in capsys.readouterr().out


def test_a_server_metrics_discovery_mode_is_one_of_aiperfs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Found by the widened fuzzer (seed 3232, case 966): a mapping as discovery.mode was accepted.
    text = _dev_with(
        "          serverMetrics: {enabled: false}\n", "          serverMetrics: {discovery: {mode: {k0: 0}}}\n"
    )
    assert _plan(tmp_path, text, capsys) == [
        "aiperf-kueue:jobs[0].spec.benchmark.serverMetrics: smoke: discovery.mode must be one of auto, kubernetes, "
        "disabled, got a mapping of 1 key (k0: 0)"
    ]


def test_thousands_of_problems_print_a_hundred_lines_and_a_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fleet of namespaces pasted twice (found by the fuzzer: 5,000 lines, cut by a pipe mid-line)."""
    names = "".join(f"          - name: ns-{i}\n" for i in range(300))
    text = (
        DEV.split("  aiperf-kueue:queues:\n")[0]
        + "  aiperf-kueue:queues:\n    clusterQueues:\n      - name: benchmarks\n        share: 100\n"
        + "        namespaces:\n"
        + names
        + names
    )
    lines = _plan(tmp_path, text, capsys)
    assert len(lines) == 101
    assert lines[0] == (
        "aiperf-kueue:queues.clusterQueues[0].namespaces[300].name: namespace 'ns-0' is already claimed by "
        "ClusterQueue 'benchmarks' (queues.clusterQueues[0].namespaces[0]); a namespace belongs to one ClusterQueue"
    )
    assert lines[100] == "… and 200 more problems like these"
