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


def preflight_lines(rows: list[dict[str, Any]]) -> list[str]:
    """One line per submission: status, subject, the operator's message; then the fix (unless PASS)
    and, for submissions without a queue, where the JobSet really goes."""
    if not rows:
        return []
    width = max(len(r["subject"]) for r in rows)
    lines: list[str] = []
    for r in rows:
        lines.append(f"{r['status']:<{_STATUS}}  {r['subject']:<{width}}  {r['message']}")
        pad = " " * (_STATUS + 2)
        if r["status"] != "PASS" and r.get("fix"):
            lines.append(f"{pad}fix: {r['fix']}")
        if r["queueName"] is None:
            lines.append(f"{pad}then: {r['then']}")
    return lines


def cli_lines(commands: dict[str, str]) -> list[str]:
    """``<namespace>: aiperf kube profile ...`` per benchmark namespace."""
    return [f"{ns}: {command}" for ns, command in commands.items()]
