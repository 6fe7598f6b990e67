"""How the readiness gate reaches the API server: the official Kubernetes Python client.

Its kubeconfig loader (contexts, ``$KUBECONFIG`` merged as kubectl merges it, exec credential
plugins with token refresh, client certificates, ``proxy-url``, ``tls-server-name``, basic auth,
the in-cluster service account) builds the connection settings, and its API client sends each
request, one per call (no retries inside: the wait has its own). Any HTTP status is an answer
(:class:`Reply`); no answer at all is a :class:`TransportError`.
"""

from __future__ import annotations

import json
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import urllib3
import yaml
from kubernetes import config as kube_config
from kubernetes.client import ApiClient, Configuration
from kubernetes.config import ConfigException

from aiperf_kueue.providers.kubeconfig import (
    INLINE_KUBECONFIG,
    KubeconfigError,
    is_kubeconfig_contents,
    parse_kubeconfig_contents,
)

_USER_AGENT = "aiperf-kueue-readiness"
_BODY_EXCERPT = 300


# --------------------------------------------------------------------------- connection settings


@dataclass(frozen=True)
class ApiServer:
    """One Kubernetes API server, as the Kubernetes client's loader configured it.

    Credentials stay out of ``repr``, so a settings object can be logged.
    """

    configuration: Configuration = field(repr=False)
    """The client's settings: host, TLS, proxy, credentials (and their refresh)."""
    source: str
    """Where they came from, as errors name it: a kubeconfig path, ``<inline kubeconfig>``, or in-cluster."""

    @property
    def server(self) -> str:
        """Base URL, e.g. ``https://10.0.0.1:6443``."""
        return str(self.configuration.host)

    @property
    def token(self) -> str | None:
        """The bearer token the requests carry, if any."""
        value = self.configuration.api_key.get("BearerToken") or self.configuration.api_key.get("authorization")
        if not value:
            return None
        scheme, _, token = str(value).strip().partition(" ")
        return token if scheme.lower() == "bearer" else None

    @classmethod
    def from_kubeconfig(cls, path: str | os.PathLike[str] | None = None, context: str | None = None) -> ApiServer:
        """Settings of ``context`` (default: ``current-context``) in a kubeconfig.

        ``path`` is a kubeconfig path or, as ``kubernetes:kubeconfig`` may be, its contents
        (YAML or JSON; see :func:`is_kubeconfig_contents`). Errors never quote contents.
        It defaults to ``$KUBECONFIG`` (a ``os.pathsep``-separated list, merged the way
        kubectl does) and then ``~/.kube/config``.
        """
        configuration = Configuration()
        try:
            if path is not None and is_kubeconfig_contents(path):
                source = INLINE_KUBECONFIG
                doc = parse_kubeconfig_contents(str(path))
                _check_context(doc, context, source)
                kube_config.load_kube_config_from_dict(
                    doc, context=context, client_configuration=configuration, persist_config=False
                )
            else:
                source = os.pathsep.join(_kubeconfig_files(path))
                _check_context(None, context, source)
                kube_config.load_kube_config(
                    config_file=source, context=context, client_configuration=configuration, persist_config=False
                )
            merged = doc if source == INLINE_KUBECONFIG else _merged_kubeconfig(source)
        except (ConfigException, ValueError, TypeError, KeyError, OSError, yaml.YAMLError) as err:
            raise KubeconfigError(f"{source}: cannot use this kubeconfig: {err}") from None
        api = cls(_one_request_per_attempt(configuration), source)
        _exec_gave_credentials(api, merged, context)
        return api

    @classmethod
    def in_cluster(cls) -> ApiServer:
        """Settings of the pod this runs in: ``KUBERNETES_SERVICE_HOST/PORT``, the service-account
        token (re-read as the kubelet rotates it) and CA, as the client's ``load_incluster_config`` reads them."""
        configuration = Configuration()
        try:
            kube_config.load_incluster_config(client_configuration=configuration)
        except ConfigException as err:
            raise KubeconfigError(f"in-cluster configuration: {err}") from None
        return cls(_one_request_per_attempt(configuration), "in-cluster")


def _merged_kubeconfig(files: str) -> dict[str, Any]:
    """The kubeconfig ``files`` (``os.pathsep``-separated) merged as the client's loader merges them:
    clusters, contexts and users by name, the first file that names one wins; ``current-context``
    from the last file that sets it."""
    merged: dict[str, Any] = {"clusters": [], "contexts": [], "users": []}
    for path in (Path(p).expanduser() for p in files.split(os.pathsep) if p):
        if not path.exists():
            continue
        doc = yaml.safe_load(path.read_text())
        if not isinstance(doc, Mapping):
            raise ConfigException(f"Invalid kube-config. {path} file is empty")
        for item in ("clusters", "contexts", "users"):
            known = {entry["name"] for entry in merged[item]}
            merged[item] += [entry for entry in doc.get(item) or [] if entry["name"] not in known]
        if "current-context" in doc:
            merged["current-context"] = doc["current-context"]
    return merged


def _named(entries: Any, name: Any) -> Mapping[str, Any] | None:
    """The one entry of a kubeconfig list called ``name`` (None: none, several, or no list)."""
    if not isinstance(entries, list):
        return None
    found = [e for e in entries if isinstance(e, Mapping) and e.get("name") == name]
    return found[0] if len(found) == 1 else None


