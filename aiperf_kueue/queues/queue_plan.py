"""The quota plan of a stack, and the arithmetic on it.

:class:`QueuePlan` holds the exact quota of every ClusterQueue per flavor (pool) and resource,
as :func:`aiperf_kueue.queues.planner.plan_queues` computes it, and answers what Kueue derives from
it on an empty cluster: what a ClusterQueue lends, may borrow, and can ever hold. The tables
``plan.json`` shows (quotas, shares, limits, pool totals) are read from it here too.

Upstream: kueue v0.19.2 pkg/cache/scheduler/resource_node.go
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any

from aiperf_kueue.common import quantity
from aiperf_kueue.upstream.kueue import KueueTarget

#: Quota per ClusterQueue, per flavor (pool), per resource, exact.
Quotas = dict[str, dict[str, dict[str, Fraction]]]

#: How far from 100 a sum of shares may be and still count as 100. YAML and JSON hand shares
#: over as binary floats, so ``33.333333333333333`` three times arrives as 100.000000000000008
#: (and ``33.33333333333333`` as 99.99999999999999, which would leave one unit of every total
#: unassigned). The text as written is gone by then, so exact Decimal arithmetic cannot help.
SHARE_SLACK = Fraction(1, 10**9)


def unit_of(resource: str) -> Fraction:
    """The step quotas are apportioned in: 1m of CPU, 1Mi of bytes, 1 of anything else."""
    if resource == "cpu":
        return Fraction(1, 1000)
    if quantity.is_byte_resource(resource):
        return Fraction(quantity.MIB)
    return Fraction(1)


@dataclass(frozen=True)
class PoolTotal:
    """What one pool can hand out, per covered resource, after headroom."""

    name: str
    totals: dict[str, Fraction]
    gpu_resource: str | None


@dataclass(frozen=True)
class QueuePlan:
    """Everything the components need, decided and checked."""

    target: KueueTarget
    covered_resources: tuple[str, ...]
    pools: tuple[PoolTotal, ...]
    nominal: Quotas
    borrowing: Quotas
    lending: Quotas
    warnings: tuple[str, ...] = field(default=())
    parents: dict[str, str] = field(default_factory=dict)
    """The Cohort each ClusterQueue and each Cohort belongs to (absent: none, or a root Cohort).
    Names are unique across both kinds (the planner refuses a Cohort named like a ClusterQueue)."""
    cohorts: tuple[str, ...] = ()
    """Every Cohort of the stack, ``queues.cohorts`` in config order then ``queues.cohort`` if undeclared."""
    cohort_nominal: Quotas = field(default_factory=dict)
    """The Cohorts' own quotas (only those with ``share`` or ``nominalQuota``)."""
    cohort_borrowing: Quotas = field(default_factory=dict)
    cohort_lending: Quotas = field(default_factory=dict)
    _memo: dict[tuple[str, str, str, str], Fraction] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    def quota_table(self) -> dict[str, dict[str, dict[str, str | int]]]:
        """``{clusterQueue: {flavor: {resource: canonical quantity}}}``."""
        return _canonical(self.nominal, self.covered_resources)

    def pool_table(self) -> dict[str, dict[str, str | int]]:
        """``{pool: {resource: canonical total}}``."""
        return {p.name: {r: quantity.canonical(r, p.totals[r]) for r in self.covered_resources} for p in self.pools}

    def nominal_quota(self, cq: str, pool: str, resource: str) -> Fraction:
        """``cq``'s nominalQuota of ``pool``/``resource`` (0 where it has none)."""
        return self.nominal.get(cq, {}).get(pool, {}).get(resource, Fraction(0))

    # Kueue v0.19.2 pkg/cache/scheduler/resource_node.go on an empty cluster (no usage): a node's
    # SubtreeQuota is its own nominal quota plus what each child passes up (its SubtreeQuota minus
    # what it keeps, localQuota = SubtreeQuota − lendingLimit); potentialAvailable climbs to the root.

    def in_cohort(self, name: str) -> bool:
        """Whether the ClusterQueue or Cohort ``name`` has a parent Cohort to borrow from."""
        return name in self.parents

    def root(self, name: str) -> str:
        """The root Cohort above ``name`` (``name`` itself when it has no parent)."""
        seen = {name}
        while name in self.parents and self.parents[name] not in seen:  # the planner refuses cycles
            name = self.parents[name]
            seen.add(name)
        return name

    def children(self, cohort: str) -> list[str]:
        """The ClusterQueues and Cohorts whose parent is ``cohort``."""
        return [child for child, parent in self.parents.items() if parent == cohort]

    def _own(self, name: str, pool: str, resource: str) -> Fraction:
        table = self.cohort_nominal if name in self.cohorts else self.nominal
        return table.get(name, {}).get(pool, {}).get(resource, Fraction(0))

    def _limit(self, which: str, name: str, pool: str, resource: str) -> Fraction | None:
        if name in self.cohorts:
            table = self.cohort_borrowing if which == "borrowing" else self.cohort_lending
        else:
            table = self.borrowing if which == "borrowing" else self.lending
        return table.get(name, {}).get(pool, {}).get(resource)

    def subtree_quota(self, name: str, pool: str, resource: str) -> Fraction:
        """Kueue's ``SubtreeQuota`` of a ClusterQueue (its nominal quota) or a Cohort (its own quota
        plus what every child lends up)."""
        key = ("subtree", name, pool, resource)
        if key not in self._memo:
            total = self._own(name, pool, resource)
            if name in self.cohorts:
                for child in self.children(name):
                    total += self.subtree_quota(child, pool, resource) - self.local_quota(child, pool, resource)
            self._memo[key] = total
        return self._memo[key]

    def local_quota(self, name: str, pool: str, resource: str) -> Fraction:
        """Kueue's ``localQuota``: what a node keeps from its parent (SubtreeQuota − lendingLimit), else 0."""
        limit = self._limit("lending", name, pool, resource)
        if limit is None:
            return Fraction(0)
        return max(Fraction(0), self.subtree_quota(name, pool, resource) - limit)

    def lendable(self, cq: str, pool: str, resource: str) -> Fraction:
        """What ``cq`` (a ClusterQueue or a Cohort) lends its parent of ``pool``/``resource``: its
        SubtreeQuota minus what it keeps (all of it without a lendingLimit)."""
        return self.subtree_quota(cq, pool, resource) - self.local_quota(cq, pool, resource)

    def max_capacity(self, cq: str, pool: str, resource: str) -> Fraction:
        """Most of ``pool``/``resource`` ``cq`` can ever hold on an empty cluster (Kueue's
        ``potentialAvailable``): what it keeps plus what its parent can give, climbing to the root,
        capped at each level by that level's borrowingLimit."""
        key = ("potential", cq, pool, resource)
        if key not in self._memo:
            parent = self.parents.get(cq)
            if parent is None:
                found = self.subtree_quota(cq, pool, resource)
            else:
                found = self.local_quota(cq, pool, resource) + self.max_capacity(parent, pool, resource)
                limit = self._limit("borrowing", cq, pool, resource)
                if limit is not None:
                    found = min(self.subtree_quota(cq, pool, resource) + limit, found)
            self._memo[key] = found
        return self._memo[key]

    def borrowable(self, cq: str, pool: str, resource: str) -> Fraction:
        """Most ``cq`` can borrow of ``pool``/``resource`` on an empty cluster: :meth:`max_capacity`
        beyond its nominal quota (0 without a cohort)."""
        return self.max_capacity(cq, pool, resource) - self.nominal_quota(cq, pool, resource)

    def share_table(self) -> dict[str, dict[str, dict[str, int | float]]]:
        """``{clusterQueue: {flavor: {resource: percent of the pool's total}}}``, rounded to 0.01 %;
        resources the pool has none of are left out (no share of nothing)."""
        totals = {p.name: p.totals for p in self.pools}
        return {
            cq: {
                pool: {
                    r: percent(amounts[r], totals[pool][r])
                    for r in self.covered_resources
                    if r in amounts and totals[pool].get(r)
                }
                for pool, amounts in pools.items()
            }
            for cq, pools in self.nominal.items()
        }

    def cohort_table(self) -> dict[str, dict[str, dict[str, Any]]]:
        """The Cohort tree with its quotas computed down from the inventory: per Cohort its parent, its
        own nominalQuota and its SubtreeQuota (own + what its members lend up); per ClusterQueue in it, its
        parent and the most it can reach on an empty cluster (Kueue's potentialAvailable)."""
        order = self.covered_resources

        def table(of: Callable[[str, str, str], Fraction], name: str) -> dict[str, dict[str, str | int]]:
            return {pool.name: {r: quantity.canonical(r, of(name, pool.name, r)) for r in order} for pool in self.pools}

        cohorts = {
            name: {
                "parent": self.parents.get(name),
                "own": table(self._own, name),
                "subtree": table(self.subtree_quota, name),
                "borrowingLimits": _canonical(self.cohort_borrowing, order).get(name, {}),
                "lendingLimits": _canonical(self.cohort_lending, order).get(name, {}),
            }
            for name in self.cohorts
        }
        queues = {
            cq: {"parent": self.parents[cq], "reach": table(self.max_capacity, cq)}
            for cq in self.nominal
            if cq in self.parents
        }
        return {"cohorts": cohorts, "clusterQueues": queues}

    def limit_tables(self) -> dict[str, dict[str, dict[str, dict[str, str | int]]]]:
        """``{"borrowingLimits": ..., "lendingLimits": ...}``, each ``{clusterQueue: {flavor: {resource:
        quantity}}}`` for the limits that are set (unset: borrow without limit, lend everything)."""
        return {
            "borrowingLimits": _canonical(self.borrowing, self.covered_resources),
            "lendingLimits": _canonical(self.lending, self.covered_resources),
        }


