"""Kueue's flavor assigner: which ResourceFlavor (pool) each podSet of a Workload gets.

Upstream: kueue v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go

Kueue's own algorithm on an empty cluster, as :func:`aiperf_kueue.workload.admission.assign` runs it
for one job (kueue NOTES §3): which flavors a pod may use at all (taints, node labels), what
a podSet is charged, and where the podSets land, in order, with Kueue's reason for each flavor
it passes over.

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
  nodeSelector, affinity and tolerations (:class:`~aiperf_kueue.workload.placement.Placement`);
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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from aiperf_kueue.common import quantity
from aiperf_kueue.config import Pool, StackConfig, Taint, Toleration
from aiperf_kueue.queues.queue_plan import QueuePlan
from aiperf_kueue.upstream.kueue import KueueTarget
from aiperf_kueue.workload.job_shape import PodSet
from aiperf_kueue.workload.placement import Placement
from aiperf_kueue.workload.requests import resource_order

WhenCanBorrow = Literal["MayStopSearch", "TryNextFlavor"]

#: Taint effects Kueue checks when it picks a flavor (PreferNoSchedule only steers the scheduler).
CHECKED_TAINT_EFFECTS = ("NoSchedule", "NoExecute")


class Capacities:
    """:meth:`QueuePlan.max_capacity` of one plan, each (ClusterQueue, pool, resource) computed once.

    :meth:`QueuePlan.borrowable` sums over every other ClusterQueue of the cohort; recomputing it
    per job would make checking N jobs in C ClusterQueues O(N x C).
    :func:`aiperf_kueue.workload.admission.check_jobs` shares one.
    """

    def __init__(self, plan: QueuePlan) -> None:
        self.plan = plan
        self._max: dict[tuple[str, str, str], Fraction] = {}

    def max_capacity(self, cq: str, pool: str, resource: str) -> Fraction:
        """:meth:`QueuePlan.max_capacity` of ``cq`` for ``pool``/``resource``, cached."""
        key = (cq, pool, resource)
        found = self._max.get(key)
        if found is None:
            found = self._max[key] = self.plan.max_capacity(cq, pool, resource)
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


def charged(podset: PodSet, covers_pods: bool) -> dict[str, Fraction]:
    """What Kueue charges ``podset``: count × per-pod requests (zeros dropped), plus ``pods = count``
    when the ClusterQueue covers ``pods`` (``assignFlavors`` in ``flavorassigner.go``)."""
    out = {r: a for r, a in podset.total().items() if a}
    if covers_pods and podset.count:
        out["pods"] = out.get("pods", Fraction(0)) + podset.count
    return out


@dataclass(frozen=True)
class Placing:
    """Where podSets land, in order, up to the first that fits no flavor."""

    placed: tuple[PodSetAssignment, ...]
    usage: Mapping[str, Mapping[str, Fraction]]
    failed: int | None = None
    """Index of the podSet that fits no flavor (``None``: every podSet fits)."""
    reasons: tuple[str, ...] = ()
    """Kueue's reason per flavor tried for the failed podSet (skipped, or not enough quota)."""


def place(
    podsets: Sequence[PodSet],
    needs: Sequence[Mapping[str, Fraction]],
    pools: Sequence[str],
    cap: Mapping[str, Mapping[str, Fraction]],
    nominal: Mapping[str, Mapping[str, Fraction]],
    flavors: Flavors | None,
    when_can_borrow: WhenCanBorrow,
    target: KueueTarget,
) -> Placing:
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
                reasons += [insufficient(target, pool, r, before.get(r, Fraction(0)), need, cap) for r in over]
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
            return Placing(tuple(placed), usage, index, tuple(reasons))
        pool, borrows = chosen
        for r, a in need.items():
            usage.setdefault(pool, {})[r] = usage.get(pool, {}).get(r, Fraction(0)) + a
        placed.append(PodSetAssignment(ps.name, ps.count, pool, borrows))
    return Placing(tuple(placed), usage)


def amount_text(resource: str, amount: Fraction) -> str:
    """``amount`` of ``resource`` as Kueue writes it (``4``, ``600m``, ``5888Mi``)."""
    return str(quantity.canonical(resource, amount))


def insufficient(
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
            f"({amount_text(resource, before)}) + current podset request "
            f"({amount_text(resource, need[resource])}) > maximum capacity ({amount_text(resource, limit)})"
        )
    return (
        f"insufficient quota for {resource} in flavor {pool}, request > maximum capacity "
        f"({amount_text(resource, before + need[resource])} > {amount_text(resource, limit)})"
    )
