"""``--kubeconfig``: nodes listed through the official Kubernetes client, here from a loopback stand-in API server.

The stand-in answers ``GET /api/v1/nodes`` one node per page (the real API server pages with ``limit`` and
``continue``), so these tests run the client's kubeconfig loading, authentication header, request and paging code.
A real kube-apiserver is exercised by tests/e2e/test_inventory_e2e.py.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import shutil
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from aiperf_kueue.cli.cli import main
from tests.support import STACKS

NODES = Path(__file__).parent / "nodes"
TOKEN = "test-token-not-a-secret"


@dataclass
class FakeApiServer:
    """Serves a node list, one item per page; records each request's path and Authorization header."""

    document: dict[str, Any]
    status: int = 200
    requests: list[tuple[str, str | None]] = field(default_factory=list)
    url: str = ""


def _handler(api: FakeApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            api.requests.append((self.path, self.headers.get("Authorization")))
            url = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qs(url.query)
            if url.path != "/api/v1/nodes" or api.status != 200:
                status = api.status if url.path == "/api/v1/nodes" else 404
                body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": status}
                self._send(status, body)
                return
            start = int(query.get("continue", ["0"])[0])
            items = api.document["items"]
            page: dict[str, Any] = {"resourceVersion": "4711"}
            if start + 1 < len(items):
                page["continue"] = str(start + 1)
            # The API server leaves kind and apiVersion off a list's items.
            item = {k: v for k, v in items[start].items() if k not in ("kind", "apiVersion")}
            self._send(200, {"kind": "NodeList", "apiVersion": "v1", "metadata": page, "items": [item]})

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status, "Forbidden" if status == 403 else None)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


@contextlib.contextmanager
def serving(api: FakeApiServer) -> Iterator[FakeApiServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    api.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def kubeconfig(path: Path, servers: dict[str, str], current: str) -> Path:
    """A kubeconfig with one context per server, each named like its cluster."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": url}} for name, url in servers.items()],
        "users": [{"name": "bench", "user": {"token": TOKEN}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "bench"}} for name in servers],
        "current-context": current,
    }
    path.write_text(json.dumps(config))
    return path


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def gke() -> dict[str, Any]:
    nodes: dict[str, Any] = json.loads((NODES / "gke.json").read_text())
    return nodes


def test_import_from_the_cluster_equals_import_from_kubectl_output(tmp_path: Path, gke: dict[str, Any]) -> None:
    with serving(FakeApiServer(gke)) as api:
        config = kubeconfig(tmp_path / "kubeconfig", {"bench": api.url}, "bench")
        live, from_file = tmp_path / "Pulumi.live.yaml", tmp_path / "Pulumi.file.yaml"
        code, out, err = run("inventory", "import", "--kubeconfig", str(config), "--stack", str(live))
    assert (code, err) == (0, "")
    assert out.startswith(f"Imported 5 Ready nodes from --kubeconfig {config} into a new stack file {live}")
    assert run("inventory", "import", str(NODES / "gke.json"), "--stack", str(from_file))[0] == 0
    assert live.read_text() == from_file.read_text()
    # Six pages of one node, each request authenticated with the kubeconfig's token.
    assert api.requests == [
        ("/api/v1/nodes?limit=500", f"Bearer {TOKEN}"),
        *((f"/api/v1/nodes?continue={page}&limit=500", f"Bearer {TOKEN}") for page in range(1, 6)),
    ]


def test_drift_reads_the_context_the_stack_deploys_to(tmp_path: Path, gke: dict[str, Any]) -> None:
    stack = tmp_path / "Pulumi.gke.yaml"
    assert run("inventory", "import", str(NODES / "gke.json"), "--stack", str(stack))[0] == 0
    stack.write_text(stack.read_text().replace("config:\n", "config:\n  kubernetes:context: staging\n", 1))
    drifted = copy.deepcopy(gke)
    drifted["items"][0]["spec"]["unschedulable"] = True
    with serving(FakeApiServer(gke)) as same, serving(FakeApiServer(drifted)) as staging:
        config = kubeconfig(tmp_path / "kubeconfig", {"current": same.url, "staging": staging.url}, "current")
        code, out, _ = run("drift", str(stack), "--kubeconfig", str(config), "--exit-code")
        assert (code, same.requests) == (3, [])
        assert out.splitlines()[0] == (
            f"Drift of stack gke ({stack}) against --kubeconfig {config} --context staging: 2 findings"
        )
        # --context wins over the stack's.
        code, out, _ = run("drift", str(stack), "--kubeconfig", str(config), "--context", "current", "--exit-code")
        assert code == 0
        assert out.splitlines()[0].endswith("--context current: no drift")


def test_the_api_server_refusing_exits_2(tmp_path: Path, gke: dict[str, Any]) -> None:
    stack = tmp_path / "Pulumi.prod.yaml"
    shutil.copy(STACKS / "Pulumi.prod.yaml", stack)
    with serving(FakeApiServer(gke, status=403)) as api:
        config = kubeconfig(tmp_path / "kubeconfig", {"bench": api.url}, "bench")
        code, out, err = run("inventory", "import", "--kubeconfig", str(config), "--stack", str(stack))
    assert (code, out, err) == (
        2,
        "",
        f"--kubeconfig {config}: the API server refused to list nodes: 403 Forbidden\n",
    )
    assert stack.read_text() == (STACKS / "Pulumi.prod.yaml").read_text()


def test_a_kubeconfig_that_cannot_be_used_exits_2(tmp_path: Path) -> None:
    missing = tmp_path / "absent"
    code, out, err = run("drift", "prod", "--kubeconfig", str(missing))
    assert (code, out) == (2, "")
    # drift reads the stack's own context (aiperf-kueue:cluster.context) when none is given.
    assert err.startswith(f"--kubeconfig {missing} --context prod-gpu: cannot use the kubeconfig: ")
    config = kubeconfig(tmp_path / "kubeconfig", {"bench": "http://127.0.0.1:9"}, "bench")
    code, out, err = run("drift", "prod", "--kubeconfig", str(config), "--context", "elsewhere")
    assert (code, out) == (2, "")
    assert err.startswith(f"--kubeconfig {config} --context elsewhere: cannot use the kubeconfig: ")
    assert "elsewhere" in err.split("cannot use the kubeconfig: ", 1)[1]
