"""The one piece of a finished benchmark that kwok's fake pods cannot give the operator, faked: its results API.

**What AIPerf 0.13.0's operator needs at the end.** Once a job's JobSet completes, the operator fetches the results
from the benchmark's controller pod (``aiperf/operator/handlers/completion.py``, ``handlers/_completion_fetch.py``,
``operator/progress_client.py``): ``GET /api/metrics``, ``GET /api/results/list``, then each listed file from
``GET /api/results/files/<name>``, on ``<jobset>-controller-0-0.<jobset>.<namespace>.svc.cluster.local:9091``
(``controller_dns_name``, the API service port). When a key export (``profile_export_aiperf.json`` or ``.csv``) is
among the files, it stores them under its results directory, deletes the JobSet (and so its Workload and pods) and
sets the AIPerfJob ``Completed``. Without an answer it retries, and the job stays ``Running``.

**What is faked, and nothing else.** :class:`ResultsServer` answers those three calls on port 9091 of a loopback
address of its own (``127.0.1.N``: two scenarios may run at once) for the controllers it was told about, and 404 to
everything else (progress, workers, server metrics, shutdown: the operator treats those as a controller that does not
answer). A controller's name resolves (in the operator's own ``/etc/hosts``, :func:`tests.e2e.operator.operator_hosts`)
only from the moment the harness has recorded every pod of its JobSet Succeeded: before that the operator finds no
controller, exactly as before. The files say what they are: no
request was sent (``request_count`` 0, no error counter), so the operator's error-rate check has nothing to fail on,
and the JSON names this module. The operator's own code decides the rest (its retries, the JobSet's deletion, the
phase), unchanged.
"""

from __future__ import annotations

import errno
import json
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.e2e.cluster import LocalCluster
from tests.e2e.operator import resolve_for_operator

#: AIPerf 0.13.0's ``K8sEnvironment.PORTS.API_SERVICE``: where the operator calls a benchmark's controller.
API_PORT = 9091
#: The export AIPerf writes and the operator looks for first (``DEFAULT_KEY_EXPORT_NAMES``).
EXPORT_JSON = "profile_export_aiperf.json"
EXPORT_CSV = "profile_export_aiperf.csv"
#: No request was sent: the benchmark's containers never ran (kwok).
METRICS: dict[str, Any] = {"request_count": {"tag": "request_count", "unit": "requests", "avg": 0}}
FILES: dict[str, bytes] = {
    EXPORT_JSON: json.dumps(
        {"metrics": METRICS, "fakedBy": "aiperf-kueue tests/e2e/fake_controller.py: no benchmark ran"}, indent=1
    ).encode(),
    EXPORT_CSV: b"Metric,avg\nRequest Count (requests),0\n",
}


def controller_host(namespace: str, jobset: str) -> str:
    """The controller pod's DNS name, as 0.13.0's ``controller_dns_name`` builds it (``aiperf/kubernetes``): the
    JobSet's headless service, replicated job ``controller``, job 0, pod 0."""
    return f"{jobset}-controller-0-0.{jobset}.{namespace}.svc.cluster.local"


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
        body: bytes | None = None
        if host in self.server.hosts:
            if self.path == "/api/metrics":
                body = json.dumps({"metrics": METRICS}).encode()
            elif self.path == "/api/results/list":
                body = json.dumps({"files": [{"name": n, "size": len(b)} for n, b in FILES.items()]}).encode()
            elif self.path.startswith("/api/results/files/"):
                body = FILES.get(self.path.removeprefix("/api/results/files/"))
        with self.server.lock:
            self.server.served.append(f"{host} {self.path} {HTTPStatus.OK if body is not None else 404}")
        if body is None:
            self.send_error(HTTPStatus.NOT_FOUND)
            return
        self.send_response(HTTPStatus.OK)
        # aiohttp's json() insists on a JSON content type, as the controller's FastAPI sends it.
        self.send_header("Content-Type", "text/csv" if self.path.endswith(".csv") else "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.send_error(HTTPStatus.NOT_FOUND)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: :attr:`ResultsServer.served` keeps what was asked."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    hosts: set[str]
    served: list[str]
    lock: threading.Lock


def _bind_free_address() -> _Server:
    """The results server on port 9091 (the operator dials that port) of the first loopback address free."""
    for last in range(1, 255):
        try:
            return _Server((f"127.0.1.{last}", API_PORT), _Handler)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
    raise RuntimeError(f"no free 127.0.1.N address for port {API_PORT}")


class ResultsServer:
    """The results API of every controller :meth:`finished` named, for ``cluster``'s operator, on port 9091 of the
    first free ``127.0.1.N``, while the ``with`` block runs."""

    def __init__(self, cluster: LocalCluster) -> None:
        self._cluster = cluster
        self._server = _bind_free_address()
        # An IPv4 server's address is (host, port), the host a str.
        self.address: str = str(self._server.server_address[0])
        self._server.hosts, self._server.served, self._server.lock = set(), [], threading.Lock()
        self._thread = threading.Thread(target=self._server.serve_forever, name="results-server", daemon=True)

    def __enter__(self) -> ResultsServer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    def finished(self, namespace: str, jobset: str) -> None:
        """The benchmark of ``jobset`` has finished its export: its controller's name resolves and it answers."""
        host = controller_host(namespace, jobset)
        if host in self._server.hosts:
            return
        self._server.hosts.add(host)
        resolve_for_operator(self._cluster, host, self.address)

    @property
    def served(self) -> list[str]:
        """``host path status`` of every request, in order."""
        with self._server.lock:
            return list(self._server.served)
