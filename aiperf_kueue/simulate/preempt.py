"""Which admitted Workloads Kueue preempts so that a pending one fits: classical and fair-sharing preemption.

Upstream: kueue v0.19.2 pkg/scheduler/preemption/preemption.go
"""

# Kueue v0.19.2, pkg/scheduler/preemption/preemption.go (classicalPreemptions, fillBackWorkloads,
# fairPreemptions, runFirstFsStrategy, runSecondFsStrategy, findCandidates, workloadFits),
# pkg/scheduler/preemption/classical/hierarchical_preemption.go and candidate_generator.go (candidate
# variants and order), pkg/scheduler/preemption/common/ordering.go (CandidatesOrdering),
# pkg/scheduler/preemption/common/preemption_policy.go (SatisfiesPreemptionPolicy),
# pkg/scheduler/preemption/fairsharing/ordering.go and strategy.go; for one flat cohort, with
# the features on by default in v0.19.2 (FairSharingPreemptWithinNominal, PrioritySortingWithinCohort).

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from aiperf_kueue.simulate.world import FR, Quota, SimClusterQueue, SimJob

IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"


@dataclass(frozen=True)
class Target:
    """One Workload to preempt, and Kueue's reason (its ``Preempted`` condition's)."""

    job: SimJob
    reason: str


def satisfies(policy: str, preemptor: SimJob, candidate: SimJob) -> bool:
    """Kueue's ``SatisfiesPreemptionPolicy``."""
    lower = preemptor.priority > candidate.priority
    if policy == "LowerPriority":
        return lower
    if policy == "LowerOrNewerEqualPriority":
        return lower or (preemptor.priority == candidate.priority and preemptor.queue_time < candidate.queue_time)
    return policy == "Any"


def _uses(job: SimJob, frs: set[FR]) -> bool:
    return not frs.isdisjoint(job.usage)


def _ordering(cq_name: str) -> Callable[[SimJob], tuple[int, int, float, int]]:
    """Kueue's ``CandidatesOrdering``: other ClusterQueues first, lower priority, most recently admitted."""

    def key(job: SimJob) -> tuple[int, int, float, int]:
        return (job.cluster_queue == cq_name, job.priority, -(job.admitted_at or 0.0), -job.order)

    return key


