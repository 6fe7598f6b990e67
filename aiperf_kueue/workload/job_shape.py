"""What the AIPerf operator builds for one AIPerfJob, and the requests Kueue charges for it.

Upstream: aiperf 0.13.0 aiperf/kubernetes/jobset.py, aiperf/kubernetes/jobset_specs.py

The operator turns a spec into a JobSet with two replicatedJobs (``controller``: one pod;
``workers``: ``num_pods`` pods). This module makes the same decisions as the pinned release
(:class:`~aiperf_kueue.workload.sizing.Sizing`), in the same order, with its messages:

1. **Workers** (``spec_converter.calculate_workers``): ``runtime.workers`` as given; else
   ``ceil(largest phase concurrency / connectionsPerWorker)``, at least ``runtime.workersMin``,
   rounded up to a multiple of ``runtime.workersPerPod`` (or the operator's default, 10).
2. **Pods** (``apply_worker_config``): a total up to workers-per-pod is one pod; a larger one
   must divide by it; record processors per pod from ``recordProcessorsPerPod``,
   ``recordProcessors``, or workers per pod ÷ the scale factor. A violation fails the job.
3. **Containers** (``jobset.py``): the controller pod has one container per service, each
   requesting its ``AIPERF_K8S_<KEY>_*`` text; a worker pod has a worker-group-manager, the
   workers and the record processors, splitting ``AIPERF_K8S_WORKER_POD_*`` by weight with the
   sum kept (every container at least 1m / 1Mi, every worker at least 162Mi, a pinned
   record-processor CPU taken first). A budget that cannot do so fails the operator's Dry Run
   preflight. ``burstable`` writes requests, ``guaranteed`` requests and equal limits, ``none``
   nothing.

Kueue then charges each pod its containers, init containers and overhead
(:func:`~aiperf_kueue.workload.requests.kueue_pod_requests`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from aiperf_kueue.common import quantity
from aiperf_kueue.common.display import show
from aiperf_kueue.config.aiperf_benchmark import telemetry_enabled
from aiperf_kueue.config.aiperf_spec import AIPerfJobSpec
from aiperf_kueue.upstream.aiperf_release import CONTROLLER_CONTAINER_NAMES, RECORD_PROCESSOR_CPU_ENV, ControllerKey
from aiperf_kueue.workload.placement import Placement, placement
from aiperf_kueue.workload.requests import (
    Requests,
    SizingError,
    canonical,
    container_requests,
    kueue_pod_requests,
    parse_amounts,
    total,
)
from aiperf_kueue.workload.sizing import Sizing, parse_cpu_millis, parse_memory_mib

Resources = dict[str, dict[str, str]]
RUNTIME = "spec.benchmark.runtime"


@dataclass(frozen=True)
class Container:
    """One operator-made container: its name and ``resources`` exactly as the JobSet has them."""

    name: str
    resources: Resources | None
    """``{"requests": {...}}`` (burstable), also ``"limits"`` (guaranteed), ``None`` (mode none)."""

    def requests(self) -> dict[str, Fraction]:
        """Its requests as Kueue counts them."""
        return container_requests({"resources": self.resources or {}}, self.name)


@dataclass(frozen=True)
class PodSet:
    """One podSet of the Kueue Workload of an AIPerfJob's JobSet."""

    name: str
    """``controller`` or ``workers`` (the replicatedJob name)."""

    count: int
    """Pods in the podSet: replicas × parallelism (1)."""

    requests: Requests
    """Requests of one pod, as Kueue computes them (containers, init containers, overhead)."""

    placement: Placement = field(default_factory=Placement)
    """The pod's nodeSelector, required node affinity and tolerations."""

    containers: tuple[Container, ...] = ()
    """The operator's containers of one pod, in order."""

    def total(self) -> dict[str, Fraction]:
        """``count`` × ``requests``."""
        return {r: a * self.count for r, a in self.requests.items()}


