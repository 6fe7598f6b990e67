"""``aiperf-kueue diff``: what changes between two plans, by the program's own replace rules."""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path

import pytest

from offline import cli, sources
from offline.diff import (
    MISSING,
    FieldChange,
    LocalQueueNode,
    Plan,
    PoolRow,
    QuotaRow,
    compare,
    field_changes,
    parse_property_path,
    replace_triggers,
    resource_key,
)
from tests.support import ROOT

DIFF_STACKS = ROOT / "tests" / "diff_stacks"
PROD_FILE = ROOT / "stacks" / "Pulumi.prod.yaml"
LLAMA_LATENCY = "jobs-bench-team-a-llama-latency"


@functools.cache
def planned(path: Path) -> Plan:
    """A stack file planned once per test session, as ``diff`` sees it."""
    result = cli.compute_plan(path)
    return Plan(path.name, json.loads(result.files["resources.json"]), json.loads(result.files["plan.json"]))


def fixture(name: str) -> Plan:
    return planned(DIFF_STACKS / f"Pulumi.{name}.yaml")


def prod() -> Plan:
    return planned(PROD_FILE)


def actions(diff_changes: tuple) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(c.action, c.name, c.replace_because) for c in diff_changes]


def test_quota_change_updates_exactly_one_cluster_queue_with_the_deltas() -> None:
    diff = compare(prod(), fixture("quota"))
    assert diff.summary() == "0 to create, 1 to update, 0 to replace, 0 to delete"
    assert actions(diff.changes) == [("update", "queues-cq-team-b", ())]
    assert diff.changes[0].fields == (
        FieldChange("spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", "71820m", "59850m"),
        FieldChange("spec.resourceGroups[0].flavors[0].resources[1].nominalQuota", "285Gi", "243200Mi"),
    )
    assert diff.quotas == (
        QuotaRow("team-b", "cpu", "cpu", "71820m", "59850m"),
        QuotaRow("team-b", "cpu", "memory", "285Gi", "243200Mi"),
    )
    assert [q.delta for q in diff.quotas] == ["-11970m", "-48640Mi"]
    assert [p for p in diff.pools if p.changed] == [
        PoolRow("cpu", "cpu", "239400m", "227430m", "239400m", "239400m"),
        PoolRow("cpu", "memory", "950Gi", "924160Mi", "950Gi", "950Gi"),
    ]
    assert [(p.pool, p.resource, p.unassigned) for p in diff.pools if p.changed] == [
        ("cpu", "cpu", "11970m"),
        ("cpu", "memory", "48640Mi"),
    ]
    assert diff.endangered() == []


def test_moving_a_namespace_replaces_its_local_queue_and_relabels_the_namespace() -> None:
    diff = compare(prod(), fixture("move-namespace"))
    assert diff.summary() == "0 to create, 1 to update, 1 to replace, 0 to delete"
    assert actions(diff.changes) == [
        ("update", "ns-ml-team-b-ns", ()),
        ("replace", "ns-ml-team-b-lq-aiperf-queue", ("spec.clusterQueue",)),
    ]
    assert [c.fields for c in diff.changes] == [
        (FieldChange('metadata.labels["aiperf-kueue/cluster-queue"]', "team-b", "research"),),
        (FieldChange("spec.clusterQueue", "team-b", "research"),),
    ]
    replaced = diff.changes[1]
    assert (replaced.kind, replaced.delete_before_replace, replaced.protect) == (
        "LocalQueue ml-team-b/aiperf-queue",
        True,
        False,
    )
    # The ClusterQueues select namespaces by label: neither selector changes, nor does any quota.
    assert diff.quotas == ()
    assert LocalQueueNode("ml-team-b", "aiperf-queue", "research") in diff.hierarchy.local_queues


def test_job_concurrency_change_replaces_that_job() -> None:
    diff = compare(prod(), fixture("concurrency"))
    assert diff.summary() == "0 to create, 0 to update, 1 to replace, 0 to delete"
    assert actions(diff.changes) == [("replace", LLAMA_LATENCY, ("spec.benchmark",))]
    assert diff.changes[0].fields == (FieldChange("spec.benchmark.phases[1].concurrency", 50, 64),)
    assert (diff.changes[0].retain_on_delete, diff.changes[0].delete_before_replace) == (True, True)


def test_cancel_updates_the_job_in_place() -> None:
    diff = compare(prod(), fixture("cancel"))
    assert diff.summary() == "0 to create, 1 to update, 0 to replace, 0 to delete"
    assert actions(diff.changes) == [("update", LLAMA_LATENCY, ())]
    assert diff.changes[0].fields == (FieldChange("spec.cancel", MISSING, True),)


