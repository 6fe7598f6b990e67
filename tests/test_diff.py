"""``aiperf-kueue diff``: what changes between two plans, by the program's own replace rules."""

from __future__ import annotations

import functools
import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from aiperf_kueue.cli import cli, sources
from aiperf_kueue.review.diff import Plan, compare
from aiperf_kueue.review.hierarchy import LocalQueueNode
from aiperf_kueue.review.quota_diff import PoolRow, QuotaRow
from aiperf_kueue.review.resource_diff import (
    MISSING,
    FieldChange,
    field_changes,
    parse_property_path,
    replace_triggers,
    resource_key,
)
from tests.support import COMMITTED_STACKS, ROOT

DIFF_STACKS = ROOT / "tests" / "diff_stacks"
PROD_FILE = ROOT / "stacks" / "Pulumi.prod.yaml"
LLAMA_LATENCY = "jobs-bench-team-a-llama-latency"
JOB_TYPE = "kubernetes:aiperf.nvidia.com/v1alpha1:AIPerfJob"


@functools.cache
def planned(path: Path) -> Plan:
    """A stack file planned once per test session, as ``diff`` sees it."""
    result = cli.compute_plan(path)
    return Plan(path.name, json.loads(result.files["resources.json"]), json.loads(result.files["plan.json"]))


def fixture(name: str) -> Plan:
    return planned(DIFF_STACKS / f"Pulumi.{name}.yaml")


def prod() -> Plan:
    return planned(PROD_FILE)


def actions(diff_changes: tuple[Any, ...]) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(c.action, c.name, c.replace_because) for c in diff_changes]


