"""The AIPerf operator's pod sizing, and the requests Kueue sees for one AIPerfJob.

The operator gives every benchmark a JobSet with two podSets (aiperf NOTES §2, §2b):

- ``controller``: one pod, one container per control-plane service, each sized by the
  operator env ``AIPERF_K8S_<KEY>_CPU``/``_MEMORY``; GPU_TELEMETRY_MANAGER and
  SERVER_METRICS_MANAGER only when the benchmark keeps them on, EVENT_BUS_PROXY only
  with ``AIPERF_K8S_EVENT_BUS_SIDECAR_ENABLED``;
- ``workers``: ``num_pods`` pods, each totalling ``AIPERF_K8S_WORKER_POD_CPU``/``_MEMORY``
  (split over its containers with the sum preserved).

Those defaults are baked into the operator image and differ by a factor of 20 between
versions, so :class:`Sizing` holds them explicitly, :func:`operator_env` pins them on the
operator Deployment, and :func:`job_shape` computes the podSets Kueue charges from the
same numbers. Pure Python; quantities are exact :class:`~fractions.Fraction` (CPU in
cores, memory in bytes).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from aiperf_kueue import quantity
from aiperf_kueue.config.jobs import (
    CONTROLLER_KEYS,
    RECORD_PROCESSOR_CPU_ENV,
    AIPerfJobSpec,
    OperatorSizing,
    telemetry_enabled,
)

#: Resource amounts per resource name, exact (CPU in cores, bytes for memory).
Requests = Mapping[str, Fraction]

#: The operator's defaults when a spec leaves them unset (CRD defaults).
DEFAULT_CONNECTIONS_PER_WORKER = 100
DEFAULT_RESOURCE_MODE = "burstable"
#: ``AIPERF_WORKER_DEFAULT_WORKERS_PER_POD`` default (``src/aiperf/common/environment.py``).
DEFAULT_WORKERS_PER_POD = 10

#: Controller containers present in every controller pod.
ALWAYS_ON_CONTROLLER_KEYS = (
    "SYSTEM_CONTROLLER",
    "DATASET_MANAGER",
    "TIMING_MANAGER",
    "RECORDS_MANAGER",
    "API",
    "RESULTS_SIDECAR",
)


class SizingError(ValueError):
    """The operator would fail this AIPerfJob while building its JobSet."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}")


@dataclass(frozen=True)
class ContainerSize:
    """CPU and memory request of one operator-sized container (or of a whole worker pod)."""

    cpu: Fraction
    """CPU in cores (``Fraction(3, 20)`` = 150m)."""

    memory: Fraction
    """Memory in bytes."""

    @classmethod
    def of(cls, cpu: str, memory: str) -> ContainerSize:
        """From quantity strings: ``ContainerSize.of("150m", "4Gi")``."""
        return cls(quantity.parse(cpu), quantity.parse(memory))

    def requests(self) -> dict[str, Fraction]:
        """``{"cpu": ..., "memory": ...}``."""
        return {"cpu": self.cpu, "memory": self.memory}

    def text(self) -> tuple[str, str]:
        """Canonical quantity strings ``("150m", "4Gi")``, as the operator env takes them."""
        return str(quantity.canonical("cpu", self.cpu)), str(quantity.canonical("memory", self.memory))


def _controller(*sizes: tuple[str, str]) -> Mapping[str, ContainerSize]:
    assert len(sizes) == len(CONTROLLER_KEYS)
    return MappingProxyType({k: ContainerSize.of(*s) for k, s in zip(CONTROLLER_KEYS, sizes, strict=True)})


