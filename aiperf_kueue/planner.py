"""The quota planner: GPU inventory and shares in, exact per-flavor quotas out.

Pure Python. Every rule Kueue enforces on the objects this program writes is
checked here, before anything is registered (kueue NOTES §2), and every
combination that would leave a job waiting forever is an error or a warning.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

from aiperf_kueue import quantity
from aiperf_kueue.config import ClusterQueue, Pool, StackConfig
from aiperf_kueue.config.base import PoolQuantities
from aiperf_kueue.errors import ConfigError, Problem, key_path
from aiperf_kueue.installs import install_problems, unmanaged_namespaces
from aiperf_kueue.kueue import DEFAULT_LOCAL_QUEUE, MAX_QUOTAS_PER_GROUP, KueueTarget

#: Quota per ClusterQueue, per flavor (pool), per resource, exact.
Quotas = dict[str, dict[str, dict[str, Fraction]]]

#: How far from 100 a sum of shares may be and still count as 100. YAML and JSON hand shares
#: over as binary floats, so ``33.333333333333333`` three times arrives as 100.000000000000008
#: (and ``33.33333333333333`` as 99.99999999999999, which would leave one unit of every total
#: unassigned). The text as written is gone by then, so exact Decimal arithmetic cannot help.
SHARE_SLACK = Fraction(1, 10**9)
#: Resources Kubernetes itself defines: never a GPU resource, and a pool's cpu, memory or
#: extraResources give their amounts.
STANDARD_RESOURCES = frozenset({"cpu", "memory", "pods", "ephemeral-storage"})
#: Namespaces every cluster has: ``create: true`` would fail with AlreadyExists.
BUILTIN_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})


def unit_of(resource: str) -> Fraction:
    """The step quotas are apportioned in: 1m of CPU, 1Mi of bytes, 1 of anything else."""
    if resource == "cpu":
        return Fraction(1, 1000)
    if quantity.is_byte_resource(resource):
        return Fraction(quantity.MIB)
    return Fraction(1)


@dataclass(frozen=True)
class PoolTotal:
    """What one pool can hand out, per covered resource, after headroom."""

    name: str
    totals: dict[str, Fraction]
    gpu_resource: str | None


@dataclass(frozen=True)
class QueuePlan:
    """Everything the components need, decided and checked."""

    target: KueueTarget
    covered_resources: tuple[str, ...]
    pools: tuple[PoolTotal, ...]
    nominal: Quotas
    borrowing: Quotas
    lending: Quotas
    warnings: tuple[str, ...] = field(default=())

    def quota_table(self) -> dict[str, dict[str, dict[str, str | int]]]:
        """``{clusterQueue: {flavor: {resource: canonical quantity}}}``."""
        return _canonical(self.nominal, self.covered_resources)

    def pool_table(self) -> dict[str, dict[str, str | int]]:
        """``{pool: {resource: canonical total}}``."""
        return {p.name: {r: quantity.canonical(r, p.totals[r]) for r in self.covered_resources} for p in self.pools}

    def nominal_quota(self, cq: str, pool: str, resource: str) -> Fraction:
        """``cq``'s nominalQuota of ``pool``/``resource`` (0 where it has none)."""
        return self.nominal.get(cq, {}).get(pool, {}).get(resource, Fraction(0))

    def lendable(self, cq: str, pool: str, resource: str) -> Fraction:
        """What ``cq`` lends its cohort of ``pool``/``resource``: its lendingLimit, else all its nominal quota."""
        limits = self.lending.get(cq, {}).get(pool, {})
        return limits[resource] if resource in limits else self.nominal_quota(cq, pool, resource)

    def borrowable(self, cq: str, pool: str, resource: str, *, in_cohort: bool) -> Fraction:
        """Most ``cq`` can borrow of ``pool``/``resource`` on an empty cluster.

        0 without a cohort. In the cohort: what the other ClusterQueues lend (Σ lendingLimit,
        else nominal), capped by ``cq``'s borrowingLimit where it sets one. The Cohort object
        itself holds no quota in the stacks this program writes.
        """
        if not in_cohort:
            return Fraction(0)
        others = sum((self.lendable(other, pool, resource) for other in self.nominal if other != cq), Fraction(0))
        limits = self.borrowing.get(cq, {}).get(pool, {})
        return min(others, limits[resource]) if resource in limits else others

    def max_capacity(self, cq: str, pool: str, resource: str, *, in_cohort: bool) -> Fraction:
        """Most of ``pool``/``resource`` ``cq`` can ever hold: its nominal quota + :meth:`borrowable`."""
        return self.nominal_quota(cq, pool, resource) + self.borrowable(cq, pool, resource, in_cohort=in_cohort)
    def share_table(self) -> dict[str, dict[str, dict[str, int | float]]]:
        """``{clusterQueue: {flavor: {resource: percent of the pool's total}}}``, rounded to 0.01 %;
        resources the pool has none of are left out (no share of nothing)."""
        totals = {p.name: p.totals for p in self.pools}
        return {
            cq: {
                pool: {
                    r: percent(amounts[r], totals[pool][r])
                    for r in self.covered_resources
                    if r in amounts and totals[pool].get(r)
                }
                for pool, amounts in pools.items()
            }
            for cq, pools in self.nominal.items()
        }

    def limit_tables(self) -> dict[str, dict[str, dict[str, dict[str, str | int]]]]:
        """``{"borrowingLimits": ..., "lendingLimits": ...}``, each ``{clusterQueue: {flavor: {resource:
        quantity}}}`` for the limits that are set (unset: borrow without limit, lend everything)."""
        return {
            "borrowingLimits": _canonical(self.borrowing, self.covered_resources),
            "lendingLimits": _canonical(self.lending, self.covered_resources),
        }


