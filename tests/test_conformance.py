"""Every Kueue object the program generates is accepted by the upstream Kueue CRDs.

Checked with the schemas and CEL rules of the upstream CRDs of the ``sigs.k8s.io/kueue`` Go
module at v0.19.2 and v0.10.1 (:mod:`tests.upstream`), via :mod:`crd_validation`:

* v1beta2 output against the v0.19.2 v1beta2 schemas;
* v1beta1 output against the v0.19.2 v1beta1 schemas, and, when the target is older than
  Kueue 0.13 (the v1alpha1-Cohort era, e.g. 0.10.1), against the v0.10.1 schemas too.
  A v1alpha1 Cohort only exists in v0.10.1 (Kueue 0.13 dropped it).

Both the pure builders (:mod:`aiperf_kueue.plan.manifests`) and the inputs the real program registers
(run offline against the recording engine) are checked, for every committed stack as
committed and re-targeted to each tested release and apiVersion. Negative tests prove the
validator rejects what the API server rejects, so it cannot pass everything silently.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from aiperf_kueue.cli.engine import run_program
from aiperf_kueue.cli.report import clean
from aiperf_kueue.config import StackConfig
from aiperf_kueue.plan import manifests
from aiperf_kueue.queues.planner import plan_queues
from aiperf_kueue.queues.queue_plan import QueuePlan
from aiperf_kueue.stackfile.loader import parse_config, read_stack_file, stack_name_of
from aiperf_kueue.upstream.kueue import KueueTarget
from tests import crd_validation as cv
from tests import upstream
from tests.support import CHECKED_STACK_FILES, flattened_tree, require_upstream

REPO = Path(__file__).resolve().parents[1]
GROUP_PREFIX = "kueue.x-k8s.io/"

#: How each stack is re-targeted (None: as committed).
TARGETS: dict[str, dict[str, str] | None] = {
    "committed": None,
    "0.19.2-v1beta2": {"version": "0.19.2", "apiVersion": "v1beta2"},
    "0.19.2-v1beta1": {"version": "0.19.2", "apiVersion": "v1beta1"},
    "0.10.1-auto": {"version": "0.10.1", "apiVersion": "auto"},
}
CASES = [
    pytest.param(stack, target, id=f"{stack_name_of(stack)}-{target}")
    for stack in CHECKED_STACK_FILES
    for target in TARGETS
]

V2 = "kueue.x-k8s.io/v1beta2"
V1 = "kueue.x-k8s.io/v1beta1"
V1A1 = "kueue.x-k8s.io/v1alpha1"


@pytest.fixture(scope="module")
def catalog() -> cv.Catalog:
    return cv.Catalog.load(require_upstream(upstream.kueue_crd_dirs))


# --------------------------------------------------------------------------- helpers


def stack_values(stack: Path, target: str) -> tuple[dict[str, Any], set[str]]:
    values, secret_keys = read_stack_file(stack)
    values = copy.deepcopy(values)
    target_values = TARGETS[target]
    if target_values is not None:
        values["kueue"] = dict(target_values)
        if TARGETS[target] != TARGETS["0.19.2-v1beta2"]:
            # No v1beta2 Cohort API: a tree is refused there (tests/test_cohort_tree.py), one flat cohort is not.
            values = flattened_tree(values)
    return values, secret_keys


def all_queue_objects(config: StackConfig, plan: QueuePlan) -> list[dict[str, Any]]:
    """Every Kueue object of a stack from the pure builders, in apply order."""
    target = plan.target
    objs = [manifests.resource_flavor(p, target) for p in config.inventory.pools]
    objs += [manifests.cohort(name, plan, config.queues) for name in plan.cohorts]
    objs += [manifests.cluster_queue(cq, plan, config.queues.cohort_of(cq)) for cq in config.queues.cluster_queues]
    for cq in config.queues.cluster_queues:
        for ns in cq.namespaces:
            objs += [manifests.local_queue(n, ns.name, cq.name, target) for n in manifests.local_queue_names(ns)]
    objs += [manifests.workload_priority_class(pc, target) for pc in config.priority_classes]
    return objs


def build(values: dict[str, Any]) -> tuple[list[dict[str, Any]], KueueTarget]:
    config = parse_config(values, "test")
    plan = plan_queues(config, "test")
    return all_queue_objects(config, plan), plan.target


def releases_for(target: KueueTarget) -> tuple[str, ...]:
    """Reference releases whose CRDs the output must satisfy (where they serve its apiVersion)."""
    return ("0.19.2", "0.10.1") if target.version < (0, 13, 0) else ("0.19.2",)


def ident(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata", {})
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj.get('apiVersion')} {obj.get('kind')} {where}{meta.get('name')}"


@dataclass
class Conformance:
    """What checking a list of objects found and did, per CRD version label."""

    objects: Counter[str] = field(default_factory=Counter)
    evaluated: Counter[str] = field(default_factory=Counter)
    skipped: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    transition_rules: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    findings: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)


def check(objs: list[dict[str, Any]], target: KueueTarget, catalog: cv.Catalog) -> Conformance:
    out = Conformance()
    for obj in objs:
        crds = [c for r in releases_for(target) if (c := catalog.get(r, obj["apiVersion"], obj["kind"])) is not None]
        if not crds:
            out.unchecked.append(ident(obj))
        for crd in crds:
            result = cv.validate(obj, crd)
            out.objects[crd.label] += 1
            out.evaluated[crd.label] += len(result.evaluated)
            out.skipped.update((crd.label, s.rule, s.reason) for s in result.skipped)
            out.transition_rules.update((crd.label, r.rule, cv.TRANSITION) for r in crd.rules if r.transition)
            out.findings += [f"{crd.label} {ident(obj)}: {f.path} [{f.check}] {f.message}" for f in result.findings]
    return out


def assert_conforms(report: Conformance) -> None:
    assert report.findings == []
    assert report.unchecked == []
    # The only rules not evaluated are the transition rules, each skipped once per object it
    # applies to (they all sit on nodes every generated object has: LocalQueue
    # spec.clusterQueue, ResourceFlavor spec).
    assert report.skipped == report.transition_rules


def summarize(report: Conformance) -> dict[str, tuple[int, int, int]]:
    """CRD version → (objects checked, CEL rule evaluations, rules skipped)."""
    skipped: Counter[str] = Counter()
    for (label, _, _), n in report.skipped.items():
        skipped[label] += n
    return {label: (n, report.evaluated[label], skipped[label]) for label, n in report.objects.items()}


def expected_api_versions(objs: list[dict[str, Any]], target: KueueTarget) -> list[str]:
    old_cohort = target.api == "v1beta1" and target.version < (0, 13, 0)
    return [V1A1 if o["kind"] == "Cohort" and old_cohort else f"{GROUP_PREFIX}{target.api}" for o in objs]


# --------------------------------------------------------------------------- the reference CRDs


def test_reference_releases_serve_the_expected_versions(catalog: cv.Catalog) -> None:
    both = ["v1beta1", "v1beta2"]
    assert catalog.served("0.19.2") == {
        "ClusterQueue": both,
        "Cohort": both,
        "LocalQueue": both,
        "ResourceFlavor": both,
        "WorkloadPriorityClass": both,
    }
    assert catalog.served("0.10.1") == {
        "ClusterQueue": ["v1beta1"],
        "Cohort": ["v1alpha1"],
        "LocalQueue": ["v1beta1"],
        "ResourceFlavor": ["v1beta1"],
        "WorkloadPriorityClass": ["v1beta1"],
    }
    charts = {r: (upstream.kueue_chart_dir(r) / "Chart.yaml").read_text() for r in ("0.19.2", "0.10.1")}
    assert {r: f'appVersion: "v{r}"' in text for r, text in charts.items()} == {"0.19.2": True, "0.10.1": True}


def test_cel_rule_inventory(catalog: cv.Catalog) -> None:
    """How many rules each CRD version has, which are transition rules (skipped on create),
    and that cel-python compiles the rest and provides every function they call."""
    counts = {c.label: (len(c.rules), sum(r.transition for r in c.rules)) for c in catalog.crds.values()}
    assert counts == {
        "0.19.2 kueue.x-k8s.io/v1beta1 ClusterQueue": (4, 0),
        "0.19.2 kueue.x-k8s.io/v1beta2 ClusterQueue": (4, 0),
        "0.19.2 kueue.x-k8s.io/v1beta1 Cohort": (1, 0),
        "0.19.2 kueue.x-k8s.io/v1beta2 Cohort": (1, 0),
        "0.19.2 kueue.x-k8s.io/v1beta1 LocalQueue": (1, 1),
        "0.19.2 kueue.x-k8s.io/v1beta2 LocalQueue": (1, 1),
        "0.19.2 kueue.x-k8s.io/v1beta1 ResourceFlavor": (10, 3),
        "0.19.2 kueue.x-k8s.io/v1beta2 ResourceFlavor": (10, 3),
        "0.19.2 kueue.x-k8s.io/v1beta1 WorkloadPriorityClass": (0, 0),
        "0.19.2 kueue.x-k8s.io/v1beta2 WorkloadPriorityClass": (0, 0),
        "0.10.1 kueue.x-k8s.io/v1beta1 ClusterQueue": (3, 0),
        "0.10.1 kueue.x-k8s.io/v1alpha1 Cohort": (1, 0),
        "0.10.1 kueue.x-k8s.io/v1beta1 LocalQueue": (1, 1),
        "0.10.1 kueue.x-k8s.io/v1beta1 ResourceFlavor": (8, 1),
        "0.10.1 kueue.x-k8s.io/v1beta1 WorkloadPriorityClass": (0, 0),
    }
    transition = {(c.label, r.schema_path, r.message) for c in catalog.crds.values() for r in c.rules if r.transition}
    assert transition == {
        *{(f"0.19.2 {v} LocalQueue", ".spec.clusterQueue", "field is immutable") for v in (V1, V2)},
        *{
            (f"0.19.2 {v} ResourceFlavor", ".spec", message)
            for v in (V1, V2)
            for message in (
                "nodeLabels are immutable when topologyName is set",
                "tolerations are immutable when topologyName is set",
                "topologyName is immutable when topologyName is set",
            )
        },
        (f"0.10.1 {V1} LocalQueue", ".spec.clusterQueue", "field is immutable"),
        (f"0.10.1 {V1} ResourceFlavor", ".spec", "resourceFlavorSpec are immutable when topologyName is set"),
    }
    unsupported = {(c.label, r.rule): r.unsupported_functions for c in catalog.crds.values() for r in c.rules}
    assert {k: v for k, v in unsupported.items() if v} == {}
    for crd in catalog.crds.values():
        for rule in crd.rules:
            if not rule.transition:
                cv.compile_rule(rule.rule)  # raises on a rule cel-python cannot parse


# --------------------------------------------------------------------------- generated objects


@pytest.mark.parametrize(("stack", "target"), CASES)
def test_builder_output_conforms(stack: Path, target: str, catalog: cv.Catalog) -> None:
    values, _ = stack_values(stack, target)
    objs, kueue = build(values)
    assert [o["apiVersion"] for o in objs] == expected_api_versions(objs, kueue)
    assert_conforms(check(objs, kueue, catalog))


@pytest.mark.parametrize(("stack", "target"), CASES)
def test_program_run_registers_conforming_objects(stack: Path, target: str, catalog: cv.Catalog) -> None:
    values, secret_keys = stack_values(stack, target)
    run = run_program(stack_name_of(stack), values, secret_keys)
    recorded = [
        clean(r["inputs"])
        for r in run.resources
        if isinstance(r["inputs"], dict) and str(r["inputs"].get("apiVersion", "")).startswith(GROUP_PREFIX)
    ]
    objs, kueue = build(values)
    # What the run registers conforms...
    assert_conforms(check(recorded, kueue, catalog))
    # ...and is exactly the objects the builders make (no Kueue object escapes the check)...
    assert sorted(ident(o) for o in recorded) == sorted(ident(o) for o in objs)
    # ...each registered under the type its apiVersion and kind name.
    kueue_types = sorted(r["type"] for r in run.resources if r["type"].startswith(f"kubernetes:{GROUP_PREFIX}"))
    assert kueue_types == sorted(f"kubernetes:{o['apiVersion']}:{o['kind']}" for o in recorded)


PROD_SUMMARY = {
    # target → CRD version → (objects, CEL rule evaluations, transition rules skipped)
    "committed": {
        f"0.19.2 {V2} ResourceFlavor": (3, 15, 9),
        f"0.19.2 {V2} Cohort": (1, 0, 0),
        f"0.19.2 {V2} ClusterQueue": (3, 12, 0),
        f"0.19.2 {V2} LocalQueue": (5, 0, 5),
        f"0.19.2 {V2} WorkloadPriorityClass": (2, 0, 0),
    },
    "0.19.2-v1beta1": {
        f"0.19.2 {V1} ResourceFlavor": (3, 15, 9),
        f"0.19.2 {V1} Cohort": (1, 0, 0),
        f"0.19.2 {V1} ClusterQueue": (3, 12, 0),
        f"0.19.2 {V1} LocalQueue": (5, 0, 5),
        f"0.19.2 {V1} WorkloadPriorityClass": (2, 0, 0),
    },
    "0.10.1-auto": {
        f"0.19.2 {V1} ResourceFlavor": (3, 15, 9),
        f"0.19.2 {V1} ClusterQueue": (3, 12, 0),
        f"0.19.2 {V1} LocalQueue": (5, 0, 5),
        f"0.19.2 {V1} WorkloadPriorityClass": (2, 0, 0),
        f"0.10.1 {V1} ResourceFlavor": (3, 15, 3),
        f"0.10.1 {V1A1} Cohort": (1, 0, 0),
        f"0.10.1 {V1} ClusterQueue": (3, 9, 0),
        f"0.10.1 {V1} LocalQueue": (5, 0, 5),
        f"0.10.1 {V1} WorkloadPriorityClass": (2, 0, 0),
    },
}


@pytest.mark.parametrize("target", sorted(PROD_SUMMARY))
def test_prod_stack_is_checked_against_every_expected_crd_version(target: str, catalog: cv.Catalog) -> None:
    stack = REPO / "stacks" / "Pulumi.prod.yaml"
    objs, kueue = build(stack_values(stack, target)[0])
    report = check(objs, kueue, catalog)
    assert_conforms(report)
    assert summarize(report) == PROD_SUMMARY[target]


#: A stack using every field the builders can write (the committed stacks leave some out).
FEATURES: dict[str, Any] = {
    "inventory": {
        "headroom": 5,
        "pools": [
            {
                "name": "cpu",
                "nodes": 2,
                "cpu": "32",
                "memory": "128Gi",
                "extraResources": {"pods": 110, "ephemeral-storage": "400Gi"},
                "nodeLabels": {"node-pool": "cpu", "example.com/tier": "bench"},
                "nodeTaints": [
                    {"key": "dedicated", "value": "bench", "effect": "PreferNoSchedule"},
                    {"key": "maintenance", "effect": "NoExecute"},
                ],
                "tolerations": [
                    {"operator": "Exists"},
                    {"key": "maintenance", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                    {"key": "dedicated", "value": "bench", "effect": "PreferNoSchedule"},
                ],
            },
            {
                "name": "gpu",
                "nodes": 2,
                "cpu": "96",
                "memory": "1Ti",
                "gpus": 8,
                "extraResources": {"pods": 110, "ephemeral-storage": "2Ti"},
                "nodeLabels": {"node-pool": "gpu"},
                "nodeTaints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            },
        ],
    },
    "queues": {
        "cohort": "benchmarks",
        "coveredResources": ["pods", "ephemeral-storage"],
        "clusterQueues": [
            {
                "name": "team-a",
                "share": 60,
                "borrowingLimit": {"gpu": {"nvidia.com/gpu": 4}},
                "lendingLimit": {"cpu": {"cpu": "10", "memory": "40Gi"}},
                "preemption": {
                    "withinClusterQueue": "LowerOrNewerEqualPriority",
                    "reclaimWithinCohort": "Any",
                    "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 10},
                },
                "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"},
                "fairSharing": {"weight": "2500m"},
                "stopPolicy": "Hold",
                "queueingStrategy": "StrictFIFO",
                "namespaces": [
                    {"name": "bench-a", "localQueue": "team-a-queue", "defaultQueue": True, "labels": {"team": "a"}}
                ],
            },
            {
                "name": "team-b",
                "nominalQuota": {"cpu": {"cpu": "20", "memory": "80Gi", "pods": 80}, "gpu": {"nvidia.com/gpu": 6}},
                "preemption": {"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "Never"}},
                "flavorFungibility": {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"},
                "fairSharing": {"weight": "0"},
                "stopPolicy": "HoldAndDrain",
                "queueingStrategy": "BestEffortFIFO",
                "namespaces": [{"name": "bench-b"}, {"name": "shared-b", "create": False}],
            },
        ],
    },
    "priorityClasses": [
        {"name": "benchmark-high", "value": 2147483647, "description": "x" * 2048},
        {"name": "background", "value": -5},
    ],
}


FEATURES_SUMMARY = {
    # target → CRD version → (objects, CEL rule evaluations, transition rules skipped)
    "0.19.2-v1beta2": {
        f"0.19.2 {V2} ResourceFlavor": (2, 14, 6),
        f"0.19.2 {V2} Cohort": (1, 0, 0),
        f"0.19.2 {V2} ClusterQueue": (2, 8, 0),
        f"0.19.2 {V2} LocalQueue": (4, 0, 4),
        f"0.19.2 {V2} WorkloadPriorityClass": (2, 0, 0),
    },
    "0.19.2-v1beta1": {
        f"0.19.2 {V1} ResourceFlavor": (2, 14, 6),
        f"0.19.2 {V1} Cohort": (1, 0, 0),
        f"0.19.2 {V1} ClusterQueue": (2, 8, 0),
        f"0.19.2 {V1} LocalQueue": (4, 0, 4),
        f"0.19.2 {V1} WorkloadPriorityClass": (2, 0, 0),
    },
    "0.10.1-auto": {
        f"0.19.2 {V1} ResourceFlavor": (2, 14, 6),
        f"0.19.2 {V1} ClusterQueue": (2, 8, 0),
        f"0.19.2 {V1} LocalQueue": (4, 0, 4),
        f"0.19.2 {V1} WorkloadPriorityClass": (2, 0, 0),
        f"0.10.1 {V1} ResourceFlavor": (2, 14, 2),
        f"0.10.1 {V1A1} Cohort": (1, 0, 0),
        f"0.10.1 {V1} ClusterQueue": (2, 6, 0),
        f"0.10.1 {V1} LocalQueue": (4, 0, 4),
        f"0.10.1 {V1} WorkloadPriorityClass": (2, 0, 0),
    },
}


@pytest.mark.parametrize("target", sorted(FEATURES_SUMMARY))
def test_every_builder_field_conforms(target: str, catalog: cv.Catalog) -> None:
    values = copy.deepcopy(FEATURES)
    values["kueue"] = dict(TARGETS[target] or {})
    if target != "0.10.1-auto":  # preference needs Kueue >= 0.15
        values["queues"]["clusterQueues"][1]["flavorFungibility"]["preference"] = "PreemptionOverBorrowing"
    objs, kueue = build(values)
    report = check(objs, kueue, catalog)
    assert_conforms(report)
    assert summarize(report) == FEATURES_SUMMARY[target]


# --------------------------------------------------------------------------- the validator rejects


def cluster_queue(api: str = V2, *, borrowing: bool = True) -> dict[str, Any]:
    gpu: dict[str, Any] = {"name": "nvidia.com/gpu", "nominalQuota": 16}
    if borrowing:
        gpu["borrowingLimit"] = 8
    return {
        "apiVersion": api,
        "kind": "ClusterQueue",
        "metadata": {"name": "team-a", "labels": {"app.kubernetes.io/part-of": "aiperf-kueue"}},
        "spec": {
            ("cohortName" if api == V2 else "cohort"): "benchmarks",
            "namespaceSelector": {"matchLabels": {"aiperf-kueue/cluster-queue": "team-a"}},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "nvidia.com/gpu"],
                    "flavors": [
                        {"name": "gpu-h100", "resources": [{"name": "cpu", "nominalQuota": "361"}, gpu]},
                        {
                            "name": "gpu-a100",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "89300m"},
                                {"name": "nvidia.com/gpu", "nominalQuota": 8},
                            ],
                        },
                    ],
                }
            ],
        },
    }


def resource_flavor(api: str = V2) -> dict[str, Any]:
    return {
        "apiVersion": api,
        "kind": "ResourceFlavor",
        "metadata": {"name": "gpu-h100"},
        "spec": {
            "nodeLabels": {"node-pool": "gpu-h100"},
            "nodeTaints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
    }


QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
CRD_VERSIONS = [("0.19.2", V2), ("0.19.2", V1), ("0.10.1", V1)]
CRD_IDS = ["0.19.2-v1beta2", "0.19.2-v1beta1", "0.10.1-v1beta1"]


def findings(obj: dict[str, Any], catalog: cv.Catalog, release: str) -> list[tuple[str, str, str]]:
    crd = catalog.get(release, obj["apiVersion"], obj["kind"])
    assert crd is not None
    return [(f.path, f.check, f.message) for f in cv.validate(obj, crd).findings]


@pytest.mark.parametrize(("release", "api"), CRD_VERSIONS, ids=CRD_IDS)
def test_baselines_of_the_negative_tests_are_valid(release: str, api: str, catalog: cv.Catalog) -> None:
    assert findings(cluster_queue(api), catalog, release) == []
    assert findings(resource_flavor(api), catalog, release) == []


@pytest.mark.parametrize(("release", "api"), CRD_VERSIONS, ids=CRD_IDS)
def test_rejects_a_flavor_with_fewer_resources_than_covered(release: str, api: str, catalog: cv.Catalog) -> None:
    cq = cluster_queue(api)
    del cq["spec"]["resourceGroups"][0]["flavors"][1]["resources"][1]
    assert findings(cq, catalog, release) == [
        (
            "spec.resourceGroups[0]",
            "cel",
            "flavors must have the same number of resources as the coveredResources (rule is false)",
        )
    ]


@pytest.mark.parametrize(("release", "api"), CRD_VERSIONS, ids=CRD_IDS)
def test_rejects_a_borrowing_limit_without_a_cohort(release: str, api: str, catalog: cv.Catalog) -> None:
    cq = cluster_queue(api)
    del cq["spec"]["cohortName" if api == V2 else "cohort"]
    assert findings(cq, catalog, release) == [
        ("spec", "cel", "borrowingLimit must be nil when cohort is empty (rule is false)")
    ]
    cq = cluster_queue(api, borrowing=False)
    del cq["spec"]["cohortName" if api == V2 else "cohort"]
    assert findings(cq, catalog, release) == []


@pytest.mark.parametrize(("release", "api"), CRD_VERSIONS, ids=CRD_IDS)
def test_rejects_a_toleration_without_key_unless_exists(release: str, api: str, catalog: cv.Catalog) -> None:
    message = "operator must be Exists when 'key' is empty, which means 'match all values and all keys'"
    rf = resource_flavor(api)
    rf["spec"]["tolerations"] = [{"operator": "Equal", "value": "present", "effect": "NoSchedule"}]
    assert findings(rf, catalog, release) == [("spec.tolerations", "cel", f"{message} (rule is false)")]
    # No operator at all: CEL cannot even read x.operator, so the rule errors, and that rejects too.
    rf["spec"]["tolerations"] = [{"effect": "NoSchedule"}]
    assert findings(rf, catalog, release) == [
        ("spec.tolerations", "cel", f"{message} (evaluation error: no such member in mapping: 'operator')")
    ]
    rf["spec"]["tolerations"] = [{"operator": "Exists"}]
    assert findings(rf, catalog, release) == []


@pytest.mark.parametrize(("release", "api"), CRD_VERSIONS, ids=CRD_IDS)
def test_rejects_other_toleration_and_taint_rules(release: str, api: str, catalog: cv.Catalog) -> None:
    rf = resource_flavor(api)
    rf["spec"]["tolerations"] = [
        {"key": "a", "operator": "Exists", "value": "x"},
        {"key": "b", "operator": "Equal", "effect": "NoSchedule", "tolerationSeconds": 30},
        {"key": "c", "operator": "In", "effect": "Sometimes"},
    ]
    rf["spec"]["nodeTaints"] = [{"key": "a", "effect": "NoScheduleAtAll"}]
    effects = "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute' (rule is false)"
    # The schema has no enum for these: only the CEL rules catch them.
    assert findings(rf, catalog, release) == [
        ("spec.nodeTaints", "cel", effects),
        ("spec.tolerations", "cel", "effect must be 'NoExecute' when 'tolerationSeconds' is set (rule is false)"),
        ("spec.tolerations", "cel", "supported toleration values: 'Equal'(default), 'Exists' (rule is false)"),
        ("spec.tolerations", "cel", "a value must be empty when 'operator' is 'Exists' (rule is false)"),
        ("spec.tolerations", "cel", effects),
    ]


@pytest.mark.parametrize(("release", "api"), CRD_VERSIONS, ids=CRD_IDS)
def test_rejects_unknown_fields(release: str, api: str, catalog: cv.Catalog) -> None:
    cq = cluster_queue(api)
    cq["spec"]["maxWorkloads"] = 3
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["limit"] = "1"
    cq["status2"] = {}
    assert findings(cq, catalog, release) == [
        ("", "schema", "Additional properties are not allowed ('status2' was unexpected)"),
        ("spec", "schema", "Additional properties are not allowed ('maxWorkloads' was unexpected)"),
        (
            "spec.resourceGroups[0].flavors[0].resources[0]",
            "schema",
            "Additional properties are not allowed ('limit' was unexpected)",
        ),
    ]


def test_rejects_the_cohort_field_of_the_other_api_version(catalog: cv.Catalog) -> None:
    v2 = cluster_queue(V2, borrowing=False)
    v2["spec"]["cohort"] = v2["spec"].pop("cohortName")
    assert findings(v2, catalog, "0.19.2") == [
        ("spec", "schema", "Additional properties are not allowed ('cohort' was unexpected)")
    ]
    v1 = cluster_queue(V1, borrowing=False)
    v1["spec"]["cohortName"] = v1["spec"].pop("cohort")
    assert findings(v1, catalog, "0.19.2") == [
        ("spec", "schema", "Additional properties are not allowed ('cohortName' was unexpected)")
    ]


@pytest.mark.parametrize(("release", "api"), CRD_VERSIONS, ids=CRD_IDS)
def test_rejects_bad_quantities_and_duplicate_map_keys(release: str, api: str, catalog: cv.Catalog) -> None:
    cq = cluster_queue(api)
    flavors = cq["spec"]["resourceGroups"][0]["flavors"]
    flavors[0]["resources"][0]["nominalQuota"] = "12 cores"
    flavors[1]["name"] = flavors[0]["name"]
    assert findings(cq, catalog, release) == [
        (
            "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
            "schema",
            f"'12 cores' does not match {QUANTITY_PATTERN!r}",
        ),
        ("spec.resourceGroups[0].flavors[1]", "list", 'Duplicate value: {"name": "gpu-h100"}'),
    ]


@pytest.mark.parametrize(("release", "api"), CRD_VERSIONS, ids=CRD_IDS)
def test_rejects_borrowing_preemption_while_never_reclaiming(release: str, api: str, catalog: cv.Catalog) -> None:
    cq = cluster_queue(api)
    cq["spec"]["preemption"] = {"borrowWithinCohort": {"policy": "LowerPriority"}}  # reclaim defaults to Never
    assert findings(cq, catalog, release) == [
        ("spec.preemption", "cel", "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never (rule is false)")
    ]
    cq["spec"]["preemption"]["reclaimWithinCohort"] = "LowerPriority"
    assert findings(cq, catalog, release) == []


@pytest.mark.parametrize("api", [V2, V1])
def test_rejects_preference_unless_both_try_next_flavor(api: str, catalog: cv.Catalog) -> None:
    """Defaults apply before the rules: whenCanBorrow defaults to MayStopSearch, so a lone
    ``preference`` fails the rule (and would error, not pass, without defaulting)."""
    cq = cluster_queue(api)
    cq["spec"]["flavorFungibility"] = {"preference": "BorrowingOverPreemption"}
    assert findings(cq, catalog, "0.19.2") == [
        (
            "spec.flavorFungibility",
            "cel",
            "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor (rule is false)",
        )
    ]
    cq["spec"]["flavorFungibility"].update(whenCanBorrow="TryNextFlavor", whenCanPreempt="TryNextFlavor")
    assert findings(cq, catalog, "0.19.2") == []
    # Kueue 0.10.1 knows neither preference nor MayStopSearch.
    old = cluster_queue(V1)
    old["spec"]["flavorFungibility"] = {"whenCanBorrow": "MayStopSearch", "preference": "BorrowingOverPreemption"}
    assert findings(old, catalog, "0.10.1") == [
        ("spec.flavorFungibility", "schema", "Additional properties are not allowed ('preference' was unexpected)"),
        ("spec.flavorFungibility.whenCanBorrow", "schema", "'MayStopSearch' is not one of ['Borrow', 'TryNextFlavor']"),
    ]


def test_workload_priority_class_description_limit_is_v1beta2_only(catalog: cv.Catalog) -> None:
    wpc = {"kind": "WorkloadPriorityClass", "metadata": {"name": "high"}, "value": 1000, "description": "x" * 2049}
    assert findings({"apiVersion": V2, **wpc}, catalog, "0.19.2") == [
        ("description", "schema", f"'{'x' * 2049}' is too long")
    ]
    assert findings({"apiVersion": V1, **wpc}, catalog, "0.19.2") == []
    assert findings({"apiVersion": V1, **wpc}, catalog, "0.10.1") == []
    del wpc["value"]
    assert findings({"apiVersion": V2, **wpc, "description": "d"}, catalog, "0.19.2") == [
        ("", "schema", "'value' is a required property")
    ]


def test_rejects_bad_metadata_and_wrong_api_version(catalog: cv.Catalog) -> None:
    lq = {"apiVersion": V2, "kind": "LocalQueue", "metadata": {"name": "q"}, "spec": {"clusterQueue": "team-a"}}
    assert findings(lq, catalog, "0.19.2") == [
        ("metadata.namespace", "metadata", "a namespaced object needs a DNS-1123 label namespace, got None")
    ]
    cq = cluster_queue()
    cq["metadata"].update(name="Team_A", namespace="bench", labels={"a/b/c": "x", "ok": "not ok"}, uid="1")
    assert findings(cq, catalog, "0.19.2") == [
        ("metadata.uid", "metadata", "unknown ObjectMeta field (the API server would drop it)"),
        ("metadata.name", "metadata", "must be a DNS-1123 subdomain, got 'Team_A'"),
        ("metadata.namespace", "metadata", "a cluster-scoped object has no namespace, got 'bench'"),
        ("metadata.labels.a/b/c", "metadata", "key must be a qualified name ([prefix/]name)"),
        ("metadata.labels.ok", "metadata", "invalid value 'not ok'"),
    ]
    crd = catalog.get("0.19.2", V2, "ClusterQueue")
    assert crd is not None
    assert [(f.path, f.check, f.message) for f in cv.validate(cluster_queue(V1, borrowing=False), crd).findings] == [
        ("", "served", f"{V1} ClusterQueue is not {V2} ClusterQueue"),
        ("spec", "schema", "Additional properties are not allowed ('cohort' was unexpected)"),
    ]
    # Versions a release does not serve have no schema at all.
    assert catalog.get("0.10.1", V2, "ClusterQueue") is None
    assert catalog.get("0.19.2", V1A1, "Cohort") is None


@pytest.mark.parametrize(("release", "api"), CRD_VERSIONS, ids=CRD_IDS)
def test_generate_name_stands_in_for_name(release: str, api: str, catalog: cv.Catalog) -> None:
    """The shape of the readiness gate's server-side dry-run ResourceFlavor."""
    rf = {"apiVersion": api, "kind": "ResourceFlavor", "metadata": {"generateName": "aiperf-kueue-readiness-"}}
    assert findings({**rf, "spec": {}}, catalog, release) == []
    rf["metadata"] = {"generateName": "Readiness_"}
    assert findings({**rf, "spec": {}}, catalog, release) == [
        ("metadata.generateName", "metadata", "must be a DNS-1123 subdomain prefix, got 'Readiness_'")
    ]


