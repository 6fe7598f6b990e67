"""The AIPerf operator's settings that decide a benchmark's pods, and the env that pins them.

Upstream: aiperf 0.13.0 aiperf/kubernetes/environment.py, aiperf/kubernetes/utils.py

The operator reads them from its own environment only (``AIPERF_K8S_*``,
``AIPERF_WORKER_DEFAULT_WORKERS_PER_POD``), with defaults baked into its image. :class:`Sizing`
holds every one of them: the pinned release's defaults (:mod:`aiperf_kueue.upstream.aiperf_release`)
with ``operator.sizing`` on top, or, for an external operator, its declared env.
:func:`operator_env` writes them all onto the operator Deployment, so the operator sizes pods
exactly as :mod:`aiperf_kueue.workload.job_shape` predicts from the same object.

Quantities are kept as the text the operator reads: controller containers get that text
verbatim as their requests; the worker pod's total is parsed as the operator parses it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType

from aiperf_kueue.common import quantity
from aiperf_kueue.config.installs import UNKNOWN, OperatorConfig
from aiperf_kueue.config.sizing import OperatorSizing
from aiperf_kueue.upstream.aiperf_release import (
    CONTROLLER_KEYS,
    DEFAULT_VERSION,
    RECORD_PROCESSOR_CPU_ENV,
    AIPerfRelease,
    ControllerKey,
    release,
)

#: The operator env variable of each setting (``kubernetes/environment.py``).
WORKER_POD_ENV = ("AIPERF_K8S_WORKER_POD_CPU", "AIPERF_K8S_WORKER_POD_MEMORY")
SWEEP_CONTROLLER_ENV = ("AIPERF_K8S_SWEEP_CONTROLLER_CPU", "AIPERF_K8S_SWEEP_CONTROLLER_MEMORY")
EVENT_BUS_ENV = "AIPERF_K8S_EVENT_BUS_SIDECAR_ENABLED"
SCALE_FACTOR_ENV = "AIPERF_K8S_RECORD_PROCESSOR_SCALE_FACTOR"
WORKERS_PER_POD_ENV = "AIPERF_WORKER_DEFAULT_WORKERS_PER_POD"
JOBSET_TTL_ENV = "AIPERF_K8S_JOBSET_TTL_SECONDS_AFTER_FINISHED"
SHARE_PROCESS_NAMESPACE_ENV = "AIPERF_K8S_SHARE_PROCESS_NAMESPACE"
DEFAULT_QUEUE_ENV = "AIPERF_K8S_JOBSET_KUEUE_DEFAULT_QUEUE_NAME"
DEFAULT_PRIORITY_CLASS_ENV = "AIPERF_K8S_JOBSET_KUEUE_DEFAULT_PRIORITY_CLASS"


def controller_env(key: ControllerKey) -> tuple[str, str]:
    """``AIPERF_K8S_<KEY>_CPU`` and ``_MEMORY``."""
    return f"AIPERF_K8S_{key}_CPU", f"AIPERF_K8S_{key}_MEMORY"


def parse_cpu_millis(text: str) -> int:
    """CPU text → millicores as the operator reads it (``kubernetes/utils.py`` ``parse_cpu``,
    then ``int(round(cores * 1000))``); ``ValueError`` where it would fail."""
    if not text or text == "0":
        return 0
    scale = {"n": 1e-9, "u": 1e-6, "m": 1e-3}.get(text[-1])
    cores = float(text[:-1]) * scale if scale is not None else float(text)
    return round(cores * 1000)


_MEMORY_SUFFIXES = (
    ("Ki", 1024), ("Mi", 1024**2), ("Gi", 1024**3), ("Ti", 1024**4), ("Pi", 1024**5), ("Ei", 1024**6),
    ("k", 1000), ("K", 1000), ("M", 1000**2), ("G", 1000**3), ("T", 1000**4), ("P", 1000**5), ("E", 1000**6),
)  # fmt: skip


def parse_memory_mib(text: str) -> int:
    """Memory text → MiB as the operator reads it (``parse_memory_mib``: floored, at least 1)."""
    value = text.strip()
    if not value or value == "0":
        return 0
    number: float | None = None
    for suffix, multiplier in _MEMORY_SUFFIXES:
        if value.endswith(suffix):
            number = float(value[: -len(suffix)]) * multiplier
            break
    total = float(value) if number is None else number
    return 0 if total <= 0 else max(1, int(total / 1024**2))


@dataclass(frozen=True)
class ContainerSize:
    """CPU and memory of one operator-sized container or pod, as the env text the operator reads."""

    cpu: str
    """CPU text, e.g. ``"75m"``."""

    memory: str
    """Memory text, e.g. ``"192Mi"``."""

    def requests(self) -> dict[str, Fraction]:
        """``{"cpu": cores, "memory": bytes}``, exact."""
        return {"cpu": quantity.parse(self.cpu), "memory": quantity.parse(self.memory)}


@dataclass(frozen=True)
class Sizing:
    """Every operator setting that decides a benchmark's pods. Build one with :func:`sizing_from_config`."""

    release: AIPerfRelease
    """The release whose rules and defaults apply."""

    worker_pod: ContainerSize
    """Total of one worker pod (``AIPERF_K8S_WORKER_POD_CPU``/``_MEMORY``), split over its containers."""

    controller: Mapping[ControllerKey, ContainerSize] = field(hash=False)
    """Per controller container (``AIPERF_K8S_<KEY>_CPU``/``_MEMORY``), every key of
    :data:`~aiperf_kueue.upstream.aiperf_release.CONTROLLER_KEYS`."""

    sweep_controller: ContainerSize
    """The AIPerfSweep controller pod (``AIPERF_K8S_SWEEP_CONTROLLER_CPU``/``_MEMORY``)."""

    event_bus_sidecar_enabled: bool = True
    """Whether the EVENT_BUS_PROXY container runs (``AIPERF_K8S_EVENT_BUS_SIDECAR_ENABLED``)."""

    record_processor_cpu_request: str | None = None
    """Fixed CPU per record processor (``AIPERF_K8S_RECORD_PROCESSOR_CPU_REQUEST``), or ``None``."""

    record_processor_scale_factor: int = 1
    """Workers per record processor (``AIPERF_K8S_RECORD_PROCESSOR_SCALE_FACTOR``)."""

    default_workers_per_pod: int = 10
    """``AIPERF_WORKER_DEFAULT_WORKERS_PER_POD``."""

    jobset_ttl_seconds_after_finished: int = 300
    """``AIPERF_K8S_JOBSET_TTL_SECONDS_AFTER_FINISHED`` (used when a spec sets no TTL)."""

    share_process_namespace: bool = False
    """``AIPERF_K8S_SHARE_PROCESS_NAMESPACE``."""

    known: bool = True
    """False when the settings are an external operator's unknown env: these are then the
    release's defaults, assumed."""

    def __post_init__(self) -> None:
        if set(self.controller) != set(CONTROLLER_KEYS):
            raise ValueError(f"controller sizes must cover exactly {', '.join(CONTROLLER_KEYS)}")
        object.__setattr__(self, "controller", MappingProxyType(dict(self.controller)))

    @property
    def version(self) -> str:
        """The release's version."""
        return self.release.version

    def controller_keys(self, *, gpu_telemetry: bool = True, server_metrics: bool = True) -> tuple[ControllerKey, ...]:
        """The controller containers present, in pod order."""
        absent = {
            "EVENT_BUS_PROXY": not self.event_bus_sidecar_enabled,
            "GPU_TELEMETRY_MANAGER": not gpu_telemetry,
            "SERVER_METRICS_MANAGER": not server_metrics,
        }
        return tuple(k for k in CONTROLLER_KEYS if not absent.get(k, False))


