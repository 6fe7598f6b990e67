"""``aiperf-kueue:jobs`` and ``aiperf-kueue:sweeps``: the AIPerf benchmarks a stack declares.

A job entry places one AIPerfJob (namespace, LocalQueue, WorkloadPriorityClass) and carries its
``spec`` (:class:`~aiperf_kueue.config.aiperf_spec.AIPerfJobSpec`); a sweep entry is one spec
run at several concurrencies, one AIPerfJob per point (expanded by
:mod:`aiperf_kueue.config.expansion`).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, StrictBool, StrictInt, StrictStr, field_validator, model_validator

from aiperf_kueue.common.display import show
from aiperf_kueue.config.aiperf_spec import CONFIG_NAME_MAX, NAME_ROOM, AIPerfJobSpec, job_name
from aiperf_kueue.config.base import DnsLabel, Model

#: A job's config name (DNS-1123 label, at most 28 characters; its AIPerfJob is ``<name>-<digest>``).
JobName = Annotated[str, AfterValidator(job_name)]


class Job(Model):
    """One AIPerfJob (``aiperf-kueue:jobs[]``)."""

    name: JobName
    """Job name: DNS-1123 label, at most 28 characters (required). The AIPerfJob (and AIPerf job id)
    is ``<name>-<digest>``, the digest 6 hex digits of its spec without ``cancel`` and
    ``timeoutSeconds``: a changed benchmark is a new run under a new name."""

    namespace: DnsLabel
    """Benchmark namespace; must be one of a ClusterQueue's ``namespaces`` (required)."""

    queue: DnsLabel | None = None
    """LocalQueue in ``namespace`` (default: that namespace's ``localQueue``). Written to
    ``spec.scheduling.queueName``."""

    priority_class: DnsLabel | None = None
    """Kueue WorkloadPriorityClass from ``aiperf-kueue:priorityClasses`` (default none).
    Written to ``spec.scheduling.priorityClass``."""

    spec: AIPerfJobSpec
    """The AIPerfJob ``spec`` (required); ``scheduling`` is set by this program."""

    retain_on_delete: StrictBool = True
    """Keep the AIPerfJob (its status and results) in the cluster when it leaves the stack or its
    spec changes (default true): a changed spec is a new AIPerfJob under a new name, and the
    earlier run stays beside it; false deletes the earlier run once the new one is created."""


class Sweep(Model):
    """A concurrency sweep (``aiperf-kueue:sweeps[]``): one AIPerfJob per concurrency,
    named ``<name>-c<N>``, whose target phase runs at concurrency N."""

    name: DnsLabel
    """Sweep name; generated job names ``<name>-c<N>`` must stay within 28 characters, as a job's
    name (required)."""

    namespace: DnsLabel
    """Benchmark namespace of every generated job (required)."""

    queue: DnsLabel | None = None
    """LocalQueue of every generated job (default: the namespace's ``localQueue``)."""

    priority_class: DnsLabel | None = None
    """Kueue WorkloadPriorityClass of every generated job (default none)."""

    concurrency: list[Annotated[StrictInt, Field(ge=1)]] = Field(min_length=1)
    """Concurrency per job, e.g. ``[1, 8, 32, 128]`` (required, unique, each a literal integer >= 1:
    ``true``, ``"8"`` or ``8.0`` are rejected, as the swept phase's ``concurrency`` would be)."""

    phase: StrictStr | None = None
    """Name of the phase in ``spec.benchmark.phases`` whose ``concurrency`` is swept
    (default: the phase named ``profiling``, else the only phase with ``kind: profiling``)."""

    requests_per_concurrency: StrictInt | None = Field(None, ge=1)
    """Also set the swept phase's ``requests`` to N × this, so each point sends a number of
    requests proportional to its concurrency (default: keep the base phase's ``requests``)."""

    spec: AIPerfJobSpec
    """Base AIPerfJob ``spec``; ``benchmark.phases`` must contain the swept phase (required)."""

    retain_on_delete: StrictBool = True
    """Keep the AIPerfJob (its status and results) in the cluster when it leaves the stack or its
    spec changes (default true): a changed spec is a new AIPerfJob under a new name, and the
    earlier run stays beside it; false deletes the earlier run once the new one is created."""

    @field_validator("concurrency")
    @classmethod
    def _unique(cls, values: list[int]) -> list[int]:
        seen: set[int] = set()
        for value in values:
            if value in seen:
                raise ValueError(f"concurrency values must be unique, {value} repeats")
            seen.add(value)
        return values

    @model_validator(mode="after")
    def _points(self) -> Sweep:
        longest = max(self.job_names(), key=len)
        if len(longest) > CONFIG_NAME_MAX:
            room = CONFIG_NAME_MAX - (len(longest) - len(self.name))
            raise ValueError(
                f"sweep {show(self.name)} generates job name {show(longest)} ({len(longest)} characters), and job "
                f"names are at most {CONFIG_NAME_MAX} ({NAME_ROOM}): shorten the sweep name to at most {room} "
                "characters"
            )
        self.phase_index()
        return self

    def job_names(self) -> list[str]:
        """The generated job names, in ``concurrency`` order."""
        return [f"{self.name}-c{n}" for n in self.concurrency]

    def phase_index(self) -> int | None:
        """Index of the swept phase in ``spec.benchmark.phases`` (``None``: the ``profiling``
        shorthand); ``ValueError`` if there is none."""
        bench = self.spec.benchmark
        if bench.phases is None:
            if self.phase in (None, "profiling"):
                return None
            raise ValueError(
                f"sweep {show(self.name)}: spec.benchmark has only the warmup/profiling shorthand; sweep 'profiling' "
                f"or write benchmark.phases (no phase named {show(self.phase)})"
            )
        phases = bench.phases
        names = [p.name for p in phases]
        if self.phase is not None:
            if self.phase not in names:
                raise ValueError(
                    f"sweep {show(self.name)}: spec.benchmark.phases has no phase named {show(self.phase)} "
                    f"(phases: {', '.join(names) or 'none'})"
                )
            return names.index(self.phase)
        if "profiling" in names:
            return names.index("profiling")
        profiling = [i for i, p in enumerate(phases) if p.effective_kind() == "profiling"]
        if len(profiling) == 1:
            return profiling[0]
        raise ValueError(
            f"sweep {show(self.name)}: spec.benchmark.phases needs a phase named 'profiling' (or exactly one with "
            f"kind: profiling), or set `phase` to the phase to sweep (phases: {', '.join(names) or 'none'})"
        )

    def point_spec(self, concurrency: int) -> AIPerfJobSpec:
        """The base spec with the swept phase at ``concurrency`` (and its requests scaled)."""
        data = self.spec.manifest()
        index = self.phase_index()
        bench = data["benchmark"]
        phase = bench["profiling"] if index is None else bench["phases"][index]
        phase["concurrency"] = concurrency
        if self.requests_per_concurrency is not None:
            phase["requests"] = concurrency * self.requests_per_concurrency
        return AIPerfJobSpec.model_validate(data)
