"""Render a :class:`aiperf_kueue.review.diff.PlanDiff` as GitHub-flavoured Markdown, for a pull request comment.

Sections: the summary line, caution blocks for protected resources that would go and for
replacements that would fail, the quota changes and the pools' "handed out vs inventory",
the resources with their changed inputs (and a line diff of each long value), new warnings,
and a Mermaid flowchart of HEAD's queue hierarchy. A single plan (no BASE) also gets its
AIPerfJobs and AIPerf's preflight.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

from aiperf_kueue.common.render import markdown_cell as _cell
from aiperf_kueue.common.render import markdown_table as table
from aiperf_kueue.review.diff import PlanDiff
from aiperf_kueue.review.resource_diff import (
    CHART_IDENTITY_PATHS,
    IDENTITY_PATHS,
    MISSING,
    FieldChange,
    ResourceChange,
    is_encrypted,
    is_secret,
)

#: First line of every report (``{stack}``: HEAD's stack): lets a workflow find, and update, its comment.
MARKER = "<!-- aiperf-kueue-diff stack={stack} -->"
MAX_FIELDS = 12
MAX_VALUE = 48
CHART = "kubernetes:helm.sh/"


def _code(text: str) -> str:
    """Inline code that survives a table cell (backticks inside become quotes)."""
    return "`" + text.replace("`", "'") + "`"


def _text(value: Any) -> str:
    if value is MISSING:
        return "(absent)"
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), sort_keys=True)


def _value(value: Any) -> str:
    text = _text(value)
    if len(text) > MAX_VALUE:
        text = text[: MAX_VALUE - 1] + "…"
    return text


def is_long(f: FieldChange) -> bool:
    """Whether a side of the change is cut in the table, so that only a line diff shows it."""
    return any(v is not MISSING and len(_text(v)) > MAX_VALUE for v in (f.old, f.new))


def _secret_note(f: FieldChange) -> str:
    if not (is_secret(f.old) or is_secret(f.new)):
        return ""
    if is_encrypted(f.old) and is_encrypted(f.new):
        return " (secret changed; may be a re-encryption of the same value)"
    return " (secret changed)"


def _fields(change: ResourceChange) -> str:
    if change.action in ("create", "delete"):
        return "—"
    shown = []
    for f in change.fields[:MAX_FIELDS]:
        trigger = any(_under(f.path, rule) for rule in change.replace_because)
        path = f"**{_code(f.path)}**" if trigger else _code(f.path)
        long = " (line diff below)" if is_long(f) else ""
        shown.append(f"{path}: {_code(_value(f.old))} → {_code(_value(f.new))}{_secret_note(f)}{long}")
    if len(change.fields) > MAX_FIELDS:
        shown.append(f"… and {len(change.fields) - MAX_FIELDS} more")
    return "<br>".join(shown)


def _lines(value: Any) -> list[str]:
    if value is MISSING:
        return []
    if isinstance(value, str):
        return value.splitlines()
    return json.dumps(value, indent=2, sort_keys=True).splitlines()


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks in ``text``."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def long_value_diffs(diff: PlanDiff) -> list[str]:
    """A collapsed unified diff per changed field that the table cuts short (``MAX_VALUE``)."""
    out: list[str] = []
    for change in diff.changes:
        for f in change.fields[:MAX_FIELDS]:
            if not is_long(f):
                continue
            body = "\n".join(difflib.unified_diff(_lines(f.old), _lines(f.new), "base", "head", lineterm=""))
            fence = _fence(body)
            out += [
                f"<details><summary><code>{_html(change.name)}</code> <code>{_html(f.path)}</code></summary>",
                "",
                f"{fence}diff",
                body,
                fence,
                "",
                "</details>",
                "",
            ]
    return out


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _under(path: str, rule: str) -> bool:
    """Whether ``path`` is ``rule``, below it, or above it (``spec.clusterQueue`` vs ``spec``)."""
    return path == rule or path.startswith((rule + ".", rule + "[")) or rule.startswith((path + ".", path + "["))


#: How :attr:`ResourceChange.kind` starts for an AIPerfJob, whose name is its spec's digest.
JOB_KIND = "AIPerfJob "


def _notes(change: ResourceChange) -> str:
    notes = []
    if change.action == "replace":
        moved = [r for r in change.replace_because if r in IDENTITY_PATHS and not change.type.startswith(CHART)]
        charted = [r for r in change.replace_because if r in CHART_IDENTITY_PATHS and change.type.startswith(CHART)]
        declared = [r for r in change.replace_because if r not in (*moved, *charted)]
        if declared:
            notes.append("replaceOnChanges: " + ", ".join(_code(r) for r in declared))
        if moved == ["metadata.name"] and change.kind.startswith(JOB_KIND):
            notes.append("`metadata.name` changes: a new run, named after its spec")
        elif moved:
            notes.append(
                f"{' and '.join(_code(r) for r in moved)} changes: pulumi-kubernetes replaces a renamed or moved object"
            )
        if charted:
            notes.append("`namespace` changes: every object of the chart moves, so each is replaced")
        if change.delete_before_replace:
            notes.append("delete before replace")
    if change.already_exists:
        notes.append("**fails: `AlreadyExists` (the retained old object keeps the name)**")
    if change.protect and change.action in ("delete", "replace"):
        notes.append("**protected: `pulumi up` refuses**")
    elif change.protect:
        notes.append("protected")
    if change.retain_on_delete and change.action == "create":
        notes.append("retainOnDelete")
    if change.retain_on_delete and change.action == "delete":
        notes.append("retained in the cluster (retainOnDelete)")
    elif change.retain_on_delete and change.action == "replace" and not change.already_exists:
        old = "the earlier run" if change.kind.startswith(JOB_KIND) else "the old object"
        notes.append(f"{old} is left in the cluster (retainOnDelete)")
    return "; ".join(notes) or "—"


def _short_type(type_: str) -> str:
    return type_.rsplit(":", 1)[-1] if type_.startswith("kubernetes:") else type_


def resources_table(diff: PlanDiff) -> list[str]:
    """One row per changed resource: action, name, kind, changed fields (not for a single plan), notes."""
    if diff.base is None:
        rows = [[c.action, _code(c.name), c.kind or _short_type(c.type), _notes(c)] for c in diff.changes]
        return table(["action", "resource", "kind", "notes"], rows)
    rows = [[c.action, _code(c.name), c.kind or _short_type(c.type), _fields(c), _notes(c)] for c in diff.changes]
    return table(["action", "resource", "kind", "changed inputs (base → head)", "notes"], rows)


def jobs_table(jobs: list[dict[str, Any]]) -> list[str]:
    """``plan``'s AIPerfJobs (``plan.json`` ``jobs``): the job, its AIPerfJob's name (``<job>-<digest>``
    of its spec: a changed spec is a new run), where it runs, its pods, and how many fit at once."""
    rows = []
    for job in jobs:
        at_once = job.get("fitOnNominal")
        requests = job.get("requests") or {}
        rows.append(
            [
                str(job.get("name", "")),
                _code(str(job["objectName"])) if job.get("objectName") else "—",
                str(job.get("namespace", "")),
                str(job.get("queue", "")),
                str(job.get("priorityClass") or "—"),
                str(job.get("pods", "")),
                str(requests.get("cpu", "0")),
                str(requests.get("memory", "0")),
                ",".join(job.get("flavor") or []) or "—",
                "unlimited" if at_once is None else str(at_once) + (" (borrowing)" if job.get("borrowing") else ""),
            ]
        )
    header = ["job", "AIPerfJob", "namespace", "queue", "priority", "pods", "cpu", "memory", "flavor", "fit at once"]
    return table(header, rows)


def preflight_table(rows: list[dict[str, Any]]) -> list[str]:
    """AIPerf's "Kueue Queue" preflight per submission (``plan.json`` ``preflight``), as ``plan`` prints it."""
    out = []
    for r in rows:
        notes = []
        if r.get("status") != "PASS" and r.get("fix"):
            notes.append(f"fix: {r['fix']}")
        if r.get("queueName") is None and r.get("then"):
            notes.append(f"then: {r['then']}")
        status = str(r.get("status", ""))
        out.append(
            [
                status if status == "PASS" else f"**{status}**",
                str(r.get("subject", "")),
                str(r.get("message", "")),
                "<br>".join(notes) or "—",
            ]
        )
    return table(["status", "submission", "operator's message", "notes"], out)


