"""Compare two offline plans: what ``pulumi up`` would create, update, replace and delete.

Pure: works on the data ``aiperf-kueue plan`` writes (``resources.json`` records and
``plan.json``), so a plan computed now and a ``plan --out`` directory compare alike.

Rules, the ones the program declares and Pulumi applies:

- Resources are matched by URN without its stack segment, so a stack file and a
  copy of it under another name compare resource by resource.
- A matched resource whose inputs differ is *updated*, or *replaced* when a changed
  input lies at (or under, or above) one of its ``replaceOnChanges`` paths, or is a
  Kubernetes object's ``metadata.name`` or ``metadata.namespace`` (pulumi-kubernetes
  replaces an object it would rename or move), or a Helm chart's ``namespace`` (which
  moves every object of the chart).
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
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from aiperf_kueue import quantity
from aiperf_kueue.errors import key_path
from aiperf_kueue.loader import SECRET_PLACEHOLDER_PATTERN

ACTIONS = ("create", "update", "replace", "delete")
OPTION_KEYS = ("protect", "protectsCrds", "retainOnDelete", "deleteBeforeReplace", "replaceOnChanges")
CLUSTER_QUEUE_SUFFIX = ":ClusterQueue"
LOCAL_QUEUE_SUFFIX = ":LocalQueue"
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
class Plan:
    """One side of a comparison: the ``resources.json`` records and ``plan.json`` data."""

    label: str
    """Where it came from, for the report."""

    resources: list[dict[str, Any]]
    data: dict[str, Any]


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


@dataclass(frozen=True)
class LocalQueueNode:
    """A LocalQueue in HEAD: its namespace, name and ClusterQueue."""

    namespace: str
    name: str
    cluster_queue: str


@dataclass(frozen=True)
class Hierarchy:
    """HEAD's queues: cohort → ClusterQueues → LocalQueues → namespaces."""

    cluster_queues: dict[str, str | None]
    """ClusterQueue → its cohort (``None``: none)."""

    local_queues: tuple[LocalQueueNode, ...]


@dataclass(frozen=True)
class PlanDiff:
    """Everything the report shows. ``base`` is ``None`` for a single plan (all to create)."""

    base: Plan | None
    head: Plan
    changes: tuple[ResourceChange, ...]
    quotas: tuple[QuotaRow, ...]
    pools: tuple[PoolRow, ...]
    hierarchy: Hierarchy
    new_warnings: tuple[str, ...] = ()
    resolved_warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def counts(self) -> dict[str, int]:
        """Resources per action, in :data:`ACTIONS` order."""
        return {a: sum(1 for c in self.changes if c.action == a) for a in ACTIONS}

    @property
    def has_changes(self) -> bool:
        """Whether any resource is created, updated, replaced or deleted."""
        return bool(self.changes)

    def summary(self) -> str:
        """``3 to create, 1 to update, 1 to replace, 0 to delete``, or ``No changes.``."""
        if not self.has_changes:
            return "No changes."
        return ", ".join(f"{n} to {a}" for a, n in self.counts().items())

    def endangered(self) -> list[ResourceChange]:
        """Protected resources that would be deleted or replaced: ``pulumi up`` stops on them."""
        return [c for c in self.changes if c.protect and c.action in ("delete", "replace")]

    def clashes(self) -> list[ResourceChange]:
        """Replacements that fail with ``AlreadyExists``: see :attr:`ResourceChange.already_exists`."""
        return [c for c in self.changes if c.already_exists]


# --- matching and field diffs -------------------------------------------------------------


def resource_key(urn: str) -> str:
    """``urn:pulumi:prod::aiperf-kueue::T$U::name`` → ``aiperf-kueue::T$U::name``.

    Plans written before their URNs took the engine's form carry the root Stack's type in the type chain
    (``pulumi:pulumi:Stack$T$U``); it is dropped, so such a plan still compares resource by resource."""
    parts = urn.replace("::pulumi:pulumi:Stack$", "::", 1).split("::", 1)
    if len(parts) == 2 and parts[0].startswith("urn:pulumi:"):
        return parts[1]
    return urn


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


def resource_changes(base: list[dict[str, Any]], head: list[dict[str, Any]]) -> list[ResourceChange]:
    """Every created, updated, replaced and deleted resource, in :data:`ACTIONS` order, then by name."""
    old_by_key = {resource_key(r["urn"]): r for r in base}
    new_keys = set()
    changes: list[ResourceChange] = []
    for new in head:
        key = resource_key(new["urn"])
        new_keys.add(key)
        old = old_by_key.get(key)
        if old is None:
            changes.append(_change("create", new))
            continue
        inputs = field_changes(old.get("inputs"), new.get("inputs"))
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


