"""Wait until Kueue's webhook actually serves, not merely until its Deployment is Ready.

For 10–30 s after ``kueue-controller-manager`` reports 1/1 Ready, creating a
ClusterQueue or ResourceFlavor fails with ``failed calling webhook
"mclusterqueue.kb.io" ... 502``, ``connection refused`` or ``no endpoints
available for service "kueue-webhook-service"`` (kueue NOTES). Kueue's own e2e
suite waits in three steps, and so does :func:`wait_for_kueue`:

1. the Deployment is rolled out and ``Available=True``;
2. the EndpointSlices of the webhook Service have ready endpoints, and those are
   exactly the ready controller pods (no stale endpoint of a replaced pod);
3. a server-side dry-run create of a ResourceFlavor is admitted, which goes
   through the real webhook without persisting anything.

Pure Python on :mod:`urllib` — no Pulumi, no Kubernetes client library — so the
Pulumi dynamic provider in ``components.readiness`` stays small and picklable.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import http.client
import json
import os
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from aiperf_kueue.kueue import GROUP

__all__ = [
    "MAX_INTERVAL_SECONDS",
    "STEPS",
    "STEP_DEPLOYMENT",
    "STEP_DRY_RUN",
    "STEP_ENDPOINTS",
    "ApiServer",
    "KubeconfigError",
    "KueueNotReady",
    "ReadinessReport",
    "StepReport",
    "from_kubeconfig",
    "in_cluster",
    "is_kubeconfig_contents",
    "load_api_server",
    "wait_for_kueue",
]

STEP_DEPLOYMENT = "deployment"
STEP_ENDPOINTS = "endpoints"
STEP_DRY_RUN = "dryRun"
#: The three steps, in the order they run; also the keys of :attr:`ReadinessReport.attempts`.
STEPS = (STEP_DEPLOYMENT, STEP_ENDPOINTS, STEP_DRY_RUN)

#: Where a pod's service-account credentials are mounted.
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
#: Name prefix of the dry-run ResourceFlavor; ``generateName`` so it can never clash with a real flavor.
DRY_RUN_NAME_PREFIX = "aiperf-kueue-readiness-"
_USER_AGENT = "aiperf-kueue-readiness"
# Exec plugins (aws eks get-token, gke-gcloud-auth-plugin) can be slow on a cold
# start, but a hung plugin must not hang `pulumi up` forever.
_EXEC_TIMEOUT_SECONDS = 60.0
_BODY_EXCERPT = 300
#: Longest wait between two tries of a step, in seconds: the backoff doubles up to it. Config
#: (``kueue.readiness.intervalSeconds``) and the gate's ``check`` refuse a first interval above it.
MAX_INTERVAL_SECONDS = 10.0
#: How errors name a kubeconfig given as contents: never the contents, which hold credentials.
INLINE_KUBECONFIG = "<inline kubeconfig>"


class KubeconfigError(Exception):
    """The API server connection settings (kubeconfig or in-cluster) can't be used."""


# --------------------------------------------------------------------------- connection settings


