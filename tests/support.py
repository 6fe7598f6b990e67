"""Shared helpers for the tests: paths, stack loading, program runs."""

from __future__ import annotations

import atexit
import copy
import functools
import gc
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import pytest
from pulumi.runtime import rpc

from aiperf_kueue.cli.cli import PlanResult, compute_plan
from aiperf_kueue.cli.engine import ProgramRun, run_program
from aiperf_kueue.config import StackConfig
from aiperf_kueue.installs.install_checks import install_problems
from aiperf_kueue.queues.planner import plan_queues
from aiperf_kueue.queues.queue_plan import QueuePlan
from aiperf_kueue.stackfile.loader import parse_config, read_stack_file
from tests.stack_variants import write_added

ROOT = Path(__file__).resolve().parents[1]
#: The committed stacks: ``stacks/`` (``AIPERF_KUEUE_STACKS`` points elsewhere).
STACKS = Path(os.environ.get("AIPERF_KUEUE_STACKS") or ROOT / "stacks")
#: The reference material beside the repository (``../shared``; ``AIPERF_KUEUE_SHARED`` points elsewhere,
#: e.g. from a git worktree). Only the AIPerf files no package publishes are read from it.
SHARED = Path(os.environ.get("AIPERF_KUEUE_SHARED") or ROOT.parent / "shared") / "reference"
#: Every stack file in :data:`STACKS`: the shipped examples and any a team adds for its own cluster.
STACK_FILES = sorted(STACKS.glob("Pulumi.*.yaml"))
COMMITTED_STACKS = [p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in STACK_FILES]
#: Stacks a team might add beside the committed ones (:mod:`tests.stack_variants`), written once per test
#: process to a directory of their own (removed at exit): every stack check holds for them too.
ADDED_DIR = Path(tempfile.mkdtemp(prefix="aiperf-kueue-added-stacks-"))
atexit.register(shutil.rmtree, ADDED_DIR, True)
ADDED_STACKS = write_added(STACKS, ADDED_DIR)
#: The stacks the suite's stack checks are parametrized over: the committed ones, then the added ones.
CHECKED_STACKS = [*COMMITTED_STACKS, *ADDED_STACKS]
CHECKED_STACK_FILES = [*STACK_FILES, *(ADDED_DIR / f"Pulumi.{name}.yaml" for name in ADDED_STACKS)]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run a block that builds ASTs (``ast.parse``, an import pytest rewrites) with the cyclic GC paused.

    CPython 3.11 keeps one AST recursion counter per interpreter. A collection in the middle of such a
    block can run a finalizer that parses too: asyncio logging "Future exception was never retrieved" for
    the ``RunError`` of a Pulumi mock run formats its traceback, and 3.11's traceback parses the source line
    for its carets. The outer call then fails with "SystemError: AST constructor recursion depth
    mismatch" (seen once in CI). Collecting first runs those finalizers here, outside the block.
    """
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def stack_file(stack: str) -> Path:
    """The file of a checked stack (:data:`CHECKED_STACKS`), committed or added."""
    return (ADDED_DIR if stack in ADDED_STACKS else STACKS) / f"Pulumi.{stack}.yaml"
#: The examples this repository ships; the README and some tests describe them exactly.
SHIPPED_EXAMPLES = ("dev", "prod")

T = TypeVar("T")

#: Pulumi's wire form of a secret, ``{SECRET_SIG: SECRET_MARK, "value": ...}``, as the SDK's public
#: ``rpc.wrap_rpc_secret`` writes it: the one definition the tests use.
SECRET_SIG, SECRET_MARK = next(iter(rpc.wrap_rpc_secret(None).items()))


def missing_input(reason: str) -> NoReturn:
    """Skip a test whose input is missing here; under ``CI=true`` fail it instead, so that CI never
    passes by skipping what it was meant to check."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: a missing input fails the test instead of skipping it)", pytrace=False)
    pytest.skip(reason)


#: Set by a runner that has only the repository (GitHub's, in .github/workflows): the reference material
#: beside it is absent on purpose, so the few tests that read it skip there even under ``CI=true``.
NO_REFERENCE = "AIPERF_KUEUE_REFERENCE"


def require_shared(*parts: str) -> Path:
    """The path under ../shared/reference, or :func:`missing_input` when it is absent (a plain skip where the
    runner declares it has none: ``AIPERF_KUEUE_REFERENCE=absent``)."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        reason = f"{path} is absent (reference material is provided beside the repo as ../shared)"
        if os.environ.get(NO_REFERENCE) == "absent":
            pytest.skip(f"{reason}; this runner declares it has none ({NO_REFERENCE}=absent)")
        missing_input(reason)
    return path


def require_upstream(get: Callable[..., T], *args: Any) -> T:
    """``get(*args)`` from :mod:`tests.upstream`, or :func:`missing_input` when the module cannot be had."""
    from tests.upstream import MissingInput

    try:
        return get(*args)
    except MissingInput as exc:
        missing_input(str(exc))


def stack_values(stack: str) -> tuple[dict[str, Any], set[str]]:
    """Config values and secret keys of a checked stack (a fresh copy each call)."""
    values, secrets = _read(stack)
    return copy.deepcopy(values), set(secrets)


def flattened_tree(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with a Cohort tree (``queues.cohorts``) folded into one flat cohort named after its first root:
    for a Kueue target without the v1beta2 Cohort API, which refuses the tree itself (tests/test_cohort_tree.py).
    The Cohorts' own quotas and limits go; every ClusterQueue keeps its own. Values without a tree are returned
    as they are."""
    queues = values.get("queues")
    if not isinstance(queues, dict) or not queues.get("cohorts"):
        return values
    cohorts = queues["cohorts"]
    root = next(c["name"] for c in cohorts if "parentName" not in c)
    flat = {k: v for k, v in queues.items() if k != "cohorts"}
    flat["cohort"] = queues.get("cohort") or root
    flat["clusterQueues"] = [{k: v for k, v in cq.items() if k != "cohortName"} for cq in queues["clusterQueues"]]
    return {**values, "queues": flat}


@functools.cache
def _read(stack: str) -> tuple[dict[str, Any], frozenset[str]]:
    values, secrets = read_stack_file(stack_file(stack))
    return values, frozenset(secrets)


def plan_values(values: dict[str, Any], source: str = "test.yaml") -> tuple[StackConfig, QueuePlan]:
    """Validate and plan config values."""
    config = parse_config(values, source)
    installs = install_problems(config, config.kueue.target(), Path.cwd())
    return config, plan_queues(config, source, install_problems=installs)


@functools.cache
def committed_run(stack: str) -> ProgramRun:
    """The whole program run once per checked stack, under the recording mock engine."""
    values, secrets = stack_values(stack)
    return run_program(stack, values, secrets)


@functools.cache
def committed_plan(stack: str) -> PlanResult:
    """``aiperf-kueue plan`` of a committed stack, as it writes ``plan.json`` (cached: read, never change it)."""
    return compute_plan(stack_file(stack))


def expects_no_warnings(stack: str) -> bool:
    """Whether the suite holds ``stack`` to "plans without warnings": the shipped examples, and every
    stack that opts in with ``aiperf-kueue:warnings: error`` (which makes a warning fail its plan too)."""
    return stack in SHIPPED_EXAMPLES or _read(stack)[0].get("warnings") == "error"


#: The stacks held to "no warnings" (:func:`expects_no_warnings`).
WARNING_FREE_STACKS = [s for s in CHECKED_STACKS if expects_no_warnings(s)]


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
