"""The Kueue readiness wait against a real HTTP(S) server on loopback that answers like a Kubernetes API server.

The wait reaches it as it reaches a cluster: a kubeconfig loaded by the Kubernetes client.
Time is faked: ``wait_for_kueue`` gets a recording ``sleep`` and a clock that
only advances when it sleeps, so backoff sequences are asserted literally and
no test waits for real (except two provider tests, with millisecond intervals).
"""

from __future__ import annotations

import base64
import json
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.config import incluster_config

from aiperf_kueue.providers.kubeconfig import is_kubeconfig_contents
from aiperf_kueue.providers.kueue_wait import (
    ApiServer,
    KubeconfigError,
    KueueNotReady,
    from_kubeconfig,
    wait_for_kueue,
    webhook_secret_name,
)
from aiperf_kueue.providers.readiness import KueueReadinessProvider
from tests.support import missing_input

NS = "kueue-system"
DEPLOYMENT_PATH = f"/apis/apps/v1/namespaces/{NS}/deployments/kueue-controller-manager"
SLICES_PATH = f"/apis/discovery.k8s.io/v1/namespaces/{NS}/endpointslices"
PODS_PATH = f"/api/v1/namespaces/{NS}/pods"
SELECTOR = {"control-plane": "controller-manager"}
POD_IP = "10.244.0.7"
WEBHOOK_500 = (
    'Internal error occurred: failed calling webhook "mresourceflavor.kb.io": failed to call webhook: '
    'Post "https://kueue-webhook-service.kueue-system.svc:443/mutate-kueue-x-k8s-io-v1beta2-resourceflavor'
    '?timeout=10s": dial tcp 10.96.12.3:443: connect: connection refused'
)
NO_ENDPOINTS_503 = 'no endpoints available for service "kueue-webhook-service"'
CHECK = [
    "Check:",
    "  kubectl -n kueue-system get deploy,endpointslices",
    "  kubectl -n kueue-system logs deploy/kueue-controller-manager",
]


# --------------------------------------------------------------------------- Kubernetes-shaped bodies


def status(code: int, message: str, reason: str = "InternalError") -> tuple[int, dict[str, Any]]:
    return code, {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "code": code,
        "reason": reason,
    }


def deployment(
    available: bool = True, *, generation: int = 1, observed: int = 1, updated: int = 1, total: int = 1
) -> tuple[int, dict[str, Any]]:
    cond = {"type": "Available", "status": "True" if available else "False"}
    if not available:
        cond.update(reason="MinimumReplicasUnavailable", message="Deployment does not have minimum availability.")
    st: dict[str, Any] = {
        "observedGeneration": observed,
        "replicas": total,
        "updatedReplicas": updated,
        "conditions": [cond],
    }
    if available:
        st["availableReplicas"] = st["readyReplicas"] = updated
    return 200, {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "kueue-controller-manager", "namespace": NS, "generation": generation},
        "spec": {"replicas": 1, "selector": {"matchLabels": SELECTOR}},
        "status": st,
    }


def slices(ready: Sequence[str] = (), not_ready: Sequence[str] = ()) -> tuple[int, dict[str, Any]]:
    endpoints = [{"addresses": [ip], "conditions": {"ready": True}} for ip in ready]
    endpoints += [{"addresses": [ip], "conditions": {"ready": False}} for ip in not_ready]
    items = [{"metadata": {"name": "kueue-webhook-service-x7k2p"}, "addressType": "IPv4", "endpoints": endpoints}]
    return 200, {"kind": "EndpointSliceList", "apiVersion": "discovery.k8s.io/v1", "items": items if endpoints else []}


def pods(*ips: str) -> tuple[int, dict[str, Any]]:
    items = [
        {
            "metadata": {"name": f"kueue-controller-manager-{i}", "labels": SELECTOR},
            "status": {
                "phase": "Running",
                "podIP": ip,
                "podIPs": [{"ip": ip}],
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        for i, ip in enumerate(ips)
    ]
    return 200, {"kind": "PodList", "apiVersion": "v1", "items": items}


CREATED = (201, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "x"}})
#: Close the connection without any response: a connection-level failure.
DROP = "drop"
#: ``GET /apis/kueue.x-k8s.io``: the API group and the versions the API server serves.
GROUP_DOC = (
    200,
    {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": "kueue.x-k8s.io",
        "versions": [
            {"groupVersion": "kueue.x-k8s.io/v1beta2", "version": "v1beta2"},
            {"groupVersion": "kueue.x-k8s.io/v1beta1", "version": "v1beta1"},
        ],
    },
)
#: A page of a ``limit=1`` list that holds one object.
LISTED = (
    200,
    {"kind": "WorkloadList", "apiVersion": "kueue.x-k8s.io/v1beta2", "metadata": {"continue": "x"}, "items": [{}]},
)
#: The reads of step 4 after the group (``/apis/kueue.x-k8s.io`` + each): versions and kinds in sorted order.
READS = (
    "",
    "/v1beta1",
    "/v1beta1/clusterqueues",
    "/v1beta1/workloads",
    "/v1beta2",
    "/v1beta2/clusterqueues",
    "/v1beta2/workloads",
)
CONVERSION_500 = (
    'conversion webhook for kueue.x-k8s.io/v1beta1, Kind=Workload failed: Post "https://kueue-webhook-service.'
    'kueue-system.svc:443/convert?timeout=30s": tls: failed to verify certificate: x509: certificate signed by '
    "unknown authority"
)

SECRET_PATH = f"/api/v1/namespaces/{NS}/secrets/kueue-webhook-server-cert"
CRDS_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
#: ``ca.crt`` and ``tls.key`` of Kueue's webhook Secret (base64, as Secret data is): never in a log or an error.
CA_B64 = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nkueue-ca\n-----END CERTIFICATE-----\n").decode()
KEY_B64 = base64.b64encode(b"-----BEGIN RSA PRIVATE KEY-----\nsecret\n-----END RSA PRIVATE KEY-----\n").decode()
SECRET = (
    200,
    {
        "kind": "Secret",
        "apiVersion": "v1",
        "metadata": {"name": "kueue-webhook-server-cert", "namespace": NS},
        "data": {"ca.crt": CA_B64, "tls.crt": CA_B64, "tls.key": KEY_B64},
    },
)


def crd(name: str, group: str, strategy: str, ca_bundle: str | None = None) -> dict[str, Any]:
    """A CustomResourceDefinition with the conversion ``strategy`` (and a conversion webhook with ``ca_bundle``)."""
    conversion: dict[str, Any] = {"strategy": strategy}
    if strategy == "Webhook":
        client_config: dict[str, Any] = {
            "service": {"namespace": NS, "name": "kueue-webhook-service", "path": "/convert"}
        }
        if ca_bundle is not None:
            client_config["caBundle"] = ca_bundle
        conversion["webhook"] = {"clientConfig": client_config, "conversionReviewVersions": ["v1"]}
    return {"metadata": {"name": name}, "spec": {"group": group, "conversion": conversion}}


