"""``aiperf-kueue drift``: a stack's declared inventory against the nodes, pool by pool.

Pure: the stack's config and quota plan and a node list in, :class:`Drift` out. A node belongs
to the pool whose ``nodeLabels`` select it (the most specific one, as the import groups them).
Each finding says what the quota promises that the nodes do not have, or what the nodes have
that no quota hands out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from aiperf_kueue.common import quantity
from aiperf_kueue.common.render import columns
from aiperf_kueue.config import Pool, StackConfig, Taint
from aiperf_kueue.inventory.inventory_nodes import best_pool
from aiperf_kueue.inventory.node_list import Node, taint_text
from aiperf_kueue.queues.queue_plan import QueuePlan, apportion, unit_of

#: The checks, in the order they are reported for a pool.
CHECKS = (
    "no-nodes",
    "fewer-nodes",
    "more-nodes",
    "allocatable-below",
    "gpus-differ",
    "taints-differ",
    "quota-exceeds-capacity",
    "unmatched-nodes",
)


@dataclass(frozen=True)
class Finding:
    """One discrepancy."""

    pool: str | None
    """The pool, or ``None`` for nodes that match no pool."""
    check: str
    """One of :data:`CHECKS`."""
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    """The figures behind the message, for ``--out`` JSON."""

    def as_dict(self) -> dict[str, Any]:
        """The finding as ``--out`` writes it."""
        return {"pool": self.pool, "check": self.check, "message": self.message, "details": self.details}


@dataclass(frozen=True)
class PoolRow:
    """One pool: declared per node, and what its Ready nodes have (their minimum)."""

    name: str
    declared: dict[str, Any]
    found: dict[str, Any]
    ready: tuple[str, ...]
    left_out: tuple[tuple[str, tuple[str, ...]], ...]

    def as_dict(self) -> dict[str, Any]:
        """The row as ``--out`` writes it."""
        return {
            "name": self.name,
            "declared": self.declared,
            "found": self.found,
            "readyNodes": list(self.ready),
            "leftOut": [{"name": n, "reasons": list(r)} for n, r in self.left_out],
        }


@dataclass(frozen=True)
class Drift:
    """Everything ``drift`` found."""

    pools: tuple[PoolRow, ...]
    findings: tuple[Finding, ...]
    skipped: tuple[tuple[str, tuple[str, ...]], ...]

    @property
    def drifted(self) -> bool:
        """Whether anything differs."""
        return bool(self.findings)

    def as_dict(self) -> dict[str, Any]:
        """Pools, findings and left-out nodes (``--out``)."""
        return {
            "drifted": self.drifted,
            "pools": [p.as_dict() for p in self.pools],
            "findings": [f.as_dict() for f in self.findings],
            "skippedNodes": [{"name": n, "reasons": list(r)} for n, r in self.skipped],
        }

    def table(self) -> list[str]:
        """The pools side by side (declared → found), then one line per finding."""
        head = ("POOL", "NODES", "CPU/NODE", "MEMORY/NODE", "GPUS/NODE", "STATUS")
        drifted = {f.pool for f in self.findings}
        rows = [head]
        for p in self.pools:
            d, f = p.declared, p.found
            rows.append(
                (
                    p.name,
                    f"{d['nodes']} → {f['nodes']}",
                    f"{d['cpu']} → {f['cpu'] if f['cpu'] is not None else '-'}",
                    f"{d['memory']} → {f['memory'] if f['memory'] is not None else '-'}",
                    f"{d['gpus']} → {f['gpus'] if f['gpus'] is not None else '-'}",
                    "drift" if p.name in drifted else "ok",
                )
            )
        lines = columns(rows)
        lines.append("")
        if not self.findings:
            lines.append("No drift: every pool's Ready nodes back what the stack declares.")
        for finding in self.findings:
            lines.append(f"{finding.pool or '(no pool)'}: {finding.check}: {finding.message}")
        return lines


def compare(config: StackConfig, plan: QueuePlan, nodes: Sequence[Node]) -> Drift:
    """Compare ``config``'s pools (and ``plan``'s quotas) with ``nodes``."""
    pools = config.inventory.pools
    selectors = [dict(p.node_labels) for p in pools]
    members: dict[int, list[Node]] = {i: [] for i in range(len(pools))}
    unmatched: list[Node] = []
    for node in nodes:
        index = best_pool(node.labels, selectors)
        if index is not None:
            members[index].append(node)
        elif node.eligible:
            unmatched.append(node)
    findings: list[Finding] = []
    rows: list[PoolRow] = []
    keep = 1 - Fraction(config.inventory.headroom) / 100
    for i, pool in enumerate(pools):
        matched = members[i]
        ready = [n for n in matched if n.eligible]
        findings += _pool_findings(pool, matched, ready)
        findings += _quota_findings(pool, plan, i, ready, keep)
        rows.append(_row(pool, ready, matched))
    if unmatched:
        findings.append(_unmatched(unmatched))
    skipped = tuple((n.name, n.skip) for n in nodes if not n.eligible)
    return Drift(tuple(rows), tuple(findings), skipped)


def _per_node(pool: Pool) -> dict[str, Fraction]:
    """What the pool declares each node has, by resource."""
    out = {"cpu": quantity.parse(pool.cpu), "memory": quantity.parse(pool.memory)}
    out[pool.gpu_resource] = Fraction(pool.gpus)
    for res, amount in pool.extra_resources.items():
        out.setdefault(res, quantity.parse(amount))
    return out


def _pool_findings(pool: Pool, matched: list[Node], ready: list[Node]) -> list[Finding]:
    out: list[Finding] = []
    selector = _labels(pool.node_labels)
    if not matched:
        out.append(
            Finding(
                pool.name,
                "no-nodes",
                f"nodeLabels {selector} select no node; the stack declares {_count(pool.nodes, 'node')}",
                {"declared": pool.nodes, "nodeLabels": dict(pool.node_labels)},
            )
        )
        return out
    left = [n for n in matched if not n.eligible]
    if len(ready) < pool.nodes:
        why = "; ".join(f"{n.name}: {', '.join(n.skip)}" for n in left)
        out.append(
            Finding(
                pool.name,
                "fewer-nodes",
                f"declares {_count(pool.nodes, 'node')}, {len(ready)} Ready and schedulable"
                + (f" ({why})" if why else ""),
                {
                    "declared": pool.nodes,
                    "ready": len(ready),
                    "leftOut": [{"name": n.name, "reasons": list(n.skip)} for n in left],
                },
            )
        )
    elif len(ready) > pool.nodes:
        out.append(
            Finding(
                pool.name,
                "more-nodes",
                f"declares {_count(pool.nodes, 'node')}, {len(ready)} Ready nodes match: no quota hands out "
                f"the capacity of the {_count(len(ready) - pool.nodes, 'node')} more",
                {"declared": pool.nodes, "ready": len(ready)},
            )
        )
    below: list[dict[str, Any]] = []
    declared = _per_node(pool)
    for node in ready:
        for res in ("cpu", "memory", *pool.extra_resources):
            if node.count(res) < declared[res]:
                below.append(
                    {
                        "node": node.name,
                        "resource": res,
                        "declared": _show(res, declared[res]),
                        "allocatable": _show(res, node.count(res)),
                    }
                )
    if below:
        text = ", ".join(f"{b['node']} {b['resource']} {b['allocatable']} < {b['declared']}" for b in below)
        out.append(
            Finding(
                pool.name,
                "allocatable-below",
                f"{_count(len({b['node'] for b in below}), 'node')} below the declared allocatable per node: {text}",
                {"nodes": below},
            )
        )
    differ: list[dict[str, Any]] = [
        {
            "node": n.name,
            "declared": pool.gpus,
            "allocatable": int(n.count(pool.gpu_resource)),
            "gpuResources": n.gpu_resources(),
        }
        for n in ready
        if n.count(pool.gpu_resource) != pool.gpus
    ]
    if differ:
        text = ", ".join(
            f"{d['node']} {d['allocatable']}"
            + (f" (has {_resources(d['gpuResources'])})" if d["allocatable"] == 0 and d["gpuResources"] else "")
            for d in differ
        )
        out.append(
            Finding(
                pool.name,
                "gpus-differ",
                f"declares {pool.gpus} {pool.gpu_resource} per node: {text}",
                {"gpuResource": pool.gpu_resource, "nodes": differ},
            )
        )
    declared_taints = set(pool.node_taints)
    taints: list[dict[str, Any]] = []
    for node in ready:
        have = set(node.pool_taints)
        extra, missing = _texts(have - declared_taints), _texts(declared_taints - have)
        if extra or missing:
            taints.append({"node": node.name, "undeclared": extra, "absent": missing})
    if taints:
        parts = []
        for t in taints:
            said = []
            if t["undeclared"]:
                said.append(
                    f"tainted {', '.join(t['undeclared'])} (not in nodeTaints: admitted pods may not tolerate it)"
                )
            if t["absent"]:
                said.append(f"lacks {', '.join(t['absent'])}")
            parts.append(f"{t['node']} {'; '.join(said)}")
        out.append(Finding(pool.name, "taints-differ", "; ".join(parts), {"nodes": taints}))
    return out


def _quota_findings(pool: Pool, plan: QueuePlan, index: int, ready: list[Node], keep: Fraction) -> list[Finding]:
    """Per resource: the ClusterQueues' nominalQuota in this flavor against what the Ready nodes
    back, each node counted up to what the pool declares per node (headroom applied as the
    planner applies it); the shortfall split among the ClusterQueues in proportion to their quota."""
    totals = plan.pools[index]
    declared = _per_node(pool)
    out: list[Finding] = []
    missing: dict[str, Any] = {}
    for res in plan.covered_resources:
        if res not in declared or not totals.totals.get(res):
            continue
        step = unit_of(res)
        raw = sum((min(n.count(res), declared[res]) for n in ready), Fraction(0))
        factor = keep if res in ("cpu", "memory") else Fraction(1)
        backed = min(totals.totals[res], math.floor(raw * factor / step) * step)
        quotas = {cq: amounts[pool.name].get(res, Fraction(0)) for cq, amounts in plan.nominal.items()}
        promised = sum(quotas.values(), Fraction(0))
        over = promised - backed
        if over <= 0:
            continue
        holders = [cq for cq, q in quotas.items() if q > 0]
        units = apportion(int(over / step), [quotas[cq] / promised * 100 for cq in holders])
        missing[res] = {
            "nominalQuota": _show(res, promised),
            "backed": _show(res, backed),
            "missing": _show(res, over),
            "byClusterQueue": {cq: _show(res, u * step) for cq, u in zip(holders, units, strict=True) if u},
        }
    if missing:
        text = "; ".join(
            f"{res}: nominalQuota {m['nominalQuota']}, the Ready nodes back {m['backed']}, {m['missing']} promised "
            f"without capacity ({', '.join(f'{cq} {a}' for cq, a in m['byClusterQueue'].items())})"
            for res, m in missing.items()
        )
        out.append(Finding(pool.name, "quota-exceeds-capacity", text, {"resources": missing}))
    return out


def _row(pool: Pool, ready: list[Node], matched: list[Node]) -> PoolRow:
    declared = {
        "nodes": pool.nodes,
        "cpu": pool.cpu,
        "memory": pool.memory,
        "gpus": pool.gpus,
        "gpuResource": pool.gpu_resource,
    }
    found: dict[str, Any] = {"nodes": len(ready), "cpu": None, "memory": None, "gpus": None}
    if ready:
        found["cpu"] = _show("cpu", min(n.count("cpu") for n in ready))
        found["memory"] = _show("memory", min(n.count("memory") for n in ready))
        found["gpus"] = int(min(n.count(pool.gpu_resource) for n in ready))
    left = tuple((n.name, n.skip) for n in matched if not n.eligible)
    return PoolRow(pool.name, declared, found, tuple(n.name for n in ready), left)


def _unmatched(nodes: list[Node]) -> Finding:
    listed = [
        {
            "node": n.name,
            "cpu": _show("cpu", n.count("cpu")),
            "memory": _show("memory", n.count("memory")),
            "gpuResources": n.gpu_resources(),
        }
        for n in nodes
    ]
    gpus: dict[str, int] = {}
    for n in nodes:
        for res, count in n.gpu_resources().items():
            gpus[res] = gpus.get(res, 0) + count
    total = sum((n.count("cpu") for n in nodes), Fraction(0))
    memory = sum((n.count("memory") for n in nodes), Fraction(0))
    have = f"cpu {_show('cpu', total)}, memory {_show('memory', memory)}" + (f", {_resources(gpus)}" if gpus else "")
    return Finding(
        None,
        "unmatched-nodes",
        f"no pool's nodeLabels select {_count(len(nodes), 'Ready node')}: {', '.join(n.name for n in nodes)} "
        f"({have}: capacity no quota hands out)",
        {"nodes": listed},
    )


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _show(resource: str, amount: Fraction) -> str:
    return str(quantity.canonical(resource, amount))


def _resources(counts: dict[str, int]) -> str:
    return ", ".join(f"{res} {count}" for res, count in counts.items())


def _texts(taints: Iterable[Taint]) -> list[str]:
    return sorted(taint_text(t) for t in taints)


def _labels(labels: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in labels.items()) + "}" if labels else "{} (every node)"
