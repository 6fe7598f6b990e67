"""Which admitted Workloads Kueue preempts so that a pending one fits: classical and fair-sharing preemption.

Upstream: kueue v0.19.2 pkg/scheduler/preemption/preemption.go
"""

# Kueue v0.19.2, pkg/scheduler/preemption/preemption.go (classicalPreemptions, fillBackWorkloads,
# fairPreemptions, runFirstFsStrategy, runSecondFsStrategy, findCandidates, workloadFits),
# pkg/scheduler/preemption/classical/hierarchical_preemption.go and candidate_generator.go (candidate
# variants and order), pkg/scheduler/preemption/common/ordering.go (CandidatesOrdering),
# pkg/scheduler/preemption/common/preemption_policy.go (SatisfiesPreemptionPolicy),
# pkg/scheduler/preemption/fairsharing/ordering.go, least_common_ancestor.go, target.go and strategy.go;
# over a Cohort tree (one flat cohort is a tree of one), with the features on by default in v0.19.2
# (FairSharingPreemptWithinNominal, PrioritySortingWithinCohort).

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from aiperf_kueue.simulate.quota import Quota
from aiperf_kueue.simulate.world import FR, SimClusterQueue, SimJob

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
        # Each Cohort's ClusterQueues and Cohorts, in config order (Kueue's ChildCQs and ChildCohorts), from the
        # quota's tree.
        self.child_queues = {c: [queues[n] for n in kids if n in queues] for c, kids in quota.children.items()}
        self.child_cohorts = {c: [n for n in kids if n in quota.cohorts] for c, kids in quota.children.items()}

    def _subtree_queues(self, cohort: str) -> list[SimClusterQueue]:
        """Every ClusterQueue under ``cohort`` (Kueue's SubtreeClusterQueues)."""
        out = list(self.child_queues.get(cohort, []))
        for child in self.child_cohorts.get(cohort, []):
            out += self._subtree_queues(child)
        return out

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
        lca: dict[int, str] = {}  # per candidate (its order), the subtree root it was found under
        bwc_forbidden = cq.borrow_within_cohort == "Never"
        used = self.quota.usage[cq.name]
        under_nominal = all(used.get(fr, 0) < cq.nominal.get(fr, 0) for fr in frs)
        path = self.quota.path(cq.name)
        # The hierarchical advantage each level's candidates are gathered with: the job fits in the ClusterQueue's
        # own quota, or in the SubtreeQuota of a Cohort below that level (QuantitiesFitInQuota, climbing).
        advantages: list[bool] = []
        advantage, remaining = self._fits_in_quota(cq.name, usage)
        for root in path:
            advantages.append(advantage)
            if not advantage:
                fits, remaining = self._fits_in_quota(root, remaining)
                advantage = fits
        # Without the advantage at any level and with borrowWithinCohort Never, every candidate of another
        # ClusterQueue would be ReclaimWithoutBorrowing; when the queue is not under nominal either, the only attempt
        # allows borrowing and skips them all: they are not gathered (the same answer).
        reclaim = not bwc_forbidden or under_nominal or any(advantages)
        if path and cq.reclaim_within_cohort != "Never" and reclaim:
            # hierarchical_preemption.go collectCandidatesForHierarchicalReclaim: climb from the parent to the root,
            # each time gathering the borrowers of the subtree not yet searched.
            previous: str | None = None
            for root, advantage in zip(path, advantages, strict=True):
                found_here: list[tuple[SimClusterQueue, list[tuple[SimJob, str]]]] = []
                self._collect(root, previous, cq, frs, found_here)
                for other, _ in found_here:
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
                        lca[w.order] = root
                    theirs.append((other, found))
                    (hierarchy if advantage else by_priority).extend(found)
                previous = root
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
                    if not self._still_borrowing(w, frs, lca[w.order]):
                        continue
                self._remove(w)
                chosen.append(Target(w, _reason(variant)))
                if self._fits(cq, usage, borrow):
                    self._fill_back(cq, usage, chosen, borrow)
                    self._restore(chosen)
                    return chosen
            self._restore(chosen)
        return []

    def _fits_in_quota(self, name: str, requests: Mapping[FR, int]) -> tuple[bool, dict[FR, int]]:
        """Kueue's ``QuantitiesFitInQuota``: whether ``requests`` fit in the node's SubtreeQuota beside its usage,
        and what of them is left once the node's own unused local quota is taken."""
        quota, usage, local = self.quota.subtree[name], self.quota.usage[name], self.quota.local[name]
        fits = True
        remaining: dict[FR, int] = {}
        for fr, v in requests.items():
            if quota.get(fr, 0) < usage.get(fr, 0) + v:
                fits = False
            remaining[fr] = max(0, v - max(0, local.get(fr, 0) - usage.get(fr, 0)))
        return fits, remaining

    def _collect(
        self,
        cohort: str,
        skip: str | None,
        cq: SimClusterQueue,
        frs: set[FR],
        out: list[tuple[SimClusterQueue, list[tuple[SimJob, str]]]],
    ) -> None:
        """hierarchical_preemption.go collectCandidatesInSubtree: the ClusterQueues under ``cohort`` (but ``skip``'s
        subtree and ``cq``) that borrow in ``frs``, through Cohorts that borrow too."""
        for child in self.child_cohorts.get(cohort, []):
            if child == skip or self.quota.node_within_nominal(child, frs):
                continue
            self._collect(child, skip, cq, frs, out)
        borrowers = self.quota.borrowers(frs)
        for other in self.child_queues.get(cohort, []):
            if other is not cq and other.name in borrowers:
                out.append((other, []))

    def _still_borrowing(self, w: SimJob, frs: set[FR], lca: str) -> bool:
        """candidate_generator.go candidateIsValid: the candidate's ClusterQueue, and every Cohort between it and the
        subtree root it was found under, still borrow in ``frs``."""
        if self.quota.within_nominal(self.queues[w.cluster_queue], frs):
            return False
        for node in self.quota.path(w.cluster_queue):
            if node == lca:
                return True
            if self.quota.node_within_nominal(node, frs):
                return False
        return True

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
            for other in self._subtree_queues(self.quota.root(cq.name)):
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
        """The next target ClusterQueue (fairsharing/ordering.go ``Iter``): without a cohort the preemptor's own
        while it has candidates; in a tree, down from the root, at each level the child with the highest share."""
        if cq.cohort is None:
            return cq.name if cq.name not in pruned and pending.get(cq.name) else None
        root = self.quota.root(cq.name)
        on_path = set(self.quota.path(cq.name))
        while root not in pruned:
            found = self._next_target(root, cq, pending, pruned, on_path)
            if found is not None:
                return found
        return None

    def _next_target(
        self, cohort: str, cq: SimClusterQueue, pending: dict[str, list[SimJob]], pruned: set[str], on_path: set[str]
    ) -> str | None:
        """fairsharing/ordering.go ``nextTarget``; ``pruned`` holds pruned ClusterQueues and Cohorts by name."""
        best: str | None = None
        best_share = -1.0
        order = _ordering(cq.name)
        for other in self.child_queues.get(cohort, []):
            if other.name in pruned:
                continue
            share = self.quota.share(other)
            if (not self._borrows(other.name) and other is not cq) or not pending.get(other.name):
                pruned.add(other.name)
                continue
            if best is None or share > best_share:
                best, best_share = other.name, share
            elif share == best_share and order(pending[other.name][0]) < order(pending[best][0]):
                best = other.name
        best_cohort: str | None = None
        best_cohort_share = -1.0
        for child in self.child_cohorts.get(cohort, []):
            if child in pruned:
                continue
            share = self.quota.node_share(child)
            if not self._borrows(child) and child not in on_path:
                pruned.add(child)
            elif share >= best_cohort_share:
                best_cohort, best_cohort_share = child, share
        if best is None and best_cohort is None:
            pruned.add(cohort)
            return None
        if best_cohort is not None and best_cohort_share >= best_share:
            return self._next_target(best_cohort, cq, pending, pruned, on_path)
        return best

    def _borrows(self, name: str) -> bool:
        """A node's DRS ``IsBorrowing``: its usage of some flavor-resource is above its SubtreeQuota."""
        quota = self.quota.subtree[name]
        return any(u > quota.get(fr, 0) for fr, u in self.quota.usage[name].items())

    def _almost_lcas(self, cq: SimClusterQueue, target: str) -> tuple[str, str]:
        """fairsharing/least_common_ancestor.go: the children of the two ClusterQueues' least common ancestor on the
        way to each (the ClusterQueues themselves in one flat cohort), whose shares fair sharing compares."""
        mine = [cq.name, *self.quota.path(cq.name)]
        theirs = [target, *self.quota.path(target)]
        ancestors = set(mine)
        for k, node in enumerate(theirs[1:], 1):
            if node in ancestors:
                return mine[mine.index(node) - 1], theirs[k - 1]
        return cq.name, target

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
            mine, theirs = self._almost_lcas(cq, name)
            preemptor_new, target_old = self.quota.node_share(mine), self.quota.node_share(theirs)
            if preemptor_new == float("inf") and target_old != float("inf"):
                retry += queue
                queue.clear()
                continue
            while queue:
                w = queue.pop(0)
                self._remove(w)
                target_new = self.quota.node_share(theirs)
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
            mine, theirs = self._almost_lcas(cq, name)
            w = pending[name].pop(0)
            if self.quota.node_share(mine) < self.quota.node_share(theirs):
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