@dataclass(frozen=True)
class ApiServer:
    """How to reach and authenticate to one Kubernetes API server.

    ``*_data`` fields hold PEM text; ``*_file`` fields hold paths. Secrets are
    kept out of ``repr`` so a settings object can be logged.
    """

    server: str
    """Base URL, e.g. ``https://10.0.0.1:6443`` (a path prefix, as behind Rancher, is kept)."""
    token: str | None = field(default=None, repr=False)
    """Bearer token."""
    ca_data: str | None = field(default=None, repr=False)
    """PEM CA bundle that signs the server certificate."""
    ca_file: str | None = None
    """Path of a PEM CA bundle."""
    client_cert_data: str | None = field(default=None, repr=False)
    """PEM client certificate (mutual TLS)."""
    client_cert_file: str | None = None
    """Path of a PEM client certificate."""
    client_key_data: str | None = field(default=None, repr=False)
    """PEM client private key."""
    client_key_file: str | None = None
    """Path of a PEM client private key."""
    insecure: bool = False
    """Skip server certificate verification (``insecure-skip-tls-verify``)."""

    @classmethod
    def from_kubeconfig(cls, path: str | os.PathLike[str] | None = None, context: str | None = None) -> ApiServer:
        """Settings of ``context`` (default: ``current-context``) in a kubeconfig.

        ``path`` is a kubeconfig path or, as ``kubernetes:kubeconfig`` may be, its contents
        (YAML or JSON; see :func:`is_kubeconfig_contents`). Errors never quote contents.
        It defaults to ``$KUBECONFIG`` (a ``os.pathsep``-separated list,
        merged the way kubectl does: the first file naming an entry wins) and then
        ``~/.kube/config``. Exec credential plugins are run once, here;
        ``auth-provider`` and basic auth are rejected with a :class:`KubeconfigError`.
        """
        return _from_kubeconfig(path, context)

    @classmethod
    def in_cluster(
        cls,
        environ: Mapping[str, str] | None = None,
        secrets_dir: str | os.PathLike[str] = SERVICE_ACCOUNT_DIR,
    ) -> ApiServer:
        """Settings of the pod this runs in: ``KUBERNETES_SERVICE_HOST/PORT`` and the service-account token."""
        env = os.environ if environ is None else environ
        host = env.get("KUBERNETES_SERVICE_HOST")
        port = env.get("KUBERNETES_SERVICE_PORT", "443")
        if not host:
            raise KubeconfigError("not running in a Kubernetes pod: KUBERNETES_SERVICE_HOST is not set")
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"  # IPv6 literal
        secrets = Path(secrets_dir)
        try:
            token = (secrets / "token").read_text().strip()
        except OSError as err:
            raise KubeconfigError(f"in-cluster service-account token unreadable: {err}") from err
        ca = secrets / "ca.crt"
        return cls(server=f"https://{host}:{port}", token=token, ca_file=str(ca) if ca.exists() else None)

    def ssl_context(self) -> ssl.SSLContext:
        """A client TLS context: the cluster CA (or none, if insecure) and the client certificate, if any."""
        if self.insecure:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        else:
            try:
                # With a cluster CA given, only that CA is trusted, as kubectl does.
                ctx = ssl.create_default_context(cafile=self.ca_file, cadata=self.ca_data)
            except (ssl.SSLError, OSError, ValueError) as err:
                raise KubeconfigError(f"cluster CA certificate can't be loaded: {err}") from err
        if self.client_cert_data or self.client_cert_file:
            self._load_client_cert(ctx)
        return ctx

    def _load_client_cert(self, ctx: ssl.SSLContext) -> None:
        # ssl reads certificates only from files: write inline PEM to a private
        # (0700) directory that is removed as soon as the chain is loaded.
        try:
            with tempfile.TemporaryDirectory(prefix="aiperf-kueue-tls-") as tmp:
                cert = self.client_cert_file
                if self.client_cert_data:
                    cert = _write_private(Path(tmp) / "client.crt", self.client_cert_data)
                key = self.client_key_file
                if self.client_key_data:
                    key = _write_private(Path(tmp) / "client.key", self.client_key_data)
                assert cert is not None  # guarded by the caller
                ctx.load_cert_chain(cert, key)
        except (ssl.SSLError, OSError) as err:
            raise KubeconfigError(f"client certificate/key can't be loaded: {err}") from err


def _write_private(path: Path, text: str) -> str:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return str(path)


def from_kubeconfig(path: str | os.PathLike[str] | None = None, context: str | None = None) -> ApiServer:
    """Same as :meth:`ApiServer.from_kubeconfig`."""
    return ApiServer.from_kubeconfig(path, context)


def in_cluster() -> ApiServer:
    """Same as :meth:`ApiServer.in_cluster`."""
    return ApiServer.in_cluster()


