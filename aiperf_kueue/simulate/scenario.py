"""A scenario, read and checked: a timeline of revisions of one stack. The one reader of the format, used by
``aiperf-kueue simulate --scenario`` and by the e2e (``make e2e SCENARIOS=``, ``tests/e2e/scenario.py``).

A scenario is a directory holding ``scenario.yaml`` and the stack revisions it names, each a complete stack file
called ``NN-<label>.yaml``::

    steps:
      - stack: 01-base.yaml
        settleSeconds: 60            # optional: bound on Kueue settling after the revision is applied (default 120)
        runSeconds: {low-sweep: 20}  # optional: fake run time of a job's pods, by the job's config name

Pure: files in, a :class:`Scenario` or a :class:`ScenarioError` out (one line naming the file and the key, what
was given and what is allowed). Hostile YAML is bounded (size, steps, no alias expansion).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from aiperf_kueue.common.errors import ConfigError, Problem
from aiperf_kueue.stackfile.loader import parse_config, read_stack

SCENARIO_FILE = "scenario.yaml"
REVISION_NAME = re.compile(r"(?P<nn>[0-9]{2})-(?P<label>[a-z0-9]([a-z0-9-]{0,46}[a-z0-9])?)\.yaml")
STEP_KEYS = ("stack", "settleSeconds", "runSeconds")
#: Default and largest settle bound, seconds: a living cluster that has not settled in 10 minutes will not.
DEFAULT_SETTLE_SECONDS = 120.0
MAX_SETTLE_SECONDS = 600.0
#: Largest fake run time, seconds (a day): runs longer than a scenario are written by leaving runSeconds out.
MAX_RUN_SECONDS = 86400.0
#: scenario.yaml larger than this is refused unread (hostile input must not hang the parser).
MAX_SCENARIO_BYTES = 64 * 1024
MAX_STEPS = 20
#: A stack revision larger than this is refused before it is parsed.
MAX_STACK_BYTES = 4 * 1024 * 1024
#: Top-level keys of a stack file that identify the stack it belongs to (its secrets provider and salt).
STACK_IDENTITY_KEYS = ("secretsprovider", "encryptionsalt", "encryptedkey")


class ScenarioError(ConfigError):
    """One line: the file and key at fault, what was given and what is allowed."""

    def __init__(self, source: str, key: str, message: str, *, in_config: bool = False) -> None:
        super().__init__(source, [Problem(key, message, in_config=in_config)])


@dataclass(frozen=True)
class Step:
    """One revision of the stack and how to run it."""

    number: str
    """``NN`` of ``NN-<label>.yaml``."""
    name: str
    """``NN-<label>``: the step's name in records."""
    stack: Path
    settle_seconds: float
    """The e2e's bound on settling; the simulator observes the step this long after applying it."""
    run_seconds: Mapping[str, float]
    """Fake run time by job config name (a job not named runs until the scenario ends)."""
    jobs: tuple[str, ...]
    """Config names of the jobs (and sweeps) this revision declares."""


@dataclass(frozen=True)
class Scenario:
    """A checked scenario: its name (the directory's) and its steps in order."""

    name: str
    directory: Path
    steps: tuple[Step, ...] = field(default_factory=tuple)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _number(value: Any, source: str, key: str, *, upper: float) -> float:
    # bool is an int in Python: `runSeconds: {a: true}` is not a number of seconds.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ScenarioError(source, key, f"{_shown(value)} is not a number of seconds; give a number > 0, e.g. 30")
    if not 0 < value <= upper:
        raise ScenarioError(source, key, f"{value} is out of range; allowed: more than 0 and at most {upper:g}")
    return float(value)


