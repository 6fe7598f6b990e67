"""Where a node list comes from: a file, standard input, or the live cluster.

The live cluster is read with the official Kubernetes Python client (``kubernetes``): the
kubeconfig's authentication (tokens, client certificates, exec plugins) is the client's, not
this program's. Every failure is a :class:`~aiperf_kueue.inventory.node_list.NodeListError` naming the
input, so the command exits 2 with one clear line.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiperf_kueue.inventory.node_list import Node, NodeListError, parse_json, parse_nodes

#: Nodes per list request: the API server pages long lists, the client follows ``continue``.
PAGE = 500
#: Seconds one list request may take, connecting and reading.
TIMEOUT = 60


@dataclass(frozen=True)
class NodeInput:
    """A node list and what to call it in messages."""

    source: str
    nodes: list[Node]


def read_nodes(path: str | None, kubeconfig: Path | None = None, context: str | None = None) -> NodeInput:
    """The nodes in ``path`` (``-`` for standard input), or with ``kubeconfig`` the cluster's."""
    if kubeconfig is not None:
        if path is not None:
            raise NodeListError(path, ["give either NODES or --kubeconfig, not both"])
        source = f"--kubeconfig {kubeconfig}" + (f" --context {context}" if context else "")
        return NodeInput(source, parse_nodes(cluster_node_list(kubeconfig, context, source), source))
    if path is None:
        raise NodeListError(
            "NODES", ["missing: give a file from `kubectl get nodes -o json`, - for standard input, or --kubeconfig"]
        )
    if context is not None:
        raise NodeListError(path, ["--context needs --kubeconfig"])
    source = "<stdin>" if path == "-" else path
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise NodeListError(source, [f"cannot read: {exc.strerror or exc}"]) from None
    return NodeInput(source, parse_nodes(parse_json(data, source), source))


def cluster_node_list(kubeconfig: Path, context: str | None, source: str) -> dict[str, Any]:
    """``GET /api/v1/nodes``, every page, as the JSON ``kubectl get nodes -o json`` prints."""
    # Imported here: only these two commands talk to a cluster, and the client is large.
    from kubernetes import client, config
    from kubernetes.config import ConfigException

    try:
        # persist_config=False: never write refreshed credentials back into the user's kubeconfig.
        api = config.new_client_from_config(config_file=str(kubeconfig), context=context, persist_config=False)
    except (ConfigException, OSError, ValueError) as exc:
        raise NodeListError(source, [f"cannot use the kubeconfig: {exc}"]) from None
    items: list[Any] = []
    token: str | None = None
    try:
        with api:
            core = client.CoreV1Api(api)
            while True:
                page = core.list_node(limit=PAGE, _continue=token, _request_timeout=TIMEOUT)
                items += api.sanitize_for_serialization(page).get("items") or []
                token = page.metadata.var_continue if page.metadata is not None else None
                if not token:
                    break
    except client.ApiException as exc:
        reason = f"{exc.status} {exc.reason}".strip()
        raise NodeListError(source, [f"the API server refused to list nodes: {reason}"]) from None
    except Exception as exc:  # urllib3's connection errors, TLS errors, auth plugin failures
        raise NodeListError(source, [f"cannot list nodes: {type(exc).__name__}: {exc}"]) from None
    return {"apiVersion": "v1", "kind": "List", "items": items}
