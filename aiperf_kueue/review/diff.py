"""Compare two offline plans: what ``pulumi up`` would create, update, replace and delete.

Pure: works on the data ``aiperf-kueue plan`` writes (``resources.json`` records and
``plan.json``), so a plan computed now and a ``plan --out`` directory compare alike. The
resource changes follow :mod:`aiperf_kueue.review.resource_diff` (its rules), the quota and
pool rows :mod:`aiperf_kueue.review.quota_diff`, the queue tree
:mod:`aiperf_kueue.review.hierarchy`; this module puts them together with the warnings that
appear or go and the notes a reviewer needs (two different stacks, a changed provider, a plan
from before secrets had fingerprints, a pool that shrinks under running benchmarks).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aiperf_kueue.review.destructive import Destructive, destructive_changes
from aiperf_kueue.review.hierarchy import Hierarchy, hierarchy
from aiperf_kueue.review.quota_diff import QUOTA_FIELDS, PoolRow, QuotaRow, pool_rows, quota_rows, shrinking_pools
from aiperf_kueue.review.resource_diff import (
    ACTIONS,
    LEGACY_SECRET,
    AliasedMove,
    ResourceChange,
    aliased_moves,
    is_secret,
    resource_changes,
)


@dataclass(frozen=True)
class Plan:
    """One side of a comparison: the ``resources.json`` records and ``plan.json`` data."""

    label: str
    """Where it came from, for the report."""

    resources: list[dict[str, Any]]
    data: dict[str, Any]


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
    destructive: tuple[Destructive, ...] = ()
    """Deletes and replaces that lose live state, and a change of cluster (:mod:`~aiperf_kueue.review.destructive`)."""

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


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _move_notes(moves: list[AliasedMove]) -> list[str]:
    """One note per resource carried over to a new type; one per parent change for all the resources it moves
    (an earlier program's per-namespace component: a fleet's every namespace at once)."""
    notes = [
        f"`{m.name}` keeps its live object under a new type (`{m.old_type}` → `{m.new_type}`, by its aliases): "
        "no change in the cluster."
        for m in moves
        if m.old_type != m.new_type
    ]
    by_parent: dict[tuple[str, str], list[str]] = {}
    for m in moves:
        if m.old_parent != m.new_parent:
            old_type = m.old_parent.partition("::")[0] or "the stack"
            by_parent.setdefault((old_type, m.new_parent or "the stack"), []).append(m.name)
    for (old_type, new_parent), names in sorted(by_parent.items()):
        shown = ", ".join(f"`{n}`" for n in names[:3]) + (f" and {len(names) - 3:,} more" if len(names) > 3 else "")
        notes.append(
            f"{len(names):,} resource(s) ({shown}) keep their live objects under a new parent (`{old_type}` → "
            f"`{new_parent}`, by their aliases): no change in the cluster."
        )
    return notes


def compare(base: Plan | None, head: Plan, notes: tuple[str, ...] = ()) -> PlanDiff:
    """Compare BASE to HEAD; with ``base=None``, HEAD alone (everything to create)."""
    base_resources = base.resources if base is not None else []
    head_resources = head.resources
    base_data = base.data if base is not None else {}
    rows = [r for key in QUOTA_FIELDS for r in quota_rows(base_data, head.data, key)]
    pools = tuple(pool_rows(base_data, head.data))
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
        notes = (*notes, *_kueue_boundary(base_data, head.data), *shrinking_pools(pools, base_data, head.data))
    changes = tuple(resource_changes(base_resources, head_resources))
    notes = (*notes, *_move_notes(aliased_moves(base_resources, head_resources)))
    return PlanDiff(
        base=base,
        head=head,
        changes=changes,
        destructive=tuple(destructive_changes(changes, base_data if base is not None else None, head.data)),
        quotas=tuple(r for r in rows if r.old != r.new or r.share_old != r.share_new),
        pools=pools,
        hierarchy=hierarchy(head.resources),
        new_warnings=tuple(w for w in head_warnings if w not in base_warnings),
        resolved_warnings=tuple(w for w in base_warnings if w not in head_warnings) if base is not None else (),
        notes=notes,
    )


def _kueue_boundary(base: dict[str, Any], head: dict[str, Any]) -> list[str]:
    """What must happen before a stack moves from Kueue <= 0.19 to 0.20+ (``kueueBoundary`` of the
    head plan, :func:`aiperf_kueue.upstream.compat.boundary_steps`), with the base's AIPerfJobs that name
    their queue; nothing when the base is already past the boundary (or has no ``kueueBoundary``)."""
    steps = list(head.get("kueueBoundary") or [])
    old = (base.get("kueue") or {}).get("version")
    if not steps or not old or base.get("kueueBoundary"):
        return []
    new = (head.get("kueue") or {}).get("version")
    named = [
        f"`{row.get('objectName') or row.get('job')}` ({row.get('namespace')})"
        for row in base.get("preflight") or []
        if row.get("kind") == "AIPerfJob" and row.get("queueName")
    ]
    out = [
        f"Kueue {old} → {new} crosses the v1beta1 → v1beta2 boundary (Kueue 0.20 no longer serves v1beta1); "
        "before `pulumi up`, in order: " + " ".join(f"({i}) {step}." for i, step in enumerate(steps, 1))
    ]
    if named:
        out.append(
            f"AIPerfJobs of the base that name their queue (spec.scheduling.queueName), each re-declared without it "
            f"as a new run: {', '.join(named)}."
        )
    return out
