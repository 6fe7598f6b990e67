"""Warnings that come with a fix, each in its case and not otherwise; the only ClusterQueue's
default; ``pools[].cpuAndMemoryFor``; the JobSet pin the conformance tests use."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.config.installs import JobSetConfig
from aiperf_kueue.plan import manifests
from aiperf_kueue.plan.stack_plan import StackPlan, plan_stack
from aiperf_kueue.plan.stack_warnings import stack_warnings, unpinned
from aiperf_kueue.stackfile.loader import parse_config
from tests import crd_validation as cv
from tests import upstream
from tests.support import require_upstream

JOB_SPEC: dict[str, Any] = {
    "benchmark": {
        "models": ["m"],
        "endpoint": {"urls": ["http://m:8000"]},
        "datasets": [{"name": "main", "type": "synthetic"}],
        "phases": [{"name": "profiling", "type": "concurrency", "concurrency": 4, "requests": 10}],
    }
}
CPU = {"name": "cpu", "nodes": 2, "cpu": "16", "memory": "64Gi"}
GPU = {"name": "gpu", "nodes": 2, "cpu": "64", "memory": "256Gi", "gpus": 8}


def stack(pools: list[dict[str, Any]], queues: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "inventory": {"pools": copy.deepcopy(pools)},
        "queues": {"clusterQueues": copy.deepcopy(queues)},
        "jobs": [{"name": "run", "namespace": "bench-a", "spec": copy.deepcopy(JOB_SPEC)}],
    }
    values.update(copy.deepcopy(extra))
    return values


def planned(values: dict[str, Any]) -> StackPlan:
    return plan_stack(parse_config(values, "test.yaml"), "test.yaml")


def new_warnings(values: dict[str, Any]) -> list[str]:
    plan = planned(values)
    return stack_warnings(plan.config, plan.queues, plan.jobs)


def team(name: str, share: Any, namespace: str | None = None, **more: Any) -> dict[str, Any]:
    return {"name": name, "share": share, "namespaces": [{"name": namespace}] if namespace else [], **more}


# --------------------------------------------------------------------------- the only ClusterQueue


def test_the_only_cluster_queue_without_share_or_nominal_quota_takes_everything() -> None:
    plan = planned(stack([CPU, GPU], [{"name": "lab", "namespaces": [{"name": "bench-a"}]}]))
    assert plan.config.queues.cluster_queues[0].share == 100
    assert plan.queues.quota_table() == {
        "lab": {
            "cpu": {"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": 0},
            "gpu": {"cpu": "128", "memory": "512Gi", "nvidia.com/gpu": 16},
        }
    }
    assert plan.queues.share_table() == {
        "lab": {"cpu": {"cpu": 100, "memory": 100}, "gpu": {"cpu": 100, "memory": 100, "nvidia.com/gpu": 100}}
    }


def test_two_cluster_queues_still_need_share_or_nominal_quota() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(stack([CPU], [team("a", 50, "bench-a"), {"name": "b"}]), "test.yaml")
    assert raised.value.lines() == [
        "test.yaml: aiperf-kueue:queues.clusterQueues[1]: set exactly one of share and nominalQuota; neither is set"
    ]


# --------------------------------------------------------------------------- (a) CPU-only pods on GPU nodes


def test_a_queue_whose_cpu_is_only_on_gpu_nodes_warns_with_the_fix() -> None:
    values = stack([CPU, GPU], [team("a", {"gpu": 50}, "bench-a"), team("b", {"cpu": 100, "gpu": 50}, "bench-b")])
    assert new_warnings(values) == [
        "queues.clusterQueues[0]: ClusterQueue 'a' can place CPU-only pods (every AIPerf controller and worker) "
        "only on GPU flavor gpu, next to the models under test; fix: give ClusterQueue 'a' a share (or "
        "nominalQuota) of CPU-only pool 'cpu', and keep GPU pools' CPU and memory for the queues that run GPU work "
        "there with the pool's cpuAndMemoryFor: gpuQueues"
    ]


def test_a_job_that_lands_on_a_gpu_flavor_warns_when_its_queue_has_cpu_nodes_too() -> None:
    # Team a has a sliver of the CPU pool: the job does not fit there, so Kueue moves on to the GPU flavor.
    values = stack([CPU, GPU], [team("a", {"cpu": 1, "gpu": 50}, "bench-a"), team("b", {"cpu": 99, "gpu": 50})])
    plan = planned(values)
    assert plan.jobs_table()[0]["flavor"] == ["gpu"]
    assert new_warnings(values) == [
        "jobs[0]: run: requests no GPU but lands on GPU flavor gpu (ClusterQueue 'a' has no room for it on any "
        "CPU-only flavor), next to the models under test; fix: give ClusterQueue 'a' a share (or nominalQuota) of "
        "CPU-only pool 'cpu' large enough for the job"
    ]


def test_a_job_on_a_gpu_flavor_listed_first_is_told_to_reorder_the_pools() -> None:
    # Team a has room on the CPU pool, but the GPU pool comes first and Kueue takes the first flavor that fits.
    values = stack([GPU, CPU], [team("a", {"cpu": 50, "gpu": 50}, "bench-a"), team("b", {"cpu": 50, "gpu": 50})])
    assert planned(values).jobs_table()[0]["flavor"] == ["gpu"]
    assert [w for w in new_warnings(values) if w.startswith("jobs[0]")] == [
        "jobs[0]: run: requests no GPU but lands on GPU flavor gpu (ClusterQueue 'a' has room for it on CPU-only "
        "flavor cpu, but Kueue tries flavors in pool order and takes the first that fits), next to the models under "
        "test; fix: list CPU-only pools first in inventory.pools"
    ]


@pytest.mark.parametrize(
    "queues",
    [
        [team("a", 50, "bench-a"), team("b", 50, "bench-b")],  # CPU pool first: pods land there
        [team("a", {"cpu": 100}, "bench-a"), team("b", {"gpu": 100})],  # b serves no namespace
    ],
)
def test_no_gpu_warning_when_cpu_only_pods_have_a_cpu_flavor(queues: list[dict[str, Any]]) -> None:
    assert new_warnings(stack([CPU, GPU], queues)) == []


def test_a_gpu_pool_whose_taint_the_pods_do_not_tolerate_is_not_a_place_for_them() -> None:
    tainted = {**GPU, "nodeTaints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}
    # Team a's CPU and memory exist only on tainted GPU nodes the pods cannot go to: not "only on GPU
    # flavors" (the admission check already rejects the job, so no job here).
    values = stack([CPU, tainted], [team("a", {"gpu": 50}, "bench-a"), team("b", {"cpu": 100, "gpu": 50})])
    values["jobs"] = []
    assert new_warnings(values) == []


# --------------------------------------------------------------------------- cpuAndMemoryFor: gpuQueues


def test_gpu_queues_only_keeps_the_gpu_pools_cpu_from_queues_without_gpus() -> None:
    # 3% of the 16 GPUs rounds to none: without the option, bench would still get 3% of the GPU nodes' CPU.
    values = stack(
        [CPU, {**GPU, "cpuAndMemoryFor": "gpuQueues"}],
        [
            team("bench", {"cpu": 50, "gpu": 3}, "bench-a", preemption={"reclaimWithinCohort": "Any"}),
            team("models", {"cpu": 50, "gpu": 97}, "bench-b"),
        ],
    )
    values["queues"]["cohort"] = "all"
    plan = planned(values)
    assert plan.queues.quota_table()["bench"]["gpu"] == {"cpu": "0", "memory": "0", "nvidia.com/gpu": 0}
    assert plan.queues.quota_table()["models"]["gpu"] == {"cpu": "124160m", "memory": "508559Mi", "nvidia.com/gpu": 16}
    bench = manifests.cluster_queue(plan.config.queues.cluster_queues[0], plan.queues, "all")
    gpu_flavor = bench["spec"]["resourceGroups"][0]["flavors"][1]
    assert gpu_flavor == {
        "name": "gpu",
        "resources": [
            {"name": "cpu", "nominalQuota": "0", "borrowingLimit": "0"},
            {"name": "memory", "nominalQuota": "0", "borrowingLimit": "0"},
            {"name": "nvidia.com/gpu", "nominalQuota": "0"},
        ],
    }
    assert new_warnings(values) == []
    # The API server takes it (the upstream CRD's schema and CEL rules).
    catalog = cv.Catalog.load(require_upstream(upstream.kueue_crd_dirs))
    crd = catalog.get("0.19.2", bench["apiVersion"], "ClusterQueue")
    assert crd is not None
    assert cv.validate(bench, crd).findings == []


def test_gpu_queues_only_is_an_error_for_a_cpu_pool_or_an_explicit_quota_against_it() -> None:
    values = stack(
        [{**CPU, "cpuAndMemoryFor": "gpuQueues"}, {**GPU, "cpuAndMemoryFor": "gpuQueues"}],
        [
            {
                "name": "a",
                "nominalQuota": {"cpu": {"cpu": "8"}, "gpu": {"cpu": "4"}},
                "namespaces": [{"name": "bench-a"}],
            },
            team("b", {"cpu": 50, "gpu": 90}),
        ],
    )
    with pytest.raises(ConfigError) as raised:
        planned(values)
    assert raised.value.lines() == [
        "test.yaml: aiperf-kueue:inventory.pools[0].cpuAndMemoryFor: pool 'cpu' has no GPUs: gpuQueues keeps a GPU "
        "pool's CPU and memory for the ClusterQueues with GPUs there; remove it (or set gpus)",
        "test.yaml: aiperf-kueue:queues.clusterQueues[0].nominalQuota.gpu.cpu: pool 'gpu' has cpuAndMemoryFor: "
        "gpuQueues and ClusterQueue 'a' has no nvidia.com/gpu there, so it gets no cpu there; remove this quota or "
        "give it GPUs",
    ]


# --------------------------------------------------------------------------- (b) borrowing without reclaim

NO_RECLAIM = (
    "cohort 'all', but no member of the cohort can reclaim (preemption.reclaimWithinCohort is Never or unset "
    "everywhere): lent quota stays with the borrower's jobs until they finish, so nominal quota is not "
    "guaranteed; fix: set preemption.reclaimWithinCohort: Any (or LowerPriority) on each member that lends, so it "
    "can take its quota back, or stop the sharing with lendingLimit / borrowingLimit 0"
)


def cohort_stack(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    values = stack([CPU], [a, b])
    values["queues"]["cohort"] = "all"
    return values


def test_a_cohort_without_reclaim_warns_for_each_member_that_lends_or_borrows() -> None:
    values = cohort_stack(team("a", 50, "bench-a"), team("b", 50, "bench-b"))
    assert new_warnings(values) == [
        f"queues.clusterQueues[0]: ClusterQueue 'a' lends to and borrows from {NO_RECLAIM}",
        f"queues.clusterQueues[1]: ClusterQueue 'b' lends to and borrows from {NO_RECLAIM}",
    ]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # One member can reclaim.
        (team("a", 50, "bench-a", preemption={"reclaimWithinCohort": "LowerPriority"}), team("b", 50, "bench-b")),
        # Nobody lends: lendingLimit 0 everywhere.
        (
            team("a", 50, "bench-a", lendingLimit={"cpu": {"cpu": "0", "memory": "0"}}),
            team("b", 50, "bench-b", lendingLimit={"cpu": {"cpu": "0", "memory": "0"}}),
        ),
    ],
)
def test_no_reclaim_warning_when_quota_can_be_taken_back_or_is_never_lent(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert new_warnings(cohort_stack(a, b)) == []


def test_no_reclaim_warning_without_a_cohort() -> None:
    assert new_warnings(stack([CPU], [team("a", 50, "bench-a"), team("b", 50, "bench-b")])) == []


# --------------------------------------------------------------------------- (c) unpinned images


@pytest.mark.parametrize(
    ("image", "pinned"),
    [
        ("nvcr.io/nvidia/aiperf:0.13.0", True),
        ("nvcr.io/nvidia/aiperf@sha256:" + "0" * 64, True),
        ("registry.local:5000/aiperf:0.13.0", True),
        ("nvcr.io/nvidia/aiperf:latest", False),
        ("nvcr.io/nvidia/aiperf", False),
        ("registry.local:5000/aiperf", False),
    ],
)
def test_unpinned(image: str, pinned: bool) -> None:
    assert unpinned(image) is not pinned


def test_latest_or_untagged_images_warn_once_each() -> None:
    values = stack([CPU], [team("a", 100, "bench-a")])
    # An external operator of unknown release: with a known aiperfVersion, any other tag (latest
    # included) is stack_plan's "is not AIPerf <version>" warning instead (test_latest_operator_tag_warns_once).
    values["operator"] = {"install": False, "aiperfVersion": "unknown", "image": {"tag": "latest"}}
    values["jobs"][0]["spec"]["image"] = "nvcr.io/nvidia/aiperf"
    values["sweeps"] = [
        {"name": "sw", "namespace": "bench-a", "concurrency": [1, 2], "spec": {**JOB_SPEC, "image": "x/aiperf:latest"}}
    ]
    why = (
        "pod sizing is baked into the AIPerf image and differs between releases, so the admission proof and the "
        "operator's AIPERF_K8S_* sizing assume a release this tag does not pin"
    )
    assert new_warnings(values) == [
        f"operator.image.tag: latest does not pin an AIPerf release: {why}; fix: set the tag of the release the "
        "operator runs (such as 0.13.0) and declare it in operator.aiperfVersion",
        f"jobs[0].spec.image: run: 'nvcr.io/nvidia/aiperf' does not pin an AIPerf release: {why}; fix: name a "
        "release tag (or leave spec.image out to use operator.image)",
        f"sweeps[0].spec.image: sw: 'x/aiperf:latest' does not pin an AIPerf release: {why}; fix: name a release "
        "tag (or leave spec.image out to use operator.image)",
    ]


def test_pinned_images_do_not_warn() -> None:
    values = stack([CPU], [team("a", 100, "bench-a")])
    values["jobs"][0]["spec"]["image"] = "nvcr.io/nvidia/aiperf:0.13.0"
    assert new_warnings(values) == []


def test_latest_operator_tag_warns_once() -> None:
    values = stack([CPU], [team("a", 100, "bench-a")])
    values["operator"] = {"image": {"tag": "latest"}}
    assert new_warnings(values) == []
    assert [w for w in planned(values).warnings if w.startswith("operator.image.tag")] == [
        "operator.image.tag: 'latest' is not AIPerf 0.13.0 (operator.aiperfVersion), whose defaults and rules the "
        "plan sizes and checks every job by; set aiperfVersion to the image's release, or drop image.tag to run the "
        "release's own image"
    ]


# --------------------------------------------------------------------------- pins


def test_the_jobset_pin_is_the_release_the_default_kueue_builds_against() -> None:
    assert require_upstream(upstream.jobset_version) == JobSetConfig().version == "0.12.0"
