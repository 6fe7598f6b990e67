"""Kueue's flavor assignment for one AIPerfJob on an empty cluster.

Answers, before anything is applied: which ResourceFlavor (pool) each podSet of the
job's Workload gets, whether that needs borrowing, how many such jobs fit at once on
nominal quota, and which jobs could never be admitted (kueue NOTES §3).

The rules, as Kueue's flavor assigner applies them with one resource group covering
every resource (as the planner writes ClusterQueues):

- every resource a podSet requests must be covered by the ClusterQueue, else the
  Workload waits forever with ``resource X unavailable in ClusterQueue``;
- podSets are assigned in order (``controller``, then ``workers``), each to ONE flavor for
  all its resources. A podSet fits a flavor when, for every resource, the requests of the
  podSets already assigned to that flavor plus its own (count × per-pod requests) are at
  most the flavor's maximum capacity (:func:`max_capacity`);
- flavors are tried in pool order. The first flavor that fits on nominal quota wins; with
  the default ``flavorFungibility.whenCanBorrow: MayStopSearch`` (v1beta1 ``Borrow``) so does
  the first flavor that fits only by borrowing. With ``TryNextFlavor`` a later flavor that fits
  on nominal quota is preferred, and the first borrowing one is the fallback;
- a podSet requesting nothing gets no flavor and always fits (``resourceMode: none``).

The cluster is assumed empty: no other workload holds quota, nothing is preempted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

from aiperf_kueue import quantity
from aiperf_kueue.config import StackConfig
from aiperf_kueue.config.jobs import JobEntry
from aiperf_kueue.errors import Problem, key_path
from aiperf_kueue.kueue import DEFAULT_LOCAL_QUEUE
from aiperf_kueue.planner import QueuePlan
from aiperf_kueue.sizing import (
    DEFAULT_WORKERS_PER_POD,
    JobShape,
    PodSet,
    Sizing,
    SizingError,
    format_requests,
    job_shape,
    resource_order,
)

WhenCanBorrow = Literal["MayStopSearch", "TryNextFlavor"]


def _quota(quotas: Mapping[str, Mapping[str, Mapping[str, Fraction]]], cq: str, pool: str, resource: str) -> Fraction:
    return quotas.get(cq, {}).get(pool, {}).get(resource, Fraction(0))


def lendable(plan: QueuePlan, cq: str, pool: str, resource: str) -> Fraction:
    """What ``cq`` lends its cohort of ``pool``/``resource``: its lendingLimit, else all its nominal quota."""
    if pool in plan.lending.get(cq, {}) and resource in plan.lending[cq][pool]:
        return plan.lending[cq][pool][resource]
    return _quota(plan.nominal, cq, pool, resource)


def borrowable(plan: QueuePlan, cq: str, pool: str, resource: str, *, in_cohort: bool) -> Fraction:
    """Most ``cq`` can borrow of ``pool``/``resource`` on an empty cluster.

    0 without a cohort. In the cohort: what the other ClusterQueues lend (Σ lendingLimit,
    else nominal), capped by ``cq``'s borrowingLimit where it sets one. The Cohort object
    itself holds no quota in the stacks this program writes.
    """
    if not in_cohort:
        return Fraction(0)
    others = sum((lendable(plan, other, pool, resource) for other in plan.nominal if other != cq), Fraction(0))
    limits = plan.borrowing.get(cq, {}).get(pool, {})
    return min(others, limits[resource]) if resource in limits else others


def max_capacity(plan: QueuePlan, cq: str, pool: str, resource: str, *, in_cohort: bool) -> Fraction:
    """Most of ``pool``/``resource`` ``cq`` can ever hold: its nominal quota + :func:`borrowable`."""
    return _quota(plan.nominal, cq, pool, resource) + borrowable(plan, cq, pool, resource, in_cohort=in_cohort)


class Capacities:
    """:func:`max_capacity` of one plan, each (ClusterQueue, pool, resource) computed once.

    :func:`borrowable` sums over every other ClusterQueue of the cohort; recomputing it per
    job would make checking N jobs in C ClusterQueues O(N x C). :func:`check_jobs` shares one.
    """

    def __init__(self, plan: QueuePlan, *, in_cohort: bool) -> None:
        self.plan = plan
        self.in_cohort = in_cohort
        self._max: dict[tuple[str, str, str], Fraction] = {}

    def max_capacity(self, cq: str, pool: str, resource: str) -> Fraction:
        """:func:`max_capacity` of ``cq`` for ``pool``/``resource``, cached."""
        key = (cq, pool, resource)
        found = self._max.get(key)
        if found is None:
            found = self._max[key] = max_capacity(self.plan, cq, pool, resource, in_cohort=self.in_cohort)
        return found


@dataclass(frozen=True)
class PodSetAssignment:
    """Where one podSet lands."""

    name: str
    """``controller`` or ``workers``."""

    count: int
    """Pods in the podSet."""

    flavor: str | None
    """The ResourceFlavor (pool) it gets; ``None`` when it requests nothing or fits nowhere."""

    borrowing: bool = False
    """Its flavor's usage (with earlier podSets) exceeds the nominal quota there."""


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

    jobs_at_max_capacity: int | None
    """The same with everything borrowable borrowed; ``None`` when the job requests nothing."""

    error: str | None = None
    """Why the job can never be admitted (``None`` when it fits)."""

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
    in_cohort: bool,
    *,
    when_can_borrow: WhenCanBorrow = "MayStopSearch",
    capacities: Capacities | None = None,
) -> Assignment:
    """Assign flavors to ``podsets`` of one Workload in ClusterQueue ``cq_name`` (see module doc).

    ``in_cohort``: whether the stack has ``queues.cohort`` (else nothing can be borrowed).
    ``when_can_borrow``: the ClusterQueue's ``flavorFungibility.whenCanBorrow``.
    ``capacities``: a cache of :func:`max_capacity` for ``plan`` and ``in_cohort``, shared between jobs.
    """
    if capacities is None or capacities.plan is not plan or capacities.in_cohort != in_cohort:
        capacities = Capacities(plan, in_cohort=in_cohort)
    if cq_name not in plan.nominal:
        raise KeyError(f"unknown ClusterQueue {cq_name!r}; ClusterQueues: {', '.join(plan.nominal)}")
    pools = [p.name for p in plan.pools]
    totals: dict[str, Fraction] = {}
    for ps in podsets:
        for resource, amount in ps.total().items():
            if amount:
                totals[resource] = totals.get(resource, Fraction(0)) + amount

    uncovered = [r for r in resource_order(totals) if r not in plan.covered_resources]
    if uncovered:
        what = ", ".join(f"{r} {quantity.canonical(r, totals[r])}" for r in uncovered)
        first = uncovered[0]
        return _failed(
            cq_name,
            podsets,
            f"requests {what}, which ClusterQueue {cq_name} does not cover: it would wait forever with "
            f"'resource {first} unavailable in ClusterQueue'; add {', '.join(uncovered)} to "
            "queues.coveredResources (with the pools' extraResources) or drop the request",
        )

    cap = {p: {r: capacities.max_capacity(cq_name, p, r) for r in totals} for p in pools}
    nominal = {p: {r: _quota(plan.nominal, cq_name, p, r) for r in totals} for p in pools}
    usage: dict[str, dict[str, Fraction]] = {}
    placed: list[PodSetAssignment] = []
    for ps in podsets:
        need = {r: a for r, a in ps.total().items() if a}
        if not need:
            placed.append(PodSetAssignment(ps.name, ps.count, None))
            continue
        chosen: tuple[str, bool] | None = None
        fallback: str | None = None
        for pool in pools:
            after = {r: usage.get(pool, {}).get(r, Fraction(0)) + a for r, a in need.items()}
            if all(after[r] <= nominal[pool][r] for r in need):
                chosen = (pool, False)
                break
            if all(after[r] <= cap[pool][r] for r in need):
                if when_can_borrow == "MayStopSearch":
                    chosen = (pool, True)
                    break
                fallback = fallback or pool
        if chosen is None and fallback is not None:
            chosen = (fallback, True)
        if chosen is None:
            return _failed(cq_name, podsets, _no_fit(plan, cq_name, totals, pools, cap, nominal, in_cohort))
        pool, borrows = chosen
        for r, a in need.items():
            usage.setdefault(pool, {})[r] = usage.get(pool, {}).get(r, Fraction(0)) + a
        placed.append(PodSetAssignment(ps.name, ps.count, pool, borrows))

    return Assignment(
        cluster_queue=cq_name,
        pod_sets=tuple(placed),
        usage=usage,
        fits=True,
        borrowing=any(ps.borrowing for ps in placed),
        jobs_on_nominal=_how_many(usage, nominal),
        jobs_at_max_capacity=_how_many(usage, cap),
    )


