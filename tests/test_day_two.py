"""Day two: upgrades and flips keep live objects, destructive changes are named, every stack names its cluster.

Each blast-radius test plans two versions of a committed stack and compares them as ``diff`` does (the
program's aliases are the engine's: a resource whose former type matches is updated in place). The
same edits run on the real engine in ``tests/e2e/test_engine_day_two.py``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiperf_kueue.cli import cli
from aiperf_kueue.common.errors import Problem
from aiperf_kueue.config.cluster import ClusterConfig
from aiperf_kueue.installs.cluster import NO_CLUSTER_WARNING, ClusterTarget, cluster_target
from aiperf_kueue.review.destructive import CLUSTER_LOSS, LOSSES, Destructive
from aiperf_kueue.review.diff import Plan, PlanDiff, compare
from aiperf_kueue.upstream.kueue import former_type_tokens
from tests.support import ROOT

PREFIX = "aiperf-kueue:"


def stack_doc(name: str) -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{name}.yaml").read_text())
    assert isinstance(doc, dict)
    return doc


def planned(doc: dict[str, Any], tmp_path: Path, file_name: str) -> Plan:
    path = tmp_path / f"Pulumi.{file_name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    result = cli.compute_plan(path)
    return Plan(file_name, json.loads(result.files["resources.json"]), json.loads(result.files["plan.json"]))


def edited(name: str, tmp_path: Path, edit: Any) -> PlanDiff:
    """The committed stack ``name`` against itself after ``edit(config)``, both planned under the same name."""
    before = stack_doc(name)
    after = copy.deepcopy(before)
    edit(after["config"])
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    return compare(planned(before, tmp_path / "a", name), planned(after, tmp_path / "b", name))


def rows(diff: PlanDiff) -> list[tuple[str, str]]:
    return [(c.action, c.name) for c in diff.changes]


# --------------------------------------------------------------------------- aliases


def test_kueue_kinds_are_aliased_to_their_other_api_versions() -> None:
    assert former_type_tokens("kueue.x-k8s.io/v1beta2", "ClusterQueue") == [
        "kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue"
    ]
    assert former_type_tokens("kueue.x-k8s.io/v1beta1", "LocalQueue") == [
        "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue"
    ]
    assert former_type_tokens("kueue.x-k8s.io/v1beta2", "Cohort") == [
        "kubernetes:kueue.x-k8s.io/v1alpha1:Cohort",
        "kubernetes:kueue.x-k8s.io/v1beta1:Cohort",
    ]
    assert former_type_tokens("v1", "Namespace") == []
    assert former_type_tokens("aiperf.nvidia.com/v1alpha1", "AIPerfJob") == []


def test_the_program_registers_the_aliases(tmp_path: Path) -> None:
    plan = planned(stack_doc("prod"), tmp_path, "prod")
    aliases = {r["name"]: r.get("aliases") for r in plan.resources}
    assert aliases["queues-cq-team-a"] == [{"type": "kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue"}]
    # Each namespace's resources are also aliased under the component each namespace had before (2026-12-07).
    earlier = "urn:pulumi:prod::aiperf-kueue::aiperf-kueue:index:BenchmarkNamespace$"
    assert aliases["ns-bench-team-a-ns"] == [
        {"type": "kubernetes:core/v1:NamespacePatch"},
        {"urn": f"{earlier}kubernetes:core/v1:Namespace::ns-bench-team-a-ns"},
        {"urn": f"{earlier}kubernetes:core/v1:NamespacePatch::ns-bench-team-a-ns"},
    ]
    # prod's ml-team-b namespace exists already (create: false): its patch is aliased to the Namespace.
    assert aliases["ns-ml-team-b-ns"] == [
        {"type": "kubernetes:core/v1:Namespace"},
        {"urn": f"{earlier}kubernetes:core/v1:NamespacePatch::ns-ml-team-b-ns"},
        {"urn": f"{earlier}kubernetes:core/v1:Namespace::ns-ml-team-b-ns"},
    ]
    assert aliases["ns-bench-team-a-lq-aiperf-queue"] == [
        {"type": "kubernetes:kueue.x-k8s.io/v1beta1:LocalQueue"},
        {"urn": f"{earlier}kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue::ns-bench-team-a-lq-aiperf-queue"},
        {"urn": f"{earlier}kubernetes:kueue.x-k8s.io/v1beta1:LocalQueue::ns-bench-team-a-lq-aiperf-queue"},
    ]
    assert aliases["ns-bench-team-a-rolebinding"] == [
        {"urn": f"{earlier}kubernetes:rbac.authorization.k8s.io/v1:RoleBinding::ns-bench-team-a-rolebinding"}
    ]
    assert aliases["jobs-bench-team-a-llama-latency"] is None


def test_leaving_the_per_namespace_component_changes_no_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``dev`` as the program planned it until 2026-12-07 (``plan --out`` of commit 775748a, kept in
    ``tests/earlier_plans/``: one ``BenchmarkNamespace`` component per namespace) against this checkout's: the
    namespace's objects are carried over by their aliases, only the components come and go, nothing is
    destructive (the same move runs on the real engine in ``tests/e2e/test_engine_day_two.py``)."""
    report = tmp_path / "report.md"
    base = str(ROOT / "tests" / "earlier_plans" / "dev-per-namespace-component")
    assert cli.main(["diff", base, "dev", "--out", str(report), "--exit-code"]) == 3
    capsys.readouterr()
    text = report.read_text()
    assert "1 to create, 0 to update, 0 to replace, 1 to delete" in text
    assert "| create | `ns` | aiperf-kueue:index:BenchmarkNamespaces | — | — |" in text
    assert "| delete | `ns-aiperf-benchmarks` | aiperf-kueue:index:BenchmarkNamespace | — | — |" in text
    assert (
        "- 3 resource(s) (`ns-aiperf-benchmarks-lq-aiperf-queue`, `ns-aiperf-benchmarks-ns`, "
        "`ns-aiperf-benchmarks-rolebinding`) keep their live objects under a new parent "
        "(`aiperf-kueue:index:BenchmarkNamespace` → `aiperf-kueue:index:BenchmarkNamespaces::ns`, by their "
        "aliases): no change in the cluster."
    ) in text
    assert "### Destructive" not in text


