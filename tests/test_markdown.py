"""The Markdown report: GitHub tables, the caution block, the Mermaid flowchart, ``plan --format markdown``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from offline import cli, markdown
from offline.diff import Plan, compare
from tests.support import ROOT
from tests.test_diff import _without, fixture, prod

FIXTURES = ["quota", "move-namespace", "concurrency", "cancel", "add-namespace"]


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


_NODE = re.compile(r'^  (\w+)(\["[^"]*"\]|\(\["[^"]*"\]\)|\{\{"[^"]*"\}\}|\[/"[^"]*"/\])$')
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


def report(name: str) -> str:
    return markdown.render(compare(prod(), fixture(name)), f"aiperf-kueue diff: `{name}`")


@pytest.mark.parametrize("name", FIXTURES)
def test_every_fixture_report_has_valid_tables_and_flowchart(name: str) -> None:
    text = report(name)
    # Quota and pool tables only where a quota changes; the resource table always.
    assert [t[0][0] for t in tables(text)] == (["ClusterQueue", "pool", "action"] if name == "quota" else ["action"])
    nodes, edges, _ = mermaid_graph(text)
    assert len(edges) >= len(nodes) - 1


def test_quota_report_literally() -> None:
    quota, pools, resources = tables(report("quota"))
    assert quota == [
        ["ClusterQueue", "flavor", "resource", "base", "head", "delta"],
        ["team-b", "cpu", "cpu", "71820m", "59850m", "-11970m"],
        ["team-b", "cpu", "memory", "285Gi", "243200Mi", "-48640Mi"],
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
            "`spec.resourceGroups[0].flavors[0].resources[0].nominalQuota`: `71820m` → `59850m`<br>"
            "`spec.resourceGroups[0].flavors[0].resources[1].nominalQuota`: `285Gi` → `243200Mi`",
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
    _, edges, classes = mermaid_graph(text)
    assert ("cq_research", "lq_ml_team_b__aiperf_queue") in edges
    assert ("lq_ml_team_b__aiperf_queue", "ns_ml_team_b") in edges
    assert classes == {"replaced": ["lq_ml_team_b__aiperf_queue"]}


def test_added_namespace_is_marked_created() -> None:
    _, _, classes = mermaid_graph(report("add-namespace"))
    assert classes == {"created": ["lq_bench_team_b2__aiperf_queue", "ns_bench_team_b2"]}


def test_flowchart_of_prod_is_cohort_to_queues_to_namespaces() -> None:
    nodes, edges, classes = mermaid_graph(markdown.render(compare(prod(), prod()), "t"))
    assert nodes == [
        "cohort_benchmarks",
        "cq_research",
        "cq_team_a",
        "cq_team_b",
        "lq_bench_research__aiperf_queue",
        "lq_bench_team_a__aiperf_queue",
        "lq_bench_team_a__default",
        "lq_bench_team_b__aiperf_queue",
        "lq_ml_team_b__aiperf_queue",
        "ns_bench_research",
        "ns_bench_team_a",
        "ns_bench_team_b",
        "ns_ml_team_b",
    ]
    assert edges[:3] == [
        ("cohort_benchmarks", "cq_research"),
        ("cohort_benchmarks", "cq_team_a"),
        ("cohort_benchmarks", "cq_team_b"),
    ]
    assert len(edges) == 3 + 2 * 5
    assert classes == {}


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
        "- Secret inputs compare as `[secret]` (1 resource(s) have some): a change inside a secret does not show "
        "here; `pulumi preview` shows it.",
        "",
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
    assert printed.err == f"Wrote manifests.yaml, resources.json, plan.json, charts.yaml to {tmp_path}/\n"
    quota, pools, resources = tables(printed.out)
    assert quota == [
        ["ClusterQueue", "flavor", "resource", "nominalQuota"],
        ["benchmarks", "default", "cpu", "7200m"],
        ["benchmarks", "default", "memory", "14745Mi"],
    ]
    assert pools[1:] == [["default", "cpu", "7200m", "7200m", "0"], ["default", "memory", "14745Mi", "14745Mi", "0"]]
    assert len(resources) - 1 == int(lines[3].split()[0])
    assert {r[0] for r in resources[1:]} == {"create"}
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
