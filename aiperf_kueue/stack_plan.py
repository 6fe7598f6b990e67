"""The whole plan of a stack: quotas, installs and every AIPerfJob's admission proof.

``__main__.py`` under ``pulumi up`` and ``aiperf-kueue plan`` both call
:func:`plan_stack`, so they accept, reject and warn about exactly the same config.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiperf_kueue.admission import JobAdmission, JobsReport, check_jobs
from aiperf_kueue.config import StackConfig
from aiperf_kueue.config.jobs import expand_sweeps
from aiperf_kueue.errors import ConfigError
from aiperf_kueue.planner import QueuePlan, plan_queues
from aiperf_kueue.sizing import Sizing, canonical, sizing_from_config


@dataclass(frozen=True)
class StackPlan:
    """Everything decided and checked about one stack."""

    config: StackConfig
    queues: QueuePlan
    sizing: Sizing
    jobs: JobsReport

    @property
    def warnings(self) -> tuple[str, ...]:
        """Queue warnings, then job warnings, in config order."""
        return (*self.queues.warnings, *self.jobs.warnings)

    def jobs_table(self) -> list[dict[str, Any]]:
        """Per job: where it goes, what it asks for, where it lands, how many fit at once."""
        return [_job_row(a, self.config) for a in self.jobs.admissions]


def _job_row(admission: JobAdmission, config: StackConfig) -> dict[str, Any]:
    entry, shape, placed = admission.entry, admission.shape, admission.assignment
    return {
        "name": entry.name,
        "namespace": entry.namespace,
        "queue": admission.local_queue,
        "clusterQueue": admission.cluster_queue,
        "priorityClass": entry.priority_class or config.operator.default_priority_class,
        "pods": sum(ps.count for ps in shape.pod_sets),
        "workers": shape.total_workers,
        "requests": canonical(shape.totals),
        "flavor": list(placed.flavors),
        "fits": placed.fits,
        "borrowing": placed.borrowing,
        "fitOnNominal": placed.jobs_on_nominal,
    }


def plan_stack(config: StackConfig, source: str, project_dir: Path | None = None) -> StackPlan:
    """Plan the queues, then size and place every job; :class:`ConfigError` on any problem."""
    queues = plan_queues(config, source, project_dir)
    entries = expand_sweeps(config.jobs, config.sweeps, source)
    sizing = sizing_from_config(config.operator.sizing)
    report = check_jobs(entries, config, queues, sizing)
    if report.problems:
        raise ConfigError(source, list(report.problems))
    return StackPlan(config, queues, sizing, report)
