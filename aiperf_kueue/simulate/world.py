"""The ClusterQueues and Workloads of a planned stack, and the quota arithmetic Kueue's cache does on them.

Upstream: kueue v0.19.2 pkg/cache/scheduler/resource_node.go, pkg/cache/scheduler/fair_sharing.go

Amounts are integers in milli-units of each resource (``1`` CPU is 1000, ``1Mi`` is 1048576000),
so that the arithmetic is exact and fast. A flavor-resource pair is ``(flavor, resource)``.
"""

# Kueue v0.19.2, pkg/cache/scheduler/resource_node.go: available, potentialAvailable, addUsage/removeUsage
# climbing the Cohort tree, and each Cohort's SubtreeQuota (accumulateFromChild); one flat cohort is a tree of one.
# Kueue v0.19.2, pkg/cache/scheduler/fair_sharing.go: dominantResourceShare of a ClusterQueue or a Cohort.

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from aiperf_kueue.common import quantity
from aiperf_kueue.config import StackConfig
from aiperf_kueue.config.expansion import JobEntry
from aiperf_kueue.plan.stack_plan import StackPlan
from aiperf_kueue.workload.flavor_assigner import Flavors, charged
from aiperf_kueue.workload.placement import Placement

FR = tuple[str, str]
"""``(flavor, resource)``."""

#: Seconds one request of a ``concurrency`` phase is assumed to take when estimating a run.
DEFAULT_REQUEST_SECONDS = 1.0


def milli(amount: Fraction) -> int:
    """``amount`` in milli-units, rounded up (Kueue rounds requests up to its own units)."""
    return math.ceil(amount * 1000)


def unmilli(resource: str, amount: int) -> str:
    """Milli-units back to the quantity Kueue writes (``4``, ``500m``, ``2Gi``)."""
    return str(quantity.canonical(resource, Fraction(amount, 1000)))


@dataclass
class SimClusterQueue:
    """One ClusterQueue as the scheduler sees it."""

    name: str
    cohort: str | None
    flavors: tuple[str, ...]
    resources: tuple[str, ...]
    nominal: dict[FR, int]
    borrowing_limit: dict[FR, int]
    lending_limit: dict[FR, int]
    within_cluster_queue: str = "Never"
    reclaim_within_cohort: str = "Never"
    borrow_within_cohort: str = "Never"
    max_priority_threshold: int | None = None
    queueing_strategy: str = "BestEffortFIFO"
    when_can_borrow: str = "MayStopSearch"
    when_can_preempt: str = "TryNextFlavor"
    preference: str | None = None
    weight: float = 1.0
    stop_policy: str = "None"

    def guaranteed(self, fr: FR) -> int:
        """What this queue keeps for itself: nominal − lendingLimit, else 0 (Kueue's ``localQuota``)."""
        if fr in self.lending_limit:
            return self.nominal.get(fr, 0) - self.lending_limit[fr]
        return 0

    @property
    def can_preempt(self) -> bool:
        """Some preemption policy is on: a job that does not fit may still be admitted by preempting."""
        return self.within_cluster_queue != "Never" or self.reclaim_within_cohort != "Never"


@dataclass
class SimCohort:
    """One Cohort of the tree: its parent and its own quota (a flat ``queues.cohort`` holds none)."""

    name: str
    parent: str | None
    nominal: dict[FR, int] = field(default_factory=dict)
    borrowing_limit: dict[FR, int] = field(default_factory=dict)
    lending_limit: dict[FR, int] = field(default_factory=dict)
    weight: float = 1.0


@dataclass
class SimPodSet:
    """One podSet: what it is charged per resource (milli-units) and where its pods may go."""

    name: str
    count: int
    need: dict[str, int]
    placement: Placement


