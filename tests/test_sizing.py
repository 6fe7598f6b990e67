"""Operator pod sizing and the requests Kueue sees per AIPerfJob, with hand-computed numbers.

Newest defaults (aiperf NOTES §2b): controller containers 75m/192Mi, 50m/256Mi, 50m/192Mi,
75m/256Mi, 75m/256Mi, 25m/192Mi, 25m/192Mi, 25m/192Mi, 50m/64Mi = 450m / 1792Mi with all on;
worker pod 150m / 4Gi (4096Mi).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiperf_kueue.config.jobs import SIZING_PRESETS, AIPerfJobSpec, OperatorSizing
from aiperf_kueue.sizing import (
    PRESETS,
    ContainerSize,
    PodSet,
    SizingError,
    canonical,
    format_requests,
    job_shape,
    operator_env,
    preset,
    sizing_from_config,
)

MI = 2**20


def spec(concurrency: int | None = 50, *, runtime: dict[str, Any] | None = None, **fields: Any) -> AIPerfJobSpec:
    """A minimal spec with one profiling phase at ``concurrency`` (no concurrency key when None)."""
    phase: dict[str, Any] = {"name": "profiling", "type": "concurrency", "requests": 1000}
    if concurrency is not None:
        phase["concurrency"] = concurrency
    benchmark: dict[str, Any] = {"endpoint": {"urls": ["http://llm:8000"]}, "phases": [phase]}
    if runtime is not None:
        benchmark["runtime"] = runtime
    benchmark.update(fields.pop("benchmark", {}))
    return AIPerfJobSpec.model_validate({"benchmark": benchmark, **fields})


def test_presets_match_config_literal() -> None:
    assert tuple(PRESETS) == SIZING_PRESETS


@pytest.mark.parametrize(
    ("name", "controller", "worker"),
    [
        ("newest", {"cpu": "450m", "memory": "1792Mi"}, {"cpu": "150m", "memory": "4Gi"}),
        ("docs", {"cpu": "450m", "memory": "1792Mi"}, {"cpu": "3350m", "memory": "6Gi"}),
        # 500m + 3 × 1000m + 1000m + 3 × 250m + 2000m = 7250m; 1 + 3 × 2 + 8 + 3 × 0.5 + 1 = 17.5Gi.
        ("legacy-86577339", {"cpu": "7250m", "memory": "17920Mi"}, {"cpu": "4", "memory": "12Gi"}),
    ],
)
def test_preset_pod_sizes(name: str, controller: dict[str, str], worker: dict[str, str]) -> None:
    sizing = preset(name)
    assert canonical(sizing.controller_pod()) == controller
    assert canonical(sizing.worker_pod.requests()) == worker


def test_concurrency_50_newest() -> None:
    # ceil(50 / 100) = 1 worker → 1 pod; 450m + 150m = 600m, 1792Mi + 4096Mi = 5888Mi.
    shape = job_shape(spec(50), preset())
    assert shape.table() == {
        "workers": 1,
        "workersPerPod": 1,
        "pods": 1,
        "recordProcessorsPerPod": 1,
        "controller": {"cpu": "450m", "memory": "1792Mi"},
        "workerPod": {"cpu": "150m", "memory": "4Gi"},
        "total": {"cpu": "600m", "memory": "5888Mi"},
    }
    assert shape.pod_sets == (
        PodSet("controller", 1, {"cpu": Fraction(450, 1000), "memory": Fraction(1792 * MI)}),
        PodSet("workers", 1, {"cpu": Fraction(150, 1000), "memory": Fraction(4096 * MI)}),
    )
    assert shape.controller_containers == (
        "SYSTEM_CONTROLLER",
        "DATASET_MANAGER",
        "TIMING_MANAGER",
        "RECORDS_MANAGER",
        "API",
        "GPU_TELEMETRY_MANAGER",
        "SERVER_METRICS_MANAGER",
        "RESULTS_SIDECAR",
        "EVENT_BUS_PROXY",
    )
    assert shape.warnings == ()


def test_concurrency_1500_newest() -> None:
    # ceil(1500 / 100) = 15 → rounded up to 20 (multiple of 10) → 2 pods × (10 workers + 10 RPs);
    # 450m + 2 × 150m = 750m, 1792Mi + 2 × 4096Mi = 9984Mi.
    assert job_shape(spec(1500), preset()).table() == {
        "workers": 20,
        "workersPerPod": 10,
        "pods": 2,
        "recordProcessorsPerPod": 10,
        "controller": {"cpu": "450m", "memory": "1792Mi"},
        "workerPod": {"cpu": "150m", "memory": "4Gi"},
        "total": {"cpu": "750m", "memory": "9984Mi"},
    }


@pytest.mark.parametrize(
    ("concurrency", "workers", "pods"),
    [
        (None, 1, 1),  # no concurrency: counts as 1
        (1, 1, 1),
        (100, 1, 1),
        (101, 2, 1),
        (1000, 10, 1),  # exactly one pod
        (1001, 20, 2),  # 11 → 20
        (2000, 20, 2),
        (2001, 30, 3),  # 21 → 30
    ],
)
def test_derived_worker_counts(concurrency: int | None, workers: int, pods: int) -> None:
    shape = job_shape(spec(concurrency), preset())
    assert (shape.total_workers, shape.num_pods) == (workers, pods)


def test_largest_phase_concurrency_counts() -> None:
    phases = [
        {"name": "warmup", "type": "concurrency", "concurrency": 2500, "requests": 10},
        {"name": "profiling", "type": "concurrency", "concurrency": 50, "requests": 10},
    ]
    shape = job_shape(spec(benchmark={"phases": phases}), preset())
    assert (shape.max_concurrency, shape.total_workers, shape.num_pods) == (2500, 30, 3)


def test_connections_per_worker() -> None:
    # ceil(1500 / 500) = 3 workers, one pod.
    shape = job_shape(spec(1500, connectionsPerWorker=500), preset())
    assert (shape.total_workers, shape.workers_per_pod, shape.num_pods) == (3, 3, 1)
    assert canonical(shape.totals) == {"cpu": "600m", "memory": "5888Mi"}


def test_explicit_workers_used_as_given() -> None:
    # 30 workers, 10 per pod → 3 pods: 450m + 3 × 150m = 900m, 1792Mi + 3 × 4096Mi = 14080Mi.
    shape = job_shape(spec(50, runtime={"workers": 30}), preset())
    assert (shape.total_workers, shape.num_pods) == (30, 3)
    assert canonical(shape.totals) == {"cpu": "900m", "memory": "14080Mi"}


def test_explicit_workers_numeric_string() -> None:
    shape = job_shape(spec(50, runtime={"workers": "30"}), preset())
    assert (shape.total_workers, shape.num_pods) == (30, 3)


def test_explicit_workers_within_one_pod() -> None:
    shape = job_shape(spec(5000, runtime={"workers": 7}), preset())
    assert (shape.total_workers, shape.workers_per_pod, shape.num_pods) == (7, 7, 1)


def test_explicit_workers_not_a_multiple_is_an_error() -> None:
    with pytest.raises(SizingError) as info:
        job_shape(spec(50, runtime={"workers": 25}), preset())
    assert info.value.path == "spec.benchmark.runtime.workers"
    assert info.value.message == (
        "25 workers is not a multiple of workersPerPod 10, and a JobSet cannot express a partial final pod "
        "(the operator fails the AIPerfJob): use 20 or 30, or set runtime.workersPerPod to a divisor of 25"
    )


def test_workers_per_pod() -> None:
    shape = job_shape(spec(50, runtime={"workers": 25, "workersPerPod": 5}), preset())
    assert (shape.total_workers, shape.workers_per_pod, shape.num_pods) == (25, 5, 5)
    assert canonical(shape.totals) == {"cpu": "1200m", "memory": "22272Mi"}  # 450 + 750; 1792 + 5 × 4096


def test_derived_total_ignores_workers_per_pod_when_rounding() -> None:
    # 1500 → 15, rounded to 20 with the operator's default 10 (it ignores workersPerPod there);
    # 20 is not a multiple of 8, so the operator would fail the job.
    with pytest.raises(SizingError) as info:
        job_shape(spec(1500, runtime={"workersPerPod": 8}), preset())
    assert info.value.path == "spec.benchmark.runtime.workersPerPod"
    assert "derives 20 workers" in info.value.message
    assert "set runtime.workers to a multiple of 8 (e.g. 16 or 24)" in info.value.message


def test_derived_total_divisible_by_workers_per_pod() -> None:
    shape = job_shape(spec(2000, runtime={"workersPerPod": 5}), preset())
    assert (shape.total_workers, shape.workers_per_pod, shape.num_pods) == (20, 5, 4)


def test_default_workers_per_pod_argument() -> None:
    shape = job_shape(spec(1500), preset(), default_workers_per_pod=4)
    assert (shape.total_workers, shape.workers_per_pod, shape.num_pods) == (16, 4, 4)


def test_telemetry_and_server_metrics_off() -> None:
    # 450m − 25m − 25m = 400m; 1792Mi − 192Mi − 192Mi = 1408Mi.
    off = {"gpuTelemetry": {"enabled": False}, "serverMetrics": {"enabled": False}}
    shape = job_shape(spec(50, benchmark=off), preset())
    assert canonical(shape.controller) == {"cpu": "400m", "memory": "1408Mi"}
    assert "GPU_TELEMETRY_MANAGER" not in shape.controller_containers
    assert "SERVER_METRICS_MANAGER" not in shape.controller_containers
    assert canonical(shape.totals) == {"cpu": "550m", "memory": "5504Mi"}


@pytest.mark.parametrize(
    ("benchmark", "cpu", "memory"),
    [
        ({"gpuTelemetry": {"enabled": False}}, "425m", "1600Mi"),
        ({"serverMetrics": {"enabled": False, "urls": ["http://llm:8000/metrics"]}}, "425m", "1600Mi"),
        ({"gpuTelemetry": "http://dcgm:9400/metrics"}, "450m", "1792Mi"),  # a URL turns it on
        ({"gpuTelemetry": {"urls": ["http://dcgm:9400"]}}, "450m", "1792Mi"),
    ],
)
def test_one_optional_manager(benchmark: dict[str, Any], cpu: str, memory: str) -> None:
    assert canonical(job_shape(spec(50, benchmark=benchmark), preset()).controller) == {"cpu": cpu, "memory": memory}


def test_event_bus_sidecar_off() -> None:
    sizing = preset().with_overrides(event_bus_sidecar_enabled=False)
    assert canonical(job_shape(spec(50), sizing).controller) == {"cpu": "400m", "memory": "1728Mi"}


def test_resource_mode_none_requests_nothing() -> None:
    shape = job_shape(spec(1500, resourceMode="none"), preset())
    assert shape.resource_mode == "none"
    assert shape.pod_sets == (PodSet("controller", 1, {}), PodSet("workers", 2, {}))
    assert shape.totals == {}
    assert format_requests(shape.totals) == "nothing"


def test_resource_mode_guaranteed_requests_like_burstable() -> None:
    guaranteed = job_shape(spec(1500, resourceMode="guaranteed"), preset())
    assert guaranteed.totals == job_shape(spec(1500), preset()).totals


@pytest.mark.parametrize(
    ("name", "cpu", "memory"),
    [
        ("newest", "600m", "5888Mi"),
        ("docs", "3800m", "7936Mi"),  # 450m + 3350m; 1792Mi + 6144Mi
        ("legacy-86577339", "11250m", "30208Mi"),  # 7250m + 4000m; 17920Mi + 12288Mi = 29.5Gi
    ],
)
def test_presets_change_totals(name: str, cpu: str, memory: str) -> None:
    assert canonical(job_shape(spec(50), preset(name)).totals) == {"cpu": cpu, "memory": memory}


def test_operator_env_newest() -> None:
    assert operator_env(preset()) == {
        "AIPERF_K8S_WORKER_POD_CPU": "150m",
        "AIPERF_K8S_WORKER_POD_MEMORY": "4Gi",
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
        "AIPERF_K8S_EVENT_BUS_SIDECAR_ENABLED": "true",
        "AIPERF_K8S_RECORD_PROCESSOR_SCALE_FACTOR": "1",
    }


def test_operator_env_legacy_canonical_quantities() -> None:
    env = operator_env(preset("legacy-86577339"))
    assert {k: v for k, v in env.items() if k.startswith(("AIPERF_K8S_API_", "AIPERF_K8S_WORKER_POD_"))} == {
        "AIPERF_K8S_WORKER_POD_CPU": "4",
        "AIPERF_K8S_WORKER_POD_MEMORY": "12Gi",
        "AIPERF_K8S_API_CPU": "1",
        "AIPERF_K8S_API_MEMORY": "8Gi",
    }


def test_sizing_from_config_overrides() -> None:
    config = OperatorSizing.model_validate(
        {
            "preset": "docs",
            "workerPod": {"memory": "8Gi"},
            "controller": {"API": {"cpu": "1", "memory": "1Gi"}},
            "eventBusSidecarEnabled": False,
            "recordProcessorCpuRequest": "250m",
            "recordProcessorScaleFactor": 4,
        }
    )
    sizing = sizing_from_config(config)
    assert sizing.worker_pod == ContainerSize.of("3350m", "8Gi")
    assert sizing.controller["API"] == ContainerSize.of("1", "1Gi")
    assert sizing.controller["SYSTEM_CONTROLLER"] == ContainerSize.of("75m", "192Mi")
    env = operator_env(sizing)
    assert {
        k: env[k] for k in env if "API" in k or "WORKER_POD" in k or "RECORD_PROCESSOR" in k or "EVENT_BUS_SIDECAR" in k
    } == {
        "AIPERF_K8S_WORKER_POD_CPU": "3350m",
        "AIPERF_K8S_WORKER_POD_MEMORY": "8Gi",
        "AIPERF_K8S_API_CPU": "1",
        "AIPERF_K8S_API_MEMORY": "1Gi",
        "AIPERF_K8S_EVENT_BUS_SIDECAR_ENABLED": "false",
        "AIPERF_K8S_RECORD_PROCESSOR_SCALE_FACTOR": "4",
        "AIPERF_K8S_RECORD_PROCESSOR_CPU_REQUEST": "250m",
    }
    assert sizing_from_config(None) == preset("newest")


def test_operator_sizing_config_errors() -> None:
    with pytest.raises(ValueError, match="whole number of MiB"):
        OperatorSizing.model_validate({"workerPod": {"memory": "4G"}})
    with pytest.raises(ValueError, match="WORKER_MANAGER"):
        OperatorSizing.model_validate({"controller": {"WORKER_MANAGER": {"cpu": "1"}}})
    with pytest.raises(ValueError, match="whole number of millicores"):
        OperatorSizing.model_validate({"controller": {"API": {"cpu": "0.0005"}}})


def _rp_env(value: str) -> dict[str, Any]:
    return {"env": [{"name": "AIPERF_K8S_RECORD_PROCESSOR_CPU_REQUEST", "value": value}]}


def test_record_processor_cpu_request_from_pod_template() -> None:
    # 2 pods × 10 RPs; each RP pinned at 100m → 1000m per worker pod > 150m budget.
    # 450m + 2 × 1000m = 2450m; memory unchanged: 9984Mi.
    shape = job_shape(spec(1500, podTemplate=_rp_env("100m")), preset())
    assert canonical(shape.worker_pod) == {"cpu": "1", "memory": "4Gi"}
    assert canonical(shape.totals) == {"cpu": "2450m", "memory": "9984Mi"}


def test_record_processor_cpu_request_below_budget_changes_nothing() -> None:
    shape = job_shape(spec(1500, podTemplate=_rp_env("10m")), preset())  # 10 × 10m = 100m < 150m
    assert canonical(shape.worker_pod) == {"cpu": "150m", "memory": "4Gi"}


def test_record_processor_cpu_request_with_processors_per_pod() -> None:
    runtime = {"recordProcessorsPerPod": 2}
    shape = job_shape(spec(1500, runtime=runtime, podTemplate=_rp_env("100m")), preset())
    assert (shape.record_processors_per_pod, canonical(shape.worker_pod)) == (2, {"cpu": "200m", "memory": "4Gi"})


def test_record_processor_cpu_request_operator_wide_and_empty_value() -> None:
    sizing = preset().with_overrides(record_processor_cpu_request=Fraction(1, 2))
    # An empty pod-template value falls back to the operator's (``or`` in the operator).
    shape = job_shape(spec(50, podTemplate=_rp_env("")), sizing)
    assert canonical(shape.worker_pod) == {"cpu": "500m", "memory": "4Gi"}  # 1 RP × 500m


def test_record_processors_from_total() -> None:
    shape = job_shape(spec(1500, runtime={"recordProcessors": 4}), preset())
    assert shape.record_processors_per_pod == 2
    with pytest.raises(SizingError, match="must divide by the 2 worker pods"):
        job_shape(spec(1500, runtime={"recordProcessors": 3}), preset())
    with pytest.raises(SizingError, match=r"recordProcessorsPerPod × worker pods \(2 × 2 = 4\), got 6"):
        job_shape(spec(1500, runtime={"recordProcessors": 6, "recordProcessorsPerPod": 2}), preset())


def test_record_processor_scale_factor() -> None:
    shape = job_shape(spec(1500), preset().with_overrides(record_processor_scale_factor=4))
    assert shape.record_processors_per_pod == 2  # 10 // 4


def test_init_containers_and_overhead_count() -> None:
    pod_template = {
        "initContainers": [
            {"name": "fetch", "resources": {"requests": {"cpu": "1", "memory": "512Mi"}}},
            {"name": "proxy", "restartPolicy": "Always", "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}},
        ],
        "extraPodSpec": {"overhead": {"cpu": "10m", "memory": "16Mi"}},
    }
    shape = job_shape(spec(50, podTemplate=pod_template), preset())
    # controller: max(450m + 100m, 1) + 10m = 1010m; max(1792 + 64, 512) + 16 = 1872Mi.
    assert canonical(shape.controller) == {"cpu": "1010m", "memory": "1872Mi"}
    # worker: max(150m + 100m, 1) + 10m = 1010m; max(4096 + 64, 512) + 16 = 4176Mi.
    assert canonical(shape.worker_pod) == {"cpu": "1010m", "memory": "4176Mi"}


def test_init_container_extended_resource_with_resource_mode_none() -> None:
    pod_template = {"initContainers": [{"name": "a", "resources": {"requests": {"ephemeral-storage": "1Gi"}}}]}
    shape = job_shape(spec(50, resourceMode="none", podTemplate=pod_template), preset())
    assert canonical(shape.totals) == {"ephemeral-storage": "2Gi"}


def test_bad_init_container_quantity() -> None:
    pod_template = {"initContainers": [{"name": "a", "resources": {"requests": {"cpu": "lots"}}}]}
    with pytest.raises(SizingError) as info:
        job_shape(spec(50, podTemplate=pod_template), preset())
    assert (
        str(info.value)
        == "spec.podTemplate.initContainers[0].resources.requests.cpu: not a Kubernetes quantity: 'lots'"
    )


def test_sizing_env_in_pod_template_warns() -> None:
    pod_template = {"env": [{"name": "AIPERF_K8S_WORKER_POD_CPU", "value": "4"}], "runtimeClassName": "kata"}
    shape = job_shape(spec(50, podTemplate=pod_template), preset())
    assert canonical(shape.worker_pod) == {"cpu": "150m", "memory": "4Gi"}
    assert shape.warnings == (
        "spec.podTemplate.env AIPERF_K8S_WORKER_POD_CPU does not change pod requests (the operator reads its sizing "
        "env only from its own Deployment); set it in aiperf-kueue:operator.sizing instead",
        "spec.podTemplate.runtimeClassName: Kueue adds the RuntimeClass's pod overhead to every pod; it is not known "
        "offline and not included in these requests",
    )


def test_sizing_validation() -> None:
    with pytest.raises(ValueError, match="whole number of MiB"):
        preset().with_overrides(worker_pod=ContainerSize.of("1", "1G"))
    with pytest.raises(KeyError, match="unknown sizing preset"):
        preset("oldest")


@given(
    concurrency=st.integers(min_value=1, max_value=200_000),
    cpw=st.integers(min_value=1, max_value=1000),
    wpp=st.integers(min_value=1, max_value=100),
)
def test_derived_shape_properties(concurrency: int, cpw: int, wpp: int) -> None:
    """Derived workers always cover the concurrency, and pods are uniform (or the operator fails)."""
    job = spec(concurrency, connectionsPerWorker=cpw, runtime={"workersPerPod": wpp})
    needed = max(1, math.ceil(concurrency / cpw))
    try:
        shape = job_shape(job, preset())
    except SizingError as exc:
        assert exc.path == "spec.benchmark.runtime.workersPerPod"
        assert shape_total(needed) > wpp and shape_total(needed) % wpp
        return
    assert shape.total_workers == shape.workers_per_pod * shape.num_pods
    assert shape.total_workers >= needed
    assert shape.total_workers == shape_total(needed)
    assert shape.totals == {
        "cpu": Fraction(450, 1000) + shape.num_pods * Fraction(150, 1000),
        "memory": Fraction(1792 * MI) + shape.num_pods * 4096 * MI,
    }


def shape_total(needed: int) -> int:
    """The operator's rounding with its default 10 workers per pod."""
    return needed if needed <= 10 else math.ceil(needed / 10) * 10
