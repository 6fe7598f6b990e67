"""Why a job can never be admitted, and the fix: the messages of a Workload no flavor takes.

Upstream: kueue v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go (its pending messages)

A job never fits when it requests a resource its ClusterQueue does not cover, or when a podSet
fits no flavor even on an empty cluster with everything the cohort can lend. The message says
first what would fix it (fewer workers, or how much more quota in which flavor, proven by
running the flavor assigner again), then what the job needs and the ClusterQueue can reach,
then the ``Pending`` message Kueue would show.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from aiperf_kueue.common import quantity
from aiperf_kueue.upstream.kueue import KueueTarget
from aiperf_kueue.workload.flavor_assigner import Flavors, PodSetAssignment, WhenCanBorrow, amount_text, place
from aiperf_kueue.workload.job_shape import PodSet
from aiperf_kueue.workload.requests import format_requests, resource_order


def uncovered_message(cq_name: str, uncovered: Sequence[str], totals: Mapping[str, Fraction]) -> str:
    """A job requesting ``uncovered`` resources, which ClusterQueue ``cq_name`` does not cover: it would
    wait forever; the fix is to cover them or drop the request."""
    what = ", ".join(f"{r} {quantity.canonical(r, totals[r])}" for r in uncovered)
    first = uncovered[0]
    return (
        f"requests {what}, which ClusterQueue {cq_name} does not cover: it would wait forever with "
        f"'resource {first} unavailable in ClusterQueue'; add {', '.join(uncovered)} to "
        "queues.coveredResources (with the pools' extraResources) or drop the request"
    )


@dataclass(frozen=True)
class NoFit:
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
    """The flavor to grow and by how much, proven to admit the job (:func:`more_quota`)."""

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
            more = ", ".join(f"{r} +{amount_text(r, a)}" for r, a in missing.items())
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
                    f"{r} {amount_text(r, cap[pool][r])} (nominal {amount_text(r, nominal[pool][r])} + borrowable "
                    f"{amount_text(r, cap[pool][r] - nominal[pool][r])})"
                    for r in order
                )
            else:
                text = ", ".join(f"{r} {amount_text(r, cap[pool][r])}" for r in order)
            parts.append(f"{text} in flavor {pool}" if several_pools else text)
        reach = "; ".join(parts) + ("" if in_cohort else " (nominal, no cohort)")
        summary = f"needs {format_requests(self.totals)}; ClusterQueue {self.cq_name} can reach at most {reach}"
        earlier = [ps for ps in self.placed if ps.flavor is not None]
        if earlier:
            got = ", ".join(f"podSet {ps.name} gets flavor {ps.flavor}" for ps in earlier)
            summary += f"; {got}, then podSet {self.podset.name} ({format_requests(self.need)}) fits no flavor"
        return f"{self.fix(cap, in_cohort)}{summary}; {pending}"


def more_quota(
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
            if place(podsets, needs, pools, grown, grown_nominal, flavors, when_can_borrow, target).failed is None:
                return pool, more
    return None


def _grow(
    table: Mapping[str, Mapping[str, Fraction]], pool: str, more: Mapping[str, Fraction]
) -> dict[str, dict[str, Fraction]]:
    """``table`` (flavor → resource → amount) with ``more`` added in ``pool``."""
    return {p: {r: a + (more.get(r, Fraction(0)) if p == pool else 0) for r, a in v.items()} for p, v in table.items()}