def test_quota_change_updates_exactly_one_cluster_queue_with_the_deltas() -> None:
    diff = compare(prod(), fixture("quota"))
    assert diff.summary() == "0 to create, 1 to update, 0 to replace, 0 to delete"
    assert actions(diff.changes) == [("update", "queues-cq-team-b", ())]
    assert diff.changes[0].fields == (
        FieldChange("team-b / cpu / cpu: nominalQuota", "71820m", "59850m"),
        FieldChange("team-b / cpu / memory: nominalQuota", "285Gi", "243200Mi"),
    )
    assert diff.quotas == (
        QuotaRow("team-b", "cpu", "cpu", "71820m", "59850m", "nominalQuota", 30, 25),
        QuotaRow("team-b", "cpu", "memory", "285Gi", "243200Mi", "nominalQuota", 30, 25),
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


def test_a_changed_benchmark_is_a_new_run_beside_the_retained_old_one() -> None:
    diff = compare(prod(), fixture("concurrency"))
    assert diff.summary() == "0 to create, 0 to update, 1 to replace, 0 to delete"
    # The same logical resource (its name is the config name's), replaced: the spec is frozen, and the
    # AIPerfJob's name follows its spec, so the new run is created beside the old one.
    assert actions(diff.changes) == [("replace", LLAMA_LATENCY, ("spec.benchmark", "metadata.name"))]
    assert diff.changes[0].fields == (
        FieldChange("metadata.name", "llama-latency-7b5e06", "llama-latency-97b89f"),
        FieldChange("spec.benchmark.phases[1].concurrency", 50, 64),
    )
    replaced = diff.changes[0]
    assert (replaced.kind, replaced.retain_on_delete, replaced.delete_before_replace, replaced.already_exists) == (
        "AIPerfJob bench-team-a/llama-latency-97b89f",
        True,
        False,
        False,
    )
    assert diff.clashes() == []
    assert diff.endangered() == []


@pytest.mark.parametrize(
    ("name", "change"), [("cancel", ("spec.cancel", True)), ("timeout", ("spec.timeoutSeconds", 7200))]
)
def test_cancel_and_timeout_update_the_run_in_place_under_its_name(name: str, change: tuple[str, object]) -> None:
    diff = compare(prod(), fixture(name))
    assert diff.summary() == "0 to create, 1 to update, 0 to replace, 0 to delete"
    assert actions(diff.changes) == [("update", LLAMA_LATENCY, ())]
    # The CRD lets these two change; the name's digest leaves them out.
    assert diff.changes[0].fields == (FieldChange(change[0], MISSING, change[1]),)
    assert diff.changes[0].kind == "AIPerfJob bench-team-a/llama-latency-7b5e06"


def _record(name: str, meta: dict[str, str], spec: dict[str, object], retain: bool) -> dict[str, object]:
    return {
        "type": JOB_TYPE,
        "name": name,
        "urn": f"urn:pulumi:s::aiperf-kueue::aiperf-kueue:index:AIPerfJobs${JOB_TYPE}::{name}",
        "protect": False,
        "retainOnDelete": retain,
        "deleteBeforeReplace": True,
        "replaceOnChanges": ["spec.benchmark"],
        "inputs": {"apiVersion": "aiperf.nvidia.com/v1alpha1", "kind": "AIPerfJob", "metadata": meta, "spec": spec},
    }


def test_a_retained_replace_fails_only_under_the_same_name_and_only_if_the_old_state_retains() -> None:
    meta = {"name": "run", "namespace": "bench"}
    old = _record("job", meta, {"benchmark": {"c": 1}}, retain=True)
    cases = {
        "same name": _record("job", meta, {"benchmark": {"c": 2}}, retain=True),
        # Too late in the same change: the old state's retainOnDelete decides.
        "retain lifted together": _record("job", meta, {"benchmark": {"c": 2}}, retain=False),
        "new name": _record("job", {**meta, "name": "run-2"}, {"benchmark": {"c": 2}}, retain=True),
    }
    found = {
        case: [
            (c.action, c.replace_because, c.already_exists)
            for c in compare(Plan("b", [old], {}), Plan("h", [new], {})).changes
        ]
        for case, new in cases.items()
    }
    assert found == {
        "same name": [("replace", ("spec.benchmark",), True)],
        "retain lifted together": [("replace", ("spec.benchmark",), True)],
        "new name": [("replace", ("spec.benchmark", "metadata.name"), False)],
    }
    lifted_first = _record("job", meta, {"benchmark": {"c": 1}}, retain=False)
    (change,) = compare(Plan("b", [lifted_first], {}), Plan("h", [cases["same name"]], {})).changes
    assert (change.action, change.already_exists) == ("replace", False)


def test_moving_kueue_to_another_namespace_replaces_its_protected_namespace_and_chart() -> None:
    diff = compare(prod(), fixture("kueue-namespace"))
    assert diff.summary() == "0 to create, 0 to update, 3 to replace, 0 to delete"
    # The gate is replaced too: a Kueue elsewhere is a new webhook to wait for.
    assert actions(diff.changes) == [
        ("replace", "kueue-chart", ("namespace",)),
        ("replace", "kueue-ns", ("metadata.name",)),
        ("replace", "kueue-ready", ("releaseDigest", "namespace")),
    ]
    assert [(c.action, c.name, c.protect) for c in diff.endangered()] == [
        ("replace", "kueue-chart", True),
        ("replace", "kueue-ns", True),
    ]
    assert diff.changes[1].fields == (FieldChange("metadata.name", "kueue-system", "kueue-alt"),)
    assert diff.clashes() == []


def test_switching_kueue_source_to_manifests_creates_them_and_deletes_the_protected_chart() -> None:
    diff = compare(prod(), fixture("kueue-manifests"))
    assert diff.summary() == "1 to create, 0 to update, 1 to replace, 2 to delete"
    assert [(c.action, c.name, c.kind or c.type, c.protect) for c in diff.changes] == [
        ("create", "kueue-manifests", "kubernetes:yaml/v2:ConfigFile", True),
        # Another release (the manifests' digest): the gate waits for its webhook again.
        ("replace", "kueue-ready", "pulumi-python:dynamic/aiperf-kueue:KueueReadinessGate", False),
        ("delete", "kueue-chart", "kubernetes:helm.sh/v4:Chart", True),
        ("delete", "kueue-ns", "Namespace kueue-system", True),
    ]
    assert [(c.action, c.name) for c in diff.endangered()] == [("delete", "kueue-chart"), ("delete", "kueue-ns")]


def test_identity_rules_apply_to_kubernetes_objects_and_chart_namespaces_only() -> None:
    def changes(type_: str, old: Mapping[str, object], new: Mapping[str, object]) -> list[tuple[str, tuple[str, ...]]]:
        base = {"type": type_, "name": "r", "urn": f"urn:pulumi:s::p::{type_}::r", "inputs": old}
        return [
            (c.action, c.replace_because)
            for c in compare(Plan("b", [base], {}), Plan("h", [{**base, "inputs": new}], {})).changes
        ]

    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}
    assert changes("kubernetes:core/v1:Namespace", ns, {**ns, "metadata": {"name": "b"}}) == [
        ("replace", ("metadata.name",))
    ]
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "x"}, "data": {"k": "1"}}
    assert changes("kubernetes:core/v1:ConfigMap", cm, {**cm, "metadata": {"name": "a", "namespace": "y"}}) == [
        ("replace", ("metadata.namespace",))
    ]
    assert changes("kubernetes:core/v1:ConfigMap", cm, {**cm, "data": {"k": "2"}}) == [("update", ())]
    chart = {"chart": "oci://x", "namespace": "a", "name": "kueue"}
    assert changes("kubernetes:helm.sh/v4:Chart", chart, {**chart, "namespace": "b"}) == [("replace", ("namespace",))]
    # Not a Kubernetes object: a namespace input is just an input.
    gate = {"namespace": "a"}
    assert changes("pulumi-python:dynamic/aiperf-kueue:KueueReadinessGate", gate, {"namespace": "b"}) == [
        ("update", ())
    ]


