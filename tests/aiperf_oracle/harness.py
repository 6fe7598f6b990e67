"""The released AIPerf operator's create path, run for real against a stub Kubernetes API.

Runs under the oracle virtualenv's Python (``make oracle``: ``aiperf==0.13.0`` and its
dependencies), never the project's. The process environment is the operator Deployment's env
as the program sets it (the caller passes it), so ``K8sEnvironment`` and friends read exactly
what the real operator would.

Protocol: one JSON object per line on stdin, ``{"cluster": {...}, "job": {...}}``; one JSON
object per line on stdout with what the operator did (see :func:`run_job`), including the
Kubernetes API calls the stub served for it. ``{"validate": spec}`` runs the spec validation alone.

What is real: ``aiperf.operator.handlers.create.on_create`` and everything it calls (spec
validation, worker sizing, the JobSet build, the 19 preflight checks, RBAC/ConfigMap/JobSet
creation), ``kubernetes_asyncio`` with its kubeconfig loading, REST client and model
(de)serialisation, and aiohttp. What is stubbed:

- the Kubernetes API server: an aiohttp server on 127.0.0.1 answering the routes in
  :data:`ROUTES` from a description of the cluster (nodes, namespaces, LocalQueues, Secrets,
  ServiceAccounts); every request is recorded, and one it does not know gets a 404 and is
  reported as ``unanswered``;
- ``check_endpoint_health`` (an HTTP probe of the benchmark endpoint, not a Kubernetes call):
  answers "reachable", as an in-cluster endpoint would be;
- the operator's results directory (a temporary directory) and its ConfigMap propagation
  delay (0 s instead of 10 s), both through the operator's own settings variables.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

Json = dict[str, Any]
Handler = Callable[[web.Request, re.Match[str], Json], web.Response]

#: The cluster the current job is created in (set per request from the caller's description).
CLUSTER: Json = {}
#: (method, route name) of every API call served for the current job, in first-seen order; and
#: the requests the stub did not know.
CALLS: dict[tuple[str, str], None] = {}
UNANSWERED: list[str] = []
#: The JobSets created (not dry runs) during the current job.
CREATED: list[Json] = []


def _json(body: Any, status: int = 200) -> web.Response:
    return web.json_response(body, status=status)


def _not_found(what: str) -> web.Response:
    return _json(
        {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": f"{what} not found",
         "reason": "NotFound", "code": 404},
        404,
    )  # fmt: skip


def _list(kind: str, items: list[Json], api_version: str = "v1") -> web.Response:
    return _json({"apiVersion": api_version, "kind": kind, "metadata": {"resourceVersion": "1"}, "items": items})


def _version(request: web.Request, m: re.Match[str], body: Json) -> web.Response:
    return _json(
        {"major": "1", "minor": "31", "gitVersion": "v1.31.0", "gitCommit": "0" * 40, "gitTreeState": "clean",
         "buildDate": "2024-08-13T07:28:49Z", "goVersion": "go1.22.5", "compiler": "gc", "platform": "linux/amd64"}
    )  # fmt: skip


def _jobsets_cluster(request: web.Request, m: re.Match[str], body: Json) -> web.Response:
    return _list("JobSetList", [], "jobset.x-k8s.io/v1alpha2")


def _ssar(request: web.Request, m: re.Match[str], body: Json) -> web.Response:
    return _json({**body, "status": {"allowed": True}}, 201)


def _deployment(name: str, labels: Json) -> Json:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
        },
        "status": {"replicas": 1, "readyReplicas": 1},
    }


def _deployments(request: web.Request, m: re.Match[str], body: Json) -> web.Response:
    ns = m["ns"]
    if ns == "jobset-system":
        return _list("DeploymentList", [_deployment("jobset-controller-manager", {"app": "jobset"})], "apps/v1")
    if ns == "kube-system":
        return _list("DeploymentList", [_deployment("coredns", {"k8s-app": "kube-dns"})], "apps/v1")
    return _list("DeploymentList", [], "apps/v1")


def _nodes(request: web.Request, m: re.Match[str], body: Json) -> web.Response:
    items = []
    for node in CLUSTER.get("nodes", []):
        amounts = {"cpu": node["cpu"], "memory": node["memory"], "pods": "110"}
        items.append(
            {
                "metadata": {"name": node["name"], "labels": node.get("labels", {})},
                "spec": {"taints": node.get("taints", [])},
                "status": {
                    "allocatable": amounts,
                    "capacity": amounts,
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
    return _list("NodeList", items)


def _pods(request: web.Request, m: re.Match[str], body: Json) -> web.Response:
    return _list("PodList", [])


def _empty_list(kind: str, api_version: str = "v1") -> Handler:
    def handler(request: web.Request, m: re.Match[str], body: Json) -> web.Response:
        return _list(kind, [], api_version)

    return handler


def _namespace(request: web.Request, m: re.Match[str], body: Json) -> web.Response:
    ns = CLUSTER.get("namespaces", {}).get(m["ns"])
    if ns is None:
        return _not_found(f'namespaces "{m["ns"]}"')
    meta = {"name": m["ns"], "labels": ns.get("labels", {}), "annotations": ns.get("annotations", {})}
    return _json({"apiVersion": "v1", "kind": "Namespace", "metadata": meta, "status": {"phase": "Active"}})


def _secret(request: web.Request, m: re.Match[str], body: Json) -> web.Response:
    keys = CLUSTER.get("secrets", {}).get(m["ns"], {}).get(m["name"])
    if keys is None:
        return _not_found(f'secrets "{m["name"]}"')
    data = {k: base64.b64encode(b"stand-in").decode() for k in keys}
    return _json({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": m["name"]}, "data": data})


def _service_account(request: web.Request, m: re.Match[str], body: Json) -> web.Response:
    if m["name"] not in CLUSTER.get("serviceAccounts", {}).get(m["ns"], ["default"]):
        return _not_found(f'serviceaccounts "{m["name"]}"')
    return _json({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": m["name"]}})


def _kueue_serves(version: str) -> bool:
    """Whether the cluster serves ``kueue.x-k8s.io/<version>``: Kueue is installed and its CRDs
    serve that version (``kueueServedVersions``, default v1beta1 and v1beta2 as Kueue 0.15-0.19;
    ``["v1beta2"]`` is Kueue 0.20+, which stopped serving v1beta1). The API server answers a
    request for an unserved version with a 404, as for no CRD at all."""
    served = CLUSTER.get("kueueServedVersions", ["v1beta1", "v1beta2"])
    return bool(CLUSTER.get("kueueInstalled", True)) and version in served


def _local_queue(request: web.Request, m: re.Match[str], body: Json) -> web.Response:
    if not _kueue_serves(m["version"]):
        return _not_found("the server could not find the requested resource")
    if m["name"] not in CLUSTER.get("localQueues", {}).get(m["ns"], []):
        return _not_found(f'localqueues.kueue.x-k8s.io "{m["name"]}"')
    api_version = f"kueue.x-k8s.io/{m['version']}"
    return _json({"apiVersion": api_version, "kind": "LocalQueue", "metadata": {"name": m["name"]}})


def _local_queues(request: web.Request, m: re.Match[str], body: Json) -> web.Response:
    if not _kueue_serves(m["version"]):
        return _not_found("the server could not find the requested resource")
    names = CLUSTER.get("localQueues", {}).get(m["ns"], [])
    return _list("LocalQueueList", [{"metadata": {"name": n}} for n in names[:1]], f"kueue.x-k8s.io/{m['version']}")


def _create_jobset(request: web.Request, m: re.Match[str], body: Json) -> web.Response:
    if request.query.get("dryRun") != "All":
        CREATED.append(copy.deepcopy(body))
    return _json(body, 201)


def _echo(request: web.Request, m: re.Match[str], body: Json) -> web.Response:
    return _json(body, 201)


_NS = r"(?P<ns>[a-z0-9-]+)"
_NAME = r"(?P<name>[A-Za-z0-9.-]+)"
_KUEUE = r"(?P<version>v1beta[12])"
#: Every Kubernetes API call the stub answers: (name, method, path pattern, handler).
ROUTES: list[tuple[str, str, re.Pattern[str], Handler]] = [
    (n, meth, re.compile(pattern), h)
    for n, meth, pattern, h in [
        ("version", "GET", r"/version/?", _version),
        ("list jobsets (cluster)", "GET", r"/apis/jobset\.x-k8s\.io/v1alpha2/jobsets", _jobsets_cluster),
        ("create selfsubjectaccessreview", "POST", r"/apis/authorization\.k8s\.io/v1/selfsubjectaccessreviews",
         _ssar),
        ("list deployments", "GET", rf"/apis/apps/v1/namespaces/{_NS}/deployments", _deployments),
        ("list nodes", "GET", r"/api/v1/nodes", _nodes),
        ("list pods (all namespaces)", "GET", r"/api/v1/pods", _pods),
        ("list resourcequotas", "GET", rf"/api/v1/namespaces/{_NS}/resourcequotas",
         _empty_list("ResourceQuotaList")),
        ("list networkpolicies", "GET", rf"/apis/networking\.k8s\.io/v1/namespaces/{_NS}/networkpolicies",
         _empty_list("NetworkPolicyList", "networking.k8s.io/v1")),
        ("read secret", "GET", rf"/api/v1/namespaces/{_NS}/secrets/{_NAME}", _secret),
        ("read serviceaccount", "GET", rf"/api/v1/namespaces/{_NS}/serviceaccounts/{_NAME}", _service_account),
        ("read localqueue", "GET", rf"/apis/kueue\.x-k8s\.io/{_KUEUE}/namespaces/{_NS}/localqueues/{_NAME}",
         _local_queue),
        ("list localqueues", "GET", rf"/apis/kueue\.x-k8s\.io/{_KUEUE}/namespaces/{_NS}/localqueues",
         _local_queues),
        ("read namespace", "GET", rf"/api/v1/namespaces/{_NS}", _namespace),
        ("create jobset", "POST", rf"/apis/jobset\.x-k8s\.io/v1alpha2/namespaces/{_NS}/jobsets", _create_jobset),
        ("create role", "POST", rf"/apis/rbac\.authorization\.k8s\.io/v1/namespaces/{_NS}/roles", _echo),
        ("create rolebinding", "POST", rf"/apis/rbac\.authorization\.k8s\.io/v1/namespaces/{_NS}/rolebindings",
         _echo),
        ("create configmap", "POST", rf"/api/v1/namespaces/{_NS}/configmaps", _echo),
    ]
]  # fmt: skip


async def _dispatch(request: web.Request) -> web.Response:
    body: Json = {}
    if request.can_read_body:
        body = await request.json()
    for name, method, pattern, handler in ROUTES:
        match = pattern.fullmatch(request.path)
        if match and request.method == method:
            CALLS.setdefault((method, name), None)
            return handler(request, match, body)
    UNANSWERED.append(f"{request.method} {request.path_qs}")
    return _not_found(request.path)


async def _serve() -> tuple[web.AppRunner, int]:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", _dispatch)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, port


def _kubeconfig(port: int, directory: Path) -> Path:
    path = directory / "kubeconfig"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "stub", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "stub", "user": {"token": "stub"}}],
                "contexts": [{"name": "stub", "context": {"cluster": "stub", "user": "stub"}}],
                "current-context": "stub",
            }
        )
    )
    return path


async def run_job(job: Json) -> Json:
    """``on_create`` for one AIPerfJob; what it returned or raised, its status patch, the
    preflight results, and the JobSet it created."""
    import kopf
    from aiperf.operator.handlers import create
    from aiperf.operator.preflight import OperatorPreflightChecker

    CREATED.clear()
    CALLS.clear()
    UNANSWERED.clear()
    preflight: list[Json] = []
    run_all = OperatorPreflightChecker.run_all

    async def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        # Records the real checker's results; changes nothing.
        results = await run_all(self, *args, **kwargs)
        preflight.extend({"name": c.name, "status": str(c.status.value), "message": c.message} for c in results.checks)
        return results

    OperatorPreflightChecker.run_all = spy
    name, namespace = job["name"], job["namespace"]
    body = {
        "apiVersion": "aiperf.nvidia.com/v1alpha1",
        "kind": "AIPerfJob",
        "metadata": {"name": name, "namespace": namespace, "uid": job.get("uid", f"uid-{name}"), "generation": 1,
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": job["spec"],
    }  # fmt: skip
    patch = kopf.Patch()
    out: Json = {"outcome": "created", "error": None}
    try:
        out["returned"] = await create.on_create(
            body=body, spec=copy.deepcopy(job["spec"]), name=name, namespace=namespace, uid=body["metadata"]["uid"],
            patch=patch,
        )  # fmt: skip
    except kopf.PermanentError as e:
        out.update(outcome="failed", error=str(e))
    except kopf.TemporaryError as e:
        out.update(outcome="temporary", error=str(e))
    finally:
        OperatorPreflightChecker.run_all = run_all
    status = dict(patch.get("status") or {})
    out["phase"] = status.get("phase")
    out["statusError"] = status.get("error")
    out["preflight"] = sorted(preflight, key=lambda c: c["name"]) if preflight else None
    out["jobsets"] = copy.deepcopy(CREATED)
    out["calls"] = [list(k) for k in CALLS]
    out["unanswered"] = list(UNANSWERED)
    return out


async def main() -> None:
    """Serve the stub API, then answer one request line at a time."""
    with tempfile.TemporaryDirectory(prefix="aiperf-oracle-") as tmp:
        runner, port = await _serve()
        os.environ["KUBECONFIG"] = str(_kubeconfig(port, Path(tmp)))
        os.environ["AIPERF_RESULTS_DIR"] = str(Path(tmp) / "results")
        os.environ["AIPERF_CONFIGMAP_PROPAGATION_DELAY_SECONDS"] = "0"
        from aiperf.kubernetes.crd_models import EndpointHealthResult
        from aiperf.operator.handlers import create

        async def reachable(url: str, *args: Any, **kwargs: Any) -> EndpointHealthResult:
            return EndpointHealthResult(reachable=True, error="")

        create.check_endpoint_health = reachable
        # The operator's startup handler (main.open_runs_index) opens the runs index first.
        from aiperf.operator import runs_index
        from aiperf.operator.environment import OperatorEnvironment

        await runs_index.open(OperatorEnvironment.RESULTS.DIR / ".aiperf_index.sqlite")
        loop = asyncio.get_running_loop()
        try:
            while True:
                line = await loop.run_in_executor(None, sys.stdin.readline)
                if not line:
                    break
                request = json.loads(line)
                if "validate" in request:
                    answer: Json = validate(request["validate"])
                elif "fields" in request:
                    answer = fields()
                else:
                    CLUSTER.clear()
                    CLUSTER.update(request.get("cluster", {}))
                    answer = await run_job(request["job"])
                sys.stdout.write(json.dumps(answer, default=str) + "\n")
                sys.stdout.flush()
        finally:
            await runs_index.close()
            await runner.cleanup()


def fields() -> Json:
    """The release's spec models: per path, the keys each object takes (camelCase), and the
    values of its enums (phase types are the discriminator's tags)."""
    import enum
    import typing

    from aiperf.kubernetes.crd_models import AIPerfJobSpec
    from pydantic import BaseModel

    keys: dict[str, set[str]] = {}
    enums: dict[str, list[str]] = {}

    def models(annotation: Any) -> list[type[BaseModel]]:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return [annotation]
        return [m for a in typing.get_args(annotation) for m in models(a)]

    def enum_values(annotation: Any) -> list[str] | None:
        for a in [annotation, *typing.get_args(annotation)]:
            if isinstance(a, type) and issubclass(a, enum.Enum):
                return [str(e.value) for e in a]
            if typing.get_origin(a) is typing.Literal:
                return [str(v.value if isinstance(v, enum.Enum) else v) for v in typing.get_args(a)]
        return None

    def walk(model: type[BaseModel], path: str, depth: int) -> None:
        keys.setdefault(path, set()).update(f.alias or n for n, f in model.model_fields.items())
        for name, field in model.model_fields.items():
            alias = field.alias or name
            found = enum_values(field.annotation)
            if found is not None:
                enums.setdefault(f"{path}.{alias}" if path else alias, [])
                enums[f"{path}.{alias}" if path else alias] += [
                    v for v in found if v not in enums[f"{path}.{alias}" if path else alias]
                ]
            if depth < 3:
                for sub in models(field.annotation):
                    walk(sub, f"{path}.{alias}" if path else alias, depth + 1)

    walk(AIPerfJobSpec, "", 0)
    # Typed ``Any`` in the CRD model (the release validates them in AIPerfConfig), or past the walk's
    # depth: the plot envelope, each communication type's own keys and its proxies' keys.
    from aiperf.config.comm import (
        DualBindCommunicationConfig,
        IpcCommunicationConfig,
        TcpCommunicationConfig,
        TcpProxyConfig,
    )
    from aiperf.config.plot import PlotEnvelopeConfig

    walk(PlotEnvelopeConfig, "plot", 1)
    comm = "benchmark.runtime.communication"
    for tag, model in (("ipc", IpcCommunicationConfig), ("tcp", TcpCommunicationConfig),
                       ("dual", DualBindCommunicationConfig)):  # fmt: skip
        keys[f"{comm}[{tag}]"] = {f.alias or n for n, f in model.model_fields.items()}
    walk(TcpProxyConfig, f"{comm}.eventBusProxy", 3)
    from aiperf.config.dataset.config import FileDataset, PublicDataset, SyntheticDataset

    for tag, model in (("synthetic", SyntheticDataset), ("file", FileDataset), ("public", PublicDataset)):
        keys[f"benchmark.datasets[{tag}]"] = {f.alias or n for n, f in model.model_fields.items()}
        for name, field in model.model_fields.items():
            found = enum_values(field.annotation)
            if found is not None:
                enums[f"benchmark.datasets[{tag}].{field.alias or name}"] = found
    return {"keys": {k: sorted(v) for k, v in keys.items()}, "enums": enums}


def validate(spec: Json) -> Json:
    """``validate_job_spec`` alone (the operator's spec validation): accepted, or its error."""
    from aiperf.kubernetes.spec_converter import validate_job_spec

    try:
        validate_job_spec(copy.deepcopy(spec))
    except Exception as e:
        return {"accepted": False, "error": f"{type(e).__name__}: {e}"}
    return {"accepted": True, "error": None}


if __name__ == "__main__":
    asyncio.run(main())
