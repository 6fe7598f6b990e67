"""The quota arithmetic Kueue's cache does on a Cohort tree, at one moment of the simulation.

Upstream: kueue v0.19.2 pkg/cache/scheduler/resource_node.go, pkg/cache/scheduler/fair_sharing.go,
pkg/scheduler/preemption/classical/hierarchical_preemption.go

Amounts are integers in milli-units of each resource, as in :mod:`aiperf_kueue.simulate.world`.
"""

# Kueue v0.19.2, pkg/cache/scheduler/resource_node.go: available, potentialAvailable, addUsage/removeUsage
# climbing the Cohort tree, and each Cohort's SubtreeQuota (accumulateFromChild); one flat cohort is a tree of one.
# Kueue v0.19.2, pkg/cache/scheduler/fair_sharing.go: dominantResourceShare of a ClusterQueue or a Cohort.
# Kueue v0.19.2, pkg/scheduler/preemption/classical/hierarchical_preemption.go: getNodeHeight and
# FindHeightOfLowestSubtreeThatFits.

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from aiperf_kueue.simulate.world import FR, SimClusterQueue, SimCohort


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