def _size(base: tuple[str, str], cpu: str | None, memory: str | None) -> ContainerSize:
    return ContainerSize(cpu if cpu is not None else base[0], memory if memory is not None else base[1])


def _canonical(text: str | None, resource: str) -> str | None:
    return None if text is None else str(quantity.canonical(resource, quantity.parse(text)))


def release_sizing(version: str = DEFAULT_VERSION, *, known: bool = True) -> Sizing:
    """A release's defaults, as its image has them."""
    rel = release(version)
    return Sizing(
        release=rel,
        worker_pod=ContainerSize(*rel.worker_pod),
        controller={k: ContainerSize(*rel.controller[k]) for k in CONTROLLER_KEYS},
        sweep_controller=ContainerSize(*rel.sweep_controller),
        event_bus_sidecar_enabled=rel.event_bus_sidecar_enabled,
        record_processor_scale_factor=rel.record_processor_scale_factor,
        default_workers_per_pod=rel.default_workers_per_pod,
        jobset_ttl_seconds_after_finished=rel.jobset_ttl_seconds_after_finished,
        share_process_namespace=rel.share_process_namespace,
        known=known,
    )


def with_overrides(base: Sizing, sizing: OperatorSizing) -> Sizing:
    """``operator.sizing`` over a release's defaults (quantities written canonically)."""

    def over(old: ContainerSize, o: object) -> ContainerSize:
        cpu = _canonical(getattr(o, "cpu", None), "cpu")
        memory = _canonical(getattr(o, "memory", None), "memory")
        return _size((old.cpu, old.memory), cpu, memory)

    return dataclasses.replace(
        base,
        worker_pod=over(base.worker_pod, sizing.worker_pod) if sizing.worker_pod else base.worker_pod,
        controller={
            k: over(v, sizing.controller[k]) if k in sizing.controller else v for k, v in base.controller.items()
        },
        sweep_controller=(
            over(base.sweep_controller, sizing.sweep_controller) if sizing.sweep_controller else base.sweep_controller
        ),
        event_bus_sidecar_enabled=(
            base.event_bus_sidecar_enabled
            if sizing.event_bus_sidecar_enabled is None
            else sizing.event_bus_sidecar_enabled
        ),
        record_processor_cpu_request=_canonical(sizing.record_processor_cpu_request, "cpu"),
        record_processor_scale_factor=sizing.record_processor_scale_factor or base.record_processor_scale_factor,
    )