def test_transition_rules_are_skipped_and_listed(catalog: cv.Catalog) -> None:
    lq = {
        "apiVersion": V2,
        "kind": "LocalQueue",
        "metadata": {"name": "q", "namespace": "bench"},
        "spec": {"clusterQueue": "team-a"},
    }
    crd = catalog.get("0.19.2", V2, "LocalQueue")
    assert crd is not None
    result = cv.validate(lq, crd)
    assert (result.findings, result.evaluated, result.skipped) == (
        [],
        [],
        [cv.Skip("spec.clusterQueue", "self == oldSelf", cv.TRANSITION)],
    )


def test_rules_calling_functions_cel_python_lacks_are_skipped_and_listed() -> None:
    schema = {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "properties": {"q": {"type": "string"}},
                "x-kubernetes-validations": [
                    {"rule": "quantity(self.q).isGreaterThan(quantity('1'))", "message": "q > 1"},
                    {"rule": "self.q.startsWith('1')", "message": "starts with 1"},
                ],
            },
        },
    }
    crd = cv.CrdVersion("test", "example.com", "Thing", "v1", False, False, schema)
    obj = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": {"q": "2"}}
    result = cv.validate(obj, crd)
    assert (result.evaluated, result.skipped) == (
        [("spec", "self.q.startsWith('1')")],
        [
            cv.Skip(
                "spec",
                "quantity(self.q).isGreaterThan(quantity('1'))",
                "calls isGreaterThan, quantity, which cel-python does not provide",
            )
        ],
    )
    assert [(f.path, f.check, f.message) for f in result.findings] == [("spec", "cel", "starts with 1 (rule is false)")]