def _share(value: Any) -> str:
    return "—" if value is None else f"{value}%"


def quota_table(diff: PlanDiff) -> list[str]:
    """Changed quota cells (nominalQuota with its share of the pool, borrowingLimit, lendingLimit;
    BASE → HEAD, delta); for a single plan, every nominal quota with its share and limits."""
    if diff.base is None:
        limits = {(q.field, q.cluster_queue, q.flavor, q.resource): q.new for q in diff.quotas}
        rows = [
            [
                q.cluster_queue,
                q.flavor,
                q.resource,
                q.new or "—",
                _share(q.share_new),
                limits.get(("borrowingLimit", q.cluster_queue, q.flavor, q.resource)) or "—",
                limits.get(("lendingLimit", q.cluster_queue, q.flavor, q.resource)) or "—",
            ]
            for q in diff.quotas
            if q.field == "nominalQuota"
        ]
        limit_columns = ["borrowingLimit", "lendingLimit"]
        return table(["ClusterQueue", "flavor", "resource", "nominalQuota", "share of pool", *limit_columns], rows)
    rows = []
    for q in diff.quotas:
        unset = "(unset)" if q.field != "nominalQuota" else "—"
        # An unset limit is no limit at all: there is no difference to compute.
        delta = q.delta if q.field == "nominalQuota" or (q.old is not None and q.new is not None) else "—"
        share = _arrow(_share(q.share_old), _share(q.share_new)) if q.field == "nominalQuota" else "—"
        rows.append([q.cell, q.field, q.old or unset, q.new or unset, delta, share])
    return table(["ClusterQueue / flavor / resource", "quota", "base", "head", "delta", "share of pool"], rows)


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