def percent(part: Fraction, whole: Fraction) -> int | float:
    """``part`` as a percentage of ``whole``, rounded half-even to 0.01; an int when whole."""
    value = (Decimal(part.numerator * whole.denominator * 100) / Decimal(part.denominator * whole.numerator)).quantize(
        Decimal("0.01")
    )
    return int(value) if value == value.to_integral_value() else float(value)


def _canonical(quotas: Quotas, covered: Iterable[str]) -> dict[str, dict[str, dict[str, str | int]]]:
    order = list(covered)
    return {
        cq: {
            pool: {r: quantity.canonical(r, amounts[r]) for r in order if r in amounts}
            for pool, amounts in pools.items()
        }
        for cq, pools in quotas.items()
    }


def apportion(total_units: int, shares: list[Fraction]) -> list[int]:
    """Split ``total_units`` by percentage ``shares`` with the largest-remainder method.

    Hands out ``floor(total × Σshares / 100)`` units: exactly the total when the
    shares sum to 100. Shares within :data:`SHARE_SLACK` of 100 are scaled to sum to
    exactly 100 first. Remainder units go to the largest fractional parts, ties to the
    earlier share, so the result depends only on the config order.
    """
    share_sum = sum(shares, Fraction(0))
    if share_sum != 100 and abs(share_sum - 100) <= SHARE_SLACK:
        shares = [s * 100 / share_sum for s in shares]
        share_sum = Fraction(100)
    exact = [Fraction(total_units) * s / 100 for s in shares]
    target = math.floor(Fraction(total_units) * share_sum / 100)
    base = [math.floor(x) for x in exact]
    spare = target - sum(base)
    order = sorted(range(len(shares)), key=lambda i: (-(exact[i] - base[i]), i))
    for i in order[:spare]:
        base[i] += 1
    return base