@dataclass(frozen=True)
class JobShape:
    """What one AIPerfJob becomes: workers, pods, containers, and the requests Kueue charges."""

    resource_mode: str
    """``burstable``, ``guaranteed`` or ``none``. With ``none`` the operator's containers
    request nothing: Kueue sees zero requests (only init containers and pod overhead, if
    any, and ``pods`` when the ClusterQueue covers it), admits the job whenever its queue is
    active, and reserves nothing for it."""

    max_concurrency: int
    """Largest phase concurrency (1 when no phase sets one)."""

    connections_per_worker: int
    """``spec.connectionsPerWorker`` or the release's default (100)."""

    total_workers: int
    """Workers across all worker pods."""

    workers_per_pod: int
    """Workers in each worker pod."""

    num_pods: int
    """Worker pods (replicas of the ``workers`` replicatedJob)."""

    record_processors_per_pod: int
    """Record-processor containers in each worker pod."""

    controller_containers: tuple[Container, ...]
    """The controller pod's containers, in the operator's order."""

    worker_containers: tuple[Container, ...]
    """One worker pod's containers: worker-group-manager, workers, record processors."""

    init_containers: tuple[dict[str, Any], ...] = ()
    """Init containers of both pods (``podTemplate.initContainers`` or ``extraPodSpec.initContainers``)."""

    overhead: Requests = field(default_factory=dict)
    """Pod overhead from ``extraPodSpec.overhead``."""

    warnings: tuple[str, ...] = field(default=())
    """Things in the spec that make these numbers less certain."""

    placement: Placement = field(default_factory=Placement)
    """nodeSelector, required node affinity and tolerations of both pods."""

    @property
    def controller(self) -> dict[str, Fraction]:
        """Kueue's request of the controller pod."""
        return self._pod(self.controller_containers)

    @property
    def worker_pod(self) -> dict[str, Fraction]:
        """Kueue's request of one worker pod."""
        return self._pod(self.worker_containers)

    def _pod(self, containers: tuple[Container, ...]) -> dict[str, Fraction]:
        own = total(c.requests() for c in containers)
        return kueue_pod_requests(own, list(self.init_containers), self.overhead)

    @property
    def pod_sets(self) -> tuple[PodSet, PodSet]:
        """``(controller, 1 pod)`` then ``(workers, num_pods)``, the JobSet's replicatedJobs in order."""
        return (
            PodSet("controller", 1, self.controller, self.placement, self.controller_containers),
            PodSet("workers", self.num_pods, self.worker_pod, self.placement, self.worker_containers),
        )

    @property
    def totals(self) -> dict[str, Fraction]:
        """Everything the job requests: controller + num_pods × worker pod."""
        return total(p.total() for p in self.pod_sets)

    def table(self) -> dict[str, Any]:
        """A plain summary with canonical quantities, for reports and tests."""
        return {
            "workers": self.total_workers,
            "workersPerPod": self.workers_per_pod,
            "pods": self.num_pods,
            "recordProcessorsPerPod": self.record_processors_per_pod,
            "controller": canonical(self.controller),
            "workerPod": canonical(self.worker_pod),
            "total": canonical(self.totals),
        }


def job_shape(spec: AIPerfJobSpec, sizing: Sizing) -> JobShape:
    """Workers, pods, containers and Kueue requests of one AIPerfJob, as the operator builds its
    JobSet (module doc). :class:`~aiperf_kueue.workload.requests.SizingError` where the operator would
    fail the job, carrying its message."""
    release = sizing.release
    bench = spec.benchmark
    runtime = bench.runtime
    mode = spec.resource_mode or release.resource_mode
    cpw = spec.connections_per_worker or release.connections_per_worker
    concurrency = bench.max_concurrency()
    per_pod_setting = runtime.workers_per_pod if runtime is not None else None
    wpp = per_pod_setting or sizing.default_workers_per_pod

    explicit = runtime.workers if runtime is not None else None
    if explicit:
        workers = explicit
    else:
        derived = max(1, math.ceil(Fraction(concurrency, cpw)))
        derived = max(derived, (runtime.workers_min if runtime is not None else None) or 0)
        workers = round_up(derived, wpp)

    if workers <= wpp:
        per_pod, pods = workers, 1
    elif workers % wpp:
        lower = workers // wpp * wpp
        raise SizingError(
            f"{RUNTIME}.workers",
            f"{workers} workers is not a multiple of workersPerPod {wpp}, and a JobSet cannot express a partial "
            f"final pod: use {lower} or {lower + wpp}, or set runtime.workersPerPod to a divisor of {workers}",
            f"total_workers={workers} is not a multiple of workers_per_pod={wpp}, and a JobSet replicated job "
            f"cannot express a partial final pod. Use a multiple of {wpp} (e.g. {lower} or {lower + wpp}), or set "
            f"runtime.workers_per_pod to a value that divides {workers}.",
        )
    else:
        per_pod, pods = wpp, workers // wpp
    rp_per_pod = _record_processors_per_pod(runtime, pods, per_pod, sizing)

    gpu, server = telemetry_enabled(bench.gpu_telemetry), telemetry_enabled(bench.server_metrics)
    keys = sizing.controller_keys(gpu_telemetry=gpu, server_metrics=server)
    controller = tuple(_controller_container(k, sizing, mode) for k in keys)
    pinned = spec.record_processor_cpu_request() or sizing.record_processor_cpu_request
    worker = _worker_containers(sizing, mode, per_pod, rp_per_pod, pinned)
    init, overhead, warnings = _pod_extras(spec)
    return JobShape(
        resource_mode=mode,
        max_concurrency=concurrency,
        connections_per_worker=cpw,
        total_workers=pods * per_pod,
        workers_per_pod=per_pod,
        num_pods=pods,
        record_processors_per_pod=rp_per_pod,
        controller_containers=controller,
        worker_containers=worker,
        init_containers=tuple(init),
        overhead=overhead,
        warnings=tuple(_env_warnings(spec) + warnings),
        placement=placement(spec),
    )


