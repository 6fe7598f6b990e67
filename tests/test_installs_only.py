"""The two-stack layout for big fleets: an installs-only stack (``queues`` left out) and a fleet stack of the same
cluster (``install: false``), so the charts' CRDs stay out of every checkpoint of the fleet's ``pulumi up``."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiperf_kueue.cli import cli
from aiperf_kueue.cli.engine import run_program
from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.stackfile.loader import parse_config
from tests.support import by_name, stack_values


def _installs_only() -> dict[str, Any]:
    """The dev stack's config with its queues, jobs and priority classes left out."""
    values, _ = stack_values("dev")
    return {k: v for k, v in values.items() if k not in ("queues", "jobs", "sweeps", "priorityClasses")}


def _fleet() -> dict[str, Any]:
    """The dev stack's config with Kueue and JobSet installed by another stack."""
    values, _ = stack_values("dev")
    values["kueue"] = {**values["kueue"], "install": False}
    values["jobset"] = {**values.get("jobset", {}), "install": False}
    return values


def test_a_stack_without_queues_is_installs_only() -> None:
    assert parse_config(_installs_only(), "p.yaml").installs_only is True
    values, _ = stack_values("dev")
    assert parse_config(values, "dev.yaml").installs_only is False


def test_installs_only_registers_the_installs_and_nothing_that_queues_work() -> None:
    resources = by_name(run_program("platform", _installs_only()))
    kinds = sorted({r["type"] for r in resources.values()})
    assert kinds == [
        "aiperf-kueue:index:AIPerfOperator",
        "aiperf-kueue:index:JobSetInstall",
        "aiperf-kueue:index:KueueInstall",
        "kubernetes:apps/v1:DeploymentPatch",
        "kubernetes:core/v1:Namespace",
        "kubernetes:helm.sh/v4:Chart",
        "pulumi-python:dynamic/aiperf-kueue:KueueReadinessGate",
        "pulumi:providers:kubernetes",
    ]
    assert sorted(n for n, r in resources.items() if r["type"] == "kubernetes:helm.sh/v4:Chart") == [
        "jobset-chart", "kueue-chart", "operator-chart",
    ]


def test_the_fleet_stack_declares_the_queues_and_no_chart() -> None:
    resources = by_name(run_program("fleet", _fleet()))
    kinds = {r["type"] for r in resources.values()}
    assert "kubernetes:helm.sh/v4:Chart" in kinds  # the operator's: dev installs it
    assert sorted(n for n, r in resources.items() if r["type"] == "kubernetes:helm.sh/v4:Chart") == ["operator-chart"]
    assert sorted(r["inputs"]["metadata"]["name"] for r in resources.values()
                  if r["type"].endswith(":ClusterQueue")) == ["benchmarks"]
    assert "benchmark-access-clusterrole" in resources
    # The readiness gate still guards every Kueue object the fleet stack declares.
    assert "kueue-ready" in resources


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("jobs", None, "aiperf-kueue:jobs: 1 declared, but this stack sets no queues (installs only); declare them in "
                       "the fleet stack of this cluster (kueue.install: false), or set queues here"),
        ("priorityClasses", [{"name": "high", "value": 100}],
         "aiperf-kueue:priorityClasses: 1 declared, but this stack sets no queues (installs only)"),
        ("sweeps", None, "aiperf-kueue:sweeps: 1 declared, but this stack sets no queues (installs only)"),
    ],
)
def test_installs_only_refuses_what_needs_a_queue(key: str, value: Any, message: str) -> None:
    values = _installs_only()
    if value is None:
        dev, _ = stack_values("dev")
        job = copy.deepcopy(dev["jobs"][0])
        value = [job] if key == "jobs" else [
            {"name": "s", "namespace": job["namespace"], "concurrency": [1, 2], "spec": job["spec"]}
        ]
    values[key] = value
    with pytest.raises(ConfigError) as caught:
        parse_config(values, "p.yaml")
    assert message in str(caught.value)


def test_plan_of_an_installs_only_stack(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stack = tmp_path / "Pulumi.platform.yaml"
    stack.write_text(yaml.safe_dump({"config": {f"aiperf-kueue:{k}": v for k, v in _installs_only().items()}}))
    assert cli.main(["plan", str(stack), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert cli.INSTALLS_ONLY in out
    assert "Quotas (" not in out and "Submit from the CLI" not in out


def test_diff_of_an_installs_only_stack_draws_no_queue_hierarchy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = tmp_path / "Pulumi.platform.yaml"
    stack.write_text(yaml.safe_dump({"config": {f"aiperf-kueue:{k}": v for k, v in _installs_only().items()}}))
    assert cli.main(["diff", str(stack), str(stack)]) == 0
    out = capsys.readouterr().out
    assert "### Queue hierarchy (head)\n\nNone: installs only (`aiperf-kueue:queues` left out).\n" in out
    assert "```mermaid" not in out