def load_api_server(kubeconfig: str | os.PathLike[str] | None = None, context: str | None = None) -> ApiServer:
    """A kubeconfig if one is given or present, else the in-cluster service account.

    The order kubectl and the Pulumi Kubernetes provider use: an explicit path (or the
    kubeconfig's contents), ``$KUBECONFIG``, ``~/.kube/config``, then in-cluster.
    """
    if kubeconfig is not None or os.environ.get("KUBECONFIG") or (Path.home() / ".kube" / "config").exists():
        return ApiServer.from_kubeconfig(kubeconfig, context)
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return ApiServer.in_cluster()
    raise KubeconfigError("no kubeconfig: pass a path, set KUBECONFIG, create ~/.kube/config, or run in a pod")


@dataclass(frozen=True)
class _Entry:
    body: Mapping[str, Any]
    base: Path  # directory of the kubeconfig file that defined it: relative paths resolve against it
    source: str  # how errors name that kubeconfig: its path, or INLINE_KUBECONFIG


def is_kubeconfig_contents(value: str | os.PathLike[str]) -> bool:
    """Whether a kubeconfig setting holds the file's contents rather than its path.

    ``kubernetes:kubeconfig`` takes either (the provider reads an existing file, else parses the
    value). An existing file wins; otherwise a value with a line break (YAML) or starting with
    ``{`` (JSON, or flow YAML) is contents, and anything else a path (so a mistyped path is
    reported as a missing file, by its name).
    """
    if not isinstance(value, str):
        return False
    if "\n" not in value:
        try:
            if Path(value).expanduser().is_file():
                return False
        except (OSError, ValueError):  # too long, or a NUL: not a usable path
            pass
    return "\n" in value or value.lstrip().startswith("{")


def _kubeconfig_paths(path: str | os.PathLike[str] | None) -> list[Path]:
    if path is not None:
        explicit = Path(path).expanduser()
        if not explicit.is_file():
            raise KubeconfigError(f"kubeconfig not found: {explicit}")
        return [explicit]
    env = os.environ.get("KUBECONFIG")
    if env:
        # kubectl skips missing files in the list; only an all-missing list is an error.
        listed = [Path(p).expanduser() for p in env.split(os.pathsep) if p]
        found = [p for p in listed if p.is_file()]
        if not found:
            raise KubeconfigError(f"none of the KUBECONFIG files exist: {env}")
        return found
    default = Path.home() / ".kube" / "config"
    if not default.is_file():
        raise KubeconfigError(f"kubeconfig not found: {default} (and KUBECONFIG is not set)")
    return [default]


def _load_kubeconfig_file(path: Path) -> Mapping[str, Any]:
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise KubeconfigError(f"{path}: not a readable kubeconfig: {err}") from err
    return _kubeconfig_mapping(doc, str(path))


def _load_kubeconfig_contents(text: str) -> Mapping[str, Any]:
    """Parse inline contents; an error says where, never what (a snippet could be a token)."""
    if text.lstrip().startswith("{"):
        with contextlib.suppress(json.JSONDecodeError):  # flow-style YAML is not always JSON
            return _kubeconfig_mapping(json.loads(text), INLINE_KUBECONFIG)
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "an unknown position"
        raise KubeconfigError(
            f"{INLINE_KUBECONFIG}: kubernetes:kubeconfig is neither an existing file nor a YAML or JSON "
            f"kubeconfig (parse error at {where})"
        ) from None
    return _kubeconfig_mapping(doc, INLINE_KUBECONFIG)


def _kubeconfig_mapping(doc: Any, source: str) -> Mapping[str, Any]:
    if doc is None:
        return {}
    if not isinstance(doc, Mapping):
        raise KubeconfigError(f"{source}: not a kubeconfig (top level is not a mapping)")
    return doc


def _kubeconfig_docs(path: str | os.PathLike[str] | None) -> list[tuple[Mapping[str, Any], Path, str]]:
    """Each kubeconfig document with the directory its relative paths start from and its name in errors."""
    if path is not None and is_kubeconfig_contents(path):
        # Inline contents have no file of their own: relative paths start where the program runs.
        return [(_load_kubeconfig_contents(str(path)), Path.cwd(), INLINE_KUBECONFIG)]
    return [(_load_kubeconfig_file(f), f.parent, str(f)) for f in _kubeconfig_paths(path)]


