"""Whether each job of a stack can ever be admitted, and where Kueue would put it.

:func:`assign` gives one job's Workload its flavors as Kueue's flavor assigner does
(:mod:`aiperf_kueue.workload.flavor_assigner`: the rules), or says why it never fits and how to fix it
(:mod:`aiperf_kueue.workload.never_fits`). :func:`check_jobs` resolves every job of a stack (namespace,
LocalQueue, priority class), sizes it as the AIPerf operator does, assigns it, and reports every
job that could never run as a problem, and what is worth knowing as a warning.

The cluster is assumed empty: no other workload holds quota, nothing is preempted.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from aiperf_kueue.common.errors import Problem, key_path
from aiperf_kueue.config import ClusterQueue, StackConfig
from aiperf_kueue.config.expansion import JobEntry
from aiperf_kueue.queues.queue_plan import QueuePlan
from aiperf_kueue.upstream.kueue import DEFAULT_LOCAL_QUEUE
from aiperf_kueue.workload.credentials import credential_problems, credential_warnings, unresolved_variables
from aiperf_kueue.workload.flavor_assigner import Capacities, Flavors, PodSetAssignment, WhenCanBorrow, charged, place
from aiperf_kueue.workload.job_shape import JobShape, PodSet, job_shape
from aiperf_kueue.workload.never_fits import NoFit, more_quota, uncovered_message
from aiperf_kueue.workload.requests import SizingError, format_requests, resource_order
from aiperf_kueue.workload.sizing import Sizing


@dataclass(frozen=True)
class Assignment:
    """Kueue's flavor assignment of one job's Workload on an empty cluster."""

    cluster_queue: str
    """The ClusterQueue the job's LocalQueue points to."""

    pod_sets: tuple[PodSetAssignment, ...]
    """One entry per podSet, in order."""

    usage: Mapping[str, Mapping[str, Fraction]]
    """Requests charged per flavor and resource (all podSets on that flavor)."""

    fits: bool
    """Every podSet got a flavor: the job can be admitted once its quota is free."""

    borrowing: bool
    """It fits only by borrowing from the cohort (it may wait for, or be preempted by, the lenders)."""

    jobs_on_nominal: int | None
    """How many such jobs fit at once on nominal quota on the chosen flavors (0: only by
    borrowing); ``None`` when the job requests nothing (unlimited)."""

    error: str | None = None
    """Why the job can never be admitted (``None`` when it fits)."""

    requests: Mapping[str, Fraction] = field(default_factory=dict)
    """Everything Kueue charges the job, all podSets together: their pods' requests, plus
    ``pods`` (one per pod) when the ClusterQueue covers ``pods``. Zero amounts left out."""

    @property
    def flavors(self) -> tuple[str, ...]:
        """Distinct flavors used, in podSet order."""
        out: list[str] = []
        for ps in self.pod_sets:
            if ps.flavor is not None and ps.flavor not in out:
                out.append(ps.flavor)
        return tuple(out)


def assign(
    plan: QueuePlan,
    cq_name: str,
    podsets: Sequence[PodSet],
    *,
    when_can_borrow: WhenCanBorrow = "MayStopSearch",
    capacities: Capacities | None = None,
    flavors: Flavors | None = None,
    workers_per_pod: int | None = None,
) -> Assignment:
    """Assign flavors to ``podsets`` of one Workload in ClusterQueue ``cq_name``
    (:mod:`aiperf_kueue.workload.flavor_assigner`).

    ``when_can_borrow``: the ClusterQueue's ``flavorFungibility.whenCanBorrow``.
    ``capacities``: a cache of :func:`max_capacity` for ``plan``, shared between jobs.
    ``flavors``: the pools' nodeLabels, nodeTaints and tolerations (default: every flavor accepts every pod).
    ``workers_per_pod``: AIPerf workers per worker pod, so that a job that never fits is told how many
    workers would (default: the fix counts worker pods).
    """
    if capacities is None or capacities.plan is not plan:
        capacities = Capacities(plan)
    if cq_name not in plan.nominal:
        raise KeyError(f"unknown ClusterQueue {cq_name!r}; ClusterQueues: {', '.join(plan.nominal)}")
    pools = [p.name for p in plan.pools]
    needs = [charged(ps, "pods" in plan.covered_resources) for ps in podsets]
    totals: dict[str, Fraction] = {}
    for need in needs:
        for resource, amount in need.items():
            totals[resource] = totals.get(resource, Fraction(0)) + amount

    uncovered = [r for r in resource_order(totals) if r not in plan.covered_resources]
    if uncovered:
        return _failed(cq_name, podsets, totals, uncovered_message(cq_name, uncovered, totals))

    cap = {p: {r: capacities.max_capacity(cq_name, p, r) for r in totals} for p in pools}
    nominal = {p: {r: plan.nominal_quota(cq_name, p, r) for r in totals} for p in pools}
    placing = place(podsets, needs, pools, cap, nominal, flavors, when_can_borrow, plan.target)
    if placing.failed is not None:
        ps = podsets[placing.failed]
        skipped = flavors.skipped(ps.placement) if flavors is not None else {}
        eligible = [p for p in pools if p not in skipped]
        nofit = NoFit(
            cq_name,
            ps,
            needs[placing.failed],
            placing.placed,
            placing.reasons,
            totals,
            eligible,
            placing.usage,
            workers_per_pod,
            more_quota(
                podsets,
                needs,
                placing.failed,
                placing.usage,
                eligible,
                pools,
                cap,
                nominal,
                flavors,
                when_can_borrow,
                plan.target,
            ),
        )
        return _failed(cq_name, podsets, totals, nofit.message(cap, nominal, plan.in_cohort(cq_name), len(pools) > 1))
    placed, usage = placing.placed, placing.usage

    return Assignment(
        cluster_queue=cq_name,
        pod_sets=tuple(placed),
        usage=usage,
        fits=True,
        borrowing=any(ps.borrowing for ps in placed),
        jobs_on_nominal=_how_many(usage, nominal),
        requests=totals,
    )


