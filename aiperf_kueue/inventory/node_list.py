"""A Kubernetes node list (``kubectl get nodes -o json``) read into what the inventory needs.

Pure: JSON-like data in, :class:`Node` records out. Every node is kept, with the reasons it
cannot take benchmark pods (NotReady, cordoned, control-plane, being removed) in
:attr:`Node.skip`; grouping (:mod:`aiperf_kueue.inventory.inventory_nodes`) and drift
(:mod:`aiperf_kueue.inventory.drift`) decide what to do with them. Anything that is not a node list
raises :class:`NodeListError`, one line per problem naming the input and the node.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from pydantic import ValidationError

from aiperf_kueue.common import quantity
from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.config import Taint
from aiperf_kueue.stackfile.yaml_input import parse_yaml_document

#: Taints that mean "this node is the control plane": pods do not go there unless they tolerate it.
CONTROL_PLANE_TAINTS = ("node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master")
#: Taints the cluster autoscaler and Karpenter put on a node they are about to remove.
REMOVAL_TAINTS = ("ToBeDeletedByClusterAutoscaler", "karpenter.sh/disrupted")
#: A node the cloud provider has not initialised yet: it may still change labels and allocatable.
UNINITIALIZED_TAINT = "node.cloudprovider.kubernetes.io/uninitialized"
#: Kubernetes' own condition taints (not-ready, unreachable, unschedulable, memory-pressure, ...):
#: the node lifecycle controller adds and removes them as the node's state changes, so they say
#: nothing about the pool and never become ``nodeTaints``.
CONDITION_TAINT_PREFIX = "node.kubernetes.io/"
#: The GPU resources a node advertises, in the order a pool's ``gpuResource`` is chosen:
#: whole NVIDIA GPUs, whole AMD GPUs, then NVIDIA MIG slices (``nvidia.com/mig-1g.10gb``,
#: the GPU operator's "mixed" strategy) by count.
WHOLE_GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")
MIG_PREFIX = "nvidia.com/mig-"
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
#: At most this many nodes: a bound on work, far above any real cluster (Kubernetes supports 5,000).
MAX_NODES = 100_000


class NodeListError(Exception):
    """The input is not a usable node list; nothing is written."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__("\n".join(self.lines()))

    def lines(self) -> list[str]:
        """One line per problem: ``<input>: <problem>``."""
        return [f"{self.source}: {p}" for p in self.problems]


def taint_text(taint: Taint) -> str:
    """``nvidia.com/gpu=present:NoSchedule``, as kubectl prints a taint."""
    return f"{taint.key}={taint.value}:{taint.effect}" if taint.value else f"{taint.key}:{taint.effect}"


@dataclass(frozen=True)
class Node:
    """One node: what grouping, sizing and drift read from it."""

    name: str
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    """Every taint, condition taints included (see :attr:`pool_taints`)."""
    allocatable: dict[str, Fraction]
    """``status.allocatable``, exact; what the scheduler can hand out, unlike ``capacity``."""
    skip: tuple[str, ...] = field(default=())
    """Why no benchmark pod can be placed here now; empty for a Ready, schedulable worker."""

    @property
    def eligible(self) -> bool:
        """Ready, schedulable, not the control plane and not being removed."""
        return not self.skip

    @property
    def pool_taints(self) -> tuple[Taint, ...]:
        """The taints that describe the node's pool: not Kubernetes' condition taints, which
        come and go with the node's state, nor the ones that keep it out of the inventory."""
        transient = (*CONTROL_PLANE_TAINTS, *REMOVAL_TAINTS, UNINITIALIZED_TAINT)
        return tuple(t for t in self.taints if not t.key.startswith(CONDITION_TAINT_PREFIX) and t.key not in transient)

    def gpu_resources(self) -> dict[str, int]:
        """The GPU resources this node advertises, with a count above zero, in preference order."""
        found = {r: self.allocatable[r] for r in WHOLE_GPU_RESOURCES if self.allocatable.get(r, 0) > 0}
        migs = sorted(
            ((r, a) for r, a in self.allocatable.items() if r.startswith(MIG_PREFIX) and a > 0),
            key=lambda item: (-item[1], item[0]),
        )
        found.update(migs)
        return {r: int(a) for r, a in found.items()}

    def gpu(self) -> tuple[str | None, int]:
        """The node's GPU resource and count: the first of :meth:`gpu_resources`, or ``(None, 0)``."""
        resources = self.gpu_resources()
        return next(iter(resources.items()), (None, 0))

    def count(self, resource: str) -> Fraction:
        """Allocatable ``resource`` (0 when the node does not advertise it)."""
        return self.allocatable.get(resource, Fraction(0))