def _label(text: str) -> str:
    return text.replace('"', "#quot;")


class _Ids:
    """Node ids numbered per kind (``cq1``, ``lq2``): names go in the labels, so no two names can
    map to one id, however they are spelled."""

    def __init__(self) -> None:
        self._ids: dict[tuple[str, ...], str] = {}
        self._count: dict[str, int] = {}

    def __call__(self, kind: str, *names: str) -> str:
        key = (kind, *names)
        if key not in self._ids:
            self._count[kind] = self._count.get(kind, 0) + 1
            self._ids[key] = f"{kind}{self._count[kind]}"
        return self._ids[key]


#: Resources Kubernetes defines; any other covered resource with a quota is a GPU (or other accelerator).
STANDARD_RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage")


def gpu_quota_lines(quotas: dict[str, Any], cq: str) -> list[str]:
    """``gpu-h100: 16 nvidia.com/gpu`` per flavor where ``cq`` has a GPU quota; ``no GPU quota`` if none."""
    out = []
    for flavor, amounts in (quotas.get(cq) or {}).items():
        gpus = [
            f"{amount} {res}"
            for res, amount in amounts.items()
            if res not in STANDARD_RESOURCES and not res.startswith("hugepages-") and str(amount) != "0"
        ]
        if gpus:
            out.append(f"{flavor}: {', '.join(gpus)}")
    return out or ["no GPU quota"]