def test_adding_a_namespace_creates_only_that_namespaces_resources() -> None:
    diff = compare(prod(), fixture("add-namespace"))
    assert diff.summary() == "3 to create, 0 to update, 0 to replace, 0 to delete"
    assert [(c.action, c.name, c.kind) for c in diff.changes] == [
        ("create", "ns-bench-team-b2-lq-aiperf-queue", "LocalQueue bench-team-b2/aiperf-queue"),
        ("create", "ns-bench-team-b2-ns", "Namespace bench-team-b2"),
        ("create", "ns-bench-team-b2-rolebinding", "RoleBinding bench-team-b2/aiperf-operator-benchmark-access"),
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
    assert diff.notes == (
        "Base is stack `prod`, head is stack `other`: two different stacks, compared resource by resource, "
        "not one stack before and after.",
    )
    assert compare(prod(), prod()).notes == ()
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
    assert f"- **base:** `{tmp_path / 'prod'}` (a `plan --out` directory, planned by whichever code wrote it)\n" in out
    assert "- **head:** `prod` (`stacks/Pulumi.prod.yaml`, planned with this checkout's program code)\n" in out


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


def test_diff_against_a_revision_without_program_code_plans_it_with_this_checkout(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The repository holds only the stack file: no code at HEAD can plan it.
    head = str(repo / "stacks" / "Pulumi.prod.yaml")
    assert cli.diff_command("HEAD:prod", head, None, exit_code=True, repo_root=repo) == 3
    lines = capsys.readouterr().out.splitlines()
    assert lines[3] == "0 to create, 1 to update, 0 to replace, 0 to delete"
    assert lines[5:9] == [
        "- **base:** `HEAD:prod` (`stacks/Pulumi.prod.yaml` at `HEAD`, planned with this checkout's program code)",
        f"- **head:** `{head}` (`{head}`, planned with this checkout's program code)",
        "- The program code at `HEAD` could not plan `prod` (it has no aiperf-kueue CLI module), so this "
        "checkout's code planned `HEAD:prod`: what the program's code changed since `HEAD` does not show here.",
        "",
    ]
    assert "| team-b / cpu / cpu | nominalQuota | 71820m | 59850m | -11970m | 30% → 25% |" in lines


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
    assert cli.diff_command("prod", "HEAD:nope", None, exit_code=False, repo_root=repo) == 2
    assert cli.diff_command("-p:prod", "prod", None, exit_code=False, repo_root=repo) == 2
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err.splitlines() == [
        "no-such-rev:stacks/Pulumi.prod.yaml: cannot read stack file at revision 'no-such-rev': "
        "fatal: invalid object name 'no-such-rev'.",
        "HEAD:stacks/Pulumi.nope.yaml: cannot read stack file at revision 'HEAD': "
        "fatal: path 'stacks/Pulumi.nope.yaml' does not exist in 'HEAD'",
        "-p:stacks/Pulumi.prod.yaml: expected REV:STACK, e.g. origin/main:prod",
    ]


def test_a_base_missing_at_the_revision_is_empty_only_for_the_stack_being_added(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    added = repo / "stacks" / "Pulumi.gpu-lab.yaml"
    added.write_text(PROD_FILE.read_text())
    # The stack the change adds: planned against an empty base (everything to create).
    assert cli.diff_command("HEAD:gpu-lab", str(added), None, exit_code=False, repo_root=repo) == 0
    assert capsys.readouterr().out.splitlines()[3].endswith(" to create, 0 to update, 0 to replace, 0 to delete")
    # Another stack's name there is a typo, not a new stack; a name Pulumi refuses reaches no file.
    head = str(repo / "stacks" / "Pulumi.prod.yaml")
    assert cli.diff_command("HEAD:prdo", head, None, exit_code=False, repo_root=repo) == 2
    assert cli.diff_command("HEAD:../../etc/passwd", head, None, exit_code=False, repo_root=repo) == 2
    assert cli.diff_command("HEAD:../x.yaml", head, None, exit_code=False, repo_root=repo) == 2
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err.splitlines() == [
        "HEAD:prdo: no stacks/Pulumi.prdo.yaml at 'HEAD' (did you mean 'prod'?); stacks there: prod (a missing "
        "base is an empty one only for the stack being added, here 'prod')",
        "HEAD:../../etc/passwd: '../../etc/passwd' is not a Pulumi stack name: it may only contain letters, "
        "digits, '-', '_' and '.', not '/'",
        "HEAD:../x.yaml: '../x.yaml' is not a path inside the repository",
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
        f"stacks/Pulumi.nope.yaml: no stack 'nope'; stacks in stacks/: {', '.join(COMMITTED_STACKS)}",
        f"{bad}: aiperf-kueue:inventory.pools[0].nodes: must be >= 1, got 0",
        f"{empty}: no resources.json here: expected a 'plan --out' directory or a stack",
    ]
    assert "Traceback" not in printed.err


def _plan_dir(root: Path, resources: object, data: object) -> Path:
    root.mkdir()
    (root / "resources.json").write_text(json.dumps(resources))
    (root / "plan.json").write_text(json.dumps(data))
    return root


def test_plan_directories_of_the_wrong_shape_are_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = {"type": "t", "name": "n", "urn": "urn:pulumi:s::p::t::n", "inputs": {}}
    cases = [
        _plan_dir(tmp_path / "numbers", [1, 2], {}),
        _plan_dir(tmp_path / "plan-list", [], []),
        _plan_dir(tmp_path / "fields", [{**good, "urn": 7, "protect": "yes", "replaceOnChanges": ["spec..x"]}], {}),
        _plan_dir(tmp_path / "quotas", [good], {"stack": "s", "quotas": {"cq": ["8"]}, "warnings": "w"}),
    ]
    for case in cases:
        assert cli.main(["diff", str(case), "prod"]) == 2
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err.splitlines() == [
        f"{cases[0]}/resources.json: [0]: must be a resource (a mapping with urn, type, name, inputs) "
        "as 'plan' writes it, got 1",
        f"{cases[0]}/resources.json: [1]: must be a resource (a mapping with urn, type, name, inputs) "
        "as 'plan' writes it, got 2",
        f"{cases[1]}/plan.json: must be a mapping as 'plan' writes it, got a list",
        f"{cases[2]}/resources.json: [0].urn: must be a string, got 7",
        f"{cases[2]}/resources.json: [0].protect: must be true or false, got 'yes'",
        f"{cases[2]}/resources.json: [0].replaceOnChanges: not a property path: 'spec..x'",
        f"{cases[3]}/plan.json: warnings: must be a list of strings, got 'w'",
        f"{cases[3]}/plan.json: quotas: must be {{ClusterQueue: {{flavor: {{resource: quantity}}}}}}, "
        "got a mapping of 1 key (cq: a list of 1 item)",
    ]


def test_diff_out_must_not_be_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["diff", "prod", "prod", "--out", str(tmp_path)]) == 2
    printed = capsys.readouterr()
    assert (printed.out, printed.err) == (
        "",
        f"{tmp_path}: --out is a directory: diff writes the report to a file\n",
    )


def test_a_changed_provider_setting_is_a_note_with_both_values() -> None:
    base = Plan("base", [], {"stack": "prod", "provider": {"kubernetes:context": "prod-a"}})
    head = Plan("head", [], {"stack": "prod", "provider": {"kubernetes:context": "prod-b"}})
    assert compare(base, head).notes == (
        "The Kubernetes provider's settings change (`kubernetes:context` prod-a → prod-b): `pulumi up` deploys "
        "every object to what they name, and the readiness gate waits there; check they name the cluster you mean.",
    )
    # A plan from before plan.json kept them says nothing: no note.
    assert compare(Plan("old", [], {"stack": "prod"}), head).notes == ()


def test_a_pool_that_shrinks_or_goes_is_a_note_naming_its_cluster_queues() -> None:
    """Kueue evicts nothing when quota falls, but benchmarks on removed nodes fail (the capacity-grows scenario)."""
    base = Plan(
        "base",
        [],
        {
            "stack": "prod",
            "pools": {"h100": {"cpu": "64", "nvidia.com/gpu": "16"}, "cpu": {"cpu": "8"}, "a100": {"cpu": "4"}},
            "quotas": {"team-a": {"h100": {"nvidia.com/gpu": "8"}}, "team-b": {"h100": {"nvidia.com/gpu": "8"}}},
        },
    )
    head = Plan(
        "head",
        [],
        {"stack": "prod", "pools": {"h100": {"cpu": "64", "nvidia.com/gpu": "8"}, "cpu": {"cpu": "16"}}},
    )
    assert compare(base, head).notes == (
        "Pool `h100` shrinks (nvidia.com/gpu 16 → 8): Kueue evicts nothing when quota falls, but a benchmark with a "
        "pod on a removed node fails with it (AIPerf's controller Job has backoffLimit 0); hold its ClusterQueues "
        "(`team-a`, `team-b`) with `stopPolicy: Hold` and let the benchmarks they admitted finish before the nodes go.",
        "Pool `a100` goes: Kueue evicts nothing when quota falls, but a benchmark with a pod on one of its nodes fails "
        "with the node (AIPerf's controller Job has backoffLimit 0); let the benchmarks running there finish before "
        "the nodes go.",
    )
    # A pool that grows is no note.
    grows = Plan("grows", [], {"stack": "prod", "pools": {"cpu": {"cpu": "16"}}})
    assert compare(Plan("small", [], {"stack": "prod", "pools": {"cpu": {"cpu": "8"}}}), grows).notes == ()
