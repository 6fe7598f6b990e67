"""``aiperf-kueue explain``: why each pending, evicted or preempted AIPerfJob is not running, in Kueue's terms,
and its place in its ClusterQueue, from the live objects (Workloads, ClusterQueues, LocalQueues, AIPerfJobs).

Upstream: kueue v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go (the quota messages of a Workload's
QuotaReserved condition), pkg/cache/queue/cluster_queue.go (queue order), apis/kueue/v1beta2 (the objects' fields).

Pure: plain objects in (as the API returns them), :class:`Explanation` out. The reasons, first match first:

- the LocalQueue or ClusterQueue is missing, stopped (``stopPolicy``) or inactive;
- ``behind N workloads under StrictFIFO`` (the ClusterQueue admits only its head);
- waiting in backoff after ``waitForPodsReady`` evictions (``evicted N times by waitForPodsReady``);
- Kueue's own quota message, in short: ``short by X of R on flavor F in ClusterQueue Q`` (insufficient unused
  quota) or ``needs X of R on flavor F, more than ClusterQueue Q can ever hold``; with ``waiting for reclaim
  from Q2`` when a ClusterQueue of the cohort tree borrows that resource and this one cannot reclaim it
  (``reclaimWithinCohort: Never``);
- otherwise Kueue's message as written.

A job preempted before says so too (``preempted N times (InCohortReclamation)``).
"""

# Kueue v0.19.2, pkg/scheduler/flavorassigner/flavorassigner.go: "insufficient unused quota for %s in flavor %s,
# %s more needed" and "insufficient quota for %s in flavor %s, ... > maximum capacity (%s)"; pkg/cache/queue/
# cluster_queue.go: queue order by priority, then the queue-order timestamp (eviction time after a
# waitForPodsReady requeue, else creation).

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from aiperf_kueue.common import quantity

JOB_LABEL = "aiperf-kueue/job"
_UNUSED = re.compile(r"insufficient unused quota for (\S+) in flavor (\S+), (\S+) more needed")
_MAXIMUM = re.compile(
    r"insufficient quota for (\S+) in flavor (\S+), .*?request \((\S+)\) > maximum capacity \((\S+)\)"
)


