"""The CrossGuard policies, called as plain functions on resources the program records (NOTES §13).

Never constructs the ``PolicyPack``: that serves the analyzer and blocks forever.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    StackValidationArgs,
)
from pulumi_policy.deserialize import deserialize_properties

from aiperf_kueue import policies
from tests.support import ROOT, committed_run

CQ_TEAM_A = "queues-cq-team-a"
JOB = "jobs-bench-team-a-llama-latency"
SWEEP_JOB = "jobs-bench-research-llama-sweep-c1"  # no secret inputs: its spec is plain data


def records(stack: str = "prod") -> list[dict[str, Any]]:
    """The stack's recorded resources, inputs as the analyzer hands them to policies: secrets
    unwrapped to their values, numbers as sent (a fresh copy each call)."""
    return [
        {
            **copy.deepcopy(r),
            "inputs": deserialize_properties(copy.deepcopy(r["inputs"])),
            "parent": r["parent"] or None,
        }
        for r in committed_run(stack).resources
    ]


def _opts(record: dict[str, Any]) -> PolicyResourceOptions:
    return PolicyResourceOptions(
        protect=record["protect"],
        ignore_changes=[],
        delete_before_replace=record["deleteBeforeReplace"],
        aliases=[],
        custom_timeouts=PolicyCustomTimeouts(0, 0, 0),
        additional_secret_outputs=[],
        parent=record["parent"],
    )


def resource_violations(policy: Any, recs: list[dict[str, Any]], config: dict[str, Any] | None = None) -> list[str]:
    """Run a resource policy over every record: ``name: message`` per violation."""
    found: list[str] = []
    for rec in recs:
        args = ResourceValidationArgs(
            rec["type"], rec["inputs"], rec["urn"], rec["name"], _opts(rec), None, config=config or {}
        )
        report_violation: Callable[..., None] = lambda msg, urn=None, name=rec["name"]: found.append(f"{name}: {msg}")  # noqa: E731
        policy.validate(args, report_violation)
    return found


def stack_violations(
    policy: Any, recs: list[dict[str, Any]], config: dict[str, Any] | None = None
) -> list[tuple[str, str | None]]:
    """Run a stack policy over all records: ``(message, urn)`` per violation."""
    resources = [
        PolicyResource(r["type"], r["inputs"], r["urn"], r["name"], _opts(r), None, None, [], {}) for r in recs
    ]
    found: list[tuple[str, str | None]] = []
    policy.validate(StackValidationArgs(resources, config or {}), lambda msg, urn=None: found.append((msg, urn)))
    return found


def by_name(recs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(r for r in recs if r["name"] == name)


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_committed_stacks_pass_every_policy(stack: str) -> None:
    recs = records(stack)
    assert resource_violations(policies.NAMESPACE_SELECTOR, recs) == []
    assert resource_violations(policies.EXPLICIT_NAME, recs) == []
    assert stack_violations(policies.JOB_QUEUES, recs) == []
    assert stack_violations(policies.QUOTA_WITHIN_INVENTORY, recs) == []


def test_policy_list_is_the_four_named_policies() -> None:
    assert [p.name for p in policies.POLICIES] == [
        "cluster-queue-namespace-selector",
        "kubernetes-explicit-name",
        "aiperf-job-queue-resolves",
        "quota-within-inventory",
    ]


# --- cluster-queue-namespace-selector ---


def test_cluster_queue_without_or_with_empty_selector_violates() -> None:
    recs = records()
    del by_name(recs, CQ_TEAM_A)["inputs"]["spec"]["namespaceSelector"]
    by_name(recs, "queues-cq-team-b")["inputs"]["spec"]["namespaceSelector"] = {}
    by_name(recs, "queues-cq-research")["inputs"]["spec"]["namespaceSelector"] = {"matchLabels": {}}
    empty = (
        ": has an empty spec.namespaceSelector: it would admit workloads from every namespace; "
        "select the benchmark namespaces (matchLabels or matchExpressions)"
    )
    assert resource_violations(policies.NAMESPACE_SELECTOR, recs) == [
        "queues-cq-research: ClusterQueue research" + empty.replace(": has", " has", 1),
        "queues-cq-team-a: ClusterQueue team-a has no spec.namespaceSelector: Kueue admits workloads from no namespace",
        "queues-cq-team-b: ClusterQueue team-b" + empty.replace(": has", " has", 1),
    ]


def test_selector_with_match_expressions_passes() -> None:
    recs = records()
    by_name(recs, CQ_TEAM_A)["inputs"]["spec"]["namespaceSelector"] = {
        "matchExpressions": [{"key": "team", "operator": "In", "values": ["a"]}]
    }
    assert resource_violations(policies.NAMESPACE_SELECTOR, recs) == []


# --- kubernetes-explicit-name ---


def test_kubernetes_object_without_a_name_violates() -> None:
    recs = records()
    del by_name(recs, JOB)["inputs"]["metadata"]["name"]
    by_name(recs, "queues-flavor-cpu")["inputs"]["metadata"]["name"] = ""
    suffix = " has no explicit metadata.name: Pulumi would auto-name it with a random suffix; set the name"
    assert resource_violations(policies.EXPLICIT_NAME, recs) == [
        f"{JOB}: AIPerfJob{suffix}",
        f"queues-flavor-cpu: ResourceFlavor{suffix}",
    ]


def test_charts_components_and_dynamic_resources_need_no_metadata_name() -> None:
    assert policies.check_explicit_name("kubernetes:helm.sh/v4:Chart", {"chart": "x"}) == []
    assert policies.check_explicit_name("aiperf-kueue:index:KueueQueues", {}) == []
    assert policies.check_explicit_name("pulumi-python:dynamic/aiperf-kueue:KueueReadinessGate", {}) == []


# --- aiperf-job-queue-resolves ---


def test_job_naming_a_missing_local_queue_violates() -> None:
    recs = records()
    job = by_name(recs, SWEEP_JOB)
    job["inputs"]["spec"]["scheduling"]["queueName"] = "nope"
    assert stack_violations(policies.JOB_QUEUES, recs) == [
        (
            "AIPerfJob bench-research/llama-sweep-c1-1f564c: queue 'nope' is not a LocalQueue in bench-research",
            job["urn"],
        )
    ]


def test_job_queue_must_be_in_the_jobs_own_namespace() -> None:
    recs = records()
    sweep = by_name(recs, SWEEP_JOB)
    sweep["inputs"]["metadata"]["namespace"] = "ml-team-b"
    assert stack_violations(policies.JOB_QUEUES, recs) == []  # ml-team-b has an aiperf-queue LocalQueue too
    sweep["inputs"]["metadata"]["namespace"] = "elsewhere"
    assert stack_violations(policies.JOB_QUEUES, recs) == [
        (
            "AIPerfJob elsewhere/llama-sweep-c1-1f564c: queue 'aiperf-queue' is not a LocalQueue in elsewhere",
            sweep["urn"],
        )
    ]


def test_queue_label_and_kueues_default_queue_resolve_too() -> None:
    recs = records()
    job = by_name(recs, SWEEP_JOB)
    job["inputs"]["metadata"]["namespace"] = "bench-team-a"
    del job["inputs"]["spec"]["scheduling"]["queueName"]
    job["inputs"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "aiperf-queue"
    assert stack_violations(policies.JOB_QUEUES, recs) == []
    del job["inputs"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    assert stack_violations(policies.JOB_QUEUES, recs) == []  # bench-team-a has the 'default' LocalQueue
    recs = [r for r in recs if r["name"] != "ns-bench-team-a-lq-default"]
    assert stack_violations(policies.JOB_QUEUES, recs) == [
        (
            "AIPerfJob bench-team-a/llama-sweep-c1-1f564c names no queue (spec.scheduling.queueName or label "
            "kueue.x-k8s.io/queue-name) and bench-team-a has no 'default' LocalQueue",
            job["urn"],
        )
    ]


# --- quota-within-inventory ---


def test_quota_over_the_stacks_inventory_violates() -> None:
    recs = records()
    gpu_a100 = by_name(recs, CQ_TEAM_A)["inputs"]["spec"]["resourceGroups"][0]["flavors"][2]
    assert gpu_a100["name"] == "gpu-a100"
    gpu_a100["resources"][2]["nominalQuota"] = 9  # 9 + 8 + 0 > 2 nodes × 8
    gpu_a100["resources"][0]["nominalQuota"] = "98"  # 98 + 89.3 + 0 cores <= 2 nodes × 94: still fine
    assert stack_violations(policies.QUOTA_WITHIN_INVENTORY, recs) == [
        (
            "ClusterQueues hand out 17 nvidia.com/gpu of flavor gpu-a100, but the inventory has 16 "
            "(aiperf-kueue:inventory in Pulumi.prod.yaml)",
            None,
        )
    ]


def test_quota_over_the_policy_config_inventory_violates() -> None:
    inventory = {
        "pools": [
            {"name": "cpu", "nodes": 4, "cpu": "63", "memory": "250Gi"},
            {"name": "gpu-h100", "nodes": 3, "cpu": "190", "memory": "1900Gi", "gpus": 8},
        ]
    }
    assert stack_violations(policies.QUOTA_WITHIN_INVENTORY, records(), {"inventory": inventory}) == [
        (
            "ClusterQueues hand out 722 cpu of flavor gpu-h100, but the inventory has 570 (policy config 'inventory')",
            None,
        ),
        (
            "ClusterQueues hand out 7220Gi memory of flavor gpu-h100, but the inventory has 5700Gi "
            "(policy config 'inventory')",
            None,
        ),
        (
            "ClusterQueues hand out 32 nvidia.com/gpu of flavor gpu-h100, but the inventory has 24 "
            "(policy config 'inventory')",
            None,
        ),
        (
            "ClusterQueues give quota on flavor 'gpu-a100', which is no pool of the inventory "
            "(policy config 'inventory')",
            None,
        ),
    ]


def test_no_inventory_is_a_violation(tmp_path: Path) -> None:
    assert stack_violations(policies.QUOTA_WITHIN_INVENTORY, records(), {"stacksDir": str(tmp_path)}) == [
        (
            f"no inventory: cannot read {tmp_path / 'Pulumi.prod.yaml'}: "
            f"[Errno 2] No such file or directory: '{tmp_path / 'Pulumi.prod.yaml'}'",
            None,
        )
    ]
    bad = {"pools": [{"name": "cpu", "nodes": 0, "cpu": "1", "memory": "1Gi"}]}
    assert stack_violations(policies.QUOTA_WITHIN_INVENTORY, records(), {"inventory": bad}) == [
        (
            "invalid inventory in policy config 'inventory': pools.0.nodes: Input should be greater than or equal to 1",
            None,
        )
    ]


def test_capacity_is_nodes_times_allocatable_without_headroom() -> None:
    inventory, source = policies.find_inventory({}, ["urn:pulumi:prod::aiperf-kueue::x::y"])
    assert source == "aiperf-kueue:inventory in Pulumi.prod.yaml"
    assert {pool: {r: str(v) for r, v in totals.items()} for pool, totals in policies.capacity(inventory).items()} == {
        "cpu": {"cpu": "252", "memory": "1073741824000"},
        "gpu-h100": {"cpu": "760", "memory": "8160437862400", "nvidia.com/gpu": "32"},
        "gpu-a100": {"cpu": "188", "memory": "1932735283200", "nvidia.com/gpu": "16"},
    }
    assert policies.DEFAULT_STACKS_DIR == ROOT / "stacks"


def test_only_the_pack_entry_point_builds_the_policy_pack() -> None:
    sources = {p.name: p.read_text() for p in (ROOT / "policy").glob("*.py")}
    assert [name for name, text in sources.items() if "PolicyPack(" in text] == ["__main__.py"]
    assert "runtime:\n  name: python\n" in (ROOT / "policy" / "PulumiPolicy.yaml").read_text()
