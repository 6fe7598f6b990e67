"""Where the operator lets a benchmark's pods run: the nodeSelector, required node affinity and
tolerations both its pods get from ``spec.podTemplate``, checked as the API server checks them.

Upstream: aiperf 0.13.0 aiperf/kubernetes/jobset_specs.py (the pod template's placement)

Kueue compares them with each ResourceFlavor before it looks at quota (:mod:`aiperf_kueue.workload.flavor_assigner`);
tolerations are the config's :class:`~aiperf_kueue.config.inventory.Toleration`, the one model of a
toleration in this program.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, get_args

from pydantic import ValidationError

from aiperf_kueue.common.display import show
from aiperf_kueue.config.aiperf_spec import AIPerfJobSpec
from aiperf_kueue.config.inventory import Effect, Toleration
from aiperf_kueue.workload.requests import SizingError

#: Taint effects a toleration may name (omitted: every effect).
TAINT_EFFECTS: tuple[str, ...] = get_args(Effect)
#: Operators of a node selector requirement (``matchExpressions``).
NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


@dataclass(frozen=True)
class NodeSelectorRequirement:
    """One ``matchExpressions`` entry of a required node affinity term."""

    key: str
    """Node label key."""

    operator: str
    """``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt`` or ``Lt``."""

    values: tuple[str, ...] = ()
    """Values for ``In``/``NotIn`` (at least one), the one integer for ``Gt``/``Lt``, none otherwise."""

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether a node with ``labels`` satisfies the requirement (``labels.Requirement.Matches``)."""
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        # Gt / Lt: a label value that is not an integer never matches.
        try:
            have = int(labels[self.key]) if present else None
        except ValueError:
            have = None
        if have is None:
            return False
        return have > int(self.values[0]) if self.operator == "Gt" else have < int(self.values[0])


@dataclass(frozen=True)
class Placement:
    """What of a pod's spec Kueue compares with each ResourceFlavor before it looks at quota.

    The AIPerf operator copies ``podTemplate.nodeSelector``, ``tolerations`` and ``affinity``
    into both the controller and the worker pods, and merges ``extraPodSpec`` over them last
    (a plain ``dict.update``: a key there replaces the podTemplate's). Hashable, so the flavor
    match of one placement is computed once however many jobs share it.
    """

    node_selector: tuple[tuple[str, str], ...] = ()
    """``nodeSelector`` as sorted ``(key, value)`` pairs."""

    node_affinity: tuple[tuple[NodeSelectorRequirement, ...], ...] | None = None
    """``affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms``:
    the terms (any may match), each its ``matchExpressions`` (all must match; ``matchFields``
    are not compared with flavors); ``None`` when unset."""

    tolerations: tuple[Toleration, ...] = ()
    """``tolerations``, in order."""


def placement(spec: AIPerfJobSpec) -> Placement:
    """The nodeSelector, required node affinity and tolerations the operator gives both pods.

    A key of ``podTemplate.extraPodSpec`` replaces the podTemplate field (the operator
    merges extraPodSpec last). A shape the API server would reject when the operator
    creates the JobSet is a :class:`SizingError`.
    """
    template = spec.pod_template
    if template is None:
        return Placement()
    extra = template.extra_pod_spec or {}

    def pick(key: str, own: Any) -> tuple[Any, str]:
        if key in extra:
            return extra[key], f"spec.podTemplate.extraPodSpec.{key}"
        return own, f"spec.podTemplate.{key}"

    selector, where = pick("nodeSelector", template.node_selector)
    if not isinstance(selector or {}, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in (selector or {}).items()
    ):
        raise SizingError(where, f"must be a mapping of node label to string value, got {show(selector)}")
    tolerations, where = pick("tolerations", template.tolerations)
    affinity, affinity_where = pick("affinity", template.affinity)
    return Placement(
        node_selector=tuple(sorted((selector or {}).items())),
        node_affinity=_required_node_affinity(affinity, affinity_where),
        tolerations=tuple(_toleration(t, f"{where}[{i}]") for i, t in enumerate(_list(tolerations, where))),
    )


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise SizingError(where, f"must be a list, got {show(value)}")
    return value