def test_unknown_schema_keywords_are_not_ignored() -> None:
    with pytest.raises(ValueError, match="unhandled CRD schema keyword 'x-kubernetes-embedded-resource'"):
        cv.to_json_schema({"type": "object", "x-kubernetes-embedded-resource": True})


@pytest.mark.parametrize(("release", "api"), CRD_VERSIONS, ids=CRD_IDS)
def test_patterns_match_the_whole_text_as_go_regexps_do(release: str, api: str, catalog: cv.Catalog) -> None:
    """Python's ``$`` matches before a final newline; the API server's Go regexps do not."""
    cq = cluster_queue(api)
    flavors = cq["spec"]["resourceGroups"][0]["flavors"]
    flavors[0]["resources"][0]["nominalQuota"] = "361\n"
    flavors[1]["name"] = "gpu-a100\n"
    assert findings(cq, catalog, release) == [
        (
            "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
            "schema",
            f"'361\\n' does not match {QUANTITY_PATTERN!r}",
        ),
        (
            "spec.resourceGroups[0].flavors[1].name",
            "schema",
            "'gpu-a100\\n' does not match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'",
        ),
    ]
    cq["metadata"]["name"] = "team-a\n"
    cq["metadata"]["labels"] = {"app.kubernetes.io/part-of\n": "aiperf-kueue\n"}
    assert [f for f in findings(cq, catalog, release) if f[1] == "metadata"] == [
        ("metadata.name", "metadata", "must be a DNS-1123 subdomain, got 'team-a\\n'"),
        ("metadata.labels.app.kubernetes.io/part-of\n", "metadata", "key must be a qualified name ([prefix/]name)"),
        ("metadata.labels.app.kubernetes.io/part-of\n", "metadata", "invalid value 'aiperf-kueue\\n'"),
    ]


