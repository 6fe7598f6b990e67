"""Wait until Kueue's webhook actually serves, not merely until its Deployment is Ready.

For 10–30 s after ``kueue-controller-manager`` reports 1/1 Ready, creating a
ClusterQueue or ResourceFlavor fails with ``failed calling webhook
"mclusterqueue.kb.io" ... 502``, ``connection refused`` or ``no endpoints
available for service "kueue-webhook-service"`` (kueue NOTES). Kueue's own e2e
suite waits in the first three steps; :func:`wait_for_kueue` adds a fourth:

1. the Deployment is rolled out and ``Available=True``;
2. the EndpointSlices of the webhook Service have ready endpoints, and those are
   exactly the ready controller pods (no stale endpoint of a replaced pod);
3. a server-side dry-run create of a ResourceFlavor is admitted, which goes
   through the real webhook without persisting anything;
4. every ``kueue.x-k8s.io`` kind can be listed at every version the API server
   serves. This one is not in Kueue's suite: it is what an upgrade needs. Objects
   stored at another version (a Workload written by Kueue 0.15 as ``v1beta1``,
   read as ``v1beta2``) go through Kueue's conversion webhook, which the API
   server trusts through the ``caBundle`` Kueue's cert rotator writes into each
   CRD. ``pulumi up`` re-applies the CRDs and the new Kueue re-injects the bundle
   a moment later; until it has, every such read fails with ``x509: certificate
   signed by unknown authority`` (measured in this project's upgrade e2e). A
   ``limit=1`` list at each served version reads the first stored object at a
   version other than its own whichever it is stored at, so it goes through the
   conversion whenever any object needs it, and costs one small request per kind
   and version.

   Kueue injects that bundle only as it starts (and when it rotates its
   certificate). If it started before ``pulumi up`` re-applied a CRD and the
   re-apply left the CRD without the bundle, nothing puts it back: Kueue's own
   manager then waits on a list through the untrusted webhook, and so would this
   step, until its deadline. So after :data:`CA_REPAIR_AFTER` untrusted-conversion
   failures the step does what Kueue's cert rotator does (sigs.k8s.io/kueue
   v0.19.2, pkg/util/cert/cert.go: the rotator's ``CRDConversion`` webhooks): it
   writes ``ca.crt`` of Kueue's webhook Secret into
   ``spec.conversion.webhook.clientConfig.caBundle`` of each ``kueue.x-k8s.io`` CRD
   with a ``Webhook`` conversion whose bundle is missing or another one (a merge
   patch, field manager :data:`FIELD_MANAGER`), then reads again. The Secret's
   content is never logged nor put in an error. Without the permission to read
   the Secret (or list and patch CRDs) it only waits, as before.

The API server is reached with the official Kubernetes Python client
(:mod:`aiperf_kueue.providers.kube_api`). This module adds the four steps, their retry policy
and the explanation when Kueue is not ready. It runs in the Pulumi dynamic provider
(:mod:`aiperf_kueue.providers.readiness`) on ``pulumi up``, never in ``plan``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiperf_kueue.providers.kube_api import (
    ApiServer,
    Client,
    Reply,
    TransportError,
    from_kubeconfig,
    in_cluster,
    load_api_server,
)
from aiperf_kueue.providers.kubeconfig import KubeconfigError
from aiperf_kueue.upstream.kueue import (
    GROUP,
    KUEUE_DEPLOYMENT,
    KUEUE_NAMESPACE,
    KUEUE_WEBHOOK_SERVICE,
    READINESS_ATTEMPTS,
    READINESS_INTERVAL_SECONDS,
    READINESS_MAX_INTERVAL_SECONDS,
    READINESS_TIMEOUT_SECONDS,
    WEBHOOK_SECRET_SUFFIX,
    WEBHOOK_SERVICE_SUFFIX,
)

__all__ = [
    "STEPS",
    "STEP_DEPLOYMENT",
    "STEP_DRY_RUN",
    "STEP_ENDPOINTS",
    "STEP_READS",
    "ApiServer",
    "KubeconfigError",
    "KueueNotReady",
    "ReadinessReport",
    "StepReport",
    "from_kubeconfig",
    "in_cluster",
    "load_api_server",
    "wait_for_kueue",
]

STEP_DEPLOYMENT = "deployment"
STEP_ENDPOINTS = "endpoints"
STEP_DRY_RUN = "dryRun"
STEP_READS = "reads"
#: The four steps, in the order they run; also the keys of :attr:`ReadinessReport.attempts`.
STEPS = (STEP_DEPLOYMENT, STEP_ENDPOINTS, STEP_DRY_RUN, STEP_READS)

#: Name prefix of the dry-run ResourceFlavor; ``generateName`` so it can never clash with a real flavor.
DRY_RUN_NAME_PREFIX = "aiperf-kueue-readiness-"
#: Untrusted-conversion failures of step 4 after which the gate writes Kueue's CA into the CRDs itself.
CA_REPAIR_AFTER = 3
#: The field manager of that write (Kueue's rotator uses its own; this one says who else wrote the bundle).
FIELD_MANAGER = "aiperf-kueue-readiness"
CRDS_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


# --------------------------------------------------------------------------- the wait


@dataclass(frozen=True)
class StepReport:
    """How one step went."""

    name: str
    """One of :data:`STEPS`."""
    attempts: int
    """Attempts made, the successful one included (≥ 1)."""
    seconds: float
    """Time spent in the step, by the injected clock."""


@dataclass(frozen=True)
class ReadinessReport:
    """What :func:`wait_for_kueue` did before Kueue was ready."""

    steps: tuple[StepReport, ...]
    seconds: float
    """Total time, by the injected clock."""

    @property
    def attempts(self) -> dict[str, int]:
        """Attempts per step: ``{"deployment": 1, "endpoints": 3, "dryRun": 2, "reads": 1}``."""
        return {s.name: s.attempts for s in self.steps}


class KueueNotReady(Exception):  # noqa: N818 -- a state, not a bug; the name is public API
    """Kueue did not become ready: a step gave up, or hit an error retrying can't fix.

    ``str(err)`` is the multi-line, user-facing explanation.
    """

    def __init__(
        self,
        *,
        step: str,
        title: str,
        attempts: int,
        seconds: float,
        status: int | None,
        message: str,
        retryable: bool,
        why: str,
        hints: list[str],
    ) -> None:
        self.step = step
        self.attempts = attempts
        self.seconds = seconds
        self.status = status
        self.retryable = retryable
        number = STEPS.index(step) + 1
        last = f"HTTP {status}: {message}" if status is not None else message
        if retryable:
            head = (
                f"Kueue is not ready: step {number}/{len(STEPS)} ({title}) gave up after "
                f"{attempts} attempt{'s' if attempts != 1 else ''} over {seconds:.1f}s ({why})."
            )
        else:
            head = (
                f"Kueue readiness check failed: step {number}/{len(STEPS)} ({title}) got an error that "
                f"retrying won't fix, on attempt {attempts} after {seconds:.1f}s."
            )
        lines = [head, f"Last result: {last}", "Check:", *(f"  {h}" for h in hints)]
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class _Outcome:
    done: bool
    retryable: bool = True
    status: int | None = None
    message: str = ""
    data: Any = None


_OK = _Outcome(done=True)


def _http_failure(reply: Reply) -> _Outcome:
    """A non-2xx reply: retry what a starting Kueue or a busy API server returns, fail fast on the rest."""
    # 404: the Deployment or the CRD is not created yet. 408/429/5xx: overload,
    # and the webhook's 500 "failed calling webhook" / 502 / 503 while it starts.
    retryable = reply.status in (404, 408, 429) or reply.status >= 500
    return _Outcome(done=False, retryable=retryable, status=reply.status, message=reply.message)


def _condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == kind:
            return cond
    return None


def _deployment_not_ready(obj: Mapping[str, Any]) -> str | None:
    """Why a Deployment is not rolled out and available, or None — the checks of ``kubectl rollout status``."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    generation, observed = meta.get("generation"), status.get("observedGeneration")
    # Until the controller observes the latest spec (e.g. after a Kueue upgrade),
    # Available still describes the old pods.
    if isinstance(generation, int) and (not isinstance(observed, int) or observed < generation):
        return f"deployment controller has not observed generation {generation} yet (observed: {observed})"
    available = _condition(obj, "Available")
    if available is None:
        return "no Available condition yet"
    if available.get("status") != "True":
        detail = ": ".join(str(x) for x in (available.get("reason"), available.get("message")) if x)
        return f"Available={available.get('status')}" + (f" ({detail})" if detail else "")
    # Kubernetes omits zero counts from status, hence the defaults.
    wanted = spec.get("replicas", 1)
    updated = status.get("updatedReplicas", 0)
    total = status.get("replicas", 0)
    ready = status.get("availableReplicas", 0)
    if updated < wanted:
        return f"rollout in progress: {updated} of {wanted} replicas updated"
    if total > updated:
        return f"rollout in progress: {total - updated} old replica(s) still running"
    if ready < updated:
        return f"rollout in progress: {ready} of {updated} updated replicas available"
    return None


