"""The Markdown report: GitHub tables, the caution block, the Mermaid flowchart, ``plan --format markdown``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aiperf_kueue.cli import cli
from aiperf_kueue.review import markdown
from aiperf_kueue.review.diff import Plan, compare
from tests.support import OPERATOR_CHART_NOTE, ROOT
from tests.test_diff import LLAMA_LATENCY, _record, _without, fixture, prod

FIXTURES = ["quota", "move-namespace", "concurrency", "cancel", "timeout", "add-namespace"]
#: prod's research ClusterQueue as the flowchart labels it: its GPU quota per flavor.
RESEARCH = "ClusterQueue research<br/>gpu-h100: 8 nvidia.com/gpu"


def _cells(line: str) -> list[str]:
    """A table row's cells: split on pipes that are not escaped."""
    assert line.startswith("|") and line.endswith("|"), line
    return [c.strip() for c in re.split(r"(?<!\\)\|", line[1:-1])]


def tables(text: str) -> list[list[list[str]]]:
    """Every table (consecutive lines starting with '|'), each checked as a GitHub table."""
    found: list[list[list[str]]] = []
    block: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            block.append(line)
            continue
        if block:
            header, separator, *rows = (_cells(b) for b in block)
            assert all(re.fullmatch(r":?-{3,}:?", c) for c in separator), block[1]
            assert {len(separator), *(len(r) for r in rows)} == {len(header)}, block
            found.append([header, *rows])
            block = []
    return found


_NODE = re.compile(r'^  (\w+)(\["([^"]*)"\]|\(\["([^"]*)"\]\)|\{\{"([^"]*)"\}\}|\[/"([^"]*)"/\])$')
_EDGE = re.compile(r"^  (\w+) --> (\w+)$")
_CLASS = re.compile(r"^  class ([\w,]+) (\w+)$")
_CLASSDEF = re.compile(r"^  classDef (\w+) [\w:#,]+$")


