"""Kueue's flavor assignment for one AIPerfJob on an empty cluster.

Answers, before anything is applied: which ResourceFlavor (pool) each podSet of the
job's Workload gets, whether that needs borrowing, how many such jobs fit at once on
nominal quota, and which jobs could never be admitted (kueue NOTES §3).

The rules, as Kueue's flavor assigner applies them with one resource group covering
every resource (as the planner writes ClusterQueues):

- a podSet is charged its pods' requests (count × per-pod requests) and, when the
  ClusterQueue covers ``pods``, ``pods = count``;
- every resource a podSet requests must be covered by the ClusterQueue, else the
  Workload waits forever with ``resource X unavailable in ClusterQueue``;
- podSets are assigned in order (``controller``, then ``workers``), each to ONE flavor for
  all its resources, and never moved again to make room for a later podSet;
- a flavor is skipped when one of its ``nodeTaints`` with effect NoSchedule or NoExecute is
  tolerated by neither the pod's nor the flavor's tolerations, or when the pod's nodeSelector
  or required node affinity, compared only on the keys of the flavor's ``nodeLabels``, does
  not match those labels (``checkFlavorForPodSets``). Both pods carry the podTemplate's
  nodeSelector, affinity and tolerations (:class:`~aiperf_kueue.placement.Placement`);
- a podSet fits a flavor when, for every resource, the requests of the podSets already
  assigned to that flavor plus its own are at most the flavor's maximum capacity
  (:func:`max_capacity`);
- flavors are tried in pool order. The first flavor that fits on nominal quota wins; with
  the default ``flavorFungibility.whenCanBorrow: MayStopSearch`` (v1beta1 ``Borrow``) so does
  the first flavor that fits only by borrowing. With ``TryNextFlavor`` a later flavor that fits
  on nominal quota is preferred, and the first borrowing one is the fallback;
- a podSet requesting nothing gets no flavor and always fits (``resourceMode: none`` without
  covered ``pods``): Kueue looks for a flavor per requested resource, so with none it checks
  no flavor, reserves nothing and adds no flavor nodeSelector or tolerations to the pods.

The cluster is assumed empty: no other workload holds quota, nothing is preempted.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

from aiperf_kueue import quantity
from aiperf_kueue.config import ClusterQueue, Pool, StackConfig, Taint, Toleration
from aiperf_kueue.config.expansion import JobEntry
from aiperf_kueue.credentials import credential_problems, credential_warnings, unresolved_variables
from aiperf_kueue.errors import Problem, key_path
from aiperf_kueue.job_shape import JobShape, PodSet, job_shape
from aiperf_kueue.kueue import DEFAULT_LOCAL_QUEUE, KueueTarget
from aiperf_kueue.placement import Placement
from aiperf_kueue.queue_plan import QueuePlan
from aiperf_kueue.requests import SizingError, format_requests, resource_order
from aiperf_kueue.sizing import Sizing

WhenCanBorrow = Literal["MayStopSearch", "TryNextFlavor"]

#: Taint effects Kueue checks when it picks a flavor (PreferNoSchedule only steers the scheduler).
CHECKED_TAINT_EFFECTS = ("NoSchedule", "NoExecute")


class Capacities:
    """:meth:`QueuePlan.max_capacity` of one plan, each (ClusterQueue, pool, resource) computed once.

    :meth:`QueuePlan.borrowable` sums over every other ClusterQueue of the cohort; recomputing it
    per job would make checking N jobs in C ClusterQueues O(N x C). :func:`check_jobs` shares one.
    """

    def __init__(self, plan: QueuePlan, *, in_cohort: bool) -> None:
        self.plan = plan
        self.in_cohort = in_cohort
        self._max: dict[tuple[str, str, str], Fraction] = {}

    def max_capacity(self, cq: str, pool: str, resource: str) -> Fraction:
        """:meth:`QueuePlan.max_capacity` of ``cq`` for ``pool``/``resource``, cached."""
        key = (cq, pool, resource)
        found = self._max.get(key)
        if found is None:
            found = self._max[key] = self.plan.max_capacity(cq, pool, resource, in_cohort=self.in_cohort)
        return found


# --------------------------------------------------------------------------- flavor matching


@dataclass(frozen=True)
class Flavor:
    """One ResourceFlavor as Kueue's flavor assigner checks pods against it."""

    name: str
    """ResourceFlavor (pool) name."""

    node_labels: tuple[tuple[str, str], ...] = ()
    """``nodeLabels`` as sorted ``(key, value)`` pairs (none: the flavor matches every node)."""

    node_taints: tuple[Taint, ...] = ()
    """``nodeTaints``, in order."""

    tolerations: tuple[Toleration, ...] = ()
    """``tolerations`` Kueue adds to admitted pods; they count when checking ``nodeTaints``."""

    @classmethod
    def of(cls, pool: Pool) -> Flavor:
        """The ResourceFlavor the program writes for ``pool``."""
        return cls(
            pool.name,
            tuple(sorted(pool.node_labels.items())),
            tuple(pool.node_taints),
            tuple(pool.tolerations),
        )

    def mismatch(self, placement: Placement, label_keys: frozenset[str] | None = None) -> str | None:
        """Kueue's reason to skip this flavor for pods with ``placement``, or ``None`` when they may use it.

        The taint check comes first, as in Kueue. ``label_keys``: the keys the pod's nodeSelector
        and node affinity are compared on (default: this flavor's own ``nodeLabels`` keys).
        """
        tolerations = placement.tolerations + self.tolerations
        for taint in self.node_taints:
            if taint.effect in CHECKED_TAINT_EFFECTS and not any(t.tolerates(taint) for t in tolerations):
                return f"untolerated taint {taint.kueue_text()} in flavor {self.name}"
        labels = dict(self.node_labels)
        if not _matches_node_affinity(placement, labels, frozenset(labels) if label_keys is None else label_keys):
            return f"flavor {self.name} doesn't match node affinity"
        return None