def _from_kubeconfig(path: str | os.PathLike[str] | None, context: str | None) -> ApiServer:
    docs = _kubeconfig_docs(path)
    tables: dict[str, dict[str, _Entry]] = {"clusters": {}, "users": {}, "contexts": {}}
    body_key = {"clusters": "cluster", "users": "user", "contexts": "context"}
    current: str | None = None
    for doc, base, source in docs:
        current = current or doc.get("current-context") or None
        for table, entries in tables.items():
            for item in doc.get(table) or []:
                if isinstance(item, Mapping) and isinstance(item.get("name"), str):
                    body = item.get(body_key[table])
                    entries.setdefault(item["name"], _Entry(body if isinstance(body, Mapping) else {}, base, source))
    where = ", ".join(source for _, _, source in docs)
    name = context or current
    if not name:
        raise KubeconfigError(f"{where}: no context given and current-context is not set")
    ctx = tables["contexts"].get(name)
    if ctx is None:
        known = ", ".join(sorted(tables["contexts"])) or "none"
        raise KubeconfigError(f"{where}: context {name!r} not found (contexts: {known})")
    cluster_name = ctx.body.get("cluster")
    cluster = tables["clusters"].get(cluster_name) if isinstance(cluster_name, str) else None
    if cluster is None:
        raise KubeconfigError(f"{ctx.source}: context {name!r} names cluster {cluster_name!r}, which is not defined")
    server = cluster.body.get("server")
    if not isinstance(server, str) or not server:
        raise KubeconfigError(f"{cluster.source}: cluster {cluster_name!r} has no server")
    if "://" not in server:
        server = f"https://{server}"

    settings: dict[str, Any] = {
        "server": server,
        "insecure": bool(cluster.body.get("insecure-skip-tls-verify", False)),
        "ca_data": _b64_field(cluster, "certificate-authority-data"),
        "ca_file": _path_field(cluster, "certificate-authority"),
    }
    user_name = ctx.body.get("user")
    if user_name:
        user = tables["users"].get(user_name) if isinstance(user_name, str) else None
        if user is None:
            raise KubeconfigError(f"{ctx.source}: context {name!r} names user {user_name!r}, which is not defined")
        settings.update(_user_credentials(str(user_name), user, server))
    return ApiServer(**settings)


def _b64_field(entry: _Entry, key: str) -> str | None:
    value = entry.body.get(key)
    if not value:
        return None
    try:
        return base64.b64decode(str(value), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError) as err:
        raise KubeconfigError(f"{entry.source}: {key} is not base64-encoded PEM: {err}") from err


def _path_field(entry: _Entry, key: str) -> str | None:
    value = entry.body.get(key)
    if not value:
        return None
    resolved = (entry.base / Path(str(value)).expanduser()).resolve()
    if not resolved.is_file():
        raise KubeconfigError(f"{entry.source}: {key} {value!r} not found (resolved to {resolved})")
    return str(resolved)


def _user_credentials(name: str, user: _Entry, server: str) -> dict[str, Any]:
    body = user.body
    if body.get("auth-provider"):
        provider = (body["auth-provider"] or {}).get("name", "?")
        raise KubeconfigError(
            f"{user.source}: user {name!r} uses auth-provider {provider!r}, which is not supported "
            "(kubectl dropped it in 1.26): switch the user to its exec credential plugin "
            "(e.g. gke-gcloud-auth-plugin, kubelogin) or to a token"
        )
    if body.get("username") or body.get("password"):
        raise KubeconfigError(f"{user.source}: user {name!r} uses basic auth, which is not supported: use a token")
    creds: dict[str, Any] = {
        "token": body.get("token") or None,
        "client_cert_data": _b64_field(user, "client-certificate-data"),
        "client_cert_file": _path_field(user, "client-certificate"),
        "client_key_data": _b64_field(user, "client-key-data"),
        "client_key_file": _path_field(user, "client-key"),
    }
    if creds["token"] is None and body.get("tokenFile"):
        token_file = _path_field(user, "tokenFile")
        assert token_file is not None
        creds["token"] = Path(token_file).read_text().strip()
    if body.get("exec"):
        status = _run_exec_plugin(name, user, server)
        creds["token"] = status.get("token") or creds["token"]
        # ExecCredential carries PEM as-is, not base64 like the kubeconfig *-data fields.
        creds["client_cert_data"] = status.get("clientCertificateData") or creds["client_cert_data"]
        creds["client_key_data"] = status.get("clientKeyData") or creds["client_key_data"]
    return creds


