"""``spec.benchmark.phases[]`` as AIPerf 0.13.0 accepts them (``aiperf.config.phases.PhaseConfig``):
a union discriminated by ``type``, each phase closed to the keys its type has.

Upstream: aiperf 0.13.0 aiperf/config/phases.py, aiperf/config/loader/env_vars.py
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, PlainValidator, StrictBool, StrictInt, StrictStr, model_validator

from aiperf_kueue.common.display import show
from aiperf_kueue.config.aiperf_base import KeysOnly, Number

_PHASE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_WINDOWS_RESERVED = frozenset(
    {"CON", "PRN", "AUX", "NUL"} | {f"COM{i}" for i in range(1, 10)} | {f"LPT{i}" for i in range(1, 10)}
)
#: ``${NAME}`` or ``${NAME:default}``: substituted in the operator's process (``config/loader/env_vars.py``).
PhaseType = Literal["concurrency", "poisson", "gamma", "constant", "user_centric", "fixed_schedule"]
_RATE_TYPES = ("poisson", "gamma", "constant", "user_centric")
_PHASE_KEYS = frozenset(
    {
        "adaptiveAssessmentPeriod", "adaptiveControlMax", "adaptiveControlMin", "adaptiveControlVariable",
        "adaptiveMinCompletedRequests", "adaptiveScale", "adaptiveScaleBaseStep", "adaptiveScaleMaxStepMultiplier",
        "adaptiveScaleStepPercent", "adaptiveScaleStepPolicy", "adaptiveScaleStrategyType", "adaptiveSustainDuration",
        "agenticCacheWarmupDuration", "agenticWarmupGracePeriod", "burstPhaseStarts", "cancellation",
        "concurrencyRamp", "failedRequestThreshold", "prefillRamp", "sla", "systemIdleGapCapSeconds", "timingMode",
        "trajectoryStartMaxRatio", "trajectoryStartMinRatio",
    }
)  # fmt: skip
#: Keys only some phase types have.
_TYPE_KEYS: dict[str, frozenset[str]] = {
    **{t: frozenset({"rate", "rateRamp", "rateSeries"}) for t in ("poisson", "constant")},
    "gamma": frozenset({"rate", "rateRamp", "rateSeries", "smoothness"}),
    "user_centric": frozenset({"rate", "rateRamp", "rateSeries", "users"}),
    "fixed_schedule": frozenset({"autoOffset", "startOffset", "endOffset"}),
    "concurrency": frozenset(),
}


def _duration(value: Any) -> Any:
    # DurationSpec: seconds as a number, or a string such as "300", "5m", "2h".
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"must be seconds or a duration such as '5m', got {show(value)}")
    return value


class Phase(KeysOnly):
    """One entry of ``benchmark.phases``. The keys that decide the load and the sizing are
    typed; the other keys the release has (ramps, SLA filters, adaptive scaling, ...) are
    kept as given."""

    KEYS = _PHASE_KEYS | frozenset().union(*_TYPE_KEYS.values())

    name: StrictStr
    """Unique phase name, e.g. ``warmup`` or ``profiling`` (required; letters, digits, ``_``,
    ``-``, starting with a letter or ``_``; unique ignoring case)."""

    kind: Literal["warmup", "profiling"] | None = None
    """Runtime role; required for names other than ``warmup``/``profiling`` (which imply it).
    At least one phase must be ``profiling``."""

    type: PhaseType
    """Load type (required): ``concurrency``, ``poisson``, ``gamma``, ``constant``,
    ``user_centric`` or ``fixed_schedule``."""

    concurrency: StrictInt | None = Field(None, ge=1)
    """Most requests in flight (>= 1; a concurrency phase defaults to 1). The operator sizes
    workers from the largest concurrency of all phases."""

    prefill_concurrency: StrictInt | None = Field(None, ge=1)
    """Most requests in prefill at once (>= 1, at most ``concurrency``; needs ``streaming``)."""

    requests: StrictInt | None = Field(None, ge=1)
    """Stop after this many requests (>= 1). One of ``requests``, ``duration`` or ``sessions``
    is required except for ``fixed_schedule``."""

    duration: Annotated[Any, PlainValidator(_duration)] = None
    """Stop after this long: seconds, or ``"5m"``, ``"2h"``."""

    sessions: StrictInt | None = Field(None, ge=1)
    """Stop after this many sessions (>= 1)."""

    grace_period: Annotated[Any, PlainValidator(_duration)] = None
    """Time allowed after ``duration`` for in-flight requests (needs ``duration``)."""

    seamless: StrictBool | None = None
    """Start without waiting for the previous phase to drain; not on the first phase (default false)."""

    exclude_from_results: StrictBool | None = None
    """Forced by ``kind``: true for warmup, false for profiling; any other value is rejected."""

    rate: Number | None = Field(None, gt=0)
    """Requests per second of a rate phase (> 0); a rate phase needs ``rate`` or ``rateSeries``."""

    users: StrictInt | None = Field(None, ge=1)
    """Users of a ``user_centric`` phase (>= 1, required there)."""

    @model_validator(mode="after")
    def _release_rules(self) -> Phase:
        name = self.name
        if not _PHASE_NAME.fullmatch(name):
            raise ValueError(
                "phase name must start with a letter or '_' and use only letters, digits, '_' and '-', "
                f"got {show(name)}"
            )
        if name.split(".", 1)[0].upper() in _WINDOWS_RESERVED:
            raise ValueError(f"phase name {show(name)} is reserved by Windows and cannot name an artifact directory")
        kind = self.effective_kind()
        if kind is None:
            raise ValueError(f"phase {show(name)}: kind is required for names other than warmup and profiling")
        if name in ("warmup", "profiling") and kind != name:
            raise ValueError(f"phase name {show(name)} is reserved for kind {show(name)}; got kind {show(kind)}")
        if self.exclude_from_results is not None and self.exclude_from_results != (kind == "warmup"):
            raise ValueError(
                f"phase {show(name)}: excludeFromResults must be {str(kind == 'warmup').lower()} for kind {show(kind)}"
            )
        extra = set(self.model_extra or {}) & frozenset().union(*_TYPE_KEYS.values())
        wrong = sorted(extra - _TYPE_KEYS[self.type])
        for field in ("rate", "users"):
            if getattr(self, field) is not None and field not in _TYPE_KEYS[self.type]:
                wrong.append(field)
        if wrong:
            raise ValueError(f"phase {show(name)}: a {self.type} phase has no {', '.join(sorted(wrong))}")
        stops = (self.requests, self.duration, self.sessions)
        if self.type != "fixed_schedule" and all(s is None for s in stops):
            raise ValueError(f"phase {show(name)}: at least one of requests, duration or sessions must be set")
        if self.prefill_concurrency is not None and self.prefill_concurrency > self.effective_concurrency(0):
            raise ValueError(f"phase {show(name)}: prefillConcurrency must be <= concurrency")
        if self.grace_period is not None and self.duration is None:
            raise ValueError(f"phase {show(name)}: gracePeriod requires duration")
        if self.type in _RATE_TYPES:
            series = (self.model_extra or {}).get("rateSeries")
            if self.rate is None and series is None:
                raise ValueError(f"phase {show(name)}: a {self.type} phase needs rate or rateSeries")
            if self.rate is not None and series is not None:
                raise ValueError(f"phase {show(name)}: rate and rateSeries are mutually exclusive")
        if self.type == "user_centric":
            if self.users is None:
                raise ValueError(f"phase {show(name)}: a user_centric phase needs users")
            for stop, count in (("sessions", self.sessions), ("requests", self.requests)):
                if count is not None and count < self.users:
                    raise ValueError(f"phase {show(name)}: {stop} ({count}) must be >= users ({self.users})")
        return self

    def effective_kind(self) -> str | None:
        """``kind``, or the one the names ``warmup``/``profiling`` imply."""
        if self.kind is None and self.name in ("warmup", "profiling"):
            return self.name
        return self.kind

    def effective_concurrency(self, default: int = 1) -> int:
        """``concurrency`` as the release reads it: a concurrency phase defaults to 1, others to none."""
        if self.concurrency is not None:
            return self.concurrency
        return 1 if self.type == "concurrency" else default
