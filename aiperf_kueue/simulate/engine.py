"""The scheduler's cycles and the event loop over simulated time.

Upstream: kueue v0.19.2 pkg/scheduler/scheduler.go, pkg/cache/queue/cluster_queue.go

Time advances from event to event (a stack revision applied, a job finishing, a waitForPodsReady
timeout, a requeue after backoff). At each moment the scheduler runs cycles until nothing changes:
Kueue's scheduler runs them back to back while they make progress, far faster than any job runs.
"""

# Kueue v0.19.2, pkg/scheduler/scheduler.go: schedule (one head per ClusterQueue, nominate, order the
# entries, processEntry: NoFit, Preempt, "no longer fits after processing another workload", admit),
# the classical iterator's order (not borrowing, priority, FIFO) and pkg/scheduler/fair_sharing_iterator.go
# (non-borrowing first, lowest share after admission, priority, FIFO).
# Kueue v0.19.2, pkg/cache/queue/cluster_queue.go: heads in priority then queue-order timestamp
# order; StrictFIFO keeps a head that cannot be admitted, BestEffortFIFO parks it as inadmissible until
# quota is released in its cohort (QueueInadmissibleWorkloads).
# Kueue v0.19.2, pkg/controller/core/workload_controller.go and apis/config/v1beta2/defaults.go:
# waitForPodsReady (timeout, blockAdmission, requeuingStrategy backoff 60 s doubling to 3600 s,
# queue order by eviction time).

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiperf_kueue.simulate.assign import PREEMPT, Assignment, assign
from aiperf_kueue.simulate.preempt import Preemptor
from aiperf_kueue.simulate.quota import Quota
from aiperf_kueue.simulate.world import SimJob, World


@dataclass(frozen=True)
class Revision:
    """One stack revision applied at ``at`` seconds, observed at ``observe_at`` (``None``: not observed)."""

    label: str
    at: float
    world: World
    observe_at: float | None = None


@dataclass
class Event:
    """Something that happened to one job."""

    time: float
    job: tuple[str, str]
    kind: str
    """``created``, ``admitted``, ``preempted``, ``evicted``, ``finished`` or ``deleted``."""
    detail: str = ""


@dataclass
class Outcome:
    """What the simulation found."""

    events: list[Event] = field(default_factory=list)
    jobs: dict[tuple[str, str], SimJob] = field(default_factory=dict)
    usage: dict[str, list[tuple[float, dict[tuple[str, str], int]]]] = field(default_factory=dict)
    """Per ClusterQueue: its usage after each moment it changed."""
    observations: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)
    """Per observed revision: its label and one record per job (the e2e's record shape)."""
    end: float = 0.0
    worlds: list[World] = field(default_factory=list)