@dataclass
class SimJob:
    """One AIPerfJob's Workload and its life in the simulation."""

    namespace: str
    name: str
    order: int
    cluster_queue: str
    priority: int
    podsets: list[SimPodSet]
    run_seconds: float | None
    estimated: bool
    created: float = 0.0
    tie: int = 0
    """Order among jobs created at the same moment (Kueue's order there depends on timing)."""
    # Mutable state.
    state: str = "pending"
    """``pending``, ``admitted``, ``finished`` or ``deleted``."""
    queue_time: float = 0.0
    """Kueue's queue-order timestamp: creation, or the eviction by waitForPodsReady."""
    inadmissible: bool = False
    admitted_at: float | None = None
    ready_at: float | None = None
    finish_at: float | None = None
    usage: dict[FR, int] = field(default_factory=dict)
    flavors: dict[str, str] = field(default_factory=dict)
    preempted_count: int = 0
    eviction_reasons: list[str] = field(default_factory=list)
    requeue_count: int = 0
    not_before: float = 0.0
    epoch: int = 0
    """Bumped on every admission and eviction, so that stale finish events are ignored."""
    shape: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    """The podSets' charges and placements as one hashable value (set by the engine on first use)."""

    @property
    def key(self) -> tuple[str, str]:
        """``(namespace, config name)``."""
        return (self.namespace, self.name)


@dataclass
class WaitForPodsReady:
    """Kueue's ``waitForPodsReady`` as the simulation applies it."""

    enabled: bool
    timeout: float
    block_admission: bool
    backoff_base: float = 60.0
    backoff_max: float = 3600.0


@dataclass
class World:
    """One stack revision: its queues, its jobs, and the cluster-wide settings."""

    queues: dict[str, SimClusterQueue]
    jobs: list[SimJob]
    flavors: Flavors
    fair_sharing: bool
    strategies: tuple[str, ...]
    wait_for_pods_ready: WaitForPodsReady
    cohorts: dict[str, SimCohort] = field(default_factory=dict)
    """Every Cohort of the stack by name: a ClusterQueue's ``cohort`` and a Cohort's ``parent`` name one."""