def _label_selector(selector: Any) -> str | None:
    """A Deployment's ``spec.selector`` as a ``labelSelector`` query value; None if it has none."""
    if not isinstance(selector, Mapping):
        return None
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts) or None


def _check_deployment(client: Client, namespace: str, name: str) -> _Outcome:
    reply = client.call("GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}")
    if not 200 <= reply.status < 300:
        return _http_failure(reply)
    body = reply.body if isinstance(reply.body, Mapping) else {}
    why = _deployment_not_ready(body)
    if why is not None:
        return _Outcome(done=False, status=reply.status, message=why)
    return _Outcome(done=True, data=_label_selector((body.get("spec") or {}).get("selector")))


def _ready_endpoint_ips(slices: Any) -> tuple[int, set[str]]:
    total, ready = 0, set[str]()
    items = slices.get("items") if isinstance(slices, Mapping) else None
    for item in items or []:
        for endpoint in item.get("endpoints") or []:
            total += 1
            # Explicit true only: nil means "unknown" to the API, and the
            # EndpointSlice controller always sets it for pod-backed endpoints.
            if (endpoint.get("conditions") or {}).get("ready") is True:
                ready.update(endpoint.get("addresses") or [])
    return total, ready


def _ready_pod_ips(pods: Any) -> list[set[str]]:
    out = []
    items = pods.get("items") if isinstance(pods, Mapping) else None
    for pod in items or []:
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        ready = _condition(pod, "Ready")
        if ready is None or ready.get("status") != "True":
            continue
        status = pod.get("status") or {}
        ips = {p.get("ip") for p in status.get("podIPs") or [] if p.get("ip")} or {status.get("podIP")}
        ips.discard(None)
        if ips:
            out.append(ips)
    return out