class Simulation:
    """Kueue's admission over a sequence of stack revisions."""

    def __init__(self, revisions: Sequence[Revision], *, pods_ready_seconds: float = 0.0, reverse_ties: bool = False):
        self.revisions = list(revisions)
        self.pods_ready_seconds = pods_ready_seconds
        self.reverse_ties = reverse_ties
        self.out = Outcome()
        self.world: World | None = None
        self.quota: Quota | None = None
        self.jobs: dict[tuple[str, str], SimJob] = {}
        self.pending: dict[str, list[SimJob]] = {}
        self.admitted: dict[str, list[SimJob]] = {}
        self.heap: list[tuple[float, int, str, Any]] = []
        self.seq = 0
        self.now = 0.0
        self.memo: dict[tuple[Any, ...], Assignment] = {}
        """Assignments made at quota version :attr:`memo_version`, by :func:`_shape_key`: the flavor assigner's
        answer depends only on the ClusterQueue, the job's priority, queue time and podSets, and the quota."""
        self.memo_version = -1

    # ------------------------------------------------------------------ events

    def _push(self, time: float, kind: str, payload: Any) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (time, self.seq, kind, payload))

    def run(self, until: float | None = None) -> Outcome:
        """Run to ``until`` seconds (``None``: until nothing more can happen)."""
        for rev in self.revisions:
            self._push(rev.at, "revision", rev)
            if rev.observe_at is not None:
                self._push(rev.observe_at, "observe", rev)
        while self.heap:
            t = self.heap[0][0]
            if until is not None and t > until:
                break
            self.now = t
            due: list[tuple[str, Any]] = []
            while self.heap and self.heap[0][0] == t:
                _, _, kind, payload = heapq.heappop(self.heap)
                due.append((kind, payload))
            for kind, payload in due:
                if kind in ("finish", "timeout"):
                    job, epoch = payload
                    if job.epoch == epoch and job.state == "admitted":
                        self._finish(job) if kind == "finish" else self._evict(job, "PodsReadyTimeout", "")
            self._schedule()
            for kind, payload in due:
                if kind == "observe":
                    self.out.observations.append((payload.label, self.records()))
            revisions = [p for k, p in due if k == "revision"]
            for rev in revisions:
                self._apply(rev)
            if revisions:
                self._schedule()
        self.out.end = until if until is not None else self.now
        self.out.jobs = self.jobs
        return self.out

    # ------------------------------------------------------------------ revisions

    def _apply(self, rev: Revision) -> None:
        world = rev.world
        self.out.worlds.append(world)
        old = self.jobs
        keep = {j.key for j in world.jobs}
        for key, job in old.items():
            if key not in keep and job.state in ("pending", "admitted"):
                self._release(job)
                job.state = "deleted"
                self._log(job, "deleted", f"left the stack at revision {rev.label}")
        self.world = world
        self.quota = Quota(world.queues, world.cohorts)
        self.memo.clear()
        self.memo_version = -1
        self.pending = {name: [] for name in world.queues}
        self.admitted = {name: [] for name in world.queues}
        count = len(world.jobs)
        for new in world.jobs:
            found = old.get(new.key)
            job = new if found is None or found.state == "deleted" else found
            if job is not new and job.run_seconds is None and new.run_seconds is not None and not new.estimated:
                self._give_run_time(job, new.run_seconds)
            if job is new:
                job.created = job.queue_time = self.now
                job.tie = (count - job.order) if self.reverse_ties else job.order
                self.jobs[job.key] = job
                self._log(job, "created", f"revision {rev.label}")
            if job.cluster_queue not in world.queues:
                continue
            if job.state == "admitted":
                self.quota.add(job.cluster_queue, job.usage)
                self.admitted[job.cluster_queue].append(job)
            elif job.state == "pending":
                job.inadmissible = False
                self.pending[job.cluster_queue].append(job)
        for name in world.queues:
            self._sort(name)
        for name, cq in world.queues.items():
            if cq.stop_policy == "HoldAndDrain":
                for job in list(self.admitted[name]):
                    self._evict(job, "ClusterQueueStopped", "")
        self._record_usage()

    # ------------------------------------------------------------------ state changes

    def _log(self, job: SimJob, kind: str, detail: str = "") -> None:
        self.out.events.append(Event(self.now, job.key, kind, detail))

    def _sort(self, cq: str) -> None:
        self.pending[cq].sort(key=lambda j: (-j.priority, j.queue_time, j.tie))

    def _release(self, job: SimJob) -> None:
        assert self.quota is not None and self.world is not None
        if job.state == "admitted" and job.cluster_queue in self.world.queues:
            self.quota.add(job.cluster_queue, job.usage, -1)
            self.admitted[job.cluster_queue].remove(job)
            self._reactivate(job.cluster_queue)
        elif job.state == "pending" and job in self.pending.get(job.cluster_queue, []):
            self.pending[job.cluster_queue].remove(job)

    def _reactivate(self, cq_name: str) -> None:
        """Kueue's QueueInadmissibleWorkloads: quota was released, so every parked workload of the tree is retried."""
        assert self.world is not None and self.quota is not None
        root = self.quota.root(cq_name)
        for name in self.world.queues:
            if name == cq_name or self.quota.root(name) == root:
                for job in self.pending[name]:
                    job.inadmissible = False

    def _give_run_time(self, job: SimJob, seconds: float) -> None:
        """A later step's ``runSeconds`` for a job that had none, as the e2e applies it: a running job's pods
        end ``seconds`` after they started, or now if that is past (a run time once given stays)."""
        job.run_seconds, job.estimated = seconds, False
        if job.state == "admitted" and job.ready_at is not None:
            job.finish_at = max(job.ready_at + seconds, self.now)
            self._push(job.finish_at, "finish", (job, job.epoch))

    def _finish(self, job: SimJob) -> None:
        self._release(job)
        job.state = "finished"
        job.epoch += 1
        self._log(job, "finished")
        self._record_usage()

    def _evict(self, job: SimJob, reason: str, detail: str) -> None:
        assert self.world is not None
        self._release(job)
        job.state = "pending"
        job.epoch += 1
        job.inadmissible = False
        job.eviction_reasons.append(reason)
        if reason == "Preempted":
            job.preempted_count += 1
            self._log(job, "preempted", detail)
        else:
            self._log(job, "evicted", reason)
        if reason == "PodsReadyTimeout":
            ready = self.world.wait_for_pods_ready
            job.requeue_count += 1
            job.queue_time = self.now  # requeuingStrategy.timestamp: Eviction (Kueue's default)
            job.not_before = self.now + min(ready.backoff_base * 2 ** (job.requeue_count - 1), ready.backoff_max)
            self._push(job.not_before, "requeue", None)
        self.pending[job.cluster_queue].append(job)
        self._sort(job.cluster_queue)

    def _admit(self, job: SimJob, placed: Assignment) -> None:
        assert self.quota is not None and self.world is not None
        self.pending[job.cluster_queue].remove(job)
        self.quota.add(job.cluster_queue, placed.usage)
        self.admitted[job.cluster_queue].append(job)
        job.state = "admitted"
        job.epoch += 1
        job.usage, job.flavors = dict(placed.usage), dict(placed.flavors)
        job.admitted_at = self.now
        job.ready_at = self.now + self.pods_ready_seconds
        where = ", ".join(f"{r}: {f}" for r, f in placed.flavors.items())
        self._log(job, "admitted", f"{job.cluster_queue}" + (f" ({where})" if where else ""))
        ready = self.world.wait_for_pods_ready
        if ready.enabled and self.pods_ready_seconds > ready.timeout:
            self._push(self.now + ready.timeout, "timeout", (job, job.epoch))
        elif job.run_seconds is not None:
            job.finish_at = job.ready_at + job.run_seconds
            self._push(job.finish_at, "finish", (job, job.epoch))
        if ready.enabled and ready.block_admission and self.pods_ready_seconds > 0:
            self._push(job.ready_at, "ready", None)

    def _record_usage(self) -> None:
        assert self.quota is not None
        for name in self.quota.queues:  # ClusterQueues only: the report's usage is per ClusterQueue
            used = self.quota.usage[name]
            series = self.out.usage.setdefault(name, [])
            snapshot = {fr: v for fr, v in used.items() if v}
            if series and series[-1][0] == self.now:
                series[-1] = (self.now, snapshot)
            elif not series or series[-1][1] != snapshot:
                series.append((self.now, snapshot))

    # ------------------------------------------------------------------ the scheduler

    def _blocked(self) -> bool:
        """waitForPodsReady.blockAdmission: nothing is admitted while an admitted workload's pods are not ready."""
        assert self.world is not None
        ready = self.world.wait_for_pods_ready
        if not (ready.enabled and ready.block_admission):
            return False
        return any(j.ready_at is not None and j.ready_at > self.now for js in self.admitted.values() for j in js)

    def _head(self, cq_name: str) -> SimJob | None:
        assert self.world is not None
        cq = self.world.queues[cq_name]
        if cq.stop_policy != "None":
            return None
        for job in self.pending[cq_name]:
            if job.not_before > self.now:
                continue
            if cq.queueing_strategy == "StrictFIFO" or not job.inadmissible:
                return job
        return None

    def _schedule(self) -> None:
        if self.world is None:
            return
        bound = 4 * len(self.jobs) + 10
        changed = False
        cycles = 0
        while cycles < bound:
            if self._blocked():
                break
            skipped = self._skip_inadmissible_cycles(bound - cycles)
            if skipped:
                cycles += skipped
                changed = True
                continue
            if not self._cycle():
                break
            cycles += 1
            changed = True
        if changed:
            self._record_usage()

    def _placed(self, job: SimJob, preemptor: Preemptor) -> Assignment:
        """``job``'s assignment against the quota now (memoised per quota version and :func:`_shape_key`)."""
        assert self.world is not None and self.quota is not None
        if self.memo_version != self.quota.version:
            self.memo.clear()
            self.memo_version = self.quota.version
        key = _shape_key(job)
        placed = self.memo.get(key)
        if placed is None:
            world = self.world
            cq = world.queues[job.cluster_queue]
            placed = assign(job, cq, self.quota, world.flavors, preemptor, world.fair_sharing)
            self.memo[key] = placed
        return placed

    def _preemptor(self) -> Preemptor:
        assert self.world is not None and self.quota is not None
        world = self.world
        return Preemptor(
            world.queues, self.quota, self.admitted, fair_sharing=world.fair_sharing, strategies=world.strategies
        )

    def _skip_inadmissible_cycles(self, limit: int) -> int:
        """Do at once the next cycles (at most ``limit``) in which no head fits or can preempt; how many.

        In such a cycle nothing changes but each BestEffortFIFO head is set aside as inadmissible, and the next
        head of each queue is tried in the next cycle against the same quota. So cycle ``d`` of such a run tries
        the ``d``-th ready, admissible job of every BestEffortFIFO queue (a StrictFIFO queue keeps its head): the
        run ends at the first depth where some head fits or can preempt (that cycle is run by :meth:`_cycle`),
        and the jobs above that depth are the ones the skipped cycles would have set aside. Without it the
        scheduler would repeat one cycle over every ClusterQueue per job set aside (docs/simulate.md)."""
        assert self.world is not None
        preemptor = self._preemptor()
        walks: list[list[SimJob]] = []
        depth = limit
        for name, cq in self.world.queues.items():
            if cq.stop_policy != "None":
                continue
            now = self.now
            if cq.queueing_strategy == "StrictFIFO":
                head = next((j for j in self.pending[name] if j.not_before <= now), None)
                if head is not None and self._placed(head, preemptor).mode >= PREEMPT:
                    return 0
                continue
            walk = [j for j in self.pending[name] if j.not_before <= now and not j.inadmissible]
            walks.append(walk)
            # The queue is sorted, so jobs of one shape key (same answer) come in runs: one try per run.
            key: tuple[Any, ...] | None = None
            for index, job in enumerate(walk[:depth]):
                here = _shape_key(job)
                if here == key:
                    continue
                key = here
                if self._placed(job, preemptor).mode >= PREEMPT:
                    depth = index
                    break
        depth = min(depth, max((len(walk) for walk in walks), default=0))
        for walk in walks:
            for job in walk[:depth]:
                job.inadmissible = True
        return depth

    def _cycle(self) -> bool:
        """One scheduling cycle; whether anything changed."""
        assert self.world is not None and self.quota is not None
        world, quota = self.world, self.quota
        preemptor = self._preemptor()
        entries: list[tuple[SimJob, Assignment]] = []
        for name in world.queues:
            job = self._head(name)
            if job is not None:
                entries.append((job, self._placed(job, preemptor)))
        changed = False
        reserved: list[tuple[str, dict[tuple[str, str], int]]] = []
        preempted: set[tuple[str, str]] = set()
        for job, placed in self._in_order(entries):
            cq = world.queues[job.cluster_queue]
            if placed.mode < PREEMPT:
                if cq.queueing_strategy == "BestEffortFIFO" and not job.inadmissible:
                    job.inadmissible = True
                    changed = True
                continue
            if placed.mode == PREEMPT:
                if any(t.job.key in preempted for t in placed.targets):
                    continue  # overlapping targets with another workload this cycle: retried next cycle
                for t in placed.targets:
                    preempted.add(t.job.key)
                    if t.job.state == "admitted":
                        self._evict(t.job, "Preempted", f"by {job.namespace}/{job.name} ({t.reason})")
                quota.add(cq.name, placed.usage)  # held for the preemptor for the rest of the cycle
                reserved.append((cq.name, placed.usage))
                changed = True
                continue
            if any(v > quota.available(cq, fr) for fr, v in placed.usage.items()):
                continue  # "Workload no longer fits after processing another workload"
            self._admit(job, placed)
            changed = True
        for name, usage in reserved:
            quota.add(name, usage, -1)
        return changed

    def _in_order(self, entries: list[tuple[SimJob, Assignment]]) -> Iterator[tuple[SimJob, Assignment]]:
        """The cycle's entries in the order the scheduler takes them. Classical order is fixed for the cycle (a stable
        sort gives what repeated minima give); fair sharing's depends on each admission, so it is picked one by one."""
        assert self.world is not None
        if not self.world.fair_sharing:
            entries.sort(key=lambda e: (e[1].borrowing, -e[0].priority, e[0].queue_time, e[0].tie))
            yield from entries
            return
        while entries:
            yield entries.pop(self._pick(entries))

    def _pick(self, entries: list[tuple[SimJob, Assignment]]) -> int:
        """The next entry: classical order, or fair sharing's (fair_sharing_iterator.go): in the tree of the first
        entry's ClusterQueue, a tournament from the root down, each level comparing its children by their share with
        the entry's usage added (a ClusterQueue for its own entry, a Cohort for the winner below it)."""
        assert self.world is not None and self.quota is not None
        if not self.world.fair_sharing:
            order = [(p.borrowing, 0.0, -j.priority, j.queue_time, j.tie) for j, p in entries]
            return min(range(len(entries)), key=order.__getitem__)
        quota = self.quota
        root = quota.root(entries[0][0].cluster_queue)
        version = quota.version
        # Per entry, per Cohort on its path, the key its child on that path has there.
        levels: list[dict[str, tuple[bool, float, int, float, int]]] = []
        for j, p in entries:
            keys: dict[str, tuple[bool, float, int, float, int]] = {}
            if quota.root(j.cluster_queue) == root:
                quota.add(j.cluster_queue, p.usage)
                node = j.cluster_queue
                for parent in quota.path(j.cluster_queue):
                    # FairSharingPrioritizeNonBorrowing: borrowing on what it requests, at this level.
                    over = quota.subtree[node]
                    borrowing = any(quota.usage[node].get(fr, 0) > over.get(fr, 0) for fr in p.usage)
                    keys[parent] = (borrowing, quota.node_share(node), -j.priority, j.queue_time, j.tie)
                    node = parent
                quota.add(j.cluster_queue, p.usage, -1)
            levels.append(keys)
        quota.version = version
        if root == entries[0][0].cluster_queue:  # no cohort: its own entry
            return 0
        return self._tournament(root, entries, levels)

    def _tournament(self, cohort: str, entries: list[tuple[SimJob, Assignment]], levels: list[dict[str, Any]]) -> int:
        """fair_sharing_iterator.go runTournament: the winners of the child Cohorts and the entries of the child
        ClusterQueues, compared by their key at ``cohort``; -1 when none is under it."""
        assert self.quota is not None
        candidates = [
            found
            for child, parent in self.quota.parent.items()
            if parent == cohort and child in self.quota.cohorts
            for found in [self._tournament(child, entries, levels)]
            if found >= 0
        ]
        candidates += [i for i, (j, _) in enumerate(entries) if self.quota.parent.get(j.cluster_queue) == cohort]
        if not candidates:
            return -1
        return min(candidates, key=lambda i: levels[i][cohort])

    # ------------------------------------------------------------------ observations

    def records(self) -> list[dict[str, Any]]:
        """One record per job now, in the e2e's shape (the fields the simulator predicts)."""
        out = []
        for job in self.jobs.values():
            if job.state == "deleted":
                continue
            placed = job.state in ("admitted", "finished")
            out.append(
                {
                    "job": job.name,
                    "namespace": job.namespace,
                    "admitted": job.state == "admitted" or job.state == "finished",
                    # The e2e records the ClusterQueue of the Workload's admission: none while not admitted.
                    "clusterQueue": job.cluster_queue if placed else None,
                    "flavors": dict(job.flavors) if placed else {},
                    "preemptedCount": job.preempted_count,
                    "finished": job.state == "finished",
                }
            )
        return out


def _shape_key(job: SimJob) -> tuple[Any, ...]:
    """What of ``job`` the flavor assigner and preemption read: two pending jobs of one ClusterQueue with the same
    key get the same assignment from the same quota (preemption compares priority and queue time, never identity)."""
    if not job.shape:
        shape = tuple((tuple(ps.need.items()), ps.placement) for ps in job.podsets)
        # One small int per distinct shape: the key is hashed and compared in the scheduler's hot loops, and a
        # Placement (a frozen dataclass) hashes and compares field by field, again on every use.
        job.shape = (_SHAPES.setdefault(shape, len(_SHAPES)),)
    return (job.cluster_queue, job.priority, job.queue_time, job.shape)


_SHAPES: dict[tuple[Any, ...], int] = {}
"""Every podSets shape seen, by its number (a handful per stack)."""
