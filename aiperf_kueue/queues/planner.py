"""The quota planner: GPU inventory and shares in, exact per-flavor quotas out.

Pure Python. Every rule Kueue enforces on the objects this program writes is checked before
anything is registered (kueue NOTES §2), and every combination that would leave a job waiting
forever is an error or a warning. This module computes the quotas (pool totals after headroom,
shares apportioned, explicit quotas and limits) with the problems found on the way; the other
cross-checks are :mod:`aiperf_kueue.queues.queue_checks`, and the result is a
:class:`~aiperf_kueue.queues.queue_plan.QueuePlan`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction

from aiperf_kueue.common import quantity
from aiperf_kueue.common.display import listed, show
from aiperf_kueue.common.errors import ConfigError, Problem, key_path
from aiperf_kueue.config import Pool, StackConfig
from aiperf_kueue.config.base import PoolQuantities, resource_quantity
from aiperf_kueue.queues.cohort_tree import check_cohort_tree
from aiperf_kueue.queues.queue_checks import (
    Checks,
    check_duplicate_names,
    check_extra_resources,
    check_group_limits,
    check_namespaces,
    check_priority_classes,
    check_queue_policies,
    check_unreachable_queues,
    warn_flavor_order,
    warn_no_cpu_or_memory,
)
from aiperf_kueue.queues.queue_plan import SHARE_SLACK, PoolTotal, QueuePlan, Quotas, apportion, unit_of

#: Resources Kubernetes itself defines: never a GPU resource, and a pool's cpu, memory or
#: extraResources give their amounts.
STANDARD_RESOURCES = frozenset({"cpu", "memory", "pods", "ephemeral-storage"})


def plan_queues(config: StackConfig, source: str, *, install_problems: Sequence[Problem] = ()) -> QueuePlan:
    """Check the whole config against Kueue's rules and compute every quota.

    Raises :class:`ConfigError` listing every problem; returns the plan otherwise. ``install_problems``:
    what the install checks found (:func:`aiperf_kueue.installs.install_checks.install_problems`), reported in
    config order among the queue problems, and an error above which an unreachable queue is not reported.
    """
    checks = Checks()
    target = config.kueue.target()
    inv, queues = config.inventory, config.queues

    check_duplicate_names(checks, config)
    if checks.problems:  # quotas are keyed by name: a duplicate would only echo as bogus quota errors
        raise ConfigError(source, checks.problems)

    gpu_pools: dict[str, str] = {}  # GPU resource -> the first pool with GPUs of it
    for i, pool in enumerate(inv.pools):
        res = pool.gpu_resource
        if not pool.gpus:
            continue
        if res in STANDARD_RESOURCES or res.startswith("hugepages-"):
            # Would duplicate a covered resource (the webhook rejects that) and overwrite its amount.
            checks.error(
                key_path("inventory", "pools", i, "gpuResource"),
                f"must be the extended resource the GPUs are requested by (such as nvidia.com/gpu), "
                f"got the standard resource {res!r}",
            )
        else:
            gpu_pools.setdefault(res, pool.name)
    covered = ["cpu", "memory", *gpu_pools]
    for i, res in enumerate(queues.covered_resources):
        if res in gpu_pools:
            checks.error(
                key_path("queues", "coveredResources", i),
                f"{res!r} is already covered as the gpuResource of pool {gpu_pools[res]!r} (the pools' GPU "
                "resources always are); remove it here, or give that pool a different gpuResource",
            )
        elif res in covered:
            checks.error(
                key_path("queues", "coveredResources", i),
                f"{res!r} is already covered (cpu, memory and the pools' GPU resources always are)",
            )
        else:
            covered.append(res)
    check_group_limits(checks, target, inv.pools, covered)

    pools = tuple(
        _pool_total(checks, i, pool, covered, set(gpu_pools), inv.headroom) for i, pool in enumerate(inv.pools)
    )
    check_extra_resources(checks, config, pools, [r for r in covered[2:] if r not in gpu_pools])
    pool_names = [p.name for p in inv.pools]
    warn_flavor_order(checks, inv.pools)

    tree = check_cohort_tree(checks, config)
    nominal, cohort_nominal = _nominal_quotas(checks, config, pools, covered)
    borrowing: Quotas = {}
    lending: Quotas = {}
    cohort_borrowing: Quotas = {}
    cohort_lending: Quotas = {}
    for j, cohort in enumerate(queues.cohorts):
        for alias, limit, store in (
            ("borrowingLimit", cohort.borrowing_limit, cohort_borrowing),
            ("lendingLimit", cohort.lending_limit, cohort_lending),
        ):
            if limit is not None and cohort.parent_name is not None:
                store[cohort.name] = _explicit(checks, ("queues", "cohorts", j, alias), limit, pool_names, covered)
    for i, cq in enumerate(queues.cluster_queues):
        here = ("queues", "clusterQueues", i)
        for attr, store in (("borrowing_limit", borrowing), ("lending_limit", lending)):
            given: PoolQuantities | None = getattr(cq, attr)
            alias = "borrowingLimit" if attr == "borrowing_limit" else "lendingLimit"
            if given is None:
                continue
            if queues.cohort_of(cq) is None:
                checks.error(
                    key_path(*here, alias),
                    f"{alias} needs a cohort (queues.cohort, or this queue's cohortName): Kueue accepts it "
                    "only for a ClusterQueue in a cohort",
                )
            store[cq.name] = _explicit(checks, (*here, alias), given, pool_names, covered)
        for pool_name, amounts in lending.get(cq.name, {}).items():
            for res, amount in amounts.items():
                own = nominal.get(cq.name, {}).get(pool_name, {}).get(res, Fraction(0))
                if amount > own:
                    checks.error(
                        key_path(*here, "lendingLimit", pool_name, res),
                        f"must be less than or equal to the nominalQuota: "
                        f"{quantity.canonical(res, amount)} > {quantity.canonical(res, own)}",
                    )
        check_queue_policies(checks, here, cq, target, queues.cohort_of(cq) is not None)
    _gpu_queues_only(checks, config, pools, nominal, borrowing)

    check_namespaces(checks, config, target)
    # The install checks' problems (Kueue's and the operator's settings, the merged operator chart values).
    checks.problems += install_problems
    check_priority_classes(checks, config, target)
    if not checks.problems:  # an unreachable queue is usually the echo of an error above
        check_unreachable_queues(checks, config, nominal)

    if checks.problems:
        raise ConfigError(source, checks.problems)
    plan = QueuePlan(
        target=target,
        covered_resources=tuple(covered),
        pools=pools,
        nominal=nominal,
        borrowing=borrowing,
        lending=lending,
        parents=tree.parents,
        cohorts=tree.cohorts,
        cohort_nominal=cohort_nominal,
        cohort_borrowing=cohort_borrowing,
        cohort_lending=cohort_lending,
    )
    warn_no_cpu_or_memory(checks, config, plan)
    return dataclasses.replace(plan, warnings=tuple(checks.warnings))


def _pool_total(
    checks: Checks, index: int, pool: Pool, covered: list[str], gpu_resources: set[str], headroom: Decimal
) -> PoolTotal:
    keep = 1 - Fraction(headroom) / 100
    cpu_milli = math.floor(pool.nodes * quantity.parse(pool.cpu) * 1000 * keep)
    memory_mib = math.floor(pool.nodes * quantity.parse(pool.memory) * keep / quantity.MIB)
    totals: dict[str, Fraction] = {r: Fraction(0) for r in covered}
    totals["cpu"] = Fraction(cpu_milli, 1000)
    totals["memory"] = Fraction(memory_mib * quantity.MIB)
    has_gpus = bool(pool.gpus) and pool.gpu_resource in gpu_resources
    if has_gpus:
        totals[pool.gpu_resource] = Fraction(pool.nodes * pool.gpus)
    for res, per_node in pool.extra_resources.items():
        where = key_path("inventory", "pools", index, "extraResources", res)
        if res in ("cpu", "memory"):
            checks.error(where, f"{res} comes from the pool's {res} field, not extraResources")
            continue
        if res in gpu_resources:
            checks.error(where, f"{res!r} is a GPU resource; a pool's GPUs come from gpus (and gpuResource)")
            continue
        if res not in covered:
            checks.error(where, f"{res!r} is not one of queues.coveredResources; list it there to give it a quota")
            continue
        step = unit_of(res)
        totals[res] = math.floor(pool.nodes * quantity.parse(per_node) / step) * step
    if cpu_milli == 0 or memory_mib == 0:
        checks.error(
            key_path("inventory", "pools", index),
            f"pool {pool.name!r} has no CPU or memory left after headroom",
        )
    return PoolTotal(pool.name, totals, pool.gpu_resource if has_gpus else None)


def _explicit(
    checks: Checks,
    loc: tuple[str | int, ...],
    given: PoolQuantities,
    pool_names: list[str],
    covered: list[str],
) -> dict[str, dict[str, Fraction]]:
    out: dict[str, dict[str, Fraction]] = {}
    for pool, amounts in given.items():
        if pool not in pool_names:
            checks.error(key_path(*loc, pool), f"unknown pool {pool!r}; pools: {', '.join(pool_names)}")
            continue
        for res, text in amounts.items():
            if res not in covered:
                checks.error(
                    key_path(*loc, pool, res),
                    f"{res!r} is not a covered resource; covered: {', '.join(covered)}",
                )
                continue
            amount = quantity.parse(text)
            if res == "cpu" or (quantity.is_byte_resource(res) and text[-1:] in ("m", "u", "n")):
                try:  # a unit that makes no sense for the resource: CPU in Gi, memory in milli
                    resource_quantity(res, text)
                except ValueError as err:
                    checks.error(key_path(*loc, pool, res), str(err))
                    continue
            if (amount / unit_of(res)).denominator != 1 and res == "cpu":
                checks.error(key_path(*loc, pool, res), f"must be a whole number of millicores, got {show(text)}")
                continue
            if amount.denominator != 1 and res != "cpu":
                checks.error(key_path(*loc, pool, res), f"must be a whole number, got {show(text)}")
                continue
            out.setdefault(pool, {})[res] = amount
    return out


@dataclasses.dataclass(frozen=True)
class _Holder:
    """A ClusterQueue or a Cohort with its own quota, where it is in the config."""

    loc: tuple[str | int, ...]
    name: str
    share: Decimal | dict[str, Decimal] | None
    nominal_quota: PoolQuantities | None


def _holders(config: StackConfig) -> tuple[list[_Holder], list[_Holder]]:
    cqs = [
        _Holder(("queues", "clusterQueues", i), cq.name, cq.share, cq.nominal_quota)
        for i, cq in enumerate(config.queues.cluster_queues)
    ]
    seen: set[str] = set()
    cohorts = []
    for j, cohort in enumerate(config.queues.cohorts):
        if cohort.name in seen:  # a duplicate, already refused
            continue
        seen.add(cohort.name)
        if cohort.share is not None or cohort.nominal_quota is not None:
            cohorts.append(_Holder(("queues", "cohorts", j), cohort.name, cohort.share, cohort.nominal_quota))
    return cqs, cohorts


def _nominal_quotas(
    checks: Checks, config: StackConfig, pools: tuple[PoolTotal, ...], covered: list[str]
) -> tuple[Quotas, Quotas]:
    """The ClusterQueues' and the Cohorts' own nominal quotas. Shares of both are percentages of the
    pool's total, apportioned together, so that nothing is handed out twice."""
    cqs, cohorts = _holders(config)
    holders = [*cqs, *cohorts]
    pool_names = [p.name for p in pools]
    nominal: Quotas = {h.name: {p: {r: Fraction(0) for r in covered} for p in pool_names} for h in holders}
    # Shares, apportioned per pool and resource among the holders that use shares.
    share_of: dict[int, dict[str, Fraction]] = {}
    for i, holder in enumerate(holders):
        if holder.share is None:
            continue
        if isinstance(holder.share, dict):
            for name in holder.share:
                if name not in pool_names:
                    checks.error(
                        key_path(*holder.loc, "share", name),
                        f"unknown pool {name!r}; pools: {', '.join(pool_names)}",
                    )
            share_of[i] = {p: Fraction(holder.share.get(p, 0)) for p in pool_names}
        else:
            share_of[i] = {p: Fraction(holder.share) for p in pool_names}
    for pool in pools:
        running = Fraction(0)
        for i in share_of:
            running += share_of[i][pool.name]
            if running > 100 + SHARE_SLACK:
                checks.error(
                    key_path(*holders[i].loc, "share"),
                    f"shares of pool {pool.name!r} add up to {_pct(running)}%, more than 100% ("
                    # A fleet has hundreds of ClusterQueues: the first few shares, and how many more.
                    + listed([f"{holders[j].name} {_pct(share_of[j][pool.name])}" for j in share_of])
                    + ")",
                )
                break
        if running > 100 + SHARE_SLACK:
            continue
        for res in covered:
            step = unit_of(res)
            units = apportion(int(pool.totals[res] / step), [share_of[i][pool.name] for i in share_of])
            for i, u in zip(share_of, units, strict=True):
                nominal[holders[i].name][pool.name][res] = u * step
    # Explicit quotas.
    for holder in holders:
        if holder.nominal_quota is None:
            continue
        explicit = _explicit(checks, (*holder.loc, "nominalQuota"), holder.nominal_quota, pool_names, covered)
        for name, amounts in explicit.items():
            nominal[holder.name][name].update(amounts)
    # Nothing may be handed out twice.
    for pool in pools:
        for res in covered:
            handed = Fraction(0)
            for holder in holders:
                handed += nominal[holder.name][pool.name][res]
                if handed > pool.totals[res]:
                    field_name = "share" if holder.share is not None else "nominalQuota"
                    checks.error(
                        key_path(*holder.loc, field_name),
                        f"quotas for {res} in pool {pool.name!r} add up to "
                        f"{quantity.canonical(res, handed)}, more than the pool's "
                        f"{quantity.canonical(res, pool.totals[res])}",
                    )
                    break
    return {h.name: nominal[h.name] for h in cqs}, {h.name: nominal[h.name] for h in cohorts}


