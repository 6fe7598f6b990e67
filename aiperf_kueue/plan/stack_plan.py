"""The whole plan of a stack: quotas, installs and every AIPerfJob's admission proof.

``__main__.py`` under ``pulumi up`` and ``aiperf-kueue plan`` both call
:func:`plan_values`, so they accept, reject and warn about exactly the same config.

The one place every config problem is collected, in this fixed order. Each stage reports all
of its problems together (one line each, in config order); a stage runs only once the stages
before it found none, because it works on their results:

1. ``secure:`` values only where a secret may be (:func:`aiperf_kueue.stackfile.secrets.check`);
2. the typed config model (:func:`aiperf_kueue.stackfile.loader.parse_config`);
3. Kueue's install source (:func:`aiperf_kueue.installs.install_checks.kueue_source_problems`), then the
   queues, the installs and the priority classes (:func:`aiperf_kueue.queues.planner.plan_queues`,
   which asks :func:`aiperf_kueue.installs.install_checks.install_problems` for the installs);
4. sweeps expanded into jobs (:func:`aiperf_kueue.config.jobs.expand_sweeps`);
5. every job's admission proof, with AIPerf's preflight FAILs in place of the admission
   problems they explain (:func:`aiperf_kueue.workload.admission.check_jobs`, :mod:`aiperf_kueue.plan.preflight`);
6. the Kubernetes provider's settings the stack needs (:func:`aiperf_kueue.installs.install_checks.provider_problems`)
   and the cluster it deploys to (:func:`aiperf_kueue.installs.cluster.cluster_target`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from aiperf_kueue.common.errors import ConfigError, Problem
from aiperf_kueue.config import StackConfig
from aiperf_kueue.config.expansion import expand_sweeps
from aiperf_kueue.config.installs import UNKNOWN
from aiperf_kueue.installs.cluster import NO_CLUSTER_WARNING, ClusterTarget, cluster_target
from aiperf_kueue.installs.install_checks import install_problems, kueue_source_problems, provider_problems
from aiperf_kueue.installs.operator_objects import operator_env, sizing_env
from aiperf_kueue.installs.releases import operator_image
from aiperf_kueue.plan import manifests, operator_checks, preflight
from aiperf_kueue.plan.fleet import Fleet, dispatched_job_warning, fleet_values, place_jobs
from aiperf_kueue.plan.stack_warnings import stack_warnings
from aiperf_kueue.plan.submit import benchmark_namespaces, default_queue, profile_command
from aiperf_kueue.queues.planner import plan_queues
from aiperf_kueue.queues.priority_checks import default_class_warning, priority_warnings
from aiperf_kueue.queues.queue_plan import QueuePlan
from aiperf_kueue.stackfile import secrets
from aiperf_kueue.stackfile.loader import parse_config
from aiperf_kueue.workload.admission import JobAdmission, JobsReport, check_jobs
from aiperf_kueue.workload.requests import canonical
from aiperf_kueue.workload.sizing import Sizing, sizing_from_config


@dataclass(frozen=True)
class StackPlan:
    """Everything decided and checked about one stack."""

    config: StackConfig
    queues: QueuePlan
    sizing: Sizing
    jobs: JobsReport
    preflight: tuple[preflight.Check, ...] = ()
    """AIPerf's "Kueue Queue" preflight for every submission into this stack's cluster."""
    checks: tuple[str, ...] = ()
    """Placement, cohort and image warnings, priority warnings, then preflight WARNs with their fixes."""
    cluster: ClusterTarget | None = None
    """The cluster ``pulumi up`` deploys to (:func:`plan_values` decides it, with the provider settings);
    None: the stack names none, which :func:`plan_values` adds to the warnings and ``pulumi up`` refuses."""
    cluster_warnings: tuple[str, ...] = ()
    """:data:`~aiperf_kueue.installs.cluster.NO_CLUSTER_WARNING` when the stack names no cluster, first of all."""
    fleet: Fleet | None = None
    """The MultiKueue fleet this stack is part of (:mod:`aiperf_kueue.plan.fleet`); None: a stack of its own."""
    placements: Mapping[str, Mapping[str, Any]] | None = None
    """On a fleet's manager, per job ``<namespace>/<name>``, per worker: its flavors there, or why never."""

    def fleet_table(self) -> dict[str, Any] | None:
        """The ``fleet`` output (:meth:`aiperf_kueue.plan.fleet.Fleet.table`), None for a stack of its own."""
        return self.fleet.table(self.placements) if self.fleet is not None else None

    @property
    def warnings(self) -> tuple[str, ...]:
        """The cluster warning, queue warnings, job warnings, priority warnings, then preflight WARNs."""
        return (*self.cluster_warnings, *self.queues.warnings, *self.jobs.warnings, *self.checks)

    @property
    def writes_queue_name(self) -> bool:
        """Whether declared jobs carry ``spec.scheduling.queueName`` and the CLI line ``--queue-name``
        (:func:`aiperf_kueue.plan.preflight.writes_queue_name`: not for AIPerf 0.13.0 on Kueue >= 0.20)."""
        return preflight.writes_queue_name(self.config, self.queues.target)

    def aiperf_jobs(self, mask: Mapping[str, str] = manifests.NO_MASK) -> list[manifests.Manifest]:
        """Every AIPerfJob, in the order of ``jobs.admissions`` (``mask``: :func:`manifests.spec_digest`)."""
        image, priority = operator_image(self.config.operator), self.config.operator.default_priority_class
        explicit = self.writes_queue_name
        return [manifests.aiperf_job(a, image, priority, mask, queue_name=explicit) for a in self.jobs.admissions]

    def cli_commands(self) -> dict[str, str]:
        """Per benchmark namespace, the ``aiperf kube profile`` line that submits into it as the
        declared jobs do (``aiperfCli``): with ``--queue-name`` unless only the default queue runs."""
        config = self.config
        image, default = operator_image(config.operator), default_queue(config)
        return {
            ns.name: profile_command(ns, config.operator, image, default, queue_name=self.writes_queue_name)
            for _, _, ns in benchmark_namespaces(config)
        }

    def preflight_table(self, jobs: Sequence[manifests.Manifest] | None = None) -> list[dict[str, Any]]:
        """Per submission: the preflight status, the operator's message, the fix, and what follows;
        a declared job by its AIPerfJob's name (from ``jobs``, default :meth:`aiperf_jobs` unmasked)."""
        names = _object_names(self.aiperf_jobs() if jobs is None else jobs)
        return [replace(c, object_name=names.get((c.namespace, c.job))).as_dict() for c in self.preflight]

    def jobs_table(self, jobs: Sequence[manifests.Manifest] | None = None) -> list[dict[str, Any]]:
        """Per job: where it goes, what it asks for, where it lands, how many fit at once.

        ``objectName`` is the AIPerfJob's ``metadata.name`` (from ``jobs``, default
        :meth:`aiperf_jobs` unmasked). ``requests`` is what Kueue charges the job, all podSets
        together: CPU and memory (and any other covered resource the pods request), plus ``pods``
        only when ``queues.coveredResources`` covers pods (then one per pod), since only then does
        Kueue count pods against quota. ``fitOnNominal`` is ``None`` (unlimited) for a job that
        requests nothing.
        """
        names = _object_names(self.aiperf_jobs() if jobs is None else jobs)
        return [_job_row(a, self.config, names[(a.entry.namespace, a.entry.name)]) for a in self.jobs.admissions]


