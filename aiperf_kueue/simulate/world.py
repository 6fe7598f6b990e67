"""The ClusterQueues, Cohorts and Workloads of a planned stack, as the simulation sees them.

Upstream: kueue v0.19.2 pkg/cache/scheduler/clusterqueue_snapshot.go, pkg/cache/scheduler/cohort_snapshot.go

Amounts are integers in milli-units of each resource (``1`` CPU is 1000, ``1Mi`` is 1048576000),
so that the arithmetic is exact and fast. A flavor-resource pair is ``(flavor, resource)``.
"""

# Kueue v0.19.2, pkg/cache/scheduler/clusterqueue_snapshot.go and cohort_snapshot.go: what a ClusterQueue and a
# Cohort carry (quotas, limits, preemption policies, fair-sharing weight); the arithmetic on them is quota.py.

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
