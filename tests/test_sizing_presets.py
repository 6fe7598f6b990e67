"""``operator.sizing.preset`` end to end: the jobs table and the operator's env patch follow the preset.

The AIPerf "Kueue Integration" page's sizing figures are the ``docs`` preset (worker pod 3350m/6Gi).
"""

from __future__ import annotations

from typing import Any

import pytest

from aiperf_kueue.loader import parse_config
from aiperf_kueue.offline.engine import run_program
from aiperf_kueue.offline.report import clean
from aiperf_kueue.stack_plan import plan_stack
from tests.support import by_name, stack_values

NEWEST_CONTROLLER_ENV = {
    "AIPERF_K8S_SYSTEM_CONTROLLER_CPU": "75m",
    "AIPERF_K8S_SYSTEM_CONTROLLER_MEMORY": "192Mi",
    "AIPERF_K8S_DATASET_MANAGER_CPU": "50m",
    "AIPERF_K8S_DATASET_MANAGER_MEMORY": "256Mi",
    "AIPERF_K8S_TIMING_MANAGER_CPU": "50m",
    "AIPERF_K8S_TIMING_MANAGER_MEMORY": "192Mi",
    "AIPERF_K8S_RECORDS_MANAGER_CPU": "75m",
    "AIPERF_K8S_RECORDS_MANAGER_MEMORY": "256Mi",
    "AIPERF_K8S_API_CPU": "75m",
    "AIPERF_K8S_API_MEMORY": "256Mi",
    "AIPERF_K8S_GPU_TELEMETRY_MANAGER_CPU": "25m",
    "AIPERF_K8S_GPU_TELEMETRY_MANAGER_MEMORY": "192Mi",
    "AIPERF_K8S_SERVER_METRICS_MANAGER_CPU": "25m",
    "AIPERF_K8S_SERVER_METRICS_MANAGER_MEMORY": "192Mi",
    "AIPERF_K8S_RESULTS_SIDECAR_CPU": "25m",
    "AIPERF_K8S_RESULTS_SIDECAR_MEMORY": "192Mi",
    "AIPERF_K8S_EVENT_BUS_PROXY_CPU": "50m",
    "AIPERF_K8S_EVENT_BUS_PROXY_MEMORY": "64Mi",
}
COMMON_ENV = {
    "AIPERF_K8S_EVENT_BUS_SIDECAR_ENABLED": "true",
    "AIPERF_K8S_RECORD_PROCESSOR_SCALE_FACTOR": "1",
    "AIPERF_WORKER_DEFAULT_WORKERS_PER_POD": "10",
}


def _prod_with(preset: str) -> dict[str, Any]:
    values, _ = stack_values("prod")
    values["operator"]["sizing"] = {"preset": preset}
    return values


def _requests(preset: str) -> dict[str, dict[str, str]]:
    plan = plan_stack(parse_config(_prod_with(preset), "test.yaml"), "test.yaml")
    return {row["name"]: row["requests"] for row in plan.jobs_table()}


@pytest.mark.parametrize(
    ("preset", "one_pod", "three_pods"),
    [
        # controller 450m/1792Mi + one worker pod 150m/4Gi; c1024 has two worker pods
        ("newest", {"cpu": "600m", "memory": "5888Mi"}, {"cpu": "750m", "memory": "9984Mi"}),
        # controller 450m/1792Mi + one worker pod 3350m/6Gi (the page's figures)
        ("docs", {"cpu": "3800m", "memory": "7936Mi"}, {"cpu": "7150m", "memory": "14080Mi"}),
        # controller 7250m/17.5Gi + one worker pod 4000m/12Gi
        ("legacy-86577339", {"cpu": "11250m", "memory": "30208Mi"}, {"cpu": "15250m", "memory": "42496Mi"}),
    ],
)
def test_prod_jobs_table_follows_the_preset(preset: str, one_pod: dict[str, str], three_pods: dict[str, str]) -> None:
    assert _requests(preset) == {
        "llama-latency": one_pod,
        "llama-sweep-c1": one_pod,
        "llama-sweep-c8": one_pod,
        "llama-sweep-c32": one_pod,
        "llama-sweep-c128": one_pod,
        "llama-sweep-c1024": three_pods,
    }


