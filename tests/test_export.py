"""``manifests.yaml`` and ``aiperf-kueue export`` in apply order, applied "to nothing".

The export of every stack in stacks/ is applied, file by file in the order ``kubectl apply -f
DIR`` reads them, to an in-memory cluster that has only what the prerequisites install: the
Kueue CRDs (the ``sigs.k8s.io/kueue`` Go module at the stack's release), the JobSet CRD (the
``sigs.k8s.io/jobset`` module Kueue builds against), the AIPerfJob CRD (../shared) and the
operator's Deployment. Each object's kind must be served, its namespace must exist, and every
object it names (flavors, cohort, ClusterQueue, LocalQueue, priority class, Role) must have been
applied before it. That the order works on a real API server is the lead's e2e (by design here).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiperf_kueue.cli import cli, export
from aiperf_kueue.cli.report import APPLY_ORDER
from aiperf_kueue.installs import releases as installs
from tests import upstream
from tests.crd_validation import CRD_PLURALS, load_crd
from tests.support import (
    CHECKED_STACKS,
    STACKS,
    plan_values,
    require_shared,
    require_upstream,
    stack_file,
    stack_values,
)

#: Built-in kinds the export uses: (apiVersion, kind) → namespaced.
BUILT_IN = {
    ("v1", "Namespace"): False,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): False,
    ("rbac.authorization.k8s.io/v1", "Role"): True,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): True,
    ("apps/v1", "Deployment"): True,
}


@dataclass
class Cluster:
    """What an API server with the prerequisites installed would let through, and what it holds."""

    served: dict[tuple[str, str], bool]
    objects: set[tuple[str, str, str]] = field(default_factory=set)
    """(kind, namespace or "", name) of every object present."""

    def has(self, kind: str, name: str, namespace: str = "") -> bool:
        return (kind, namespace, name) in self.objects

    def apply(self, obj: dict[str, Any]) -> list[str]:
        """Apply ``obj``; the reasons it would fail, or what it names that does not exist yet."""
        kind, meta, spec = obj["kind"], obj["metadata"], obj.get("spec") or {}
        namespace, name = meta.get("namespace", ""), meta["name"]
        where = f"{kind} {namespace + '/' if namespace else ''}{name}"
        namespaced = self.served.get((obj["apiVersion"], kind))
        if namespaced is None:
            return [f"{where}: {obj['apiVersion']} {kind} is not served"]
        problems = []
        if namespaced != bool(namespace):
            problems.append(f"{where}: namespace {'missing' if namespaced else 'set on a cluster-scoped kind'}")
        if namespace and not self.has("Namespace", namespace):
            problems.append(f"{where}: namespace {namespace} does not exist yet")
        needs: list[tuple[str, str, str]] = []
        if kind == "ClusterQueue":
            flavors = [f["name"] for g in spec.get("resourceGroups", []) for f in g["flavors"]]
            needs += [("ResourceFlavor", "", f) for f in flavors]
            cohort = spec.get("cohortName") or spec.get("cohort")
            needs += [("Cohort", "", cohort)] if cohort else []
        elif kind == "LocalQueue":
            needs.append(("ClusterQueue", "", spec["clusterQueue"]))
        elif kind == "RoleBinding":
            ref = obj["roleRef"]
            needs.append((ref["kind"], namespace if ref["kind"] == "Role" else "", ref["name"]))
        elif kind == "AIPerfJob":
            scheduling = spec["scheduling"]
            needs.append(("LocalQueue", namespace, scheduling["queueName"]))
            if scheduling.get("priorityClass"):
                needs.append(("WorkloadPriorityClass", "", scheduling["priorityClass"]))
        elif kind == "Deployment":  # the operator's env patch: of the chart's Deployment
            needs.append(("Deployment", namespace, name))
        problems += [
            f"{where}: {k} {ns + '/' if ns else ''}{n} does not exist yet"
            for k, ns, n in needs
            if not self.has(k, n, ns)
        ]
        if not problems:
            self.objects.add((kind, namespace, name))
        return problems


def prerequisites(
    kueue_version: str, operator_namespace: str = "aiperf-system", operator: str = "aiperf-operator"
) -> Cluster:
    """A cluster with Kueue, JobSet and the AIPerf operator (its namespace and Deployment name as the
    stack's ``operator`` says) installed and nothing else of ours."""
    served = dict(BUILT_IN)
    kueue_crds = require_upstream(upstream.kueue_dir, kueue_version) / upstream.CRD_BASES
    files = [kueue_crds / f"kueue.x-k8s.io_{plural}.yaml" for plural in CRD_PLURALS]
    files.append(require_upstream(upstream.jobset_crd, require_upstream(upstream.jobset_version)))
    files.append(require_shared("aiperf", "aiperfjobs.aiperf.nvidia.com.crd.yaml"))
    for file in files:
        for crd in load_crd(file, "prerequisite"):
            served[(crd.api_version, crd.kind)] = crd.namespaced
    cluster = Cluster(served)
    # What the operator chart runs, in the namespace it was installed to.
    cluster.objects |= {("Namespace", "", operator_namespace), ("Deployment", operator_namespace, operator)}
    return cluster


def exported(stack: str, out: Path) -> list[Path]:
    """``aiperf-kueue export STACK --out out``; the operator-env files, then the others, in name order."""
    assert cli.main(["export", str(stack_file(stack)), "--out", str(out)]) == 0
    patches = sorted((out / export.PATCH_DIR).glob("*.yaml")) if (out / export.PATCH_DIR).is_dir() else []
    return [*patches, *sorted(p for p in out.glob("*.yaml") if p.name != export.KUSTOMIZATION)]


def load(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text())
    assert isinstance(doc, dict)
    return doc


def planned(stack: str, out: Path) -> tuple[str, list[dict[str, Any]]]:
    """``plan STACK --out out``: the Kueue release it targets, and manifests.yaml's documents in order."""
    assert cli.main(["plan", str(stack_file(stack)), "--out", str(out)]) == 0
    version = json.loads((out / "plan.json").read_text())["kueue"]["version"]
    docs = [d for d in yaml.safe_load_all((out / "manifests.yaml").read_text()) if d is not None]
    return str(version), docs


def ident(obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace", ""), meta["name"]


@pytest.mark.parametrize("stack", CHECKED_STACKS)
def test_export_applies_in_order_to_a_cluster_with_only_the_prerequisites(stack: str, tmp_path: Path) -> None:
    version, manifests = planned(stack, tmp_path / "plan")
    files = exported(stack, tmp_path / "export")
    objects = [load(p) for p in files]
    config, _ = plan_values(*stack_values(stack)[:1])
    cluster = prerequisites(version, config.operator.namespace, installs.operator_fullname(config.operator))
    problems = [p for obj in objects for p in cluster.apply(obj)]
    assert problems == []
    assert len({ident(o) for o in objects}) == len(objects)
    assert {ident(o) for o in objects} <= cluster.objects
    # kustomize lists the same files, in the same order (fifo: as listed).
    kustomization = load(tmp_path / "export" / export.KUSTOMIZATION)
    assert kustomization["sortOptions"] == {"order": "fifo"}
    assert kustomization["resources"] == [p.name for p in files if p.parent == tmp_path / "export"]
    # manifests.yaml holds the same objects in the same order (the env patch where its number says).
    by_number = sorted(files, key=lambda p: p.name)
    assert [ident(d) for d in manifests] == [ident(load(p)) for p in by_number]
    assert [APPLY_ORDER.index(d["kind"]) for d in manifests] == sorted(APPLY_ORDER.index(d["kind"]) for d in manifests)


def test_the_model_rejects_an_order_that_would_fail(tmp_path: Path) -> None:
    files = exported("prod", tmp_path)
    cluster = prerequisites("0.19.2")
    problems = [p for path in reversed(files) for p in cluster.apply(load(path))]
    assert problems[:3] == [
        "AIPerfJob bench-team-a/llama-latency-7b5e06: namespace bench-team-a does not exist yet",
        "AIPerfJob bench-team-a/llama-latency-7b5e06: LocalQueue bench-team-a/aiperf-queue does not exist yet",
        "AIPerfJob bench-team-a/llama-latency-7b5e06: WorkloadPriorityClass benchmark-high does not exist yet",
    ]
    assert "ClusterQueue team-a: ResourceFlavor cpu does not exist yet" in problems
    assert cluster.apply({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}) == [
        "Widget w: example.com/v1 Widget is not served"
    ]


def test_export_files_literally(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "dev"
    (out / "009-stale-object.yaml").parent.mkdir(parents=True)
    (out / "009-stale-object.yaml").write_text("kind: Stale\n")  # an earlier export's file: replaced
    (out / "notes.md").write_text("mine\n")  # anything else: kept
    assert cli.main(["export", "dev", "--out", str(out)]) == 0
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == [
        "001-namespace-aiperf-system.yaml",
        "002-namespace-aiperf-benchmarks.yaml",
        "003-namespace-jobset-system.yaml",
        "004-namespace-kueue-system.yaml",
        "005-resourceflavor-default.yaml",
        "006-clusterqueue-benchmarks.yaml",
        "007-clusterrole-aiperf-operator-benchmark.yaml",
        "008-rolebinding-aiperf-benchmarks-aiperf-operator-benchmark-access.yaml",
        "009-localqueue-aiperf-benchmarks-aiperf-queue.yaml",
        "011-aiperfjob-aiperf-benchmarks-smoke-42740b.yaml",
        "Kustomization",
        "notes.md",
        "operator-env/010-deployment-aiperf-system-aiperf-operator.yaml",
    ]
    assert (out / "009-localqueue-aiperf-benchmarks-aiperf-queue.yaml").read_text() == (
        "# kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue ns-aiperf-benchmarks-lq-aiperf-queue\n"
        "apiVersion: kueue.x-k8s.io/v1beta2\n"
        "kind: LocalQueue\n"
        "metadata:\n"
        "  name: aiperf-queue\n"
        "  namespace: aiperf-benchmarks\n"
        "  labels:\n"
        "    app.kubernetes.io/part-of: aiperf-kueue\n"
        "spec:\n"
        "  clusterQueue: benchmarks\n"
    )
    patch = load(out / "operator-env" / "010-deployment-aiperf-system-aiperf-operator.yaml")
    assert patch["metadata"] == {"name": "aiperf-operator", "namespace": "aiperf-system"}  # no pulumi.com/ annotation
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        f"Wrote 11 objects and Kustomization to {out}/, in apply order.",
        "Apply once Kueue, JobSet and the AIPerf operator are installed:",
        f"  kubectl apply --server-side --force-conflicts -f {out / 'operator-env'}   # the operator's env",
        f"  kubectl apply --server-side -f {out}   # or -k {out}",
    ]


def test_export_of_an_invalid_stack_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text((STACKS / "Pulumi.dev.yaml").read_text().replace("nodes: 1", "nodes: 0"))
    assert cli.main(["export", str(bad), "--out", str(tmp_path / "out")]) == 2
    assert not (tmp_path / "out").exists()
    assert capsys.readouterr().err.splitlines() == [
        f"{bad}: aiperf-kueue:inventory.pools[0].nodes: must be >= 1, got 0"
    ]


def test_an_earlier_exports_kustomization_yaml_is_replaced_but_not_a_hand_written_one(tmp_path: Path) -> None:
    out = tmp_path / "export"
    out.mkdir()
    (out / "kustomization.yaml").write_text(f"{export.GENERATED}\nkind: Kustomization\n")
    export.write_export({"001-namespace-a.yaml": "kind: Namespace\n"}, out)
    assert sorted(p.name for p in out.iterdir()) == ["001-namespace-a.yaml"]
    (out / "kustomization.yaml").write_text("# mine\nkind: Kustomization\n")
    export.write_export({"001-namespace-a.yaml": "kind: Namespace\n"}, out)
    assert sorted(p.name for p in out.iterdir()) == ["001-namespace-a.yaml", "kustomization.yaml"]