def round_up(workers: int, per_pod: int) -> int:
    """A derived total above one pod, rounded up to whole pods (``round_workers_to_pod_multiple``)."""
    if workers <= per_pod or workers % per_pod == 0:
        return workers
    return workers + per_pod - workers % per_pod


def _record_processors_per_pod(runtime: Any, pods: int, per_pod: int, sizing: Sizing) -> int:
    rp_pp = runtime.record_processors_per_pod if runtime is not None else None
    rp_total = runtime.record_processors if runtime is not None else None
    if rp_pp is not None:
        if rp_total is not None and rp_total != rp_pp * pods:
            raise SizingError(
                f"{RUNTIME}.recordProcessors",
                f"must equal recordProcessorsPerPod × worker pods ({rp_pp} × {pods} = {rp_pp * pods}), got {rp_total}",
                "runtime.record_processors must equal runtime.record_processors_per_pod multiplied by the "
                f"Kubernetes worker pod count ({rp_pp} * {pods})",
            )
        return int(rp_pp)
    if rp_total is not None:
        if rp_total % pods:
            raise SizingError(
                f"{RUNTIME}.recordProcessors",
                f"{rp_total} must divide by the {pods} worker pods; set recordProcessorsPerPod or a divisible total",
                f"runtime.record_processors must be divisible by the Kubernetes worker pod count ({pods}); set "
                "recordProcessorsPerPod explicitly or choose a divisible total",
            )
        return int(rp_total // pods)
    return max(1, per_pod // sizing.record_processor_scale_factor)


def _resources(cpu: str, memory: str, mode: str) -> Resources | None:
    if mode == "none":
        return None
    out = {"requests": {"cpu": cpu, "memory": memory}}
    if mode == "guaranteed":
        out["limits"] = {"cpu": cpu, "memory": memory}
    return out


def _controller_container(key: ControllerKey, sizing: Sizing, mode: str) -> Container:
    size = sizing.controller[key]
    return Container(CONTROLLER_CONTAINER_NAMES[key], _resources(size.cpu, size.memory, mode))


def _dry_run(message: str, where: str, why: str) -> SizingError:
    return SizingError(where, why, f"Pre-flight failed: Dry Run: Check failed with error: {message}")


def weighted_split(budget: int, weights: list[int]) -> list[int]:
    """``budget`` over ``weights`` by largest remainder, the sum kept exactly (``split_weighted_total``)."""
    if budget <= 0:
        return [0] * len(weights)
    whole = sum(weights)
    raw = [budget * w / whole for w in weights]
    shares = [int(r) for r in raw]
    left = budget - sum(shares)
    # Python's sort is stable: equal remainders keep container order, as the operator's does.
    for i in sorted(range(len(weights)), key=lambda i: raw[i] - shares[i], reverse=True)[:left]:
        shares[i] += 1
    return shares


def _worker_containers(sizing: Sizing, mode: str, workers: int, rps: int, pinned: str | None) -> tuple[Container, ...]:
    names = [
        "worker-group-manager",
        *(f"worker-{i}" for i in range(workers)),
        *(f"record-processor-{i}" for i in range(rps)),
    ]
    if mode == "none":
        return tuple(Container(n, None) for n in names)
    rel = sizing.release
    count = len(names)
    budget_m = parse_cpu_millis(sizing.worker_pod.cpu)
    budget_mib = parse_memory_mib(sizing.worker_pod.memory)
    knobs = "--workers-per-pod / --record-processors-per-pod"
    shape = f"1 worker-pod-manager + {workers} worker(s) + {rps} record processor(s)"
    reduce = (
        "raise operator.sizing.workerPod or lower runtime.workersPerPod / recordProcessorsPerPod "
        f"({count} containers per worker pod)"
    )
    if budget_m < rel.min_container_cpu_millis * count:
        raise _dry_run(
            f"WORKER_POD CPU budget ({budget_m}m) cannot cover the {rel.min_container_cpu_millis}m minimum per "
            f"container across {count} container(s) ({shape}). Increase AIPERF_K8S_WORKER_POD_CPU or reduce {knobs}.",
            f"{RUNTIME}.workersPerPod",
            f"a worker pod's CPU ({budget_m}m) cannot give each of its {count} containers "
            f"{rel.min_container_cpu_millis}m: {reduce}",
        )
    if budget_mib < rel.min_container_memory_mib * count:
        raise _dry_run(
            f"WORKER_POD memory budget ({budget_mib}Mi) cannot cover the {rel.min_container_memory_mib}Mi minimum "
            f"per container across {count} container(s) ({shape}). Increase AIPERF_K8S_WORKER_POD_MEMORY or reduce "
            f"{knobs}.",
            f"{RUNTIME}.workersPerPod",
            f"a worker pod's memory ({budget_mib}Mi) cannot give each of its {count} containers "
            f"{rel.min_container_memory_mib}Mi: {reduce}",
        )
    cpu_w, _, rp_w = rel.cpu_weights
    cpu = _cpu_shares(budget_m, workers, rps, pinned, sizing)
    mem_w = [rel.memory_weights[0]] + [rel.memory_weights[1]] * workers + [rel.memory_weights[2]] * rps
    minimum = rel.min_container_memory_mib
    memory = [minimum + s for s in weighted_split(budget_mib - minimum * count, mem_w)]
    if workers and min(memory[1 : 1 + workers]) < rel.worker_memory_floor_mib:
        floor = rel.worker_memory_floor_mib
        raise _dry_run(
            f"WORKER_POD memory budget ({budget_mib}Mi) leaves worker containers below the {floor}Mi worker "
            f"import-memory floor. Increase AIPERF_K8S_WORKER_POD_MEMORY or reduce {knobs}.",
            f"{RUNTIME}.workersPerPod",
            f"a worker pod's {budget_mib}Mi split over {shape} leaves each worker {min(memory[1 : 1 + workers])}Mi, "
            f"below the {floor}Mi a worker needs: {reduce}",
        )
    del cpu_w, rp_w
    return tuple(
        Container(n, _resources(_millis_text(c), f"{m}Mi", mode)) for n, c, m in zip(names, cpu, memory, strict=True)
    )


def _millis_text(millis: int) -> str:
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"


def _cpu_shares(budget_m: int, workers: int, rps: int, pinned: str | None, sizing: Sizing) -> list[int]:
    rel = sizing.release
    manager_w, worker_w, rp_w = rel.cpu_weights
    minimum = rel.min_container_cpu_millis
    if pinned is None or rps == 0:
        weights = [manager_w] + [worker_w] * workers + [rp_w] * rps
        return [minimum + s for s in weighted_split(budget_m - minimum * len(weights), weights)]
    where = "spec.podTemplate.env" if sizing.record_processor_cpu_request != pinned else "operator.sizing"
    try:
        rp_m = parse_cpu_millis(pinned)
    except ValueError:
        raise _dry_run(
            f"{RECORD_PROCESSOR_CPU_ENV} is not a valid Kubernetes CPU quantity: {pinned!r}. Use a value like "
            "'500m' or '2'.",
            where,
            f"{RECORD_PROCESSOR_CPU_ENV} {show(pinned)} is not a CPU quantity the operator can read",
        ) from None
    if rp_m <= 0:
        raise _dry_run(
            f"{RECORD_PROCESSOR_CPU_ENV} must be greater than zero, got {pinned!r}. A non-positive request emits an "
            "illegal negative CPU quantity and inflates the remaining worker-pod budget.",
            where,
            f"{RECORD_PROCESSOR_CPU_ENV} must be greater than zero, got {show(pinned)}",
        )
    fixed = rp_m * rps
    rest = [manager_w] + [worker_w] * workers
    if budget_m - fixed < minimum * len(rest):
        raise _dry_run(
            f"WORKER_POD CPU budget ({budget_m}m) cannot cover the pinned record-processor CPU request ({rp_m}m x "
            f"{rps} record processor(s) = {fixed}m) plus the {minimum}m minimum for each of the remaining "
            f"{len(rest)} container(s) (worker-pod-manager + {workers} worker(s)). Increase AIPERF_K8S_WORKER_POD_CPU "
            f"or lower {RECORD_PROCESSOR_CPU_ENV}.",
            where,
            f"{rps} record processors × {rp_m}m = {fixed}m leave less than {minimum}m for each of the other "
            f"{len(rest)} containers of a {budget_m}m worker pod: lower {RECORD_PROCESSOR_CPU_ENV} or raise "
            "operator.sizing.workerPod.cpu",
        )
    return [minimum + s for s in weighted_split(budget_m - fixed - minimum * len(rest), rest)] + [rp_m] * rps


def _env_warnings(spec: AIPerfJobSpec) -> list[str]:
    warnings = []
    for item in (spec.pod_template.env if spec.pod_template else None) or []:
        name = item.get("name")
        if isinstance(name, str) and name.startswith("AIPERF_K8S_") and name != RECORD_PROCESSOR_CPU_ENV:
            warnings.append(
                f"spec.podTemplate.env {name} does not change pod requests (the operator reads its sizing env "
                f"only from its own Deployment); set it in aiperf-kueue:operator.sizing instead"
            )
    return warnings


def _pod_extras(spec: AIPerfJobSpec) -> tuple[list[dict[str, Any]], dict[str, Fraction], list[str]]:
    """Init containers and pod overhead the pod template adds to both pods."""
    template = spec.pod_template
    if template is None:
        return [], {}, []
    extra = template.extra_pod_spec or {}
    warnings = []
    init = extra.get("initContainers", template.init_containers) or []
    where = (
        "spec.podTemplate.extraPodSpec.initContainers"
        if "initContainers" in extra
        else "spec.podTemplate.initContainers"
    )
    if not isinstance(init, list) or not all(isinstance(c, dict) for c in init):
        raise SizingError(where, "must be a list of containers")
    overhead_raw = extra.get("overhead") or {}
    if not isinstance(overhead_raw, dict):
        raise SizingError("spec.podTemplate.extraPodSpec.overhead", "must be a mapping of resource to quantity")
    overhead = parse_amounts(overhead_raw, "spec.podTemplate.extraPodSpec.overhead")
    if (template.runtime_class_name or extra.get("runtimeClassName")) and not overhead:
        warnings.append(
            "spec.podTemplate.runtimeClassName: Kueue adds the RuntimeClass's pod overhead to every pod; "
            "it is not known offline and not included in these requests"
        )
    if "resources" in extra:
        warnings.append(
            "spec.podTemplate.extraPodSpec.resources: pod-level requests replace the container sum in Kueue "
            ">= 0.19 and are not included in these requests"
        )
    for i, container in enumerate(init):
        container_requests(container, f"{where}[{i}]")
    return init, overhead, warnings


__all__ = ["Container", "JobShape", "PodSet", "SizingError", "job_shape", "quantity", "round_up", "weighted_split"]


def predicted_jobset(
    shape: JobShape, *, name: str, spec: dict[str, Any], sizing: Sizing, default_priority_class: str | None = None
) -> dict[str, Any]:
    """The parts of the JobSet the operator creates for AIPerfJob ``name`` with custom-resource
    ``spec`` that decide admission: its name and labels, ``suspend``, its TTL, and per
    replicatedJob the replicas, every container's resources and the init containers.

    The Kueue labels follow ``spec.scheduling``, else the operator's env defaults
    (``default_priority_class``: ``AIPERF_K8S_JOBSET_KUEUE_DEFAULT_PRIORITY_CLASS``); ``suspend``
    is set exactly when a queue label is (``jobset.py`` ``_resolved_queue_name``).
    """
    scheduling = spec.get("scheduling") or {}
    queue = scheduling.get("queueName")
    priority = scheduling.get("priorityClass") or default_priority_class
    labels = {"app": "aiperf", "aiperf.nvidia.com/job-id": name}
    if queue:
        labels["kueue.x-k8s.io/queue-name"] = queue
    if priority:
        labels["kueue.x-k8s.io/priority-class"] = priority
    out: dict[str, Any] = {"name": f"aiperf-{name}", "labels": labels}
    if queue:
        out["suspend"] = True
    if not spec.get("keepFailedPods"):
        ttl = spec.get("ttlSecondsAfterFinished", 300)
        out["ttlSecondsAfterFinished"] = ttl if ttl is not None else sizing.jobset_ttl_seconds_after_finished
    out["replicatedJobs"] = [
        {
            "name": ps.name,
            "replicas": ps.count,
            "containers": [{"name": c.name, "resources": c.resources} for c in ps.containers],
            "initContainers": [c.get("resources") for c in shape.init_containers],
        }
        for ps in shape.pod_sets
    ]
    return out
