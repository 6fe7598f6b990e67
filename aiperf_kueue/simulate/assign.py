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
from aiperf_kueue.simulate.quota import Quota
from aiperf_kueue.simulate.world import FR, SimClusterQueue, SimJob
from aiperf_kueue.workload.flavor_assigner import Flavors

# Kueue's preemptionMode, worst first (flavorassigner.go).
NO_FIT, NO_CANDIDATES, PREEMPT, FIT = 0, 1, 2, 3


@dataclass
class Assignment:
    """Where a pending Workload would go now, and how."""

    mode: int
    borrowing: int = 0
    """How high it borrows: 0 within the ClusterQueue's nominal quota, else the height of the lowest Cohort whose
    subtree holds it (1 in a flat cohort); lower is admitted first (Kueue's ``Borrows``)."""
    usage: dict[FR, int] = field(default_factory=dict)
    flavors: dict[str, str] = field(default_factory=dict)
    """Resource → flavor (the first podSet's where podSets differ)."""
    targets: list[Target] = field(default_factory=list)


def _height_after(quota: Quota, cq: SimClusterQueue, fr: FR, val: int, targets: list[Target]) -> int:
    """preemption_oracle.go ``SimulatePreemption``: the borrowing height with ``targets`` removed."""
    if not targets:
        return quota.borrow_height(cq, fr, val)[0]
    version = quota.version
    for t in targets:
        quota.add(t.job.cluster_queue, t.job.usage, -1)
    height = quota.borrow_height(cq, fr, val)[0]
    for t in targets:
        quota.add(t.job.cluster_queue, t.job.usage)
    quota.version = version
    return height


def _better(a: tuple[int, int], b: tuple[int, int] | None, preference: str | None) -> bool:
    """``isPreferred``: a (mode, borrowing height) over b."""
    if a[0] == NO_FIT:
        return False
    if b is None or b[0] == NO_FIT:
        return True
    if (a[0] == NO_CANDIDATES) != (b[0] == NO_CANDIDATES):
        return a[0] != NO_CANDIDATES
    if preference == "PreemptionOverBorrowing":
        if a[1] != b[1]:
            return a[1] < b[1]
        return a[0] > b[0]
    if a[0] != b[0]:
        return a[0] > b[0]
    return a[1] < b[1]


def _try_next(mode: tuple[int, int], cq: SimClusterQueue) -> bool:
    """``shouldTryNextFlavor``."""
    if mode[0] in (NO_FIT, NO_CANDIDATES):
        return True
    if mode[0] == PREEMPT and cq.when_can_preempt == "TryNextFlavor":
        return True
    return mode[1] > 0 and cq.when_can_borrow == "TryNextFlavor"


def assign(
    job: SimJob, cq: SimClusterQueue, quota: Quota, flavors: Flavors, preemptor: Preemptor, fair_sharing: bool
) -> Assignment:
    """Assign flavors to ``job``'s podSets in ``cq`` against the current ``quota``."""
    can_preempt_borrowing = cq.borrow_within_cohort != "Never" or (fair_sharing and cq.reclaim_within_cohort != "Never")
    usage: dict[FR, int] = {}
    chosen: dict[str, str] = {}
    worst = FIT
    borrowing = 0
    for ps in job.podsets:
        if not ps.need:
            continue
        skipped = flavors.skipped(ps.placement)
        best: tuple[int, int] | None = None
        best_flavor: str | None = None
        for flavor in cq.flavors:
            if flavor in skipped:
                continue
            mode, borrows = FIT, 0
            for resource, amount in ps.need.items():
                fr = (flavor, resource)
                val = usage.get(fr, 0) + amount
                if val > quota.potential(cq, fr):
                    mode = NO_FIT
                    break
                height, may_reclaim = quota.borrow_height(cq, fr, val)
                if val <= quota.available(cq, fr):
                    borrows = max(borrows, height)
                    continue
                if cq.can_preempt and (cq.nominal.get(fr, 0) >= val or may_reclaim or can_preempt_borrowing):
                    found = preemptor.targets(job, cq, {fr: val}, {fr})
                    mode = min(mode, PREEMPT if found else NO_CANDIDATES)
                    # The oracle's borrowAfterPreemptions: how high it borrows once its targets are gone.
                    borrows = max(borrows, _height_after(quota, cq, fr, val, found))
                else:
                    borrows = max(borrows, height)
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
        borrowing = max(borrowing, best[1])
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