def _matches_node_affinity(placement: Placement, labels: Mapping[str, str], keys: frozenset[str]) -> bool:
    """Kueue's ``flavorSelector`` matched against a node carrying exactly ``labels``.

    Only requirements on ``keys`` take part. A required-affinity term left with no requirement
    matches any flavor (the terms are ORed), so the affinity then reduces to the nodeSelector.
    """
    if any(labels.get(k) != v for k, v in placement.node_selector if k in keys):
        return False
    if placement.node_affinity is None:
        return True
    terms = []
    for term in placement.node_affinity:
        kept = [r for r in term if r.key in keys]
        if not kept:
            return True
        terms.append(kept)
    return any(all(r.matches(labels) for r in term) for term in terms)


class Flavors:
    """The ResourceFlavors of a stack, and which of them each distinct :class:`Placement` may use.

    Fleets share a handful of placements across thousands of jobs: the match is computed once per
    placement, so checking N jobs against F flavors costs O(N + distinct placements x F).

    ``union_label_keys``: compare on the ``nodeLabels`` keys of every flavor of the resource group
    instead of the flavor's own, as Kueue did before 0.17 (kubernetes-sigs/kueue#12449 changed it).
    """

    def __init__(self, flavors: Sequence[Flavor], *, union_label_keys: bool = False) -> None:
        self.flavors = tuple(flavors)
        self._keys = frozenset(k for f in flavors for k, _ in f.node_labels) if union_label_keys else None
        self._skipped: dict[Placement, Mapping[str, str]] = {}

    @classmethod
    def of(cls, config: StackConfig, target: KueueTarget) -> Flavors:
        """The flavors ``config``'s pools become, matched as Kueue ``target`` matches them."""
        return cls([Flavor.of(p) for p in config.inventory.pools], union_label_keys=target.version < (0, 17, 0))

    def skipped(self, placement: Placement) -> Mapping[str, str]:
        """Flavor name → Kueue's reason to skip it for pods with ``placement`` (cached per placement)."""
        found = self._skipped.get(placement)
        if found is None:
            reasons = {f.name: f.mismatch(placement, self._keys) for f in self.flavors}
            found = self._skipped[placement] = {name: r for name, r in reasons.items() if r is not None}
        return found


# --------------------------------------------------------------------------- assignment


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


def charged(podset: PodSet, covers_pods: bool) -> dict[str, Fraction]:
    """What Kueue charges ``podset``: count × per-pod requests (zeros dropped), plus ``pods = count``
    when the ClusterQueue covers ``pods`` (``assignFlavors`` in ``flavorassigner.go``)."""
    out = {r: a for r, a in podset.total().items() if a}
    if covers_pods and podset.count:
        out["pods"] = out.get("pods", Fraction(0)) + podset.count
    return out


