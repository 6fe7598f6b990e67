"""``aiperf-kueue inventory import`` and ``aiperf-kueue drift``: the commands around the pure modules.

:mod:`~aiperf_kueue.inventory.node_list` reads nodes, :mod:`~aiperf_kueue.inventory.inventory_nodes` groups them,
:mod:`~aiperf_kueue.inventory.stack_edit` writes the stack file, :mod:`~aiperf_kueue.inventory.drift` compares;
this module parses the arguments, prints, and maps problems to exit codes (2: bad input,
nothing written; 3: ``drift --exit-code`` found drift).
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aiperf_kueue.cli.node_source import read_nodes
from aiperf_kueue.common.errors import ConfigError, Problem
from aiperf_kueue.common.render import json_text
from aiperf_kueue.installs.install_checks import install_problems
from aiperf_kueue.inventory.drift import compare
from aiperf_kueue.inventory.inventory_nodes import (
    ExistingPool,
    InventoryImport,
    PoolImport,
    existing_pools,
    import_inventory,
)
from aiperf_kueue.inventory.node_list import NodeListError, taint_text
from aiperf_kueue.inventory.stack_edit import INVENTORY_KEY, SpliceError, apply_import, new_stack_text, set_inventory
from aiperf_kueue.plan.stack_plan import plan_values
from aiperf_kueue.queues.planner import plan_queues
from aiperf_kueue.stackfile.loader import parse_config, read_stack, stack_file_for, stack_name_of

EXIT_OK, EXIT_FAILED, EXIT_INVALID, EXIT_DRIFT = 0, 1, 2, 3
#: The top-level commands this module adds.
COMMANDS = ("inventory", "drift")
_NODES_HELP = "the output of `kubectl get nodes -o json`: a file, or - for standard input"


def add_commands(sub: Any) -> None:
    """Add ``inventory import`` and ``drift`` to the ``aiperf-kueue`` subcommands."""
    inventory = sub.add_parser("inventory", help="read the cluster's nodes into a stack's aiperf-kueue:inventory")
    actions = inventory.add_subparsers(dest="inventory_command", required=True)
    imp = actions.add_parser(
        "import",
        help="group nodes into pools and write them to the stack file (everything else in it stays as it is)",
    )
    imp.add_argument("nodes", metavar="NODES", nargs="?", help=f"{_NODES_HELP} (or --kubeconfig)")
    imp.add_argument("--stack", required=True, help="a stack name under stacks/ or a stack file (created if absent)")
    imp.add_argument(
        "--group-by",
        metavar="LABEL",
        action="append",
        default=[],
        help="group nodes by this label (repeat for several) instead of the stack's pools and the GPU product labels",
    )
    imp.add_argument("--prune", action="store_true", help="remove the stack's pools that no Ready node matches")
    imp.add_argument("--dry-run", action="store_true", help="show the change to the stack file; write nothing")
    _cluster_args(imp)
    drift = sub.add_parser("drift", help="compare a stack's inventory with the nodes, pool by pool")
    drift.add_argument("stack", metavar="STACK", help="a stack name under stacks/ or a stack file")
    drift.add_argument("nodes", metavar="NODES", nargs="?", help=f"{_NODES_HELP} (or --kubeconfig)")
    drift.add_argument("--out", type=Path, default=None, help="also write the findings as JSON to FILE")
    drift.add_argument("--exit-code", action="store_true", help="exit 3 when anything drifts")
    _cluster_args(drift)


def _cluster_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", type=Path, default=None, help="read the nodes from this cluster instead")
    parser.add_argument(
        "--context",
        default=None,
        help="kubeconfig context (default: for drift the stack's cluster.context, else the current context)",
    )


def run(args: argparse.Namespace, stacks_dir: Path) -> int:
    """Run the parsed ``inventory import`` or ``drift`` command."""
    try:
        if args.command == "drift":
            return drift_command(args, stacks_dir)
        return import_command(args, stacks_dir)
    except (ConfigError, NodeListError) as exc:
        for line in exc.lines():
            print(line, file=sys.stderr)
        return EXIT_INVALID


def import_command(args: argparse.Namespace, stacks_dir: Path) -> int:
    """``inventory import``: group the nodes, write (or with ``--dry-run`` show) the stack file."""
    path = stack_file_for(args.stack, stacks_dir)
    source = str(path)
    nodes = read_nodes(args.nodes, args.kubeconfig, args.context)
    text = _read_text(path)
    current = read_stack(path).values.get("inventory") if text is not None else None
    existing = existing_pools(current)
    result = import_inventory(nodes.nodes, group_by=args.group_by, existing=existing, prune=args.prune)
    if not result.pools:
        reasons = [f"{name}: {'; '.join(why)}" for name, why in result.skipped]
        raise NodeListError(
            nodes.source,
            ["no Ready, schedulable node to import" + (f" ({len(reasons)} left out)" if reasons else ""), *reasons],
        )
    if text is None:
        new_text = new_stack_text(result)
    else:
        new_text = set_inventory(text, source, lambda node: apply_import(node, result))
    plan_note = _plan_problems(new_text, path.name, stacks_dir.parent, source)
    _print_import(result, current, nodes.source, source, created=text is None)
    if args.dry_run:
        diff = difflib.unified_diff(
            (text or "").splitlines(keepends=True), new_text.splitlines(keepends=True), source, source
        )
        print("\nDry run: nothing written. The change:")
        print("".join(diff) or "(none)\n", end="")
    elif new_text != text:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(new_text)
        except OSError as exc:
            raise ConfigError(source, [Problem("", f"cannot write the stack file: {exc.strerror or exc}")]) from None
        print(f"\nWrote {INVENTORY_KEY} to {source}.")
        print(f"Next: review the change, `aiperf-kueue plan {args.stack}`, then pulumi up.")
    else:
        print(f"\n{source} already says this: nothing to write.")
    if plan_note:
        print("\nThe stack does not plan with this inventory yet (fix before pulumi up):", file=sys.stderr)
        for line in plan_note:
            print(f"  {line}", file=sys.stderr)
    return EXIT_OK


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else f"not UTF-8 text: {exc.reason}"
        raise ConfigError(str(path), [Problem("", f"cannot read stack file: {reason}")]) from None


def _plan_problems(text: str, name: str, project_dir: Path, source: str) -> list[str]:
    """The problems ``plan`` would report for the edited stack (a ClusterQueue's share of a pool that
    is gone, a job that no longer fits). :class:`ConfigError` naming ``source`` if the inventory itself
    is invalid (more taints than a pool may hold): then nothing is written."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / name
        copy.write_text(text)
        stack = read_stack(copy)
    try:
        plan_values(stack.values, name, project_dir, provider=stack.provider)
    except ConfigError as exc:
        invalid = [p for p in exc.problems if p.path == "inventory" or p.path.startswith("inventory.")]
        if invalid:
            raise ConfigError(source, invalid) from None
        return exc.lines()
    return []