class Preemptor:
    """Preemption over one moment's quota and admitted Workloads."""

    def __init__(
        self,
        queues: Mapping[str, SimClusterQueue],
        quota: Quota,
        admitted: Mapping[str, list[SimJob]],
        *,
        fair_sharing: bool,
        strategies: Sequence[str],
    ) -> None:
        self.queues = queues
        self.quota = quota
        self.admitted = admitted
        self.fair_sharing = fair_sharing
        self.strategies = tuple(strategies) or ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
        self.members: dict[str, list[SimClusterQueue]] = {}
        for cq in queues.values():
            if cq.cohort is not None:
                self.members.setdefault(cq.cohort, []).append(cq)

    def _fits(self, cq: SimClusterQueue, usage: Mapping[FR, int], allow_borrowing: bool) -> bool:
        for fr, v in usage.items():
            if not allow_borrowing and self.quota.borrowing(cq, fr, v):
                return False
            if v > self.quota.available(cq, fr):
                return False
        return True

    def _remove(self, job: SimJob) -> None:
        self.quota.add(job.cluster_queue, job.usage, -1)

    def _restore(self, targets: Sequence[Target]) -> None:
        for t in targets:
            self.quota.add(t.job.cluster_queue, t.job.usage)

    def _fill_back(self, cq: SimClusterQueue, usage: Mapping[FR, int], targets: list[Target], borrow: bool) -> None:
        # In reverse, put back every target the preemptor still fits without.
        for i in range(len(targets) - 2, -1, -1):
            self.quota.add(targets[i].job.cluster_queue, targets[i].job.usage)
            if self._fits(cq, usage, borrow):
                targets[i] = targets[-1]
                targets.pop()
            else:
                self._remove(targets[i].job)

    def targets(self, job: SimJob, cq: SimClusterQueue, usage: Mapping[FR, int], frs: set[FR]) -> list[Target]:
        """The Workloads to preempt so that ``job`` (charged ``usage``) fits in ``cq``; empty when none
        would do. ``frs``: the flavor-resources that need preemption. The quota is left as found."""
        version = self.quota.version
        found = self._fair(job, cq, usage, frs) if self.fair_sharing else self._classical(job, cq, usage, frs)
        self.quota.version = version  # every trial removal was put back
        return found

    # ------------------------------------------------------------------ classical

    def _room(
        self,
        cq: SimClusterQueue,
        usage: Mapping[FR, int],
        frs: set[FR],
        same: Sequence[tuple[SimJob, str]],
        theirs: Sequence[tuple[SimClusterQueue, Sequence[tuple[SimJob, str]]]],
        attempts: tuple[bool, ...],
    ) -> bool:
        """Whether removing candidates could ever make room for ``usage``: when not, no attempt of
        :meth:`_classical` can succeed (the same empty answer, without the trials).

        Removing a Workload raises ``cq``'s ``available`` by at most what it uses. A candidate of another
        ClusterQueue is only removed while that queue borrows (is not within nominal in ``frs``): with one
        flavor-resource, that queue stops borrowing once its usage is at most nominal, so the removals there
        free less than its usage above nominal plus its largest candidate. A ``ReclaimWithoutBorrowing``
        candidate is never removed when every attempt allows borrowing."""
        skip = "ReclaimWithoutBorrowing" if False not in attempts else ""
        for fr in frs:
            room = self.quota.available(cq, fr) + sum(w.usage.get(fr, 0) for w, _ in same)
            for other, found in theirs:
                amounts = [w.usage.get(fr, 0) for w, variant in found if variant != skip]
                if not amounts:
                    continue
                freed = sum(amounts)
                if len(frs) == 1:
                    above = self.quota.usage[other.name].get(fr, 0) - other.nominal.get(fr, 0)
                    freed = min(freed, above - 1 + max(amounts))
                room += freed
            if usage.get(fr, 0) > room:
                return False
        return True

    def _classical(self, job: SimJob, cq: SimClusterQueue, usage: Mapping[FR, int], frs: set[FR]) -> list[Target]:
        same: list[tuple[SimJob, str]] = []
        if cq.within_cluster_queue != "Never":
            same = [
                (w, "WithinCQ")
                for w in self.admitted.get(cq.name, [])
                if _uses(w, frs) and satisfies(cq.within_cluster_queue, job, w)
            ]
        hierarchy: list[tuple[SimJob, str]] = []
        by_priority: list[tuple[SimJob, str]] = []
        theirs: list[tuple[SimClusterQueue, list[tuple[SimJob, str]]]] = []  # per borrowing queue, its candidates
        bwc_forbidden = cq.borrow_within_cohort == "Never"
        used = self.quota.usage[cq.name]
        under_nominal = all(used.get(fr, 0) < cq.nominal.get(fr, 0) for fr in frs)
        advantage = all(used.get(fr, 0) + v <= cq.nominal.get(fr, 0) for fr, v in usage.items())
        # Without the advantage and with borrowWithinCohort Never, every candidate of another ClusterQueue would be
        # ReclaimWithoutBorrowing; when the queue is not under nominal either, the only attempt allows borrowing and
        # skips them all: they are not gathered (the same answer).
        reclaim = not bwc_forbidden or under_nominal or advantage
        if cq.cohort is not None and cq.reclaim_within_cohort != "Never" and reclaim:
            borrowers = self.quota.borrowers(frs)
            for other in self.members[cq.cohort]:
                if other is cq or other.name not in borrowers:
                    continue
                found: list[tuple[SimJob, str]] = []
                for w in self.admitted.get(other.name, []):
                    if not _uses(w, frs) or not satisfies(cq.reclaim_within_cohort, job, w):
                        continue
                    if advantage:
                        found.append((w, "HierarchicalReclaim"))
                    elif bwc_forbidden or _above_threshold(w.priority, job.priority, cq.max_priority_threshold):
                        found.append((w, "ReclaimWithoutBorrowing"))
                    else:
                        found.append((w, "ReclaimWhileBorrowing"))
                theirs.append((other, found))
                (hierarchy if advantage else by_priority).extend(found)
        if (not hierarchy and not by_priority) or (bwc_forbidden and not under_nominal):
            attempts: tuple[bool, ...] = (True,)
        elif bwc_forbidden and not hierarchy:
            attempts = (False, True)
        else:
            attempts = (True, False)
        if not self._room(cq, usage, frs, same, theirs, attempts):
            return []
        order = _ordering(cq.name)
        candidates = [
            *sorted(hierarchy, key=lambda c: order(c[0])),
            *sorted(by_priority, key=lambda c: order(c[0])),
            *sorted(same, key=lambda c: order(c[0])),
        ]
        for borrow in attempts:
            chosen: list[Target] = []
            for w, variant in candidates:
                if w.cluster_queue != cq.name:
                    if borrow and variant == "ReclaimWithoutBorrowing":
                        continue
                    if self.quota.within_nominal(self.queues[w.cluster_queue], frs):
                        continue
                self._remove(w)
                chosen.append(Target(w, _reason(variant)))
                if self._fits(cq, usage, borrow):
                    self._fill_back(cq, usage, chosen, borrow)
                    self._restore(chosen)
                    return chosen
            self._restore(chosen)
        return []

    # ------------------------------------------------------------------ fair sharing

    def _fair(self, job: SimJob, cq: SimClusterQueue, usage: Mapping[FR, int], frs: set[FR]) -> list[Target]:
        candidates: list[SimJob] = []
        if cq.within_cluster_queue != "Never":
            candidates += [
                w
                for w in self.admitted.get(cq.name, [])
                if _uses(w, frs) and satisfies(cq.within_cluster_queue, job, w)
            ]
        if cq.cohort is not None and cq.reclaim_within_cohort != "Never":
            for other in self.members[cq.cohort]:
                if other is cq or not any(self.quota.borrowing(other, fr) for fr in frs):
                    continue
                candidates += [
                    w
                    for w in self.admitted.get(other.name, [])
                    if _uses(w, frs) and satisfies(cq.reclaim_within_cohort, job, w)
                ]
        if not candidates:
            return []
        candidates.sort(key=_ordering(cq.name))
        self.quota.add(cq.name, usage)  # the preemptor's usage, for its new share
        targets: list[Target] = []
        fits, retry = self._first_strategy(cq, usage, frs, candidates, targets)
        if not fits and len(self.strategies) > 1:
            fits = self._second_strategy(cq, usage, retry, targets)
        self.quota.add(cq.name, usage, -1)
        if not fits:
            self._restore(targets)
            return []
        self._fill_back(cq, usage, targets, True)
        self._restore(targets)
        return targets

    def _by_queue(self, candidates: Sequence[SimJob]) -> dict[str, list[SimJob]]:
        out: dict[str, list[SimJob]] = {}
        for w in candidates:
            out.setdefault(w.cluster_queue, []).append(w)
        return out

    def _next_queue(self, cq: SimClusterQueue, pending: dict[str, list[SimJob]], pruned: set[str]) -> str | None:
        """The candidate ClusterQueue with the highest share (fairsharing/ordering.go ``nextTarget``)."""
        best: str | None = None
        best_share = -1.0
        members = self.members[cq.cohort] if cq.cohort is not None else [cq]
        order = _ordering(cq.name)
        for other in members:
            if other.name in pruned:
                continue
            share = self.quota.share(other)
            borrowing = any(u > other.nominal.get(fr, 0) for fr, u in self.quota.usage[other.name].items())
            if (not borrowing and other is not cq) or not pending.get(other.name):
                pruned.add(other.name)
                continue
            if best is None or share > best_share:
                best, best_share = other.name, share
            elif share == best_share and order(pending[other.name][0]) < order(pending[best][0]):
                best = other.name
        return best

    def _fits_fair(self, cq: SimClusterQueue, usage: Mapping[FR, int]) -> bool:
        self.quota.add(cq.name, usage, -1)
        fits = self._fits(cq, usage, True)
        self.quota.add(cq.name, usage)
        return fits

    def _first_strategy(
        self,
        cq: SimClusterQueue,
        usage: Mapping[FR, int],
        frs: set[FR],
        candidates: list[SimJob],
        targets: list[Target],
    ) -> tuple[bool, list[SimJob]]:
        pending = self._by_queue(candidates)
        pruned: set[str] = set()
        retry: list[SimJob] = []
        within_nominal = all(u <= cq.nominal.get(fr, 0) for fr, u in self.quota.usage[cq.name].items() if fr in frs)
        strategy = self.strategies[0]
        while True:
            name = self._next_queue(cq, pending, pruned)
            if name is None:
                return False, retry
            queue = pending[name]
            if name == cq.name or within_nominal:
                w = queue.pop(0)
                self._remove(w)
                targets.append(Target(w, IN_CLUSTER_QUEUE if name == cq.name else IN_COHORT_RECLAMATION))
                if self._fits_fair(cq, usage):
                    return True, retry
                continue
            target_cq = self.queues[name]
            preemptor_new, target_old = self.quota.share(cq), self.quota.share(target_cq)
            if preemptor_new == float("inf") and target_old != float("inf"):
                retry += queue
                queue.clear()
                continue
            while queue:
                w = queue.pop(0)
                self._remove(w)
                target_new = self.quota.share(target_cq)
                self.quota.add(w.cluster_queue, w.usage)
                if _passes(strategy, preemptor_new, target_old, target_new):
                    self._remove(w)
                    targets.append(Target(w, IN_COHORT_FAIR_SHARING))
                    if self._fits_fair(cq, usage):
                        return True, retry
                    break
                retry.append(w)

    def _second_strategy(
        self, cq: SimClusterQueue, usage: Mapping[FR, int], retry: list[SimJob], targets: list[Target]
    ) -> bool:
        pending = self._by_queue(retry)
        pruned: set[str] = set()
        while True:
            name = self._next_queue(cq, pending, pruned)
            if name is None:
                return False
            target_cq = self.queues[name]
            w = pending[name].pop(0)
            if self.quota.share(cq) < self.quota.share(target_cq):
                self._remove(w)
                targets.append(Target(w, IN_COHORT_FAIR_SHARING))
                if self._fits_fair(cq, usage):
                    return True
            pruned.add(name)


def _passes(strategy: str, preemptor_new: float, target_old: float, target_new: float) -> bool:
    """fairsharing/strategy.go: LessThanOrEqualToFinalShare, LessThanInitialShare."""
    if strategy == "LessThanOrEqualToFinalShare":
        return preemptor_new <= target_new
    return preemptor_new < target_old


def _above_threshold(candidate: int, incoming: int, threshold: int | None) -> bool:
    """hierarchical_preemption.go ``isAboveBorrowingThreshold``."""
    if candidate >= incoming:
        return True
    return threshold is not None and candidate > threshold


def _reason(variant: str) -> str:
    if variant == "WithinCQ":
        return IN_CLUSTER_QUEUE
    if variant == "ReclaimWhileBorrowing":
        return IN_COHORT_RECLAIM_WHILE_BORROWING
    return IN_COHORT_RECLAMATION