def test_docs_preset_llama_latency_row() -> None:
    plan = plan_stack(parse_config(_prod_with("docs"), "test.yaml"), "test.yaml")
    assert plan.jobs_table()[0] == {
        "name": "llama-latency",
        "namespace": "bench-team-a",
        "queue": "aiperf-queue",
        "clusterQueue": "team-a",
        "priorityClass": "benchmark-high",
        "pods": 2,
        "workers": 1,
        "requests": {"cpu": "3800m", "memory": "7936Mi"},
        "flavor": ["cpu"],
        "fits": True,
        "borrowing": False,
        "fitOnNominal": 31,  # 82 with newest: the same quota holds fewer jobs
    }


def _operator_env(preset: str) -> dict[str, str]:
    values, secrets = stack_values("prod")
    values["operator"]["sizing"] = {"preset": preset}
    patch = by_name(run_program("prod", values, secrets))["operator-env"]
    (container,) = clean(patch["inputs"])["spec"]["template"]["spec"]["containers"]
    assert container["name"] == "operator"
    return {e["name"]: e["value"] for e in container["env"]}


def test_docs_preset_env_patch() -> None:
    assert _operator_env("docs") == {
        "AIPERF_K8S_JOBSET_KUEUE_DEFAULT_PRIORITY_CLASS": "benchmark-low",
        "AIPERF_K8S_JOBSET_KUEUE_DEFAULT_QUEUE_NAME": "aiperf-queue",
        "AIPERF_K8S_WORKER_POD_CPU": "3350m",
        "AIPERF_K8S_WORKER_POD_MEMORY": "6Gi",
        **NEWEST_CONTROLLER_ENV,
        **COMMON_ENV,
    }


def test_legacy_preset_env_patch() -> None:
    assert _operator_env("legacy-86577339") == {
        "AIPERF_K8S_JOBSET_KUEUE_DEFAULT_PRIORITY_CLASS": "benchmark-low",
        "AIPERF_K8S_JOBSET_KUEUE_DEFAULT_QUEUE_NAME": "aiperf-queue",
        "AIPERF_K8S_WORKER_POD_CPU": "4",
        "AIPERF_K8S_WORKER_POD_MEMORY": "12Gi",
        "AIPERF_K8S_SYSTEM_CONTROLLER_CPU": "500m",
        "AIPERF_K8S_SYSTEM_CONTROLLER_MEMORY": "1Gi",
        "AIPERF_K8S_DATASET_MANAGER_CPU": "1",
        "AIPERF_K8S_DATASET_MANAGER_MEMORY": "2Gi",
        "AIPERF_K8S_TIMING_MANAGER_CPU": "1",
        "AIPERF_K8S_TIMING_MANAGER_MEMORY": "2Gi",
        "AIPERF_K8S_RECORDS_MANAGER_CPU": "1",
        "AIPERF_K8S_RECORDS_MANAGER_MEMORY": "2Gi",
        "AIPERF_K8S_API_CPU": "1",
        "AIPERF_K8S_API_MEMORY": "8Gi",
        "AIPERF_K8S_GPU_TELEMETRY_MANAGER_CPU": "250m",
        "AIPERF_K8S_GPU_TELEMETRY_MANAGER_MEMORY": "512Mi",
        "AIPERF_K8S_SERVER_METRICS_MANAGER_CPU": "250m",
        "AIPERF_K8S_SERVER_METRICS_MANAGER_MEMORY": "512Mi",
        "AIPERF_K8S_RESULTS_SIDECAR_CPU": "250m",
        "AIPERF_K8S_RESULTS_SIDECAR_MEMORY": "512Mi",
        "AIPERF_K8S_EVENT_BUS_PROXY_CPU": "2",
        "AIPERF_K8S_EVENT_BUS_PROXY_MEMORY": "1Gi",
        **COMMON_ENV,
    }


def test_newest_preset_env_patch() -> None:
    assert _operator_env("newest") == {
        "AIPERF_K8S_JOBSET_KUEUE_DEFAULT_PRIORITY_CLASS": "benchmark-low",
        "AIPERF_K8S_JOBSET_KUEUE_DEFAULT_QUEUE_NAME": "aiperf-queue",
        "AIPERF_K8S_WORKER_POD_CPU": "150m",
        "AIPERF_K8S_WORKER_POD_MEMORY": "4Gi",
        **NEWEST_CONTROLLER_ENV,
        **COMMON_ENV,
    }