def parse_json(text: str | bytes, source: str) -> Any:
    """The JSON document in ``text`` (``kubectl get nodes -o json``), or the YAML one
    (``-o yaml``: it starts with a key, not ``{``); :class:`NodeListError` naming ``source`` if it
    is neither."""
    data = text.encode() if isinstance(text, str) else text
    if data.lstrip()[:1] not in (b"{", b"[", b""):
        try:
            document = parse_yaml_document(data, source)
        except ConfigError as exc:
            raise NodeListError(source, [f"{p.message}; {_EXPECTED}" for p in exc.problems]) from None
        if not isinstance(document, (dict, list)):
            # `kubectl get nodes` without -o: its table reads as one YAML string.
            raise NodeListError(source, [f"not JSON or YAML of a node list (plain text: a table?); {_EXPECTED}"])
        return document
    try:
        return json.loads(text)
    except UnicodeDecodeError as exc:
        raise NodeListError(source, [f"not UTF-8 text: {exc.reason} at byte {exc.start}"]) from None
    except json.JSONDecodeError as exc:
        raise NodeListError(
            source,
            [f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); {_EXPECTED}"],
        ) from None
    except RecursionError:
        raise NodeListError(source, [f"not JSON this program reads (nested too deeply); {_EXPECTED}"]) from None


_EXPECTED = "give the output of `kubectl get nodes -o json` (or -o yaml)"


def parse_nodes(document: Any, source: str) -> list[Node]:
    """Every node in a ``List``/``NodeList`` document (or a single ``Node``), in input order.

    :class:`NodeListError` with every problem found: not a node list, an item that is not a
    Node, a node without a name or ``status.allocatable``, a quantity Kubernetes would not
    accept, two nodes of one name.
    """
    items = _items(document, source)
    problems: list[str] = []
    nodes: list[Node] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        where = f"items[{index}]" if isinstance(document, Mapping) and "items" in document else "the Node"
        node = _node(item, where, problems)
        if node is None:
            continue
        if node.name in seen:
            problems.append(f"{where}: node {node.name!r} is listed twice (also items[{seen[node.name]}])")
            continue
        seen[node.name] = index
        nodes.append(node)
    if problems:
        raise NodeListError(source, problems)
    return nodes


def _items(document: Any, source: str) -> list[Any]:
    if not isinstance(document, Mapping):
        raise NodeListError(source, [f"not a node list: a JSON {_json_type(document)}; {_EXPECTED}"])
    kind = document.get("kind")
    if kind == "Node":
        return [document]
    if kind not in ("List", "NodeList") or "items" not in document:
        shown = f"kind {kind!r}" if kind is not None else "no kind"
        raise NodeListError(
            source, [f"not a node list: {shown}, expected kind List or NodeList with items; {_EXPECTED}"]
        )
    items = document["items"]
    if not isinstance(items, list):
        raise NodeListError(source, [f"items: must be a list of Node objects, got a JSON {_json_type(items)}"])
    if len(items) > MAX_NODES:
        raise NodeListError(source, [f"items: at most {MAX_NODES} nodes, got {len(items)}"])
    return items


def _json_type(value: Any) -> str:
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