def mermaid(diff: PlanDiff) -> list[str]:
    """``flowchart LR``: Cohort (under its parent Cohort) → ClusterQueue → LocalQueue → namespace, HEAD's objects
    only; each ClusterQueue labelled with its GPU quota per flavor.

    Every node is declared once before any edge; ClusterQueues, LocalQueues and namespaces
    that are created or replaced get the ``created``/``replaced`` class.
    """
    h = diff.hierarchy
    node = _Ids()
    lines = ["flowchart LR"]
    edges: list[str] = []
    cohorts = sorted(
        {c for c in h.cluster_queues.values() if c is not None} | set(h.cohort_parents) | set(h.cohort_parents.values())
    )
    for cohort in cohorts:
        lines.append(f'  {node("cohort", cohort)}{{{{"cohort {_label(cohort)}"}}}}')
    for cohort, above in h.cohort_parents.items():  # a Cohort tree: each Cohort under its parent
        edges.append(f"  {node('cohort', above)} --> {node('cohort', cohort)}")
    known_cqs = list(h.cluster_queues)
    for lq in h.local_queues:
        if lq.cluster_queue not in known_cqs:
            known_cqs.append(lq.cluster_queue)  # a LocalQueue naming a ClusterQueue this stack lacks
    changed: dict[str, list[str]] = {"created": [], "replaced": []}
    actions = {c.kind: c.action for c in diff.changes}

    def mark(node_id: str, *kinds: str) -> None:
        action = next((actions[k] for k in kinds if k in actions), None)
        if action in ("create", "replace"):
            changed["created" if action == "create" else "replaced"].append(node_id)

    for cq in known_cqs:
        suffix = "" if cq in h.cluster_queues else " (not in this stack)"
        gpus = gpu_quota_lines(diff.head.data.get("quotas") or {}, cq) if cq in h.cluster_queues else []
        body = "<br/>".join([f"ClusterQueue {_label(cq)}{suffix}", *map(_label, gpus)])
        lines.append(f'  {node("cq", cq)}["{body}"]')
        mark(node("cq", cq), f"ClusterQueue {cq}")
        parent = h.cluster_queues.get(cq)
        if parent is not None:
            edges.append(f"  {node('cohort', parent)} --> {node('cq', cq)}")
    namespaces: list[str] = []
    for lq in h.local_queues:
        lq_id = node("lq", lq.namespace, lq.name)
        lines.append(f'  {lq_id}(["LocalQueue {_label(lq.namespace)}/{_label(lq.name)}"])')
        edges.append(f"  {node('cq', lq.cluster_queue)} --> {lq_id}")
        if lq.namespace not in namespaces:
            namespaces.append(lq.namespace)
        edges.append(f"  {lq_id} --> {node('ns', lq.namespace)}")
        mark(lq_id, f"LocalQueue {lq.namespace}/{lq.name}")
    for ns in namespaces:
        lines.append(f'  {node("ns", ns)}[/"namespace {_label(ns)}"/]')
        mark(node("ns", ns), f"Namespace {ns}", f"NamespacePatch {ns}")
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
    if diff.destructive:
        # First, before anything else: what this change loses in the cluster.
        out += ["### Destructive", ""]
        out.append("> [!WARNING]")
        out.append(f"> {len(diff.destructive)} change{'s' if len(diff.destructive) > 1 else ''} lose live state:")
        for d in diff.destructive:
            out.append(f"> - **{d.action}** {_code(d.name)} ({_cell(d.kind)}): loses {d.loses}")
        out.append(">")
        out.append("> `diff` exits 4 on this until the change is acknowledged: a `destructive-ok` label on the pull")
        out.append("> request, or a `Destructive-Change: acknowledged` trailer in one of its commits")
        out.append("> (`aiperf-kueue diff --allow-destructive`).")
        out.append("")
    endangered = diff.endangered()
    if endangered:
        out.append("> [!CAUTION]")
        out.append("> Protected resources would be deleted or replaced; `pulumi up` stops on them until")
        out.append("> `protect` is lifted (deliberately, in its own change):")
        for c in endangered:
            out.append(f"> - **{c.action}** {_code(c.name)} ({c.kind or _short_type(c.type)})")
        out.append("")
    clashes = diff.clashes()
    if clashes:
        out.append("> [!CAUTION]")
        out.append("> These replacements fail on `pulumi up` with `AlreadyExists`: `retainOnDelete` leaves the old")
        out.append("> object in the cluster (and drops it from the state), and its replacement is created under the")
        out.append("> same name:")
        for c in clashes:
            out.append(f"> - **{c.action}** {_code(c.name)} ({c.kind or _short_type(c.type)})")
        out.append(">")
        out.append("> Change the object's name with it (the old one stays, with what it holds), or first set")
        out.append("> `retainOnDelete: false` on it and `pulumi up` (the state's flag decides what happens to the")
        out.append("> old object), then make this change.")
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
        out += long_value_diffs(diff)
    if diff.base is None:
        jobs = diff.head.data.get("jobs") or []
        out += ["### AIPerfJobs", ""]
        if jobs:
            out += ["Each proven to fit its ClusterQueue on an empty cluster.", "", *jobs_table(jobs), ""]
        else:
            out += ["None.", ""]
        preflight = diff.head.data.get("preflight") or []
        if preflight:
            out += [f'### AIPerf preflight "Kueue Queue" ({len(preflight)} submissions)', ""]
            out += [*preflight_table(preflight), ""]
    if diff.new_warnings or diff.resolved_warnings:
        out += ["### Warnings", ""]
        out += [f"- new: {w}" if diff.base is not None else f"- {w}" for w in diff.new_warnings]
        out += [f"- resolved: {w}" for w in diff.resolved_warnings]
        out.append("")
    if diff.hierarchy.cluster_queues or diff.hierarchy.local_queues:
        out += ["### Queue hierarchy (head)", "", "```mermaid", *mermaid(diff), "```", ""]
    else:
        # An installs-only stack (`queues` left out): its fleet stack's diff shows the queues.
        out += ["### Queue hierarchy (head)", "", "None: installs only (`aiperf-kueue:queues` left out).", ""]
    return "\n".join(out)