def assign(
    plan: QueuePlan,
    cq_name: str,
    podsets: Sequence[PodSet],
    in_cohort: bool,
    *,
    when_can_borrow: WhenCanBorrow = "MayStopSearch",
    capacities: Capacities | None = None,
    flavors: Flavors | None = None,
    workers_per_pod: int | None = None,
) -> Assignment:
    """Assign flavors to ``podsets`` of one Workload in ClusterQueue ``cq_name`` (see module doc).

    ``in_cohort``: whether the stack has ``queues.cohort`` (else nothing can be borrowed).
    ``when_can_borrow``: the ClusterQueue's ``flavorFungibility.whenCanBorrow``.
    ``capacities``: a cache of :func:`max_capacity` for ``plan`` and ``in_cohort``, shared between jobs.
    ``flavors``: the pools' nodeLabels, nodeTaints and tolerations (default: every flavor accepts every pod).
    ``workers_per_pod``: AIPerf workers per worker pod, so that a job that never fits is told how many
    workers would (default: the fix counts worker pods).
    """
    if capacities is None or capacities.plan is not plan or capacities.in_cohort != in_cohort:
        capacities = Capacities(plan, in_cohort=in_cohort)
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
        what = ", ".join(f"{r} {quantity.canonical(r, totals[r])}" for r in uncovered)
        first = uncovered[0]
        return _failed(
            cq_name,
            podsets,
            totals,
            f"requests {what}, which ClusterQueue {cq_name} does not cover: it would wait forever with "
            f"'resource {first} unavailable in ClusterQueue'; add {', '.join(uncovered)} to "
            "queues.coveredResources (with the pools' extraResources) or drop the request",
        )

    cap = {p: {r: capacities.max_capacity(cq_name, p, r) for r in totals} for p in pools}
    nominal = {p: {r: plan.nominal_quota(cq_name, p, r) for r in totals} for p in pools}
    placing = _place(podsets, needs, pools, cap, nominal, flavors, when_can_borrow, plan.target)
    if placing.failed is not None:
        ps = podsets[placing.failed]
        skipped = flavors.skipped(ps.placement) if flavors is not None else {}
        eligible = [p for p in pools if p not in skipped]
        nofit = _NoFit(
            cq_name,
            ps,
            needs[placing.failed],
            placing.placed,
            placing.reasons,
            totals,
            eligible,
            placing.usage,
            workers_per_pod,
            _more_quota(
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
        return _failed(cq_name, podsets, totals, nofit.message(cap, nominal, in_cohort, len(pools) > 1))
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


@dataclass(frozen=True)
class _Placing:
    """Where podSets land, in order, up to the first that fits no flavor."""

    placed: tuple[PodSetAssignment, ...]
    usage: Mapping[str, Mapping[str, Fraction]]
    failed: int | None = None
    """Index of the podSet that fits no flavor (``None``: every podSet fits)."""
    reasons: tuple[str, ...] = ()
    """Kueue's reason per flavor tried for the failed podSet (skipped, or not enough quota)."""


def _place(
    podsets: Sequence[PodSet],
    needs: Sequence[Mapping[str, Fraction]],
    pools: Sequence[str],
    cap: Mapping[str, Mapping[str, Fraction]],
    nominal: Mapping[str, Mapping[str, Fraction]],
    flavors: Flavors | None,
    when_can_borrow: WhenCanBorrow,
    target: KueueTarget,
) -> _Placing:
    """Kueue's flavor assigner over ``podsets`` with per-flavor ``cap`` and ``nominal`` (see module doc)."""
    usage: dict[str, dict[str, Fraction]] = {}
    placed: list[PodSetAssignment] = []
    for index, (ps, need) in enumerate(zip(podsets, needs, strict=True)):
        if not need:
            placed.append(PodSetAssignment(ps.name, ps.count, None))
            continue
        skipped = flavors.skipped(ps.placement) if flavors is not None else {}
        reasons: list[str] = []
        chosen: tuple[str, bool] | None = None
        fallback: str | None = None
        for pool in pools:
            if pool in skipped:
                reasons.append(skipped[pool])
                continue
            before = usage.get(pool, {})
            after = {r: before.get(r, Fraction(0)) + a for r, a in need.items()}
            over = [r for r in resource_order(need) if after[r] > cap[pool][r]]
            if over:
                reasons += [_insufficient(target, pool, r, before.get(r, Fraction(0)), need, cap) for r in over]
                continue
            if all(after[r] <= nominal[pool][r] for r in need):
                chosen = (pool, False)
                break
            if when_can_borrow == "MayStopSearch":
                chosen = (pool, True)
                break
            fallback = fallback or pool
        if chosen is None and fallback is not None:
            chosen = (fallback, True)
        if chosen is None:
            return _Placing(tuple(placed), usage, index, tuple(reasons))
        pool, borrows = chosen
        for r, a in need.items():
            usage.setdefault(pool, {})[r] = usage.get(pool, {}).get(r, Fraction(0)) + a
        placed.append(PodSetAssignment(ps.name, ps.count, pool, borrows))
    return _Placing(tuple(placed), usage)


def _more_quota(
    podsets: Sequence[PodSet],
    needs: Sequence[Mapping[str, Fraction]],
    failed: int,
    usage: Mapping[str, Mapping[str, Fraction]],
    eligible: Sequence[str],
    pools: Sequence[str],
    cap: Mapping[str, Mapping[str, Fraction]],
    nominal: Mapping[str, Mapping[str, Fraction]],
    flavors: Flavors | None,
    when_can_borrow: WhenCanBorrow,
    target: KueueTarget,
) -> tuple[str, Mapping[str, Fraction]] | None:
    """A flavor and the extra nominal quota there that is proven to admit the job (``None``: none found).

    Per flavor in the order Kueue tries them, two candidates: what the failed podSet lacks there
    next to the podSets already on it, then what the whole job lacks there (an earlier podSet may
    move to the flavor that grows and take the room). Each is kept only if the assignment, run again with it, fits:
    a fix that merely moves the failure would be a wrong fix. Raising a ClusterQueue's nominalQuota
    by X raises its maximum capacity by X too (what it may borrow does not depend on its own quota).
    """
    need = needs[failed]
    for pool in eligible:
        before = usage.get(pool, {})
        job: dict[str, Fraction] = {}
        for ps, amounts in zip(podsets, needs, strict=True):
            if flavors is None or pool not in flavors.skipped(ps.placement):
                for r, a in amounts.items():
                    job[r] = job.get(r, Fraction(0)) + a
        podset_short = {
            r: before.get(r, Fraction(0)) + need[r] - cap[pool][r]
            for r in resource_order(need)
            if before.get(r, Fraction(0)) + need[r] > cap[pool][r]
        }
        job_short = {r: job[r] - cap[pool][r] for r in resource_order(job) if job[r] > cap[pool][r]}
        for more in (podset_short, job_short):
            if not more:
                continue
            grown, grown_nominal = _grow(cap, pool, more), _grow(nominal, pool, more)
            if _place(podsets, needs, pools, grown, grown_nominal, flavors, when_can_borrow, target).failed is None:
                return pool, more
    return None


def _grow(
    table: Mapping[str, Mapping[str, Fraction]], pool: str, more: Mapping[str, Fraction]
) -> dict[str, dict[str, Fraction]]:
    """``table`` (flavor → resource → amount) with ``more`` added in ``pool``."""
    return {p: {r: a + (more.get(r, Fraction(0)) if p == pool else 0) for r, a in v.items()} for p, v in table.items()}


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


def _q(resource: str, amount: Fraction) -> str:
    return str(quantity.canonical(resource, amount))


def _insufficient(
    target: KueueTarget,
    pool: str,
    resource: str,
    before: Fraction,
    need: Mapping[str, Fraction],
    cap: Mapping[str, Mapping[str, Fraction]],
) -> str:
    """Kueue's ``fitsResourceQuota`` reason for one resource of one flavor (its form changed in 0.15)."""
    limit = cap[pool][resource]
    if target.version >= (0, 15, 0):
        return (
            f"insufficient quota for {resource} in flavor {pool}, previously considered podsets requests "
            f"({_q(resource, before)}) + current podset request ({_q(resource, need[resource])}) > maximum "
            f"capacity ({_q(resource, limit)})"
        )
    return (
        f"insufficient quota for {resource} in flavor {pool}, request > maximum capacity "
        f"({_q(resource, before + need[resource])} > {_q(resource, limit)})"
    )


@dataclass(frozen=True)
class _NoFit:
    """A podSet no flavor takes, and what the assignment had done before it."""

    cq_name: str
    podset: PodSet
    need: Mapping[str, Fraction]
    placed: Sequence[PodSetAssignment]
    reasons: Sequence[str]
    """Kueue's reason per flavor tried (skipped, or not enough quota)."""
    totals: Mapping[str, Fraction]
    eligible: Sequence[str]
    """The flavors the pods may use at all (not skipped for taints or node affinity)."""
    usage: Mapping[str, Mapping[str, Fraction]]
    """What the earlier podSets take per flavor."""
    workers_per_pod: int | None = None
    more: tuple[str, Mapping[str, Fraction]] | None = None
    """The flavor to grow and by how much, proven to admit the job (:func:`_more_quota`)."""

    def _room(self, cap: Mapping[str, Mapping[str, Fraction]], pool: str) -> int:
        """How many of this podSet's pods fit in ``pool`` after the earlier podSets."""
        per_pod = {r: a / self.podset.count for r, a in self.need.items() if a}
        left = {r: cap[pool][r] - self.usage.get(pool, {}).get(r, Fraction(0)) for r in per_pod}
        return max(0, min((math.floor(left[r] / per_pod[r]) for r in per_pod), default=0))

    def fix(self, cap: Mapping[str, Mapping[str, Fraction]], in_cohort: bool) -> str:
        """The fix, first, with its ``"; "``: how many fewer workers would fit, or how much more quota
        this needs (``""`` when no quota in one flavor is proven to admit it and fewer workers do not help)."""
        quota = None
        if self.more is not None:
            pool, missing = self.more
            more = ", ".join(f"{r} +{_q(r, a)}" for r, a in missing.items())
            where = "nominalQuota, or more to borrow in its cohort" if in_cohort else "nominalQuota"
            quota = f"give ClusterQueue {self.cq_name} {more} in flavor {pool} ({where})"
        room = max(self._room(cap, p) for p in self.eligible)
        if self.podset.name != "workers" or room == 0 or self.podset.count <= 1:
            return f"fix: {quota}; " if quota else ""
        if self.workers_per_pod:
            fewer = (
                f"run at most {room * self.workers_per_pod} workers ({room} of its {self.podset.count} worker pods, "
                f"{self.workers_per_pod} workers each): lower the concurrency"
            )
        else:
            fewer = f"run at most {room} of its {self.podset.count} worker pods: lower the concurrency"
        return f"fix: {fewer}, or {quota}; " if quota else f"fix: {fewer}; "

    def message(
        self,
        cap: Mapping[str, Mapping[str, Fraction]],
        nominal: Mapping[str, Mapping[str, Fraction]],
        in_cohort: bool,
        several_pools: bool,
    ) -> str:
        """A readable summary, then the Workload's ``Pending`` message Kueue would show (sorted as Kueue sorts)."""
        kueue = f"couldn't assign flavors to pod set {self.podset.name}: {', '.join(sorted(self.reasons))}"
        pending = f'Kueue would keep it pending with "{kueue}"'
        if not self.eligible:
            return (
                f"its pods' nodeSelector, affinity and tolerations (spec.podTemplate) match no flavor of "
                f"ClusterQueue {self.cq_name} (the pools' nodeLabels and nodeTaints); {pending}"
            )
        order = resource_order(self.totals)
        parts = []
        for pool in self.eligible:
            if in_cohort:
                text = ", ".join(
                    f"{r} {_q(r, cap[pool][r])} (nominal {_q(r, nominal[pool][r])} + borrowable "
                    f"{_q(r, cap[pool][r] - nominal[pool][r])})"
                    for r in order
                )
            else:
                text = ", ".join(f"{r} {_q(r, cap[pool][r])}" for r in order)
            parts.append(f"{text} in flavor {pool}" if several_pools else text)
        reach = "; ".join(parts) + ("" if in_cohort else " (nominal, no cohort)")
        summary = f"needs {format_requests(self.totals)}; ClusterQueue {self.cq_name} can reach at most {reach}"
        earlier = [ps for ps in self.placed if ps.flavor is not None]
        if earlier:
            got = ", ".join(f"podSet {ps.name} gets flavor {ps.flavor}" for ps in earlier)
            summary += f"; {got}, then podSet {self.podset.name} ({format_requests(self.need)}) fits no flavor"
        return f"{self.fix(cap, in_cohort)}{summary}; {pending}"


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
    in_cohort = config.queues.cohort is not None
    capacities = Capacities(plan, in_cohort=in_cohort)
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
            in_cohort,
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
                f"{config.queues.cohort!r} and waits while the lenders use it"
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
