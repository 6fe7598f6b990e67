"""Nodes into pools: what ``aiperf-kueue inventory import`` writes to ``aiperf-kueue:inventory``.

Pure: :class:`~aiperf_kueue.inventory.node_list.Node` records (and the stack's current pools, when it has
some) in, one :class:`PoolImport` per pool out. A pool is sized by its smallest node, because
Kueue's quota for it is nodes × per-node: a larger figure would promise a pod room that the
smaller nodes do not have. What the minimum leaves out is said, pool by pool.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from aiperf_kueue.common import quantity
from aiperf_kueue.config import Taint
from aiperf_kueue.inventory.node_list import MIG_PREFIX, Node, taint_text

#: The labels that name a GPU node's product, most specific first. Nodes with GPUs are grouped
#: by the first one they carry.
GPU_PRODUCT_LABELS = (
    # NVIDIA GPU feature discovery (GPU operator), any cloud or on premises: NVIDIA-H100-80GB-HBM3.
    "nvidia.com/gpu.product",
    # GKE GPU node pools: nvidia-h100-80gb.
    "cloud.google.com/gke-accelerator",
    # EKS node groups labelled for the cluster autoscaler's GPU support: nvidia-tesla-v100.
    "k8s.amazonaws.com/accelerator",
    # EKS nodes Karpenter launched: h100.
    "karpenter.k8s.aws/instance-gpu-name",
    # Every cloud's machine type. AKS's own GPU label (kubernetes.azure.com/accelerator) only says
    # "nvidia", so on AKS this is what tells an A100 pool from an H100 one.
    "node.kubernetes.io/instance-type",
)
#: Labels that mark a GPU node even before its device plugin advertises any GPU.
GPU_MARKER_LABELS = ("kubernetes.azure.com/accelerator", "nvidia.com/gpu.present", *GPU_PRODUCT_LABELS[:4])
#: Labels that name a node's pool or shape, tried in this order when a pool's selector would also
#: select another pool's nodes (two pools of one GPU product, one split by MIG; CPU pools).
POOL_LABELS = (
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "kubernetes.azure.com/agentpool",
    "karpenter.sh/nodepool",
    "nvidia.com/mig.config",
    "node.kubernetes.io/instance-type",
)
DEFAULT_GPU_RESOURCE = "nvidia.com/gpu"


def selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """Whether a pool's ``nodeLabels`` select a node with ``labels`` (every pair present)."""
    return all(labels.get(k) == v for k, v in selector.items())


def best_pool(labels: Mapping[str, str], selectors: Sequence[Mapping[str, str] | None]) -> int | None:
    """The pool a node belongs to: among the selectors that select it, the most specific (most
    labels), the first of those on a tie; ``None`` selectors never match. ``None`` if none does."""
    best: int | None = None
    for i, selector in enumerate(selectors):
        if selector is None or not selects(selector, labels):
            continue
        if best is None or len(selector) > len(selectors[best] or {}):
            best = i
    return best


@dataclass(frozen=True)
class ExistingPool:
    """A pool the stack file already declares, read leniently (the import rewrites what it owns)."""

    index: int
    name: str | None
    node_labels: dict[str, str] | None
    """``None`` when the stack's value is not a mapping of strings: then nothing is matched by it."""
    gpus: int
    gpu_resource: str
    extra_resources: tuple[str, ...]


def existing_pools(inventory: Any) -> list[ExistingPool]:
    """The pools of an ``aiperf-kueue:inventory`` value as written in a stack file (any shape)."""
    pools = inventory.get("pools") if isinstance(inventory, Mapping) else None
    out: list[ExistingPool] = []
    for i, pool in enumerate(pools if isinstance(pools, list) else []):
        pool = pool if isinstance(pool, Mapping) else {}
        labels = pool.get("nodeLabels", {})
        if not isinstance(labels, Mapping) or not all(isinstance(v, str) for v in labels.values()):
            labels = None
        name = pool.get("name")
        gpus = pool.get("gpus", 0)
        extra = pool.get("extraResources")
        out.append(
            ExistingPool(
                i,
                name if isinstance(name, str) else None,
                {str(k): v for k, v in labels.items()} if labels is not None else None,
                gpus if isinstance(gpus, int) and not isinstance(gpus, bool) else 0,
                str(pool.get("gpuResource", DEFAULT_GPU_RESOURCE)),
                tuple(str(k) for k in extra) if isinstance(extra, Mapping) else (),
            )
        )
    return out


