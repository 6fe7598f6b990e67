"""What Kueue charges for one pod, from its containers, init containers and overhead.

Upstream: kueue v0.19.2 pkg/workload/resources.go, pkg/resources/requests.go

Kueue's per-pod request is ``max(Σ containers + Σ sidecars, max_i(init_i + sidecars before
i)) + overhead`` (a container's requests, else its limits, per resource). Quantities are exact
:class:`~fractions.Fraction` (CPU in cores, memory in bytes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from aiperf_kueue.common import quantity
from aiperf_kueue.common.display import show

#: Resource amounts per resource name, exact (CPU in cores, bytes for memory).
Requests = Mapping[str, Fraction]


class SizingError(ValueError):
    """The operator (or the API server it writes to) would fail this AIPerfJob.

    ``path`` is the spec key to change, ``message`` says why, and ``operator`` is the
    operator's own message when it has one (what the AIPerfJob's ``status.error`` would say).
    """

    def __init__(self, path: str, message: str, operator: str | None = None) -> None:
        self.path = path
        self.message = message
        self.operator = operator
        super().__init__(f"{path}: {message}")


def container_requests(container: Mapping[str, Any], where: str) -> dict[str, Fraction]:
    """A container's requests as Kueue counts them: ``requests``, else ``limits``, per resource."""
    resources = container.get("resources") or {}
    if not isinstance(resources, dict):
        raise SizingError(f"{where}.resources", "must be a mapping")
    limits = parse_amounts(resources.get("limits") or {}, f"{where}.resources.limits")
    requests = parse_amounts(resources.get("requests") or {}, f"{where}.resources.requests")
    return {**limits, **requests}


def parse_amounts(raw: Any, where: str) -> dict[str, Fraction]:
    """``{resource: quantity}`` parsed; :class:`SizingError` at ``where`` for anything else."""
    if not isinstance(raw, dict):
        raise SizingError(where, "must be a mapping of resource to quantity")
    out: dict[str, Fraction] = {}
    for resource, text in raw.items():
        try:
            out[str(resource)] = quantity.parse(text)
        except ValueError:
            raise SizingError(f"{where}.{resource}", f"not a Kubernetes quantity: {show(text)}") from None
    return out


def kueue_pod_requests(
    containers: Mapping[str, Fraction], init_containers: list[dict[str, Any]], overhead: Mapping[str, Fraction]
) -> dict[str, Fraction]:
    """Kueue's per-pod request: ``max(Σ containers + Σ sidecars, max_i(init_i + sidecars before i)) + overhead``."""
    sidecars: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for container in init_containers:
        own = container_requests(container, "initContainers")
        if container.get("restartPolicy") == "Always":
            sidecars = total([sidecars, own])
        else:
            init_peak = _max(init_peak, total([own, sidecars]))
    pod = _max(total([containers, sidecars]), init_peak)
    return {r: a for r, a in total([pod, overhead]).items() if a != 0}


def total(parts: Iterable[Mapping[str, Fraction]]) -> dict[str, Fraction]:
    """The per-resource sum of ``parts``."""
    out: dict[str, Fraction] = {}
    for part in parts:
        for resource, amount in part.items():
            out[resource] = out.get(resource, Fraction(0)) + amount
    return out


def _max(a: Mapping[str, Fraction], b: Mapping[str, Fraction]) -> dict[str, Fraction]:
    return {r: max(a.get(r, Fraction(0)), b.get(r, Fraction(0))) for r in {**a, **b}}


def resource_order(resources: Iterable[str]) -> list[str]:
    """``cpu``, ``memory``, then the rest alphabetically."""
    names = set(resources)
    head = [r for r in ("cpu", "memory") if r in names]
    return head + sorted(names - set(head))


def canonical(requests: Requests) -> dict[str, str | int]:
    """``{resource: canonical quantity}`` in :func:`resource_order` (zero amounts dropped)."""
    return {r: quantity.canonical(r, requests[r]) for r in resource_order(requests) if requests[r] != 0}


def format_requests(requests: Requests) -> str:
    """``cpu 600m, memory 5888Mi`` (``nothing`` when empty)."""
    text = ", ".join(f"{r} {q}" for r, q in canonical(requests).items())
    return text or "nothing"