def _gpu_queues_only(
    checks: Checks, config: StackConfig, pools: tuple[PoolTotal, ...], nominal: Quotas, borrowing: Quotas
) -> None:
    """``cpuAndMemoryFor: gpuQueues``: a ClusterQueue without GPUs in the pool gets none of its cpu or
    memory, nor may it borrow them; an explicit quota or limit saying otherwise is an error."""
    for p, (pool, total) in enumerate(zip(config.inventory.pools, pools, strict=True)):
        if pool.cpu_and_memory_for != "gpuQueues":
            continue
        if total.gpu_resource is None:
            checks.error(
                key_path("inventory", "pools", p, "cpuAndMemoryFor"),
                f"pool {pool.name!r} has no GPUs: gpuQueues keeps a GPU pool's CPU and memory for the "
                "ClusterQueues with GPUs there; remove it (or set gpus)",
            )
            continue
        for i, cq in enumerate(config.queues.cluster_queues):
            own = nominal.get(cq.name, {}).get(pool.name)
            if own is None or own.get(total.gpu_resource):
                continue
            for res in ("cpu", "memory"):
                explicit = ((cq.nominal_quota or {}).get(pool.name) or {}).get(res)
                if explicit is not None and own[res]:
                    checks.error(
                        key_path("queues", "clusterQueues", i, "nominalQuota", pool.name, res),
                        f"pool {pool.name!r} has cpuAndMemoryFor: gpuQueues and ClusterQueue {cq.name!r} has no "
                        f"{total.gpu_resource} there, so it gets no {res} there; remove this quota or give it GPUs",
                    )
                own[res] = Fraction(0)
                if config.queues.cohort_of(cq) is None:
                    continue
                limits = borrowing.setdefault(cq.name, {}).setdefault(pool.name, {})
                if limits.get(res):
                    checks.error(
                        key_path("queues", "clusterQueues", i, "borrowingLimit", pool.name, res),
                        f"pool {pool.name!r} has cpuAndMemoryFor: gpuQueues and ClusterQueue {cq.name!r} has no "
                        f"{total.gpu_resource} there, so it may not borrow its {res}; remove this limit",
                    )
                limits[res] = Fraction(0)


def _pct(value: Fraction) -> str:
    """A percentage in full (``100.000000000000008``): rounded, a sum just over 100 would read
    "add up to 100%, more than 100%"."""
    scale = 0
    while (value * 10**scale).denominator != 1:  # shares are decimals, so this ends
        scale += 1
    digits = str(abs(int(value * 10**scale))).rjust(scale + 1, "0")
    whole, frac = digits[: len(digits) - scale], digits[len(digits) - scale :]
    return ("-" if value < 0 else "") + whole + (f".{frac}" if frac else "")