def _check_endpoints(client: Client, namespace: str, service: str, pod_selector: str | None) -> _Outcome:
    reply = client.call(
        "GET",
        f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices",
        {"labelSelector": f"kubernetes.io/service-name={service}"},
    )
    if not 200 <= reply.status < 300:
        return _http_failure(reply)
    total, endpoint_ips = _ready_endpoint_ips(reply.body)
    if not endpoint_ips:
        what = f"{total} endpoint(s), none ready" if total else "no endpoints yet"
        return _Outcome(done=False, status=reply.status, message=f"EndpointSlices of service {service}: {what}")
    if pod_selector is None:
        return _OK
    # Endpoints lag pods in both directions: a new pod Ready before it is added,
    # an old pod's endpoint kept after it is gone. Both route webhook calls wrong.
    reply = client.call("GET", f"/api/v1/namespaces/{namespace}/pods", {"labelSelector": pod_selector})
    if not 200 <= reply.status < 300:
        return _http_failure(reply)
    pods = _ready_pod_ips(reply.body)
    if not pods:
        return _Outcome(done=False, status=reply.status, message=f"no ready pods match {pod_selector}")
    # Dual-stack pods have an IP per family, a single-stack Service one endpoint:
    # a pod counts as served if any of its IPs is a ready endpoint.
    missing = sorted(sorted(ips)[0] for ips in pods if not ips & endpoint_ips)
    stale = sorted(endpoint_ips - set().union(*pods))
    if missing or stale:
        parts = []
        if missing:
            parts.append(f"ready pod(s) {', '.join(missing)} not yet ready endpoints")
        if stale:
            parts.append(f"endpoint(s) {', '.join(stale)} not a ready controller pod")
        return _Outcome(done=False, status=reply.status, message=f"service {service}: {'; '.join(parts)}")
    return _OK