@dataclass(frozen=True)
class Sizing:
    """Every operator setting that decides the requests of benchmark pods.

    Build one with :func:`preset` or :func:`sizing_from_config`; change it with
    :meth:`with_overrides`.
    """

    worker_pod: ContainerSize
    """Total of one worker pod (``AIPERF_K8S_WORKER_POD_CPU``/``_MEMORY``)."""

    controller: Mapping[str, ContainerSize] = field(hash=False)
    """Per controller container, keyed as :data:`~aiperf_kueue.config.jobs.CONTROLLER_KEYS`
    (``AIPERF_K8S_<KEY>_CPU``/``_MEMORY``)."""

    event_bus_sidecar_enabled: bool = True
    """Whether the EVENT_BUS_PROXY container runs (``AIPERF_K8S_EVENT_BUS_SIDECAR_ENABLED``, default true)."""

    record_processor_cpu_request: Fraction | None = None
    """Fixed CPU per record processor, cores (``AIPERF_K8S_RECORD_PROCESSOR_CPU_REQUEST``; default unset)."""

    record_processor_scale_factor: int = 1
    """Workers per record processor (``AIPERF_K8S_RECORD_PROCESSOR_SCALE_FACTOR``, default 1)."""

    name: str = "newest"
    """The preset this sizing started from (for reports)."""

    def __post_init__(self) -> None:
        missing = [k for k in CONTROLLER_KEYS if k not in self.controller]
        if missing or set(self.controller) - set(CONTROLLER_KEYS):
            raise ValueError(f"controller sizes must cover exactly {', '.join(CONTROLLER_KEYS)}")
        if not 1 <= self.record_processor_scale_factor <= 100:
            raise ValueError("record_processor_scale_factor must be 1-100")
        for label, size in [("worker pod", self.worker_pod), *self.controller.items()]:
            if size.cpu < 0 or size.memory < 0 or (size.cpu * 1000).denominator != 1:
                raise ValueError(f"{label}: CPU must be whole millicores and amounts non-negative")
            if size.memory.denominator != 1:
                raise ValueError(f"{label}: memory must be whole bytes")
        if (self.worker_pod.memory / quantity.MIB).denominator != 1:
            raise ValueError("worker pod memory must be a whole number of MiB (the operator splits it in MiB)")
        object.__setattr__(self, "controller", MappingProxyType(dict(self.controller)))

    def with_overrides(
        self,
        *,
        worker_pod: ContainerSize | None = None,
        controller: Mapping[str, ContainerSize] | None = None,
        event_bus_sidecar_enabled: bool | None = None,
        record_processor_cpu_request: Fraction | None = None,
        record_processor_scale_factor: int | None = None,
    ) -> Sizing:
        """A copy with the given settings replaced (``controller`` may name only some keys)."""
        changes: dict[str, Any] = {}
        if worker_pod is not None:
            changes["worker_pod"] = worker_pod
        if controller:
            changes["controller"] = {**self.controller, **controller}
        if event_bus_sidecar_enabled is not None:
            changes["event_bus_sidecar_enabled"] = event_bus_sidecar_enabled
        if record_processor_cpu_request is not None:
            changes["record_processor_cpu_request"] = record_processor_cpu_request
        if record_processor_scale_factor is not None:
            changes["record_processor_scale_factor"] = record_processor_scale_factor
        return dataclasses.replace(self, **changes)

    def controller_keys(self, *, gpu_telemetry: bool = True, server_metrics: bool = True) -> tuple[str, ...]:
        """The controller containers present, in :data:`CONTROLLER_KEYS` order."""
        present = set(ALWAYS_ON_CONTROLLER_KEYS)
        if gpu_telemetry:
            present.add("GPU_TELEMETRY_MANAGER")
        if server_metrics:
            present.add("SERVER_METRICS_MANAGER")
        if self.event_bus_sidecar_enabled:
            present.add("EVENT_BUS_PROXY")
        return tuple(k for k in CONTROLLER_KEYS if k in present)

    def controller_pod(self, *, gpu_telemetry: bool = True, server_metrics: bool = True) -> dict[str, Fraction]:
        """Requests of the controller pod: the sum of its containers."""
        keys = self.controller_keys(gpu_telemetry=gpu_telemetry, server_metrics=server_metrics)
        return _sum(self.controller[k].requests() for k in keys)


#: ``newest`` controller sizes (newest ``k8s/environment.py``), in CONTROLLER_KEYS order: 450m / 1792Mi.
_NEWEST_CONTROLLER = _controller(
    ("75m", "192Mi"),  # SYSTEM_CONTROLLER
    ("50m", "256Mi"),  # DATASET_MANAGER
    ("50m", "192Mi"),  # TIMING_MANAGER
    ("75m", "256Mi"),  # RECORDS_MANAGER
    ("75m", "256Mi"),  # API
    ("25m", "192Mi"),  # GPU_TELEMETRY_MANAGER
    ("25m", "192Mi"),  # SERVER_METRICS_MANAGER
    ("25m", "192Mi"),  # RESULTS_SIDECAR
    ("50m", "64Mi"),  # EVENT_BUS_PROXY
)