@dataclass(frozen=True)
class PoolImport:
    """One pool as the nodes say it is."""

    name: str
    nodes: tuple[Node, ...]
    """The Ready, schedulable nodes of the pool, in input order."""
    cpu_milli: int
    memory: int
    """Bytes."""
    gpus: int
    gpu_resource: str
    node_labels: dict[str, str]
    node_taints: tuple[Taint, ...]
    extra_resources: dict[str, Fraction] = field(default_factory=dict)
    """The existing pool's ``extraResources`` that every node advertises, at the minimum."""
    existing: int | None = None
    """Index of the stack's pool this one updates (keeping its name and everything else)."""
    notes: tuple[str, ...] = ()
    """What the minimum leaves out, and anything a reviewer must check."""
    comments: dict[str, str] = field(default_factory=dict)
    """Per written field (``cpu``, ``memory``, ``gpus``): why it is the minimum of differing nodes, as a
    comment for the stack file."""

    def values(self) -> dict[str, Any]:
        """The fields the import owns, as written in the stack file (camelCase, canonical quantities)."""
        out: dict[str, Any] = {
            "nodes": len(self.nodes),
            "cpu": quantity.format_decimal(Fraction(self.cpu_milli, 1000)),
            "memory": quantity.format_bytes(self.memory),
        }
        if self.gpus:
            out["gpus"] = self.gpus
            if self.gpu_resource != DEFAULT_GPU_RESOURCE:
                out["gpuResource"] = self.gpu_resource
        if self.extra_resources:
            out["extraResources"] = {r: quantity.canonical(r, a) for r, a in self.extra_resources.items()}
        if self.node_labels:
            out["nodeLabels"] = dict(self.node_labels)
        if self.node_taints:
            out["nodeTaints"] = [t.model_dump(by_alias=True, exclude_none=True) for t in self.node_taints]
        return out


#: Fields of a pool the import sets from the nodes; every other field of an existing pool stays.
OWNED_FIELDS = ("nodes", "cpu", "memory", "gpus", "gpuResource", "extraResources", "nodeLabels", "nodeTaints")