def _dry_run_flavor(client: Client, version: str) -> _Outcome:
    body = {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "ResourceFlavor",
        "metadata": {"generateName": DRY_RUN_NAME_PREFIX},
        "spec": {},
    }
    reply = client.call("POST", f"/apis/{GROUP}/{version}/resourceflavors", {"dryRun": "All"}, body)
    # 409 AlreadyExists comes from storage, after admission: the webhooks answered.
    if 200 <= reply.status < 300 or reply.status == 409:
        return _OK
    return _http_failure(reply)


def _listable(resources: Any) -> list[str]:
    """Top-level resources of a discovery document that can be listed (not ``workloads/status``)."""
    listed = resources.get("resources") if isinstance(resources, Mapping) else None
    names = []
    for resource in listed if isinstance(listed, list) else []:
        if not isinstance(resource, Mapping):
            continue
        name = resource.get("name")
        if isinstance(name, str) and "/" not in name and "list" in (resource.get("verbs") or []):
            names.append(name)
    return sorted(names)


def _read_every_version(client: Client) -> _Outcome:
    group = client.call("GET", f"/apis/{GROUP}")
    if not 200 <= group.status < 300:
        return _http_failure(group)
    body = group.body if isinstance(group.body, Mapping) else {}
    versions = sorted(str(v.get("version")) for v in body.get("versions") or [] if isinstance(v, Mapping))
    for version in versions:
        discovery = client.call("GET", f"/apis/{GROUP}/{version}")
        if not 200 <= discovery.status < 300:
            return _http_failure(discovery)
        for plural in _listable(discovery.body):
            reply = client.call("GET", f"/apis/{GROUP}/{version}/{plural}", {"limit": "1"})
            if not 200 <= reply.status < 300:
                failure = _http_failure(reply)
                return _Outcome(
                    done=False,
                    retryable=failure.retryable,
                    status=failure.status,
                    message=f"list {plural}.{GROUP}/{version}: {failure.message}",
                )
    return _OK


def _untrusted_conversion(outcome: _Outcome) -> bool:
    """A read that failed because the API server does not trust the conversion webhook's certificate."""
    return not outcome.done and "conversion webhook for" in outcome.message and "x509:" in outcome.message


def webhook_secret_name(webhook_service: str) -> str:
    """The Secret of Kueue's internal cert management, named as the chart names it beside the webhook Service."""
    return webhook_service.removesuffix(WEBHOOK_SERVICE_SUFFIX) + WEBHOOK_SECRET_SUFFIX


def _conversion_bundle(crd: Mapping[str, Any]) -> tuple[bool, Any]:
    """(has a Webhook conversion, its caBundle or None)."""
    conversion = (crd.get("spec") or {}).get("conversion") or {}
    if not isinstance(conversion, Mapping) or conversion.get("strategy") != "Webhook":
        return False, None
    client_config = (conversion.get("webhook") or {}).get("clientConfig") or {}
    return True, client_config.get("caBundle") if isinstance(client_config, Mapping) else None


def _write_ca_bundles(client: Client, namespace: str, secret: str) -> tuple[bool, str]:
    """Kueue's CA (``ca.crt`` of its webhook Secret) into each Kueue CRD whose conversion webhook lacks it: (any CRD
    patched, a line saying what was done, for the log). Neither the CA nor any Secret body is ever in that line."""
    waiting = "waiting for Kueue to inject its CA"
    reply = client.call("GET", f"/api/v1/namespaces/{namespace}/secrets/{secret}")
    if not 200 <= reply.status < 300:
        # Only the status: an answer about a Secret is not quoted.
        return False, f"cannot read Secret {namespace}/{secret} (HTTP {reply.status}): {waiting}"
    data = reply.body.get("data") if isinstance(reply.body, Mapping) else None
    ca = data.get("ca.crt") if isinstance(data, Mapping) else None
    if not isinstance(ca, str) or not ca:
        return False, f"Secret {namespace}/{secret} has no ca.crt yet: {waiting}"
    reply = client.call("GET", CRDS_PATH)
    if not 200 <= reply.status < 300:
        return False, f"cannot list CustomResourceDefinitions (HTTP {reply.status}): {waiting}"
    items = reply.body.get("items") if isinstance(reply.body, Mapping) else None
    stale: list[str] = []
    for crd in items if isinstance(items, list) else []:
        if not isinstance(crd, Mapping) or (crd.get("spec") or {}).get("group") != GROUP:
            continue
        webhook, bundle = _conversion_bundle(crd)
        if webhook and bundle != ca:
            stale.append(str((crd.get("metadata") or {}).get("name")))
    if not stale:
        return False, f"every Kueue CRD's conversion webhook has the CA of Secret {namespace}/{secret}: {waiting}"
    # Secret data is base64 already, as caBundle is: the same string the rotator writes.
    patch = {"spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": ca}}}}}
    patched: list[str] = []
    failed: list[str] = []
    for name in sorted(stale):
        reply = client.call(
            "PATCH", f"{CRDS_PATH}/{name}", {"fieldManager": FIELD_MANAGER}, patch, "application/merge-patch+json"
        )
        if 200 <= reply.status < 300:
            patched.append(name)
        else:
            failed.append(f"{name} (HTTP {reply.status})")
    line = f"wrote the CA of Secret {namespace}/{secret} into {', '.join(patched) or 'no CRD'}"
    return bool(patched), line + (f"; could not patch {', '.join(failed)}" if failed else "")


