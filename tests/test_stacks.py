"""The committed stacks: each plans cleanly, and the config promises its defaults."""

from __future__ import annotations

from collections import Counter

import pytest

from aiperf_kueue.installs import operator_objects
from aiperf_kueue.installs import releases as installs
from aiperf_kueue.plan import manifests, submit
from tests.support import CHECKED_STACKS, COMMITTED_STACKS, WARNING_FREE_STACKS, committed_run, plan_values
from tests.test_sizing import DEFAULT_ENV


def test_committed_stacks_include_dev_and_prod() -> None:
    assert {"dev", "prod"} <= set(COMMITTED_STACKS)


@pytest.mark.parametrize("stack", CHECKED_STACKS)
def test_committed_stack_plans(stack: str) -> None:
    run = committed_run(stack)
    assert run.outputs["quotas"]
    assert set(run.outputs["shares"]) == set(run.outputs["quotas"])


@pytest.mark.parametrize("stack", WARNING_FREE_STACKS)
def test_shipped_and_opted_in_stacks_plan_without_warnings(stack: str) -> None:
    assert committed_run(stack).warnings == []


def test_prod_shape() -> None:
    run = committed_run("prod")
    kinds = Counter(r["type"].rsplit(":", 1)[-1] for r in run.resources if not r["type"].startswith("aiperf-kueue:"))
    assert kinds == {
        "kubernetes": 1,  # the stack's one provider (pulumi:providers:kubernetes), for its cluster
        "Chart": 3,  # Kueue, JobSet, AIPerf operator
        "KueueReadinessGate": 1,
        "Namespace": 6,  # kueue-system, jobset-system, aiperf-system and three benchmark namespaces
        "NamespacePatch": 1,  # ml-team-b exists already
        "DeploymentPatch": 1,  # the operator's AIPERF_K8S_* env
        "ResourceFlavor": 3,
        "Cohort": 1,
        "ClusterQueue": 3,
        "LocalQueue": 5,
        "WorkloadPriorityClass": 2,
        "ClusterRole": 1,  # the benchmark pods' rules, bound in each benchmark namespace
        "RoleBinding": 4,
        "AIPerfJob": 6,  # llama-latency and five sweep points
    }
    assert run.outputs["localQueues"] == {
        "bench-team-a": ["aiperf-queue", "default"],
        "bench-team-b": ["aiperf-queue"],
        "ml-team-b": ["aiperf-queue"],
        "bench-research": ["aiperf-queue"],
    }
    assert run.outputs["kubectl"]["clusterQueues"]["team-a"] == "kubectl describe clusterqueue team-a"
    assert run.outputs["kubectl"]["workloads"] == "kubectl get workloads -A"


MINIMAL = {
    "inventory": {"pools": [{"name": "default", "nodes": 1, "cpu": "4", "memory": "8Gi"}]},
    "queues": {"clusterQueues": [{"name": "team", "share": 100, "namespaces": [{"name": "bench"}]}]},
}