@dataclass(frozen=True)
class InventoryImport:
    """The result of grouping a node list."""

    pools: tuple[PoolImport, ...]
    """The pools with nodes, in the order they are written: CPU-only pools first (Kueue tries
    flavors in order and AIPerf pods request no GPU), each class in the stack's order, new ones after."""
    kept: tuple[ExistingPool, ...] = ()
    """The stack's pools no node matches, left as they are (``prune=False``)."""
    pruned: tuple[ExistingPool, ...] = ()
    """The stack's pools no node matches, removed (``prune=True``)."""
    skipped: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Nodes left out, each with its reasons."""
    warnings: tuple[str, ...] = ()

    def order(self) -> list[PoolImport | ExistingPool]:
        """Every pool to write, imported and kept, in the order they are written."""
        kept: list[PoolImport | ExistingPool] = list(self.kept)
        merged: list[PoolImport | ExistingPool] = [*self.pools, *kept]

        def rank(p: PoolImport | ExistingPool) -> tuple[bool, int, int]:
            if isinstance(p, ExistingPool):
                return (p.gpus > 0, p.index, 0)
            return (p.gpus > 0, p.existing if p.existing is not None else 1 << 30, self.pools.index(p))

        return sorted(merged, key=rank)


@dataclass
class _Group:
    key: tuple[Any, ...]
    nodes: list[Node]
    selector: dict[str, str]
    name_hint: str | None
    existing: ExistingPool | None = None
    gpu_resource: str | None = None
    named_by: str | None = None


def import_inventory(
    nodes: Sequence[Node],
    *,
    group_by: Sequence[str] = (),
    existing: Sequence[ExistingPool] = (),
    prune: bool = False,
) -> InventoryImport:
    """Group ``nodes`` into pools.

    ``group_by``: label keys; nodes are grouped by their values (a node without one is left out).
    Without it, nodes go to the stack's pools whose ``nodeLabels`` select them (the most specific
    one), and the others are grouped by their GPU product label (:data:`GPU_PRODUCT_LABELS`), or
    else by identical allocatable CPU, memory and GPUs and taints. A pool that matches one of the
    stack's pools by ``nodeLabels`` updates it: its name and every field the import does not own
    stay. The stack's pools that no node matches are kept, or with ``prune`` removed.
    """
    skipped: list[tuple[str, tuple[str, ...]]] = [(n.name, n.skip) for n in nodes if not n.eligible]
    eligible = [n for n in nodes if n.eligible]
    warnings: list[str] = []
    groups: dict[tuple[Any, ...], _Group] = {}
    if group_by:
        for node in eligible:
            missing = [label for label in group_by if label not in node.labels]
            if missing:
                skipped.append((node.name, (f"no label {', '.join(missing)} (--group-by)",)))
                continue
            values = tuple(node.labels[label] for label in group_by)
            by_label = ("label", values, node.gpu()[0])
            selector = dict(zip(group_by, values, strict=True))
            groups.setdefault(by_label, _Group(by_label, [], selector, "-".join(values))).nodes.append(node)
    else:
        selectors = [p.node_labels if p.node_labels else None for p in existing]
        for node in eligible:
            index = best_pool(node.labels, selectors)
            if index is not None:
                pool = existing[index]
                in_pool = ("existing", index)
                group = groups.setdefault(in_pool, _Group(in_pool, [], dict(pool.node_labels or {}), None, pool))
                group.nodes.append(node)
                continue
            key, default_selector, hint = _default_key(node)
            groups.setdefault(key, _Group(key, [], default_selector, hint)).nodes.append(node)
    if not groups:
        return InventoryImport((), tuple(existing), (), tuple(skipped), ())
    groups = _merge_near_identical(groups)

    ordered = list(groups.values())
    for group in ordered:
        _choose_gpu_resource(group)
    _distinguish(ordered, warnings)
    taken = {p.name for p in existing if p.name}
    matched: set[int] = {g.existing.index for g in ordered if g.existing is not None}
    for group in ordered:
        if group.existing is None:
            same = [
                p
                for p in existing
                if p.index not in matched and p.node_labels is not None and p.node_labels == group.selector
            ]
            if same:
                group.existing = same[0]
                matched.add(same[0].index)
    names: set[str] = {g.existing.name for g in ordered if g.existing is not None and g.existing.name}
    pools: list[PoolImport] = []
    for group in ordered:
        if group.existing is not None and group.existing.name:
            name = group.existing.name
        else:
            name = _unique_name(_base_name(group), names | taken)
            names.add(name)
        pools.append(_pool(group, name))
    unmatched = tuple(p for p in existing if p.index not in matched)
    for pool in unmatched:
        if not prune:
            warnings.append(
                f"pool {pool.name!r} kept as it is: no Ready node matches its nodeLabels "
                f"{_labels_text(pool.node_labels)}; if those nodes are gone, run again with --prune or remove it "
                "(and the ClusterQueues' references to it) by hand"
            )
    return InventoryImport(
        tuple(pools),
        () if prune else unmatched,
        unmatched if prune else (),
        tuple(skipped),
        tuple(warnings),
    )


#: The labels a cloud or autoscaler gives every node of one node pool: a node that has one is
#: grouped by it first (the pool the platform team made), before its GPU product or its shape.
NODE_POOL_LABELS = POOL_LABELS[:4]
#: Nodes of one shape whose allocatable CPU and memory differ by at most this fraction (kubelet and
#: system reservations vary a little from node to node) form one pool, sized by its smallest node.
NEAR_IDENTICAL = Fraction(1, 50)


def _default_key(node: Node) -> tuple[tuple[Any, ...], dict[str, str], str | None]:
    """Group key, selector and name hint of a node no stack pool selects."""
    resource, count = node.gpu()
    for label in NODE_POOL_LABELS:
        if label in node.labels:
            value = node.labels[label]
            return ("label", ((label, value),), resource), {label: value}, value
    is_gpu = count > 0 or any(label in node.labels for label in GPU_MARKER_LABELS)
    if is_gpu:
        for label in GPU_PRODUCT_LABELS:
            if label in node.labels:
                value = node.labels[label]
                return ("label", ((label, value),), resource), {label: value}, value
    shape = (
        node.count("cpu"),
        node.count("memory"),
        tuple(sorted(node.gpu_resources().items())),
        tuple(sorted((t.key, t.value or "", t.effect) for t in node.pool_taints)),
    )
    return ("shape", shape), {}, None


def _near(a: Fraction, b: Fraction) -> bool:
    return abs(a - b) <= NEAR_IDENTICAL * max(a, b)


def _merge_near_identical(groups: dict[tuple[Any, ...], _Group]) -> dict[tuple[Any, ...], _Group]:
    """Shape groups (nodes with no pool or GPU product label) whose GPUs and taints are the same and
    whose CPU and memory differ by at most :data:`NEAR_IDENTICAL` become one group: two CPU nodes
    of one machine type with a few MiB more or less reserved are one pool, not two."""
    merged: dict[tuple[Any, ...], _Group] = {}
    for key, group in groups.items():
        if key[0] == "shape":
            cpu, memory, gpus, taints = key[1]
            into = next(
                (
                    g
                    for k, g in merged.items()
                    if k[0] == "shape" and k[1][2:] == (gpus, taints) and _near(k[1][0], cpu) and _near(k[1][1], memory)
                ),
                None,
            )
            if into is not None:
                into.nodes += group.nodes
                continue
        merged[key] = group
    return merged


def _choose_gpu_resource(group: _Group) -> None:
    """The group's GPU resource: a stack pool's own when its nodes have it, else the most common."""
    firsts = Counter(n.gpu()[0] for n in group.nodes)
    if group.existing is not None and any(group.existing.gpu_resource in n.gpu_resources() for n in group.nodes):
        group.gpu_resource = group.existing.gpu_resource
        return
    ranked = sorted(firsts.items(), key=lambda item: (-item[1], item[0] is None))
    group.gpu_resource = ranked[0][0]


def _distinguish(groups: list[_Group], warnings: list[str]) -> None:
    """Give every new pool a selector that selects its nodes and no other pool's: add the first
    :data:`POOL_LABELS` label whose one value all its nodes share and no other pool's node has."""
    for group in groups:
        if group.existing is not None:
            continue
        others = [n for g in groups if g is not group for n in g.nodes]
        if not any(selects(group.selector, n.labels) for n in others):
            continue
        for label in POOL_LABELS:
            values = {n.labels.get(label) for n in group.nodes}
            if len(values) != 1 or None in values or label in group.selector:
                continue
            value = values.pop()
            assert value is not None
            candidate = {**group.selector, label: value}
            if not any(selects(candidate, n.labels) for n in others):
                group.selector = candidate
                group.named_by = value
                break
        else:
            warnings.append(
                f"nodes {_names(group.nodes)}: no label tells them from the other pools' nodes, so their pool's "
                f"nodeLabels {_labels_text(group.selector)} also select "
                f"{_names([n for n in others if selects(group.selector, n.labels)])}; Kueue cannot steer pods to "
                "either; label the nodes of each pool and run again with --group-by LABEL"
            )


