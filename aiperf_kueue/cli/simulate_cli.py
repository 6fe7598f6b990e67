"""``aiperf-kueue simulate STACK [--scenario DIR] [--json FILE] [--out DIR]``: Kueue's admission over time."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from aiperf_kueue.common.display import cut, escape
from aiperf_kueue.common.errors import ConfigError, Problem
from aiperf_kueue.common.render import json_text
from aiperf_kueue.simulate import report
from aiperf_kueue.simulate.run import Result, simulate_scenario, simulate_stack
from aiperf_kueue.simulate.scenario import load_scenario
from aiperf_kueue.simulate.world import DEFAULT_REQUEST_SECONDS
from aiperf_kueue.stackfile.bounds import argument_problem
from aiperf_kueue.stackfile.loader import missing_stack_problem, stack_file_for

COMMAND = "simulate"
EXIT_OK, EXIT_INVALID = 0, 2


def add_command(sub: Any) -> None:
    """Register ``simulate`` on the CLI's subparsers."""
    parser = sub.add_parser(
        COMMAND,
        help="replay Kueue 0.19.2's admission over time for a stack's jobs (or a scenario of stack revisions)",
    )
    parser.add_argument("stack", help="a stack name under stacks/ or a stack file (with --scenario: its name)")
    parser.add_argument("--scenario", type=Path, default=None, help="a scenario directory (scenario.yaml, NN-*.yaml)")
    parser.add_argument("--json", type=Path, default=None, help="write the whole simulation as JSON to FILE")
    parser.add_argument(
        "--out", type=Path, default=None, help="write timeline.md, simulate.json and steps/NN.json to DIR"
    )
    parser.add_argument(
        "--request-seconds",
        type=float,
        default=DEFAULT_REQUEST_SECONDS,
        help=f"seconds per request of a concurrency phase, for estimates (default {DEFAULT_REQUEST_SECONDS:g})",
    )
    parser.add_argument(
        "--pods-ready-seconds",
        type=float,
        default=0.0,
        help="seconds from admission until its pods are ready (default 0; past waitForPodsReady timeout: evicted)",
    )


def _invalid(exc: ConfigError) -> int:
    for line in exc.lines():
        print(line, file=sys.stderr)
    return EXIT_INVALID


def run(args: argparse.Namespace, stacks_dir: Path) -> int:
    """Run ``simulate``; exit 2 with one line per problem on bad input, nothing written."""
    for value in (args.scenario, args.json):
        problem = argument_problem(str(value)) if value is not None else None
        if problem:
            print(f"{cut(escape(str(value)))}: {problem}", file=sys.stderr)
            return EXIT_INVALID
    for name, value in (("--request-seconds", args.request_seconds), ("--pods-ready-seconds", args.pods_ready_seconds)):
        if not (0 <= value <= 10**7):
            print(f"aiperf-kueue simulate: {name} must be between 0 and 10000000, got {value:g}", file=sys.stderr)
            return EXIT_INVALID
    try:
        if args.out is not None and args.out.exists() and not args.out.is_dir():
            raise ConfigError(str(args.out), [Problem("", "--out is a file: simulate writes a directory of files")])
        if args.json is not None and args.json.is_dir():
            raise ConfigError(str(args.json), [Problem("", "--json is a directory: simulate writes one file")])
        options = {"request_seconds": args.request_seconds, "pods_ready_seconds": args.pods_ready_seconds}
        if args.scenario is not None:
            result = simulate_scenario(load_scenario(args.scenario), **options)
        else:
            path = stack_file_for(args.stack, stacks_dir)
            missing = missing_stack_problem(args.stack, path, stacks_dir)
            if missing:
                raise ConfigError(str(path), [missing])
            result = simulate_stack(path, **options)
    except ConfigError as exc:
        return _invalid(exc)
    text = render(result)
    document = report.to_json(result.outcome, result.stack, result.steps)
    try:
        if args.json is not None:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(document)
        if args.out is not None:
            write_out(result, args.out, text, document)
    except OSError as exc:
        print(f"aiperf-kueue simulate: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(text, end="")
    return EXIT_OK


def render(result: Result) -> str:
    """The Markdown report: timeline, makespan, usage over time, Gantt chart."""
    outcome = result.outcome
    span = report.makespan(outcome)
    lines = [
        f"# aiperf-kueue simulate: `{result.stack}` (Kueue 0.19.2)",
        "",
        "## Timeline",
        "",
        *report.timeline_table(outcome),
        "",
        f"Campaign makespan: {report.seconds(span)}"
        if span is not None
        else f"Campaign makespan: none (some jobs are still queued or running at {report.seconds(outcome.end)})",
        "",
        "## ClusterQueue usage over time",
        "",
        "```",
        *report.usage_lines(outcome),
        "```",
        "",
        "## Gantt",
        "",
    ]
    return "\n".join(lines) + "\n" + report.mermaid(outcome, f"{result.stack}: admissions over time (seconds)")


def write_out(result: Result, out: Path, text: str, document: str) -> None:
    """``timeline.md``, ``simulate.json`` and one ``steps/NN.json`` per step (the e2e's record shape)."""
    steps_dir = out / "steps"
    steps_dir.mkdir(parents=True, exist_ok=True)
    (out / "timeline.md").write_text(text)
    (out / "simulate.json").write_text(document)
    for record in result.step_records():
        number = str(record["step"]).split("-", 1)[0]
        (steps_dir / f"{number}.json").write_text(json_text(record))
