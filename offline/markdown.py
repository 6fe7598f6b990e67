"""Render a :class:`offline.diff.PlanDiff` as GitHub-flavoured Markdown, for a pull request comment.

Sections: the summary line, a caution block for protected resources that would go, the
quota changes and the pools' "handed out vs inventory", the resources with their changed
inputs, new warnings, and a Mermaid flowchart of HEAD's queue hierarchy.
"""

from __future__ import annotations

import json
import re
from typing import Any

from offline.diff import MISSING, PlanDiff, ResourceChange

#: First line of every report (``{stack}``: HEAD's stack): lets a workflow find, and update, its comment.
MARKER = "<!-- aiperf-kueue-diff stack={stack} -->"
MAX_FIELDS = 12
MAX_VALUE = 48


def _cell(text: str) -> str:
    """Table-cell safe: no pipes or line breaks that would split the row."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _code(text: str) -> str:
    """Inline code that survives a table cell (backticks inside become quotes)."""
    return "`" + text.replace("`", "'") + "`"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A GitHub table: header, separator, rows; every cell escaped, every row as wide as the header."""
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in rows:
        assert len(row) == len(header), (header, row)
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return lines


def _value(value: Any) -> str:
    if value is MISSING:
        return "(absent)"
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), sort_keys=True)
    if len(text) > MAX_VALUE:
        text = text[: MAX_VALUE - 1] + "…"
    return text


def _fields(change: ResourceChange) -> str:
    if change.action in ("create", "delete"):
        return "—"
    shown = []
    for f in change.fields[:MAX_FIELDS]:
        trigger = any(_under(f.path, rule) for rule in change.replace_because)
        path = f"**{_code(f.path)}**" if trigger else _code(f.path)
        shown.append(f"{path}: {_code(_value(f.old))} → {_code(_value(f.new))}")
    if len(change.fields) > MAX_FIELDS:
        shown.append(f"… and {len(change.fields) - MAX_FIELDS} more")
    return "<br>".join(shown)


def _under(path: str, rule: str) -> bool:
    """Whether ``path`` is ``rule``, below it, or above it (``spec.clusterQueue`` vs ``spec``)."""
    return path == rule or path.startswith((rule + ".", rule + "[")) or rule.startswith((path + ".", path + "["))


def _notes(change: ResourceChange) -> str:
    notes = []
    if change.action == "replace":
        notes.append("replaceOnChanges: " + ", ".join(_code(r) for r in change.replace_because))
        if change.delete_before_replace:
            notes.append("delete before replace")
    if change.protect and change.action in ("delete", "replace"):
        notes.append("**protected: `pulumi up` refuses**")
    elif change.protect:
        notes.append("protected")
    if change.retain_on_delete and change.action == "create":
        notes.append("retainOnDelete")
    if change.retain_on_delete and change.action == "delete":
        notes.append("retained in the cluster (retainOnDelete)")
    elif change.retain_on_delete and change.action == "replace":
        notes.append("the old object is left in the cluster (retainOnDelete)")
    return "; ".join(notes) or "—"


def _short_type(type_: str) -> str:
    return type_.rsplit(":", 1)[-1] if type_.startswith("kubernetes:") else type_


def resources_table(diff: PlanDiff) -> list[str]:
    """One row per changed resource: action, name, kind, changed fields, notes."""
    rows = [[c.action, _code(c.name), c.kind or _short_type(c.type), _fields(c), _notes(c)] for c in diff.changes]
    return table(["action", "resource", "kind", "changed inputs (base → head)", "notes"], rows)


def quota_table(diff: PlanDiff) -> list[str]:
    """Changed nominal quotas (BASE → HEAD, delta); for a single plan, every quota."""
    if diff.base is None:
        return table(
            ["ClusterQueue", "flavor", "resource", "nominalQuota"],
            [[q.cluster_queue, q.flavor, q.resource, q.new or "—"] for q in diff.quotas],
        )
    return table(
        ["ClusterQueue", "flavor", "resource", "base", "head", "delta"],
        [[q.cluster_queue, q.flavor, q.resource, q.old or "—", q.new or "—", q.delta] for q in diff.quotas],
    )


def _arrow(old: str | None, new: str | None) -> str:
    if old == new:
        return new or "—"
    return f"{old or '—'} → {new or '—'}"


def pool_table(diff: PlanDiff) -> list[str]:
    """Per pool × resource: what the ClusterQueues hand out against the pool's total after headroom."""
    rows = []
    for p in diff.pools:
        rows.append(
            [
                p.pool,
                p.resource,
                _arrow(p.handed_old, p.handed_new) if diff.base is not None else p.handed_new or "—",
                _arrow(p.total_old, p.total_new) if diff.base is not None else p.total_new or "—",
                p.unassigned or "—",
            ]
        )
    return table(["pool", "resource", "handed out", "pool total (inventory less headroom)", "unassigned"], rows)