def _load_yaml(path: Path, limit: int = MAX_SCENARIO_BYTES) -> Any:
    source = str(path)
    try:
        size = path.stat().st_size
    except OSError:
        raise ScenarioError(source, "", "file not found") from None
    if size > limit:
        raise ScenarioError(source, "", f"{size} bytes; a scenario file may hold at most {limit}")
    try:
        return yaml.load(path.read_bytes(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ScenarioError(source, "", f"not YAML ({first})") from None


def _stack_identity(path: Path) -> tuple[Any, ...]:
    document = _load_yaml(path, MAX_STACK_BYTES)
    if not isinstance(document, dict):
        return ()
    return tuple(document.get(k) for k in STACK_IDENTITY_KEYS)


def _declared_jobs(path: Path) -> tuple[str, ...]:
    """The job and sweep config names of a stack revision, read with the program's own loader."""
    where = str(path)
    try:
        config = parse_config(read_stack(path, where).values, where)
    except ConfigError as exc:
        first = exc.problems[0]
        raise ScenarioError(exc.source, first.path, first.message, in_config=first.in_config) from None
    return tuple([j.name for j in config.jobs] + [s.name for s in config.sweeps])


def load_scenario(directory: Path) -> Scenario:
    """Read and check the scenario in ``directory``; :class:`ScenarioError` (or the stack's own
    :class:`ConfigError`, one line) on the first problem."""
    source = str(directory / SCENARIO_FILE)
    if not directory.is_dir():
        raise ScenarioError(str(directory), "", f"not a directory; a scenario is a directory holding {SCENARIO_FILE}")
    document = _load_yaml(directory / SCENARIO_FILE)
    if not isinstance(document, dict) or set(document) != {"steps"}:
        keys = sorted(map(str, document)) if isinstance(document, dict) else type(document).__name__
        raise ScenarioError(source, "", f"expected exactly one key, steps (a list of steps); found {keys}")
    raw_steps = document["steps"]
    if not isinstance(raw_steps, list) or not raw_steps:
        raise ScenarioError(source, "steps", "expected a non-empty list of steps, e.g. [{stack: 01-base.yaml}]")
    if len(raw_steps) > MAX_STEPS:
        raise ScenarioError(source, "steps", f"{len(raw_steps)} steps; at most {MAX_STEPS}")
    steps: list[Step] = []
    identity: tuple[Any, ...] | None = None
    first_file = ""
    declared_so_far: set[str] = set()
    for index, raw in enumerate(raw_steps):
        at = f"steps[{index}]"
        if not isinstance(raw, dict):
            raise ScenarioError(source, at, "expected a mapping with stack (and settleSeconds, runSeconds)")
        unknown = sorted(str(k) for k in raw if k not in STEP_KEYS)
        if unknown:
            raise ScenarioError(source, f"{at}.{unknown[0]}", f"unknown key; allowed: {', '.join(STEP_KEYS)}")
        stack = raw.get("stack")
        if not isinstance(stack, str) or not (match := REVISION_NAME.fullmatch(stack)):
            raise ScenarioError(
                source,
                f"{at}.stack",
                f"{_shown(stack)} is not a revision file name; expected NN-<label>.yaml in the scenario's "
                "directory, e.g. 01-base.yaml",
            )
        if steps and match["nn"] <= steps[-1].number:
            raise ScenarioError(
                source, f"{at}.stack", f"{stack} does not come after {steps[-1].stack.name}; number revisions in order"
            )
        path = directory / stack
        if not path.is_file():
            raise ScenarioError(source, f"{at}.stack", f"{stack} not found in {directory}")
        this_identity = _stack_identity(path)
        if identity is None:
            identity, first_file = this_identity, stack
        elif this_identity != identity:
            raise ScenarioError(
                source,
                f"{at}.stack",
                f"{stack} belongs to another stack than {first_file} (its {'/'.join(STACK_IDENTITY_KEYS)} differ); "
                "a scenario revises one stack",
            )
        jobs = _declared_jobs(path)
        declared_so_far.update(jobs)
        settle = (
            _number(raw["settleSeconds"], source, f"{at}.settleSeconds", upper=MAX_SETTLE_SECONDS)
            if "settleSeconds" in raw
            else DEFAULT_SETTLE_SECONDS
        )
        run_raw = raw.get("runSeconds", {})
        if not isinstance(run_raw, dict):
            raise ScenarioError(
                source, f"{at}.runSeconds", "expected a mapping of job name to seconds, e.g. {low-sweep: 20}"
            )
        run: dict[str, float] = {}
        for job, seconds in run_raw.items():
            if job not in declared_so_far:
                known = ", ".join(sorted(declared_so_far)) or "none"
                raise ScenarioError(
                    source,
                    f"{at}.runSeconds.{_shown(job)}",
                    f"no job of that name in {stack} or an earlier revision; declared: {known}",
                )
            run[str(job)] = _number(seconds, source, f"{at}.runSeconds.{job}", upper=MAX_RUN_SECONDS)
        steps.append(Step(match["nn"], stack.removesuffix(".yaml"), path, settle, run, jobs))
    return Scenario(directory.name, directory, tuple(steps))


def load_all(directories: Sequence[Path]) -> list[Scenario]:
    """Every scenario, checked; the first bad one raises."""
    names = [d.name for d in directories]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ScenarioError(duplicates[0], "", "two scenarios of that directory name; their records would collide")
    return [load_scenario(d) for d in directories]
