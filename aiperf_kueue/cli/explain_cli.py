"""``aiperf-kueue explain STACK --kubeconfig K [--context C] [--json]``: why each of the stack's jobs waits.

Reads the live Workloads, ClusterQueues, LocalQueues and AIPerfJobs with the official Kubernetes client and prints
one line per pending, evicted or preempted job (:mod:`aiperf_kueue.simulate.explain`). Exit codes: 0 explained
(whether or not anything waits), 2 bad input (the stack file, the kubeconfig or the context; one line, nothing
read), 1 the cluster could not be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from aiperf_kueue.common.display import cut, escape
from aiperf_kueue.common.errors import ConfigError, Problem
from aiperf_kueue.simulate.explain import explain
from aiperf_kueue.stackfile.loader import (
    missing_stack_problem,
    parse_config,
    read_stack,
    stack_file_for,
    stack_name_of,
)

COMMAND = "explain"
EXIT_OK, EXIT_UNREACHABLE, EXIT_INVALID = 0, 1, 2
#: Seconds one list request may take, connecting and reading.
TIMEOUT = 30
#: (group, version, plural) of the objects read.
KINDS = {
    "workloads": ("kueue.x-k8s.io", "v1beta2", "workloads"),
    "clusterqueues": ("kueue.x-k8s.io", "v1beta2", "clusterqueues"),
    "localqueues": ("kueue.x-k8s.io", "v1beta2", "localqueues"),
    "cohorts": ("kueue.x-k8s.io", "v1beta2", "cohorts"),
    "aiperfjobs": ("aiperf.nvidia.com", "v1alpha1", "aiperfjobs"),
}


class UnreachableError(Exception):
    """The cluster could not be read: one line."""


def add_command(sub: Any) -> None:
    """Register ``explain`` on the CLI's subparsers."""
    parser = sub.add_parser(
        COMMAND, help="say why each of the stack's pending, evicted or preempted jobs waits, from the live cluster"
    )
    parser.add_argument("stack", help="a stack name under stacks/ or a stack file")
    parser.add_argument("--kubeconfig", type=Path, required=True, help="the cluster's kubeconfig")
    parser.add_argument(
        "--context", default=None, help="kubeconfig context (default: the stack's cluster.context, else current)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON (a list, one object per job) instead")


def read_cluster(kubeconfig: Path, context: str | None) -> dict[str, list[dict[str, Any]]]:
    """Every object of :data:`KINDS`; :class:`ConfigError` for an unusable kubeconfig or context,
    :class:`UnreachableError` when the cluster cannot be read."""
    # Imported here: only the commands that talk to a cluster load the client.
    from kubernetes import client, config
    from kubernetes.config import ConfigException

    source = f"--kubeconfig {kubeconfig}"
    if not kubeconfig.is_file():
        raise ConfigError(source, [Problem("", "no such file; give the kubeconfig of the cluster to explain")])
    try:
        api = config.new_client_from_config(config_file=str(kubeconfig), context=context, persist_config=False)
    except (ConfigException, OSError, ValueError) as exc:
        where = f"--context {context}" if context else "kubeconfig"
        raise ConfigError(source, [Problem("", f"cannot use the {where}: {cut(escape(str(exc)))}")]) from None
    out: dict[str, list[dict[str, Any]]] = {}
    key = next(iter(KINDS))
    try:
        with api:
            custom = client.CustomObjectsApi(api)
            for key, (group, version, plural) in KINDS.items():
                body: Any = custom.list_cluster_custom_object(group, version, plural, _request_timeout=TIMEOUT)
                out[key] = list(body.get("items") or [])
    except client.ApiException as exc:
        raise UnreachableError(f"the API server refused to list {key}: {exc.status} {exc.reason}") from None
    except Exception as exc:  # urllib3's connection errors, TLS errors, auth plugin failures
        raise UnreachableError(f"cannot read {key}: {type(exc).__name__}: {cut(escape(str(exc)))}") from None
    return out


def run(args: argparse.Namespace, stacks_dir: Path) -> int:
    """Run ``explain``: one line per waiting job, or ``--json``."""
    try:
        path = stack_file_for(args.stack, stacks_dir)
        missing = missing_stack_problem(args.stack, path, stacks_dir)
        if missing:
            raise ConfigError(str(path), [missing])
        stack = read_stack(path)
        config = parse_config(stack.values, str(path))
        context = args.context
        if context is None:
            named = config.cluster.context if config.cluster is not None else None
            context = named or None
        objects = read_cluster(args.kubeconfig, context)
    except ConfigError as exc:
        for line in exc.lines()[:1]:
            print(line, file=sys.stderr)
        return EXIT_INVALID
    except UnreachableError as exc:
        print(f"aiperf-kueue explain: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    namespaces = {ns.name for cq in config.queues.cluster_queues for ns in cq.namespaces}
    namespaces |= {j.namespace for j in config.jobs} | {s.namespace for s in config.sweeps}
    found = explain(
        objects["workloads"],
        objects["clusterqueues"],
        objects["localqueues"],
        objects["aiperfjobs"],
        namespaces,
        objects["cohorts"],
    )
    if args.json:
        print(json.dumps([e.as_dict() for e in found], indent=2))
        return EXIT_OK
    name = stack_name_of(path)
    if not found:
        print(f"{name}: no job of the stack is waiting")
    for e in found:
        print(e.line())
    return EXIT_OK
