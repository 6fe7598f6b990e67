"""What the AIPerf 0.13.0 operator builds for one AIPerfJob, with hand-checked numbers.

0.13.0 defaults: controller containers event-bus-proxy 50m/64Mi, control-plane 75m/192Mi,
dataset-manager 50m/256Mi, timing-manager 50m/192Mi, records-manager 75m/256Mi, api 75m/256Mi,
gpu-telemetry-manager 25m/192Mi, server-metrics-manager 25m/192Mi, results-sidecar 25m/192Mi
(450m / 1792Mi with all on); worker pod 3350m / 6Gi, split over its containers with every
container at least 1m / 1Mi, weights 100/131/389 (CPU) and 128/128/256 (memory) for the
worker-group-manager, each worker and each record processor. ``tests/test_aiperf_oracle*.py``
prove these rules against the release's own code.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

import pytest

from aiperf_kueue.config.aiperf_spec import AIPerfJobSpec
from aiperf_kueue.workload.job_shape import Container, job_shape, predicted_jobset, round_up, weighted_split
from aiperf_kueue.workload.requests import SizingError, canonical, format_requests
from aiperf_kueue.workload.sizing import ContainerSize, Sizing, release_sizing

MI = 2**20
DEFAULTS = release_sizing("0.13.0")


def spec(concurrency: int | None = 50, *, runtime: dict[str, Any] | None = None, **fields: Any) -> AIPerfJobSpec:
    """A minimal spec with one concurrency phase at ``concurrency`` (its default 1 when None)."""
    phase: dict[str, Any] = {"name": "profiling", "type": "concurrency", "requests": 1000}
    if concurrency is not None:
        phase["concurrency"] = concurrency
    benchmark: dict[str, Any] = {
        "models": ["m"],
        "endpoint": {"urls": ["http://llm:8000"]},
        "datasets": [{"name": "main"}],
        "phases": [phase],
    }
    if runtime is not None:
        benchmark["runtime"] = runtime
    benchmark.update(fields.pop("benchmark", {}))
    return AIPerfJobSpec.model_validate({"benchmark": benchmark, **fields})


def sized(worker_pod: tuple[str, str] | None = None, **changes: Any) -> Sizing:
    if worker_pod is not None:
        changes["worker_pod"] = ContainerSize(*worker_pod)
    return dataclasses.replace(DEFAULTS, **changes)


def requests(containers: tuple[Container, ...]) -> list[tuple[str, str, str]]:
    return [
        (c.name, c.resources["requests"]["cpu"], c.resources["requests"]["memory"]) for c in containers if c.resources
    ]


def test_one_worker() -> None:
    # ceil(50 / 100) = 1 worker, 1 record processor; the worker pod's 3350m / 6144Mi split:
    # CPU 3 × 1m + 3347m over 100/131/389 = 540/707/2100 (+1m each); memory 3 × 1Mi + 6141Mi
    # over 128/128/256 = 1535/1535/3071 (+1Mi each). The sums stay 3350m and 6144Mi.
    shape = job_shape(spec(50), DEFAULTS)
    assert shape.table() == {
        "workers": 1,
        "workersPerPod": 1,
        "pods": 1,
        "recordProcessorsPerPod": 1,
        "controller": {"cpu": "450m", "memory": "1792Mi"},
        "workerPod": {"cpu": "3350m", "memory": "6Gi"},
        "total": {"cpu": "3800m", "memory": "7936Mi"},
    }
    assert requests(shape.worker_containers) == [
        ("worker-group-manager", "541m", "1536Mi"),
        ("worker-0", "708m", "1536Mi"),
        ("record-processor-0", "2101m", "3072Mi"),
    ]
    assert requests(shape.controller_containers) == [
        ("event-bus-proxy", "50m", "64Mi"),
        ("control-plane", "75m", "192Mi"),
        ("dataset-manager", "50m", "256Mi"),
        ("timing-manager", "50m", "192Mi"),
        ("records-manager", "75m", "256Mi"),
        ("api", "75m", "256Mi"),
        ("gpu-telemetry-manager", "25m", "192Mi"),
        ("server-metrics-manager", "25m", "192Mi"),
        ("results-sidecar", "25m", "192Mi"),
    ]
    assert shape.warnings == ()


def test_concurrency_1500() -> None:
    # ceil(1500 / 100) = 15 → rounded up to 20 → 2 pods × (10 workers + 10 record processors).
    shape = job_shape(spec(1500), DEFAULTS)
    assert shape.table()["total"] == {"cpu": "7150m", "memory": "14080Mi"}  # 450m + 2 × 3350m; 1792Mi + 2 × 6Gi
    assert (shape.total_workers, shape.workers_per_pod, shape.num_pods, shape.record_processors_per_pod) == (
        20,
        10,
        2,
        10,
    )
    assert requests(shape.worker_containers)[:2] == [
        ("worker-group-manager", "64m", "199Mi"),
        ("worker-0", "83m", "199Mi"),
    ]
    assert requests(shape.worker_containers)[-1] == ("record-processor-9", "245m", "396Mi")


@pytest.mark.parametrize(
    ("concurrency", "runtime", "workers", "pods"),
    [
        (None, None, 1, 1),  # a concurrency phase defaults to 1
        (100, None, 1, 1),
        (101, None, 2, 1),
        (1000, None, 10, 1),
        (1001, None, 20, 2),  # 11 → 20
        (2001, None, 30, 3),  # 21 → 30
        (1500, {"workersPerPod": 8}, 16, 2),  # 15 → 16: rounded to workersPerPod
        (50, {"workersMin": 4}, 4, 1),  # the floor
        (50, {"workersMin": 13}, 20, 2),  # the floor, then whole pods
        (50, {"workers": 30}, 30, 3),  # as given
        (5000, {"workers": 7}, 7, 1),  # as given, one pod
    ],
)
def test_worker_counts(concurrency: int | None, runtime: dict[str, Any] | None, workers: int, pods: int) -> None:
    shape = job_shape(spec(concurrency, runtime=runtime), DEFAULTS)
    assert (shape.total_workers, shape.num_pods) == (workers, pods)


def test_largest_concurrency_of_any_phase_and_rate_phases() -> None:
    phases = [
        {"name": "warmup", "type": "concurrency", "concurrency": 2500, "requests": 10},
        {"name": "profiling", "type": "poisson", "rate": 5, "requests": 10},  # no concurrency: not counted
    ]
    shape = job_shape(spec(benchmark={"phases": phases}), DEFAULTS)
    assert (shape.max_concurrency, shape.total_workers, shape.num_pods) == (2500, 30, 3)


def test_shorthand_phases_are_sized() -> None:
    shorthand = {"profiling": {"type": "concurrency", "concurrency": 1500, "requests": 5}}
    job = AIPerfJobSpec.model_validate(
        {"benchmark": {**{k: v for k, v in spec().manifest()["benchmark"].items() if k != "phases"}, **shorthand}}
    )
    assert job_shape(job, DEFAULTS).total_workers == 20


def test_explicit_workers_not_a_multiple() -> None:
    with pytest.raises(SizingError) as info:
        job_shape(spec(50, runtime={"workers": 25}), DEFAULTS)
    assert (info.value.path, info.value.message, info.value.operator) == (
        "spec.benchmark.runtime.workers",
        "25 workers is not a multiple of workersPerPod 10, and a JobSet cannot express a partial final pod: use 20 "
        "or 30, or set runtime.workersPerPod to a divisor of 25",
        "total_workers=25 is not a multiple of workers_per_pod=10, and a JobSet replicated job cannot express a "
        "partial final pod. Use a multiple of 10 (e.g. 20 or 30), or set runtime.workers_per_pod to a value that "
        "divides 25.",
    )


def test_record_processors() -> None:
    assert job_shape(spec(1500, runtime={"recordProcessors": 4}), DEFAULTS).record_processors_per_pod == 2
    with pytest.raises(SizingError) as info:
        job_shape(spec(1500, runtime={"recordProcessors": 3}), DEFAULTS)
    assert info.value.operator == (
        "runtime.record_processors must be divisible by the Kubernetes worker pod count (2); set "
        "recordProcessorsPerPod explicitly or choose a divisible total"
    )
    with pytest.raises(SizingError) as info:
        job_shape(spec(1500, runtime={"recordProcessors": 6, "recordProcessorsPerPod": 2}), DEFAULTS)
    assert info.value.operator == (
        "runtime.record_processors must equal runtime.record_processors_per_pod multiplied by the Kubernetes worker "
        "pod count (2 * 2)"
    )
    assert job_shape(spec(1500), sized(record_processor_scale_factor=4)).record_processors_per_pod == 2  # 10 // 4


def test_worker_memory_floor_at_a_4gi_worker_pod() -> None:
    # 8 workers + 8 record processors in 4096Mi: each worker 164Mi (>= 162); 9 leave 146Mi.
    eight = job_shape(spec(50, runtime={"workers": 8}), sized(("3350m", "4Gi")))
    assert {m for _, _, m in requests(eight.worker_containers)[1:9]} == {"164Mi"}
    with pytest.raises(SizingError) as info:
        job_shape(spec(50, runtime={"workers": 9}), sized(("3350m", "4Gi")))
    assert info.value.path == "spec.benchmark.runtime.workersPerPod"
    assert info.value.operator == (
        "Pre-flight failed: Dry Run: Check failed with error: WORKER_POD memory budget (4096Mi) leaves worker "
        "containers below the 162Mi worker import-memory floor. Increase AIPERF_K8S_WORKER_POD_MEMORY or reduce "
        "--workers-per-pod / --record-processors-per-pod."
    )


def test_every_container_reserves_1m_and_1mi() -> None:
    with pytest.raises(SizingError) as info:
        job_shape(spec(1500), sized(("20m", "6Gi")))  # 21 containers
    assert info.value.operator == (
        "Pre-flight failed: Dry Run: Check failed with error: WORKER_POD CPU budget (20m) cannot cover the 1m "
        "minimum per container across 21 container(s) (1 worker-pod-manager + 10 worker(s) + 10 record "
        "processor(s)). Increase AIPERF_K8S_WORKER_POD_CPU or reduce --workers-per-pod / --record-processors-per-pod."
    )
    assert requests(job_shape(spec(50), sized(("3m", "6Gi"))).worker_containers) == [
        ("worker-group-manager", "1m", "1536Mi"),
        ("worker-0", "1m", "1536Mi"),
        ("record-processor-0", "1m", "3072Mi"),
    ]


def test_pinned_record_processor_cpu() -> None:
    # 10 record processors pinned at 100m = 1000m; the other 2350m is split over the manager and workers.
    rp = {"env": [{"name": "AIPERF_K8S_RECORD_PROCESSOR_CPU_REQUEST", "value": "100m"}]}
    shape = job_shape(spec(1500, podTemplate=rp), DEFAULTS)
    cpu = [c for _, c, _ in requests(shape.worker_containers)]
    # 2350m − 11 × 1m = 2339m over 100 + 10 × 131: 165m and 217m, the 4m left to the largest remainders
    # (the manager's .88, then the first workers' .31), + 1m each.
    assert (cpu[0], cpu[1], cpu[4], cpu[-1]) == ("167m", "219m", "218m", "100m")
    assert canonical(shape.worker_pod) == {"cpu": "3350m", "memory": "6Gi"}  # the sum is kept
    # Above the budget the operator's Dry Run fails (it never grows the pod).
    with pytest.raises(SizingError) as info:
        job_shape(spec(1500, podTemplate={"env": [{**rp["env"][0], "value": "400m"}]}), DEFAULTS)
    assert (info.value.path, info.value.operator) == (
        "spec.podTemplate.env",
        "Pre-flight failed: Dry Run: Check failed with error: WORKER_POD CPU budget (3350m) cannot cover the pinned "
        "record-processor CPU request (400m x 10 record processor(s) = 4000m) plus the 1m minimum for each of the "
        "remaining 11 container(s) (worker-pod-manager + 10 worker(s)). Increase AIPERF_K8S_WORKER_POD_CPU or lower "
        "AIPERF_K8S_RECORD_PROCESSOR_CPU_REQUEST.",
    )
    # Operator-wide, and an empty pod value falls back to it.
    shape = job_shape(
        spec(50, podTemplate={"env": [{**rp["env"][0], "value": ""}]}), sized(record_processor_cpu_request="2")
    )
    # 3350m − 2000m − 2 × 1m = 1348m over 100/131: 583.55 → 584m, 764.45 → 764m; + 1m each.
    assert [c for _, c, _ in requests(shape.worker_containers)] == ["585m", "765m", "2"]


def test_telemetry_off_and_event_bus_off() -> None:
    off = {"gpuTelemetry": {"enabled": False}, "serverMetrics": {"enabled": False}}
    shape = job_shape(spec(50, benchmark=off), sized(event_bus_sidecar_enabled=False))
    assert [c.name for c in shape.controller_containers] == [
        "control-plane",
        "dataset-manager",
        "timing-manager",
        "records-manager",
        "api",
        "results-sidecar",
    ]
    assert canonical(shape.controller) == {
        "cpu": "350m",
        "memory": "1344Mi",
    }  # 450 − 25 − 25 − 50; 1792 − 192 − 192 − 64


def test_resource_modes() -> None:
    none = job_shape(spec(1500, resourceMode="none"), DEFAULTS)
    assert none.totals == {} and format_requests(none.totals) == "nothing"
    assert all(c.resources is None for c in (*none.controller_containers, *none.worker_containers))
    guaranteed = job_shape(spec(50, resourceMode="guaranteed"), DEFAULTS)
    assert guaranteed.worker_containers[0].resources == {
        "requests": {"cpu": "541m", "memory": "1536Mi"},
        "limits": {"cpu": "541m", "memory": "1536Mi"},
    }
    assert guaranteed.totals == job_shape(spec(50), DEFAULTS).totals


def test_init_containers_and_overhead() -> None:
    pod_template = {
        "initContainers": [
            {"name": "fetch", "resources": {"requests": {"cpu": "1", "memory": "512Mi"}}},
            {"name": "proxy", "restartPolicy": "Always", "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}},
        ],
        "extraPodSpec": {"overhead": {"cpu": "10m", "memory": "16Mi"}},
    }
    shape = job_shape(spec(50, podTemplate=pod_template), DEFAULTS)
    # controller: max(450m + 100m, 1) + 10m = 1010m; max(1792 + 64, 512) + 16 = 1872Mi.
    assert canonical(shape.controller) == {"cpu": "1010m", "memory": "1872Mi"}
    # worker: max(3350m + 100m, 1) + 10m = 3460m; 6144 + 64 + 16 = 6224Mi.
    assert canonical(shape.worker_pod) == {"cpu": "3460m", "memory": "6224Mi"}
    assert shape.pod_sets[1].requests == {"cpu": Fraction(346, 100), "memory": Fraction(6224 * MI)}


def test_predicted_jobset() -> None:
    shape = job_shape(spec(1500, resourceMode="none"), DEFAULTS)
    manifest = {**spec(1500, resourceMode="none").manifest(), "scheduling": {"queueName": "q"}}
    predicted = predicted_jobset(shape, name="j", spec=manifest, sizing=DEFAULTS, default_priority_class="low")
    assert {k: v for k, v in predicted.items() if k != "replicatedJobs"} == {
        "name": "aiperf-j",
        "labels": {
            "app": "aiperf",
            "aiperf.nvidia.com/job-id": "j",
            "kueue.x-k8s.io/queue-name": "q",
            "kueue.x-k8s.io/priority-class": "low",
        },
        "suspend": True,
        "ttlSecondsAfterFinished": 300,
    }
    assert [(rj["name"], rj["replicas"], len(rj["containers"])) for rj in predicted["replicatedJobs"]] == [
        ("controller", 1, 9),
        ("workers", 2, 21),
    ]


def test_split_and_rounding_helpers() -> None:
    assert weighted_split(3347, [100, 131, 389]) == [540, 707, 2100]
    assert weighted_split(0, [1, 2]) == [0, 0]
    assert [round_up(n, 10) for n in (1, 10, 11, 20, 21)] == [1, 10, 20, 20, 30]


def test_sizing_env_in_pod_template_warns() -> None:
    pod_template = {"env": [{"name": "AIPERF_K8S_WORKER_POD_CPU", "value": "4"}], "runtimeClassName": "kata"}
    shape = job_shape(spec(50, podTemplate=pod_template), DEFAULTS)
    assert canonical(shape.worker_pod) == {"cpu": "3350m", "memory": "6Gi"}
    assert shape.warnings == (
        "spec.podTemplate.env AIPERF_K8S_WORKER_POD_CPU does not change pod requests (the operator reads its sizing "
        "env only from its own Deployment); set it in aiperf-kueue:operator.sizing instead",
        "spec.podTemplate.runtimeClassName: Kueue adds the RuntimeClass's pod overhead to every pod; it is not known "
        "offline and not included in these requests",
    )


def test_bad_init_container_quantity() -> None:
    pod_template = {"initContainers": [{"name": "a", "resources": {"requests": {"cpu": "lots"}}}]}
    with pytest.raises(SizingError) as info:
        job_shape(spec(50, podTemplate=pod_template), DEFAULTS)
    assert (
        str(info.value)
        == "spec.podTemplate.initContainers[0].resources.requests.cpu: not a Kubernetes quantity: 'lots'"
    )