def _run_exec_plugin(name: str, user: _Entry, server: str) -> Mapping[str, Any]:
    # Run once at load time: the wait takes minutes at most, well inside any
    # plugin token lifetime (EKS: 15 min), so no refresh is needed.
    spec = user.body["exec"]
    command = spec.get("command")
    if not isinstance(command, str) or not command:
        raise KubeconfigError(f"{user.source}: user {name!r}: exec.command is missing")
    if os.sep in command and not os.path.isabs(command):
        command = str(user.base / command)  # client-go resolves relative commands against the kubeconfig
    api_version = spec.get("apiVersion") or "client.authentication.k8s.io/v1"
    env = dict(os.environ)
    for item in spec.get("env") or []:
        env[str(item["name"])] = str(item["value"])
    env["KUBERNETES_EXEC_INFO"] = json.dumps(
        {"apiVersion": api_version, "kind": "ExecCredential", "spec": {"interactive": False}}
    )
    argv = [command, *[str(a) for a in spec.get("args") or []]]
    try:
        proc = subprocess.run(
            argv,
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=_EXEC_TIMEOUT_SECONDS,
            check=False,
        )
    except FileNotFoundError as err:
        hint = spec.get("installHint") or ""
        raise KubeconfigError(f"user {name!r}: exec plugin {command!r} not found. {hint}".strip()) from err
    except subprocess.TimeoutExpired as err:
        raise KubeconfigError(f"user {name!r}: exec plugin {command!r} timed out") from err
    if proc.returncode != 0:
        raise KubeconfigError(
            f"user {name!r}: exec plugin {command!r} exited {proc.returncode}: {proc.stderr.strip()[-_BODY_EXCERPT:]}"
        )
    try:
        status = json.loads(proc.stdout).get("status") or {}
    except (json.JSONDecodeError, AttributeError) as err:
        raise KubeconfigError(f"user {name!r}: exec plugin {command!r} did not print an ExecCredential") from err
    if not isinstance(status, Mapping) or not (status.get("token") or status.get("clientCertificateData")):
        raise KubeconfigError(f"user {name!r}: exec plugin {command!r} returned no token or client certificate")
    return status


# --------------------------------------------------------------------------- HTTP


@dataclass(frozen=True)
class _Reply:
    status: int
    body: Any
    message: str


