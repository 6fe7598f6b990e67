"""Where ``aiperf-kueue diff`` takes BASE and HEAD from.

Each side is one of:

- a ``plan --out`` directory (``resources.json`` and ``plan.json`` in it), read as is;
- a stack: a name under ``stacks/`` (``prod``) or a path to a stack file, planned now;
- ``REV:STACK``: the stack file as committed at a git revision (``origin/main:prod``),
  planned by the program code at that revision: the revision's tree (``git archive``)
  runs its own ``plan`` in a subprocess, so a change to the program shows in the diff.
  When that code cannot plan it (no CLI there, or its ``plan`` fails), the
  revision's stack file is planned with this checkout's code instead, and the report says so.

Problems raise :class:`ConfigError`, so they print like ``plan``'s: one line each,
``<source>: aiperf-kueue:<path>: <message>``.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from aiperf_kueue.common.display import show
from aiperf_kueue.common.errors import PROJECT, ConfigError, Problem
from aiperf_kueue.review.diff import Plan
from aiperf_kueue.review.resource_diff import parse_property_path
from aiperf_kueue.stackfile.json_input import JsonInputError, read_json_file
from aiperf_kueue.stackfile.loader import missing_stack_problem, stack_file_for, stack_name_of, stack_name_problem

PLAN_FILES = ("resources.json", "plan.json")
#: Seconds a revision's own ``plan`` may take (prod takes about two).
PLAN_TIMEOUT = 600
#: At most this many problems per malformed file: one is enough to see it is not a plan.
MAX_PROBLEMS = 10
OPTION_FLAGS = ("protect", "retainOnDelete", "deleteBeforeReplace")

#: Where a revision keeps the CLI, newest layout first: ``aiperf_kueue/offline`` from the move
#: under the package, the top-level ``offline`` package before it.
#: Where the CLI has lived, newest first: a revision's own code runs from whichever its tree has.
CLI_MODULES = ("aiperf_kueue.cli.cli", "aiperf_kueue.offline.cli", "offline.cli")

#: Runs a revision's own ``plan`` (``python -c``, working directory: the revision's tree; the
#: CLI module to run is the first argument). The editable install of this project (``-e .``)
#: maps ``aiperf_kueue`` and ``components`` to this checkout with a finder that only answers
#: what the path does not, so a module the revision lacks would come from here: drop that
#: finder, then check where the packages came from.
BOOTSTRAP = """\
import importlib, os, sys
sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
cli_name = sys.argv.pop(1)
import aiperf_kueue
cli = importlib.import_module(cli_name)
tree = os.path.realpath(os.getcwd()) + os.sep
for module in (aiperf_kueue, cli):
    if not os.path.realpath(module.__file__).startswith(tree):
        sys.exit(f"{module.__name__} was imported from {module.__file__}, not from the revision's tree")