def test_go_regex_only_anchors_dollars_outside_classes_and_escapes() -> None:
    assert cv.go_regex(r"^[a-z]+$").pattern == r"^[a-z]+\Z"
    assert cv.go_regex(r"^[$]\$$").pattern == r"^[$]\$\Z"
    assert cv.go_regex(r"^[]$]+$").pattern == r"^[]$]+\Z"
    assert cv.go_regex(r"^[^]$]+$").pattern == r"^[^]$]+\Z"
    assert cv.go_regex(r"^a$").search("a") is not None
    assert cv.go_regex(r"^a$").search("a\n") is None


@pytest.mark.parametrize(("release", "api"), CRD_VERSIONS, ids=CRD_IDS)
def test_rejects_integers_outside_their_format(release: str, api: str, catalog: cv.Catalog) -> None:
    cq = cluster_queue(api)
    cq["spec"]["preemption"] = {
        "reclaimWithinCohort": "Any",
        "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 2**31},
    }
    rf = resource_flavor(api)
    rf["spec"]["tolerations"] = [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 2**63}
    ]
    wpc = {"apiVersion": api, "kind": "WorkloadPriorityClass", "metadata": {"name": "high"}, "value": -(2**31) - 1}
    assert findings(cq, catalog, release) == [
        (
            "spec.preemption.borrowWithinCohort.maxPriorityThreshold",
            "schema",
            "2147483648 is out of range for format int32",
        )
    ]
    assert findings(rf, catalog, release) == [
        ("spec.tolerations[0].tolerationSeconds", "decode", "9223372036854775808 does not fit in a 64-bit integer")
    ]
    assert findings(wpc, catalog, release) == [("value", "schema", "-2147483649 is out of range for format int32")]
    cq["spec"]["preemption"]["borrowWithinCohort"]["maxPriorityThreshold"] = 2**31 - 1
    rf["spec"]["tolerations"][0]["tolerationSeconds"] = 2**63 - 1
    wpc["value"] = -(2**31)
    assert findings(cq, catalog, release) == findings(rf, catalog, release) == findings(wpc, catalog, release) == []