def _hints(step: str, outcome: _Outcome, namespace: str, deployment: str, version: str) -> list[str]:
    hints = []
    if outcome.status in (401, 403):
        verb = {
            STEP_DEPLOYMENT: f"get deployments -n {namespace}",
            STEP_ENDPOINTS: f"list endpointslices.discovery.k8s.io -n {namespace}",
            STEP_DRY_RUN: f"create resourceflavors.{GROUP}",
            STEP_READS: f"list workloads.{GROUP} --all-namespaces",
        }[step]
        hints.append(f"the credentials are rejected or lack RBAC: kubectl auth can-i {verb}")
        if step == STEP_ENDPOINTS:
            hints.append(f"(step 2 also lists pods: kubectl auth can-i list pods -n {namespace})")
    elif outcome.status == 404 and step == STEP_DEPLOYMENT:
        hints.append(f"is Kueue installed in namespace {namespace}? helm -n {namespace} list")
    elif outcome.status == 404 and step == STEP_DRY_RUN:
        hints.append(
            f"is {GROUP}/{version} served by this Kueue release? "
            f"kubectl get crd resourceflavors.{GROUP} -o jsonpath='{{.spec.versions[*].name}}'"
        )
    elif step == STEP_READS:
        hints.append(
            f"is the conversion webhook trusted? kubectl get crd workloads.{GROUP} "
            "-o jsonpath='{.spec.conversion.webhook.clientConfig.caBundle}' | head -c 20 (empty: not injected yet)"
        )
    elif outcome.status is None and not outcome.retryable:
        hints.append("the kubeconfig's certificate-authority(-data) does not match the API server")
    hints.append(f"kubectl -n {namespace} get deploy,endpointslices")
    hints.append(f"kubectl -n {namespace} logs deploy/{deployment}")
    return hints


def _backoff(attempt: int, interval: float, max_interval: float) -> float:
    """Sleep after failed attempt ``attempt`` (1-based): doubling from ``interval``, capped."""
    # No jitter: one client per `pulumi up`, so there is no herd to spread, and
    # a fixed sequence is what the tests and the error message can state.
    return float(min(interval * 2 ** (attempt - 1), max_interval))


