"""Sweep expansion: every AIPerfJob a stack declares, ``jobs`` then each sweep's points.

A sweep ``<name>`` with concurrencies ``[1, 8, 32]`` becomes the AIPerfJobs ``<name>-c1``,
``<name>-c8`` and ``<name>-c32``, each its base spec with the swept phase at that concurrency.
Two entries that would create the same AIPerfJob, or the same Pulumi resource, are config errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiperf_kueue.common.display import show
from aiperf_kueue.common.errors import ConfigError, Problem, key_path
from aiperf_kueue.config.aiperf_spec import AIPerfJobSpec
from aiperf_kueue.config.jobs import Job, Sweep


@dataclass(frozen=True)
class JobEntry:
    """One AIPerfJob to declare: a ``jobs[]`` entry or one point of a sweep."""

    name: str
    """Config name (DNS-1123 label, at most 28 characters): the job's, or ``<sweep>-c<N>``. The
    AIPerfJob is named after it and its spec (:func:`aiperf_kueue.plan.manifests.job_object_name`)."""

    namespace: str
    """Benchmark namespace."""

    queue: str | None
    """LocalQueue asked for (``None``: the namespace's default LocalQueue)."""

    priority_class: str | None
    """WorkloadPriorityClass, or ``None``."""

    spec: AIPerfJobSpec
    """The spec (for a sweep point: the base spec with the swept phase's concurrency set)."""

    origin: tuple[str | int, ...]
    """Config key path of the entry: ``("jobs", 3)`` or ``("sweeps", 1)``."""

    sweep: str | None = None
    """Sweep name for a sweep point."""

    concurrency: int | None = None
    """Concurrency of a sweep point."""

    retain_on_delete: bool = True
    """Keep the AIPerfJob when it leaves the stack or its spec changes (a new run replaces it)."""

    def manifest_spec(self, queue_name: str | None) -> dict[str, Any]:
        """The custom resource ``spec``: the spec as given plus ``scheduling`` (queue, priority class;
        ``queue_name`` None: no ``queueName``, the operator's env default queue routes the job)."""
        scheduling: dict[str, str] = {} if queue_name is None else {"queueName": queue_name}
        if self.priority_class is not None:
            scheduling["priorityClass"] = self.priority_class
        return {**self.spec.manifest(), "scheduling": scheduling}


def expand_sweeps(jobs: Sequence[Job], sweeps: Sequence[Sweep], source: str) -> list[JobEntry]:
    """Every job to declare: ``jobs`` in order, then each sweep's points in ``concurrency`` order.

    Raises :class:`~aiperf_kueue.common.errors.ConfigError` (``source`` names the stack file) when two
    entries would create the same AIPerfJob (same namespace and name).
    """
    entries = [
        JobEntry(
            j.name, j.namespace, j.queue, j.priority_class, j.spec, ("jobs", i), retain_on_delete=j.retain_on_delete
        )
        for i, j in enumerate(jobs)
    ]
    for i, sweep in enumerate(sweeps):
        for n, name in zip(sweep.concurrency, sweep.job_names(), strict=True):
            entries.append(
                JobEntry(
                    name,
                    sweep.namespace,
                    sweep.queue,
                    sweep.priority_class,
                    sweep.point_spec(n),
                    ("sweeps", i),
                    sweep=sweep.name,
                    concurrency=n,
                    retain_on_delete=sweep.retain_on_delete,
                )
            )
    problems: list[Problem] = []
    first: dict[tuple[str, str], JobEntry] = {}
    # The AIPerfJobs component names each child after "<namespace>-<name>": distinct jobs must differ there too.
    resources: dict[str, JobEntry] = {}
    for entry in entries:
        key = (entry.namespace, entry.name)
        made_by = f" (sweep {show(entry.sweep)})" if entry.sweep else ""
        where = key_path(*entry.origin, "name") if entry.sweep is None else key_path(*entry.origin)
        if key in first:
            other = first[key]
            problems.append(
                Problem(
                    where,
                    f"AIPerfJob {entry.namespace}/{entry.name}{made_by} is already declared by "
                    f"{key_path(*other.origin)}{f' (sweep {show(other.sweep)})' if other.sweep else ''}",
                )
            )
            continue
        first[key] = entry
        other = resources.setdefault(f"{entry.namespace}-{entry.name}", entry)
        if other is not entry:
            problems.append(
                Problem(
                    where,
                    f"AIPerfJob {entry.namespace}/{entry.name}{made_by} and {other.namespace}/{other.name} "
                    f"({key_path(*other.origin)}) would share the Pulumi resource name "
                    f"'{entry.namespace}-{entry.name}' (namespace and name joined by '-'); rename one",
                )
            )
    if problems:
        raise ConfigError(source, problems)
    return entries
