"""What ``pulumi up`` would do to each resource between two plans: create, update, replace, delete.

Works on the ``resources.json`` records ``aiperf-kueue plan`` writes; :mod:`aiperf_kueue.review.diff`
puts the changes together with the quota rows and the queue hierarchy.

Rules, the ones the program declares and Pulumi applies:

- Resources are matched by URN without its stack segment, so a stack file and a
  copy of it under another name compare resource by resource.
- A matched resource whose inputs differ is *updated*, or *replaced* when a changed
  input lies at (or under, or above) one of its ``replaceOnChanges`` paths, or is a
  Kubernetes object's ``metadata.name`` or ``metadata.namespace`` (pulumi-kubernetes
  replaces an object it would rename or move), or a Helm chart's ``namespace`` (which
  moves every object of the chart).
- A HEAD resource whose ``aliases`` name a former type or name is matched with BASE's
  resource of that type or name, as the engine matches it: an *update* of the live object when
  its inputs change (a Kueue kind across apiVersions), else no step at all (a Namespace and its
  patch: :func:`aliased_moves` lists those), never a delete and a create.
- A resource only in BASE is *deleted*; ``protect: true`` there means ``pulumi up``
  refuses, ``retainOnDelete`` means it stays in the cluster.
- Replacing an object that BASE retains (``retainOnDelete``) under the same name fails:
  the old object stays in the cluster, and the replacement's create meets it
  (``AlreadyExists``, pulumi-kubernetes ≥ 4.29 creates client-side). The old state's
  flag decides, so setting ``retainOnDelete: false`` in the same change does not help. An
  AIPerfJob never meets this: it is named after its spec, so a changed one is renamed too.
- Secrets compare by their fingerprints (``[secret 1a2b3c4d]`` of the plaintext,
  ``[encrypted 1a2b3c4d]`` of a ``secure:`` ciphertext, which re-encryption changes too).
  A plan written before fingerprints (every secret ``[secret]``) compares secrets as equal.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from aiperf_kueue.common.errors import key_path
from aiperf_kueue.stackfile.loader import SECRET_PLACEHOLDER_PATTERN

ACTIONS = ("create", "update", "replace", "delete")
OPTION_KEYS = ("protect", "protectsCrds", "retainOnDelete", "deleteBeforeReplace", "replaceOnChanges")
CLUSTER_QUEUE_SUFFIX = ":ClusterQueue"
#: What pulumi-kubernetes replaces whatever ``replaceOnChanges`` says: an object's identity.
IDENTITY_PATHS = ("metadata.name", "metadata.namespace")
#: A Helm chart's objects take their namespace from the chart's: moving it moves (replaces) them all.
CHART_IDENTITY_PATHS = ("namespace",)
#: A secret input as ``plan`` writes it: a fingerprint of its plaintext.
SECRET_PATTERN = re.compile(r"\[secret [0-9a-f]{8}\]")
#: How plans written before fingerprints show every secret.
LEGACY_SECRET = "[secret]"


class _Missing:
    """An absent value (a key only on one side), shown as ``(absent)``."""

    def __repr__(self) -> str:
        return "(absent)"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class FieldChange:
    """One changed input (or resource option), by its dotted path."""

    path: str
    old: Any
    new: Any


@dataclass(frozen=True)
class ResourceChange:
    """What happens to one resource."""

    action: str
    """``create``, ``update``, ``replace`` or ``delete``."""

    key: str
    """URN without its stack segment: ``project::type-chain::name``."""

    urn: str
    """HEAD's URN (BASE's for a delete)."""

    name: str
    type: str
    fields: tuple[FieldChange, ...] = ()
    """Changed inputs, then changed options (``options.protect``); empty for create and delete."""

    replace_because: tuple[str, ...] = ()
    """The ``replaceOnChanges`` paths whose values differ (replace only)."""

    protect: bool = False
    """``protect`` on the side that exists (BASE's for a delete)."""

    retain_on_delete: bool = False
    delete_before_replace: bool = False
    kind: str = ""
    """``Kind namespace/name`` for a Kubernetes object, else empty."""

    already_exists: bool = False
    """A replace that ``pulumi up`` cannot do: BASE retains the object (``retainOnDelete``), so
    the old one stays in the cluster under the name the replacement is created with."""


def is_secret(value: Any) -> bool:
    """Whether ``value`` is a secret's placeholder (either fingerprint, or the old ``[secret]``)."""
    return isinstance(value, str) and bool(
        value == LEGACY_SECRET or SECRET_PATTERN.fullmatch(value) or SECRET_PLACEHOLDER_PATTERN.fullmatch(value)
    )


def is_encrypted(value: Any) -> bool:
    """Whether ``value`` is a ``secure:`` value's placeholder (its fingerprint is the ciphertext's)."""
    return isinstance(value, str) and bool(SECRET_PLACEHOLDER_PATTERN.fullmatch(value))


def resource_key(urn: str) -> str:
    """``urn:pulumi:prod::aiperf-kueue::T$U::name`` → ``aiperf-kueue::T$U::name``.

    Plans written before their URNs took the engine's form carry the root Stack's type in the type chain
    (``pulumi:pulumi:Stack$T$U``); it is dropped, so such a plan still compares resource by resource."""
    parts = urn.replace("::pulumi:pulumi:Stack$", "::", 1).split("::", 1)
    if len(parts) == 2 and parts[0].startswith("urn:pulumi:"):
        return parts[1]
    return urn


def alias_keys(record: dict[str, Any]) -> list[str]:
    """The keys (:func:`resource_key`) of what ``record``'s ``aliases`` say it was: the same parent chain
    with a former last type and/or name (or an alias's whole URN)."""
    key = resource_key(record["urn"])
    head, _, name = key.rpartition("::")
    project, _, chain = head.partition("::")
    parents, _, own_type = chain.rpartition("$")
    out = []
    for alias in record.get("aliases") or []:
        if not isinstance(alias, dict):
            continue
        if "urn" in alias:
            out.append(resource_key(str(alias["urn"])))
            continue
        former_type = str(alias.get("type") or own_type)
        former_chain = f"{parents}${former_type}" if parents else former_type
        out.append(f"{project}::{former_chain}::{alias.get('name') or name}")
    return [k for k in out if k != key]


def field_changes(old: Any, new: Any, path: tuple[str | int, ...] = ()) -> list[FieldChange]:
    """Leaf-level differences between two JSON values, by dotted path (``key_path`` syntax).

    Mappings and lists are walked; a key or list item present on one side only is one
    change at its own path (its old or new value is :data:`MISSING`).
    """
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[FieldChange] = []
        for k in [*old, *(k for k in new if k not in old)]:
            out += field_changes(old.get(k, MISSING), new.get(k, MISSING), (*path, k))
        return out
    if isinstance(old, list) and isinstance(new, list):
        out = []
        for i in range(max(len(old), len(new))):
            out += field_changes(old[i] if i < len(old) else MISSING, new[i] if i < len(new) else MISSING, (*path, i))
        return out
    if _same(old, new):
        return []
    return [FieldChange(key_path(*path) if path else "(inputs)", old, new)]


def _same(a: Any, b: Any) -> bool:
    if a is MISSING or b is MISSING:
        return a is b
    return type(a) is type(b) and a == b


_SEGMENT = re.compile(r'\.?([^.\[\]"]+)|\["((?:[^"\\]|\\.)*)"\]|\[(\d+|\*)\]')


def parse_property_path(path: str) -> tuple[str | int, ...]:
    """A Pulumi property path (``spec.clusterQueue``, ``a["b.c"][0]``, ``a[*].b``) → segments."""
    segments: list[str | int] = []
    pos = 0
    while pos < len(path):
        match = _SEGMENT.match(path, pos)
        if match is None or match.end() == pos:
            raise ValueError(f"not a property path: {path!r}")
        plain, quoted, index = match.groups()
        if plain is not None:
            segments.append(plain)
        elif quoted is not None:
            segments.append(quoted)
        else:
            segments.append("*" if index == "*" else int(index))
        pos = match.end()
    return tuple(segments)


def values_at(value: Any, segments: tuple[str | int, ...]) -> dict[tuple[str | int, ...], Any]:
    """Every value at ``segments`` (``*`` matches any key or index), keyed by its concrete path."""
    if not segments:
        return {(): value}
    head, rest = segments[0], segments[1:]
    if head == "*":
        if isinstance(value, dict):
            items: list[tuple[str | int, Any]] = list(value.items())
        elif isinstance(value, list):
            items = list(enumerate(value))
        else:
            items = []
    elif (isinstance(value, dict) and isinstance(head, str) and head in value) or (
        isinstance(value, list) and isinstance(head, int) and 0 <= head < len(value)
    ):
        items = [(head, value[head])]  # type: ignore[index]  # the condition matched key type to container
    else:
        items = []
    out: dict[tuple[str | int, ...], Any] = {}
    for key, child in items:
        for sub, v in values_at(child, rest).items():
            out[(key, *sub)] = v
    return out


def replace_triggers(old: Any, new: Any, rules: list[str]) -> list[str]:
    """The ``replaceOnChanges`` paths whose values differ between ``old`` and ``new`` inputs."""
    hits = []
    for rule in rules:
        if rule == "*":
            if old != new:
                hits.append(rule)
            continue
        segments = parse_property_path(rule)
        if _canonical_json(values_at(old, segments)) != _canonical_json(values_at(new, segments)):
            hits.append(rule)
    return hits


def _canonical_json(values: dict[tuple[str | int, ...], Any]) -> str:
    return json.dumps(sorted((list(k), v) for k, v in values.items()), sort_keys=True, default=str)


def _is_object(record: dict[str, Any]) -> bool:
    """A Kubernetes object the program declares directly (not a chart, a YAML file or a component)."""
    inputs = record.get("inputs")
    return (
        record["type"].startswith("kubernetes:")
        and not record["type"].startswith(("kubernetes:helm.sh/", "kubernetes:yaml/"))
        and isinstance(inputs, dict)
        and "kind" in inputs
    )


def identity_triggers(record: dict[str, Any], old: Any, new: Any) -> list[str]:
    """The identity paths (:data:`IDENTITY_PATHS`, :data:`CHART_IDENTITY_PATHS`) whose values differ."""
    if _is_object(record):
        paths: tuple[str, ...] = IDENTITY_PATHS
    elif record["type"].startswith("kubernetes:helm.sh/"):
        paths = CHART_IDENTITY_PATHS
    else:
        return []
    return replace_triggers(old, new, list(paths))


def _kind(record: dict[str, Any]) -> str:
    inputs = record.get("inputs")
    if not isinstance(inputs, dict) or "kind" not in inputs:
        return ""
    meta = inputs.get("metadata") if isinstance(inputs.get("metadata"), dict) else {}
    name = meta.get("name", "") if meta else ""
    namespace = meta.get("namespace") if meta else None
    kind = str(inputs["kind"])
    if record["type"].endswith("Patch"):
        kind += "Patch"
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}".rstrip()


