"""``aiperf-kueue``: the offline plan of a stack, without the Pulumi CLI or a cluster.

Exit codes: 0 planned (or compared); 2 invalid config or node list (one line per problem,
nothing written); 3 ``diff --exit-code`` found changes, ``drift --exit-code`` found drift;
4 ``diff`` found changes that lose live state and was not given ``--allow-destructive``; 1 anything else.
"""

from __future__ import annotations

import argparse
import atexit
import json
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, NoReturn

from aiperf_kueue.cli import explain_cli, export, inventory_cli, report, simulate_cli, sources, split_cli, submissions
from aiperf_kueue.cli.engine import ROOT, close_worker_loops, run_program
from aiperf_kueue.common import render
from aiperf_kueue.common.display import cut, escape, show
from aiperf_kueue.common.errors import ConfigError, Problem
from aiperf_kueue.common.suggest import did_you_mean
from aiperf_kueue.installs import install_checks
from aiperf_kueue.plan.stack_plan import plan_values
from aiperf_kueue.review import diff, markdown
from aiperf_kueue.stackfile.bounds import argument_problem
from aiperf_kueue.stackfile.loader import (
    missing_stack_problem,
    read_stack,
    stack_file_for,
    stack_name_of,
    stack_name_problem,
)
from aiperf_kueue.upstream import compat

EXIT_OK, EXIT_FAILED, EXIT_INVALID, EXIT_CHANGES, EXIT_DESTRUCTIVE = 0, 1, 2, 3, 4


def _stacks_dir() -> Path:
    local = Path("stacks")
    return local if local.is_dir() else ROOT / "stacks"


@dataclass(frozen=True)
class PlanResult:
    """One stack planned: what ``plan`` writes and prints, and what ``diff`` compares."""

    name: str
    source: str
    records: list[dict[str, Any]]
    outputs: dict[str, Any]
    plan_data: dict[str, Any]
    warnings: list[str]
    files: dict[str, str]
    notes: tuple[str, ...] = ()
    """About this machine rather than the stack (a local chart not checked out here): printed to
    stderr, kept out of the files so that a plan is the same wherever it is made."""


def compute_plan(path: Path, source: str | None = None) -> PlanResult:
    """Validate the stack file at ``path`` (problems named after ``source``, default the path),
    then run the program under the recording engine; writes nothing. :class:`ConfigError` if invalid."""
    source = source if source is not None else str(path)
    try:
        bad_name = stack_name_problem(stack_name_of(path))
        if bad_name:
            raise ConfigError(source, [Problem("", bad_name)])
        stack = read_stack(path)
        values, secret_keys = stack.values, stack.secret_keys
        # Keeps a bad stack from registering anything (the program plans it again, to the same result).
        stack_plan = plan_values(values, source, ROOT, provider=stack.provider)
        config = stack_plan.config
    except ConfigError as exc:
        raise ConfigError(source, exc.problems) from None
    name = stack_name_of(path)
    # A stack file outside the project's stack directory (a fleet's files kept together elsewhere): the program
    # is told where it is, as the engine tells it the project's root.
    own = (ROOT / "stacks" / path.name).resolve() == path.resolve()
    run = run_program(name, values, secret_keys, provider=stack.provider, stack_dir=None if own else path.parent)
    records = report.resource_records(run.resources)
    outputs = report.clean(run.outputs)
    plan_data: dict[str, Any] = {
        "stack": name,
        "cluster": outputs.get("cluster"),
        "kueue": outputs.get("kueue"),
        "quotas": outputs.get("quotas", {}),
        "pools": outputs.get("pools", {}),
        "shares": outputs.get("shares", {}),
        "borrowingLimits": outputs.get("borrowingLimits", {}),
        "lendingLimits": outputs.get("lendingLimits", {}),
        "localQueues": outputs.get("localQueues", {}),
        "jobs": outputs.get("jobs", []),
        # Not a stack output (at fleet size most rows are the same CLI submission into each namespace, and
        # nobody reads them after `up`): the same pure planning the program runs, for the review only.
        "preflight": stack_plan.preflight_table(),
        "aiperfCli": outputs.get("aiperfCli", {}),
        # Before a cluster on Kueue <= 0.19 moves to this stack's 0.20+ (empty below 0.20).
        "kueueBoundary": compat.boundary_steps(config.kueue.target().version, config.operator.aiperf_version),
        "warnings": run.warnings,
        "provider": report.provider_settings(stack.provider),
    }
    if outputs.get("cohorts") is not None:  # a Cohort tree (queues.cohorts); else no key
        plan_data["cohorts"] = outputs["cohorts"]
    if outputs.get("fleet") is not None:  # a MultiKueue fleet's member (docs/multikueue.md); else no key
        plan_data["fleet"] = outputs["fleet"]
    files = {
        "manifests.yaml": report.manifests_yaml(records),
        "resources.json": render.json_text(records),
        "plan.json": render.json_text(plan_data),
        "charts.yaml": report.charts_yaml(outputs.get("charts", {})),
    }
    notes = tuple(filter(None, [install_checks.local_chart_warning(config, ROOT)]))
    return PlanResult(name, source, records, outputs, plan_data, run.warnings, files, notes)