def test_adding_a_namespace_creates_only_that_namespaces_resources() -> None:
    diff = compare(prod(), fixture("add-namespace"))
    assert diff.summary() == "5 to create, 0 to update, 0 to replace, 0 to delete"
    assert [(c.action, c.name, c.kind) for c in diff.changes] == [
        ("create", "ns-bench-team-b2", ""),
        ("create", "ns-bench-team-b2-lq-aiperf-queue", "LocalQueue bench-team-b2/aiperf-queue"),
        ("create", "ns-bench-team-b2-ns", "Namespace bench-team-b2"),
        ("create", "ns-bench-team-b2-role", "Role bench-team-b2/aiperf-operator-benchmark"),
        ("create", "ns-bench-team-b2-rolebinding", "RoleBinding bench-team-b2/aiperf-operator-benchmark"),
    ]
    assert diff.quotas == ()


def test_identical_stacks_have_no_changes() -> None:
    diff = compare(prod(), prod())
    assert (diff.summary(), diff.has_changes, diff.changes, diff.quotas) == ("No changes.", False, (), ())
    assert not any(p.changed for p in diff.pools)


def test_a_renamed_copy_matches_resource_by_resource(tmp_path: Path) -> None:
    # URNs carry the stack name; resources match without it.
    copy = tmp_path / "Pulumi.other.yaml"
    copy.write_text(PROD_FILE.read_text())
    diff = compare(prod(), planned(copy))
    assert diff.summary() == "No changes."
    assert resource_key("urn:pulumi:other::aiperf-kueue::a$b::c") == "aiperf-kueue::a$b::c"


def _without(plan: Plan, name: str) -> Plan:
    return Plan("head", [r for r in plan.resources if r["name"] != name], plan.data)


def test_deleting_a_protected_resource_is_endangered() -> None:
    diff = compare(prod(), _without(prod(), "kueue-chart"))
    assert diff.summary() == "0 to create, 0 to update, 0 to replace, 1 to delete"
    assert [(c.action, c.name, c.protect) for c in diff.endangered()] == [("delete", "kueue-chart", True)]


def test_field_changes_walk_mappings_and_lists() -> None:
    old = {"a": {"b": 1, "gone": "x"}, "l": [1, 2, 3], "n": {"nvidia.com/gpu": 8}, "t": 1}
    new = {"a": {"b": 2}, "l": [1, 5], "n": {"nvidia.com/gpu": 16}, "t": 1.5, "new": {"k": True}}
    assert field_changes(old, new) == [
        FieldChange("a.b", 1, 2),
        FieldChange("a.gone", "x", MISSING),
        FieldChange("l[1]", 2, 5),
        FieldChange("l[2]", 3, MISSING),
        FieldChange('n["nvidia.com/gpu"]', 8, 16),
        FieldChange("t", 1, 1.5),
        FieldChange("new", MISSING, {"k": True}),
    ]
    assert field_changes({"x": 1}, {"x": True}) == [FieldChange("x", 1, True)]


def test_property_paths_parse_like_pulumis() -> None:
    assert parse_property_path("spec.clusterQueue") == ("spec", "clusterQueue")
    assert parse_property_path('metadata.labels["kueue.x-k8s.io/queue-name"]') == (
        "metadata",
        "labels",
        "kueue.x-k8s.io/queue-name",
    )
    assert parse_property_path("spec.flavors[0].resources[*].name") == ("spec", "flavors", 0, "resources", "*", "name")
    with pytest.raises(ValueError, match="not a property path"):
        parse_property_path("spec..x")


def test_replace_rules_match_the_path_below_and_above() -> None:
    rules = ["spec.clusterQueue", "spec.benchmark", "spec.flavors[*].name"]
    assert replace_triggers({"spec": {"clusterQueue": "a"}}, {"spec": {"clusterQueue": "b"}}, rules) == [
        "spec.clusterQueue"
    ]
    # A change deep below a rule's path, and a whole spec appearing above it.
    assert replace_triggers({"spec": {"benchmark": {"x": [1]}}}, {"spec": {"benchmark": {"x": [2]}}}, rules) == [
        "spec.benchmark"
    ]
    assert replace_triggers({}, {"spec": {"clusterQueue": "a", "cancel": True}}, rules) == ["spec.clusterQueue"]
    assert replace_triggers({"spec": {"cancel": False}}, {"spec": {"cancel": True}}, rules) == []
    flavors = {"spec": {"flavors": [{"name": "a", "q": 1}]}}
    assert replace_triggers(flavors, {"spec": {"flavors": [{"name": "a", "q": 2}]}}, rules) == []
    assert replace_triggers(flavors, {"spec": {"flavors": [{"name": "b", "q": 1}]}}, rules) == ["spec.flavors[*].name"]


# --- the command -------------------------------------------------------------------------------


def test_diff_prints_markdown_and_exit_code_only_counts_changes(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["diff", "prod", "prod"]) == 0
    assert capsys.readouterr().out.splitlines()[:4] == [
        "<!-- aiperf-kueue-diff stack=prod -->",
        "## aiperf-kueue diff: `prod`",
        "",
        "No changes.",
    ]
    assert cli.main(["diff", "prod", "prod", "--exit-code"]) == 0
    quota = str(DIFF_STACKS / "Pulumi.quota.yaml")
    assert cli.main(["diff", "prod", quota]) == 0
    assert cli.main(["diff", "prod", quota, "--exit-code"]) == 3
    assert capsys.readouterr().out.count("0 to create, 1 to update, 0 to replace, 0 to delete\n") == 2


