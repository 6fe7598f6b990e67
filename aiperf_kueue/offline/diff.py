"""Compare two offline plans: what ``pulumi up`` would create, update, replace and delete.

Pure: works on the data ``aiperf-kueue plan`` writes (``resources.json`` records and
``plan.json``), so a plan computed now and a ``plan --out`` directory compare alike. The
resource changes follow :mod:`aiperf_kueue.offline.resource_diff` (its rules), the quota and
pool rows :mod:`aiperf_kueue.offline.quota_diff`, the queue tree
:mod:`aiperf_kueue.offline.hierarchy`; this module puts them together with the warnings that
appear or go and the notes a reviewer needs (two different stacks, a changed provider, a plan
from before secrets had fingerprints).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aiperf_kueue.offline.hierarchy import Hierarchy, hierarchy
from aiperf_kueue.offline.quota_diff import QUOTA_FIELDS, PoolRow, QuotaRow, pool_rows, quota_rows
from aiperf_kueue.offline.resource_diff import ACTIONS, LEGACY_SECRET, ResourceChange, is_secret, resource_changes


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