def _change(action: str, record: dict[str, Any], old: dict[str, Any] | None = None, **extra: Any) -> ResourceChange:
    """``old``: BASE's record of an updated or replaced resource, whose ``retainOnDelete`` the
    state holds, and so decides what happens to the old object."""
    return ResourceChange(
        action=action,
        key=resource_key(record["urn"]),
        urn=record["urn"],
        name=record["name"],
        type=record["type"],
        # A chart or manifests whose CRDs are protected stops `pulumi up` as a protected resource would.
        protect=bool(record.get("protect") or (old or record).get("protectsCrds")),
        retain_on_delete=bool((old or record).get("retainOnDelete")),
        delete_before_replace=bool(record.get("deleteBeforeReplace")),
        kind=_kind(record),
        **extra,
    )


_QUOTA_CELL = re.compile(r"spec\.resourceGroups\[(\d+)\]\.flavors\[(\d+)\]\.resources\[(\d+)\]\.(\w+)")


def _quota_cell_named(change: FieldChange, *sides: Any) -> FieldChange:
    """A ClusterQueue's ``spec.resourceGroups[0].flavors[1].resources[2].nominalQuota`` →
    ``team-a / gpu-h100 / nvidia.com/gpu: nominalQuota``, names read from HEAD (else BASE)."""
    found = _QUOTA_CELL.fullmatch(change.path)
    if found is None:
        return change
    group, flavor, resource = (int(found[i]) for i in (1, 2, 3))
    for inputs in sides:
        try:
            cq = inputs["metadata"]["name"]
            entry = inputs["spec"]["resourceGroups"][group]["flavors"][flavor]
            names = (cq, entry["name"], entry["resources"][resource]["name"])
        except (KeyError, IndexError, TypeError):
            continue
        if all(isinstance(n, str) for n in names):
            return FieldChange(f"{' / '.join(names)}: {found[4]}", change.old, change.new)
    return change


