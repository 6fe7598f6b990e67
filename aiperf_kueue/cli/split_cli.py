"""``aiperf-kueue split PLATFORM FLEET --state FILE``: split a live single stack into a platform and a fleet stack.

``FILE`` is ``pulumi stack export`` of the live stack; ``FLEET`` is that stack's file, edited to install nothing;
``PLATFORM`` is the new stack's file, with the installs only. Both are planned offline; the command prints the
``pulumi state move`` that carries the platform's resources, every child included, to the new stack (state only:
no API call), and says on stderr what each stack's next ``pulumi up`` creates and whether it deletes anything
(:mod:`aiperf_kueue.review.split`). Exit codes: 0 printed, 2 bad input (one line, nothing printed on stdout),
4 the fleet stack's next ``up`` would delete a Kubernetes object (the command is printed all the same).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from aiperf_kueue.cli.sources import stack_side
from aiperf_kueue.common.display import cut, escape
from aiperf_kueue.common.errors import ConfigError, Problem
from aiperf_kueue.review.split import live_resources, split_moves
from aiperf_kueue.stackfile.json_input import JsonInputError, read_json_file

COMMAND = "split"
EXIT_OK, EXIT_INVALID, EXIT_DESTRUCTIVE = 0, 2, 4


def add_command(sub: Any) -> None:
    """Register ``split`` on the CLI's subparsers."""
    parser = sub.add_parser(
        COMMAND,
        help="print the `pulumi state move` that splits a live stack into a platform and a fleet stack",
    )
    parser.add_argument("platform", help="the new platform stack (installs only): a name under stacks/ or a file")
    parser.add_argument("fleet", help="the live stack, its file edited to install nothing: a name or a file")
    parser.add_argument(
        "--state", type=Path, required=True, help="`pulumi stack export --stack <live stack> --file FILE` of it"
    )


def run(
    args: argparse.Namespace, stacks_dir: Path, plan_records: Callable[[Path], Sequence[Mapping[str, Any]]]
) -> int:
    """Run ``split``; ``plan_records(path)`` plans a stack file offline and returns its resources.json rows."""
    source = f"--state {args.state}"
    try:
        files = [stack_side(stack, stacks_dir).path for stack in (args.platform, args.fleet)]
        try:
            export = read_json_file(args.state)
        except (JsonInputError, OSError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ConfigError(source, [Problem("", cut(escape(reason)))]) from None
        resources = live_resources(export, source)
        platform, fleet = ((str(f), plan_records(f)) for f in files)
        result = split_moves(resources, platform, fleet, source)
    except ConfigError as exc:
        for line in exc.lines()[:1]:
            print(line, file=sys.stderr)
        return EXIT_INVALID
    print(
        f"# aiperf-kueue split: {len(result.moves)} resources of stack {result.source} to stack {result.dest}, "
        "state only (no API call)"
    )
    print(result.command())
    say = sys.stderr
    print(
        f"Then: pulumi up --stack {result.dest} (nothing to change), then pulumi up --stack {result.source}.", file=say
    )
    if result.recreated:
        print(
            f"{result.source}'s next up creates again {', '.join(result.recreated)}: moved, and declared by both "
            "stacks; no Kubernetes object (components and the readiness gate)",
            file=say,
        )
    if result.created:
        print(f"{result.dest}'s first up creates {', '.join(result.created)}: not in the live stack", file=say)
    destructive = result.destructive()
    for line in destructive:
        print(f"Destructive: {line}", file=say)
    return EXIT_DESTRUCTIVE if destructive else EXIT_OK