def test_kueue_v1beta1_to_v1beta2_updates_every_queue_object_in_place(tmp_path: Path) -> None:
    def to_v1beta1(config: dict[str, Any]) -> None:
        config[PREFIX + "kueue"]["apiVersion"] = "v1beta1"

    # Base on v1beta1, head on v1beta2 (auto on 0.19.2): the upgrade a stack makes.
    before = stack_doc("prod")
    after = copy.deepcopy(before)
    to_v1beta1(before["config"])
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    diff = compare(planned(before, tmp_path / "a", "prod"), planned(after, tmp_path / "b", "prod"))
    kueue_kinds = [c for c in diff.changes if "kueue.x-k8s.io" in c.type]
    assert [c.action for c in diff.changes if c.action in ("create", "delete")] == []
    assert {c.action for c in kueue_kinds} == {"update"}
    assert len(kueue_kinds) == 14  # 3 flavors, the cohort, 3 ClusterQueues, 5 LocalQueues, 2 priority classes
    cq = next(c for c in kueue_kinds if c.name == "queues-cq-team-a")
    assert cq.fields[0].path == "(type)"
    assert (cq.fields[0].old, cq.fields[0].new) == (
        "kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue",
        "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue",
    )
    # v1beta2 names the cohort `cohortName`: an update of the field, not a new object.
    assert [f.path for f in cq.fields] == ["(type)", "apiVersion", "spec.cohort", "spec.cohortName"]
    # The only replace is the readiness gate, which waits for the new API on purpose.
    assert [(c.action, c.name) for c in diff.changes if c.action == "replace"] == [("replace", "kueue-ready")]
    assert diff.destructive == ()


def test_flipping_a_namespaces_create_keeps_it_untouched(tmp_path: Path) -> None:
    def flip(config: dict[str, Any]) -> None:
        for cq in config[PREFIX + "queues"]["clusterQueues"]:
            for ns in cq["namespaces"]:
                if ns["name"] == "bench-team-b":
                    ns["create"] = False

    diff = edited("prod", tmp_path, flip)
    # Same inputs under the other type: the engine carries the state over and takes no step (make e2e).
    assert rows(diff) == []
    assert diff.destructive == ()
    assert diff.notes == (
        "`ns-bench-team-b-ns` keeps its live object under a new type (`kubernetes:core/v1:Namespace` → "
        "`kubernetes:core/v1:NamespacePatch`, by its aliases): no change in the cluster.",
    )


# --------------------------------------------------------------------------- destructive changes


def test_renaming_a_cluster_queue_is_destructive(tmp_path: Path) -> None:
    def rename(config: dict[str, Any]) -> None:
        config[PREFIX + "queues"]["clusterQueues"][0]["name"] = "benchmarks-v2"

    diff = edited("dev", tmp_path, rename)
    assert diff.destructive == (
        Destructive(
            "replace", "ns-aiperf-benchmarks-lq-aiperf-queue", "LocalQueue aiperf-benchmarks/aiperf-queue",
            LOSSES["LocalQueue"],
        ),
        Destructive("delete", "queues-cq-benchmarks", "ClusterQueue benchmarks", LOSSES["ClusterQueue"]),
    )