sys.argv[0] = "aiperf-kueue"
sys.exit(cli.main())
"""


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


def load_plan_dir(directory: Path, label: str | None = None) -> Plan:
    """A ``plan --out`` directory as a :class:`Plan`; :class:`ConfigError` unless both files
    have the shape ``plan`` writes (what ``diff`` reads of them)."""
    loaded: dict[str, Any] = {}
    for name in PLAN_FILES:
        file = directory / name
        try:
            loaded[name] = read_json_file(file)
        except FileNotFoundError:
            raise ConfigError(
                str(directory), [Problem("", f"no {name} here: expected a 'plan --out' directory or a stack")]
            ) from None
        except OSError as exc:
            raise ConfigError(str(file), [Problem("", f"cannot read: {exc.strerror or exc}")]) from None
        except JsonInputError as exc:
            raise ConfigError(str(file), [Problem("", f"cannot read: {exc}")]) from None
    resources, data = loaded["resources.json"], loaded["plan.json"]
    for name, problems in (("resources.json", _resources_problems(resources)), ("plan.json", _plan_problems(data))):
        if problems:
            if len(problems) > MAX_PROBLEMS:
                problems = [*problems[:MAX_PROBLEMS], f"… and {len(problems) - MAX_PROBLEMS} more"]
            raise ConfigError(str(directory / name), [Problem("", m) for m in problems])
    return Plan(
        label or f"`{directory}` (a `plan --out` directory, planned by whichever code wrote it)", resources, data
    )


_WRITES = "as 'plan' writes it"


def _resources_problems(resources: Any) -> list[str]:
    """What keeps ``resources`` from being ``resources.json`` as ``plan`` writes it."""
    if not isinstance(resources, list):
        return [f"must be a list of resources {_WRITES}, got {_kind_of(resources)}"]
    problems = []
    for i, r in enumerate(resources):
        if not isinstance(r, dict):
            problems.append(
                f"[{i}]: must be a resource (a mapping with urn, type, name, inputs) {_WRITES}, got {_shown(r)}"
            )
            continue
        problems += [
            f"[{i}].{k}: must be a string, got {_shown(r.get(k))}"
            for k in ("urn", "type", "name")
            if not isinstance(r.get(k), str)
        ]
        problems += [
            f"[{i}].{k}: must be true or false, got {_shown(r[k])}"
            for k in OPTION_FLAGS
            if r.get(k, False) not in (True, False)
        ]
        aliases = r.get("aliases") or []
        if not isinstance(aliases, list) or not all(
            isinstance(a, dict) and a and all(k in ("type", "name", "urn") and isinstance(v, str) for k, v in a.items())
            for a in aliases
        ):
            problems.append(
                f"[{i}].aliases: must be a list of {{type, name}} or {{urn}} mappings, got {_shown(aliases)}"
            )
        rules = r.get("replaceOnChanges") or []
        if not isinstance(rules, list) or not all(isinstance(rule, str) for rule in rules):
            problems.append(f"[{i}].replaceOnChanges: must be a list of property paths, got {_shown(rules)}")
            continue
        for rule in rules:
            try:
                parse_property_path(rule)
            except ValueError as exc:
                problems.append(f"[{i}].replaceOnChanges: {exc}")
    return problems


def _plan_problems(data: Any) -> list[str]:
    """What keeps ``data`` from being ``plan.json`` as ``plan`` writes it (the parts ``diff`` reads)."""
    if not isinstance(data, dict):
        return [f"must be a mapping {_WRITES}, got {_kind_of(data)}"]
    problems = []
    if not isinstance(data.get("stack", ""), str):
        problems.append(f"stack: must be a string, got {_shown(data['stack'])}")
    warnings = data.get("warnings") or []
    if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
        problems.append(f"warnings: must be a list of strings, got {_shown(warnings)}")
    for key, depth, shape in (
        ("quotas", 3, "{ClusterQueue: {flavor: {resource: quantity}}}"),
        ("borrowingLimits", 3, "{ClusterQueue: {flavor: {resource: quantity}}}"),
        ("lendingLimits", 3, "{ClusterQueue: {flavor: {resource: quantity}}}"),
        ("pools", 2, "{pool: {resource: quantity}}"),
        ("provider", 1, "{setting: value}"),
        # The installed Kueue and the stack's cluster: diff reads their fields (a boundary crossed, a retarget).
        ("kueue", 1, "{version, apiVersion, source}"),
        ("cluster", 1, "{context, kubeconfig, currentContext, namedBy, target}"),
    ):
        if not _nested(data.get(key) or {}, depth):
            problems.append(f"{key}: must be {shape}, got {_shown(data[key])}")
    boundary = data.get("kueueBoundary") or []
    if not isinstance(boundary, list) or not all(isinstance(step, str) for step in boundary):
        problems.append(f"kueueBoundary: must be a list of steps (text), got {_shown(boundary)}")
    return problems


def _nested(value: Any, depth: int) -> bool:
    """Whether ``value`` is ``depth`` levels of mappings."""
    if depth == 0:
        return True
    return isinstance(value, dict) and all(isinstance(k, str) and _nested(v, depth - 1) for k, v in value.items())


def _kind_of(value: Any) -> str:
    kinds: dict[type, str] = {dict: "a mapping", list: "a list", str: "a string"}
    return kinds.get(type(value), _shown(value))


def _shown(value: Any) -> str:
    """``value`` in YAML terms, cut short: enough to recognise it in a one-line error."""
    return show(value)


def stack_side(arg: str, stacks_dir: Path) -> StackSide:
    """A stack name or stack file path."""
    path = stack_file_for(arg, stacks_dir)
    missing = missing_stack_problem(arg, path, stacks_dir)
    if missing:
        raise ConfigError(str(path), [missing])
    return StackSide(path, str(path), f"`{arg}` (`{path}`, planned with this checkout's program code)")


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


def revision_stack_problem(stack: str) -> str | None:
    """Why ``STACK`` in ``REV:STACK`` names no stack file a repository could hold, or ``None``:
    a name must be a Pulumi stack name, a path must stay inside the repository."""
    if stack.endswith((".yaml", ".yml")):
        parts = PurePosixPath(stack).parts
        if stack.startswith("/") or ".." in parts:
            return f"{show(stack)} is not a path inside the repository"
        return stack_name_problem(stack_name_of(Path(stack)))
    return stack_name_problem(stack) if stack else None


def stacks_at_revision(rev: str, repo_root: Path) -> list[str]:
    """The stack names under ``stacks/`` at ``rev`` (none if git cannot list them)."""
    if rev.startswith("-"):
        return []
    try:
        done = subprocess.run(
            ["git", "-C", str(repo_root), "ls-tree", "--name-only", f"{rev}^{{commit}}", "stacks/"],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return []
    names = [Path(line).name for line in done.stdout.splitlines()] if done.returncode == 0 else []
    return sorted(stack_name_of(Path(n)) for n in names if n.startswith("Pulumi.") and n.endswith(".yaml"))


def absent_at_revision(rev: str, stack: str, repo_root: Path) -> bool:
    """Whether ``rev`` is a commit that has no file for ``STACK`` (a stack added since)."""
    if not rev or not stack or rev.startswith("-"):
        return False
    git = ["git", "-C", str(repo_root)]
    try:
        commit = subprocess.run([*git, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], capture_output=True)
        if commit.returncode != 0:
            return False
        found = subprocess.run([*git, "cat-file", "-e", f"{rev}:./{revision_path(stack)}"], capture_output=True)
    except OSError:
        return False
    return found.returncode != 0


def empty_plan(rev: str, stack: str) -> Plan:
    """The plan of a stack that does not exist at ``rev``: nothing declared, so everything is created."""
    label = f"`{rev}:{stack}` (no `{revision_path(stack)}` at `{rev}`: an empty stack)"
    return Plan(label, [], {"stack": stack_name_of(Path(revision_path(stack)))})


class RevisionPlanError(Exception):
    """The code at a revision could not plan its stack (the message says why)."""


@dataclass(frozen=True)
class RevisionSide:
    """``REV:STACK``: planned by the revision's own code (``plan``), or else its stack file to plan
    with this checkout's code (``fallback``) and why (``note``)."""

    plan: Plan | None
    fallback: StackSide
    note: str = ""