def _toleration(raw: Any, where: str) -> Toleration:
    """A pod toleration, checked as the API server validates it."""
    if not isinstance(raw, dict):
        raise SizingError(where, f"must be a toleration mapping (key, operator, value, effect), got {show(raw)}")
    key, value, effect = raw.get("key") or "", raw.get("value") or "", raw.get("effect") or ""
    operator = raw.get("operator") or "Equal"
    for name, given in (("key", key), ("value", value), ("effect", effect), ("operator", operator)):
        if not isinstance(given, str):
            raise SizingError(f"{where}.{name}", f"must be a string, got {show(given)}")
    if operator not in ("Equal", "Exists"):
        raise SizingError(f"{where}.operator", f"must be Equal or Exists, got {show(operator)}")
    if effect and effect not in TAINT_EFFECTS:
        raise SizingError(
            f"{where}.effect", f"must be one of {', '.join(TAINT_EFFECTS)} or omitted, got {show(effect)}"
        )

    if not key and operator != "Exists":
        raise SizingError(where, "a toleration without key must use operator Exists (it then tolerates every taint)")
    if operator == "Exists" and value:
        raise SizingError(f"{where}.value", f"must be empty with operator Exists, got {show(value)}")
    seconds = raw.get("tolerationSeconds")
    if seconds is not None and effect != "NoExecute":
        raise SizingError(f"{where}.tolerationSeconds", "needs effect NoExecute")
    try:
        # An empty key, value or effect is unset in a pod's toleration.
        return Toleration(
            key=key or None, operator=operator, value=value or None, effect=effect or None, toleration_seconds=seconds
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in error["loc"])
        raise SizingError(f"{where}.{field}" if field else where, error["msg"].removeprefix("Value error, ")) from None


def _required_node_affinity(affinity: Any, where: str) -> tuple[tuple[NodeSelectorRequirement, ...], ...] | None:
    """``nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms``, checked."""
    if affinity is None:
        return None
    if not isinstance(affinity, dict):
        raise SizingError(where, f"must be a Kubernetes Affinity mapping, got {show(affinity)}")
    required = (affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return None
    where = f"{where}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    if not isinstance(required, dict):
        raise SizingError(where, f"must be a NodeSelector mapping, got {show(required)}")
    terms = _list(required.get("nodeSelectorTerms"), f"{where}.nodeSelectorTerms")
    if not terms:
        raise SizingError(f"{where}.nodeSelectorTerms", "must have at least one node selector term")
    out = []
    for i, term in enumerate(terms):
        here = f"{where}.nodeSelectorTerms[{i}]"
        if not isinstance(term, dict):
            raise SizingError(here, f"must be a mapping with matchExpressions, got {show(term)}")
        expressions = _list(term.get("matchExpressions"), f"{here}.matchExpressions")
        out.append(tuple(_requirement(e, f"{here}.matchExpressions[{j}]") for j, e in enumerate(expressions)))
    return tuple(out)


def _requirement(raw: Any, where: str) -> NodeSelectorRequirement:
    """One ``matchExpressions`` entry, checked as the API server validates it."""
    if not isinstance(raw, dict):
        raise SizingError(where, f"must be a mapping with key, operator and values, got {show(raw)}")
    key, operator, values = raw.get("key"), raw.get("operator"), raw.get("values") or []
    if not isinstance(key, str) or not key:
        raise SizingError(f"{where}.key", f"must be a node label key, got {show(key)}")
    if operator not in NODE_SELECTOR_OPERATORS:
        raise SizingError(
            f"{where}.operator", f"must be one of {', '.join(NODE_SELECTOR_OPERATORS)}, got {show(operator)}"
        )
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise SizingError(f"{where}.values", f"must be a list of strings (quote numbers), got {show(values)}")
    if operator in ("In", "NotIn") and not values:
        raise SizingError(f"{where}.values", f"must be non-empty with operator {operator}")
    if operator in ("Exists", "DoesNotExist") and values:
        raise SizingError(f"{where}.values", f"must be empty with operator {operator}, got {show(values)}")
    if operator in ("Gt", "Lt") and (len(values) != 1 or not values[0].lstrip("-").isdigit()):
        raise SizingError(
            f"{where}.values", f"must be one integer (as a string) with operator {operator}, got {show(values)}"
        )
    return NodeSelectorRequirement(key, operator, tuple(values))