def _object_names(jobs: Sequence[manifests.Manifest]) -> dict[tuple[str, str | None], str]:
    """``(namespace, config name)`` → the AIPerfJob's name (the config name is its label)."""
    return {
        (j["metadata"]["namespace"], j["metadata"]["labels"][manifests.JOB_LABEL]): j["metadata"]["name"] for j in jobs
    }


def job_commands(jobs: Sequence[manifests.Manifest]) -> dict[str, dict[str, str]]:
    """The ``kubectl`` output's per-job commands, keyed ``<namespace>/<config name>``:
    ``aiperfJob`` describes the current run, ``jobRuns`` lists every run of the job (a spec change
    leaves the earlier one in the cluster, named after its own spec)."""
    current, runs = {}, {}
    for job in jobs:
        meta = job["metadata"]
        ns, name = meta["namespace"], meta["labels"][manifests.JOB_LABEL]
        current[f"{ns}/{name}"] = f"kubectl describe aiperfjob {meta['name']} -n {ns}"
        runs[f"{ns}/{name}"] = f"kubectl get aiperfjobs -n {ns} -l {manifests.JOB_LABEL}={name}"
    return {"aiperfJob": current, "jobRuns": runs}


def _job_row(admission: JobAdmission, config: StackConfig, object_name: str) -> dict[str, Any]:
    entry, shape, placed = admission.entry, admission.shape, admission.assignment
    return {
        "name": entry.name,
        "objectName": object_name,
        "namespace": entry.namespace,
        "queue": admission.local_queue,
        "clusterQueue": admission.cluster_queue,
        "priorityClass": entry.priority_class or config.operator.default_priority_class,
        "pods": sum(ps.count for ps in shape.pod_sets),
        "workers": shape.total_workers,
        "requests": canonical(placed.requests),
        "flavor": list(placed.flavors),
        "fits": placed.fits,
        "borrowing": placed.borrowing,
        "fitOnNominal": placed.jobs_on_nominal,
    }