def from_env(base: Sizing, env: Mapping[str, str]) -> Sizing:
    """An external operator's settings: its declared env over the release's defaults, text kept
    as the operator reads it. ``ValueError`` names a variable the operator could not read."""

    def pair(names: tuple[str, str], old: ContainerSize) -> ContainerSize:
        return _size((old.cpu, old.memory), env.get(names[0]), env.get(names[1]))

    def flag(name: str, default: bool) -> bool:
        text = env.get(name)
        if text is None:
            return default
        if text.strip().lower() in ("1", "true", "yes", "on"):
            return True
        if text.strip().lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{name}: not a boolean, got {text!r}")

    def number(name: str, default: int) -> int:
        text = env.get(name)
        try:
            return default if text is None else int(text)
        except ValueError:
            raise ValueError(f"{name}: not an integer, got {text!r}") from None

    return dataclasses.replace(
        base,
        worker_pod=pair(WORKER_POD_ENV, base.worker_pod),
        controller={k: pair(controller_env(k), v) for k, v in base.controller.items()},
        sweep_controller=pair(SWEEP_CONTROLLER_ENV, base.sweep_controller),
        event_bus_sidecar_enabled=flag(EVENT_BUS_ENV, base.event_bus_sidecar_enabled),
        record_processor_cpu_request=env.get(RECORD_PROCESSOR_CPU_ENV) or None,
        record_processor_scale_factor=number(SCALE_FACTOR_ENV, base.record_processor_scale_factor),
        default_workers_per_pod=number(WORKERS_PER_POD_ENV, base.default_workers_per_pod),
        jobset_ttl_seconds_after_finished=number(JOBSET_TTL_ENV, base.jobset_ttl_seconds_after_finished),
        share_process_namespace=flag(SHARE_PROCESS_NAMESPACE_ENV, base.share_process_namespace),
    )


def sizing_from_config(op: OperatorConfig) -> Sizing:
    """The operator's settings: the release's defaults with ``operator.sizing`` (installed by
    this program), or an external operator's declared env (or, unknown, the defaults assumed)."""
    if op.install:
        return with_overrides(release_sizing(op.aiperf_version), op.sizing)
    version = op.aiperf_version if op.aiperf_version != UNKNOWN else DEFAULT_VERSION
    declared = isinstance(op.env, dict) or "sizing" in op.model_fields_set
    base = release_sizing(version, known=op.aiperf_version != UNKNOWN and declared)
    if isinstance(op.env, dict):
        return from_env(base, op.env)
    return with_overrides(base, op.sizing)


def operator_env(sizing: Sizing) -> dict[str, str]:
    """The operator Deployment env that makes the operator size and shape pods exactly as
    ``sizing``: every setting explicit, whatever the image's defaults."""
    env: dict[str, str] = {}
    env[WORKER_POD_ENV[0]], env[WORKER_POD_ENV[1]] = sizing.worker_pod.cpu, sizing.worker_pod.memory
    for key in CONTROLLER_KEYS:
        cpu, memory = controller_env(key)
        env[cpu], env[memory] = sizing.controller[key].cpu, sizing.controller[key].memory
    env[SWEEP_CONTROLLER_ENV[0]] = sizing.sweep_controller.cpu
    env[SWEEP_CONTROLLER_ENV[1]] = sizing.sweep_controller.memory
    env[EVENT_BUS_ENV] = "true" if sizing.event_bus_sidecar_enabled else "false"
    env[SCALE_FACTOR_ENV] = str(sizing.record_processor_scale_factor)
    if sizing.record_processor_cpu_request is not None:
        env[RECORD_PROCESSOR_CPU_ENV] = sizing.record_processor_cpu_request
    env[WORKERS_PER_POD_ENV] = str(sizing.default_workers_per_pod)
    env[JOBSET_TTL_ENV] = str(sizing.jobset_ttl_seconds_after_finished)
    env[SHARE_PROCESS_NAMESPACE_ENV] = "true" if sizing.share_process_namespace else "false"
    return env
