"""Shared helpers for the tests: paths, stack loading, program runs."""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import pytest

from aiperf_kueue.config import StackConfig
from aiperf_kueue.loader import parse_config, read_stack_file
from aiperf_kueue.offline.engine import ProgramRun, run_program
from aiperf_kueue.planner import plan_queues
from aiperf_kueue.queue_plan import QueuePlan

ROOT = Path(__file__).resolve().parents[1]
#: The stacks the suite checks: ``stacks/`` (``AIPERF_KUEUE_STACKS`` points elsewhere; the test that
#: adds a stack of its own runs the suite's stack checks on a copy).
STACKS = Path(os.environ.get("AIPERF_KUEUE_STACKS") or ROOT / "stacks")
#: The reference material beside the repository (``../shared``; ``AIPERF_KUEUE_SHARED`` points elsewhere,
#: e.g. from a git worktree). Only the AIPerf files no package publishes are read from it.
SHARED = Path(os.environ.get("AIPERF_KUEUE_SHARED") or ROOT.parent / "shared") / "reference"
#: Every stack file in :data:`STACKS`: the shipped examples and any a team adds for its own cluster.
STACK_FILES = sorted(STACKS.glob("Pulumi.*.yaml"))
COMMITTED_STACKS = [p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in STACK_FILES]
#: The examples this repository ships; the README and some tests describe them exactly.
SHIPPED_EXAMPLES = ("dev", "prod")

T = TypeVar("T")


def missing_input(reason: str) -> NoReturn:
    """Skip a test whose input is missing here; under ``CI=true`` fail it instead, so that CI never
    passes by skipping what it was meant to check."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: a missing input fails the test instead of skipping it)", pytrace=False)
    pytest.skip(reason)


def require_shared(*parts: str) -> Path:
    """The path under ../shared/reference, or :func:`missing_input` when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        missing_input(f"{path} is absent (reference material is provided beside the repo as ../shared)")
    return path


def require_upstream(get: Callable[..., T], *args: Any) -> T:
    """``get(*args)`` from :mod:`tests.upstream`, or :func:`missing_input` when the module cannot be had."""
    from tests.upstream import MissingInput

    try:
        return get(*args)
    except MissingInput as exc:
        missing_input(str(exc))


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


def expects_no_warnings(stack: str) -> bool:
    """Whether the suite holds ``stack`` to "plans without warnings": the shipped examples, and every
    stack that opts in with ``aiperf-kueue:warnings: error`` (which makes a warning fail its plan too)."""
    return stack in SHIPPED_EXAMPLES or _read(stack)[0].get("warnings") == "error"


#: The stacks held to "no warnings" (:func:`expects_no_warnings`).
WARNING_FREE_STACKS = [s for s in COMMITTED_STACKS if expects_no_warnings(s)]


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
