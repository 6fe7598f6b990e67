"""The quota cells and pool totals of two plans, side by side: what a reviewer of a quota change reads.

Works on ``plan.json`` data: every ClusterQueue × flavor × resource cell of the nominal quotas
and of the borrowing and lending limits, with the pool's share, and per pool × resource what the
ClusterQueues are handed against what the pool has.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from aiperf_kueue.common import quantity

#: plan.json key → the ClusterQueue field each of its cells is.
QUOTA_FIELDS = {"quotas": "nominalQuota", "borrowingLimits": "borrowingLimit", "lendingLimits": "lendingLimit"}


@dataclass(frozen=True)
class QuotaRow:
    """One ClusterQueue × flavor × resource quota cell, BASE → HEAD (``None``: absent, for a limit: unset)."""

    cluster_queue: str
    flavor: str
    resource: str
    old: str | None
    new: str | None
    field: str = "nominalQuota"
    """``nominalQuota``, ``borrowingLimit`` or ``lendingLimit``."""

    share_old: int | float | None = None
    """For a nominalQuota: BASE's share of the pool, in percent (``None``: not known)."""

    share_new: int | float | None = None

    @property
    def cell(self) -> str:
        """``team-a / gpu-h100 / nvidia.com/gpu``: how a reviewer names the cell."""
        return f"{self.cluster_queue} / {self.flavor} / {self.resource}"

    @property
    def delta(self) -> str:
        """``+300m``, ``-8``, ``0``; ``?`` when a side is not a quantity."""
        return quantity_delta(self.resource, self.old, self.new)


@dataclass(frozen=True)
class PoolRow:
    """One pool × resource: the sum of the ClusterQueues' quotas against what the pool has."""

    pool: str
    resource: str
    handed_old: str | None
    handed_new: str | None
    total_old: str | None
    total_new: str | None

    @property
    def changed(self) -> bool:
        """Whether either figure differs between BASE and HEAD."""
        return self.handed_old != self.handed_new or self.total_old != self.total_new

    @property
    def unassigned(self) -> str | None:
        """HEAD's pool total minus what HEAD hands out (negative: over-committed)."""
        if self.total_new is None:
            return None
        return quantity_delta(self.resource, self.handed_new or "0", self.total_new, signed=False)


def _amount(resource: str, value: str | int | None) -> Fraction | None:
    if value is None:
        return Fraction(0)
    try:
        return quantity.parse(value)
    except ValueError:
        return None


def quantity_delta(resource: str, old: str | int | None, new: str | int | None, signed: bool = True) -> str:
    """``new - old`` in the resource's canonical form: ``+300m``, ``-8``, ``0``; ``?`` if unparseable."""
    a, b = _amount(resource, old), _amount(resource, new)
    if a is None or b is None:
        return "?"
    delta = b - a
    text = str(quantity.canonical(resource, abs(delta)))
    if delta == 0:
        return "0"
    if delta < 0:
        return f"-{text}"
    return f"+{text}" if signed else text


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _cell(table: Any, cq: str, flavor: str, res: str) -> Any:
    """``table[cq][flavor][res]``, or ``None`` where any level is absent or not a mapping."""
    for key in (cq, flavor, res):
        if not isinstance(table, dict):
            return None
        table = table.get(key)
    return table


def quota_rows(base: dict[str, Any], head: dict[str, Any], key: str = "quotas") -> list[QuotaRow]:
    """Every ClusterQueue × flavor × resource cell of ``plan.json``'s ``key`` (``quotas``,
    ``borrowingLimits`` or ``lendingLimits``) in either plan, HEAD's order first. ``base`` and
    ``head`` are the whole ``plan.json`` data (shares come from its ``shares``)."""
    keys: list[tuple[str, str, str]] = []
    for data in (head, base):
        for cq, flavors in (data.get(key) or {}).items():
            for flavor, amounts in flavors.items():
                for res in amounts:
                    if (cq, flavor, res) not in keys:
                        keys.append((cq, flavor, res))
    nominal = key == "quotas"
    return [
        QuotaRow(
            cq,
            flavor,
            res,
            _text(_cell(base.get(key), cq, flavor, res)),
            _text(_cell(head.get(key), cq, flavor, res)),
            QUOTA_FIELDS[key],
            _cell(base.get("shares"), cq, flavor, res) if nominal else None,
            _cell(head.get("shares"), cq, flavor, res) if nominal else None,
        )
        for cq, flavor, res in keys
    ]