def _failed(cq_name: str, podsets: Sequence[PodSet], totals: Mapping[str, Fraction], error: str) -> Assignment:
    return Assignment(
        cluster_queue=cq_name,
        pod_sets=tuple(PodSetAssignment(ps.name, ps.count, None) for ps in podsets),
        usage={},
        fits=False,
        borrowing=False,
        jobs_on_nominal=0,
        error=error,
        requests=dict(totals),
    )


def _how_many(usage: Mapping[str, Mapping[str, Fraction]], limit: Mapping[str, Mapping[str, Fraction]]) -> int | None:
    counts = [
        math.floor(limit[pool][r] / amount)
        for pool, amounts in usage.items()
        for r, amount in amounts.items()
        if amount
    ]
    return min(counts) if counts else None


# --------------------------------------------------------------------------- whole stacks


@dataclass(frozen=True)
class JobAdmission:
    """One job, its shape and its flavor assignment."""

    entry: JobEntry
    """The job (a ``jobs[]`` entry or a sweep point)."""

    cluster_queue: str
    """ClusterQueue of the job's namespace."""

    local_queue: str
    """LocalQueue written to ``spec.scheduling.queueName``."""

    shape: JobShape
    """Workers, pods and requests."""

    assignment: Assignment
    """Flavors on an empty cluster."""

    @property
    def message(self) -> str | None:
        """``jobs[3] latency-sweep-c128: needs ... ; ClusterQueue team-a can reach at most ...``, or ``None``."""
        if self.assignment.error is None:
            return None
        return f"{key_path(*self.entry.origin)} {self.entry.name}: {self.assignment.error}"


@dataclass(frozen=True)
class JobsReport:
    """:func:`check_jobs`' result."""

    admissions: tuple[JobAdmission, ...]
    """Jobs that could be resolved and sized, in config order (fitting or not)."""

    problems: tuple[Problem, ...] = field(default=())
    """Errors: unknown namespace/queue/priority class, operator sizing errors, jobs that never fit."""

    warnings: tuple[str, ...] = field(default=())
    """Things worth knowing: jobs that fit only by borrowing, requests that are uncertain."""