#: The cluster's CRDs: two Kueue ones whose conversion webhook is untrusted (no bundle, an old bundle), one that
#: has the CA already, one without a conversion webhook, and another project's without a bundle.
CRDS = (
    200,
    {
        "kind": "CustomResourceDefinitionList",
        "items": [
            crd("clusterqueues.kueue.x-k8s.io", "kueue.x-k8s.io", "Webhook", base64.b64encode(b"old-ca").decode()),
            crd("jobsets.jobset.x-k8s.io", "jobset.x-k8s.io", "Webhook"),
            crd("localqueues.kueue.x-k8s.io", "kueue.x-k8s.io", "Webhook", CA_B64),
            crd("resourceflavors.kueue.x-k8s.io", "kueue.x-k8s.io", "None"),
            crd("workloads.kueue.x-k8s.io", "kueue.x-k8s.io", "Webhook"),
        ],
    },
)
PATCHED = (200, {"kind": "CustomResourceDefinition"})


def discovery(path: str) -> tuple[int, dict[str, Any]]:
    """``GET /apis/kueue.x-k8s.io/<version>``: two kinds, their status subresources, one kind that cannot be listed."""
    version = path.rsplit("/", 1)[1]
    verbs = ["create", "delete", "get", "list", "patch", "update", "watch"]
    return 200, {
        "kind": "APIResourceList",
        "groupVersion": f"kueue.x-k8s.io/{version}",
        "resources": [
            {"name": "workloads", "namespaced": True, "kind": "Workload", "verbs": verbs},
            {"name": "workloads/status", "namespaced": True, "kind": "Workload", "verbs": ["get", "patch"]},
            {"name": "clusterqueues", "namespaced": False, "kind": "ClusterQueue", "verbs": verbs},
            {"name": "clusterqueues/status", "namespaced": False, "kind": "ClusterQueue", "verbs": ["get"]},
            {"name": "reviews", "namespaced": False, "kind": "Review", "verbs": ["create"]},
        ],
    }


@dataclass(frozen=True)
class Hang:
    """Hold the request this long, then drop it: the client's timeout fires first."""

    seconds: float


# --------------------------------------------------------------------------- the fake API server


@dataclass
class Seen:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    target: str = ""
    """The request line's target: an absolute URL when the request came through a proxy."""


@dataclass
class FakeKube:
    """Scripted answers per route: consumed in order, the last one repeats."""

    url: str = ""
    scripts: dict[str, list[Any]] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, route: str, *replies: Any) -> None:
        self.scripts[route] = list(replies)

    def ready(self) -> None:
        """Everything answers ready."""
        self.script("deployment", deployment())
        self.script("endpointslices", slices([POD_IP]))
        self.script("pods", pods(POD_IP))
        self.script("dryrun", CREATED)
        self.script("group", GROUP_DOC)
        self.script("discovery", discovery)
        self.script("list", LISTED)

    def count(self, route: str) -> int:
        return sum(1 for s in self.seen if _route(s.method, s.path) == route)

    def next_reply(self, route: str) -> Any:
        with self.lock:
            script = self.scripts.get(route)
            if not script:
                return status(404, f"route {route} not scripted", "NotFound")
            return script.pop(0) if len(script) > 1 else script[0]


def _route(method: str, path: str) -> str:
    if method == "GET" and path == DEPLOYMENT_PATH:
        return "deployment"
    if method == "GET" and path == SLICES_PATH:
        return "endpointslices"
    if method == "GET" and path == PODS_PATH:
        return "pods"
    if method == "POST" and path.startswith("/apis/kueue.x-k8s.io/") and path.endswith("/resourceflavors"):
        return "dryrun"
    if method == "GET" and path.startswith("/apis/kueue.x-k8s.io"):
        return {2: "group", 3: "discovery", 4: "list"}.get(path.count("/"), "unknown")
    if method == "GET" and path == SECRET_PATH:
        return "secret"
    if method == "GET" and path == CRDS_PATH:
        return "crds"
    if method == "PATCH" and path.startswith(f"{CRDS_PATH}/"):
        return "patchcrd"
    return "unknown"


class Handler(BaseHTTPRequestHandler):
    server: Any
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        kube: FakeKube = self.server.kube
        parsed = urllib.parse.urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        with kube.lock:
            # Header names as HTTP has them: case-insensitive (the client sends ``authorization``).
            headers = {k.title(): v for k, v in self.headers.items()}
            kube.seen.append(Seen(self.command, parsed.path, parsed.query, headers, body, self.path))
        reply = kube.next_reply(_route(self.command, parsed.path))
        if callable(reply):  # an answer that depends on the path: discovery of the version asked for
            reply = reply(parsed.path)
        if isinstance(reply, Hang):
            time.sleep(reply.seconds)
            reply = DROP
        if reply == DROP:
            self.close_connection = True
            return
        code, payload = reply
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()


def _start(request: pytest.FixtureRequest, tls: ssl.SSLContext | None = None) -> FakeKube:
    kube = FakeKube()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    server.kube = kube  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

    request.addfinalizer(stop)
    kube.url = f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}"
    return kube


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    # urllib honours proxy variables; loopback must be reached directly.
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def kube(request: pytest.FixtureRequest) -> FakeKube:
    return _start(request)