@dataclass(frozen=True)
class AliasedMove:
    """A resource the engine carries over by its aliases with its inputs unchanged: no step, the live object
    untouched (a namespace's ``create`` flipped; an earlier program's component left out of the parent chain)."""

    name: str
    old_type: str
    new_type: str
    old_parent: str
    """The parent's ``<type>::<name>`` in BASE (empty: the stack)."""
    new_parent: str


def _parent_label(record: dict[str, Any]) -> str:
    """``<last type>::<name>`` of the record's parent, from its URN; empty for the stack or none."""
    parent = record.get("parent")
    if not isinstance(parent, str) or "::" not in parent:
        return ""
    chain, _, name = parent.rpartition("::")
    own_type = chain.rpartition("::")[2].rpartition("$")[2]
    return "" if own_type == "pulumi:pulumi:Stack" else f"{own_type}::{name}"


def aliased_moves(base: list[dict[str, Any]], head: list[dict[str, Any]]) -> list[AliasedMove]:
    """Each resource the engine carries over to a new type or parent by its aliases with its inputs unchanged."""
    old_by_key = {resource_key(r["urn"]): r for r in base}
    head_keys = {resource_key(r["urn"]) for r in head}
    moves = []
    for new in head:
        if resource_key(new["urn"]) in old_by_key:
            continue
        former = next((k for k in alias_keys(new) if k in old_by_key and k not in head_keys), None)
        if former is not None and not field_changes(old_by_key[former].get("inputs"), new.get("inputs")):
            old = old_by_key[former]
            moves.append(AliasedMove(new["name"], old["type"], new["type"], _parent_label(old), _parent_label(new)))
    return sorted(moves, key=lambda m: m.name)