def wait_for_kueue(
    api: ApiServer,
    namespace: str = KUEUE_NAMESPACE,
    deployment: str = KUEUE_DEPLOYMENT,
    webhook_service: str = KUEUE_WEBHOOK_SERVICE,
    api_version: str = "v1beta2",
    attempts: int = READINESS_ATTEMPTS,
    interval: float = READINESS_INTERVAL_SECONDS,
    timeout_per_request: float = 10.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    *,
    max_interval: float = READINESS_MAX_INTERVAL_SECONDS,
    deadline: float | None = READINESS_TIMEOUT_SECONDS,
    match_pod_ips: bool = True,
    log: Callable[[str], None] | None = None,
) -> ReadinessReport:
    """Block until Kueue's webhooks admit and convert; raise :class:`KueueNotReady` if they don't.

    Steps, in order (see the module docstring): ``deployment`` rolled out and
    Available, webhook ``endpoints`` ready (and, with ``match_pod_ips``, the
    same IPs as the ready controller pods), a ``dryRun`` create, then ``reads``
    of every Kueue kind at every served version (the conversion webhook).

    Retries: each step gets up to ``attempts`` attempts; after failed attempt
    *n* it sleeps ``min(interval * 2**(n-1), max_interval)`` via ``sleep``. A
    step that succeeds moves on at once, and the next step starts its own count
    and backoff. ``deadline`` (seconds by ``clock``, across all steps, None for
    none) cuts the last sleep short and stops retrying once passed; one request
    in flight may overrun it by up to ``timeout_per_request``.

    Retried: HTTP 404 (Deployment/CRD not created yet), 408, 429, 5xx (the
    webhook's ``failed calling webhook`` 500, 502, 503), connection refused or
    reset, timeouts, and "not ready yet" answers. Not retried: 401/403, other
    4xx (e.g. 400/422 for the dry-run body), TLS verification failures.

    ``api_version`` is the ``kueue.x-k8s.io`` version to dry-run against
    (``v1beta1`` for Kueue before 0.15), bare or with the group prefix.
    """
    if attempts < 1:
        raise ValueError(f"attempts must be ≥ 1, got {attempts}")
    if not interval > 0 or max_interval < interval:
        raise ValueError(f"need 0 < interval ≤ max_interval, got interval={interval}, max_interval={max_interval}")
    if not timeout_per_request > 0:
        raise ValueError(f"timeout_per_request must be > 0, got {timeout_per_request}")
    version = api_version.removeprefix(f"{GROUP}/")
    client = Client(api, timeout_per_request)
    started = clock()
    deadline_at = None if deadline is None else started + deadline

    def run(step: str, title: str, attempt: Callable[[], _Outcome]) -> tuple[StepReport, Any]:
        step_started = clock()
        number = 0
        while True:
            number += 1
            try:
                outcome = attempt()
            except TransportError as err:
                outcome = _Outcome(done=False, retryable=err.retryable, message=str(err))
            if outcome.done:
                return StepReport(step, number, clock() - step_started), outcome.data
            delay = _backoff(number, interval, max_interval)
            why = ""
            if not outcome.retryable:
                why = "not retryable"
            elif number >= attempts:
                why = "attempt limit reached"
            elif deadline_at is not None:
                remaining = deadline_at - clock()
                if remaining <= 0:
                    why = f"deadline of {deadline:g}s passed"
                delay = min(delay, remaining)
            if why:
                raise KueueNotReady(
                    step=step,
                    title=title,
                    attempts=number,
                    seconds=clock() - step_started,
                    status=outcome.status,
                    message=outcome.message,
                    retryable=outcome.retryable,
                    why=why,
                    hints=_hints(step, outcome, namespace, deployment, version),
                )
            if log is not None:
                last = f"HTTP {outcome.status}: {outcome.message}" if outcome.status is not None else outcome.message
                log(f"kueue {step} not ready (attempt {number}/{attempts}): {last}; retrying in {delay:g}s")
            sleep(delay)

    deployment_step, pod_selector = run(
        STEP_DEPLOYMENT,
        f"deployment {namespace}/{deployment}",
        lambda: _check_deployment(client, namespace, deployment),
    )
    endpoints_step, _ = run(
        STEP_ENDPOINTS,
        f"webhook endpoints of service {namespace}/{webhook_service}",
        lambda: _check_endpoints(client, namespace, webhook_service, pod_selector if match_pod_ips else None),
    )
    dry_run_step, _ = run(
        STEP_DRY_RUN,
        f"dry-run create of a {GROUP}/{version} ResourceFlavor",
        lambda: _dry_run_flavor(client, version),
    )
    untrusted = 0

    def reads() -> _Outcome:
        nonlocal untrusted
        outcome = _read_every_version(client)
        if not _untrusted_conversion(outcome):
            return outcome
        untrusted += 1
        if untrusted < CA_REPAIR_AFTER:
            return outcome
        # Kueue may never re-inject its CA (see the module docstring): write it as its rotator would, read again.
        wrote, line = _write_ca_bundles(client, namespace, webhook_secret_name(webhook_service))
        if log is not None:
            log(f"kueue {STEP_READS}: conversion webhook untrusted {untrusted} times; {line}")
        return _read_every_version(client) if wrote else outcome

    reads_step, _ = run(STEP_READS, f"list of every {GROUP} kind at every served version", reads)
    return ReadinessReport((deployment_step, endpoints_step, dry_run_step, reads_step), clock() - started)