_ID = re.compile(r"[^A-Za-z0-9_]")


def _node_id(prefix: str, *parts: str) -> str:
    return prefix + "_" + "__".join(_ID.sub("_", p) for p in parts)


def _label(text: str) -> str:
    return text.replace('"', "#quot;")


def mermaid(diff: PlanDiff) -> list[str]:
    """``flowchart LR``: cohort → ClusterQueue → LocalQueue → namespace, HEAD's objects only.

    Every node is declared once before any edge; ClusterQueues, LocalQueues and namespaces
    that are created or replaced get the ``created``/``replaced`` class.
    """
    h = diff.hierarchy
    lines = ["flowchart LR"]
    edges: list[str] = []
    cohorts = sorted({c for c in h.cluster_queues.values() if c is not None})
    for cohort in cohorts:
        lines.append(f'  {_node_id("cohort", cohort)}{{{{"cohort {_label(cohort)}"}}}}')
    known_cqs = list(h.cluster_queues)
    for lq in h.local_queues:
        if lq.cluster_queue not in known_cqs:
            known_cqs.append(lq.cluster_queue)  # a LocalQueue naming a ClusterQueue this stack lacks
    changed: dict[str, list[str]] = {"created": [], "replaced": []}
    actions = {c.kind: c.action for c in diff.changes}

    def mark(node: str, *kinds: str) -> None:
        action = next((actions[k] for k in kinds if k in actions), None)
        if action in ("create", "replace"):
            changed["created" if action == "create" else "replaced"].append(node)

    for cq in known_cqs:
        suffix = "" if cq in h.cluster_queues else " (not in this stack)"
        lines.append(f'  {_node_id("cq", cq)}["ClusterQueue {_label(cq)}{suffix}"]')
        mark(_node_id("cq", cq), f"ClusterQueue {cq}")
        cohort = h.cluster_queues.get(cq)
        if cohort is not None:
            edges.append(f"  {_node_id('cohort', cohort)} --> {_node_id('cq', cq)}")
    namespaces: list[str] = []
    for lq in h.local_queues:
        lq_id = _node_id("lq", lq.namespace, lq.name)
        lines.append(f'  {lq_id}(["LocalQueue {_label(lq.namespace)}/{_label(lq.name)}"])')
        edges.append(f"  {_node_id('cq', lq.cluster_queue)} --> {lq_id}")
        if lq.namespace not in namespaces:
            namespaces.append(lq.namespace)
        edges.append(f"  {lq_id} --> {_node_id('ns', lq.namespace)}")
        mark(lq_id, f"LocalQueue {lq.namespace}/{lq.name}")
    for ns in namespaces:
        lines.append(f'  {_node_id("ns", ns)}[/"namespace {_label(ns)}"/]')
        mark(_node_id("ns", ns), f"Namespace {ns}", f"NamespacePatch {ns}")
    lines += edges
    lines.append("  classDef created fill:#dafbe1,stroke:#1a7f37")
    lines.append("  classDef replaced fill:#fff8c5,stroke:#9a6700")
    for cls, ids in changed.items():
        if ids and diff.base is not None:  # a single plan creates everything: no highlights
            lines.append(f"  class {','.join(ids)} {cls}")
    return lines


def render(diff: PlanDiff, title: str) -> str:
    """The whole report."""
    out = [MARKER.format(stack=diff.head.data.get("stack", "")), f"## {title}", "", diff.summary(), ""]
    if diff.base is not None:
        out += [f"- **base:** {diff.base.label}", f"- **head:** {diff.head.label}"]
    else:
        out += [f"- **stack:** {diff.head.label}"]
    out += [f"- {note}" for note in diff.notes]
    out.append("")
    endangered = diff.endangered()
    if endangered:
        out.append("> [!CAUTION]")
        out.append("> Protected resources would be deleted or replaced; `pulumi up` stops on them until")
        out.append("> `protect` is lifted (deliberately, in its own change):")
        for c in endangered:
            out.append(f"> - **{c.action}** {_code(c.name)} ({c.kind or _short_type(c.type)})")
        out.append("")
    if diff.quotas:
        out += ["### Quotas", ""]
        out += quota_table(diff)
        out.append("")
    if diff.quotas or diff.base is None or any(p.changed for p in diff.pools):
        out += ["#### Pools: handed out vs inventory", ""]
        out += pool_table(diff)
        out.append("")
    if diff.changes:
        out += ["### Resources", ""]
        out += resources_table(diff)
        out.append("")
    if diff.new_warnings or diff.resolved_warnings:
        out += ["### Warnings", ""]
        out += [f"- new: {w}" if diff.base is not None else f"- {w}" for w in diff.new_warnings]
        out += [f"- resolved: {w}" for w in diff.resolved_warnings]
        out.append("")
    out += ["### Queue hierarchy (head)", "", "```mermaid", *mermaid(diff), "```", ""]
    return "\n".join(out)