def resource_changes(base: list[dict[str, Any]], head: list[dict[str, Any]]) -> list[ResourceChange]:
    """Every created, updated, replaced and deleted resource, in :data:`ACTIONS` order, then by name."""
    old_by_key = {resource_key(r["urn"]): r for r in base}
    head_keys = {resource_key(r["urn"]) for r in head}
    new_keys = set()
    changes: list[ResourceChange] = []
    for new in head:
        key = resource_key(new["urn"])
        new_keys.add(key)
        old = old_by_key.get(key)
        if old is None:
            # The engine follows an alias only to a resource the program no longer declares under that URN.
            former = next((k for k in alias_keys(new) if k in old_by_key and k not in head_keys), None)
            if former is not None:
                new_keys.add(former)
                old = old_by_key[former]
        if old is None:
            changes.append(_change("create", new))
            continue
        inputs = field_changes(old.get("inputs"), new.get("inputs"))
        if old["type"] != new["type"]:
            if not inputs:
                # The engine moves the state to the new type and does nothing to the object ("same").
                continue
            inputs.insert(0, FieldChange("(type)", old["type"], new["type"]))
        if new["type"].endswith(CLUSTER_QUEUE_SUFFIX):
            inputs = [_quota_cell_named(f, new.get("inputs"), old.get("inputs")) for f in inputs]
        options = [FieldChange(f"options.{k}", old.get(k), new.get(k)) for k in OPTION_KEYS if old.get(k) != new.get(k)]
        if not inputs and not options:
            continue
        rules = list(new.get("replaceOnChanges") or [])
        triggers = replace_triggers(old.get("inputs"), new.get("inputs"), rules) if inputs else []
        identity = identity_triggers(new, old.get("inputs"), new.get("inputs")) if inputs else []
        triggers += [t for t in identity if t not in triggers]
        action = "replace" if triggers else "update"
        # The old state's retainOnDelete decides what happens to the old object (pulumi/pulumi#13428).
        clash = action == "replace" and bool(old.get("retainOnDelete")) and _is_object(new) and not identity
        changes.append(
            _change(action, new, old, fields=(*inputs, *options), replace_because=tuple(triggers), already_exists=clash)
        )
    changes += [_change("delete", r) for key, r in old_by_key.items() if key not in new_keys]
    order = {a: i for i, a in enumerate(ACTIONS)}
    return sorted(changes, key=lambda c: (order[c.action], c.name, c.key))