def plan_values(
    values: Mapping[str, Any],
    source: str,
    project_dir: Path | None = None,
    secure_paths: list[secrets.KeyPath] | None = None,
    provider: Mapping[str, Any] | None = None,
    *,
    decrypted: bool = False,
) -> StackPlan:
    """:func:`secrets.check`, :func:`~aiperf_kueue.stackfile.loader.parse_config`, then :func:`plan_stack`.

    ``secure_paths``: where the stack file has ``secure:`` values (default: where ``values``
    hold their placeholders, as the loader writes them offline). ``provider``: the stack's
    ``kubernetes:*`` settings, checked by :func:`~aiperf_kueue.installs.install_checks.provider_problems`.
    ``decrypted``: the values are the engine's (``pulumi up``), so a whole secure ``jobs`` key is readable.

    Nothing is remembered between calls: ``plan`` validates a stack before it runs the program,
    and the program plans the same values again (a few per cent of ``plan``'s time on a large stack).
    """
    paths = secrets.placeholder_paths(values) if secure_paths is None else secure_paths
    secrets.check(paths, source, decrypted=decrypted)
    secrets.check_kubeconfigs(values, paths, source)
    # A fleet member's keys from its other stacks (a manager's inventory, a worker's queues) before the model.
    expanded, fleet = fleet_values(values, source, project_dir)
    plan = plan_stack(parse_config(expanded, source), source, project_dir, fleet)
    target, cluster_problems = cluster_target(plan.config.cluster, provider or {})
    problems = [*cluster_problems, *provider_problems(plan.config, provider or {})]
    if problems:
        raise ConfigError(source, problems)
    cluster_warnings = () if target else (NO_CLUSTER_WARNING,)
    if (plan.cluster, plan.cluster_warnings) != (target, cluster_warnings):
        plan = replace(plan, cluster=target, cluster_warnings=cluster_warnings)
    if target is None and plan.config.warnings == "error":
        raise ConfigError(source, [Problem("warnings", f"is error, and the plan warns: {NO_CLUSTER_WARNING}")])
    return plan


