"""The components, recorded under Pulumi's mock engine: inputs, parents, options."""

from __future__ import annotations

import pulumi
import pytest

from aiperf_kueue.cli.engine import run_program
from aiperf_kueue.cli.report import clean
from components.cluster import cluster_provider
from tests.support import CHECKED_STACKS, by_name, committed_run, stack_values

PART_OF = {"app.kubernetes.io/part-of": "aiperf-kueue"}
#: The program owns its Kueue objects: a hand edit is taken back, not an apply conflict (docs/operations.md).
PATCH_FORCE = {"pulumi.com/patchForce": "true"}


def test_resource_flavor_inputs() -> None:
    rf = by_name(committed_run("prod"))["queues-flavor-gpu-h100"]
    assert rf["type"] == "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"
    assert clean(rf["inputs"]) == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "gpu-h100", "labels": PART_OF, "annotations": PATCH_FORCE},
        "spec": {
            "nodeLabels": {"node-pool": "gpu-h100"},
            "nodeTaints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
    }


def test_cluster_queue_inputs() -> None:
    cq = by_name(committed_run("prod"))["queues-cq-research"]
    assert cq["type"] == "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
    assert clean(cq["inputs"]) == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "research", "labels": PART_OF, "annotations": PATCH_FORCE},
        "spec": {
            "cohortName": "benchmarks",
            "namespaceSelector": {"matchLabels": {"aiperf-kueue/cluster-queue": "research"}},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": "cpu",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "47880m"},
                                {"name": "memory", "nominalQuota": "190Gi"},
                                {"name": "nvidia.com/gpu", "nominalQuota": "0"},
                            ],
                        },
                        {
                            "name": "gpu-h100",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "180500m"},
                                {"name": "memory", "nominalQuota": "1805Gi"},
                                {"name": "nvidia.com/gpu", "nominalQuota": "8"},
                            ],
                        },
                        {
                            "name": "gpu-a100",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "0"},
                                {"name": "memory", "nominalQuota": "0"},
                                {"name": "nvidia.com/gpu", "nominalQuota": "0", "borrowingLimit": "8"},
                            ],
                        },
                    ],
                }
            ],
            "preemption": {"reclaimWithinCohort": "Any"},
            "queueingStrategy": "StrictFIFO",
        },
    }


def test_local_queue_inputs_options_and_order() -> None:
    run = committed_run("prod")
    resources = by_name(run)
    lq = resources["ns-bench-team-a-lq-aiperf-queue"]
    assert clean(lq["inputs"]) == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {
            "name": "aiperf-queue",
            "namespace": "bench-team-a",
            "labels": PART_OF,
            "annotations": PATCH_FORCE,
        },
        "spec": {"clusterQueue": "team-a"},
    }
    # spec.clusterQueue is immutable: a change replaces the queue, deleting the old one first (fixed name).
    assert lq["replaceOnChanges"] == ["spec.clusterQueue"]
    assert lq["deleteBeforeReplace"] is True
    assert lq["dependsOn"] == sorted(
        resources[n]["urn"] for n in ("kueue-ready", "ns-bench-team-a-ns", "queues-cq-team-a")
    )
    # Under the stack's one BenchmarkNamespaces component, whose name its own name starts with.
    assert lq["parent"] == resources["ns"]["urn"]
    assert resources["ns"]["type"] == "aiperf-kueue:index:BenchmarkNamespaces"


def test_cluster_queues_wait_for_flavors_and_cohort() -> None:
    resources = by_name(committed_run("prod"))
    before = sorted(
        resources[n]["urn"]
        for n in (
            "kueue-ready",
            "queues-flavor-cpu",
            "queues-flavor-gpu-h100",
            "queues-flavor-gpu-a100",
            "queues-cohort-benchmarks",
        )
    )
    for cq in ("team-a", "team-b", "research"):
        assert resources[f"queues-cq-{cq}"]["dependsOn"] == before


def test_default_local_queue_and_existing_namespace() -> None:
    resources = by_name(committed_run("prod"))
    assert clean(resources["ns-bench-team-a-lq-default"]["inputs"])["spec"] == {"clusterQueue": "team-a"}
    patch = resources["ns-ml-team-b-ns"]
    assert patch["type"] == "kubernetes:core/v1:NamespacePatch"
    assert patch["retainOnDelete"] is False
    assert clean(patch["inputs"])["metadata"] == {
        "name": "ml-team-b",
        "labels": {**PART_OF, "aiperf-kueue/cluster-queue": "team-b"},
        # Server-side applied to the existing namespace too: AIPerf's preflight reads it there.
        "annotations": {"kueue.x-k8s.io/default-queue-name": "aiperf-queue"},
    }
    created = resources["ns-bench-team-b-ns"]
    assert created["type"] == "kubernetes:core/v1:Namespace"
    assert created["retainOnDelete"] is True