def test_diff_writes_the_report_to_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "diff-prod.md"
    head = str(DIFF_STACKS / "Pulumi.cancel.yaml")
    assert cli.main(["diff", "prod", head, "--out", str(out)]) == 0
    assert capsys.readouterr().out == f"0 to create, 1 to update, 0 to replace, 0 to delete Wrote {out}\n"
    assert out.read_text().splitlines()[3] == "0 to create, 1 to update, 0 to replace, 0 to delete"


def test_diff_reads_plan_out_directories(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["plan", "prod", "--out", str(tmp_path / "prod")]) == 0
    capsys.readouterr()
    assert cli.main(["diff", str(tmp_path / "prod"), "prod"]) == 0
    out = capsys.readouterr().out
    assert "\nNo changes.\n" in out
    assert f"- **base:** `{tmp_path / 'prod'}` (a `plan --out` directory)\n" in out


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with prod's stack file committed, then changed (team-b's cpu share 30 → 25)."""
    root = tmp_path / "repo"
    (root / "stacks").mkdir(parents=True)
    stack = root / "stacks" / "Pulumi.prod.yaml"
    stack.write_text(PROD_FILE.read_text())
    _git(root, "init", "-q")
    _git(root, "add", "stacks/Pulumi.prod.yaml")
    _git(root, "commit", "-q", "-m", "prod")
    stack.write_text(PROD_FILE.read_text().replace("          cpu: 30\n", "          cpu: 25\n"))
    return root


def test_diff_against_a_git_revision(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head = str(repo / "stacks" / "Pulumi.prod.yaml")
    assert cli.diff_command("HEAD:prod", head, None, exit_code=True, repo_root=repo) == 3
    lines = capsys.readouterr().out.splitlines()
    assert lines[3] == "0 to create, 1 to update, 0 to replace, 0 to delete"
    assert lines[5:8] == [
        "- **base:** `HEAD:prod` (`stacks/Pulumi.prod.yaml` at `HEAD`, planned with this checkout's program code)",
        f"- **head:** `{head}` (`{head}`)",
        "- `HEAD:prod` is planned with this checkout's program code, not the code at `HEAD`.",
    ]
    assert "| team-b | cpu | cpu | 71820m | 59850m | -11970m |" in lines


def test_revision_reader_writes_the_committed_file(repo: Path, tmp_path: Path) -> None:
    into = tmp_path / "into"
    into.mkdir()
    side = sources.read_stack_at_revision("HEAD", "prod", repo, into)
    assert (side.path, side.source) == (into / "Pulumi.prod.yaml", "HEAD:stacks/Pulumi.prod.yaml")
    assert side.path.read_text() == PROD_FILE.read_text()
    by_path = sources.read_stack_at_revision("HEAD", "stacks/Pulumi.prod.yaml", repo, into)
    assert by_path.source == "HEAD:stacks/Pulumi.prod.yaml"


def test_bad_revision_and_missing_stack_are_one_line_errors(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.diff_command("no-such-rev:prod", "prod", None, exit_code=False, repo_root=repo) == 2
    assert cli.diff_command("HEAD:nope", "prod", None, exit_code=False, repo_root=repo) == 2
    assert cli.diff_command("-p:prod", "prod", None, exit_code=False, repo_root=repo) == 2
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err.splitlines() == [
        "no-such-rev:stacks/Pulumi.prod.yaml: aiperf-kueue:: cannot read stack file at revision 'no-such-rev': "
        "fatal: invalid object name 'no-such-rev'.",
        "HEAD:stacks/Pulumi.nope.yaml: aiperf-kueue:: cannot read stack file at revision 'HEAD': "
        "fatal: path 'stacks/Pulumi.nope.yaml' does not exist in 'HEAD'",
        "-p:stacks/Pulumi.prod.yaml: aiperf-kueue:: expected REV:STACK, e.g. origin/main:prod",
    ]


def test_missing_stack_and_invalid_head_exit_2_like_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["diff", "prod", "nope"]) == 2
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text(PROD_FILE.read_text().replace('nodes: 4\n        cpu: "63"', 'nodes: 0\n        cpu: "63"'))
    assert cli.main(["diff", "prod", str(bad)]) == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["diff", str(empty), "prod"]) == 2
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err.splitlines() == [
        "stacks/Pulumi.nope.yaml: aiperf-kueue:: cannot read stack file: No such file or directory",
        f"{bad}: aiperf-kueue:inventory.pools[0].nodes: must be >= 1, got 0",
        f"{empty}: aiperf-kueue:: no resources.json here: expected a 'plan --out' directory or a stack",
    ]
    assert "Traceback" not in printed.err