def _print_import(result: InventoryImport, current: Any, nodes: str, source: str, *, created: bool) -> None:
    count = sum(len(p.nodes) for p in result.pools)
    verb = "into a new stack file" if created else "into"
    print(f"Imported {count} Ready {'node' if count == 1 else 'nodes'} from {nodes} {verb} {source} ({INVENTORY_KEY}):")
    old_pools = current.get("pools") if isinstance(current, Mapping) else None
    print(f"\nPools ({len(result.order())}), each sized by its smallest node (quota = nodes × per node):")
    for pool in result.order():
        if isinstance(pool, ExistingPool):
            print(f"  {pool.name} (kept as it is: no Ready node matches it)")
            continue
        old = old_pools[pool.existing] if isinstance(old_pools, list) and pool.existing is not None else None
        print(f"  {_describe(pool, old)}")
        for note in pool.notes:
            print(f"    - {note}")
    for pool in result.pruned:
        print(f"  {pool.name} (removed, --prune: no Ready node matches it)")
    if result.skipped:
        print(f"\nLeft out ({len(result.skipped)}):")
        for name, reasons in result.skipped:
            print(f"  - {name}: {'; '.join(reasons)}")
    if result.warnings:
        print(f"\nWarnings ({len(result.warnings)}):")
        for warning in result.warnings:
            print(f"  - {warning}")


def _describe(pool: PoolImport, old: Any) -> str:
    values = pool.values()
    gpus = f", {values['gpus']} {pool.gpu_resource}" if values.get("gpus") else ""
    text = f"{pool.name}: {_nodes(values['nodes'])} × cpu {values['cpu']}, memory {values['memory']}{gpus}"
    if values.get("nodeLabels"):
        text += f"; nodeLabels {json.dumps(values['nodeLabels'])}"
    if pool.node_taints:
        text += f"; nodeTaints {', '.join(taint_text(t) for t in pool.node_taints)}"
    if not isinstance(old, Mapping):
        return f"{text} (new)"
    changed = [
        f"{key} {old.get(key, '-')} → {values.get(key, '-')}"
        for key in ("nodes", "cpu", "memory", "gpus", "gpuResource")
        if key in values and str(old.get(key)) != str(values.get(key))
    ]
    return f"{text} (updated: {', '.join(changed)})" if changed else f"{text} (unchanged)"


def drift_command(args: argparse.Namespace, stacks_dir: Path) -> int:
    """``drift``: compare the stack's pools with the nodes, print a table, optionally write JSON."""
    path = stack_file_for(args.stack, stacks_dir)
    source = str(path)
    if args.out is not None and args.out.is_dir():
        raise ConfigError(str(args.out), [Problem("", "--out is a directory: drift writes one JSON file")])
    stack = read_stack(path)
    config = parse_config(stack.values, source)
    installs = install_problems(config, config.kueue.target(), stacks_dir.parent)
    plan = plan_queues(config, source, install_problems=installs)
    context = args.context
    if args.kubeconfig is not None and context is None:
        cluster = stack.values.get("cluster")
        named = cluster.get("context") if isinstance(cluster, dict) else None
        configured = named if isinstance(named, str) else stack.provider.get("kubernetes:context")
        context = configured if isinstance(configured, str) and configured else None
    nodes = read_nodes(args.nodes, args.kubeconfig, context)
    drift = compare(config, plan, nodes.nodes)
    name = stack_name_of(path)
    summary = f"{len(drift.findings)} findings" if drift.drifted else "no drift"
    print(f"Drift of stack {name} ({source}) against {nodes.source}: {summary}\n")
    for line in drift.table():
        print(line)
    if args.out is not None:
        report = {"stack": name, "stackFile": source, "nodes": nodes.source, **drift.as_dict()}
        try:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json_text(report, ensure_ascii=False))
        except OSError as exc:
            raise ConfigError(str(args.out), [Problem("", f"cannot write: {exc.strerror or exc}")]) from None
        print(f"\nWrote {args.out}")
    return EXIT_DRIFT if args.exit_code and drift.drifted else EXIT_OK


__all__ = ["COMMANDS", "SpliceError", "add_commands", "run"]


def _nodes(count: int) -> str:
    return f"{count} node" if count == 1 else f"{count} nodes"