def write_plan(result: PlanResult, out: Path | None) -> Path:
    """Write the plan's files to ``out`` (default ``out/STACK``); return the directory."""
    name, files = result.name, result.files
    target = out if out is not None else Path("out") / name
    target.mkdir(parents=True, exist_ok=True)
    for file_name, text in files.items():
        (target / file_name).write_text(text)
    return target


#: What ``plan`` says of a stack that leaves ``queues`` out.
INSTALLS_ONLY = (
    "Queues: none, installs only (aiperf-kueue:queues left out): no flavor, ClusterQueue, namespace or job here;\n"
    "  the fleet stack of this cluster declares them, with kueue.install and jobset.install false (docs/scale.md)"
)


def print_plan(result: PlanResult, target: Path) -> None:
    """The console text of ``plan``."""
    name, source, records, outputs, plan_data, files = (
        result.name,
        result.source,
        result.records,
        result.outputs,
        result.plan_data,
        result.files,
    )
    kueue = plan_data["kueue"] or {}
    print(f"Stack {name} ({source}): Kueue {kueue.get('version')}, {kueue.get('apiVersion')}")
    cluster = plan_data.get("cluster")
    print(
        f"Cluster: {cluster['target']} ({cluster['namedBy']})"
        if cluster
        else "Cluster: NONE: this stack names no cluster; pulumi up refuses it (set aiperf-kueue:cluster.context)"
    )
    print(f"\nResources ({len(records)}):")
    for line in report.tree(records):
        print(f"  {line}")
    # No ClusterQueue only when `queues` is left out (a stack with queues has at least one): installs only.
    installs_only = not plan_data["quotas"]
    if installs_only:
        print(f"\n{INSTALLS_ONLY}")
    else:
        print("\nQuotas (nominalQuota per ClusterQueue and flavor, and its share of the pool):")
        for line in report.quota_table(plan_data["quotas"], plan_data["pools"], plan_data["shares"]):
            print(f"  {line}")
    tree = report.cohort_lines(plan_data.get("cohorts"))
    if tree:
        print("\nCohort tree (subtree: a Cohort's own nominalQuota + what its members lend up; reach: the most a")
        print("ClusterQueue can hold on an empty cluster, borrowing through the tree within every borrowingLimit):")
        for line in tree:
            print(f"  {line}")
    fleet = report.fleet_lines(plan_data.get("fleet"))
    if fleet:
        print(f"\n{fleet[0]}")
        for line in fleet[1:]:
            print(f"  {line}")
    limits = report.limits_table(plan_data["borrowingLimits"], plan_data["lendingLimits"])
    if limits:
        print("\nBorrowing and lending limits (where unset: borrow without limit, lend all of the nominal quota):")
        for line in limits:
            print(f"  {line}")
    jobs = plan_data["jobs"]
    print(
        f"\nAIPerfJobs ({len(jobs)}), each proven to fit its ClusterQueue on an empty cluster:"
        if jobs
        else "\nAIPerfJobs: none"
    )
    for line in report.jobs_table(jobs):
        print(f"  {line}")
    print("\nCharts:" if outputs.get("charts") else "\nCharts: none (every controller is managed elsewhere)")
    for key, chart in (outputs.get("charts") or {}).items():
        version = f" {chart['version']}" if chart.get("version") else ""
        print(f"  {key}: {chart['chart']}{version} as release {chart['release']} in {chart['namespace']}")
    print(f"\n{submissions.kueue_install_line(kueue, outputs.get('charts') or {})}")
    boundary = plan_data.get("kueueBoundary") or []
    if boundary:
        print(f"\nFrom Kueue <= 0.19 to {kueue.get('version')} (v1beta1 is no longer served), before pulumi up:")
        print("\n".join(f"  {i}. {step}" for i, step in enumerate(boundary, 1)))
    if not installs_only:
        preflight = plan_data["preflight"]
        print(f'\nAIPerf preflight "Kueue Queue" ({len(preflight)} submissions into this stack\'s cluster):')
        for line in submissions.preflight_lines(preflight):
            print(f"  {line}")
        print("\nSubmit from the CLI (append the benchmark's flags: --url, --model, ...):")
        for line in submissions.cli_lines(plan_data["aiperfCli"]):
            print(f"  {line}")
    print(f"\nWarnings ({len(result.warnings)}):" if result.warnings else "\nWarnings: none")
    for warning in result.warnings:
        print(f"  - {warning}")
    print(f"\nWrote {', '.join(files)} to {target}/")