class _TransportError(Exception):
    """No HTTP response at all: refused, reset, timed out, TLS failure."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class _Client:
    def __init__(self, api: ApiServer, timeout: float) -> None:
        self._base = api.server.rstrip("/")
        handlers: list[urllib.request.BaseHandler] = []
        if self._base.startswith("https://"):
            handlers.append(urllib.request.HTTPSHandler(context=api.ssl_context()))
        self._opener = urllib.request.build_opener(*handlers)
        self._headers = {"Accept": "application/json", "User-Agent": _USER_AGENT}
        if api.token:
            self._headers["Authorization"] = f"Bearer {api.token}"
        self._timeout = timeout

    def call(self, method: str, path: str, query: Mapping[str, str] | None = None, body: Any = None) -> _Reply:
        url = self._base + path + (f"?{urllib.parse.urlencode(query)}" if query else "")
        headers = dict(self._headers)
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with self._opener.open(request, timeout=self._timeout) as response:
                return _reply(response.status, response.read(), response.reason)
        except urllib.error.HTTPError as err:
            try:
                raw = err.read()
            except (OSError, http.client.HTTPException):
                raw = b""
            return _reply(err.code, raw, str(err.reason))
        except urllib.error.URLError as err:
            raise _transport_error(err.reason) from err
        except (OSError, http.client.HTTPException) as err:
            raise _transport_error(err) from err


def _transport_error(reason: object) -> _TransportError:
    if isinstance(reason, ssl.SSLCertVerificationError):
        # A wrong CA does not fix itself; retrying would only delay the real error.
        return _TransportError(f"TLS verification of the API server failed: {reason}", retryable=False)
    if isinstance(reason, TimeoutError):
        return _TransportError(f"request timed out: {reason or 'no response'}", retryable=True)
    return _TransportError(f"connection failed: {reason}", retryable=True)


def _reply(status: int, raw: bytes, reason: str) -> _Reply:
    text = raw.decode(errors="replace")
    try:
        body: Any = json.loads(text) if text else None
    except json.JSONDecodeError:
        body = None
    if isinstance(body, Mapping) and body.get("kind") == "Status" and body.get("message"):
        message = str(body["message"])
    elif 200 <= status < 300:
        message = reason or "OK"
    else:
        message = f"{reason}: {text.strip()[:_BODY_EXCERPT]}" if text.strip() else reason
    return _Reply(status, body, message)


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
        """Attempts per step: ``{"deployment": 1, "endpoints": 3, "dryRun": 2}``."""
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
        self.last_message = message
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


def _http_failure(reply: _Reply) -> _Outcome:
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


def _check_deployment(client: _Client, namespace: str, name: str) -> _Outcome:
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


def _check_endpoints(client: _Client, namespace: str, service: str, pod_selector: str | None) -> _Outcome:
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


def _dry_run_flavor(client: _Client, version: str) -> _Outcome:
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


def _hints(step: str, outcome: _Outcome, namespace: str, deployment: str, version: str) -> list[str]:
    hints = []
    if outcome.status in (401, 403):
        verb = {
            STEP_DEPLOYMENT: "get deployments",
            STEP_ENDPOINTS: "list endpointslices.discovery.k8s.io",
            STEP_DRY_RUN: f"create resourceflavors.{GROUP}",
        }[step]
        hints.append(f"the credentials are rejected or lack RBAC: kubectl auth can-i {verb} -n {namespace}")
        if step == STEP_ENDPOINTS:
            hints.append(f"(step 2 also lists pods: kubectl auth can-i list pods -n {namespace})")
    elif outcome.status == 404 and step == STEP_DEPLOYMENT:
        hints.append(f"is Kueue installed in namespace {namespace}? helm -n {namespace} list")
    elif outcome.status == 404 and step == STEP_DRY_RUN:
        hints.append(
            f"is {GROUP}/{version} served by this Kueue release? "
            f"kubectl get crd resourceflavors.{GROUP} -o jsonpath='{{.spec.versions[*].name}}'"
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
    namespace: str = "kueue-system",
    deployment: str = "kueue-controller-manager",
    webhook_service: str = "kueue-webhook-service",
    api_version: str = "v1beta2",
    attempts: int = 20,
    interval: float = 1.0,
    timeout_per_request: float = 10.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    *,
    max_interval: float = MAX_INTERVAL_SECONDS,
    deadline: float | None = 300.0,
    match_pod_ips: bool = True,
    log: Callable[[str], None] | None = None,
) -> ReadinessReport:
    """Block until Kueue's webhook admits a dry-run ResourceFlavor; raise :class:`KueueNotReady` if it doesn't.

    Steps, in order (see the module docstring): ``deployment`` rolled out and
    Available, webhook ``endpoints`` ready (and, with ``match_pod_ips``, the
    same IPs as the ready controller pods), then a ``dryRun`` create.

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
    client = _Client(api, timeout_per_request)
    started = clock()
    deadline_at = None if deadline is None else started + deadline

    def run(step: str, title: str, attempt: Callable[[], _Outcome]) -> tuple[StepReport, Any]:
        step_started = clock()
        number = 0
        while True:
            number += 1
            try:
                outcome = attempt()
            except _TransportError as err:
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
    return ReadinessReport((deployment_step, endpoints_step, dry_run_step), clock() - started)