def _handed_out(quotas: dict[str, Any], pool: str, resource: str) -> str | None:
    total = Fraction(0)
    found = False
    for flavors in quotas.values():
        value = flavors.get(pool, {}).get(resource)
        if value is None:
            continue
        amount = _amount(resource, value)
        if amount is None:
            return None
        total += amount
        found = True
    return str(quantity.canonical(resource, total)) if found else None


def pool_rows(base: dict[str, Any], head: dict[str, Any]) -> list[PoolRow]:
    """Per pool × resource: handed out (sum over ClusterQueues) and the pool total, BASE → HEAD."""
    keys: list[tuple[str, str]] = []
    for data in (head, base):
        for pool, totals in (data.get("pools") or {}).items():
            for res in totals:
                if (pool, res) not in keys:
                    keys.append((pool, res))
    base_quotas, head_quotas = base.get("quotas") or {}, head.get("quotas") or {}
    return [
        PoolRow(
            pool,
            res,
            _handed_out(base_quotas, pool, res),
            _handed_out(head_quotas, pool, res),
            _text((base.get("pools") or {}).get(pool, {}).get(res)),
            _text((head.get("pools") or {}).get(pool, {}).get(res)),
        )
        for pool, res in keys
    ]


def shrinking_pools(rows: Iterable[PoolRow], base: dict[str, Any], head: dict[str, Any]) -> list[str]:
    """A note per pool whose total of some resource falls, or that goes, BASE → HEAD (ROWS: :func:`pool_rows`).

    Kueue evicts nothing when a ClusterQueue's quota falls below what it admitted: a quota-only review reads a
    shrink as harmless. But the nodes go, and pod GC deletes the pods that ran there; AIPerf 0.13.0's controller
    Job has ``backoffLimit: 0`` and its JobSet no ``failurePolicy``, so a benchmark with a pod on a removed node
    fails with it (proven by the ``capacity-grows`` e2e scenario).
    """
    base_pools, head_pools = base.get("pools") or {}, head.get("pools") or {}
    fallen: dict[str, list[str]] = {}
    for row in rows:
        if row.pool not in base_pools or row.total_old is None:
            continue
        old, new = _amount(row.resource, row.total_old), _amount(row.resource, row.total_new)
        if old is not None and new is not None and new < old:
            fallen.setdefault(row.pool, []).append(f"{row.resource} {row.total_old} → {row.total_new or 0}")
    notes = []
    for pool, falls in fallen.items():
        queues = sorted(cq for cq, flavors in (base.get("quotas") or {}).items() if pool in (flavors or {}))
        hold = (
            f"hold its ClusterQueues ({', '.join(f'`{q}`' for q in queues)}) with `stopPolicy: Hold` and let the "
            "benchmarks they admitted finish before the nodes go"
            if queues
            else "let the benchmarks running there finish before the nodes go"
        )
        if pool not in head_pools:
            notes.append(
                f"Pool `{pool}` goes: Kueue evicts nothing when quota falls, but a benchmark with a pod on one of "
                f"its nodes fails with the node (AIPerf's controller Job has backoffLimit 0); {hold}."
            )
        else:
            notes.append(
                f"Pool `{pool}` shrinks ({', '.join(falls)}): Kueue evicts nothing when quota falls, but a "
                "benchmark with a pod on a removed node fails with it (AIPerf's controller Job has backoffLimit 0); "
                f"{hold}."
            )
    return notes
