"""Where ``aiperf-kueue diff`` takes BASE and HEAD from.

Each side is one of:

- a ``plan --out`` directory (``resources.json`` and ``plan.json`` in it), read as is;
- a stack: a name under ``stacks/`` (``prod``) or a path to a stack file, planned now;
- ``REV:STACK``: the stack file as committed at a git revision (``origin/main:prod``),
  read with ``git show REV:./stacks/Pulumi.STACK.yaml`` from the repository root and
  planned now, with this checkout's program code.

Problems raise :class:`ConfigError`, so they print like ``plan``'s: one line each,
``<source>: aiperf-kueue:<path>: <message>``.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiperf_kueue.errors import ConfigError, Problem
from aiperf_kueue.loader import stack_file_for
from offline.diff import Plan

PLAN_FILES = ("resources.json", "plan.json")


@dataclass(frozen=True)
class StackSide:
    """A stack file to plan now; ``source`` is what errors and the report call it."""

    path: Path
    source: str
    label: str


def is_plan_dir(arg: str) -> bool:
    """Whether ``arg`` names a directory (a ``plan --out`` directory, or a mistake)."""
    return Path(arg).is_dir()


def is_revision(arg: str) -> bool:
    """``REV:STACK``: has a colon, and is not an existing file or directory."""
    return ":" in arg and not Path(arg).exists()


def load_plan_dir(directory: Path) -> Plan:
    """A ``plan --out`` directory as a :class:`Plan`."""
    loaded: dict[str, Any] = {}
    for name in PLAN_FILES:
        file = directory / name
        try:
            loaded[name] = json.loads(file.read_text())
        except FileNotFoundError:
            raise ConfigError(
                str(directory), [Problem("", f"no {name} here: expected a 'plan --out' directory or a stack")]
            ) from None
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(str(file), [Problem("", f"cannot read: {exc}")]) from None
    resources, data = loaded["resources.json"], loaded["plan.json"]
    if not isinstance(resources, list) or not isinstance(data, dict):
        message = "resources.json must be a list and plan.json a mapping, as 'plan' writes them"
        raise ConfigError(str(directory), [Problem("", message)])
    return Plan(f"`{directory}` (a `plan --out` directory)", resources, data)


def stack_side(arg: str, stacks_dir: Path) -> StackSide:
    """A stack name or stack file path."""
    path = stack_file_for(arg, stacks_dir)
    return StackSide(path, str(path), f"`{arg}` (`{path}`)")


def revision_path(stack: str) -> str:
    """The repository path of ``STACK`` in ``REV:STACK``: a name or a ``.yaml`` path."""
    if stack.endswith((".yaml", ".yml")):
        return stack.removeprefix("./")
    return f"stacks/Pulumi.{stack}.yaml"


def read_stack_at_revision(rev: str, stack: str, repo_root: Path, into: Path) -> StackSide:
    """Write ``STACK``'s file as of ``rev`` under ``into`` (keeping its file name, so the stack
    name stays the same) and return it; :class:`ConfigError` if git cannot show it."""
    repo_path = revision_path(stack)
    source = f"{rev}:{repo_path}"
    if not rev or not stack or rev.startswith("-"):
        raise ConfigError(source, [Problem("", "expected REV:STACK, e.g. origin/main:prod")])
    try:
        done = subprocess.run(
            ["git", "-C", str(repo_root), "show", f"{rev}:./{repo_path}"],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as exc:
        raise ConfigError(source, [Problem("", f"cannot run git: {exc.strerror or exc}")]) from None
    if done.returncode != 0:
        reason = next((line.strip() for line in done.stderr.splitlines() if line.strip()), "git show failed")
        raise ConfigError(source, [Problem("", f"cannot read stack file at revision {rev!r}: {reason}")])
    target = into / Path(repo_path).name
    target.write_text(done.stdout)
    label = f"`{rev}:{stack}` (`{repo_path}` at `{rev}`, planned with this checkout's program code)"
    return StackSide(target, source, label)


def temporary_directory() -> tempfile.TemporaryDirectory[str]:
    """Where revision stack files are written while they are planned."""
    return tempfile.TemporaryDirectory(prefix="aiperf-kueue-diff-")
