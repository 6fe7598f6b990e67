"""Kueue's cross-checks of the queue config, apart from the quota arithmetic.

Upstream: kueue v0.19.2 pkg/webhooks/clusterqueue_webhook.go, pkg/webhooks/resourceflavor_webhook.go

Names are unique, the resource group fits Kueue's limits, extra covered resources exist in some
pool, pools are in an order that keeps benchmark clients off GPU nodes, each ClusterQueue's
policies are ones Kueue accepts, namespaces and priority classes are sound, and every
ClusterQueue can admit something. :func:`aiperf_kueue.queues.planner.plan_queues` runs them while it
computes the quotas, collecting problems and warnings in one :class:`Checks` (kueue NOTES §2).
"""

from __future__ import annotations

from fractions import Fraction

from aiperf_kueue.common import quantity
from aiperf_kueue.common.errors import Problem, key_path
from aiperf_kueue.config import ClusterQueue, Pool, StackConfig
from aiperf_kueue.config.stack import unmanaged_namespaces
from aiperf_kueue.queues.queue_plan import PoolTotal, QueuePlan, Quotas
from aiperf_kueue.upstream.kueue import DEFAULT_LOCAL_QUEUE, MAX_QUOTAS_PER_GROUP, KueueTarget

#: Namespaces every cluster has: ``create: true`` would fail with AlreadyExists.
BUILTIN_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})


class Checks:
    """Collects problems and warnings while planning."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.warnings: list[str] = []

    def error(self, path: str, message: str) -> None:
        """Record a problem at the config key ``path``."""
        self.problems.append(Problem(path, message))


def _unique(checks: Checks, named: list[tuple[tuple[str | int, ...], str]], what: str) -> None:
    first: dict[str, tuple[str | int, ...]] = {}
    for loc, name in named:
        if name in first:
            checks.error(key_path(*loc), f"duplicate {what} name {name!r} (also at {key_path(*first[name])})")
        else:
            first[name] = loc


def check_duplicate_names(checks: Checks, config: StackConfig) -> None:
    """Pools, ClusterQueues and priority classes each have unique names (quotas are keyed by name)."""
    _unique(checks, [(("inventory", "pools", i, "name"), p.name) for i, p in enumerate(config.inventory.pools)], "pool")
    _unique(
        checks,
        [(("queues", "clusterQueues", i, "name"), cq.name) for i, cq in enumerate(config.queues.cluster_queues)],
        "ClusterQueue",
    )
    _unique(
        checks,
        [(("priorityClasses", i, "name"), pc.name) for i, pc in enumerate(config.priority_classes)],
        "priority class",
    )


def check_group_limits(checks: Checks, target: KueueTarget, pools: list[Pool], covered: list[str]) -> None:
    """The one resource group within Kueue ``target``'s limits: flavors, covered resources, quotas."""
    limit = target.max_per_group
    if len(pools) > limit:
        checks.error(
            "inventory.pools",
            f"Kueue {target.version_text} allows at most {limit} flavors per ClusterQueue "
            f"resource group, got {len(pools)} pools",
        )
    if len(covered) > limit:
        checks.error(
            "queues.coveredResources",
            f"Kueue {target.version_text} allows at most {limit} covered resources, got "
            f"{len(covered)} ({', '.join(covered)})",
        )
    if (
        target.version >= (0, 14, 0)
        and len(pools) <= limit
        and len(covered) <= limit
        and len(pools) * len(covered) > MAX_QUOTAS_PER_GROUP
    ):
        checks.error(
            "inventory.pools",
            f"Kueue {target.version_text} allows at most {MAX_QUOTAS_PER_GROUP} resource quotas per ClusterQueue "
            f"resource group (flavors × covered resources), got {len(pools)} pools × {len(covered)} covered "
            f"resources = {len(pools) * len(covered)}; use fewer pools or fewer queues.coveredResources",
        )


