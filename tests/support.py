"""Shared helpers for the tests: paths, stack loading, program runs."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import pytest

from aiperf_kueue.config import StackConfig
from aiperf_kueue.loader import parse_config, read_stack_file
from aiperf_kueue.planner import QueuePlan, plan_queues
from offline.engine import ProgramRun, run_program

ROOT = Path(__file__).resolve().parents[1]
STACKS = ROOT / "stacks"
SHARED = ROOT.parent / "shared" / "reference"
COMMITTED_STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in STACKS.glob("Pulumi.*.yaml"))


def require_shared(*parts: str) -> Path:
    """The path under ../shared/reference, or skip the test when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"../shared/reference/{'/'.join(parts)} is absent (reference material is provided beside the repo)")
    return path


def stack_values(stack: str) -> tuple[dict[str, Any], set[str]]:
    """Config values and secret keys of a committed stack (a fresh copy each call)."""
    values, secrets = _read(stack)
    return copy.deepcopy(values), set(secrets)


@functools.cache
def _read(stack: str) -> tuple[dict[str, Any], frozenset[str]]:
    values, secrets = read_stack_file(STACKS / f"Pulumi.{stack}.yaml")
    return values, frozenset(secrets)


def plan_values(values: dict[str, Any], source: str = "test.yaml") -> tuple[StackConfig, QueuePlan]:
    """Validate and plan config values."""
    config = parse_config(values, source)
    return config, plan_queues(config, source)


@functools.cache
def committed_run(stack: str) -> ProgramRun:
    """The whole program run once per committed stack, under the recording mock engine."""
    values, secrets = stack_values(stack)
    return run_program(stack, values, secrets)


def by_name(run: ProgramRun) -> dict[str, dict[str, Any]]:
    """Recorded resources keyed by Pulumi resource name."""
    return {r["name"]: r for r in run.resources}


#: Where the committed stacks' operator chart is (a checkout of ai-dynamo/aiperf beside this one).
OPERATOR_CHART_DIR = (ROOT / ".." / "aiperf" / "deploy" / "helm" / "aiperf-operator").resolve()
#: What ``plan`` of a committed stack prints to stderr about that chart on this machine.
OPERATOR_CHART_NOTE = (
    ""
    if OPERATOR_CHART_DIR.is_dir()
    else "note: operator.chart: local chart '../aiperf/deploy/helm/aiperf-operator' not found (resolved to "
    f"{OPERATOR_CHART_DIR}): the merged values were not validated against its values.schema.json, and pulumi up "
    "cannot render it; check out ai-dynamo/aiperf at tag v0.13.0 there, or point operator.chart at the "
    "checkout\n"
)