def plan(stack: str, out: Path | None, output_format: str = "text") -> int:
    """Validate, run the program under the recording engine, write the plan and print it
    (console text, or with ``output_format="markdown"`` the report ``diff`` writes)."""
    path = stack_file_for(stack, _stacks_dir())
    try:
        missing = missing_stack_problem(stack, path, _stacks_dir())
        if missing:
            raise ConfigError(str(path), [missing])
        if out is not None and out.exists() and not out.is_dir():
            raise ConfigError(str(out), [Problem("", "--out is a file: plan writes a directory of files")])
        result = compute_plan(path)
        try:
            target = write_plan(result, out)
        except OSError as exc:
            where = out if out is not None else Path("out") / result.name
            raise ConfigError(str(where), [Problem("", f"cannot write the plan: {exc.strerror or exc}")]) from None
    except ConfigError as exc:
        return _invalid(exc)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    if output_format == "markdown":
        single = diff.compare(None, _as_plan(result, f"`{stack}` (`{path}`)"))
        print(markdown.render(single, f"aiperf-kueue plan: `{result.name}`"), end="")
        print(f"Wrote {', '.join(result.files)} to {target}/", file=sys.stderr)
    else:
        print_plan(result, target)
    return EXIT_OK


def _invalid(exc: ConfigError) -> int:
    for line in exc.lines():
        print(line, file=sys.stderr)
    return EXIT_INVALID


def _as_plan(result: PlanResult, label: str) -> diff.Plan:
    """The plan as ``diff`` compares it: exactly what resources.json and plan.json hold."""
    return diff.Plan(label, json.loads(result.files["resources.json"]), json.loads(result.files["plan.json"]))


def diff_command(
    base: str,
    head: str,
    out: Path | None,
    exit_code: bool,
    repo_root: Path = ROOT,
    *,
    allow_destructive: bool = False,
) -> int:
    """Compare two plans (stacks, ``plan --out`` directories or ``REV:STACK``) as Markdown; exit 4 when
    the change loses live state (the report's "Destructive" section) unless ``allow_destructive``."""
    notes: list[str] = []
    sides: list[diff.Plan] = []
    try:
        if out is not None and out.is_dir():
            raise ConfigError(str(out), [Problem("", "--out is a directory: diff writes the report to a file")])
        with sources.temporary_directory() as tmp:
            for index, arg in enumerate((base, head)):
                into = Path(tmp) / str(index)
                into.mkdir()
                sides.append(_side(arg, into, repo_root, notes, base_side=index == 0))
        _check_empty_base(base, sides[0], sides[1], repo_root)
        result = diff.compare(sides[0], sides[1], tuple(notes))
        stack = sides[1].data.get("stack") or head
        text = markdown.render(result, f"aiperf-kueue diff: `{stack}`")
        if out is not None:
            try:
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(text)
            except OSError as exc:
                raise ConfigError(str(out), [Problem("", f"cannot write the report: {exc.strerror or exc}")]) from None
    except ConfigError as exc:
        return _invalid(exc)
    if out is not None:
        print(f"{result.summary()} Wrote {out}")
    else:
        print(text, end="")
    if result.destructive and not allow_destructive:
        print(
            f"aiperf-kueue diff: {len(result.destructive)} destructive change(s) (see the report's Destructive "
            "section); acknowledge with --allow-destructive",
            file=sys.stderr,
        )
        return EXIT_DESTRUCTIVE
    return EXIT_CHANGES if exit_code and result.has_changes else EXIT_OK


