"""Kueue's flavor assigner at a moment of the simulation: each podSet's flavor, and whether the Workload
fits now, fits only by preempting, or does not fit.

Upstream: kueue v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go
"""

# Kueue v0.19.2, pkg/scheduler/flavorassigner/flavorassigner.go: findFlavorForPodSets, fitsResourceQuota,
# isPreferred, shouldTryNextFlavor and canPreemptWhileBorrowing; the flavor's node labels and taints are
# checked by aiperf_kueue.workload.flavor_assigner (checkFlavorForPodSets), which this reuses.

from __future__ import annotations

from dataclasses import dataclass, field

from aiperf_kueue.simulate.preempt import Preemptor, Target
from aiperf_kueue.simulate.world import FR, Quota, SimClusterQueue, SimJob
from aiperf_kueue.workload.flavor_assigner import Flavors

# Kueue's preemptionMode, worst first (flavorassigner.go).
NO_FIT, NO_CANDIDATES, PREEMPT, FIT = 0, 1, 2, 3


@dataclass
class Assignment:
    """Where a pending Workload would go now, and how."""

    mode: int
    borrowing: bool = False
    usage: dict[FR, int] = field(default_factory=dict)
    flavors: dict[str, str] = field(default_factory=dict)
    """Resource → flavor (the first podSet's where podSets differ)."""
    targets: list[Target] = field(default_factory=list)


def _better(a: tuple[int, bool], b: tuple[int, bool] | None, preference: str | None) -> bool:
    """``isPreferred``: a (mode, borrowing) over b."""
    if a[0] == NO_FIT:
        return False
    if b is None or b[0] == NO_FIT:
        return True
    if (a[0] == NO_CANDIDATES) != (b[0] == NO_CANDIDATES):
        return a[0] != NO_CANDIDATES
    if preference == "PreemptionOverBorrowing":
        if a[1] != b[1]:
            return not a[1]
        return a[0] > b[0]
    if a[0] != b[0]:
        return a[0] > b[0]
    return not a[1] and b[1]


def _try_next(mode: tuple[int, bool], cq: SimClusterQueue) -> bool:
    """``shouldTryNextFlavor``."""
    if mode[0] in (NO_FIT, NO_CANDIDATES):
        return True
    if mode[0] == PREEMPT and cq.when_can_preempt == "TryNextFlavor":
        return True
    return mode[1] and cq.when_can_borrow == "TryNextFlavor"


def assign(
    job: SimJob, cq: SimClusterQueue, quota: Quota, flavors: Flavors, preemptor: Preemptor, fair_sharing: bool
) -> Assignment:
    """Assign flavors to ``job``'s podSets in ``cq`` against the current ``quota``."""
    can_preempt_borrowing = cq.borrow_within_cohort != "Never" or (fair_sharing and cq.reclaim_within_cohort != "Never")
    usage: dict[FR, int] = {}
    chosen: dict[str, str] = {}
    worst = FIT
    borrowing = False
    for ps in job.podsets:
        if not ps.need:
            continue
        skipped = flavors.skipped(ps.placement)
        best: tuple[int, bool] | None = None
        best_flavor: str | None = None
        for flavor in cq.flavors:
            if flavor in skipped:
                continue
            mode, borrows = FIT, False
            for resource, amount in ps.need.items():
                fr = (flavor, resource)
                val = usage.get(fr, 0) + amount
                if val > quota.potential(cq, fr):
                    mode = NO_FIT
                    break
                over = quota.borrowing(cq, fr, val)
                borrows = borrows or over
                if val <= quota.available(cq, fr):
                    continue
                may_reclaim = cq.cohort is not None and not over
                if cq.can_preempt and (cq.nominal.get(fr, 0) >= val or may_reclaim or can_preempt_borrowing):
                    found = preemptor.targets(job, cq, {fr: val}, {fr})
                    mode = min(mode, PREEMPT if found else NO_CANDIDATES)
                else:
                    mode = NO_FIT
                    break
            here = (mode, borrows)
            if _better(here, best, cq.preference):
                best, best_flavor = here, flavor
            if not _try_next(here, cq):
                break
        if best is None or best_flavor is None:
            return Assignment(NO_FIT)
        worst = min(worst, best[0])
        borrowing = borrowing or best[1]
        for resource, amount in ps.need.items():
            fr = (best_flavor, resource)
            usage[fr] = usage.get(fr, 0) + amount
            chosen.setdefault(resource, best_flavor)
    out = Assignment(worst, borrowing, usage, chosen)
    if worst == PREEMPT:
        frs = {fr for fr, v in usage.items() if v > quota.available(cq, fr)}
        out.targets = preemptor.targets(job, cq, usage, frs)
        if not out.targets:
            out.mode = NO_CANDIDATES
    return out