@dataclass(frozen=True)
class Explanation:
    """One job that is not running, and why."""

    namespace: str
    job: str
    """The job's config name (its ``aiperf-kueue/job`` label), else the AIPerfJob's name."""
    state: str
    """``pending`` (waiting for quota), ``evicted`` (requeued after waitForPodsReady) or ``no workload``."""
    cluster_queue: str | None
    position: int | None
    """1-based place among the ClusterQueue's pending Workloads in Kueue's queue order."""
    queued: int
    """How many Workloads are pending in that ClusterQueue."""
    reasons: tuple[str, ...] = field(default_factory=tuple)

    def line(self) -> str:
        """``ns/job: pending, 2 of 3 in ClusterQueue q: reason; reason``."""
        where = (
            f", {self.position} of {self.queued} in ClusterQueue {self.cluster_queue}"
            if self.position is not None
            else ""
        )
        return f"{self.namespace}/{self.job}: {self.state}{where}: {'; '.join(self.reasons)}"

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` shape."""
        return {
            "namespace": self.namespace,
            "job": self.job,
            "state": self.state,
            "clusterQueue": self.cluster_queue,
            "position": self.position,
            "queued": self.queued,
            "reasons": list(self.reasons),
        }


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    status = obj.get("status")
    for c in (status.get("conditions") if isinstance(status, Mapping) else None) or []:
        if isinstance(c, Mapping) and c.get("type") == kind:
            return c
    return None


def _true(obj: Mapping[str, Any], kind: str) -> bool:
    return (_condition(obj, kind) or {}).get("status") == "True"


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, Mapping) else {}


def _evictions(workload: Mapping[str, Any], reason: str) -> int:
    stats = _status(workload).get("schedulingStats")
    evictions = stats.get("evictions") if isinstance(stats, Mapping) else None
    return sum(int(e.get("count", 0)) for e in evictions or [] if isinstance(e, Mapping) and e.get("reason") == reason)


def _queue_time(workload: Mapping[str, Any]) -> str:
    """Kueue's queue-order timestamp (requeuingStrategy.timestamp Eviction, its default): the last eviction's
    time after a waitForPodsReady requeue, else creation. RFC 3339 strings of one format compare as times."""
    evicted = _condition(workload, "Evicted")
    if evicted is not None and evicted.get("reason") == "PodsReadyTimeout":
        return str(evicted.get("lastTransitionTime") or "")
    return str(_meta(workload).get("creationTimestamp") or "")


def _order_key(workload: Mapping[str, Any]) -> tuple[int, str, str]:
    priority = _spec(workload).get("priority")
    return (-(priority if isinstance(priority, int) else 0), _queue_time(workload), str(_meta(workload).get("name")))


def _amount(resource: str, value: Any) -> Fraction:
    try:
        return quantity.parse(value) if isinstance(value, (str, int, float)) else Fraction(0)
    except (ValueError, ZeroDivisionError):
        return Fraction(0)


def _over_nominal(cq: Mapping[str, Any], flavor: str, resource: str) -> bool:
    """Whether ``cq`` holds more of ``resource`` on ``flavor`` than its nominal quota (it borrows)."""
    nominal: Fraction | None = None
    for group in _spec(cq).get("resourceGroups") or []:
        for f in (group.get("flavors") if isinstance(group, Mapping) else None) or []:
            if isinstance(f, Mapping) and f.get("name") == flavor:
                for r in f.get("resources") or []:
                    if isinstance(r, Mapping) and r.get("name") == resource:
                        nominal = _amount(resource, r.get("nominalQuota"))
    for f in _status(cq).get("flavorsReservation") or []:
        if isinstance(f, Mapping) and f.get("name") == flavor:
            for r in f.get("resources") or []:
                if isinstance(r, Mapping) and r.get("name") == resource:
                    return _amount(resource, r.get("total")) > (nominal or Fraction(0))
    return False


def _root(cohort: str, parents: Mapping[str, str]) -> str:
    """The root of the Cohort tree ``cohort`` is in (``parents``: each Cohort's ``spec.parentName``)."""
    seen = {cohort}
    while cohort in parents and parents[cohort] not in seen:  # a cycle (Kueue disables the tree) ends the climb
        cohort = parents[cohort]
        seen.add(cohort)
    return cohort


def _quota_reasons(
    message: str, cq_name: str, cqs: Mapping[str, Mapping[str, Any]], parents: Mapping[str, str]
) -> list[str]:
    """Kueue's quota message in short, with the ClusterQueues of the cohort tree that borrow what is missing."""
    found = _UNUSED.search(message)
    if found is not None:
        resource, flavor, more = found.groups()
        out = [f"short by {more} of {resource} on flavor {flavor} in ClusterQueue {cq_name}"]
        cq = cqs.get(cq_name, {})
        cohort = _spec(cq).get("cohortName")
        if cohort:
            # Reclaim reaches every borrower under the same root (Kueue's hierarchical preemption).
            root = _root(str(cohort), parents)
            borrowers = sorted(
                name
                for name, other in cqs.items()
                if name != cq_name
                and _spec(other).get("cohortName")
                and _root(str(_spec(other).get("cohortName")), parents) == root
                and _over_nominal(other, flavor, resource)
            )
            if borrowers:
                preemption = _spec(cq).get("preemption")
                reclaim = preemption.get("reclaimWithinCohort") if isinstance(preemption, Mapping) else None
                if reclaim in (None, "Never"):
                    out.append(f"waiting for reclaim from {', '.join(borrowers)} (reclaimWithinCohort: Never)")
                else:
                    out.append(f"{', '.join(borrowers)} borrow it (reclaimWithinCohort: {reclaim})")
        return out
    found = _MAXIMUM.search(message)
    if found is not None:
        resource, flavor, request, maximum = found.groups()
        return [
            f"needs {request} of {resource} on flavor {flavor}, more than ClusterQueue {cq_name} can ever hold "
            f"({maximum})"
        ]
    return []


def explain(
    workloads: Sequence[Mapping[str, Any]],
    cluster_queues: Sequence[Mapping[str, Any]],
    local_queues: Sequence[Mapping[str, Any]],
    aiperf_jobs: Sequence[Mapping[str, Any]],
    namespaces: set[str] | None = None,
    cohorts: Sequence[Mapping[str, Any]] = (),
) -> list[Explanation]:
    """Every AIPerfJob (of ``namespaces``, all when ``None``) that is pending, evicted or has no Workload yet,
    explained; admitted and finished jobs are left out. Sorted by namespace and job. ``cohorts``: the Cohort
    objects, whose ``parentName`` makes a tree (without them every ``cohortName`` is a root of its own)."""
    cqs = {str(_meta(cq).get("name")): cq for cq in cluster_queues}
    parents = {
        str(_meta(c).get("name")): str(_spec(c).get("parentName")) for c in cohorts if _spec(c).get("parentName")
    }
    lqs = {(str(_meta(lq).get("namespace")), str(_meta(lq).get("name"))): lq for lq in local_queues}
    by_jobset: dict[tuple[str, str], Mapping[str, Any]] = {}
    for w in workloads:
        for owner in _meta(w).get("ownerReferences") or []:
            if isinstance(owner, Mapping) and owner.get("kind") == "JobSet":
                by_jobset[(str(_meta(w).get("namespace")), str(owner.get("name")))] = w

    def cq_of(w: Mapping[str, Any]) -> str | None:
        lq = lqs.get((str(_meta(w).get("namespace")), str(_spec(w).get("queueName"))))
        name = _spec(lq).get("clusterQueue") if lq is not None else None
        return str(name) if name else None

    def waiting(w: Mapping[str, Any]) -> bool:
        return not _true(w, "QuotaReserved") and not _true(w, "Finished")

    queues: dict[str, list[Mapping[str, Any]]] = {}
    for w in workloads:
        name = cq_of(w)
        if name is not None and waiting(w):
            queues.setdefault(name, []).append(w)
    for pending in queues.values():
        pending.sort(key=_order_key)

    out: list[Explanation] = []
    for job in aiperf_jobs:
        meta = _meta(job)
        namespace = str(meta.get("namespace"))
        if namespaces is not None and namespace not in namespaces:
            continue
        labels = meta.get("labels") if isinstance(meta.get("labels"), Mapping) else {}
        name = str((labels or {}).get(JOB_LABEL) or meta.get("name"))
        jobset = _status(job).get("jobSetName")
        workload = by_jobset.get((namespace, str(jobset))) if jobset else None
        if workload is None:
            phase = _status(job).get("phase")
            if phase in ("Completed", "Failed", "Cancelled"):
                continue
            out.append(
                Explanation(
                    namespace,
                    name,
                    "no workload",
                    None,
                    None,
                    0,
                    (f"the operator has not created its JobSet's Workload yet (operator phase {phase or 'none'})",),
                )
            )
            continue
        if not waiting(workload):
            continue
        out.append(_explain_one(workload, namespace, name, cq_of(workload), queues, cqs, lqs, parents))
    return sorted(out, key=lambda e: (e.namespace, e.job))


def _explain_one(
    w: Mapping[str, Any],
    namespace: str,
    name: str,
    cq_name: str | None,
    queues: Mapping[str, list[Mapping[str, Any]]],
    cqs: Mapping[str, Mapping[str, Any]],
    lqs: Mapping[tuple[str, str], Mapping[str, Any]],
    parents: Mapping[str, str],
) -> Explanation:
    reasons: list[str] = []
    ready_evictions = _evictions(w, "PodsReadyTimeout")
    preemptions = _evictions(w, "Preempted")
    state = "evicted" if ready_evictions else "pending"
    queue_name = str(_spec(w).get("queueName") or "")
    lq = lqs.get((namespace, queue_name))
    pending = queues.get(cq_name or "", [])
    position = next((i + 1 for i, other in enumerate(pending) if other is w), None)
    cq = cqs.get(cq_name or "")
    if lq is None:
        reasons.append(f"LocalQueue {namespace}/{queue_name or '(none)'} does not exist")
    elif _spec(lq).get("stopPolicy") not in (None, "None"):
        reasons.append(f"LocalQueue {namespace}/{queue_name} stopped (stopPolicy: {_spec(lq).get('stopPolicy')})")
    elif cq is None:
        reasons.append(f"ClusterQueue {cq_name} of LocalQueue {namespace}/{queue_name} does not exist")
    elif _spec(cq).get("stopPolicy") not in (None, "None"):
        reasons.append(f"ClusterQueue {cq_name} stopped (stopPolicy: {_spec(cq).get('stopPolicy')})")
    elif (_condition(cq, "Active") or {}).get("status") == "False":
        active = _condition(cq, "Active") or {}
        reasons.append(f"ClusterQueue {cq_name} inactive ({active.get('reason')}: {active.get('message')})")
    else:
        strict = _spec(cq).get("queueingStrategy") == "StrictFIFO"
        if strict and position is not None and position > 1:
            head = pending[0]
            reasons.append(
                f"behind {position - 1} workloads under StrictFIFO (head: "
                f"{_meta(head).get('namespace')}/{_meta(head).get('name')})"
            )
        if ready_evictions:
            requeue = _status(w).get("requeueState")
            at = requeue.get("requeueAt") if isinstance(requeue, Mapping) else None
            reasons.append(
                f"evicted {ready_evictions} time{'s' if ready_evictions != 1 else ''} by waitForPodsReady"
                + (f", requeued at {at}" if at else "")
            )
        if not reasons or not strict:
            message = str((_condition(w, "QuotaReserved") or {}).get("message") or "")
            short = _quota_reasons(message, cq_name or "", cqs, parents)
            if short:
                reasons += short
            elif message:
                reasons.append(f"Kueue: {message}")
            elif not reasons:
                reasons.append("not yet considered by Kueue's scheduler")
    if preemptions:
        preempted = _condition(w, "Preempted") or {}
        why = f" ({preempted.get('reason')})" if preempted.get("reason") else ""
        reasons.append(f"preempted {preemptions} time{'s' if preemptions != 1 else ''}{why}")
    return Explanation(namespace, name, state, cq_name, position, len(pending), tuple(reasons))