def check_jobs(
    entries: Sequence[JobEntry],
    config: StackConfig,
    plan: QueuePlan,
    sizing: Sizing,
    operator_env: Mapping[str, str] | None = None,
) -> JobsReport:
    """Resolve, size and place every job; every job that could never run is a problem.

    Each entry's namespace must be one of a ClusterQueue's ``namespaces``; its ``queue``
    (default: that namespace's ``localQueue``) must be a LocalQueue this program creates
    there; its ``priorityClass`` must be declared in ``priorityClasses``. Flavors are
    matched against the pods with the pools' nodeLabels, nodeTaints and tolerations. The
    operator (``sizing``, running with ``operator_env``; ``None``: unknown) must accept it.
    """
    owners: dict[str, tuple[ClusterQueue, list[str], WhenCanBorrow]] = {}
    for cq in config.queues.cluster_queues:
        ff = cq.flavor_fungibility
        try_next = ff is not None and ff.when_can_borrow == "TryNextFlavor"
        when: WhenCanBorrow = "TryNextFlavor" if try_next else "MayStopSearch"
        for ns in cq.namespaces:
            queues = [ns.local_queue] + ([DEFAULT_LOCAL_QUEUE] if ns.default_queue else [])
            owners[ns.name] = (cq, queues, when)
    priority_classes = {pc.name for pc in config.priority_classes}
    capacities = Capacities(plan)
    flavors = Flavors.of(config, plan.target)

    admissions: list[JobAdmission] = []
    problems: list[Problem] = []
    warnings: list[str] = []
    for entry in entries:
        where = entry.origin
        label = f"{key_path(*where)} {entry.name}"
        who = entry.sweep or entry.name  # a sweep's points share namespace, queue and priority class
        owner = owners.get(entry.namespace)
        if owner is None:
            problems.append(
                Problem(
                    key_path(*where, "namespace"),
                    f"{who}: namespace {entry.namespace!r} belongs to no ClusterQueue, so no LocalQueue "
                    "exists there and the job would stay Queued forever; list it in a ClusterQueue's namespaces",
                )
            )
            continue
        cq, local_queues, when = owner
        # The operator's env default, when set, is what an unlabelled job would get: name it explicitly.
        local_queue = entry.queue or config.operator.default_queue or local_queues[0]
        if local_queue not in local_queues:
            problems.append(
                Problem(
                    key_path(*where, "queue"),
                    f"{who}: no LocalQueue {local_queue!r} in namespace {entry.namespace!r} "
                    f"(LocalQueues there: {', '.join(local_queues)}); Kueue would keep the job pending with "
                    f'"LocalQueue {local_queue} doesn\'t exist"',
                )
            )
            continue
        if entry.priority_class is not None and entry.priority_class not in priority_classes:
            problems.append(
                Problem(
                    key_path(*where, "priorityClass"),
                    f"{who}: unknown WorkloadPriorityClass {entry.priority_class!r}; declared: "
                    f"{', '.join(sorted(priority_classes)) or 'none'} (aiperf-kueue:priorityClasses)",
                )
            )
            continue
        try:
            refused = [*credential_problems(entry.spec), *unresolved_variables(entry.spec.manifest(), operator_env)]
            if refused:
                raise refused[0]
            shape = job_shape(entry.spec, sizing)
        except SizingError as exc:
            problems.append(Problem(f"{key_path(*where)}.{exc.path}", operator_failure(entry.name, exc, sizing)))
            continue
        warnings += [f"{label}: {w}" for w in credential_warnings(entry.spec)]
        assignment = assign(
            plan,
            cq.name,
            shape.pod_sets,
            when_can_borrow=when,
            capacities=capacities,
            flavors=flavors,
            workers_per_pod=shape.workers_per_pod,
        )
        admission = JobAdmission(entry, cq.name, local_queue, shape, assignment)
        admissions.append(admission)
        warnings += [f"{label}: {w}" for w in shape.warnings]
        if assignment.error is not None:
            problems.append(Problem(key_path(*where), f"{entry.name}: {assignment.error}"))
            continue
        if assignment.borrowing:
            warnings.append(
                f"{label}: needs {format_requests(assignment.requests)}, more than ClusterQueue {cq.name}'s nominal "
                f"quota in flavor {', '.join(assignment.flavors)}; it runs only on quota borrowed from cohort "
                f"{config.queues.cohort_of(cq)!r} and waits while the lenders use it"
            )
        # Said once per sweep when the same for all its points (dict.fromkeys below drops repeats).
        owner_label = f"{key_path(*where)} {who}"
        if shape.resource_mode == "none":
            text = _no_requests_warning(cq.name, assignment)
            warnings.append(f"{owner_label if not assignment.requests else label}: {text}")
        if cq.stop_policy in ("Hold", "HoldAndDrain"):
            warnings.append(
                f"{owner_label}: ClusterQueue {cq.name} has stopPolicy {cq.stop_policy}: it admits nothing new "
                f"while stopPolicy is {cq.stop_policy}, so {'its jobs stay' if entry.sweep else 'the job stays'} "
                "pending until the stopPolicy is None again"
                + (
                    "; HoldAndDrain also evicts the workloads it had admitted"
                    if cq.stop_policy == "HoldAndDrain"
                    else ""
                )
            )
    # A sweep's resolution problem is the same for each of its points: say it once.
    return JobsReport(tuple(admissions), tuple(dict.fromkeys(problems)), tuple(dict.fromkeys(warnings)))


def _no_requests_warning(cq_name: str, assignment: Assignment) -> str:
    """What ``resourceMode: none`` means for admission: the job is outside the quota."""
    if not assignment.requests:
        return (
            f"resourceMode none: its pods request nothing, so Kueue admits it at once whenever ClusterQueue "
            f"{cq_name} is active, reserves no quota for it and assigns it no flavor (no pool's nodeSelector or "
            "tolerations are added to its pods); it bypasses the quota: nothing guarantees its pods room next "
            "to what others run"
        )
    return (
        f"resourceMode none: the operator's containers request no CPU or memory, so Kueue charges it only "
        f"{format_requests(assignment.requests)} (flavor {', '.join(assignment.flavors)}) and it bypasses the "
        "CPU and memory quota: nothing guarantees its pods room next to what others run"
    )


def operator_failure(job: str, exc: SizingError, sizing: Sizing) -> str:
    """A job the operator would fail: why, the operator's own message, and the fix."""
    if exc.operator is None:
        return f"{job}: {exc.message}"
    return (
        f"{job}: AIPerf {sizing.version} would fail the AIPerfJob (status.error {quoted(exc.operator)}); {exc.message}"
    )


def quoted(message: str) -> str:
    """The operator's message in double quotes on one line, escaped as a JSON string (newlines too)."""
    return json.dumps(message, ensure_ascii=False)