def _base_name(group: _Group) -> str:
    hint = group.name_hint if group.name_hint is not None else group.named_by
    if hint is None:
        hint = "gpu" if group.gpu_resource else "cpu"
    if group.gpu_resource and group.gpu_resource.startswith(MIG_PREFIX) and group.key[0] == "label":
        hint = f"{hint}-mig-{group.gpu_resource.removeprefix(MIG_PREFIX)}"
    return dns_label(hint)


def dns_label(text: str) -> str:
    """``NVIDIA-H100-80GB-HBM3`` → ``nvidia-h100-80gb-hbm3``; ``p5.48xlarge`` → ``p5-48xlarge``:
    a label value as a DNS-1123 label (a ResourceFlavor name), ``pool`` if nothing is left."""
    name = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return name[:63].rstrip("-") or "pool"


def _unique_name(base: str, taken: set[str]) -> str:
    if base not in taken:
        return base
    n = 2
    while True:
        suffix = f"-{n}"
        name = f"{base[: 63 - len(suffix)].rstrip('-')}{suffix}"
        if name not in taken:
            return name
        n += 1


def _pool(group: _Group, name: str) -> PoolImport:
    nodes = tuple(group.nodes)
    resource = group.gpu_resource
    notes: list[str] = []
    cpus = [n.count("cpu") for n in nodes]
    memories = [n.count("memory") for n in nodes]
    cpu_milli = math.floor(min(cpus) * 1000)
    memory = math.floor(min(memories))
    notes += _left_out("cpu", cpus, Fraction(cpu_milli, 1000))
    notes += _left_out("memory", memories, Fraction(memory))
    comments = {
        field_name: f"the smallest of {len(nodes)} nodes (up to {_show(resource_name, max(amounts))}): "
        "nodes whose allocatable differs a little are one pool, sized by its smallest node"
        for field_name, resource_name, amounts in (("cpu", "cpu", cpus), ("memory", "memory", memories))
        if min(amounts) != max(amounts)
    }
    gpus = 0
    if resource is not None:
        counts = [n.count(resource) for n in nodes]
        gpus = int(min(counts))
        notes += _left_out(resource, counts, Fraction(gpus))
        if any(n.gpu()[0] != resource for n in nodes if n.gpu()[0] is not None):
            odd = [n for n in nodes if n.gpu()[0] not in (None, resource)]
            notes.append(
                f"nodes {_names(odd)} advertise {', '.join(sorted({str(n.gpu()[0]) for n in odd}))} rather than "
                f"{resource}; they count {resource} only"
            )
    others = sorted({r for n in nodes for r in n.gpu_resources() if r != resource})
    if others:
        notes.append(
            f"not imported: {', '.join(others)} (a pool has one gpuResource; give those GPUs a pool of their own "
            "with --group-by, or list them in queues.coveredResources and the pool's extraResources)"
        )
    if resource is None and any(label in n.labels for n in nodes for label in GPU_MARKER_LABELS[:2]):
        notes.append(
            "the nodes are labelled as GPU nodes but advertise no GPU in status.allocatable: is the GPU device "
            "plugin running on them?"
        )
    taints: list[Taint] = []
    for node in nodes:
        taints += [t for t in node.pool_taints if t not in taints]
    if any(set(n.pool_taints) != set(taints) for n in nodes):
        notes.append(
            "the nodes' taints differ; nodeTaints lists all of them, so only pods that tolerate every one are "
            "admitted here"
        )
    if taints:
        notes.append(
            f"tainted {', '.join(taint_text(t) for t in taints)}: Kueue admits a pod on this flavor only if the pod, "
            "or the pool's tolerations, tolerate that"
        )
    extra: dict[str, Fraction] = {}
    existing = group.existing
    for res in existing.extra_resources if existing is not None else ():
        if all(res in n.allocatable for n in nodes):
            amounts = [n.count(res) for n in nodes]
            extra[res] = min(amounts)
            notes += _left_out(res, amounts, extra[res])
    return PoolImport(
        name=name,
        nodes=nodes,
        cpu_milli=cpu_milli,
        memory=memory,
        gpus=gpus,
        gpu_resource=resource or (existing.gpu_resource if existing is not None else DEFAULT_GPU_RESOURCE),
        node_labels=dict(group.selector),
        node_taints=tuple(taints),
        extra_resources=extra,
        existing=existing.index if existing is not None else None,
        notes=tuple(notes),
        comments=comments,
    )


def _left_out(resource: str, amounts: Sequence[Fraction], per_node: Fraction) -> list[str]:
    """``cpu: 2 of 4 nodes have more than the minimum 31850m (up to 32); 300m left out``."""
    over = [a for a in amounts if a > per_node]
    if not over:
        return []
    left = sum(over, Fraction(0)) - per_node * len(over)
    return [
        f"{resource}: {len(over)} of {len(amounts)} nodes have more than the minimum "
        f"{_show(resource, per_node)} (up to {_show(resource, max(over))}); {_show(resource, left)} left out"
    ]


def _show(resource: str, amount: Fraction) -> str:
    return str(quantity.canonical(resource, amount))


def _names(nodes: Iterable[Node]) -> str:
    names = [n.name for n in nodes]
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def _labels_text(labels: Mapping[str, str] | None) -> str:
    if labels is None:
        return "(not a mapping)"
    if not labels:
        return "{} (every node)"
    return "{" + ", ".join(f"{k}: {v}" for k, v in labels.items()) + "}"
