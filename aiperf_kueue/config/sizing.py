"""``aiperf-kueue:operator.sizing``: the pod sizes the AIPerf operator gives benchmark pods.

The defaults are the pinned release's (``operator.aiperfVersion``, declared in
:mod:`aiperf_kueue.upstream.aiperf_release`); the program writes every setting explicitly into the
operator's env, so a job is sized as planned whatever the image carries.
"""

from __future__ import annotations

from pydantic import Field, StrictBool, StrictInt, field_validator

from aiperf_kueue.common import quantity
from aiperf_kueue.common.display import show
from aiperf_kueue.config.base import ByteQuantity, CpuQuantity, Model
from aiperf_kueue.upstream.aiperf_release import ControllerKey


def operator_cpu(value: str) -> str:
    """``value`` if the operator can read it: it parses its CPU env with the ``kubernetes``
    package's ``parse_cpu`` (a plain number, or one with an ``m``, ``u`` or ``n`` suffix), which
    fails on every other suffix (``1k``) the Kubernetes grammar allows."""
    if (value[-1:].isalpha() and value[-1] not in "mun") or "e" in value.lower()[:-1]:
        raise ValueError(
            f'must be CPU cores the operator can read, such as "2", "0.5" or "1500m" (no k, M, G or exponent '
            f"suffix: it parses them as plain numbers), got {show(value)}"
        )
    return value


class ResourceOverride(Model):
    """CPU and/or memory of one operator-sized container or pod."""

    cpu: CpuQuantity | None = None
    """CPU request, whole millicores (``"150m"``, ``"2"``); unset keeps the release's default."""

    memory: ByteQuantity | None = None
    """Memory request (``"4Gi"``); unset keeps the release's default."""

    @field_validator("cpu")
    @classmethod
    def _whole_millicores(cls, value: str | None) -> str | None:
        if value is not None:
            operator_cpu(value)
        if value is not None and (quantity.parse(value) * 1000).denominator != 1:
            raise ValueError(f"must be a whole number of millicores, got {show(value)}")
        return value

    @field_validator("memory")
    @classmethod
    def _whole_bytes(cls, value: str | None) -> str | None:
        if value is not None and quantity.parse(value).denominator != 1:
            raise ValueError(f"must be a whole number of bytes, got {show(value)}")
        return value


class OperatorSizing(Model):
    """``aiperf-kueue:operator.sizing``: overrides of the release's pod sizes.

    The operator takes them from its own env only (``AIPERF_K8S_*``), so the program pins
    every one of them on the operator Deployment and sizes Kueue admission from the same
    numbers. Unset: the release's default (the table in docs/aiperf.md).
    """

    worker_pod: ResourceOverride | None = None
    """Total of one worker pod, split by the operator over its containers
    (``AIPERF_K8S_WORKER_POD_CPU``/``_MEMORY``); memory in whole MiB (default: 3350m / 6Gi in 0.13.0)."""

    controller: dict[ControllerKey, ResourceOverride] = Field(default_factory=dict)
    """Per controller container, keyed ``SYSTEM_CONTROLLER``, ``API``, ... (``AIPERF_K8S_<KEY>_CPU``/
    ``_MEMORY``; default: the release's, 450m / 1792Mi in all in 0.13.0)."""

    sweep_controller: ResourceOverride | None = None
    """The AIPerfSweep controller pod (``AIPERF_K8S_SWEEP_CONTROLLER_CPU``/``_MEMORY``; default 75m / 512Mi)."""

    event_bus_sidecar_enabled: StrictBool | None = None
    """Run the EVENT_BUS_PROXY container (``AIPERF_K8S_EVENT_BUS_SIDECAR_ENABLED``; default true)."""

    record_processor_cpu_request: CpuQuantity | None = None
    """Fixed CPU per record processor (``AIPERF_K8S_RECORD_PROCESSOR_CPU_REQUEST``); the rest of
    the worker pod's CPU is split over the other containers, and a budget too small for that
    fails the job (default unset)."""

    @field_validator("record_processor_cpu_request")
    @classmethod
    def _operator_reads(cls, value: str | None) -> str | None:
        return operator_cpu(value) if value is not None else None

    record_processor_scale_factor: StrictInt | None = Field(None, ge=1, le=100)
    """Workers per record processor when not configured per job
    (``AIPERF_K8S_RECORD_PROCESSOR_SCALE_FACTOR``, 1-100; default 1)."""

    @field_validator("worker_pod")
    @classmethod
    def _whole_mib(cls, value: ResourceOverride | None) -> ResourceOverride | None:
        if (
            value is not None
            and value.memory is not None
            and (quantity.parse(value.memory) / quantity.MIB).denominator != 1
        ):
            raise ValueError(
                f"memory must be a whole number of MiB (the operator splits it in MiB), got {show(value.memory)}"
            )
        return value