# --------------------------------------------------------------------------- building


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def duration_seconds(value: object) -> float | None:
    """AIPerf's DurationSpec in seconds (a number, ``"300"``, ``"5m"``, ``"2h"``); ``None`` if unreadable."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        found = _DURATION.match(value)
        if found:
            return float(found.group(1)) * _UNIT[found.group(2)]
    return None


def estimate_run_seconds(entry: JobEntry, request_seconds: float = DEFAULT_REQUEST_SECONDS) -> float | None:
    """An estimate of the job's run from its own phases, ``None`` when it cannot be told.

    Per phase: its ``duration``; else ``requests`` (or ``sessions``) ÷ ``rate`` for a rate phase, or
    × ``request_seconds`` ÷ ``concurrency`` for a concurrency phase. Phases run one after another.
    """
    total = 0.0
    for phase in entry.spec.benchmark.all_phases():
        if phase.duration is not None:
            seconds = duration_seconds(phase.duration)
            if seconds is None:
                return None
            total += seconds
            continue
        count = phase.requests if phase.requests is not None else phase.sessions
        if count is None:
            return None
        if phase.rate is not None:
            total += count / float(phase.rate)
        elif phase.type == "concurrency":
            total += count * request_seconds / phase.effective_concurrency()
        else:
            return None
    return total


def _limits(table: Mapping[str, Mapping[str, Mapping[str, Fraction]]], cq: str) -> dict[FR, int]:
    return {(pool, r): milli(a) for pool, amounts in table.get(cq, {}).items() for r, a in amounts.items()}


def build_world(
    plan: StackPlan,
    run_seconds: Mapping[str, float] | None = None,
    *,
    request_seconds: float = DEFAULT_REQUEST_SECONDS,
) -> World:
    """The simulation's view of ``plan``. ``run_seconds``: the scenario's run times by job config
    name (``None``: estimate every job from its phases; given: a job not named runs forever)."""
    config: StackConfig = plan.config
    qp = plan.queues
    pools = tuple(p.name for p in qp.pools)
    covered = tuple(qp.covered_resources)
    queues: dict[str, SimClusterQueue] = {}
    for cq in config.queues.cluster_queues:
        nominal = {(p, r): milli(qp.nominal_quota(cq.name, p, r)) for p in pools for r in covered}
        pre, ff = cq.preemption, cq.flavor_fungibility
        bwc = pre.borrow_within_cohort if pre is not None else None
        queues[cq.name] = SimClusterQueue(
            name=cq.name,
            cohort=qp.parents.get(cq.name),
            flavors=pools,
            resources=covered,
            nominal=nominal,
            borrowing_limit=_limits(qp.borrowing, cq.name),
            lending_limit=_limits(qp.lending, cq.name),
            within_cluster_queue=(pre.within_cluster_queue if pre else None) or "Never",
            reclaim_within_cohort=(pre.reclaim_within_cohort if pre else None) or "Never",
            borrow_within_cohort=bwc.policy if bwc is not None else "Never",
            max_priority_threshold=bwc.max_priority_threshold if bwc is not None else None,
            queueing_strategy=cq.queueing_strategy or "BestEffortFIFO",
            when_can_borrow=(ff.when_can_borrow if ff else None) or "MayStopSearch",
            when_can_preempt=(ff.when_can_preempt if ff else None) or "TryNextFlavor",
            preference=ff.preference if ff else None,
            weight=float(quantity.parse(cq.fair_sharing.weight)) if cq.fair_sharing else 1.0,
            stop_policy=cq.stop_policy or "None",
        )
    declared = {c.name: c for c in config.queues.cohorts}
    cohorts: dict[str, SimCohort] = {}
    for name in qp.cohorts:
        weight = declared[name].fair_sharing if name in declared else None
        cohorts[name] = SimCohort(
            name,
            qp.parents.get(name),
            _limits(qp.cohort_nominal, name),
            _limits(qp.cohort_borrowing, name),
            _limits(qp.cohort_lending, name),
            float(quantity.parse(weight.weight)) if weight is not None else 1.0,
        )
    priorities = {pc.name: pc.value for pc in config.priority_classes}
    default_class = config.operator.default_priority_class
    covers_pods = "pods" in covered
    jobs: list[SimJob] = []
    for order, adm in enumerate(plan.jobs.admissions):
        entry = adm.entry
        podsets = [
            SimPodSet(ps.name, ps.count, {r: milli(a) for r, a in charged(ps, covers_pods).items()}, ps.placement)
            for ps in adm.shape.pod_sets
        ]
        klass = entry.priority_class or default_class
        if run_seconds is None:
            seconds, estimated = estimate_run_seconds(entry, request_seconds), True
        else:
            seconds, estimated = run_seconds.get(entry.name), False
        jobs.append(
            SimJob(
                entry.namespace,
                entry.name,
                order,
                adm.cluster_queue,
                priorities.get(klass, 0) if klass else 0,
                podsets,
                seconds,
                estimated,
            )
        )
    kueue = config.kueue
    fs = kueue.fair_sharing
    wfpr = kueue.wait_for_pods_ready
    target = kueue.target()
    if wfpr is not None:
        ready = WaitForPodsReady(wfpr.enable, duration_seconds_go(wfpr.timeout), wfpr.block_admission)
    else:
        # On by default from Kueue 0.19 (timeout 30m, blockAdmission false), off before.
        ready = WaitForPodsReady(target.version >= (0, 19, 0), 1800.0, False)
    return World(
        queues,
        jobs,
        Flavors.of(config, target),
        fs is not None and fs.enable,
        tuple(fs.preemption_strategies) if fs is not None else (),
        ready,
        cohorts,
    )


_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s)")


def duration_seconds_go(text: str) -> float:
    """A Go duration (``10m``, ``1h30m``, ``90s``) in seconds; 0 when unreadable."""
    unit = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(n) * unit[u] for n, u in _GO_DURATION.findall(text))


# --------------------------------------------------------------------------- quota state


class Quota:
    """Usage of every ClusterQueue and Cohort of the tree, and what Kueue's cache derives from it."""

    def __init__(self, queues: Mapping[str, SimClusterQueue], cohorts: Mapping[str, SimCohort] | None = None) -> None:
        self.queues = queues
        self.cohorts: Mapping[str, SimCohort] = cohorts if cohorts is not None else _flat_cohorts(queues)
        self.usage: dict[str, dict[FR, int]] = {name: {} for name in [*queues, *self.cohorts]}
        self.version = 0
        """Bumped by every lasting change of usage: an assignment made at the same version still holds."""
        self.parent: dict[str, str | None] = {name: cq.cohort for name, cq in queues.items()}
        self.parent.update({name: c.parent for name, c in self.cohorts.items()})
        # Kueue's SubtreeQuota (a ClusterQueue's is its nominal quota), localQuota (what a node keeps from its
        # parent: SubtreeQuota − lendingLimit, where one is set) and borrowingLimit, per node.
        self.subtree: dict[str, dict[FR, int]] = {name: dict(cq.nominal) for name, cq in queues.items()}
        self.local: dict[str, dict[FR, int]] = {}
        self.limit: dict[str, dict[FR, int]] = {name: cq.borrowing_limit for name, cq in queues.items()}
        self.children: dict[str, list[str]] = {name: [] for name in self.cohorts}
        for name, parent in self.parent.items():
            if parent is not None:
                self.children[parent].append(name)
        for name, cohort in self.cohorts.items():
            self.limit[name] = cohort.borrowing_limit
        for name in self.cohorts:
            if self.parent[name] is None:
                self._accumulate(name)
        for name, cq in queues.items():
            self.local[name] = _local(self.subtree[name], cq.lending_limit)
        self.potentials: dict[tuple[str, FR], int] = {}
        # The tree never changes during a revision: each node's path to the root and height, computed once.
        self.paths: dict[str, tuple[str, ...]] = {}
        self.heights: dict[str, int] = {}
        self.steps: dict[str, tuple[str, tuple[str, ...]]] = {}
        # What available and borrow_height found since the last change of usage. ``stamp`` counts every change and,
        # unlike ``version`` (which a preemption trial puts back), never repeats.
        self.stamp = 0
        self.cached_at = -1
        self.cache: dict[tuple[Any, ...], Any] = {}
        self.over: dict[FR, set[str]] = {}
        """Per flavor-resource, the ClusterQueues using more than their nominal quota of it (kept by :meth:`add`,
        so that preemption finds the borrowers without scanning every member of the tree)."""

    def _accumulate(self, name: str) -> None:
        """A Cohort's SubtreeQuota: its own quota plus each child's SubtreeQuota beyond what the child keeps."""
        cohort = self.cohorts[name]
        quota = dict(cohort.nominal)
        for child in self.children[name]:
            if child in self.cohorts:
                self._accumulate(child)
            lending = self.cohorts[child].lending_limit if child in self.cohorts else self.queues[child].lending_limit
            own = self.subtree[child]
            kept = _local(own, lending)
            for fr, amount in own.items():
                quota[fr] = quota.get(fr, 0) + amount - kept.get(fr, 0)
        self.subtree[name] = quota
        self.local[name] = _local(quota, cohort.lending_limit)

    def root(self, name: str) -> str:
        """The root of the tree ``name`` is in (``name`` itself without a parent)."""
        path = self.path(name)
        return path[-1] if path else name

    def path(self, name: str) -> tuple[str, ...]:
        """The Cohorts above ``name``, its parent first, the root last (Kueue's PathParentToRoot)."""
        found = self.paths.get(name)
        if found is None:
            out: list[str] = []
            parent = self.parent.get(name)
            while parent is not None:
                out.append(parent)
                parent = self.parent.get(parent)
            found = self.paths[name] = tuple(out)
        return found

    def add(self, cq_name: str, amounts: Mapping[FR, int], sign: int = 1) -> None:
        """Add (``sign`` 1) or remove (-1) ``amounts`` to ``cq_name``'s usage; what goes beyond what a node keeps
        climbs to its parent (Kueue's addUsage and removeUsage)."""
        self.version += 1
        self.stamp += 1
        cq = self.queues[cq_name]
        usage = self.usage[cq_name]
        for fr, amount in amounts.items():
            after = usage.get(fr, 0) + sign * amount
            if after > cq.nominal.get(fr, 0):
                self.over.setdefault(fr, set()).add(cq_name)
            elif fr in self.over:
                self.over[fr].discard(cq_name)
            if sign > 0:
                self._add(cq_name, fr, amount)
            else:
                self._remove(cq_name, fr, amount)

    def _add(self, name: str, fr: FR, amount: int) -> None:
        while True:
            usage = self.usage[name]
            before = usage.get(fr, 0)
            room = max(0, self.local[name].get(fr, 0) - before)
            usage[fr] = before + amount
            parent = self.parent[name]
            if parent is None or amount <= room:
                return
            name, amount = parent, amount - room

    def _remove(self, name: str, fr: FR, amount: int) -> None:
        while True:
            usage = self.usage[name]
            before = usage.get(fr, 0)
            stored = before - self.local[name].get(fr, 0)
            usage[fr] = before - amount
            parent = self.parent[name]
            if parent is None or stored <= 0:
                return
            name, amount = parent, min(amount, stored)

    def _cached(self) -> dict[tuple[Any, ...], Any]:
        if self.cached_at != self.stamp:
            self.cache.clear()
            self.cached_at = self.stamp
        return self.cache

    def available(self, cq: SimClusterQueue, fr: FR) -> int:
        """Kueue's ``available``: unused quota ``cq`` may take now, borrowing through the tree included."""
        cache = self._cached()
        key = ("available", cq.name, fr)
        found = cache.get(key)
        if found is None:
            found = cache[key] = self._available(cq.name, fr)
        return int(found)

    def _available(self, name: str, fr: FR) -> int:
        # Kueue's recursion, unrolled: from the root down to ``name``. A node with neither a lendingLimit nor a
        # borrowingLimit passes on what its parent has (max(0, 0 − used) + above), so only the others are visited.
        steps = self.steps.get(name)
        if steps is None:
            nodes = (name, *self.path(name))
            kept = tuple(n for n in reversed(nodes[:-1]) if self.local[n] or self.limit[n])
            steps = self.steps[name] = (nodes[-1], kept)
        top, kept = steps
        above = self.subtree[top].get(fr, 0) - self.usage[top].get(fr, 0)
        for node in kept:
            used = self.usage[node].get(fr, 0)
            local = self.local[node].get(fr, 0)
            limit = self.limit[node].get(fr)
            if limit is not None:
                above = min(self.subtree[node].get(fr, 0) - local - max(0, used - local) + limit, above)
            above = max(0, local - used) + above
        return above

    def potential(self, cq: SimClusterQueue, fr: FR) -> int:
        """Kueue's ``potentialAvailable``: the most ``cq`` could ever hold (its maximum capacity)."""
        # It reads quotas only, never usage: computed once per node and flavor-resource.
        return self._potential(cq.name, fr)

    def _potential(self, name: str, fr: FR) -> int:
        key = (name, fr)
        found = self.potentials.get(key)
        if found is None:
            parent = self.parent[name]
            if parent is None:
                found = self.subtree[name].get(fr, 0)
            else:
                found = self.local[name].get(fr, 0) + self._potential(parent, fr)
                limit = self.limit[name].get(fr)
                if limit is not None:
                    found = min(self.subtree[name].get(fr, 0) + limit, found)
            self.potentials[key] = found
        return found

    def height(self, name: str) -> int:
        """hierarchical_preemption.go ``getNodeHeight``: 1 for a Cohort with children and no child Cohort, one more
        per level of Cohorts below it."""
        found = self.heights.get(name)
        if found is None:
            found = min(len(self.children.get(name, [])), 1)
            for child in self.children.get(name, []):
                if child in self.cohorts:
                    found = max(found, self.height(child) + 1)
            self.heights[name] = found
        return found

    def borrow_height(self, cq: SimClusterQueue, fr: FR, val: int) -> tuple[int, bool]:
        """hierarchical_preemption.go ``FindHeightOfLowestSubtreeThatFits``: how high ``val`` of ``fr`` must borrow
        (0 within the ClusterQueue's own quota; the height of the lowest Cohort above whose SubtreeQuota holds it),
        and whether that Cohort has a parent (reclaim within the hierarchy may still make room)."""
        name = cq.name
        has_parent = self.parent[name] is not None
        used = self.usage[name].get(fr, 0)
        if used + val <= self.subtree[name].get(fr, 0) or not has_parent:
            return 0, has_parent
        cache = self._cached()
        key = ("height", name, fr, val)
        found = cache.get(key)
        if found is None:
            found = cache[key] = self._borrow_height(name, fr, val, used)
        return found

    def _borrow_height(self, name: str, fr: FR, val: int, used: int) -> tuple[int, bool]:
        remaining = val - max(0, self.local[name].get(fr, 0) - used)
        for node in self.path(name):
            node_used = self.usage[node].get(fr, 0)
            if node_used + remaining <= self.subtree[node].get(fr, 0):
                return self.height(node), self.parent[node] is not None
            remaining -= max(0, self.local[node].get(fr, 0) - node_used)
        return self.height(self.root(name)), False

    def node_within_nominal(self, name: str, frs: set[FR]) -> bool:
        """Kueue's ``IsWithinNominalInResources`` for any node: usage within its SubtreeQuota."""
        usage, quota = self.usage[name], self.subtree[name]
        return all(usage.get(fr, 0) <= quota.get(fr, 0) for fr in frs)

    def borrowing(self, cq: SimClusterQueue, fr: FR, extra: int = 0) -> bool:
        """Usage (plus ``extra``) above the nominal quota."""
        return self.usage[cq.name].get(fr, 0) + extra > cq.nominal.get(fr, 0)

    def within_nominal(self, cq: SimClusterQueue, frs: set[FR]) -> bool:
        """Kueue's ``IsWithinNominalInResources``."""
        over = self.over
        return not any(cq.name in over[fr] for fr in frs if fr in over)

    def borrowers(self, frs: set[FR]) -> set[str]:
        """The ClusterQueues above their nominal quota in any of ``frs`` (not :meth:`within_nominal`)."""
        out: set[str] = set()
        for fr in frs:
            out |= self.over.get(fr, set())
        return out

    def share(self, cq: SimClusterQueue) -> float:
        """Kueue's weighted dominant resource share of ``cq`` (× 1000, unrounded); ``inf`` for weight 0 while
        borrowing."""
        return self.node_share(cq.name)

    def node_share(self, name: str) -> float:
        """:meth:`share` of a ClusterQueue or a Cohort: what it borrows beyond its SubtreeQuota, per resource, over
        what its parent could ever lend it (potentialAvailable of the parent, summed over the root's flavors)."""
        parent = self.parent.get(name)
        if parent is None:
            return 0.0
        quota = self.subtree[name]
        borrowed: dict[str, int] = {}
        for fr, used in self.usage[name].items():
            over = used - quota.get(fr, 0)
            if over > 0:
                borrowed[fr[1]] = borrowed.get(fr[1], 0) + over
        if not borrowed:
            return 0.0
        lendable: dict[str, int] = {}
        for fr in self.subtree[self.root(name)]:
            lendable[fr[1]] = lendable.get(fr[1], 0) + self._potential(parent, fr)
        ratio = max((b * 1000.0 / lendable[r] for r, b in borrowed.items() if lendable.get(r, 0) > 0), default=0.0)
        weight = self.cohorts[name].weight if name in self.cohorts else self.queues[name].weight
        if weight == 0:
            return math.inf
        return ratio / weight


def _local(quota: Mapping[FR, int], lending: Mapping[FR, int]) -> dict[FR, int]:
    """Kueue's localQuota: SubtreeQuota − lendingLimit where one is set (never below 0), else 0."""
    return {fr: max(0, quota.get(fr, 0) - limit) for fr, limit in lending.items()}


def _flat_cohorts(queues: Mapping[str, SimClusterQueue]) -> dict[str, SimCohort]:
    """The Cohorts ``queues`` name, each a root with no quota of its own (one flat ``queues.cohort``)."""
    return {cq.cohort: SimCohort(cq.cohort, None) for cq in queues.values() if cq.cohort is not None}