def percent(part: Fraction, whole: Fraction) -> int | float:
    """``part`` as a percentage of ``whole``, rounded half-even to 0.01; an int when whole."""
    value = (Decimal(part.numerator * whole.denominator * 100) / Decimal(part.denominator * whole.numerator)).quantize(
        Decimal("0.01")
    )
    return int(value) if value == value.to_integral_value() else float(value)


def _canonical(quotas: Quotas, covered: Iterable[str]) -> dict[str, dict[str, dict[str, str | int]]]:
    order = list(covered)
    return {
        cq: {
            pool: {r: quantity.canonical(r, amounts[r]) for r in order if r in amounts}
            for pool, amounts in pools.items()
        }
        for cq, pools in quotas.items()
    }


def apportion(total_units: int, shares: list[Fraction]) -> list[int]:
    """Split ``total_units`` by percentage ``shares`` with the largest-remainder method.

    Hands out ``floor(total × Σshares / 100)`` units: exactly the total when the
    shares sum to 100. Shares within :data:`SHARE_SLACK` of 100 are scaled to sum to
    exactly 100 first. Remainder units go to the largest fractional parts, ties to the
    earlier share, so the result depends only on the config order.
    """
    share_sum = sum(shares, Fraction(0))
    if share_sum != 100 and abs(share_sum - 100) <= SHARE_SLACK:
        shares = [s * 100 / share_sum for s in shares]
        share_sum = Fraction(100)
    exact = [Fraction(total_units) * s / 100 for s in shares]
    target = math.floor(Fraction(total_units) * share_sum / 100)
    base = [math.floor(x) for x in exact]
    spare = target - sum(base)
    order = sorted(range(len(shares)), key=lambda i: (-(exact[i] - base[i]), i))
    for i in order[:spare]:
        base[i] += 1
    return base