def test_promised_defaults() -> None:
    config, plan = plan_values(MINIMAL)
    assert config.model_dump(by_alias=True, exclude_none=True, mode="json") == {
        "kueue": {
            "version": "0.19.2",
            "apiVersion": "auto",
            "install": True,
            "source": "helm",
            "namespace": "kueue-system",
            "releaseName": "kueue",
            "protect": True,
            "manageJobsWithoutQueueName": False,
            "values": {},
            "readiness": {"attempts": 40, "intervalSeconds": 2.0},
        },
        "inventory": {
            "headroom": "0",
            "pools": [
                {
                    "name": "default",
                    "nodes": 1,
                    "cpu": "4",
                    "memory": "8Gi",
                    "gpus": 0,
                    "gpuResource": "nvidia.com/gpu",
                    "extraResources": {},
                    "nodeLabels": {},
                    "tolerations": [],
                    "nodeTaints": [],
                    "cpuAndMemoryFor": "allQueues",
                }
            ],
        },
        "queues": {
            "cohorts": [],
            "coveredResources": [],
            "clusterQueues": [
                {
                    "name": "team",
                    "share": "100",
                    "namespaces": [
                        {
                            "name": "bench",
                            "create": True,
                            "localQueue": "aiperf-queue",
                            "defaultQueue": False,
                            "defaultQueueAnnotation": True,
                            "labels": {},
                            "retainOnDelete": True,
                        }
                    ],
                }
            ],
        },
        "jobset": {
            "install": True,
            "version": "0.12.0",
            "namespace": "jobset-system",
            "releaseName": "jobset",
            "chart": "oci://registry.k8s.io/jobset/charts/jobset",
            "values": {},
            "protectCrds": True,
        },
        "operator": {
            "install": True,
            "chart": "../aiperf/deploy/helm/aiperf-operator",
            "namespace": "aiperf-system",
            "releaseName": "aiperf-operator",
            "aiperfVersion": "0.13.0",
            "image": {"repository": "nvcr.io/nvidia/aiperf"},
            "defaultQueue": "auto",
            "sizing": {"controller": {}},
            "values": {},
            "protectCrds": True,
        },
        "priorityClasses": [],
        "jobs": [],
        "sweeps": [],
        "warnings": "allow",
    }
    assert (plan.target.version_text, plan.target.api) == ("0.19.2", "v1beta2")
    cq = manifests.cluster_queue(config.queues.cluster_queues[0], plan, None)
    # Never {} (every namespace): only the namespaces this program labels for the queue.
    assert cq["spec"]["namespaceSelector"] == {"matchLabels": {"aiperf-kueue/cluster-queue": "team"}}
    # Every setting that shapes a benchmark's pods is set on the operator: AIPerf 0.13.0's defaults.
    assert operator_objects.sizing_env(config) == DEFAULT_ENV
    assert installs.readiness_gate(config, plan.target) == {
        "namespace": "kueue-system",
        "deployment": "kueue-controller-manager",
        "webhook_service": "kueue-webhook-service",
        "api_version": "v1beta2",
        "kueue_version": "0.19.2",
        "release_digest": "sha256:790533184b7efdc7",
        "attempts": 40,
        "interval_seconds": 2.0,
    }
    # auto: the LocalQueue every benchmark namespace has, so the operator stamps what the annotation names.
    assert submit.default_queue(config) == "aiperf-queue"
    assert operator_objects.operator_env(config.operator, submit.default_queue(config), {}) == [
        {"name": "AIPERF_K8S_JOBSET_KUEUE_DEFAULT_QUEUE_NAME", "value": "aiperf-queue"}
    ]


@pytest.mark.parametrize(
    ("version", "api_version", "expected"),
    [
        ("0.19.2", "auto", ("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta2", "cohortName")),
        ("0.16.0", "auto", ("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta2", "cohortName")),
        ("0.15.3", "auto", ("kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta1", "cohort")),
        ("0.15.3", "v1beta2", ("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta2", "cohortName")),
        ("0.19.2", "v1beta1", ("kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta1", "cohort")),
        ("0.13.0", "auto", ("kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta1", "cohort")),
        ("0.10.1", "auto", ("kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1alpha1", "cohort")),
    ],
)
def test_api_version_follows_the_pinned_kueue(version: str, api_version: str, expected: tuple[str, str, str]) -> None:
    config, plan = plan_values(
        {
            "kueue": {"version": version, "apiVersion": api_version},
            "inventory": {"pools": [{"name": "p", "nodes": 1, "cpu": "4", "memory": "8Gi"}]},
            "queues": {
                "cohort": "all",
                "clusterQueues": [
                    {
                        "name": "team",
                        "share": 100,
                        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"},
                        "namespaces": [{"name": "bench"}],
                    }
                ],
            },
        }
    )
    cq = manifests.cluster_queue(config.queues.cluster_queues[0], plan, "all")
    cohort = manifests.cohort("all", plan, config.queues)
    assert (cq["apiVersion"], cohort["apiVersion"], next(iter(cq["spec"]))) == expected
    legacy = version < "0.15"
    assert cq["spec"]["flavorFungibility"] == (
        {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}
        if legacy
        else {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"}
    )