def _side(arg: str, into: Path, repo_root: Path, notes: list[str], base_side: bool = False) -> diff.Plan:
    """One side of ``diff``, planned (``into``: a scratch directory of its own); appends to ``notes``
    what the report must say about how it was planned. A BASE ``REV:STACK`` whose stack file does
    not exist at ``REV`` (a stack the change adds) is an empty plan."""
    if sources.is_plan_dir(arg):
        return sources.load_plan_dir(Path(arg))
    if sources.is_revision(arg):
        rev, _, stack = arg.partition(":")
        bad = sources.revision_stack_problem(stack)
        if bad:
            raise ConfigError(arg, [Problem("", bad)])
        if base_side and sources.absent_at_revision(rev, stack, repo_root):
            notes.append(
                f"`{sources.revision_path(stack)}` does not exist at `{rev}`: a new stack, so the base is empty "
                "and everything is created."
            )
            return sources.empty_plan(rev, stack)
        at_rev = sources.revision_side(rev, stack, repo_root, into)
        if at_rev.plan is not None:
            return at_rev.plan
        notes.append(at_rev.note)
        side = at_rev.fallback
    else:
        side = sources.stack_side(arg, _stacks_dir())
    return _as_plan(compute_plan(side.path, side.source), side.label)


def _check_empty_base(base: str, base_plan: diff.Plan, head_plan: diff.Plan, repo_root: Path) -> None:
    """An absent BASE stack is an empty base only for the stack HEAD adds (``diff origin/main:new
    new``); naming another stack there is a typo, not a new stack."""
    if base_plan.resources or not sources.is_revision(base):
        return
    rev, _, stack = base.partition(":")
    name = base_plan.data.get("stack")
    if not sources.absent_at_revision(rev, stack, repo_root) or name == head_plan.data.get("stack"):
        return
    there = sources.stacks_at_revision(rev, repo_root)
    raise ConfigError(
        base,
        [
            Problem(
                "",
                f"no {sources.revision_path(stack)} at {show(rev)}{did_you_mean(str(name), there)}; stacks there: "
                f"{', '.join(there) or 'none'} (a missing base is an empty one only for the stack being added, "
                f"here {show(head_plan.data.get('stack'))})",
            )
        ],
    )


def export_command(stack: str, out: Path) -> int:
    """Validate and plan ``stack``, then write its objects to ``out`` as numbered files in apply order."""
    path = stack_file_for(stack, _stacks_dir())
    try:
        missing = missing_stack_problem(stack, path, _stacks_dir())
        if missing:
            raise ConfigError(str(path), [missing])
        if out.exists() and not out.is_dir():
            raise ConfigError(str(out), [Problem("", "--out is a file: export writes a directory of files")])
        result = compute_plan(path)
        try:
            written = export.write_export(export.export_files(result.records), out)
        except OSError as exc:
            raise ConfigError(str(out), [Problem("", f"cannot write the export: {exc.strerror or exc}")]) from None
    except ConfigError as exc:
        return _invalid(exc)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    objects = [p for p in written if p.name != export.KUSTOMIZATION]
    print(f"Wrote {len(objects)} objects and {export.KUSTOMIZATION} to {out}/, in apply order.")
    print("Apply once Kueue, JobSet and the AIPerf operator are installed:")
    if (out / export.PATCH_DIR).is_dir():
        # Before the jobs: it sets the pod sizes their admission was proven with.
        print(f"  kubectl apply --server-side --force-conflicts -f {out / export.PATCH_DIR}   # the operator's env")
    print(f"  kubectl apply --server-side -f {out}   # or -k {out}")
    return EXIT_OK


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error on one line (exit 2) like every other problem."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_INVALID, f"{self.prog}: {escape(message)}; see {self.prog} --help\n")