def check_extra_resources(checks: Checks, config: StackConfig, pools: tuple[PoolTotal, ...], extras: list[str]) -> None:
    """An extra covered resource no pool has: Kueue's quota for it is 0 everywhere."""
    listed = config.queues.covered_resources
    for res in extras:
        if any(p.totals.get(res) for p in pools):
            continue
        where = key_path("queues", "coveredResources", listed.index(res))
        if res == "pods":
            # Kueue charges every workload pods = its pod count once pods is covered.
            checks.error(
                where,
                "'pods' is covered but no pool has any: Kueue charges every workload one pods unit per pod, so "
                "nothing could ever be admitted; set the pools' extraResources.pods (e.g. 110, the kubelet's "
                "default maxPods)",
            )
        else:
            checks.warnings.append(
                f"{where}: no pool sets extraResources[{res!r}], so its quota is 0 in every flavor; a pod that "
                f"requests {res} can never be admitted"
            )
    if "pods" in extras and any(p.totals.get("pods") for p in pools):
        for i, pool in enumerate(pools):
            if not pool.totals.get("pods"):
                checks.warnings.append(
                    f"inventory.pools[{i}]: pool {pool.name!r} has no extraResources.pods while pods is covered; "
                    "Kueue admits nothing on it"
                )


def warn_flavor_order(checks: Checks, pools: list[Pool]) -> None:
    """Warn when a GPU pool comes before a CPU-only one: Kueue tries flavors in that order."""
    seen_gpu = None
    for pool in pools:
        if pool.gpus and seen_gpu is None:
            seen_gpu = pool.name
        elif not pool.gpus and seen_gpu is not None:
            checks.warnings.append(
                f"inventory.pools: GPU pool {seen_gpu!r} is listed before CPU-only pool {pool.name!r}; "
                "AIPerf pods request no GPU and Kueue takes the first flavor that fits, so "
                "benchmark clients would land on GPU nodes. List CPU-only pools first."
            )
            return


def check_queue_policies(
    checks: Checks, here: tuple[str | int, ...], cq: ClusterQueue, target: KueueTarget, in_cohort: bool
) -> None:
    """A ClusterQueue's preemption, flavorFungibility and fairSharing as Kueue's webhook checks them."""
    pre = cq.preemption
    borrow_policy = pre.borrow_within_cohort.policy if pre and pre.borrow_within_cohort else "Never"
    if pre is not None and borrow_policy != "Never" and (pre.reclaim_within_cohort or "Never") == "Never":
        checks.error(
            key_path(*here, "preemption", "borrowWithinCohort", "policy"),
            "Kueue rejects borrowWithinCohort.policy other than Never while reclaimWithinCohort is "
            "Never; set reclaimWithinCohort to LowerPriority or Any",
        )
    ff = cq.flavor_fungibility
    if ff is not None and ff.preference is not None:
        if not target.has_may_stop_search:
            checks.error(
                key_path(*here, "flavorFungibility", "preference"),
                f"flavorFungibility.preference needs Kueue >= 0.15, target is {target.version_text}",
            )
        elif ff.when_can_borrow != "TryNextFlavor" or ff.when_can_preempt != "TryNextFlavor":
            checks.error(
                key_path(*here, "flavorFungibility", "preference"),
                "preference may only be set when whenCanBorrow and whenCanPreempt are both TryNextFlavor",
            )
    if cq.fair_sharing is not None:
        weight = quantity.parse(cq.fair_sharing.weight)
        if 0 < weight <= Fraction(1, 10**9):
            checks.error(
                key_path(*here, "fairSharing", "weight"),
                f"a positive weight must be larger than 1n, got {cq.fair_sharing.weight!r}",
            )


