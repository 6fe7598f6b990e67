"""The stack outputs at fleet size: what a user reads after ``pulumi up``, and no copy per benchmark namespace of
something nobody reads (issue 27). Every checkpoint of every later update carries the outputs, so a row per
namespace costs a thousand rows in each of a thousand-namespace fleet's checkpoints."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import yaml

from aiperf_kueue.cli.cli import compute_plan
from aiperf_kueue.cli.engine import run_program
from tests.bench import fleet


def _values(namespaces: int) -> dict[str, Any]:
    """A fleet of ``namespaces`` benchmark namespaces over three ClusterQueues, no jobs."""
    return fleet.fleet_values(fleet.FleetSize(3, namespaces, 0, 0))


def _fleet(tmp_path: Path, namespaces: int) -> Path:
    stack = tmp_path / f"Pulumi.fleet-{namespaces}.yaml"
    stack.write_text(yaml.safe_dump({"config": {f"aiperf-kueue:{k}": v for k, v in _values(namespaces).items()}}))
    return stack


@functools.cache
def _outputs(namespaces: int) -> dict[str, Any]:
    """The program's stack outputs for the fleet (cached: each size runs the program once; read, never change)."""
    return run_program(f"fleet-{namespaces}", _values(namespaces), set()).outputs


def test_only_the_queue_names_and_the_cli_lines_grow_with_the_namespaces() -> None:
    small, big = _outputs(20), _outputs(40)
    assert sorted(small) == sorted(big)
    grown = sorted(key for key in small if json.dumps(small[key]) != json.dumps(big[key]))
    # Per namespace a user reads its LocalQueue names and the `aiperf kube profile` line that submits into it.
    assert grown == ["aiperfCli", "localQueues"]
    assert len(big["aiperfCli"]) == 40
    assert len(big["localQueues"]) == 40


def test_the_preflight_table_is_the_plans_not_a_stack_output(tmp_path: Path) -> None:
    assert "preflight" not in _outputs(20)
    # plan.json keeps every row: per namespace one CLI submission with --queue-name and one without.
    rows = compute_plan(_fleet(tmp_path, 20)).plan_data["preflight"]
    assert len(rows) == 40
    assert [r["subject"] for r in rows[:2]] == [
        "aiperf kube profile -n bench-00000 --queue-name aiperf-queue",
        "aiperf kube profile -n bench-00000 (no --queue-name)",
    ]


def test_the_namespace_commands_are_one_each_for_every_namespace() -> None:
    kubectl = _outputs(40)["kubectl"]
    assert {key: kubectl[key] for key in ("workloads", "localQueues", "describeWorkloads", "aiperfJobs")} == {
        "workloads": "kubectl get workloads -A",
        "localQueues": "kubectl get localqueues -A",
        "describeWorkloads": "kubectl describe workloads -A",
        "aiperfJobs": "kubectl get aiperfjobs -A",
    }
    assert sorted(kubectl["clusterQueues"]) == ["team-00", "team-01", "team-02"]


def test_a_namespace_adds_under_a_fifth_of_a_kilobyte() -> None:
    # 1.64 KB a namespace before (its preflight rows 1.05 KB, its copies of the kubectl commands 0.36 KB).
    small, big = _outputs(20), _outputs(40)
    assert (len(json.dumps(big)) - len(json.dumps(small))) / 20 == 191.75
