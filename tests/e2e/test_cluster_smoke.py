"""The local cluster really is Kubernetes with Kueue and JobSet: it enforces, converts, admits.

Each test names the real component that answers: the API server's CRD CEL rules, Kueue's conversion webhook,
Kueue's admission (a Workload for a plain queued JobSet), kube-controller-manager's namespace controller.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.e2e.cluster import ClusterError, _deadline_loop
from tests.e2e.conftest import BUILD, ClusterHandle, Report

KUEUE = "kueue.x-k8s.io/v1beta2"


def _queue_objects(quota_cpu: str = "4") -> list[dict[str, Any]]:
    return [
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "smoke"}},
        {
            "apiVersion": KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": "smoke"},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "smoke"}},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [
                            {
                                "name": "smoke",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": quota_cpu},
                                    {"name": "memory", "nominalQuota": "8Gi"},
                                ],
                            }
                        ],
                    }
                ],
            },
        },
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "smoke"}},
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": "smoke", "namespace": "smoke"},
            "spec": {"clusterQueue": "smoke"},
        },
    ]


def test_versions_are_the_pinned_ones(e2e_cluster: ClusterHandle, report: Report) -> None:
    version = json.loads(e2e_cluster.kubectl("version", "-o", "json"))
    assert version["serverVersion"]["gitVersion"] == BUILD.KUBERNETES == "v1.36.3"
    assert version["clientVersion"]["gitVersion"] == "v1.36.3"
    report.checks["server version"] = version["serverVersion"]["gitVersion"]


def test_cel_rule_rejects_borrowing_limit_without_cohort(e2e_cluster: ClusterHandle, report: Report) -> None:
    bad = _queue_objects()[1]
    bad["metadata"]["name"] = "no-cohort"
    bad["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = "1"
    with pytest.raises(ClusterError) as refused:
        e2e_cluster.apply([bad])
    assert "borrowingLimit must be nil when cohort is empty" in str(refused.value)
    report.checks["CEL rejection"] = "ClusterQueue with borrowingLimit and no cohort refused by the API server"


def test_kueue_converts_v1beta2_to_v1beta1(e2e_cluster: ClusterHandle) -> None:
    e2e_cluster.apply(_queue_objects())
    old = json.loads(e2e_cluster.kubectl("get", "clusterqueues.v1beta1.kueue.x-k8s.io", "smoke", "-o", "json"))
    assert old["apiVersion"] == "kueue.x-k8s.io/v1beta1"
    assert old["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == "4"


def test_kueue_admits_a_queued_jobset_and_jobset_creates_its_job(e2e_cluster: ClusterHandle, report: Report) -> None:
    e2e_cluster.apply(_queue_objects())
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "smoke", "namespace": "smoke", "labels": {"kueue.x-k8s.io/queue-name": "smoke"}},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "workers",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "parallelism": 2,
                            "completions": 2,
                            "template": {
                                "spec": {
                                    "restartPolicy": "Never",
                                    "containers": [
                                        {
                                            "name": "c",
                                            "image": "registry.invalid/never-pulled:1",
                                            "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                                        }
                                    ],
                                }
                            },
                        }
                    },
                }
            ]
        },
    }
    started = time.monotonic()
    e2e_cluster.apply([jobset])
    created = json.loads(e2e_cluster.kubectl("get", "jobset", "smoke", "-n", "smoke", "-o", "json"))
    workload: dict[str, Any] = {}
    for _ in _deadline_loop("the smoke Workload's admission", 60):
        items = json.loads(e2e_cluster.kubectl("get", "workloads", "-n", "smoke", "-o", "json"))["items"]
        admitted = [w for w in items if (w.get("status") or {}).get("admission")]
        if admitted:
            workload = admitted[0]
            break
    assignment = workload["status"]["admission"]["podSetAssignments"][0]
    assert (assignment["flavors"], assignment["resourceUsage"], assignment["count"]) == (
        {"cpu": "smoke", "memory": "smoke"},
        {"cpu": "1", "memory": "2Gi"},
        2,
    )
    for _ in _deadline_loop("JobSet to create its Job once unsuspended", 60):
        jobs = json.loads(e2e_cluster.kubectl("get", "jobs", "-n", "smoke", "-o", "json"))["items"]
        if jobs:
            break
    assert created["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "smoke"
    report.checks["plain JobSet admitted"] = f"in {time.monotonic() - started:.1f} s, Job created by JobSet"


def test_namespace_deletion_completes(e2e_cluster: ClusterHandle) -> None:
    e2e_cluster.kubectl("create", "namespace", "smoke-delete")
    e2e_cluster.kubectl("delete", "namespace", "smoke-delete", "--wait=true", "--timeout=60s")
    result = e2e_cluster.cluster.kubectl("get", "namespace", "smoke-delete", check=False)
    assert result.returncode == 1 and "NotFound" in result.stderr