def plan_stack(
    config: StackConfig, source: str, project_dir: Path | None = None, fleet: Fleet | None = None
) -> StackPlan:
    """Plan the queues, then size and place every job and run AIPerf's preflight on it, and on a fleet's
    manager place every job on each worker; :class:`ConfigError` on any problem (a preflight FAIL names its
    job, a job no worker could ever hold is one too)."""
    source_problems = kueue_source_problems(config)
    try:
        installs = install_problems(config, config.kueue.target(), project_dir or Path.cwd())
        queues = plan_queues(config, source, install_problems=installs)
    except ConfigError as exc:
        raise ConfigError(source, [*source_problems, *exc.problems]) from None
    if source_problems:
        raise ConfigError(source, source_problems)
    entries = expand_sweeps(config.jobs, config.sweeps, source)
    sizing = sizing_from_config(config.operator)
    report = check_jobs(entries, config, queues, sizing, effective_operator_env(config))
    checks = preflight.stack_checks(config, entries, queues.target)
    image = operator_image(config.operator)
    manager = fleet is not None and fleet.role == "manager"
    failed, job_warnings = operator_checks.job_problems_and_warnings(
        report.admissions, config, sizing, image, node_checks=not manager
    )
    failed = [
        *preflight.problems(checks, config, queues.target),
        *preflight.route_problems(config, entries, queues.target),
        *failed,
    ]
    problems = _merge(list(report.problems), failed)
    if problems:
        raise ConfigError(source, problems)
    placements = None
    fleet_warning = None
    if fleet is not None and manager:
        placements = place_jobs(entries, fleet, sizing, effective_operator_env(config), source)
        fleet_warning = dispatched_job_warning(entries)
    rbac = preflight.rbac_warning(config)
    memory = operator_checks.memory_estimation_warnings(report.admissions, sizing)
    warnings = (
        *_external_operator_warnings(config, sizing),
        *stack_warnings(config, queues, report),
        *priority_warnings(config),
        *[w for w in [default_class_warning(config, entries, queues.target)] if w],
        *preflight.route_warnings(config, queues.target),
        *preflight.warnings(checks),
        *job_warnings,
        *memory,
        *([rbac] if rbac else []),
        *([fleet_warning] if fleet_warning else []),
    )
    plan = StackPlan(config, queues, sizing, report, checks, warnings, fleet=fleet, placements=placements)
    if config.warnings == "error" and plan.warnings:
        raise ConfigError(
            source, [Problem("warnings", f"is error, and the plan warns: {warning}") for warning in plan.warnings]
        )
    return plan


def _merge(admission: list[Problem], failed: list[Problem]) -> list[Problem]:
    """Admission problems, each preflight FAIL in place of the admission problems at the same key
    (a missing LocalQueue): the operator fails such a job before Kueue ever sees it."""
    pending: dict[str, list[Problem]] = {}
    for p in failed:
        pending.setdefault(p.path, []).append(p)
    replaced = set(pending)
    out: list[Problem] = []
    for p in admission:
        if p.path in pending:
            out += pending.pop(p.path)
        elif p.path not in replaced:
            out.append(p)
    return out + [p for ps in pending.values() for p in ps]


def effective_operator_env(config: StackConfig) -> dict[str, str] | None:
    """The ``AIPERF_*`` env the operator runs with: what this program sets on the Deployment
    (``install: true``), the external operator's declared ``env``, or ``None`` when unknown."""
    op = config.operator
    if not op.install:
        return dict(op.env) if isinstance(op.env, dict) else None
    env = operator_env(op, default_queue(config), sizing_env(config))
    return {e["name"]: e["value"] for e in env}


def _external_operator_warnings(config: StackConfig, sizing: Sizing) -> list[str]:
    """What the plan can only assume about the operator: one it does not install, or an image
    that is not the release the plan models."""
    op = config.operator
    if op.image.tag is not None and op.aiperf_version not in (UNKNOWN, op.image.tag.removeprefix("v")):
        return [
            f"operator.image.tag: {op.image.tag!r} is not AIPerf {op.aiperf_version} (operator.aiperfVersion), whose "
            "defaults and rules the plan sizes and checks every job by; set aiperfVersion to the image's release, or "
            "drop image.tag to run the release's own image"
        ]
    if op.install or sizing.known:
        return []
    what = "release (operator.aiperfVersion: unknown)" if op.aiperf_version == UNKNOWN else "env (operator.env)"
    return [
        f"operator: the external operator's {what} is not declared, so every job's pods are sized with AIPerf "
        f"{sizing.version}'s defaults (worker pod {sizing.worker_pod.cpu} / {sizing.worker_pod.memory}) and may "
        "differ; declare operator.aiperfVersion and operator.env (kubectl set env deploy/<operator> --list) to "
        "make the admission proof exact"
    ]