def revision_side(rev: str, stack: str, repo_root: Path, into: Path) -> RevisionSide:
    """``STACK`` at ``rev``, planned by the program code at ``rev`` where it can be (see the
    module docstring); :class:`ConfigError` if git cannot show the stack file, or if the
    revision's own ``plan`` finds its config invalid (exit 2)."""
    fallback = read_stack_at_revision(rev, stack, repo_root, into)
    repo_path = revision_path(stack)
    try:
        tree = into / "tree"
        extract_revision(rev, repo_root, tree)
        plan = plan_with_code_at(rev, repo_path, tree, into / "plan")
    except RevisionPlanError as exc:
        note = (
            f"The program code at `{rev}` could not plan `{stack}` ({exc}), so this checkout's code planned "
            f"`{rev}:{stack}`: what the program's code changed since `{rev}` does not show here."
        )
        return RevisionSide(None, fallback, note)
    label = f"`{rev}:{stack}` (`{repo_path}` at `{rev}`, planned with the program code at `{rev}`)"
    return RevisionSide(Plan(label, plan.resources, plan.data), fallback)


def extract_revision(rev: str, repo_root: Path, tree: Path) -> None:
    """Write the files of ``rev`` (``git archive``) under ``tree``."""
    done = subprocess.run(
        ["git", "-C", str(repo_root), "archive", "--format=tar", rev], capture_output=True, check=False
    )
    if done.returncode != 0:
        raise RevisionPlanError(f"git archive failed: {_last_line(done.stderr.decode(errors='replace'))}")
    tree.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
        archive.extractall(tree, filter="data")