def test_a_retained_namespace_leaving_the_stack_loses_its_local_queue_not_itself(tmp_path: Path) -> None:
    def drop(config: dict[str, Any]) -> None:
        namespaces = config[PREFIX + "queues"]["clusterQueues"][1]["namespaces"]
        namespaces[:] = [ns for ns in namespaces if ns["name"] != "bench-team-b"]

    diff = edited("prod", tmp_path, drop)
    assert ("delete", "ns-bench-team-b-ns") in rows(diff)
    assert [(d.action, d.name, d.loses) for d in diff.destructive] == [
        ("delete", "ns-bench-team-b-lq-aiperf-queue", LOSSES["LocalQueue"]),
    ]


def test_pointing_a_stack_at_another_cluster_is_destructive(tmp_path: Path) -> None:
    def retarget(config: dict[str, Any]) -> None:
        config[PREFIX + "cluster"] = {"context": "kind-other"}

    diff = edited("dev", tmp_path, retarget)
    assert diff.destructive == (
        Destructive(
            "retarget",
            "cluster",
            "context kind-aiperf in $KUBECONFIG (else ~/.kube/config) → context kind-other in $KUBECONFIG "
            "(else ~/.kube/config)",
            CLUSTER_LOSS,
        ),
    )


def test_diff_exits_4_on_a_destructive_change_unless_acknowledged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = stack_doc("dev")
    doc["config"][PREFIX + "queues"]["clusterQueues"][0]["name"] = "benchmarks-v2"
    head = tmp_path / "Pulumi.dev.yaml"
    head.write_text(yaml.safe_dump(doc, sort_keys=False))
    report = tmp_path / "report.md"
    assert cli.main(["diff", "dev", str(head), "--out", str(report)]) == 4
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == (
        "aiperf-kueue diff: 2 destructive change(s) (see the report's Destructive section); acknowledge with "
        "--allow-destructive"
    )
    text = report.read_text()
    # The Destructive section comes before every other section of the report.
    assert text.index("### Destructive") < text.index("### Quotas") < text.index("### Resources")
    assert "> - **delete** `queues-cq-benchmarks` (ClusterQueue benchmarks): loses the ClusterQueue's quota" in text
    assert cli.main(["diff", "dev", str(head), "--out", str(report), "--allow-destructive"]) == 0
    assert cli.main(["diff", "dev", str(head), "--out", str(report), "--allow-destructive", "--exit-code"]) == 3


def test_an_apiversion_upgrade_is_not_destructive_so_diff_exits_0(tmp_path: Path) -> None:
    before = stack_doc("dev")
    before["config"][PREFIX + "kueue"]["apiVersion"] = "v1beta1"
    base = tmp_path / "Pulumi.dev.yaml"
    base.write_text(yaml.safe_dump(before, sort_keys=False))
    assert cli.main(["diff", str(base), "dev", "--out", str(tmp_path / "r.md")]) == 0


# --------------------------------------------------------------------------- the cluster


def test_every_committed_stack_names_its_cluster() -> None:
    contexts = {name: stack_doc(name)["config"][PREFIX + "cluster"] for name in ("dev", "prod")}
    assert contexts == {"dev": {"context": "kind-aiperf"}, "prod": {"context": "prod-gpu"}}


def test_default_providers_are_disabled() -> None:
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    assert project["config"]["pulumi:disable-default-providers"] == {"value": ["kubernetes"]}


def test_every_kubernetes_object_goes_through_the_stacks_provider(tmp_path: Path) -> None:
    plan = planned(stack_doc("prod"), tmp_path, "prod")
    providers = [r for r in plan.resources if r["type"] == "pulumi:providers:kubernetes"]
    assert [(p["name"], p["inputs"]["context"]) for p in providers] == [("cluster", "prod-gpu")]
    assert plan.data["cluster"] == {
        "context": "prod-gpu",
        "kubeconfig": None,
        "currentContext": False,
        "namedBy": "aiperf-kueue:cluster",
        "target": "context prod-gpu in $KUBECONFIG (else ~/.kube/config)",
    }


def test_a_stack_without_a_cluster_is_planned_with_a_warning(tmp_path: Path) -> None:
    doc = stack_doc("dev")
    del doc["config"][PREFIX + "cluster"]
    plan = planned(doc, tmp_path, "dev")
    assert plan.data["cluster"] is None
    assert plan.data["warnings"][0] == NO_CLUSTER_WARNING