def test_priority_classes_have_top_level_value() -> None:
    wpc = by_name(committed_run("prod"))["priorities-benchmark-high"]
    assert wpc["type"] == "kubernetes:kueue.x-k8s.io/v1beta2:WorkloadPriorityClass"
    assert clean(wpc["inputs"]) == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": "benchmark-high", "labels": PART_OF, "annotations": PATCH_FORCE},
        "value": 1000,
        "description": "Release-gating benchmark runs",
    }


@pytest.mark.parametrize("stack", CHECKED_STACKS)
def test_every_child_has_a_component_parent_and_a_derived_name(stack: str) -> None:
    run = committed_run(stack)
    components = {r["urn"]: r for r in run.resources if r["type"].startswith("aiperf-kueue:index:")}
    assert components, "the program declares components"
    providers = [r["name"] for r in run.resources if r["type"].startswith("pulumi:providers:")]
    # The stack's one Kubernetes provider is a root resource: every component is given it.
    assert providers == ["cluster"]
    for r in run.resources:
        if r["urn"] not in components and not r["type"].startswith("pulumi:providers:"):
            parent = components.get(r["parent"])
            assert parent is not None, f"{r['name']} is not parented to a component"
            assert r["name"].startswith(parent["name"] + "-")


@pytest.mark.parametrize("stack", CHECKED_STACKS)
def test_every_kubernetes_object_has_an_explicit_name(stack: str) -> None:
    for r in committed_run(stack).resources:
        if r["type"].startswith("kubernetes:") and "kind" in r["inputs"]:
            assert r["inputs"]["metadata"]["name"], f"{r['name']} would be auto-named"


def test_the_documented_order_is_real_edges() -> None:
    # ResourceFlavors -> Cohort -> ClusterQueues -> LocalQueues and WorkloadPriorityClasses, all after the gate.
    resources = by_name(committed_run("prod"))
    urn = {n: r["urn"] for n, r in resources.items()}
    flavors = [urn[f"queues-flavor-{f}"] for f in ("cpu", "gpu-h100", "gpu-a100")]
    cluster_queues = [urn[f"queues-cq-{cq}"] for cq in ("team-a", "team-b", "research")]
    assert resources["queues-cohort-benchmarks"]["dependsOn"] == sorted([urn["kueue-ready"], *flavors])
    for name in ("queues-flavor-cpu", "queues-flavor-gpu-h100", "queues-flavor-gpu-a100"):
        assert resources[name]["dependsOn"] == [urn["kueue-ready"]]
    for cq in ("team-a", "team-b", "research"):
        assert urn["queues-cohort-benchmarks"] in resources[f"queues-cq-{cq}"]["dependsOn"]
    for wpc in ("priorities-benchmark-high", "priorities-benchmark-low"):
        assert resources[wpc]["dependsOn"] == sorted([urn["kueue-ready"], *cluster_queues])


def test_without_a_cohort_cluster_queues_wait_for_the_flavors_and_the_gate() -> None:
    values, secrets = stack_values("prod")
    del values["queues"]["cohort"]
    for cq in values["queues"]["clusterQueues"]:
        cq.pop("borrowingLimit", None)
        cq.pop("lendingLimit", None)
        cq["preemption"] = {"withinClusterQueue": "LowerPriority"}
    resources = by_name(run_program("prod", values, secrets))
    assert not [n for n in resources if n.startswith("queues-cohort-")]
    names = ("kueue-ready", "queues-flavor-cpu", "queues-flavor-gpu-h100", "queues-flavor-gpu-a100")
    expected = sorted(resources[n]["urn"] for n in names)
    assert resources["queues-cq-team-a"]["dependsOn"] == expected


def test_a_stack_that_names_no_cluster_is_refused_unless_the_run_is_offline() -> None:
    # The program hands cluster_provider what its EngineConfig read: under pulumi up, offline is false.
    with pytest.raises(pulumi.RunError) as raised:
        cluster_provider(None, "stacks/Pulumi.lab.yaml")
    assert str(raised.value).splitlines() == [
        "invalid stack config:",
        "stacks/Pulumi.lab.yaml: aiperf-kueue:cluster: the stack names no cluster, and pulumi up would deploy to "
        "whatever kubectl's current context is; set cluster.context to this stack's kubeconfig context, or "
        "cluster.currentContext: true to opt in",
    ]