def build_parser() -> argparse.ArgumentParser:
    """The command line: ``plan``, ``diff``, ``export`` and the commands each module adds."""
    parser = _Parser(prog="aiperf-kueue", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    plan_parser = sub.add_parser(
        "plan", help="plan a stack offline and write manifests.yaml, resources.json, plan.json"
    )
    plan_parser.add_argument("stack", help="a stack name under stacks/ (dev, prod) or a path to a stack file")
    plan_parser.add_argument("--out", type=Path, default=None, help="output directory (default: out/STACK)")
    plan_parser.add_argument(
        "--format",
        choices=("text", "markdown"),
        default="text",
        help="what to print: console text (default) or the Markdown report of 'diff' (files are written either way)",
    )
    diff_parser = sub.add_parser(
        "diff", help="compare two plans and print a Markdown report (creates, updates, replaces, deletes, quotas)"
    )
    side_help = "a stack (name under stacks/ or stack file), a 'plan --out' directory, or REV:STACK (git revision)"
    diff_parser.add_argument("base", metavar="BASE", help=side_help)
    diff_parser.add_argument("head", metavar="HEAD", help=side_help)
    diff_parser.add_argument("--out", type=Path, default=None, help="write the report to FILE instead of stdout")
    diff_parser.add_argument("--exit-code", action="store_true", help="exit 3 when there are changes")
    diff_parser.add_argument(
        "--allow-destructive",
        action="store_true",
        help="do not exit 4 on changes that lose live state (they are still listed first in the report)",
    )
    export_parser = sub.add_parser(
        "export", help="write a stack's objects as plain manifests, one file each in apply order (for GitOps)"
    )
    export_parser.add_argument("stack", help="a stack name under stacks/ or a path to a stack file")
    export_parser.add_argument("--out", type=Path, required=True, help="directory to write (earlier exports replaced)")
    inventory_cli.add_commands(sub)
    simulate_cli.add_command(sub)
    explain_cli.add_command(sub)
    split_cli.add_command(sub)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Console entry point."""
    parser = build_parser()
    args = parser.parse_args(argv)
    paths = ("stack", "base", "head", "out", "nodes", "kubeconfig", "platform", "fleet", "state")
    given = [(name, getattr(args, name)) for name in paths if getattr(args, name, None)]
    # Each value once: `plan X --out X` names one bad path, not two.
    bad = [(value, argument_problem(value)) for value in dict.fromkeys(str(v) for _, v in given)]
    if any(problem for _, problem in bad):
        for value, problem in bad:
            if problem:
                print(f"{cut(escape(value))}: {problem}", file=sys.stderr)
        return EXIT_INVALID
    # At exit, not now: later runs in the same process reuse the worker threads' loops.
    atexit.register(close_worker_loops)
    try:
        if args.command == simulate_cli.COMMAND:
            return simulate_cli.run(args, _stacks_dir())
        if args.command == explain_cli.COMMAND:
            return explain_cli.run(args, _stacks_dir())
        if args.command == split_cli.COMMAND:
            return split_cli.run(args, _stacks_dir(), lambda path: compute_plan(path).records)
        if args.command in inventory_cli.COMMANDS:
            return inventory_cli.run(args, _stacks_dir())
        if args.command == "diff":
            return diff_command(
                args.base, args.head, args.out, args.exit_code, allow_destructive=args.allow_destructive
            )
        if args.command == "export":
            return export_command(args.stack, args.out)
        return plan(args.stack, args.out, args.format)
    except Exception as exc:
        print(f"aiperf-kueue: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILED


def _version() -> str:
    try:
        return metadata.version("aiperf-kueue")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


if __name__ == "__main__":
    sys.exit(main())