#: ``legacy-86577339`` controller sizes (``k8s/environment.py@86577339``): 7250m / 17.5Gi.
#: NOTES lists them as "500m/1Gi, 1000m/2Gi ×3, API 1000m/8Gi, 250m/512Mi ×3, 2000m/1Gi";
#: that file names them SYSTEM_CONTROLLER; TIMING_MANAGER, DATASET_MANAGER, RECORDS_MANAGER;
#: API; GPU_TELEMETRY_MANAGER, SERVER_METRICS_MANAGER, RESULTS_SIDECAR; EVENT_BUS_PROXY. Its
#: WORKER_MANAGER setting (500m/1Gi) is not a controller container and is not counted,
#: as in the operator's preflight (``CONTROLLER_RESOURCE_KEYS``).
_LEGACY_CONTROLLER = _controller(
    ("500m", "1Gi"),  # SYSTEM_CONTROLLER
    ("1000m", "2Gi"),  # DATASET_MANAGER
    ("1000m", "2Gi"),  # TIMING_MANAGER
    ("1000m", "2Gi"),  # RECORDS_MANAGER
    ("1000m", "8Gi"),  # API
    ("250m", "512Mi"),  # GPU_TELEMETRY_MANAGER
    ("250m", "512Mi"),  # SERVER_METRICS_MANAGER
    ("250m", "512Mi"),  # RESULTS_SIDECAR
    ("2000m", "1Gi"),  # EVENT_BUS_PROXY
)

#: Named starting points. ``docs`` has the worker pod of AIPerf's Kueue docs page and env-var
#: reference (3350m/6Gi); those pages give no controller sizes, so it uses ``newest``'s.
PRESETS: Mapping[str, Sizing] = MappingProxyType(
    {
        "newest": Sizing(ContainerSize.of("150m", "4Gi"), _NEWEST_CONTROLLER, name="newest"),
        "docs": Sizing(ContainerSize.of("3350m", "6Gi"), _NEWEST_CONTROLLER, name="docs"),
        "legacy-86577339": Sizing(ContainerSize.of("4000m", "12Gi"), _LEGACY_CONTROLLER, name="legacy-86577339"),
    }
)
DEFAULT_PRESET = "newest"


def preset(name: str = DEFAULT_PRESET) -> Sizing:
    """The named preset (``newest``, ``docs``, ``legacy-86577339``); ``KeyError`` otherwise."""
    if name not in PRESETS:
        raise KeyError(f"unknown sizing preset {name!r}; presets: {', '.join(PRESETS)}")
    return PRESETS[name]


def sizing_from_config(config: OperatorSizing | None) -> Sizing:
    """An :class:`~aiperf_kueue.config.jobs.OperatorSizing` (``aiperf-kueue:operator.sizing``) → :class:`Sizing`.

    ``None`` gives the ``newest`` preset.
    """
    if config is None:
        return preset()
    base = preset(config.preset)

    def merged(old: ContainerSize, cpu: str | None, memory: str | None) -> ContainerSize:
        return ContainerSize(
            quantity.parse(cpu) if cpu is not None else old.cpu,
            quantity.parse(memory) if memory is not None else old.memory,
        )

    worker = base.worker_pod
    if config.worker_pod is not None:
        worker = merged(worker, config.worker_pod.cpu, config.worker_pod.memory)
    controller: dict[str, ContainerSize] = {
        k: merged(base.controller[k], o.cpu, o.memory) for k, o in config.controller.items()
    }
    rp_cpu = config.record_processor_cpu_request
    return base.with_overrides(
        worker_pod=worker,
        controller=controller,
        event_bus_sidecar_enabled=config.event_bus_sidecar_enabled,
        record_processor_cpu_request=quantity.parse(rp_cpu) if rp_cpu is not None else None,
        record_processor_scale_factor=config.record_processor_scale_factor,
    )