def plan_with_code_at(rev: str, repo_path: str, tree: Path, out: Path) -> Plan:
    """Run the revision's own ``plan repo_path --out out`` (this interpreter, working directory
    and first import path ``tree``) and read what it wrote. :class:`RevisionPlanError` if it has no
    CLI (:data:`CLI_MODULES`) or its ``plan`` fails; :class:`ConfigError` (named ``REV:path``) for
    the config problems it reports."""
    if cli_module(tree) is None:
        raise RevisionPlanError("it has no aiperf-kueue CLI module")
    command, env = own_code_command(tree, ["plan", repo_path, "--out", str(out)])
    try:
        done = subprocess.run(
            command, cwd=tree, env=env, capture_output=True, text=True, timeout=PLAN_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        raise RevisionPlanError(f"its `plan` did not finish in {PLAN_TIMEOUT} s") from None
    problems = _config_problems(done.stderr, repo_path) if done.returncode == 2 else None
    if problems is not None:
        raise ConfigError(f"{rev}:{repo_path}", problems)
    if done.returncode != 0:
        raise RevisionPlanError(f"its `plan` exited {done.returncode}: {_last_line(done.stderr)}")
    try:
        return load_plan_dir(out)
    except ConfigError as exc:
        raise RevisionPlanError(f"its `plan` wrote no plan that `diff` can read: {exc.lines()[0]}") from None


def cli_module(tree: Path) -> str | None:
    """The CLI module of the code in ``tree`` (one of :data:`CLI_MODULES`), or None."""
    for name in CLI_MODULES:
        if (tree / Path(*name.split("."))).with_suffix(".py").is_file():
            return name
    return None


def own_code_command(tree: Path, args: list[str]) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that run ``aiperf-kueue ARGS`` from the code in ``tree``
    (with the working directory ``tree``)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tree), *filter(None, [env.get("PYTHONPATH")])])
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the tree is deleted afterwards: no caches to write
    return [sys.executable, "-c", BOOTSTRAP, cli_module(tree) or CLI_MODULES[0], *args], env


def _config_problems(stderr: str, repo_path: str) -> list[Problem] | None:
    """``plan``'s exit-2 lines (``<stack file>: aiperf-kueue:<path>: <message>``) as problems;
    ``None`` when some line is not one (exit 2 for another reason: a usage error)."""
    prefix = f"{repo_path}: "
    problems = []
    for line in filter(None, stderr.split("\n")):
        if not line.startswith(prefix):
            return None
        rest = line.removeprefix(prefix)
        if rest.startswith(f"{PROJECT}:"):
            path, _, message = rest.removeprefix(f"{PROJECT}:").partition(": ")
            problems.append(Problem(path, message))
        else:  # about the file as a whole (or a revision's own older wording of it)
            problems.append(Problem("", rest))
    return problems or None


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


def temporary_directory() -> tempfile.TemporaryDirectory[str]:
    """Where revision stack files are written while they are planned."""
    return tempfile.TemporaryDirectory(prefix="aiperf-kueue-diff-")