def test_plan_prints_the_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["plan", "dev", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "Cluster: context kind-aiperf in $KUBECONFIG (else ~/.kube/config) (aiperf-kueue:cluster)"


def test_cluster_target_reads_the_providers_own_keys() -> None:
    settings = {"kubernetes:context": "gke_p_z_c", "kubernetes:enableServerSideApply": "true"}
    target, problems = cluster_target(None, settings)
    assert problems == []
    assert target == ClusterTarget("gke_p_z_c", None, False, "kubernetes:context", {"enable_server_side_apply": True})
    assert target.provider_args() == {"enable_server_side_apply": True, "context": "gke_p_z_c"}


def test_cluster_target_refuses_a_second_answer_and_unknown_settings() -> None:
    cluster = ClusterConfig(context="prod-gpu")
    _, problems = cluster_target(cluster, {"kubernetes:context": "dev", "kubernetes:renderYamlToDirectory": "out"})
    assert problems == [
        Problem(
            "kubernetes:renderYamlToDirectory",
            "is not a setting this program hands to its Kubernetes provider (it builds one explicit provider from "
            "aiperf-kueue:cluster); supported: kubernetes:cluster, kubernetes:clusterIdentifier, "
            "kubernetes:deleteUnreachable, kubernetes:enableConfigMapMutable, kubernetes:enableSecretMutable, "
            "kubernetes:enableServerSideApply, kubernetes:namespace, kubernetes:skipUpdateUnreachable, "
            "kubernetes:suppressDeprecationWarnings, kubernetes:suppressHelmHookWarnings",
            in_config=False,
        ),
        Problem(
            "kubernetes:context",
            "is 'dev', but aiperf-kueue:cluster says otherwise: the program's own provider reads only "
            "aiperf-kueue:cluster (default providers are disabled); remove kubernetes:context",
            in_config=False,
        ),
    ]


@pytest.mark.parametrize(
    ("cluster", "message"),
    [
        (
            {},
            "aiperf-kueue:cluster: names no context: set cluster.context to this stack's kubeconfig context "
            "(kubectl config get-contexts lists them), or currentContext: true to deploy wherever kubectl points",
        ),
        (
            {"context": "kind-aiperf", "currentContext": True},
            "aiperf-kueue:cluster: names context 'kind-aiperf' and currentContext: true; keep one "
            "(context pins the cluster)",
        ),
        (
            {"context": "bad\u0007name"},
            'aiperf-kueue:cluster.context: "bad\\x07name" holds the invisible control character \\x07 (a terminal '
            "escape or a bidi control); no config value needs one: remove it",
        ),
        (
            {"context": "x", "kubeconfig": "apiVersion: v1\nclusters: []"},
            "aiperf-kueue:cluster.kubeconfig: must be the path of a kubeconfig file, got its contents; write them "
            "to a file and give its path (or leave kubeconfig out to use $KUBECONFIG)",
        ),
        (
            {"context": "x", "currentContext": "yes"},
            "aiperf-kueue:cluster.currentContext: must be true or false, got 'yes' (YAML 1.2, which Pulumi reads, "
            "has only true and false)",
        ),
    ],
)
def test_bad_cluster_config_is_one_clear_line(
    cluster: dict[str, Any], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = stack_doc("dev")
    doc["config"][PREFIX + "cluster"] = cluster
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert cli.main(["plan", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"{path}: {message}"]
    assert not (tmp_path / "out").exists()


def test_a_parent_move_is_one_note_for_every_resource_it_moves(tmp_path: Path) -> None:
    """prod's 13 namespace resources, as the earlier program placed them (each under its namespace's own
    component: the URN each one's alias names), against this checkout's: one note for all of them."""
    head = planned(stack_doc("prod"), tmp_path, "prod")
    earlier_type = "aiperf-kueue:index:BenchmarkNamespace"
    base: list[dict[str, Any]] = []
    for record in copy.deepcopy(head.resources):
        if record["type"] == "aiperf-kueue:index:BenchmarkNamespaces":
            continue
        former = [a["urn"] for a in record.get("aliases") or [] if f"${record['type']}::" in a.get("urn", "")]
        if former:
            [record["urn"]] = former
            meta = record["inputs"]["metadata"]
            namespace = meta.get("namespace", meta["name"])
            record["parent"] = f"urn:pulumi:prod::aiperf-kueue::{earlier_type}::ns-{namespace}"
            record.pop("aliases")
        base.append(record)
    diff = compare(Plan("earlier", base, head.data), head)
    assert [(c.action, c.name) for c in diff.changes] == [("create", "ns")]
    assert diff.notes == (
        "13 resource(s) (`ns-bench-research-lq-aiperf-queue`, `ns-bench-research-ns`, "
        "`ns-bench-research-rolebinding` and 10 more) keep their live objects under a new parent "
        "(`aiperf-kueue:index:BenchmarkNamespace` → `aiperf-kueue:index:BenchmarkNamespaces::ns`, by their "
        "aliases): no change in the cluster.",
    )
    assert diff.destructive == ()