def operator_env(sizing: Sizing) -> dict[str, str]:
    """The operator Deployment env that makes the operator size pods exactly as ``sizing``.

    ``AIPERF_K8S_WORKER_POD_CPU``/``_MEMORY``, ``AIPERF_K8S_<KEY>_CPU``/``_MEMORY`` for all
    nine controller containers (canonical quantities), ``AIPERF_K8S_EVENT_BUS_SIDECAR_ENABLED``,
    ``AIPERF_K8S_RECORD_PROCESSOR_SCALE_FACTOR`` and, when set,
    ``AIPERF_K8S_RECORD_PROCESSOR_CPU_REQUEST``.
    """
    env: dict[str, str] = {}
    cpu, memory = sizing.worker_pod.text()
    env["AIPERF_K8S_WORKER_POD_CPU"] = cpu
    env["AIPERF_K8S_WORKER_POD_MEMORY"] = memory
    for key in CONTROLLER_KEYS:
        cpu, memory = sizing.controller[key].text()
        env[f"AIPERF_K8S_{key}_CPU"] = cpu
        env[f"AIPERF_K8S_{key}_MEMORY"] = memory
    env["AIPERF_K8S_EVENT_BUS_SIDECAR_ENABLED"] = "true" if sizing.event_bus_sidecar_enabled else "false"
    env["AIPERF_K8S_RECORD_PROCESSOR_SCALE_FACTOR"] = str(sizing.record_processor_scale_factor)
    if sizing.record_processor_cpu_request is not None:
        env[RECORD_PROCESSOR_CPU_ENV] = str(quantity.canonical("cpu", sizing.record_processor_cpu_request))
    return env


# --------------------------------------------------------------------------- job shape


#: Taint effects a toleration or taint may name (``""`` in a toleration: every effect).
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
#: Operators of a node selector requirement (``matchExpressions``).
NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


@dataclass(frozen=True)
class Toleration:
    """A pod (or ResourceFlavor) toleration, in the form Kubernetes matches it against a taint."""

    key: str = ""
    """Taint key; empty matches every key (only with ``Exists``)."""

    operator: str = "Equal"
    """``Equal`` (the taint's value must be ``value``) or ``Exists`` (any value)."""

    value: str = ""
    """Taint value for ``Equal``."""

    effect: str = ""
    """Effect tolerated; empty tolerates every effect."""

    def tolerates(self, key: str, value: str, effect: str) -> bool:
        """``Toleration.ToleratesTaint`` of ``k8s.io/api/core/v1``."""
        if self.effect and self.effect != effect:
            return False
        if self.key and self.key != key:
            return False
        if self.operator == "Exists":
            return True
        return self.operator == "Equal" and self.value == value