def _exec_gave_credentials(api: ApiServer, kubeconfig: Mapping[str, Any], context: str | None) -> None:
    """The client logs a failed exec credential plugin and goes on without credentials: say so
    here, by the plugin's name, instead of as a 401 from every request."""
    cfg = api.configuration
    if cfg.api_key or cfg.cert_file:
        return
    entry = _named(kubeconfig.get("contexts"), context or kubeconfig.get("current-context"))
    settings = entry.get("context") if entry else None
    user_name = settings.get("user") if isinstance(settings, Mapping) else None
    user = _named(kubeconfig.get("users"), user_name) if user_name is not None else None
    spec = user.get("user") if user else None
    spec = spec.get("exec") if isinstance(spec, Mapping) else None
    if not isinstance(spec, Mapping):
        return  # no user, or one without exec: nothing was meant to run
    hint = f" {spec['installHint']}" if spec.get("installHint") else ""
    raise KubeconfigError(
        f"{api.source}: user {user_name!r}: exec plugin {spec.get('command')!r} gave no credentials "
        f"(its error is logged above).{hint}"
    )


def _one_request_per_attempt(configuration: Configuration) -> Configuration:
    # The wait retries with its own backoff and counts its attempts: no retries inside a request.
    configuration.retries = urllib3.Retry(total=0, redirect=False)
    return configuration


def _kubeconfig_files(path: str | os.PathLike[str] | None) -> list[str]:
    """The kubeconfig files to load: ``path``, else the ``$KUBECONFIG`` list, else ``~/.kube/config``."""
    if path is not None:
        explicit = Path(path).expanduser()
        if not explicit.is_file():
            raise KubeconfigError(f"kubeconfig not found: {explicit}")
        return [str(explicit)]
    env = os.environ.get("KUBECONFIG")
    if env:
        # kubectl skips missing files in the list; only an all-missing list is an error.
        found = [str(Path(p).expanduser()) for p in env.split(os.pathsep) if p and Path(p).expanduser().is_file()]
        if not found:
            raise KubeconfigError(f"none of the KUBECONFIG files exist: {env}")
        return found
    default = Path.home() / ".kube" / "config"
    if not default.is_file():
        raise KubeconfigError(f"kubeconfig not found: {default} (and KUBECONFIG is not set)")
    return [str(default)]


def _check_context(doc: Mapping[str, Any] | None, context: str | None, source: str) -> None:
    """A context that is not there, named with the contexts that are (the client's own message
    names only the kubeconfig key path)."""
    if context is None:
        return
    if doc is not None:
        names = [c.get("name") for c in doc.get("contexts") or [] if isinstance(c, Mapping)]
    else:
        try:
            contexts, _ = kube_config.list_kube_config_contexts(config_file=source)
        except (ConfigException, ValueError, TypeError, KeyError, OSError):
            return  # loading reports what is wrong with the file
        names = [c.get("name") for c in contexts or []]
    if context not in names:
        known = ", ".join(sorted(str(n) for n in names if n)) or "none"
        raise KubeconfigError(f"{source}: context {context!r} not found (contexts: {known})")


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


# --------------------------------------------------------------------------- HTTP


@dataclass(frozen=True)
class Reply:
    """An HTTP answer: status, the JSON body (None if none or not JSON), and a one-line message."""

    status: int
    body: Any
    message: str


class TransportError(Exception):
    """No HTTP response at all: refused, reset, timed out, TLS failure."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class Client:
    """One request per call through the Kubernetes client; any status is a reply, not an error."""

    def __init__(self, api: ApiServer, timeout: float) -> None:
        self._client = ApiClient(api.configuration)
        self._client.user_agent = _USER_AGENT
        self._timeout = timeout

    def call(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Reply:
        """``method path?query`` with a JSON ``body`` sent as ``content_type`` (``application/merge-patch+json`` for
        a merge patch); the answer, whatever its status."""
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        method, url, headers, body, _ = self._client.param_serialize(
            method, path, query_params=list((query or {}).items()), header_params=headers, body=body,
            auth_settings=["BearerToken"],
        )  # fmt: skip
        try:
            response = self._client.call_api(
                method, url, header_params=headers, body=body, _request_timeout=self._timeout
            )
            raw = response.read()
        except urllib3.exceptions.HTTPError as err:
            raise _transport_error(err) from err
        return _reply(response.status, raw or b"", str(response.reason or ""))


def _transport_error(err: urllib3.exceptions.HTTPError) -> TransportError:
    reason: BaseException = err.reason if isinstance(err, urllib3.exceptions.MaxRetryError) and err.reason else err
    if isinstance(reason, urllib3.exceptions.SSLError) and _verification_failed(reason):
        # A wrong CA does not fix itself; retrying would only delay the real error.
        return TransportError(f"TLS verification of the API server failed: {reason}", retryable=False)
    # urllib3 makes "connection refused" a kind of connect timeout: tell them apart.
    if isinstance(reason, urllib3.exceptions.TimeoutError) and not isinstance(
        reason, urllib3.exceptions.NewConnectionError
    ):
        return TransportError(f"request timed out: {reason}", retryable=True)
    return TransportError(f"connection failed: {reason}", retryable=True)


def _verification_failed(err: BaseException) -> bool:
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError) or any(
            isinstance(a, ssl.SSLCertVerificationError) for a in seen.args
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _reply(status: int, raw: bytes, reason: str) -> Reply:
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
    return Reply(status, body, message)
