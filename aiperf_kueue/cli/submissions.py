"""``plan`` console text for how jobs enter the platform: the Kueue install, AIPerf's preflight, the CLI."""

from __future__ import annotations

from typing import Any

#: Status column width: PASS, WARN, FAIL, SKIP.
_STATUS = 4


def kueue_install_line(kueue: dict[str, Any], charts: dict[str, Any]) -> str:
    """``Kueue install: ...``: which source installs Kueue (``kueue`` stack output)."""
    source = kueue.get("source")
    if source == "manifests":
        return f"Kueue install: release manifests {kueue['manifests']} (applied server-side)"
    if source == "helm":
        chart = charts.get("kueue", {})
        version = f" {chart['version']}" if chart.get("version") else ""
        return f"Kueue install: Helm chart {chart.get('chart', '?')}{version}"
    return "Kueue install: none (kueue.install: false; Kueue is managed elsewhere)"


#: A namespace submission shared by more namespaces than this is printed once, with its namespaces counted: a fleet of
#: 1,000 namespaces would otherwise print two preflight rows and one CLI line for each.
GROUP_OVER = 10
#: Namespaces named in a group's line before the rest are counted.
_NAMED = 3


def preflight_lines(rows: list[dict[str, Any]]) -> list[str]:
    """One line per submission: status, subject, the operator's message; then the fix (unless PASS)
    and, for submissions without a queue, where the JobSet really goes. Namespace submissions that differ only
    in their namespace, in more than :data:`GROUP_OVER` namespaces, are one line with ``-n <namespace>`` and a line
    naming the namespaces."""
    if not rows:
        return []
    shown = _grouped_rows(rows)
    width = max(len(r["subject"]) for r, _ in shown)
    lines: list[str] = []
    pad = " " * (_STATUS + 2)
    for r, namespaces in shown:
        lines.append(f"{r['status']:<{_STATUS}}  {r['subject']:<{width}}  {r['message']}")
        if namespaces:
            lines.append(f"{pad}in {_namespaces(namespaces)}")
        if r["status"] != "PASS" and r.get("fix"):
            lines.append(f"{pad}fix: {r['fix']}")
        if r["queueName"] is None:
            lines.append(f"{pad}then: {r['then']}")
    return lines


def _grouped_rows(rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], list[str]]]:
    """``(row, namespaces)`` in the rows' order: a group's first row (its subject with ``<namespace>``) and its
    namespaces, or a row alone and ``[]``."""
    # A namespace submission (``aiperf kube profile``) by what its lines show; a declared job by nothing.
    keys = [_shown(r) if r.get("job") is None else None for r in rows]
    groups: dict[tuple[Any, ...], list[str]] = {}
    for r, key in zip(rows, keys, strict=True):
        if key is not None:
            groups.setdefault(key, []).append(r["namespace"])
    out: list[tuple[dict[str, Any], list[str]]] = []
    done: set[tuple[Any, ...]] = set()
    for r, key in zip(rows, keys, strict=True):
        if key is None or len(groups[key]) <= GROUP_OVER:
            out.append((r, []))
        elif key not in done:
            done.add(key)
            subject = r["subject"].replace(f"-n {r['namespace']}", "-n <namespace>", 1)
            out.append(({**r, "subject": subject}, groups[key]))
    return out


def _shown(row: dict[str, Any]) -> tuple[Any, ...]:
    """What a row's lines show but its namespace: its ``then`` only where it is printed (no queue)."""
    then = row.get("then") if row["queueName"] is None else None
    return (
        row["kind"],
        row["queueName"],
        row["status"],
        row["message"],
        row.get("fix") if row["status"] != "PASS" else None,
        then,
    )


def _namespaces(names: list[str]) -> str:
    """``4 namespaces: a, b, c and 1 more``."""
    named = ", ".join(names[:_NAMED])
    rest = f" and {len(names) - _NAMED:,} more" if len(names) > _NAMED else ""
    return f"{len(names):,} namespaces: {named}{rest}"


def cli_lines(commands: dict[str, str]) -> list[str]:
    """``<namespace>: aiperf kube profile ...`` per benchmark namespace; a command that differs only in its namespace,
    in more than :data:`GROUP_OVER` namespaces, once with ``--namespace <namespace>`` and the namespaces counted."""
    groups: dict[str, list[str]] = {}
    for ns, command in commands.items():
        groups.setdefault(command.replace(f"--namespace {ns} ", "--namespace <namespace> ", 1), []).append(ns)
    lines: list[str] = []
    for template, names in groups.items():
        if len(names) > GROUP_OVER:
            lines.append(f"{_namespaces(names)}: {template}")
        else:
            lines += [f"{ns}: {commands[ns]}" for ns in names]
    return lines