def _node(item: Any, where: str, problems: list[str]) -> Node | None:
    """One node, or ``None`` with its problems appended."""
    if not isinstance(item, Mapping):
        problems.append(f"{where}: not a Node object (a JSON {_json_type(item)})")
        return None
    kind = item.get("kind")
    if kind is not None and kind != "Node":
        problems.append(f"{where}: kind {kind!r}, expected Node")
        return None
    metadata = _mapping(item.get("metadata"))
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        problems.append(f"{where}: no metadata.name")
        return None
    where = f"{where} (node {name!r})"
    before = len(problems)
    labels = _labels(metadata.get("labels"), where, problems)
    spec, status = _mapping(item.get("spec")), _mapping(item.get("status"))
    taints = _taints(spec.get("taints"), where, problems)
    allocatable = _allocatable(status.get("allocatable"), where, problems)
    if len(problems) > before:
        return None
    reasons = _skip_reasons(metadata, spec, status, taints)
    return Node(name, labels, taints, allocatable, reasons)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _labels(value: Any, where: str, problems: list[str]) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        problems.append(f"{where}: metadata.labels must map label keys to string values")
        return {}
    return dict(value)


def _taints(value: Any, where: str, problems: list[str]) -> tuple[Taint, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        problems.append(f"{where}: spec.taints must be a list")
        return ()
    out: list[Taint] = []
    for i, taint in enumerate(value):
        taint = _mapping(taint)
        try:
            # The taint model of the stack's nodeTaints: a node taint and a declared one compare equal.
            out.append(Taint(key=taint.get("key"), value=taint.get("value") or None, effect=taint.get("effect")))
        except ValidationError:
            problems.append(
                f"{where}: spec.taints[{i}] must have a key, an optional label value and an effect "
                f"({', '.join(_EFFECTS)}), got {json.dumps(taint, sort_keys=True, default=str)}"
            )
    return tuple(out)


def _allocatable(value: Any, where: str, problems: list[str]) -> dict[str, Fraction]:
    if not isinstance(value, Mapping) or not value:
        problems.append(
            f"{where}: no status.allocatable; the inventory is sized from what the scheduler can hand out, "
            "which the kubelet reports there once the node has registered"
        )
        return {}
    out: dict[str, Fraction] = {}
    for resource, amount in value.items():
        try:
            parsed = quantity.parse(amount) if isinstance(amount, str) else None
        except ValueError:
            parsed = None
        if parsed is None or parsed < 0:
            problems.append(
                f"{where}: status.allocatable[{json.dumps(resource)}] must be a Kubernetes quantity such as "
                f'"16", "1500m" or "64Gi", got {json.dumps(amount)}'
            )
            continue
        out[str(resource)] = parsed
    missing = [r for r in ("cpu", "memory") if r not in out and r not in value]
    if missing:
        problems.append(f"{where}: status.allocatable has no {' or '.join(missing)}")
    return out


def _skip_reasons(
    metadata: Mapping[str, Any], spec: Mapping[str, Any], status: Mapping[str, Any], taints: tuple[Taint, ...]
) -> tuple[str, ...]:
    reasons: list[str] = []
    ready = next(
        (c for c in status.get("conditions") or [] if isinstance(c, Mapping) and c.get("type") == "Ready"), None
    )
    if ready is None:
        reasons.append("NotReady (no Ready condition reported)")
    elif ready.get("status") != "True":
        detail = ": ".join(str(ready[k]) for k in ("reason", "message") if ready.get(k))
        reasons.append(f"NotReady (Ready is {ready.get('status')}{', ' + detail if detail else ''})")
    if spec.get("unschedulable") is True:
        reasons.append("cordoned (spec.unschedulable)")
    for taint in taints:
        if taint.key in CONTROL_PLANE_TAINTS and taint.effect != "PreferNoSchedule":
            reasons.append(f"control-plane (taint {taint_text(taint)})")
        elif taint.key in REMOVAL_TAINTS:
            reasons.append(f"being removed by the autoscaler (taint {taint_text(taint)})")
        elif taint.key == UNINITIALIZED_TAINT:
            reasons.append(f"not initialised by the cloud provider yet (taint {taint_text(taint)})")
    if metadata.get("deletionTimestamp"):
        reasons.append("being deleted (metadata.deletionTimestamp)")
    return tuple(reasons)
