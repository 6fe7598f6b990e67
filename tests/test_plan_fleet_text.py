"""``plan``'s console text for a big fleet: namespace submissions that differ only in their namespace are printed
once, with their namespaces counted, instead of two preflight rows and one CLI line per namespace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from aiperf_kueue.cli import submissions
from aiperf_kueue.cli.cli import main
from tests.bench import fleet


def _row(ns: str, queue: str | None = "aiperf-queue", status: str = "PASS", cq: str = "team-a") -> dict[str, Any]:
    flag = f" --queue-name {queue}" if queue else " (no --queue-name)"
    return {
        "subject": f"aiperf kube profile -n {ns}{flag}",
        "kind": "aiperf kube profile" if queue else "aiperf kube profile without --queue-name",
        "job": None,
        "namespace": ns,
        "queueName": queue,
        "status": status,
        "message": "ok" if status == "PASS" else "no LocalQueue",
        "fix": "create it",
        "then": f"admitted (ClusterQueue {cq})",
    }


def test_more_than_ten_namespaces_alike_are_one_line_with_their_count() -> None:
    rows = [_row(f"ns-{i:02}") for i in range(12)]
    assert submissions.preflight_lines(rows) == [
        "PASS  aiperf kube profile -n <namespace> --queue-name aiperf-queue  ok",
        "      in 12 namespaces: ns-00, ns-01, ns-02 and 9 more",
    ]


def test_ten_or_fewer_are_each_their_own_line() -> None:
    rows = [_row(f"ns-{i}") for i in range(10)]
    lines = submissions.preflight_lines(rows)
    assert len(lines) == 10
    assert lines[0] == "PASS  aiperf kube profile -n ns-0 --queue-name aiperf-queue  ok"


def test_what_a_line_shows_keeps_groups_apart() -> None:
    # Without a queue the line says where the JobSet goes (its ClusterQueue): one group per ClusterQueue. A FAIL is
    # never grouped with a PASS.
    rows = [_row(f"a-{i:02}", None, cq="team-a") for i in range(11)] + [
        _row(f"b-{i:02}", None, cq="team-b") for i in range(11)
    ]
    rows.append(_row("c-00", status="FAIL"))
    assert submissions.preflight_lines(rows) == [
        "PASS  aiperf kube profile -n <namespace> (no --queue-name)   ok",
        "      in 11 namespaces: a-00, a-01, a-02 and 8 more",
        "      then: admitted (ClusterQueue team-a)",
        "PASS  aiperf kube profile -n <namespace> (no --queue-name)   ok",
        "      in 11 namespaces: b-00, b-01, b-02 and 8 more",
        "      then: admitted (ClusterQueue team-b)",
        "FAIL  aiperf kube profile -n c-00 --queue-name aiperf-queue  no LocalQueue",
        "      fix: create it",
    ]


def test_cli_commands_alike_are_one_line_with_their_count() -> None:
    commands = {f"ns-{i:02}": f"aiperf kube profile --namespace ns-{i:02} --queue-name q" for i in range(11)}
    commands["odd"] = "aiperf kube profile --namespace odd --queue-name other"
    assert submissions.cli_lines(commands) == [
        "11 namespaces: ns-00, ns-01, ns-02 and 8 more: aiperf kube profile --namespace <namespace> --queue-name q",
        "odd: aiperf kube profile --namespace odd --queue-name other",
    ]


def test_plan_of_a_fleet_of_300_namespaces_prints_a_screen_not_a_thousand_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values = fleet.fleet_values(fleet.FleetSize(3, 300, 0, 0))
    stack = tmp_path / "Pulumi.fleet.yaml"
    stack.write_text(yaml.safe_dump({"config": {f"aiperf-kueue:{k}": v for k, v in values.items()}}))
    assert main(["plan", str(stack), "--out", str(tmp_path / "out")]) == 0
    text = capsys.readouterr().out
    section = text[text.index("AIPerf preflight") : text.index("\nWarnings")].splitlines()
    assert section[0] == 'AIPerf preflight "Kueue Queue" (600 submissions into this stack\'s cluster):'
    assert section[1:3] == [
        "  PASS  aiperf kube profile -n <namespace> --queue-name aiperf-queue  Kueue LocalQueue 'aiperf-queue' exists",
        "        in 300 namespaces: bench-00000, bench-00003, bench-00006 and 297 more",
    ]
    # The header, one group with a queue, one without per ClusterQueue (with its `then`), the CLI's one line.
    assert len(section) == 1 + 2 + 3 * 3 + 3