@dataclass(frozen=True)
class NodeSelectorRequirement:
    """One ``matchExpressions`` entry of a required node affinity term."""

    key: str
    """Node label key."""

    operator: str
    """``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt`` or ``Lt``."""

    values: tuple[str, ...] = ()
    """Values for ``In``/``NotIn`` (at least one), the one integer for ``Gt``/``Lt``, none otherwise."""

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether a node with ``labels`` satisfies the requirement (``labels.Requirement.Matches``)."""
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        # Gt / Lt: a label value that is not an integer never matches.
        try:
            have = int(labels[self.key]) if present else None
        except ValueError:
            have = None
        if have is None:
            return False
        return have > int(self.values[0]) if self.operator == "Gt" else have < int(self.values[0])


@dataclass(frozen=True)
class Placement:
    """What of a pod's spec Kueue compares with each ResourceFlavor before it looks at quota.

    The AIPerf operator copies ``podTemplate.nodeSelector``, ``tolerations`` and ``affinity``
    into both the controller and the worker pods, and merges ``extraPodSpec`` over them last
    (a plain ``dict.update``: a key there replaces the podTemplate's). Hashable, so the flavor
    match of one placement is computed once however many jobs share it.
    """

    node_selector: tuple[tuple[str, str], ...] = ()
    """``nodeSelector`` as sorted ``(key, value)`` pairs."""

    node_affinity: tuple[tuple[NodeSelectorRequirement, ...], ...] | None = None
    """``affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms``:
    the terms (any may match), each its ``matchExpressions`` (all must match; ``matchFields``
    are not compared with flavors); ``None`` when unset."""

    tolerations: tuple[Toleration, ...] = ()
    """``tolerations``, in order."""


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

    def total(self) -> dict[str, Fraction]:
        """``count`` × ``requests``."""
        return {r: a * self.count for r, a in self.requests.items()}


@dataclass(frozen=True)
class JobShape:
    """What one AIPerfJob becomes: workers, pods, and the requests Kueue charges."""

    resource_mode: str
    """``burstable``, ``guaranteed`` or ``none``. With ``none`` the operator's containers
    request nothing: Kueue sees zero requests (only init containers and pod overhead, if
    any, and ``pods`` when the ClusterQueue covers it), admits the job whenever its queue is
    active, and reserves nothing for it."""

    max_concurrency: int
    """Largest phase concurrency (1 when no phase sets one)."""

    connections_per_worker: int
    """``spec.connectionsPerWorker`` or 100."""

    total_workers: int
    """Workers across all worker pods."""

    workers_per_pod: int
    """Workers in each worker pod."""

    num_pods: int
    """Worker pods (replicas of the ``workers`` replicatedJob)."""

    record_processors_per_pod: int
    """Record-processor containers in each worker pod."""

    controller_containers: tuple[str, ...]
    """Controller containers present (keys of :data:`CONTROLLER_KEYS`)."""

    controller: Requests
    """Requests of the controller pod."""

    worker_pod: Requests
    """Requests of one worker pod."""

    warnings: tuple[str, ...] = field(default=())
    """Things in the spec that make these numbers less certain."""

    placement: Placement = field(default_factory=Placement)
    """nodeSelector, required node affinity and tolerations of both pods."""

    @property
    def pod_sets(self) -> tuple[PodSet, PodSet]:
        """``(controller, 1 pod)`` then ``(workers, num_pods)``, the JobSet's replicatedJobs in order."""
        return (
            PodSet("controller", 1, self.controller, self.placement),
            PodSet("workers", self.num_pods, self.worker_pod, self.placement),
        )

    @property
    def totals(self) -> dict[str, Fraction]:
        """Everything the job requests: controller + num_pods × worker pod."""
        return _sum(p.total() for p in self.pod_sets)

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


def job_shape(spec: AIPerfJobSpec, sizing: Sizing, default_workers_per_pod: int = DEFAULT_WORKERS_PER_POD) -> JobShape:
    """Workers, pods and Kueue requests of one AIPerfJob, as the operator builds its JobSet.

    Worker count (``spec_converter.py@2679a37e``; aiperf NOTES §2a):

    - ``benchmark.runtime.workers`` >= 1 is used as given;
    - otherwise ``max(1, ceil(max phase concurrency / connectionsPerWorker))``, rounded up
      to a multiple of ``default_workers_per_pod`` when larger. The operator reads only the
      snake_case ``workers_per_pod`` key in this step, which the CRD prunes, so
      ``workersPerPod`` does not take part in the rounding.

    Pods: a total up to ``workersPerPod`` (or ``default_workers_per_pod``) is one pod;
    a larger total must divide by it, else the operator fails the job: :class:`SizingError`.

    Requests (NOTES §2b): controller pod = its containers; worker pod =
    ``sizing.worker_pod``, or more when a record-processor CPU request is pinned (per job via
    ``podTemplate.env`` or operator-wide): each record processor then gets that CPU and the
    rest of the budget (floored at 0) is split, so the pod requests
    ``max(worker pod CPU, record processors × pinned CPU)``. Init containers and
    ``extraPodSpec.overhead`` are added as Kueue adds them; memory is never changed.
    """
    path = "spec.benchmark.runtime"
    bench = spec.benchmark
    runtime = bench.runtime
    mode = spec.resource_mode or DEFAULT_RESOURCE_MODE
    cpw = spec.connections_per_worker or DEFAULT_CONNECTIONS_PER_WORKER
    concurrency = bench.max_concurrency()
    explicit = runtime.explicit_workers() if runtime is not None else None
    wpp = (runtime.workers_per_pod if runtime is not None else None) or default_workers_per_pod

    if explicit is not None:
        total = explicit
    else:
        derived = max(1, math.ceil(Fraction(concurrency, cpw)))
        total = _round_up(derived, default_workers_per_pod)

    if total <= wpp:
        per_pod, pods = total, 1
    elif total % wpp:
        lower = total // wpp * wpp
        if explicit is not None:
            raise SizingError(
                f"{path}.workers",
                f"{total} workers is not a multiple of workersPerPod {wpp}, and a JobSet cannot express a partial "
                f"final pod (the operator fails the AIPerfJob): use {lower} or {lower + wpp}, or set "
                f"runtime.workersPerPod to a divisor of {total}",
            )
        raise SizingError(
            f"{path}.workersPerPod",
            f"the operator derives {total} workers (ceil({concurrency} / {cpw}) rounded up to a multiple of its "
            f"default {default_workers_per_pod} workers per pod; it ignores workersPerPod in that step), which is "
            f"not a multiple of workersPerPod {wpp}, so it would fail the AIPerfJob: set runtime.workers to a "
            f"multiple of {wpp} (e.g. {lower or wpp} or {lower + wpp})",
        )
    else:
        per_pod, pods = wpp, total // wpp

    rp_per_pod = _record_processors_per_pod(runtime, pods, per_pod, sizing, path)
    warnings = _env_warnings(spec)

    gpu = telemetry_enabled(bench.gpu_telemetry)
    server = telemetry_enabled(bench.server_metrics)
    keys = sizing.controller_keys(gpu_telemetry=gpu, server_metrics=server)
    if mode == "none":
        controller: dict[str, Fraction] = {}
        worker: dict[str, Fraction] = {}
    else:
        controller = sizing.controller_pod(gpu_telemetry=gpu, server_metrics=server)
        worker = sizing.worker_pod.requests()
        pinned = _pinned_rp_cpu(spec, sizing)
        if pinned is not None:
            worker["cpu"] = max(worker["cpu"], rp_per_pod * pinned)

    extra_init, overhead, pod_warnings = _pod_extras(spec)
    warnings += pod_warnings
    return JobShape(
        resource_mode=mode,
        max_concurrency=concurrency,
        connections_per_worker=cpw,
        total_workers=total,
        workers_per_pod=per_pod,
        num_pods=pods,
        record_processors_per_pod=rp_per_pod,
        controller_containers=keys,
        controller=_kueue_pod_requests(controller, extra_init, overhead),
        worker_pod=_kueue_pod_requests(worker, extra_init, overhead),
        warnings=tuple(warnings),
        placement=placement(spec),
    )


def _round_up(total: int, per_pod: int) -> int:
    """``round_workers_to_pod_multiple``: a derived total above one pod → whole pods."""
    if total <= per_pod or total % per_pod == 0:
        return total
    return total + per_pod - total % per_pod


def _record_processors_per_pod(runtime: Any, pods: int, per_pod: int, sizing: Sizing, path: str) -> int:
    """``apply_worker_config``: record processors per worker pod, or the operator's error."""
    rp_pp = runtime.record_processors_per_pod if runtime is not None else None
    rp_total = runtime.record_processors if runtime is not None else None
    if rp_pp is not None:
        if rp_total is not None and rp_total != rp_pp * pods:
            raise SizingError(
                f"{path}.recordProcessors",
                f"must equal recordProcessorsPerPod × worker pods ({rp_pp} × {pods} = {rp_pp * pods}), got {rp_total}",
            )
        return int(rp_pp)
    if rp_total is not None:
        if rp_total % pods:
            raise SizingError(
                f"{path}.recordProcessors",
                f"{rp_total} must divide by the {pods} worker pods; set recordProcessorsPerPod or a divisible total",
            )
        return int(rp_total // pods)
    return max(1, per_pod // sizing.record_processor_scale_factor)


def _pinned_rp_cpu(spec: AIPerfJobSpec, sizing: Sizing) -> Fraction | None:
    """Per-record-processor CPU, whole millicores as the operator rounds it, or ``None``."""
    text = spec.record_processor_cpu_request()
    cores = quantity.parse(text) if text is not None else sizing.record_processor_cpu_request
    if cores is None:
        return None
    return Fraction(round(cores * 1000), 1000)


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
    overhead = _parse_amounts(overhead_raw, "spec.podTemplate.extraPodSpec.overhead")
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
        _container_requests(container, f"{where}[{i}]")
    return init, overhead, warnings


def placement(spec: AIPerfJobSpec) -> Placement:
    """The nodeSelector, required node affinity and tolerations the operator gives both pods.

    A key of ``podTemplate.extraPodSpec`` replaces the podTemplate field (the operator
    merges extraPodSpec last). A shape the API server would reject when the operator
    creates the JobSet is a :class:`SizingError`.
    """
    template = spec.pod_template
    if template is None:
        return Placement()
    extra = template.extra_pod_spec or {}

    def pick(key: str, own: Any) -> tuple[Any, str]:
        if key in extra:
            return extra[key], f"spec.podTemplate.extraPodSpec.{key}"
        return own, f"spec.podTemplate.{key}"

    selector, where = pick("nodeSelector", template.node_selector)
    if not isinstance(selector or {}, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in (selector or {}).items()
    ):
        raise SizingError(where, f"must be a mapping of node label to string value, got {selector!r}")
    tolerations, where = pick("tolerations", template.tolerations)
    affinity, affinity_where = pick("affinity", template.affinity)
    return Placement(
        node_selector=tuple(sorted((selector or {}).items())),
        node_affinity=_required_node_affinity(affinity, affinity_where),
        tolerations=tuple(_toleration(t, f"{where}[{i}]") for i, t in enumerate(_list(tolerations, where))),
    )


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise SizingError(where, f"must be a list, got {value!r}")
    return value


def _toleration(raw: Any, where: str) -> Toleration:
    """A pod toleration, checked as the API server validates it."""
    if not isinstance(raw, dict):
        raise SizingError(where, f"must be a toleration mapping (key, operator, value, effect), got {raw!r}")
    key, value, effect = raw.get("key") or "", raw.get("value") or "", raw.get("effect") or ""
    operator = raw.get("operator") or "Equal"
    for name, given in (("key", key), ("value", value), ("effect", effect), ("operator", operator)):
        if not isinstance(given, str):
            raise SizingError(f"{where}.{name}", f"must be a string, got {given!r}")
    if operator not in ("Equal", "Exists"):
        raise SizingError(f"{where}.operator", f"must be Equal or Exists, got {operator!r}")
    if effect and effect not in TAINT_EFFECTS:
        raise SizingError(f"{where}.effect", f"must be one of {', '.join(TAINT_EFFECTS)} or omitted, got {effect!r}")
    if not key and operator != "Exists":
        raise SizingError(where, "a toleration without key must use operator Exists (it then tolerates every taint)")
    if operator == "Exists" and value:
        raise SizingError(f"{where}.value", f"must be empty with operator Exists, got {value!r}")
    if raw.get("tolerationSeconds") is not None and effect != "NoExecute":
        raise SizingError(f"{where}.tolerationSeconds", "needs effect NoExecute")
    return Toleration(key, operator, value, effect)


def _required_node_affinity(affinity: Any, where: str) -> tuple[tuple[NodeSelectorRequirement, ...], ...] | None:
    """``nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms``, checked."""
    if affinity is None:
        return None
    if not isinstance(affinity, dict):
        raise SizingError(where, f"must be a Kubernetes Affinity mapping, got {affinity!r}")
    required = (affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return None
    where = f"{where}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    if not isinstance(required, dict):
        raise SizingError(where, f"must be a NodeSelector mapping, got {required!r}")
    terms = _list(required.get("nodeSelectorTerms"), f"{where}.nodeSelectorTerms")
    if not terms:
        raise SizingError(f"{where}.nodeSelectorTerms", "must have at least one node selector term")
    out = []
    for i, term in enumerate(terms):
        here = f"{where}.nodeSelectorTerms[{i}]"
        if not isinstance(term, dict):
            raise SizingError(here, f"must be a mapping with matchExpressions, got {term!r}")
        expressions = _list(term.get("matchExpressions"), f"{here}.matchExpressions")
        out.append(tuple(_requirement(e, f"{here}.matchExpressions[{j}]") for j, e in enumerate(expressions)))
    return tuple(out)


def _requirement(raw: Any, where: str) -> NodeSelectorRequirement:
    """One ``matchExpressions`` entry, checked as the API server validates it."""
    if not isinstance(raw, dict):
        raise SizingError(where, f"must be a mapping with key, operator and values, got {raw!r}")
    key, operator, values = raw.get("key"), raw.get("operator"), raw.get("values") or []
    if not isinstance(key, str) or not key:
        raise SizingError(f"{where}.key", f"must be a node label key, got {key!r}")
    if operator not in NODE_SELECTOR_OPERATORS:
        raise SizingError(f"{where}.operator", f"must be one of {', '.join(NODE_SELECTOR_OPERATORS)}, got {operator!r}")
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise SizingError(f"{where}.values", f"must be a list of strings (quote numbers), got {values!r}")
    if operator in ("In", "NotIn") and not values:
        raise SizingError(f"{where}.values", f"must be non-empty with operator {operator}")
    if operator in ("Exists", "DoesNotExist") and values:
        raise SizingError(f"{where}.values", f"must be empty with operator {operator}, got {values!r}")
    if operator in ("Gt", "Lt") and (len(values) != 1 or not values[0].lstrip("-").isdigit()):
        raise SizingError(
            f"{where}.values", f"must be one integer (as a string) with operator {operator}, got {values!r}"
        )
    return NodeSelectorRequirement(key, operator, tuple(values))


def _container_requests(container: Mapping[str, Any], where: str) -> dict[str, Fraction]:
    """A container's requests as Kueue counts them: ``requests``, else ``limits``, per resource."""
    resources = container.get("resources") or {}
    if not isinstance(resources, dict):
        raise SizingError(f"{where}.resources", "must be a mapping")
    limits = _parse_amounts(resources.get("limits") or {}, f"{where}.resources.limits")
    requests = _parse_amounts(resources.get("requests") or {}, f"{where}.resources.requests")
    return {**limits, **requests}


def _parse_amounts(raw: Any, where: str) -> dict[str, Fraction]:
    if not isinstance(raw, dict):
        raise SizingError(where, "must be a mapping of resource to quantity")
    out: dict[str, Fraction] = {}
    for resource, text in raw.items():
        try:
            out[str(resource)] = quantity.parse(text)
        except ValueError:
            raise SizingError(f"{where}.{resource}", f"not a Kubernetes quantity: {text!r}") from None
    return out


def _kueue_pod_requests(
    containers: Mapping[str, Fraction], init_containers: list[dict[str, Any]], overhead: Mapping[str, Fraction]
) -> dict[str, Fraction]:
    """Kueue's per-pod request: ``max(Σ containers + Σ sidecars, max_i(init_i + sidecars before i)) + overhead``."""
    sidecars: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for container in init_containers:
        own = _container_requests(container, "initContainers")
        if container.get("restartPolicy") == "Always":
            sidecars = _sum([sidecars, own])
        else:
            init_peak = _max(init_peak, _sum([own, sidecars]))
    pod = _max(_sum([containers, sidecars]), init_peak)
    return {r: a for r, a in _sum([pod, overhead]).items() if a != 0}


def _sum(parts: Iterable[Mapping[str, Fraction]]) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    for part in parts:
        for resource, amount in part.items():
            out[resource] = out.get(resource, Fraction(0)) + amount
    return out


def _max(a: Mapping[str, Fraction], b: Mapping[str, Fraction]) -> dict[str, Fraction]:
    return {r: max(a.get(r, Fraction(0)), b.get(r, Fraction(0))) for r in {**a, **b}}


def resource_order(resources: Iterable[str]) -> list[str]:
    """``cpu``, ``memory``, then the rest alphabetically."""
    names = set(resources)
    head = [r for r in ("cpu", "memory") if r in names]
    return head + sorted(names - set(head))


def canonical(requests: Requests) -> dict[str, str | int]:
    """``{resource: canonical quantity}`` in :func:`resource_order` (zero amounts dropped)."""
    return {r: quantity.canonical(r, requests[r]) for r in resource_order(requests) if requests[r] != 0}


def format_requests(requests: Requests) -> str:
    """``cpu 600m, memory 5888Mi`` (``nothing`` when empty)."""
    text = ", ".join(f"{r} {q}" for r, q in canonical(requests).items())
    return text or "nothing"
