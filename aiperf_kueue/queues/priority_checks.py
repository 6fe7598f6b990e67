"""Warnings about WorkloadPriorityClasses that cannot do what a priority promises.

Kueue orders a ClusterQueue's pending workloads by priority, but an admitted workload gives
way to a higher-priority one only through preemption: ``withinClusterQueue`` (inside the
ClusterQueue) or ``reclaimWithinCohort`` (quota lent to the cohort). Both default to
``Never`` (kueue NOTES §2 rule 12, §3 "Preemption"). AIPerf's "Kueue Integration" page lists
"priorityClass set but preemption never happens" as a troubleshooting item; these warnings
catch it at plan time. Two classes with one value are the same priority to Kueue.
"""

from __future__ import annotations

from collections.abc import Sequence

from aiperf_kueue.common.errors import key_path
from aiperf_kueue.config import ClusterQueue, StackConfig
from aiperf_kueue.config.expansion import JobEntry
from aiperf_kueue.upstream.kueue import DEFAULT_PRIORITY_CLASS, KueueTarget


def _acts_on_priority(cq: ClusterQueue, in_cohort: bool) -> bool:
    """Whether any preemption policy of ``cq`` can preempt an admitted workload for a pending one.

    ``reclaimWithinCohort`` counts only in a cohort: without one there is nothing to reclaim.
    """
    pre = cq.preemption
    within = (pre.within_cluster_queue if pre else None) or "Never"
    reclaim = ((pre.reclaim_within_cohort if pre else None) or "Never") if in_cohort else "Never"
    return within != "Never" or reclaim != "Never"


def classes_in_use(config: StackConfig) -> dict[str, dict[str, list[str]]]:
    """``{clusterQueue: {priority class: [who uses it]}}``, in config order.

    Users: ``jobs[i] <name>`` and ``sweeps[i] <name>`` in the ClusterQueue's namespaces (their own
    class, else the operator's default), and ``operator.defaultPriorityClass``, which the operator
    stamps on every job without a class in every namespace.
    """
    owner = {ns.name: cq.name for cq in config.queues.cluster_queues for ns in cq.namespaces}
    used: dict[str, dict[str, list[str]]] = {cq.name: {} for cq in config.queues.cluster_queues}
    default = config.operator.default_priority_class
    entries = [("jobs", i, j.name, j.namespace, j.priority_class) for i, j in enumerate(config.jobs)]
    entries += [("sweeps", i, s.name, s.namespace, s.priority_class) for i, s in enumerate(config.sweeps)]
    for key, i, name, namespace, priority_class in entries:
        cls = priority_class or default
        if cls is not None and namespace in owner:
            used[owner[namespace]].setdefault(cls, []).append(f"{key_path(key, i)} {name}")
    if default is not None:
        for cq in config.queues.cluster_queues:
            if cq.namespaces:
                used[cq.name].setdefault(default, []).append("operator.defaultPriorityClass")
    return {cq: classes for cq, classes in used.items() if classes}


def priority_warnings(config: StackConfig) -> list[str]:
    """Priority classes used by a ClusterQueue whose preemption ignores priority; classes sharing a value."""
    out: list[str] = []
    used = classes_in_use(config)
    for i, cq in enumerate(config.queues.cluster_queues):
        in_cohort = config.queues.cohort_of(cq) is not None
        if cq.name not in used or _acts_on_priority(cq, in_cohort):
            continue
        users = "; ".join(f"{cls} ({', '.join(who)})" for cls, who in used[cq.name].items())
        remedy = (
            "set preemption.withinClusterQueue: LowerPriority, and/or preemption.reclaimWithinCohort: "
            "LowerPriority (or Any) to take back lent quota"
            if in_cohort
            else "set preemption.withinClusterQueue: LowerPriority (reclaimWithinCohort acts only in a cohort)"
        )
        out.append(
            f"{key_path('queues', 'clusterQueues', i, 'preemption')}: ClusterQueue {cq.name!r} admits jobs with "
            f"WorkloadPriorityClass {users}, but its preemption cannot act on priority (withinClusterQueue "
            f"and reclaimWithinCohort are Never or unset{'' if in_cohort else ', and it is in no cohort'}): a "
            f"higher-priority job only moves ahead in the queue and never preempts an admitted one; {remedy}"
        )
    first: dict[int, int] = {}
    for j, pc in enumerate(config.priority_classes):
        if pc.value in first:
            other = config.priority_classes[first[pc.value]]
            out.append(
                f"{key_path('priorityClasses', j, 'value')}: WorkloadPriorityClasses {other.name!r} "
                f"({key_path('priorityClasses', first[pc.value])}) and {pc.name!r} share value {pc.value}: Kueue "
                "compares values only, so neither is ordered ahead of nor preempts the other; give them distinct values"
            )
        else:
            first[pc.value] = j
    return out


def default_class_warning(config: StackConfig, entries: Sequence[JobEntry], target: KueueTarget) -> str | None:
    """From Kueue 0.20 a WorkloadPriorityClass named ``default`` is the priority of every workload
    that names none (WorkloadPriorityClassDefaulting; issue 31): the warning names every declared
    job it would silently apply to, and the ``aiperf kube profile`` runs it would. None before 0.20,
    without such a class, or when ``operator.defaultPriorityClass`` gives every job one."""
    if not target.priority_class_defaulting or config.operator.default_priority_class is not None:
        return None
    index = next((j for j, pc in enumerate(config.priority_classes) if pc.name == DEFAULT_PRIORITY_CLASS), None)
    if index is None:
        return None
    value = config.priority_classes[index].value
    jobs = [f"{key_path(*e.origin)} {e.sweep or e.name}" for e in entries if e.priority_class is None]
    applies = ", ".join(dict.fromkeys(jobs)) if jobs else "no declared job (each names its class)"
    return (
        f"{key_path('priorityClasses', index, 'name')}: Kueue {target.version_text} makes the WorkloadPriorityClass "
        f"named {DEFAULT_PRIORITY_CLASS!r} (value {value}) the priority of every workload that names none "
        f"(WorkloadPriorityClassDefaulting, from Kueue 0.20): it silently applies to {applies}, and to every "
        "aiperf kube profile run without --priority-class; name the class on purpose (priorityClass per job, or "
        "operator.defaultPriorityClass), or rename it if no job should get it by default"
    )