# --- quotas ---------------------------------------------------------------------------------


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


# --- hierarchy ------------------------------------------------------------------------------


def _sub(mapping: dict[str, Any], key: str) -> dict[str, Any]:
    """``mapping[key]`` when it is a mapping, else an empty one."""
    value = mapping.get(key)
    return value if isinstance(value, dict) else {}


def hierarchy(resources: list[dict[str, Any]]) -> Hierarchy:
    """Cohorts, ClusterQueues and LocalQueues as HEAD declares them (``spec.cohortName``,
    or ``spec.cohort`` before v1beta2; ``spec.clusterQueue``)."""
    cluster_queues: dict[str, str | None] = {}
    local_queues: list[LocalQueueNode] = []
    for r in resources:
        inputs = _sub(r, "inputs")
        meta, spec = _sub(inputs, "metadata"), _sub(inputs, "spec")
        if r["type"].endswith(CLUSTER_QUEUE_SUFFIX) and isinstance(meta.get("name"), str):
            cohort = spec.get("cohortName", spec.get("cohort"))
            cluster_queues[meta["name"]] = cohort if isinstance(cohort, str) else None
        elif r["type"].endswith(LOCAL_QUEUE_SUFFIX) and isinstance(meta.get("name"), str):
            local_queues.append(
                LocalQueueNode(str(meta.get("namespace", "")), meta["name"], str(spec.get("clusterQueue", "")))
            )
    return Hierarchy(cluster_queues, tuple(local_queues))


# --- the whole comparison -------------------------------------------------------------------


def _has_legacy_secret(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_has_legacy_secret(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_legacy_secret(v) for v in value)
    return bool(value == LEGACY_SECRET)


def _without_fingerprints(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_fingerprints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_fingerprints(v) for v in value]
    return LEGACY_SECRET if is_secret(value) else value


def _legacy(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "inputs": _without_fingerprints(r.get("inputs"))} for r in resources]


def compare(base: Plan | None, head: Plan, notes: tuple[str, ...] = ()) -> PlanDiff:
    """Compare BASE to HEAD; with ``base=None``, HEAD alone (everything to create)."""
    base_resources = base.resources if base is not None else []
    head_resources = head.resources
    base_data = base.data if base is not None else {}
    rows = [r for key in QUOTA_FIELDS for r in quota_rows(base_data, head.data, key)]
    base_warnings = list(base_data.get("warnings") or [])
    head_warnings = list(head.data.get("warnings") or [])
    if base is not None:
        base_stack, head_stack = base_data.get("stack"), head.data.get("stack")
        if base_stack and head_stack and base_stack != head_stack:
            notes = (
                *notes,
                f"Base is stack `{base_stack}`, head is stack `{head_stack}`: two different stacks, compared "
                "resource by resource, not one stack before and after.",
            )
        old_provider, new_provider = base_data.get("provider") or {}, head.data.get("provider") or {}
        moved = sorted(k for k in {*old_provider, *new_provider} if old_provider.get(k) != new_provider.get(k))
        if moved and "provider" in base_data:
            changed = "; ".join(
                f"`{k}` {_text(old_provider.get(k)) or '(unset)'} → {_text(new_provider.get(k)) or '(unset)'}"
                for k in moved
            )
            notes = (
                *notes,
                f"The Kubernetes provider's settings change ({changed}): `pulumi up` deploys every object to "
                "what they name, and the readiness gate waits there; check they name the cluster you mean.",
            )
        legacy = [
            side
            for side, p in (("base", base), ("head", head))
            if any(_has_legacy_secret(r.get("inputs")) for r in p.resources)
        ]
        if legacy:
            # Such a plan shows every secret as the same "[secret]": comparing a fingerprint with it says nothing.
            base_resources, head_resources = _legacy(base_resources), _legacy(head_resources)
            notes = (
                *notes,
                f"The {' and '.join(legacy)} plan{'s' if len(legacy) > 1 else ''} show{'' if len(legacy) > 1 else 's'}"
                f" every secret as `{LEGACY_SECRET}` (planned by code from before secrets had fingerprints): "
                "secrets compare as equal here; `pulumi preview` shows a change inside one.",
            )
    return PlanDiff(
        base=base,
        head=head,
        changes=tuple(resource_changes(base_resources, head_resources)),
        quotas=tuple(r for r in rows if r.old != r.new or r.share_old != r.share_new),
        pools=tuple(pool_rows(base_data, head.data)),
        hierarchy=hierarchy(head.resources),
        new_warnings=tuple(w for w in head_warnings if w not in base_warnings),
        resolved_warnings=tuple(w for w in base_warnings if w not in head_warnings) if base is not None else (),
        notes=notes,
    )