def mermaid_graph(text: str) -> tuple[list[str], list[tuple[str, str]], dict[str, list[str]]]:
    """The ```mermaid block, checked: declarations, edges, classes; returns them."""
    blocks = re.findall(r"^```mermaid\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)
    assert len(blocks) == 1
    lines = blocks[0].splitlines()
    assert lines[0] == "flowchart LR"
    nodes: list[str] = []
    edges: list[tuple[str, str]] = []
    classes: dict[str, list[str]] = {}
    defined: list[str] = []
    for line in lines[1:]:
        unquoted = re.sub(r'"[^"]*"', "", line)
        for opening, closing in ("[]", "()", "{}"):
            assert unquoted.count(opening) == unquoted.count(closing), line
        if m := _NODE.match(line):
            nodes.append(m[1])
        elif m := _EDGE.match(line):
            edges.append((m[1], m[2]))
        elif m := _CLASSDEF.match(line):
            defined.append(m[1])
        elif m := _CLASS.match(line):
            classes[m[2]] = m[1].split(",")
        else:
            raise AssertionError(f"not a flowchart line: {line!r}")
    assert len(nodes) == len(set(nodes)), "a node is declared twice"
    assert all(a in nodes and b in nodes for a, b in edges), "an edge names an undeclared node"
    assert all(n in nodes for ids in classes.values() for n in ids)
    assert set(classes) <= set(defined)
    return nodes, edges, classes


def mermaid_labels(text: str) -> tuple[list[str], list[tuple[str, str]], dict[str, list[str]]]:
    """:func:`mermaid_graph` with every node named by its label (``ClusterQueue team-a``)."""
    mermaid_graph(text)
    block = re.findall(r"^```mermaid\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)[0]
    label = {m[1]: next(g for g in m.groups()[2:] if g is not None) for m in map(_NODE.match, block.splitlines()) if m}
    nodes, edges, classes = mermaid_graph(text)
    return (
        [label[n] for n in nodes],
        [(label[a], label[b]) for a, b in edges],
        {cls: [label[n] for n in ids] for cls, ids in classes.items()},
    )


def report(name: str) -> str:
    return markdown.render(compare(prod(), fixture(name)), f"aiperf-kueue diff: `{name}`")


@pytest.mark.parametrize("name", FIXTURES)
def test_every_fixture_report_has_valid_tables_and_flowchart(name: str) -> None:
    text = report(name)
    # Quota and pool tables only where a quota changes; the resource table always.
    assert [t[0][0] for t in tables(text)] == (
        ["ClusterQueue / flavor / resource", "pool", "action"] if name == "quota" else ["action"]
    )
    nodes, edges, _ = mermaid_graph(text)
    assert len(edges) >= len(nodes) - 1


def test_quota_report_literally() -> None:
    quota, pools, resources = tables(report("quota"))
    assert quota == [
        ["ClusterQueue / flavor / resource", "quota", "base", "head", "delta", "share of pool"],
        ["team-b / cpu / cpu", "nominalQuota", "71820m", "59850m", "-11970m", "30% → 25%"],
        ["team-b / cpu / memory", "nominalQuota", "285Gi", "243200Mi", "-48640Mi", "30% → 25%"],
    ]
    assert pools[:4] == [
        ["pool", "resource", "handed out", "pool total (inventory less headroom)", "unassigned"],
        ["cpu", "cpu", "239400m → 227430m", "239400m", "11970m"],
        ["cpu", "memory", "950Gi → 924160Mi", "950Gi", "48640Mi"],
        ["cpu", "nvidia.com/gpu", "0", "0", "0"],
    ]
    assert resources == [
        ["action", "resource", "kind", "changed inputs (base → head)", "notes"],
        [
            "update",
            "`queues-cq-team-b`",
            "ClusterQueue team-b",
            "`team-b / cpu / cpu: nominalQuota`: `71820m` → `59850m`<br>"
            "`team-b / cpu / memory: nominalQuota`: `285Gi` → `243200Mi`",
            "—",
        ],
    ]


def test_replace_rows_bold_the_trigger_and_the_flowchart_marks_the_queue() -> None:
    text = report("move-namespace")
    rows = tables(text)[-1]
    assert rows[2] == [
        "replace",
        "`ns-ml-team-b-lq-aiperf-queue`",
        "LocalQueue ml-team-b/aiperf-queue",
        "**`spec.clusterQueue`**: `team-b` → `research`",
        "replaceOnChanges: `spec.clusterQueue`; delete before replace",
    ]
    _, edges, classes = mermaid_labels(text)
    assert (RESEARCH, "LocalQueue ml-team-b/aiperf-queue") in edges
    assert ("LocalQueue ml-team-b/aiperf-queue", "namespace ml-team-b") in edges
    assert classes == {"replaced": ["LocalQueue ml-team-b/aiperf-queue"]}


def test_added_namespace_is_marked_created() -> None:
    _, _, classes = mermaid_labels(report("add-namespace"))
    assert classes == {"created": ["LocalQueue bench-team-b2/aiperf-queue", "namespace bench-team-b2"]}


def test_flowchart_of_prod_is_cohort_to_queues_to_namespaces() -> None:
    text = markdown.render(compare(prod(), prod()), "t")
    nodes, _, _ = mermaid_graph(text)
    assert nodes == ["cohort1", "cq1", "cq2", "cq3", "lq1", "lq2", "lq3", "lq4", "lq5", "ns1", "ns2", "ns3", "ns4"]
    labels, edges, classes = mermaid_labels(text)
    assert labels == [
        "cohort benchmarks",
        RESEARCH,
        "ClusterQueue team-a<br/>gpu-h100: 16 nvidia.com/gpu<br/>gpu-a100: 8 nvidia.com/gpu",
        "ClusterQueue team-b<br/>gpu-h100: 8 nvidia.com/gpu<br/>gpu-a100: 8 nvidia.com/gpu",
        "LocalQueue bench-research/aiperf-queue",
        "LocalQueue bench-team-a/aiperf-queue",
        "LocalQueue bench-team-a/default",
        "LocalQueue bench-team-b/aiperf-queue",
        "LocalQueue ml-team-b/aiperf-queue",
        "namespace bench-research",
        "namespace bench-team-a",
        "namespace bench-team-b",
        "namespace ml-team-b",
    ]
    assert edges[:3] == [("cohort benchmarks", labels[i]) for i in (1, 2, 3)]
    assert len(edges) == 3 + 2 * 5
    assert classes == {}


def _local_queue(namespace: str, name: str, cluster_queue: str) -> dict[str, object]:
    return {
        "type": "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue",
        "name": f"{namespace}-{name}",
        "urn": f"urn:pulumi:s::aiperf-kueue::kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue::{namespace}-{name}",
        "inputs": {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": cluster_queue},
        },
    }


def test_flowchart_ids_do_not_collide_whatever_the_names() -> None:
    # Spelled into ids, both LocalQueues (and the ClusterQueues) used to be one node.
    head = Plan(
        "h",
        [
            _local_queue("x--y", "aiperf-queue", "a.b"),
            _local_queue("x", "y--aiperf-queue", "a-b"),
        ],
        {},
    )
    text = markdown.render(compare(None, head), "t")
    nodes, _, _ = mermaid_graph(text)
    assert nodes == ["cq1", "cq2", "lq1", "lq2", "ns1", "ns2"]
    labels, edges, _ = mermaid_labels(text)
    assert labels == [
        "ClusterQueue a.b (not in this stack)",
        "ClusterQueue a-b (not in this stack)",
        "LocalQueue x--y/aiperf-queue",
        "LocalQueue x/y--aiperf-queue",
        "namespace x--y",
        "namespace x",
    ]
    assert edges == [
        ("ClusterQueue a.b (not in this stack)", "LocalQueue x--y/aiperf-queue"),
        ("LocalQueue x--y/aiperf-queue", "namespace x--y"),
        ("ClusterQueue a-b (not in this stack)", "LocalQueue x/y--aiperf-queue"),
        ("LocalQueue x/y--aiperf-queue", "namespace x"),
    ]


def test_no_changes_report_is_the_summary_and_the_flowchart() -> None:
    text = markdown.render(compare(prod(), prod()), "aiperf-kueue diff: `prod`")
    assert text.splitlines()[:9] == [
        "<!-- aiperf-kueue-diff stack=prod -->",
        "## aiperf-kueue diff: `prod`",
        "",
        "No changes.",
        "",
        "- **base:** Pulumi.prod.yaml",
        "- **head:** Pulumi.prod.yaml",
        "",
        "### Queue hierarchy (head)",
    ]
    assert tables(text) == []
    assert "### Quotas" not in text and "### Resources" not in text


def test_protected_delete_is_a_caution_block() -> None:
    text = markdown.render(compare(prod(), _without(prod(), "kueue-chart")), "t")
    start = text.index("> [!CAUTION]")
    assert text[start:].splitlines()[:4] == [
        "> [!CAUTION]",
        "> Protected resources would be deleted or replaced; `pulumi up` stops on them until",
        "> `protect` is lifted (deliberately, in its own change):",
        "> - **delete** `kueue-chart` (Chart)",
    ]
    assert tables(text)[-1][1] == ["delete", "`kueue-chart`", "Chart", "—", "**protected: `pulumi up` refuses**"]


def test_cells_escape_pipes_and_newlines() -> None:
    head = Plan("h", [dict(r) for r in prod().resources], prod().data)
    job = next(r for r in head.resources if r["name"] == "jobs-bench-research-llama-sweep-c1")
    job["inputs"] = {**job["inputs"], "spec": {**job["inputs"]["spec"], "cancel": "a|b\nc"}}
    rows = tables(markdown.render(compare(prod(), head), "t"))[-1]
    assert rows[1][3] == "`spec.cancel`: `(absent)` → `a\\|b c`"


def test_plan_format_markdown_prints_the_report_and_still_writes_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["plan", "dev", "--format", "markdown", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr()
    lines = printed.out.splitlines()
    assert lines[:4] == ["<!-- aiperf-kueue-diff stack=dev -->", "## aiperf-kueue plan: `dev`", "", lines[3]]
    assert re.fullmatch(r"\d+ to create, 0 to update, 0 to replace, 0 to delete", lines[3])
    assert "Resources (" not in printed.out
    assert (
        printed.err
        == OPERATOR_CHART_NOTE + f"Wrote manifests.yaml, resources.json, plan.json, charts.yaml to {tmp_path}/\n"
    )
    quota, pools, resources, jobs, preflight = tables(printed.out)
    assert quota == [
        ["ClusterQueue", "flavor", "resource", "nominalQuota", "share of pool", "borrowingLimit", "lendingLimit"],
        ["benchmarks", "default", "cpu", "7200m", "100%", "—", "—"],
        ["benchmarks", "default", "memory", "14745Mi", "100%", "—", "—"],
    ]
    assert pools[1:] == [["default", "cpu", "7200m", "7200m", "0"], ["default", "memory", "14745Mi", "14745Mi", "0"]]
    # Nothing to compare with: no "base → head" column.
    assert resources[0] == ["action", "resource", "kind", "notes"]
    assert len(resources) - 1 == int(lines[3].split()[0])
    assert {r[0] for r in resources[1:]} == {"create"}
    assert ["`jobs-aiperf-benchmarks-smoke`", "AIPerfJob aiperf-benchmarks/smoke-42740b", "retainOnDelete"] in [
        r[1:] for r in resources
    ]
    # What the console text of plan shows of the jobs and AIPerf's preflight.
    assert lines[lines.index("### AIPerfJobs") + 2] == "Each proven to fit its ClusterQueue on an empty cluster."
    assert jobs == [
        ["job", "AIPerfJob", "namespace", "queue", "priority", "pods", "cpu", "memory", "flavor", "fit at once"],
        ["smoke", "`smoke-42740b`", "aiperf-benchmarks", "aiperf-queue", "—", "2", "3775m", "8000Mi", "default", "1"],
    ]
    assert '### AIPerf preflight "Kueue Queue" (3 submissions)' in lines
    assert preflight == [
        ["status", "submission", "operator's message", "notes"],
        ["PASS", "AIPerfJob aiperf-benchmarks/smoke-42740b", "Kueue LocalQueue 'aiperf-queue' exists", "—"],
        [
            "PASS",
            "aiperf kube profile -n aiperf-benchmarks --queue-name aiperf-queue",
            "Kueue LocalQueue 'aiperf-queue' exists",
            "—",
        ],
        [
            "PASS",
            "aiperf kube profile -n aiperf-benchmarks (no --queue-name)",
            "No explicit queue specified but namespace has kueue.x-k8s.io/default-queue-name annotation",
            "then: the operator labels the JobSet kueue.x-k8s.io/queue-name=aiperf-queue (operator.defaultQueue: "
            "auto, the LocalQueue every benchmark namespace has) and creates it suspended; Kueue admits it through "
            "LocalQueue aiperf-queue (ClusterQueue benchmarks)",
        ],
    ]
    mermaid_graph(printed.out)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "charts.yaml",
        "manifests.yaml",
        "plan.json",
        "resources.json",
    ]


def test_plan_text_output_is_unchanged_by_the_format_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["plan", "prod", "--out", str(tmp_path / "a")]) == 0
    default = capsys.readouterr().out
    assert cli.main(["plan", "prod", "--format", "text", "--out", str(tmp_path / "a")]) == 0
    assert capsys.readouterr().out == default
    assert default.startswith(f"Stack prod ({Path('stacks') / 'Pulumi.prod.yaml'}): Kueue 0.19.2, v1beta2\n")
    assert ROOT.is_dir()


def test_a_changed_benchmark_is_a_new_run_without_caution() -> None:
    text = report("concurrency")
    assert "> [!CAUTION]" not in text
    assert tables(text)[-1][1] == [
        "replace",
        "`jobs-bench-team-a-llama-latency`",
        "AIPerfJob bench-team-a/llama-latency-97b89f",
        "**`metadata.name`**: `llama-latency-7b5e06` → `llama-latency-97b89f`<br>"
        "**`spec.benchmark.phases[1].concurrency`**: `50` → `64`",
        "replaceOnChanges: `spec.benchmark`; `metadata.name` changes: a new run, named after its spec; "
        "the earlier run is left in the cluster (retainOnDelete)",
    ]


def test_a_failing_retained_replace_is_a_caution_block() -> None:
    # A retained object replaced under the name it keeps: plans from before AIPerfJobs were named after their spec.
    meta = {"name": "llama-latency", "namespace": "bench-team-a"}
    old = _record(LLAMA_LATENCY, meta, {"benchmark": {"concurrency": 50}}, retain=True)
    new = _record(LLAMA_LATENCY, meta, {"benchmark": {"concurrency": 64}}, retain=True)
    text = markdown.render(compare(Plan("b", [old], {}), Plan("h", [new], {})), "t")
    start = text.index("> [!CAUTION]")
    assert text[start:].splitlines()[:9] == [
        "> [!CAUTION]",
        "> These replacements fail on `pulumi up` with `AlreadyExists`: `retainOnDelete` leaves the old",
        "> object in the cluster (and drops it from the state), and its replacement is created under the",
        "> same name:",
        "> - **replace** `jobs-bench-team-a-llama-latency` (AIPerfJob bench-team-a/llama-latency)",
        ">",
        "> Change the object's name with it (the old one stays, with what it holds), or first set",
        "> `retainOnDelete: false` on it and `pulumi up` (the state's flag decides what happens to the",
        "> old object), then make this change.",
    ]
    assert text.count("> [!CAUTION]") == 1
    assert tables(text)[-1][1][4] == (
        "replaceOnChanges: `spec.benchmark`; delete before replace; "
        "**fails: `AlreadyExists` (the retained old object keeps the name)**"
    )


def test_moving_kueue_says_why_its_namespace_and_chart_are_replaced() -> None:
    text = report("kueue-namespace")
    start = text.index("> [!CAUTION]")
    assert text[start:].splitlines()[3:5] == [
        "> - **replace** `kueue-chart` (Chart)",
        "> - **replace** `kueue-ns` (Namespace kueue-alt)",
    ]
    rows = {r[1]: r for r in tables(text)[-1][1:]}
    assert rows["`kueue-ns`"] == [
        "replace",
        "`kueue-ns`",
        "Namespace kueue-alt",
        "**`metadata.name`**: `kueue-system` → `kueue-alt`",
        "`metadata.name` changes: pulumi-kubernetes replaces a renamed or moved object; "
        "**protected: `pulumi up` refuses**",
    ]
    assert rows["`kueue-chart`"][4] == (
        "`namespace` changes: every object of the chart moves, so each is replaced; **protected: `pulumi up` refuses**"
    )


def test_a_long_changed_value_gets_a_line_diff() -> None:
    text = report("kueue-namespace")
    config = "`values.managerConfig.controllerManagerConfigYaml`"
    cut = "`apiVersion: config.kueue.x-k8s.io/v1beta2 kind:…`"
    rows = {r[1]: r for r in tables(text)[-1][1:]}
    # Cut to the same 48 characters on both sides: only the line diff shows what changed.
    assert rows["`kueue-chart`"][3] == (
        f"**`namespace`**: `kueue-system` → `kueue-alt`<br>{config}: {cut} → {cut} (line diff below)"
    )
    start = text.index("<details>")
    assert text[start:].splitlines()[:17] == [
        "<details><summary><code>kueue-chart</code> <code>values.managerConfig.controllerManagerConfigYaml</code>"
        "</summary>",
        "",
        "```diff",
        "--- base",
        "+++ head",
        "@@ -41,6 +41,6 @@",
        "     operator: NotIn",
        "     values:",
        "     - kube-system",
        "-    - kueue-system",
        "+    - kueue-alt",
        "     - jobset-system",
        "     - aiperf-system",
        "```",
        "",
        "</details>",
        "",
    ]
    assert text.count("<details>") == 1


def test_a_line_diff_fence_outlasts_backticks_in_the_value() -> None:
    head = Plan("h", [dict(r) for r in prod().resources], prod().data)
    job = next(r for r in head.resources if r["name"] == "jobs-bench-research-llama-sweep-c1")
    long = "line one\n```\nline three, long enough to be cut in the table"
    job["inputs"] = {**job["inputs"], "spec": {**job["inputs"]["spec"], "cancel": long}}
    text = markdown.render(compare(prod(), head), "t")
    start = text.index("<details>")
    assert text[start:].splitlines()[2:10] == [
        "````diff",
        "--- base",
        "+++ head",
        "@@ -0,0 +1,3 @@",
        "+line one",
        "+```",
        "+line three, long enough to be cut in the table",
        "````",
    ]