def check_namespaces(checks: Checks, config: StackConfig, target: KueueTarget) -> None:
    """Each benchmark namespace belongs to one ClusterQueue, is one Kueue manages and can be created,
    and has a LocalQueue jobs can name."""
    claimed: dict[str, tuple[str, tuple[str | int, ...]]] = {}
    for i, cq in enumerate(config.queues.cluster_queues):
        if not cq.namespaces:
            checks.warnings.append(
                f"queues.clusterQueues[{i}]: ClusterQueue {cq.name!r} has no namespaces; no job can be "
                "submitted to it (it can still lend its quota in a cohort)"
            )
        for j, ns in enumerate(cq.namespaces):
            here = ("queues", "clusterQueues", i, "namespaces", j)
            if ns.name in claimed:
                owner, loc = claimed[ns.name]
                checks.error(
                    key_path(*here, "name"),
                    f"namespace {ns.name!r} is already claimed by ClusterQueue {owner!r} "
                    f"({key_path(*loc)}); a namespace belongs to one ClusterQueue",
                )
            else:
                claimed[ns.name] = (cq.name, here)
            if ns.name in unmanaged_namespaces(config):
                checks.error(
                    key_path(*here, "name"),
                    f"Kueue's job webhooks ignore namespace {ns.name!r}, so jobs there are never queued; "
                    "use a dedicated benchmark namespace",
                )
            elif ns.create and ns.name in BUILTIN_NAMESPACES:
                checks.error(
                    key_path(*here, "create"),
                    f"namespace {ns.name!r} exists in every cluster, so creating it fails with AlreadyExists; "
                    "set create: false to only label it",
                )
            if ns.default_queue and ns.local_queue == DEFAULT_LOCAL_QUEUE:
                checks.error(
                    key_path(*here, "defaultQueue"),
                    f"localQueue is already named {DEFAULT_LOCAL_QUEUE!r}; defaultQueue would create it twice",
                )
            if ns.default_queue and not target.default_local_queue_defaulting:
                checks.warnings.append(
                    f"{key_path(*here, 'defaultQueue')}: Kueue {target.version_text} treats a LocalQueue named "
                    "'default' as the namespace default only with the LocalQueueDefaulting feature gate "
                    "(alpha, off; GA from Kueue 0.17); without it, jobs need an explicit queue label"
                )


def check_priority_classes(checks: Checks, config: StackConfig, target: KueueTarget) -> None:
    """WorkloadPriorityClass descriptions within the length the target's API allows."""
    cap = target.wpc_description_max
    for i, pc in enumerate(config.priority_classes):
        if cap is not None and len(pc.description) > cap:
            checks.error(
                key_path("priorityClasses", i, "description"),
                f"must be at most {cap} characters in {target.api}, got {len(pc.description)}",
            )


def check_unreachable_queues(checks: Checks, config: StackConfig, nominal: Quotas) -> None:
    """A ClusterQueue without quota: an error with no cohort to borrow from, else a warning."""
    for i, cq in enumerate(config.queues.cluster_queues):
        cohort = config.queues.cohort_of(cq)
        has_quota = any(a > 0 for amounts in nominal.get(cq.name, {}).values() for a in amounts.values())
        if has_quota:
            continue
        if cohort is None:
            checks.error(
                key_path("queues", "clusterQueues", i),
                f"ClusterQueue {cq.name!r} has no quota and no cohort to borrow from: nothing queued "
                "there could ever be admitted",
            )
        elif cq.namespaces:
            checks.warnings.append(
                f"queues.clusterQueues[{i}]: ClusterQueue {cq.name!r} has no nominal quota; its jobs run "
                "only on quota borrowed from cohort {0!r} and can be preempted by its owners".format(cohort)
            )


def warn_no_cpu_or_memory(checks: Checks, config: StackConfig, plan: QueuePlan) -> None:
    """Warn about a ClusterQueue with namespaces that no flavor gives both cpu and memory.

    Every AIPerf pod requests cpu and memory (unless ``resourceMode: none``), and one podSet
    takes all its resources from one flavor: without a flavor where both can be had, from its
    own quota or by borrowing in the cohort, no AIPerf job is ever admitted. Jobs declared in
    the stack are proven by the admission check; this covers jobs submitted by hand.
    """
    for i, cq in enumerate(config.queues.cluster_queues):
        if not cq.namespaces:  # already warned: nothing can be submitted to it
            continue
        in_cohort = plan.in_cohort(cq.name)
        if any(all(plan.max_capacity(cq.name, pool.name, r) > 0 for r in ("cpu", "memory")) for pool in plan.pools):
            continue
        reach = "own or borrowable in the cohort" if in_cohort else "own, and it has no cohort to borrow from"
        checks.warnings.append(
            f"queues.clusterQueues[{i}]: ClusterQueue {cq.name!r} has no flavor with both cpu and memory quota "
            f"({reach}); every AIPerf pod requests both, so no AIPerf job can be admitted there"
        )