class _Checks:
    """Collects problems and warnings while planning."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.warnings: list[str] = []

    def error(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message))


def plan_queues(config: StackConfig, source: str, project_dir: Path | None = None) -> QueuePlan:
    """Check the whole config against Kueue's rules and compute every quota.

    Raises :class:`ConfigError` listing every problem; returns the plan otherwise.
    ``project_dir`` is where relative chart paths start (default: the working directory).
    """
    checks = _Checks()
    target = config.kueue.target()
    inv, queues = config.inventory, config.queues

    _unique(checks, [(("inventory", "pools", i, "name"), p.name) for i, p in enumerate(inv.pools)], "pool")
    _unique(
        checks,
        [(("queues", "clusterQueues", i, "name"), cq.name) for i, cq in enumerate(queues.cluster_queues)],
        "ClusterQueue",
    )
    _unique(
        checks,
        [(("priorityClasses", i, "name"), pc.name) for i, pc in enumerate(config.priority_classes)],
        "priority class",
    )
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
    limit = target.max_per_group
    if len(inv.pools) > limit:
        checks.error(
            "inventory.pools",
            f"Kueue {target.version_text} allows at most {limit} flavors per ClusterQueue "
            f"resource group, got {len(inv.pools)} pools",
        )
    if len(covered) > limit:
        checks.error(
            "queues.coveredResources",
            f"Kueue {target.version_text} allows at most {limit} covered resources, got "
            f"{len(covered)} ({', '.join(covered)})",
        )
    if (
        target.version >= (0, 14, 0)
        and len(inv.pools) <= limit
        and len(covered) <= limit
        and len(inv.pools) * len(covered) > MAX_QUOTAS_PER_GROUP
    ):
        checks.error(
            "inventory.pools",
            f"Kueue {target.version_text} allows at most {MAX_QUOTAS_PER_GROUP} resource quotas per ClusterQueue "
            f"resource group (flavors × covered resources), got {len(inv.pools)} pools × {len(covered)} covered "
            f"resources = {len(inv.pools) * len(covered)}; use fewer pools or fewer queues.coveredResources",
        )

    pools = tuple(
        _pool_total(checks, i, pool, covered, set(gpu_pools), inv.headroom) for i, pool in enumerate(inv.pools)
    )
    _extra_resources_in_use(checks, config, pools, [r for r in covered[2:] if r not in gpu_pools])
    pool_names = [p.name for p in inv.pools]
    _flavor_order_warning(checks, inv.pools)

    nominal = _nominal_quotas(checks, config, pools, covered)
    borrowing: Quotas = {}
    lending: Quotas = {}
    for i, cq in enumerate(queues.cluster_queues):
        here = ("queues", "clusterQueues", i)
        for attr, store in (("borrowing_limit", borrowing), ("lending_limit", lending)):
            given: PoolQuantities | None = getattr(cq, attr)
            alias = "borrowingLimit" if attr == "borrowing_limit" else "lendingLimit"
            if given is None:
                continue
            if queues.cohort is None:
                checks.error(
                    key_path(*here, alias),
                    f"{alias} needs queues.cohort: Kueue accepts it only for a ClusterQueue in a cohort",
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
        _queue_policies(checks, here, cq, target, queues.cohort is not None)
    _gpu_queues_only(checks, config, pools, nominal, borrowing)

    _namespaces(checks, config, target)
    # The installs module checks what it installs: the operator's settings and merged chart values.
    checks.problems += install_problems(config, target, project_dir or Path.cwd())
    _priority_classes(checks, config, target)
    if not checks.problems:  # an unreachable queue is usually the echo of an error above
        _unreachable_queues(checks, config, nominal)

    if checks.problems:
        raise ConfigError(source, checks.problems)
    plan = QueuePlan(
        target=target,
        covered_resources=tuple(covered),
        pools=pools,
        nominal=nominal,
        borrowing=borrowing,
        lending=lending,
    )
    _no_cpu_or_memory(checks, config, plan)
    return dataclasses.replace(plan, warnings=tuple(checks.warnings))


def _unique(checks: _Checks, named: list[tuple[tuple[str | int, ...], str]], what: str) -> None:
    first: dict[str, tuple[str | int, ...]] = {}
    for loc, name in named:
        if name in first:
            checks.error(key_path(*loc), f"duplicate {what} name {name!r} (also at {key_path(*first[name])})")
        else:
            first[name] = loc


def _pool_total(
    checks: _Checks, index: int, pool: Pool, covered: list[str], gpu_resources: set[str], headroom: Decimal
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


def _extra_resources_in_use(
    checks: _Checks, config: StackConfig, pools: tuple[PoolTotal, ...], extras: list[str]
) -> None:
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


def _flavor_order_warning(checks: _Checks, pools: list[Pool]) -> None:
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


def _explicit(
    checks: _Checks,
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
            if (amount / unit_of(res)).denominator != 1 and res == "cpu":
                checks.error(key_path(*loc, pool, res), f"must be a whole number of millicores, got {text!r}")
                continue
            if amount.denominator != 1 and res != "cpu":
                checks.error(key_path(*loc, pool, res), f"must be a whole number, got {text!r}")
                continue
            out.setdefault(pool, {})[res] = amount
    return out


def _nominal_quotas(checks: _Checks, config: StackConfig, pools: tuple[PoolTotal, ...], covered: list[str]) -> Quotas:
    cqs = config.queues.cluster_queues
    pool_names = [p.name for p in pools]
    nominal: Quotas = {cq.name: {p: {r: Fraction(0) for r in covered} for p in pool_names} for cq in cqs}
    # Shares, apportioned per pool and resource among the ClusterQueues that use shares.
    share_of: dict[int, dict[str, Fraction]] = {}
    for i, cq in enumerate(cqs):
        if cq.share is None:
            continue
        if isinstance(cq.share, dict):
            for name in cq.share:
                if name not in pool_names:
                    checks.error(
                        key_path("queues", "clusterQueues", i, "share", name),
                        f"unknown pool {name!r}; pools: {', '.join(pool_names)}",
                    )
            share_of[i] = {p: Fraction(cq.share.get(p, 0)) for p in pool_names}
        else:
            share_of[i] = {p: Fraction(cq.share) for p in pool_names}
    for pool in pools:
        running = Fraction(0)
        for i in share_of:
            running += share_of[i][pool.name]
            if running > 100 + SHARE_SLACK:
                checks.error(
                    key_path("queues", "clusterQueues", i, "share"),
                    f"shares of pool {pool.name!r} add up to {_pct(running)}%, more than 100% ("
                    + ", ".join(f"{cqs[j].name} {_pct(share_of[j][pool.name])}" for j in share_of)
                    + ")",
                )
                break
        if running > 100 + SHARE_SLACK:
            continue
        for res in covered:
            step = unit_of(res)
            units = apportion(int(pool.totals[res] / step), [share_of[i][pool.name] for i in share_of])
            for i, u in zip(share_of, units, strict=True):
                nominal[cqs[i].name][pool.name][res] = u * step
    # Explicit quotas.
    for i, cq in enumerate(cqs):
        if cq.nominal_quota is None:
            continue
        explicit = _explicit(
            checks, ("queues", "clusterQueues", i, "nominalQuota"), cq.nominal_quota, pool_names, covered
        )
        for name, amounts in explicit.items():
            nominal[cq.name][name].update(amounts)
    # Nothing may be handed out twice.
    for pool in pools:
        for res in covered:
            handed = Fraction(0)
            for i, cq in enumerate(cqs):
                handed += nominal[cq.name][pool.name][res]
                if handed > pool.totals[res]:
                    field_name = "share" if cq.share is not None else "nominalQuota"
                    checks.error(
                        key_path("queues", "clusterQueues", i, field_name),
                        f"quotas for {res} in pool {pool.name!r} add up to "
                        f"{quantity.canonical(res, handed)}, more than the pool's "
                        f"{quantity.canonical(res, pool.totals[res])}",
                    )
                    break
    return nominal


def _gpu_queues_only(
    checks: _Checks, config: StackConfig, pools: tuple[PoolTotal, ...], nominal: Quotas, borrowing: Quotas
) -> None:
    """``cpuAndMemoryFor: gpuQueues``: a ClusterQueue without GPUs in the pool gets none of its cpu or
    memory, nor may it borrow them; an explicit quota or limit saying otherwise is an error."""
    in_cohort = config.queues.cohort is not None
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
                if not in_cohort:
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


def _queue_policies(
    checks: _Checks, here: tuple[str | int, ...], cq: ClusterQueue, target: KueueTarget, in_cohort: bool
) -> None:
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


def _namespaces(checks: _Checks, config: StackConfig, target: KueueTarget) -> None:
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


def _priority_classes(checks: _Checks, config: StackConfig, target: KueueTarget) -> None:
    cap = target.wpc_description_max
    for i, pc in enumerate(config.priority_classes):
        if cap is not None and len(pc.description) > cap:
            checks.error(
                key_path("priorityClasses", i, "description"),
                f"must be at most {cap} characters in {target.api}, got {len(pc.description)}",
            )


def _unreachable_queues(checks: _Checks, config: StackConfig, nominal: Quotas) -> None:
    cohort = config.queues.cohort
    for i, cq in enumerate(config.queues.cluster_queues):
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


def _no_cpu_or_memory(checks: _Checks, config: StackConfig, plan: QueuePlan) -> None:
    """Warn about a ClusterQueue with namespaces that no flavor gives both cpu and memory.

    Every AIPerf pod requests cpu and memory (unless ``resourceMode: none``), and one podSet
    takes all its resources from one flavor: without a flavor where both can be had, from its
    own quota or by borrowing in the cohort, no AIPerf job is ever admitted. Jobs declared in
    the stack are proven by the admission check; this covers jobs submitted by hand.
    """
    in_cohort = config.queues.cohort is not None
    for i, cq in enumerate(config.queues.cluster_queues):
        if not cq.namespaces:  # already warned: nothing can be submitted to it
            continue
        if any(
            all(plan.max_capacity(cq.name, pool.name, r, in_cohort=in_cohort) > 0 for r in ("cpu", "memory"))
            for pool in plan.pools
        ):
            continue
        reach = "own or borrowable in the cohort" if in_cohort else "own, and it has no cohort to borrow from"
        checks.warnings.append(
            f"queues.clusterQueues[{i}]: ClusterQueue {cq.name!r} has no flavor with both cpu and memory quota "
            f"({reach}); every AIPerf pod requests both, so no AIPerf job can be admitted there"
        )