def _failed(cq_name: str, podsets: Sequence[PodSet], error: str) -> Assignment:
    return Assignment(
        cluster_queue=cq_name,
        pod_sets=tuple(PodSetAssignment(ps.name, ps.count, None) for ps in podsets),
        usage={},
        fits=False,
        borrowing=False,
        jobs_on_nominal=0,
        jobs_at_max_capacity=0,
        error=error,
    )


def _how_many(usage: Mapping[str, Mapping[str, Fraction]], limit: Mapping[str, Mapping[str, Fraction]]) -> int | None:
    counts = [
        math.floor(limit[pool][r] / amount)
        for pool, amounts in usage.items()
        for r, amount in amounts.items()
        if amount
    ]
    return min(counts) if counts else None


def _no_fit(
    plan: QueuePlan,
    cq_name: str,
    totals: Mapping[str, Fraction],
    pools: list[str],
    cap: Mapping[str, Mapping[str, Fraction]],
    nominal: Mapping[str, Mapping[str, Fraction]],
    in_cohort: bool,
) -> str:
    order = resource_order(totals)

    def q(resource: str, amount: Fraction) -> str:
        return str(quantity.canonical(resource, amount))

    needs = ", ".join(f"{r} {q(r, totals[r])}" for r in order)
    parts = []
    for pool in pools:
        if in_cohort:
            text = ", ".join(
                f"{r} {q(r, cap[pool][r])} (nominal {q(r, nominal[pool][r])} + borrowable "
                f"{q(r, cap[pool][r] - nominal[pool][r])})"
                for r in order
            )
        else:
            text = ", ".join(f"{r} {q(r, cap[pool][r])}" for r in order)
        parts.append(text if len(pools) == 1 else f"{text} in flavor {pool}")
    reach = "; ".join(parts) + ("" if in_cohort else " (nominal, no cohort)")
    return f"needs {needs} in one flavor; ClusterQueue {cq_name} can reach at most {reach}"


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
    default_workers_per_pod: int = DEFAULT_WORKERS_PER_POD,
) -> JobsReport:
    """Resolve, size and place every job; every job that could never run is a problem.

    Each entry's namespace must be one of a ClusterQueue's ``namespaces``; its ``queue``
    (default: that namespace's ``localQueue``) must be a LocalQueue this program creates
    there; its ``priorityClass`` must be declared in ``priorityClasses``.
    """
    owners: dict[str, tuple[str, list[str], WhenCanBorrow]] = {}
    for cq in config.queues.cluster_queues:
        ff = cq.flavor_fungibility
        try_next = ff is not None and ff.when_can_borrow == "TryNextFlavor"
        when: WhenCanBorrow = "TryNextFlavor" if try_next else "MayStopSearch"
        for ns in cq.namespaces:
            queues = [ns.local_queue] + ([DEFAULT_LOCAL_QUEUE] if ns.default_queue else [])
            owners[ns.name] = (cq.name, queues, when)
    priority_classes = {pc.name for pc in config.priority_classes}
    in_cohort = config.queues.cohort is not None
    capacities = Capacities(plan, in_cohort=in_cohort)

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
        cq_name, local_queues, when = owner
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
            shape = job_shape(entry.spec, sizing, default_workers_per_pod)
        except SizingError as exc:
            problems.append(Problem(f"{key_path(*where)}.{exc.path}", f"{entry.name}: {exc.message}"))
            continue
        assignment = assign(plan, cq_name, shape.pod_sets, in_cohort, when_can_borrow=when, capacities=capacities)
        admission = JobAdmission(entry, cq_name, local_queue, shape, assignment)
        admissions.append(admission)
        warnings += [f"{label}: {w}" for w in shape.warnings]
        if assignment.error is not None:
            problems.append(Problem(key_path(*where), f"{entry.name}: {assignment.error}"))
        elif assignment.borrowing:
            warnings.append(
                f"{label}: needs {format_requests(shape.totals)}, more than ClusterQueue {cq_name}'s nominal quota "
                f"in flavor {', '.join(assignment.flavors)}; it runs only on quota borrowed from cohort "
                f"{config.queues.cohort!r} and waits while the lenders use it"
            )
    # A sweep's resolution problem is the same for each of its points: say it once.
    return JobsReport(tuple(admissions), tuple(dict.fromkeys(problems)), tuple(warnings))