class FakeTime:
    """A clock that moves only when slept on, and a sleep that records instead of sleeping."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def fake_time() -> FakeTime:
    return FakeTime()


def api_for(server: str, *, cluster: dict[str, Any] | None = None, user: dict[str, Any] | None = None) -> ApiServer:
    """The API server at ``server`` as the wait loads it: from a kubeconfig file (gone once loaded)."""
    with tempfile.TemporaryDirectory() as tmp:
        return from_kubeconfig(write_kubeconfig(Path(tmp) / "config", server, cluster=cluster, user=user))


def wait(kube: FakeKube, t: FakeTime, **kwargs: Any) -> Any:
    kwargs.setdefault("attempts", 6)
    kwargs.setdefault("interval", 0.5)
    kwargs.setdefault("max_interval", 4.0)
    kwargs.setdefault("deadline", None)
    kwargs.setdefault("timeout_per_request", 5.0)
    return wait_for_kueue(api_for(kube.url, user={"token": "t0ken"}), sleep=t.sleep, clock=t.clock, **kwargs)


# --------------------------------------------------------------------------- (a) transient failures, then ready


def test_retries_each_step_through_transient_failures(kube: FakeKube, fake_time: FakeTime) -> None:
    kube.script(
        "deployment",
        status(503, "the server is currently unable to handle the request", "ServiceUnavailable"),
        status(404, 'deployments.apps "kueue-controller-manager" not found', "NotFound"),
        deployment(available=False),
        DROP,
        deployment(),
    )
    kube.script(
        "endpointslices",
        status(502, "bad gateway"),
        slices(not_ready=[POD_IP]),
        slices(ready=["10.244.0.3"]),  # a replaced pod's endpoint, not yet removed
        slices(ready=[POD_IP]),
    )
    kube.script("pods", pods(POD_IP))
    kube.script(
        "dryrun",
        status(500, WEBHOOK_500),
        status(503, NO_ENDPOINTS_503, "ServiceUnavailable"),
        DROP,
        CREATED,
    )
    kube.script("group", GROUP_DOC)
    kube.script("discovery", discovery)
    # Right after an upgrade: the CRDs are re-applied, the new Kueue has not re-injected its CA yet.
    kube.script("list", status(500, CONVERSION_500), LISTED)

    report = wait(kube, fake_time)

    assert report.attempts == {"deployment": 5, "endpoints": 4, "dryRun": 4, "reads": 2}
    # Backoff restarts for every step; no sleep after a success.
    assert fake_time.sleeps == [0.5, 1.0, 2.0, 4.0, 0.5, 1.0, 2.0, 0.5, 1.0, 2.0, 0.5]
    assert [s.seconds for s in report.steps] == [7.5, 3.5, 3.5, 0.5]
    assert report.seconds == 15.0
    # Pods are only listed once some endpoint is ready (attempts 3 and 4).
    assert {r: kube.count(r) for r in ("deployment", "endpointslices", "pods", "dryrun")} == {
        "deployment": 5,
        "endpointslices": 4,
        "pods": 2,
        "dryrun": 4,
    }
    # Step 4: the group, one version's discovery and a failed list; then the group, both versions and four lists.
    assert len(kube.seen) == 15 + 3 + 7


def test_ready_at_once_makes_one_attempt_per_step_and_never_sleeps(kube: FakeKube, fake_time: FakeTime) -> None:
    kube.ready()
    report = wait(kube, fake_time)
    assert report.attempts == {"deployment": 1, "endpoints": 1, "dryRun": 1, "reads": 1}
    assert fake_time.sleeps == []
    assert [_route(s.method, s.path) for s in kube.seen] == [
        "deployment", "endpointslices", "pods", "dryrun",
        "group", "discovery", "list", "list", "discovery", "list", "list",
    ]  # fmt: skip


def test_rollout_in_progress_is_not_ready(kube: FakeKube, fake_time: FakeTime) -> None:
    kube.ready()
    kube.script(
        "deployment",
        deployment(generation=2, observed=1),  # Available still describes the old pods
        deployment(updated=1, total=2),  # the old pod is still running
        deployment(),
    )
    assert wait(kube, fake_time).attempts["deployment"] == 3


def test_a_request_timeout_is_retried(kube: FakeKube, fake_time: FakeTime) -> None:
    kube.ready()
    kube.script("deployment", Hang(0.5), deployment())
    report = wait(kube, fake_time, timeout_per_request=0.1)
    assert report.attempts["deployment"] == 2
    assert fake_time.sleeps == [0.5]


def test_pod_ip_match_can_be_switched_off(kube: FakeKube, fake_time: FakeTime) -> None:
    kube.ready()
    kube.script("pods", status(403, "pods is forbidden", "Forbidden"))
    assert wait(kube, fake_time, match_pod_ips=False).attempts == {
        "deployment": 1,
        "endpoints": 1,
        "dryRun": 1,
        "reads": 1,
    }
    assert kube.count("pods") == 0


def test_409_on_the_dry_run_means_the_webhook_answered(kube: FakeKube, fake_time: FakeTime) -> None:
    kube.ready()
    kube.script("dryrun", status(409, "already exists", "AlreadyExists"))
    assert wait(kube, fake_time).attempts["dryRun"] == 1


# --------------------------------------------------------------------------- (b) never ready: bounded, explained


def test_gives_up_on_the_dry_run_after_exactly_the_attempt_limit(kube: FakeKube, fake_time: FakeTime) -> None:
    kube.ready()
    kube.script("dryrun", status(500, WEBHOOK_500))

    with pytest.raises(KueueNotReady) as caught:
        wait(kube, fake_time, attempts=4)

    err = caught.value
    assert str(err).splitlines() == [
        "Kueue is not ready: step 3/4 (dry-run create of a kueue.x-k8s.io/v1beta2 ResourceFlavor) "
        "gave up after 4 attempts over 3.5s (attempt limit reached).",
        f"Last result: HTTP 500: {WEBHOOK_500}",
        *CHECK,
    ]
    assert (err.step, err.attempts, err.status, err.retryable) == ("dryRun", 4, 500, True)
    assert kube.count("dryrun") == 4
    assert fake_time.sleeps == [0.5, 1.0, 2.0]


def test_gives_up_on_an_unavailable_deployment(kube: FakeKube, fake_time: FakeTime) -> None:
    kube.script("deployment", deployment(available=False))
    with pytest.raises(KueueNotReady) as caught:
        wait(kube, fake_time, attempts=3)
    assert str(caught.value).splitlines() == [
        "Kueue is not ready: step 1/4 (deployment kueue-system/kueue-controller-manager) "
        "gave up after 3 attempts over 1.5s (attempt limit reached).",
        "Last result: HTTP 200: Available=False "
        "(MinimumReplicasUnavailable: Deployment does not have minimum availability.)",
        *CHECK,
    ]
    assert len(kube.seen) == 3


def test_gives_up_on_endpoints_that_never_become_ready(kube: FakeKube, fake_time: FakeTime) -> None:
    kube.ready()
    kube.script("endpointslices", slices(not_ready=[POD_IP]))
    with pytest.raises(KueueNotReady) as caught:
        wait(kube, fake_time, attempts=2)
    assert str(caught.value).splitlines()[:2] == [
        "Kueue is not ready: step 2/4 (webhook endpoints of service kueue-system/kueue-webhook-service) "
        "gave up after 2 attempts over 0.5s (attempt limit reached).",
        "Last result: HTTP 200: EndpointSlices of service kueue-webhook-service: 1 endpoint(s), none ready",
    ]


def test_missing_deployment_hints_at_the_install(kube: FakeKube, fake_time: FakeTime) -> None:
    kube.script("deployment", status(404, 'deployments.apps "kueue-controller-manager" not found', "NotFound"))
    with pytest.raises(KueueNotReady) as caught:
        wait(kube, fake_time, attempts=2)
    assert "  is Kueue installed in namespace kueue-system? helm -n kueue-system list" in str(caught.value)
    assert kube.count("deployment") == 2


def test_connection_refused_is_retried_then_reported(request: pytest.FixtureRequest, fake_time: FakeTime) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(KueueNotReady) as caught:
        wait_for_kueue(
            api_for(f"http://127.0.0.1:{port}"),
            attempts=3,
            interval=0.5,
            sleep=fake_time.sleep,
            clock=fake_time.clock,
        )
    lines = str(caught.value).splitlines()
    assert lines[0] == (
        "Kueue is not ready: step 1/4 (deployment kueue-system/kueue-controller-manager) "
        "gave up after 3 attempts over 1.5s (attempt limit reached)."
    )
    assert lines[1].startswith("Last result: connection failed: ")
    assert "connection refused" in lines[1].lower()
    assert fake_time.sleeps == [0.5, 1.0]


def test_deadline_cuts_the_last_sleep_short_and_stops(kube: FakeKube, fake_time: FakeTime) -> None:
    kube.ready()
    kube.script("endpointslices", slices())
    with pytest.raises(KueueNotReady) as caught:
        wait(kube, fake_time, attempts=100, interval=1.0, max_interval=10.0, deadline=5.0)
    assert fake_time.sleeps == [1.0, 2.0, 2.0]
    assert kube.count("endpointslices") == 4
    assert str(caught.value).splitlines()[0] == (
        "Kueue is not ready: step 2/4 (webhook endpoints of service kueue-system/kueue-webhook-service) "
        "gave up after 4 attempts over 5.0s (deadline of 5s passed)."
    )


# --------------------------------------------------------------------------- (c) no busy loop


def test_every_retry_sleeps_with_capped_exponential_backoff(kube: FakeKube, fake_time: FakeTime) -> None:
    kube.script("deployment", status(502, "bad gateway"))
    with pytest.raises(KueueNotReady):
        wait(kube, fake_time, attempts=8, interval=0.25, max_interval=1.0)
    assert fake_time.sleeps == [0.25, 0.5, 1.0, 1.0, 1.0, 1.0, 1.0]
    assert all(s > 0 for s in fake_time.sleeps)
    assert len(kube.seen) == 8 == len(fake_time.sleeps) + 1


@pytest.mark.parametrize(
    "kwargs",
    [{"interval": 0.0}, {"interval": -1.0}, {"attempts": 0}, {"interval": 2.0, "max_interval": 1.0}],
)
def test_settings_that_could_spin_or_never_try_are_refused(
    kube: FakeKube, fake_time: FakeTime, kwargs: dict[str, Any]
) -> None:
    with pytest.raises(ValueError):
        wait(kube, fake_time, **kwargs)
    assert kube.seen == []


# --------------------------------------------------------------------------- (d) fail fast


def test_403_fails_fast_after_one_request(kube: FakeKube, fake_time: FakeTime) -> None:
    forbidden = (
        'deployments.apps "kueue-controller-manager" is forbidden: User "bench" cannot get resource '
        '"deployments" in API group "apps" in the namespace "kueue-system"'
    )
    kube.script("deployment", status(403, forbidden, "Forbidden"))
    with pytest.raises(KueueNotReady) as caught:
        wait(kube, fake_time)
    assert str(caught.value).splitlines() == [
        "Kueue readiness check failed: step 1/4 (deployment kueue-system/kueue-controller-manager) "
        "got an error that retrying won't fix, on attempt 1 after 0.0s.",
        f"Last result: HTTP 403: {forbidden}",
        "Check:",
        "  the credentials are rejected or lack RBAC: kubectl auth can-i get deployments -n kueue-system",
        *CHECK[1:],
    ]
    assert caught.value.retryable is False
    assert len(kube.seen) == 1
    assert fake_time.sleeps == []


@pytest.mark.parametrize("code", [400, 422])
def test_a_rejected_dry_run_body_fails_fast(kube: FakeKube, fake_time: FakeTime, code: int) -> None:
    kube.ready()
    kube.script("dryrun", status(code, 'ResourceFlavor.kueue.x-k8s.io "" is invalid', "Invalid"))
    with pytest.raises(KueueNotReady) as caught:
        wait(kube, fake_time)
    assert caught.value.step == "dryRun"
    assert f"Last result: HTTP {code}: " in str(caught.value)
    assert kube.count("dryrun") == 1
    assert fake_time.sleeps == []


def test_401_fails_fast(kube: FakeKube, fake_time: FakeTime) -> None:
    kube.ready()
    kube.script("endpointslices", status(401, "Unauthorized", "Unauthorized"))
    with pytest.raises(KueueNotReady) as caught:
        wait(kube, fake_time)
    assert (caught.value.step, caught.value.attempts) == ("endpoints", 1)
    assert kube.count("endpointslices") == 1


# --------------------------------------------------------------------------- (d) reads through the conversion webhook


def test_a_conversion_webhook_not_trusted_yet_is_waited_for(kube: FakeKube, fake_time: FakeTime) -> None:
    kube.ready()
    kube.script("list", LISTED, status(500, CONVERSION_500), status(500, CONVERSION_500), LISTED)
    report = wait(kube, fake_time)
    assert report.attempts == {"deployment": 1, "endpoints": 1, "dryRun": 1, "reads": 3}
    assert fake_time.sleeps == [0.5, 1.0]
    # Each attempt starts over from the group: a failed list is retried with everything it depends on.
    assert kube.count("group") == 3
    assert kube.count("list") == 2 + 1 + 4
    # Two untrusted reads are Kueue injecting its CA a moment late: the gate leaves its Secret alone.
    assert kube.count("secret") == 0


def test_a_conversion_webhook_never_trusted_is_explained(kube: FakeKube, fake_time: FakeTime) -> None:
    kube.ready()
    kube.script("list", status(500, CONVERSION_500))
    with pytest.raises(KueueNotReady) as err:
        wait(kube, fake_time, attempts=2)
    assert str(err.value).splitlines() == [
        "Kueue is not ready: step 4/4 (list of every kueue.x-k8s.io kind at every served version) gave up after "
        "2 attempts over 0.5s (attempt limit reached).",
        f"Last result: HTTP 500: list clusterqueues.kueue.x-k8s.io/v1beta1: {CONVERSION_500}",
        "Check:",
        "  is the conversion webhook trusted? kubectl get crd workloads.kueue.x-k8s.io -o "
        "jsonpath='{.spec.conversion.webhook.clientConfig.caBundle}' | head -c 20 (empty: not injected yet)",
        *CHECK[1:],
    ]


def test_after_three_untrusted_reads_the_gate_writes_kueues_ca_into_its_crds(
    kube: FakeKube, fake_time: FakeTime
) -> None:
    kube.ready()
    kube.script("list", *[status(500, CONVERSION_500)] * 3, LISTED)
    kube.script("secret", SECRET)
    kube.script("crds", CRDS)
    kube.script("patchcrd", PATCHED)
    lines: list[str] = []
    report = wait(kube, fake_time, log=lines.append)
    # The third attempt writes the CA and reads again, and the reads pass.
    assert report.attempts == {"deployment": 1, "endpoints": 1, "dryRun": 1, "reads": 3}
    assert fake_time.sleeps == [0.5, 1.0]
    patches = [s for s in kube.seen if s.method == "PATCH"]
    assert [(s.path, s.query, s.headers["Content-Type"]) for s in patches] == [
        (f"{CRDS_PATH}/clusterqueues.kueue.x-k8s.io", "fieldManager=aiperf-kueue-readiness",
         "application/merge-patch+json"),
        (f"{CRDS_PATH}/workloads.kueue.x-k8s.io", "fieldManager=aiperf-kueue-readiness",
         "application/merge-patch+json"),
    ]  # fmt: skip
    assert [s.body for s in patches] == [
        {"spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": CA_B64}}}}}
    ] * 2
    assert (kube.count("secret"), kube.count("crds")) == (1, 1)
    assert lines[-1] == (
        "kueue reads: conversion webhook untrusted 3 times; wrote the CA of Secret "
        "kueue-system/kueue-webhook-server-cert "
        "into clusterqueues.kueue.x-k8s.io, workloads.kueue.x-k8s.io"
    )
    assert not [line for line in lines if CA_B64 in line or KEY_B64 in line or "kueue-ca" in line]


def test_without_permission_to_read_kueues_secret_the_gate_only_waits(kube: FakeKube, fake_time: FakeTime) -> None:
    kube.ready()
    kube.script("list", *[status(500, CONVERSION_500)] * 4, LISTED)
    kube.script(
        "secret", status(403, 'secrets "kueue-webhook-server-cert" is forbidden: User "ci" cannot get', "Forbidden")
    )
    lines: list[str] = []
    report = wait(kube, fake_time, log=lines.append)
    assert report.attempts == {"deployment": 1, "endpoints": 1, "dryRun": 1, "reads": 5}
    assert fake_time.sleeps == [0.5, 1.0, 2.0, 4.0]
    # Asked on the third and the fourth untrusted read; nothing listed or written.
    assert (kube.count("secret"), kube.count("crds"), kube.count("patchcrd")) == (2, 0, 0)
    repairs = [line for line in lines if "Secret" in line]
    assert repairs == [
        f"kueue reads: conversion webhook untrusted {n} times; cannot read Secret "
        "kueue-system/kueue-webhook-server-cert "
        "(HTTP 403): waiting for Kueue to inject its CA"
        for n in (3, 4)
    ]


def test_a_crd_the_gate_cannot_patch_leaves_it_waiting_and_the_ca_out_of_the_error(
    kube: FakeKube, fake_time: FakeTime
) -> None:
    kube.ready()
    kube.script("list", status(500, CONVERSION_500))
    kube.script("secret", SECRET)
    kube.script("crds", CRDS)
    kube.script("patchcrd", status(403, "customresourcedefinitions is forbidden", "Forbidden"))
    lines: list[str] = []
    with pytest.raises(KueueNotReady) as err:
        wait(kube, fake_time, attempts=3, log=lines.append)
    assert (err.value.step, err.value.attempts) == ("reads", 3)
    assert lines[-1] == (
        "kueue reads: conversion webhook untrusted 3 times; wrote the CA of Secret "
        "kueue-system/kueue-webhook-server-cert "
        "into no CRD; could not patch clusterqueues.kueue.x-k8s.io (HTTP 403), workloads.kueue.x-k8s.io (HTTP 403)"
    )
    # No second read after a write that did not happen.
    assert kube.count("list") == 3
    assert CA_B64 not in str(err.value) and KEY_B64 not in str(err.value)
    assert not [line for line in lines if CA_B64 in line or KEY_B64 in line]


def test_crds_that_have_kueues_ca_are_not_written_again(kube: FakeKube, fake_time: FakeTime) -> None:
    kube.ready()
    kube.script("list", *[status(500, CONVERSION_500)] * 3, LISTED)
    kube.script("secret", SECRET)
    kube.script("crds", (200, {"items": [crd("workloads.kueue.x-k8s.io", "kueue.x-k8s.io", "Webhook", CA_B64)]}))
    lines: list[str] = []
    report = wait(kube, fake_time, log=lines.append)
    assert report.attempts["reads"] == 4
    assert kube.count("patchcrd") == 0
    assert lines[2] == (
        "kueue reads: conversion webhook untrusted 3 times; every Kueue CRD's conversion webhook has the CA of Secret "
        "kueue-system/kueue-webhook-server-cert: waiting for Kueue to inject its CA"
    )


@pytest.mark.parametrize(
    ("service", "secret"),
    [
        ("kueue-webhook-service", "kueue-webhook-server-cert"),
        ("team-kueue-webhook-service", "team-kueue-webhook-server-cert"),
    ],
)
def test_kueues_secret_is_named_beside_its_webhook_service(service: str, secret: str) -> None:
    assert webhook_secret_name(service) == secret


def test_a_forbidden_list_fails_fast_naming_the_permission(kube: FakeKube, fake_time: FakeTime) -> None:
    kube.ready()
    kube.script(
        "list", LISTED, status(403, 'workloads.kueue.x-k8s.io is forbidden: User "ci" cannot list', "Forbidden")
    )
    with pytest.raises(KueueNotReady) as err:
        wait(kube, fake_time)
    lines = str(err.value).splitlines()
    assert lines[0] == (
        "Kueue readiness check failed: step 4/4 (list of every kueue.x-k8s.io kind at every served version) got an "
        "error that retrying won't fix, on attempt 1 after 0.0s."
    )
    assert lines[1] == (
        "Last result: HTTP 403: list workloads.kueue.x-k8s.io/v1beta1: workloads.kueue.x-k8s.io is forbidden: User "
        '"ci" cannot list'
    )
    assert lines[3] == (
        "  the credentials are rejected or lack RBAC: kubectl auth can-i list workloads.kueue.x-k8s.io --all-namespaces"
    )
    assert fake_time.sleeps == []


def test_an_old_kueue_serving_one_version_is_read_at_that_version(kube: FakeKube, fake_time: FakeTime) -> None:
    kube.ready()
    kube.script(
        "group", (200, {**GROUP_DOC[1], "versions": [{"groupVersion": "kueue.x-k8s.io/v1beta1", "version": "v1beta1"}]})
    )
    wait(kube, fake_time, api_version="v1beta1")
    assert [s.path for s in kube.seen if _route(s.method, s.path) in ("group", "discovery", "list")] == [
        "/apis/kueue.x-k8s.io",
        "/apis/kueue.x-k8s.io/v1beta1",
        "/apis/kueue.x-k8s.io/v1beta1/clusterqueues",
        "/apis/kueue.x-k8s.io/v1beta1/workloads",
    ]


# --------------------------------------------------------------------------- (e) what is sent


@pytest.mark.parametrize("api_version", ["v1beta2", "v1beta1", "kueue.x-k8s.io/v1beta2"])
def test_requests_are_the_kubernetes_ones(kube: FakeKube, fake_time: FakeTime, api_version: str) -> None:
    kube.ready()
    wait(kube, fake_time, api_version=api_version)
    version = api_version.removeprefix("kueue.x-k8s.io/")

    get_slices = next(s for s in kube.seen if s.path == SLICES_PATH)
    assert urllib.parse.parse_qs(get_slices.query) == {
        "labelSelector": ["kubernetes.io/service-name=kueue-webhook-service"]
    }
    get_pods = next(s for s in kube.seen if s.path == PODS_PATH)
    assert urllib.parse.parse_qs(get_pods.query) == {"labelSelector": ["control-plane=controller-manager"]}

    reads = [s for s in kube.seen if _route(s.method, s.path) in ("group", "discovery", "list")]
    assert [s.path.removeprefix("/apis/kueue.x-k8s.io") for s in reads] == list(READS)
    assert [s.query for s in reads] == ["", "", "limit=1", "limit=1", "", "limit=1", "limit=1"]

    (post,) = [s for s in kube.seen if s.method == "POST"]
    assert post.path == f"/apis/kueue.x-k8s.io/{version}/resourceflavors"
    assert post.query == "dryRun=All"
    assert post.body == {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "ResourceFlavor",
        "metadata": {"generateName": "aiperf-kueue-readiness-"},
        "spec": {},
    }
    assert post.headers["Content-Type"] == "application/json"
    assert all(s.headers["Authorization"] == "Bearer t0ken" for s in kube.seen)
    assert all(s.headers["Accept"] == "application/json" for s in kube.seen)


# --------------------------------------------------------------------------- kubeconfig and in-cluster


def write_kubeconfig(
    path: Path,
    server: str,
    *,
    cluster: dict[str, Any] | None = None,
    user: dict[str, Any] | None = None,
    extra_context: bool = False,
) -> Path:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "bench",
        "clusters": [{"name": "gpu", "cluster": {"server": server, **(cluster or {})}}],
        "users": [{"name": "bench", "user": user or {}}],
        "contexts": [{"name": "bench", "context": {"cluster": "gpu", "user": "bench", "namespace": "default"}}],
    }
    if extra_context:
        doc["clusters"].append({"name": "other", "cluster": {"server": "https://other.invalid:6443"}})
        doc["users"].append({"name": "other", "user": {"token": "other-token"}})
        doc["contexts"].append({"name": "other", "context": {"cluster": "other", "user": "other"}})
    path.write_text(yaml.safe_dump(doc))
    return path


def test_kubeconfig_with_token_and_insecure(kube: FakeKube, fake_time: FakeTime, tmp_path: Path) -> None:
    path = write_kubeconfig(
        tmp_path / "config", kube.url, cluster={"insecure-skip-tls-verify": True}, user={"token": "from-kubeconfig"}
    )
    api = from_kubeconfig(path)
    assert (api.server, api.token, api.configuration.verify_ssl) == (kube.url, "from-kubeconfig", False)
    assert "from-kubeconfig" not in repr(api)

    kube.ready()
    wait_for_kueue(api, sleep=fake_time.sleep, clock=fake_time.clock)
    assert {s.headers["Authorization"] for s in kube.seen} == {"Bearer from-kubeconfig"}


def test_kubeconfig_context_choice_and_kubeconfig_env_merge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = write_kubeconfig(tmp_path / "a", "https://gpu.invalid:6443", user={"token": "a"}, extra_context=True)
    assert ApiServer.from_kubeconfig(first).server == "https://gpu.invalid:6443"
    assert ApiServer.from_kubeconfig(first, context="other").token == "other-token"
    with pytest.raises(KubeconfigError, match=r"context 'nope' not found \(contexts: bench, other\)"):
        ApiServer.from_kubeconfig(first, context="nope")

    # Merged like kubectl: the first file to name an entry wins; missing files are skipped.
    second = write_kubeconfig(tmp_path / "b", "https://shadowed.invalid:6443", user={"token": "b"})
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'missing'}:{first}:{second}")
    assert (ApiServer.from_kubeconfig().server, ApiServer.from_kubeconfig().token) == ("https://gpu.invalid:6443", "a")


@pytest.mark.parametrize(
    ("user", "match"),
    [
        ({"client-certificate-data": "not base64!"}, "cannot use this kubeconfig: "),
        ({"client-certificate": "nowhere.crt"}, "cannot use this kubeconfig: .*nowhere.crt"),
        (
            {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "no-plug", "installHint": "get it"}},
            r"user 'bench': exec plugin 'no-plug' gave no credentials \(its error is logged above\)\. get it",
        ),
    ],
)
def test_unusable_kubeconfig_users_are_explained(tmp_path: Path, user: dict[str, Any], match: str) -> None:
    path = write_kubeconfig(tmp_path / "config", "https://gpu.invalid:6443", user=user)
    with pytest.raises(KubeconfigError, match=f"^{tmp_path / 'config'}: .*{match}"):
        from_kubeconfig(path)


def test_basic_auth_users_authenticate(kube: FakeKube, fake_time: FakeTime, tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "config", kube.url, user={"username": "admin", "password": "pw"})
    kube.ready()
    wait_for_kueue(from_kubeconfig(path), sleep=fake_time.sleep, clock=fake_time.clock)
    assert {s.headers["Authorization"] for s in kube.seen} == {"Basic " + base64.b64encode(b"admin:pw").decode()}


def test_missing_kubeconfig(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match="kubeconfig not found"):
        from_kubeconfig(tmp_path / "absent")


def test_exec_credential_plugin(kube: FakeKube, fake_time: FakeTime, tmp_path: Path) -> None:
    plugin = tmp_path / "plugin.py"
    plugin.write_text(
        "import json, os\n"
        "info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
        "print(json.dumps({'apiVersion': info['apiVersion'], 'kind': 'ExecCredential',\n"
        "                  'status': {'token': os.environ['PREFIX'] + info['kind']}}))\n"
    )
    exec_spec = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": sys.executable,
        "args": [str(plugin)],
        "env": [{"name": "PREFIX", "value": "exec-"}],
        "interactiveMode": "Never",
    }
    api = from_kubeconfig(write_kubeconfig(tmp_path / "config", kube.url, user={"exec": exec_spec}))
    assert api.token == "exec-ExecCredential"


def test_in_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "ca.crt").write_text("PEM")
    # The service account's files where the client's load_incluster_config reads them.
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(tmp_path / "token"))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(tmp_path / "ca.crt"))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    api = ApiServer.in_cluster()
    assert (api.server, api.token, api.configuration.ssl_ca_cert) == (
        "https://10.96.0.1:443",
        "sa-token",
        str(tmp_path / "ca.crt"),
    )
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    assert ApiServer.in_cluster().server == "https://[fd00::1]:443"
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT")
    with pytest.raises(KubeconfigError, match=r"^in-cluster configuration: Service host/port is not set"):
        ApiServer.in_cluster()


# --------------------------------------------------------------------------- TLS: CA data, client certificates


@dataclass(frozen=True)
class Pki:
    dir: Path
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    named_cert: Path
    """A server certificate for the name ``kube.internal`` only (no IP address)."""
    named_key: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    if shutil.which("openssl") is None:
        missing_input("openssl CLI not available to make test certificates")
    d = tmp_path_factory.mktemp("pki")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl(
        "req",
        "-x509",
        *ec,
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=test-ca",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
        cwd=d,
    )
    for name, ext in (
        ("server", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"),
        ("client", "extendedKeyUsage=clientAuth\n"),
        ("named", "subjectAltName=DNS:kube.internal\nextendedKeyUsage=serverAuth\n"),
    ):
        (d / f"{name}.ext").write_text(f"basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n{ext}")
        _openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=d)
        _openssl(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            f"{name}.crt",
            "-days",
            "2",
            "-extfile",
            f"{name}.ext",
            cwd=d,
        )
    return Pki(
        d, d / "ca.crt", d / "server.crt", d / "server.key", d / "client.crt", d / "client.key", d / "named.crt",
        d / "named.key",
    )  # fmt: skip


def _tls_kube(
    request: pytest.FixtureRequest, pki: Pki, *, require_client_cert: bool = False, named: bool = False
) -> FakeKube:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(*((pki.named_cert, pki.named_key) if named else (pki.server_cert, pki.server_key)))
    if require_client_cert:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(pki.ca)
    kube = _start(request, ctx)
    kube.ready()
    return kube


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def test_kubeconfig_ca_data_verifies_the_server(
    request: pytest.FixtureRequest, pki: Pki, fake_time: FakeTime, tmp_path: Path
) -> None:
    kube = _tls_kube(request, pki)
    path = write_kubeconfig(
        tmp_path / "config", kube.url, cluster={"certificate-authority-data": b64(pki.ca)}, user={"token": "tls"}
    )
    api = from_kubeconfig(path)
    ca = api.configuration.ssl_ca_cert
    assert ca is not None
    assert Path(ca).read_text() == pki.ca.read_text()
    report = wait_for_kueue(api, sleep=fake_time.sleep, clock=fake_time.clock)
    assert report.attempts == {"deployment": 1, "endpoints": 1, "dryRun": 1, "reads": 1}


def test_kubeconfig_ca_file_relative_to_the_kubeconfig(
    request: pytest.FixtureRequest, pki: Pki, fake_time: FakeTime
) -> None:
    kube = _tls_kube(request, pki)
    path = write_kubeconfig(pki.dir / "kubeconfig-relative", kube.url, cluster={"certificate-authority": "ca.crt"})
    ca = from_kubeconfig(path).configuration.ssl_ca_cert
    assert ca is not None
    assert Path(ca).resolve() == pki.ca
    wait_for_kueue(from_kubeconfig(path), sleep=fake_time.sleep, clock=fake_time.clock)


def test_wrong_ca_fails_fast_and_insecure_skips_verification(
    request: pytest.FixtureRequest, pki: Pki, fake_time: FakeTime, tmp_path: Path
) -> None:
    kube = _tls_kube(request, pki)
    with pytest.raises(KueueNotReady) as caught:
        # The server's own certificate is no CA for its chain.
        wait_for_kueue(
            api_for(kube.url, cluster={"certificate-authority-data": b64(pki.client_cert)}),
            sleep=fake_time.sleep,
            clock=fake_time.clock,
        )
    assert caught.value.retryable is False
    assert caught.value.attempts == 1
    assert "Last result: TLS verification of the API server failed" in str(caught.value)
    assert "  the kubeconfig's certificate-authority(-data) does not match the API server" in str(caught.value)
    assert fake_time.sleeps == []

    path = write_kubeconfig(tmp_path / "config", kube.url, cluster={"insecure-skip-tls-verify": True})
    wait_for_kueue(from_kubeconfig(path), sleep=fake_time.sleep, clock=fake_time.clock)


def test_kubeconfig_client_certificate_data(
    request: pytest.FixtureRequest, pki: Pki, fake_time: FakeTime, tmp_path: Path
) -> None:
    kube = _tls_kube(request, pki, require_client_cert=True)
    user = {"client-certificate-data": b64(pki.client_cert), "client-key-data": b64(pki.client_key)}
    path = write_kubeconfig(
        tmp_path / "config", kube.url, cluster={"certificate-authority-data": b64(pki.ca)}, user=user
    )
    report = wait_for_kueue(from_kubeconfig(path), sleep=fake_time.sleep, clock=fake_time.clock)
    assert report.attempts == {"deployment": 1, "endpoints": 1, "dryRun": 1, "reads": 1}
    assert "Authorization" not in kube.seen[0].headers


def test_tls_server_name_verifies_the_certificate_under_that_name(
    request: pytest.FixtureRequest, pki: Pki, fake_time: FakeTime
) -> None:
    # The API server is reached by address, its certificate names it kube.internal (a private
    # cluster behind a load balancer): kubeconfig's tls-server-name says which name to verify.
    kube = _tls_kube(request, pki, named=True)
    ca = {"certificate-authority-data": b64(pki.ca)}
    report = wait_for_kueue(
        api_for(kube.url, cluster={**ca, "tls-server-name": "kube.internal"}),
        sleep=fake_time.sleep,
        clock=fake_time.clock,
    )
    assert report.attempts == {"deployment": 1, "endpoints": 1, "dryRun": 1, "reads": 1}

    with pytest.raises(KueueNotReady) as caught:
        wait_for_kueue(api_for(kube.url, cluster=ca), sleep=fake_time.sleep, clock=fake_time.clock)
    assert (caught.value.retryable, caught.value.attempts) == (False, 1)
    assert "Last result: TLS verification of the API server failed" in str(caught.value)


def test_proxy_url_carries_every_request(kube: FakeKube, fake_time: FakeTime) -> None:
    # The cluster's name resolves nowhere here: only the proxy (the fake server, which answers
    # the absolute-URL requests a proxy receives) can reach it.
    kube.ready()
    api = api_for("http://kube.invalid:6443", cluster={"proxy-url": kube.url}, user={"token": "via-proxy"})
    wait_for_kueue(api, sleep=fake_time.sleep, clock=fake_time.clock)
    assert [s.target.split("?")[0] for s in kube.seen] == [
        f"http://kube.invalid:6443{path}" for path in (DEPLOYMENT_PATH, SLICES_PATH, PODS_PATH)
    ] + ["http://kube.invalid:6443/apis/kueue.x-k8s.io/v1beta2/resourceflavors"] + [
        f"http://kube.invalid:6443/apis/kueue.x-k8s.io{path}" for path in READS
    ]
    assert {s.headers["Authorization"] for s in kube.seen} == {"Bearer via-proxy"}


# --------------------------------------------------------------------------- the Pulumi dynamic provider


def provider_inputs(kubeconfig: Path, **overrides: Any) -> dict[str, Any]:
    inputs: dict[str, Any] = {
        "namespace": NS,
        "deployment": "kueue-controller-manager",
        "webhookService": "kueue-webhook-service",
        "apiVersion": "v1beta2",
        "kueueVersion": "0.19.2",
        "kubeconfig": str(kubeconfig),
        "context": None,
        # The engine hands numbers to providers as floats.
        "attempts": 3.0,
        "intervalSeconds": 0.001,
        "timeoutSeconds": 30.0,
        "__provider": "serialized-provider",
    }
    inputs.update(overrides)
    return inputs


def test_provider_create_waits_end_to_end(kube: FakeKube, tmp_path: Path) -> None:
    kube.ready()
    kube.script("deployment", status(503, "unavailable", "ServiceUnavailable"), deployment())
    kube.script("dryrun", status(500, WEBHOOK_500), CREATED)
    config = write_kubeconfig(tmp_path / "config", kube.url, user={"token": "pulumi"})

    result = KueueReadinessProvider().create(provider_inputs(config))

    assert result.id == "kueue-system/kueue-controller-manager"
    assert result.outs is not None
    assert result.outs["ready"] is True
    assert result.outs["attemptsPerStep"] == {"deployment": 2, "endpoints": 1, "dryRun": 2, "reads": 1}
    assert result.outs["kueueVersion"] == "0.19.2"
    assert "__provider" not in result.outs
    assert kube.count("dryrun") == 2
    assert {s.headers["Authorization"] for s in kube.seen} == {"Bearer pulumi"}


def test_provider_create_fails_with_the_readable_message(kube: FakeKube, tmp_path: Path) -> None:
    kube.ready()
    kube.script("endpointslices", slices())
    config = write_kubeconfig(tmp_path / "config", kube.url)
    with pytest.raises(KueueNotReady, match=r"step 2/4 .* gave up after 2 attempts"):
        KueueReadinessProvider().create(provider_inputs(config, attempts=2.0))
    assert kube.count("endpointslices") == 2


def test_provider_diff_replaces_only_when_the_gated_kueue_changes(tmp_path: Path) -> None:
    provider = KueueReadinessProvider()
    olds = {**provider_inputs(tmp_path), "ready": True, "attemptsPerStep": {"deployment": 1}}

    upgrade = provider.diff("id", olds, provider_inputs(tmp_path, kueueVersion="0.19.3"))
    assert (upgrade.changes, upgrade.replaces) == (True, ["kueueVersion"])
    moved = provider.diff("id", olds, provider_inputs(tmp_path, namespace="kueue"))
    assert moved.replaces == ["namespace"]

    tuned = provider.diff("id", olds, provider_inputs(tmp_path, attempts=10.0))
    assert (tuned.changes, tuned.replaces) == (True, [])
    same = provider.diff("id", olds, provider_inputs(tmp_path, __provider="re-pickled"))
    assert (same.changes, same.replaces) == (False, [])

    updated = provider.update("id", olds, provider_inputs(tmp_path, attempts=10.0))
    assert updated.outs is not None
    assert (updated.outs["attempts"], updated.outs["ready"]) == (10.0, True)
    provider.delete("id", olds)  # deleting leaves nothing to clean up: it must not raise


def test_provider_check_rejects_what_would_spin_or_never_try(tmp_path: Path) -> None:
    provider = KueueReadinessProvider()
    assert provider.check({}, provider_inputs(tmp_path)).failures == []
    bad = provider.check({}, provider_inputs(tmp_path, attempts=0.0, intervalSeconds=0.0, kueueVersion=""))
    assert sorted(f.property for f in bad.failures) == ["attempts", "intervalSeconds", "kueueVersion"]


def test_provider_survives_pulumis_pickling() -> None:
    try:
        import dill
    except ImportError:
        missing_input("dill (Pulumi's pickler for dynamic providers) is not installed")
    from pulumi.dynamic.dynamic import serialize_provider

    restored = dill.loads(base64.b64decode(serialize_provider(KueueReadinessProvider())))
    assert isinstance(restored, KueueReadinessProvider)
    diff: Callable[..., Any] = restored.diff
    assert diff("id", {"kueueVersion": "1"}, {"kueueVersion": "2"}).replaces == ["kueueVersion"]


# --------------------------------------------------------------------------- kubeconfig given as contents


def kubeconfig_doc(server: str, token: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "bench",
        "clusters": [{"name": "gpu", "cluster": {"server": server}}],
        "users": [{"name": "bench", "user": {"token": token}}],
        "contexts": [{"name": "bench", "context": {"cluster": "gpu", "user": "bench"}}],
    }


@pytest.mark.parametrize("form", ["yaml", "json"])
def test_kubeconfig_contents_yaml_or_json(kube: FakeKube, fake_time: FakeTime, form: str) -> None:
    doc = kubeconfig_doc(kube.url, "inline-token")
    contents = yaml.safe_dump(doc) if form == "yaml" else json.dumps(doc)  # JSON: one line, as a secret often is
    assert ("\n" in contents.strip()) is (form == "yaml")
    assert is_kubeconfig_contents(contents)
    api = from_kubeconfig(contents)
    assert (api.server, api.token) == (kube.url, "inline-token")
    kube.ready()
    wait_for_kueue(api, sleep=fake_time.sleep, clock=fake_time.clock)
    assert {s.headers["Authorization"] for s in kube.seen} == {"Bearer inline-token"}


def test_a_path_is_a_path_and_a_missing_one_is_named(tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "config", "https://gpu.invalid:6443", user={"token": "t"})
    assert not is_kubeconfig_contents(str(path))
    assert not is_kubeconfig_contents(str(tmp_path / "absent"))
    with pytest.raises(KubeconfigError, match=f"^kubeconfig not found: {tmp_path / 'absent'}$"):
        from_kubeconfig(str(tmp_path / "absent"))


@pytest.mark.parametrize(
    ("contents", "where"),
    [
        ('{"apiVersion": "v1", "users": [{"name": "u", "user": {"token": "s3cr3t-token"}}', "line 1, column 80"),
        ("apiVersion: v1\nusers:\n- name: u\n  user: {token: s3cr3t-token\n", "line 5, column 1"),
    ],
)
def test_unparseable_contents_are_never_quoted(contents: str, where: str) -> None:
    with pytest.raises(KubeconfigError) as err:
        from_kubeconfig(contents)
    assert str(err.value) == (
        "<inline kubeconfig>: kubernetes:kubeconfig is neither an existing file nor a YAML or JSON kubeconfig "
        f"(parse error at {where})"
    )
    assert "s3cr3t" not in str(err.value)


def test_errors_about_contents_name_them_inline(kube: FakeKube) -> None:
    contents = json.dumps(kubeconfig_doc(kube.url, "s3cr3t-token"))
    with pytest.raises(KubeconfigError) as err:
        from_kubeconfig(contents, context="other")
    assert str(err.value) == "<inline kubeconfig>: context 'other' not found (contexts: bench)"


def test_provider_create_with_kubeconfig_contents(kube: FakeKube) -> None:
    kube.ready()
    contents = yaml.safe_dump(kubeconfig_doc(kube.url, "from-contents"))
    result = KueueReadinessProvider().create({**provider_inputs(Path("unused")), "kubeconfig": contents})
    assert result.outs is not None and result.outs["ready"] is True
    assert {s.headers["Authorization"] for s in kube.seen} == {"Bearer from-contents"}


# --------------------------------------------------------------------------- config → gate → wait agree


def _gate_inputs(interval: float) -> dict[str, Any]:
    """What the program hands the gate for ``kueue.readiness.intervalSeconds: interval``, engine-shaped."""
    from aiperf_kueue.installs import releases as installs
    from tests.support import plan_values, stack_values

    values, _ = stack_values("dev")
    values["kueue"] = {"readiness": {"attempts": 3, "intervalSeconds": interval}}
    config, plan = plan_values(values)
    gate = installs.readiness_gate(config, plan.target)
    return {
        "namespace": gate["namespace"],
        "deployment": gate["deployment"],
        "webhookService": gate["webhook_service"],
        "apiVersion": gate["api_version"],
        "kueueVersion": gate["kueue_version"],
        "releaseDigest": gate["release_digest"],
        "attempts": float(gate["attempts"]),
        "intervalSeconds": float(gate["interval_seconds"]),
        "timeoutSeconds": 300.0,
    }


def test_the_largest_interval_config_accepts_is_one_the_wait_accepts(kube: FakeKube, tmp_path: Path) -> None:
    inputs = _gate_inputs(10)
    provider = KueueReadinessProvider()
    assert provider.check({}, inputs).failures == []
    kube.ready()  # ready at once: no sleep, so the test does not wait 10 s
    result = provider.create({**inputs, "kubeconfig": str(write_kubeconfig(tmp_path / "config", kube.url))})
    assert result.outs is not None and result.outs["attemptsPerStep"] == {
        "deployment": 1,
        "endpoints": 1,
        "dryRun": 1,
        "reads": 1,
    }


def test_an_interval_above_the_backoff_cap_is_a_config_error() -> None:
    from aiperf_kueue.common.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        _gate_inputs(20)
    assert err.value.lines() == [
        "test.yaml: aiperf-kueue:kueue.readiness.intervalSeconds: must be <= 10 (seconds; the gate's backoff "
        "doubles the interval up to 10 s), got 20"
    ]


def test_provider_check_refuses_an_interval_above_the_cap_too(tmp_path: Path) -> None:
    failures = KueueReadinessProvider().check({}, provider_inputs(tmp_path, intervalSeconds=20.0)).failures
    assert [(f.property, f.reason) for f in failures] == [
        ("intervalSeconds", "intervalSeconds must be <= 10 (the backoff cap), got 20.0")
    ]


def test_a_new_kueue_configuration_makes_the_gate_wait_again(tmp_path: Path) -> None:
    provider = KueueReadinessProvider()
    olds = {**provider_inputs(tmp_path, releaseDigest="sha256:aaaa"), "ready": True}
    assert provider.diff("id", olds, provider_inputs(tmp_path, releaseDigest="sha256:bbbb")).replaces == [
        "releaseDigest"
    ]
    assert provider.diff("id", olds, provider_inputs(tmp_path, releaseDigest="sha256:aaaa")).changes is False


def test_the_gates_defaults_are_the_configs_and_the_waits() -> None:
    import dataclasses
    import inspect

    from aiperf_kueue.installs import releases as installs
    from components.readiness import KueueReadinessGateArgs
    from tests.support import plan_values, stack_values

    values, _ = stack_values("dev")
    values.pop("kueue", None)
    config, plan = plan_values(values)
    args = KueueReadinessGateArgs(kueue_version="0.19.2")
    from_config = installs.readiness_gate(config, plan.target)
    assert {k: getattr(args, k) for k in from_config if k != "release_digest"} == {
        k: v for k, v in from_config.items() if k != "release_digest"
    }
    wait = inspect.signature(wait_for_kueue).parameters
    assert (
        (args.attempts, args.interval_seconds, args.timeout_seconds)
        == (
            wait["attempts"].default,
            wait["interval"].default,
            wait["deadline"].default,
        )
        == (40, 2.0, 300.0)
    )
    assert [f.name for f in dataclasses.fields(args) if f.kw_only] == [f.name for f in dataclasses.fields(args)]
