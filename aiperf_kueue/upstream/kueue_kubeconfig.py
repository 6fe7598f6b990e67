"""The kubeconfigs Kueue refuses for a MultiKueue worker: the checks, ported.

Upstream: kueue v0.19.2 pkg/.../multikueue/multikueuecluster.go; kubernetes v1.36.3 client-go/tools/clientcmd, rest

Kueue's ``pkg/controller/admissionchecks/multikueue/multikueuecluster.go``: ``validateKubeconfig``,
``validateRestConfig`` and ``isValidHostname`` (the same in 0.15.0), with what
they call in client-go (``clientcmd``: ``Load``, ``RESTConfigFromKubeConfig``, ``DirectClientConfig.ClientConfig``
and ``ConfirmUsable``, ``validation.go``; ``rest.IsConfigTransportTLS``; Kueue 0.19.2 builds with client-go
v0.36.2, read here at v0.36.3), Go 1.26's ``net/url`` ``Parse`` and ``net.SplitHostPort`` (Kueue 0.19.2's Go),
and apimachinery's ``IsDNS1123Subdomain``.

Kueue reads a MultiKueueCluster's kubeconfig from its Secret and, if ``validateKubeconfig`` fails, marks the
cluster inactive with reason ``InsecureKubeConfig`` and dispatches nothing to that worker: the manager's
workloads wait, and nothing says so where ``pulumi up`` runs. These checks let the program refuse such a
kubeconfig before it is applied. In Kueue's order:

- every user: no ``tokenFile``; every cluster: no ``insecure-skip-tls-verify``, no ``certificate-authority``
  path (only ``-data``), a ``server``;
- the current context must resolve as client-go resolves it (its context, and its cluster, exist; the
  context's user, if any, passes client-go's own checks: one authentication method, a client certificate
  with its key, no file paths Kueue's pod would have to read);
- the current cluster's server host must be an IP address or a DNS-1123 subdomain (lower-cased first);
- over TLS (an ``https://`` server; client-go reads no credentials otherwise) the current user has no basic
  auth, no ``exec`` plugin (what GKE and EKS kubeconfigs use) and no ``auth-provider``.

client-go's own checks of the current context run whatever the transport (``ConfirmUsable``), so they matter
under a plain ``http://`` server too, where Kueue's own refusal of ``exec`` does not apply: an ``exec`` entry
needs a ``command``, an ``apiVersion``, named ``env`` entries and an ``interactiveMode`` of ``Never``,
``IfAvailable`` or ``Always`` (defaulted to ``IfAvailable`` for the ``v1alpha1`` and ``v1beta1`` exec APIs,
``api/v1/defaults.go``); the current cluster's ``proxy-url`` must parse as a URL with the scheme ``http``,
``https`` or ``socks5`` (``parseProxyURL``, ``helpers.go``).

Go stops at the first failure; :func:`kubeconfig_problems` reports each one.

A problem names the place in the kubeconfig (``users[0].user.tokenFile``) and never a value: a kubeconfig
holds credentials, and even its names may say more than they should.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from aiperf_kueue.common import limits
from aiperf_kueue.common.display import quoted

#: The Kueue releases whose checks these are (``validateKubeconfig`` is the same in both).
KUEUE_VERSIONS = ("0.15.0", "0.19.2")
#: The MultiKueueCluster condition reason Kueue sets for a kubeconfig it refuses.
REASON = "InsecureKubeConfig"

#: apimachinery ``dns1123SubdomainFmt`` and ``DNS1123SubdomainMaxLength``.
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS1123_MAX = 253
#: Go ``net/url`` ``getScheme``: a letter, then letters, digits, ``+``, ``-`` or ``.``, up to ``:``.
_SCHEME_REST = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.")
#: Go ``net/url`` ``validUserinfo``: the characters a URL's ``user:password@`` may hold unescaped.
_USERINFO = re.compile(r"[A-Za-z0-9\-._:~!$&'()*+,;=%@]*")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")

#: The fields of a kubeconfig (``clientcmd/api/v1`` types) these checks read, by kind of value.
_CLUSTER_STRINGS = ("server", "tls-server-name", "certificate-authority", "proxy-url")
_CLUSTER_BOOLS = ("insecure-skip-tls-verify", "disable-compression")
_CLUSTER_BYTES = ("certificate-authority-data",)
_USER_STRINGS = ("client-certificate", "client-key", "token", "tokenFile", "as", "as-uid", "username", "password")
_USER_BYTES = ("client-certificate-data", "client-key-data")
_USER_MAPPINGS = ("auth-provider", "exec")
#: ``ExecConfig``'s fields by kind of value (``api/v1/types.go``); ``args`` and ``env`` are lists.
_EXEC_STRINGS = ("command", "apiVersion", "installHint", "interactiveMode")
_EXEC_BOOLS = ("provideClusterInfo",)
#: ``ExecInteractiveMode``'s values, and the exec APIs whose empty mode defaults to ``IfAvailable``.
_INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")
_DEFAULT_INTERACTIVE = ("client.authentication.k8s.io/v1alpha1", "client.authentication.k8s.io/v1beta1")
#: ``parseProxyURL``'s schemes.
_PROXY_SCHEMES = ("http", "https", "socks5")
_CONTEXT_STRINGS = ("cluster", "user", "namespace")


@dataclass(frozen=True)
class KubeconfigProblem:
    """One reason Kueue refuses the kubeconfig: where in it, and what (never a value)."""

    place: str
    """The key path in the kubeconfig, e.g. ``clusters[1].cluster.insecure-skip-tls-verify``."""
    message: str

    def __str__(self) -> str:
        return f"{self.place}: {self.message}"


@dataclass(frozen=True)
class _Entry:
    """One entry of ``clusters``, ``users`` or ``contexts``: where it is, and its inner mapping."""

    place: str
    """``clusters[0].cluster``."""
    body: Mapping[str, Any]


def kubeconfig_problems(doc: object) -> list[KubeconfigProblem]:
    """Why Kueue 0.15.0 to 0.19.2 would mark a MultiKueueCluster with this kubeconfig (parsed YAML or JSON)
    inactive, reason ``InsecureKubeConfig``; empty if it would not. At most ``limits.MAX_PROBLEMS``."""
    problems: list[KubeconfigProblem] = []
    for problem in _problems(doc):
        problems.append(problem)
        if len(problems) >= limits.MAX_PROBLEMS:
            break
    return problems


def _problems(doc: object) -> Iterator[KubeconfigProblem]:
    if not isinstance(doc, Mapping):
        yield KubeconfigProblem("kubeconfig", "is not a kubeconfig: the document is not a mapping")
        return
    # clientcmd.Load: the document must decode as a v1 Config (a default apiVersion and kind when left out).
    if doc.get("apiVersion") not in (None, "", "v1"):
        yield KubeconfigProblem("apiVersion", "must be v1 (or left out)")
    if doc.get("kind") not in (None, "", "Config"):
        yield KubeconfigProblem("kind", "must be Config (or left out)")
    current = doc.get("current-context")
    if current is not None and not isinstance(current, str):
        yield KubeconfigProblem("current-context", "is not a string")
    parsed: dict[str, dict[str, _Entry]] = {}
    for section, inner in (("clusters", "cluster"), ("users", "user"), ("contexts", "context")):
        entries: dict[str, _Entry] = {}
        yield from _section(doc.get(section), section, inner, entries)
        parsed[section] = entries
    clusters, users, contexts = parsed["clusters"], parsed["users"], parsed["contexts"]

    # validateKubeconfig's own checks: every user, every cluster.
    for entry in users.values():
        if _text(entry.body, "tokenFile"):
            yield _at(
                entry,
                "tokenFile",
                "Kueue refuses a token file (tokenFile is not allowed); put the token itself in token",
            )
    for entry in clusters.values():
        if entry.body.get("insecure-skip-tls-verify") is True:
            yield _at(
                entry,
                "insecure-skip-tls-verify",
                "Kueue refuses to skip TLS verification; set certificate-authority-data",
            )
        if _text(entry.body, "certificate-authority"):
            yield _at(
                entry,
                "certificate-authority",
                "Kueue refuses a CA file path; embed the CA as certificate-authority-data",
            )
        if not _text(entry.body, "server"):
            yield _at(entry, "server", "Kueue requires a server URL for every cluster")

    # clientcmd.RESTConfigFromKubeConfig: the current context, its user and its cluster.
    context_name = current if isinstance(current, str) else ""
    context = contexts.get(context_name)
    if context is None and context_name:
        yield KubeconfigProblem("current-context", "names no entry of contexts")
    cluster_name = _text(context.body, "cluster") if context else ""
    user_name = _text(context.body, "user") if context else ""
    cluster = clusters.get(cluster_name)
    if cluster is None:
        # ConfirmUsable's ErrEmptyCluster / ErrEmptyConfig: nothing to connect to (a cluster without settings
        # has no server, reported above).
        if context is not None:
            yield _at(context, "cluster", "names no cluster with settings: Kueue has no server to connect to")
        elif not context_name:
            yield KubeconfigProblem("current-context", "is not set: Kueue connects through the current context")
    user = users.get(user_name)
    if user is not None:
        yield from _usable_user(user)
    proxy = _text(cluster.body, "proxy-url") if cluster else ""
    if cluster is not None and proxy:
        url = _parse_url(proxy)
        if url is None or url.scheme not in _PROXY_SCHEMES:
            yield _at(cluster, "proxy-url", "is not a URL with the scheme http, https or socks5")
    server = _text(cluster.body, "server") if cluster else ""
    if cluster is None or not server:
        return
    # validateRestConfig: the host (lower-cased as Kueue does), then, over TLS only, the user's credentials.
    if not _is_valid_hostname(server.lower()):
        yield _at(
            cluster,
            "server",
            "Kueue refuses the server (untrusted server endpoint): its host is neither an IP address nor a "
            "DNS name, or the URL has no scheme",
        )
    if user is None or not _over_tls(server):
        return
    if _text(user.body, "username") or _text(user.body, "password"):
        key = "username" if _text(user.body, "username") else "password"
        yield _at(user, key, "Kueue refuses basic auth (username and password); use a ServiceAccount token")
    if isinstance(user.body.get("exec"), Mapping):
        yield _at(user, "exec", "Kueue refuses exec plugins (GKE and EKS kubeconfigs use one); use a token")
    if isinstance(user.body.get("auth-provider"), Mapping):
        yield _at(user, "auth-provider", "Kueue refuses auth providers; use a ServiceAccount token")


def _section(value: object, section: str, inner: str, entries: dict[str, _Entry]) -> Iterator[KubeconfigProblem]:
    """clientcmd.Load's decoding of one named list: its shape, field types, and names unique."""
    if value is None:
        return
    if not isinstance(value, list):
        yield KubeconfigProblem(section, "is not a list")
        return
    first: dict[str, int] = {}
    for index, item in enumerate(value):
        place = f"{section}[{index}]"
        if not isinstance(item, Mapping):
            yield KubeconfigProblem(place, "is not a mapping")
            continue
        name = item.get("name")
        if name is not None and not isinstance(name, str):
            yield KubeconfigProblem(f"{place}.name", "is not a string")
            continue
        name = name or ""
        if name in first:
            yield KubeconfigProblem(f"{place}.name", f"repeats the name of {section}[{first[name]}]")
            continue
        first[name] = index
        body = item.get(inner)
        if body is not None and not isinstance(body, Mapping):
            yield KubeconfigProblem(f"{place}.{inner}", "is not a mapping")
            continue
        entry = _Entry(f"{place}.{inner}", body or {})
        yield from _field_types(entry, section)
        entries[name] = entry


def _field_types(entry: _Entry, section: str) -> Iterator[KubeconfigProblem]:
    """Go's JSON decoding into the v1 types: a value of the wrong kind fails the whole kubeconfig."""
    strings, bools, data, mappings = {
        "clusters": (_CLUSTER_STRINGS, _CLUSTER_BOOLS, _CLUSTER_BYTES, ()),
        "users": (_USER_STRINGS, (), _USER_BYTES, _USER_MAPPINGS),
        "contexts": (_CONTEXT_STRINGS, (), (), ()),
    }[section]
    body = entry.body
    yield from _scalar_types(entry, strings, bools)
    for key in data:
        if body.get(key) is not None and not _is_base64(body[key]):
            yield _at(entry, key, "is not base64 text")
    for key in mappings:
        if body.get(key) is not None and not isinstance(body[key], Mapping):
            yield _at(entry, key, "is not a mapping")
    if isinstance(body.get("exec"), Mapping):
        yield from _exec_types(_Entry(f"{entry.place}.exec", body["exec"]))


def _scalar_types(entry: _Entry, strings: tuple[str, ...], bools: tuple[str, ...]) -> Iterator[KubeconfigProblem]:
    """Go's JSON decoding of ``entry``'s string and bool fields: absent or null is fine, another kind is not."""
    for key in strings:
        if entry.body.get(key) is not None and not isinstance(entry.body[key], str):
            yield _at(entry, key, "is not a string")
    for key in bools:
        if entry.body.get(key) is not None and not isinstance(entry.body[key], bool):
            yield _at(entry, key, "is not true or false")


def _exec_types(plugin: _Entry) -> Iterator[KubeconfigProblem]:
    """Go's JSON decoding into ``ExecConfig``: strings, a bool, ``args`` a list of strings, ``env`` a list of
    ``{name, value}`` string mappings."""
    body = plugin.body
    yield from _scalar_types(plugin, _EXEC_STRINGS, _EXEC_BOOLS)
    args = body.get("args")
    if args is not None and not (isinstance(args, list) and all(isinstance(a, str) for a in args)):
        yield _at(plugin, "args", "is not a list of strings")
    env = body.get("env")
    if env is None:
        return
    if not isinstance(env, list):
        yield _at(plugin, "env", "is not a list")
        return
    for index, var in enumerate(env):
        if not isinstance(var, Mapping):
            yield KubeconfigProblem(f"{plugin.place}.env[{index}]", "is not a mapping")
            continue
        for key in ("name", "value"):
            if var.get(key) is not None and not isinstance(var[key], str):
                yield KubeconfigProblem(f"{plugin.place}.env[{index}].{key}", "is not a string")


def _usable_user(user: _Entry) -> Iterator[KubeconfigProblem]:
    """client-go ``validateAuthInfo`` for the current context's user (the parts a kubeconfig for Kueue can hit)."""
    body = user.body
    if _text(body, "token") and (_text(body, "username") or _text(body, "password")):
        yield _at(user, "token", "a token and basic auth: client-go takes one authentication method")
    cert, cert_data = _text(body, "client-certificate"), _text(body, "client-certificate-data")
    key, key_data = _text(body, "client-key"), _text(body, "client-key-data")
    if cert or cert_data:
        if cert:
            yield _at(user, "client-certificate", "a file path Kueue's pod cannot read; embed client-certificate-data")
        if key:
            yield _at(user, "client-key", "a file path Kueue's pod cannot read; embed client-key-data")
        if not key and not key_data:
            yield _at(user, "client-certificate-data", "a client certificate without client-key-data")
    impersonates = any(body.get(k) for k in ("as-uid", "as-groups", "as-user-extra"))
    if impersonates and not _text(body, "as"):
        yield _at(user, "as", "is required with as-uid, as-groups or as-user-extra")
    if isinstance(body.get("exec"), Mapping) and isinstance(body.get("auth-provider"), Mapping):
        yield _at(user, "auth-provider", "with an exec plugin: client-go takes one of them")
    if isinstance(body.get("exec"), Mapping):
        yield from _usable_exec(_Entry(f"{user.place}.exec", body["exec"]))


def _usable_exec(plugin: _Entry) -> Iterator[KubeconfigProblem]:
    """client-go ``validateAuthInfo``'s checks of an ``exec`` entry, after ``SetDefaults_ExecConfig``."""
    body = plugin.body
    if not _text(body, "command"):
        yield _at(plugin, "command", "is required: client-go runs no exec plugin without a command")
    api_version = _text(body, "apiVersion")
    if not api_version:
        yield _at(plugin, "apiVersion", "is required for an exec plugin (e.g. client.authentication.k8s.io/v1)")
    env = body.get("env")
    for index, var in enumerate(env if isinstance(env, list) else []):
        if isinstance(var, Mapping) and not _text(var, "name"):
            yield KubeconfigProblem(f"{plugin.place}.env[{index}].name", "is required for each exec env entry")
    mode = _text(body, "interactiveMode") or ("IfAvailable" if api_version in _DEFAULT_INTERACTIVE else "")
    if not mode:
        yield _at(plugin, "interactiveMode", "is required: one of Never, IfAvailable, Always")
    elif mode not in _INTERACTIVE_MODES:
        yield _at(plugin, "interactiveMode", "must be one of Never, IfAvailable, Always")


def _at(entry: _Entry, key: str, message: str) -> KubeconfigProblem:
    return KubeconfigProblem(f"{entry.place}.{key}", message)


def _text(body: Mapping[str, Any], key: str) -> str:
    """A string field as Go decodes it: absent or null is empty (a value of another kind is reported apart)."""
    value = body.get(key)
    return value if isinstance(value, str) else ""


def _is_base64(value: object) -> bool:
    """Whether Go's JSON decoding of a ``[]byte`` field takes ``value``: standard base64 text."""
    if not isinstance(value, str):
        return False
    try:
        base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        return False
    return True


# --------------------------------------------------------------------------- Go's URL and host rules


@dataclass(frozen=True)
class _Url:
    scheme: str
    host: str


def _parse_url(raw: str) -> _Url | None:
    """Go ``url.Parse``: the scheme (lower-cased) and the host (``host:port`` or ``[ip]:port``); None where Go
    returns an error. Only what decides the host is followed: Go's unescaping of a host with ``%`` yields
    nothing an IP address or a DNS name could be, and is treated as a failure."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in raw):
        return None
    raw, _, fragment = raw.partition("#")
    if _BAD_ESCAPE.search(fragment):
        return None
    if raw == "*":
        return _Url("", "")
    scheme, rest = _scheme(raw)
    if scheme is None:
        return None
    rest = rest.partition("?")[0]
    if not rest.startswith("/"):
        if scheme:
            return _Url(scheme, "")  # opaque: "host:6443" reads as scheme "host"
        if ":" in rest.partition("/")[0]:
            return None  # "first path segment in URL cannot contain colon"
        return _Url("", "")
    host = ""
    if rest.startswith("//") and (scheme or not rest.startswith("///")):
        authority, slash, rest = rest[2:].partition("/")
        rest = slash + rest
        userinfo, at, hostport = authority.rpartition("@")
        if at and not _USERINFO.fullmatch(userinfo):
            return None
        if at and _BAD_ESCAPE.search(userinfo):
            return None
        if not _valid_host(scheme, hostport):
            return None
        host = hostport
    if _BAD_ESCAPE.search(rest):
        return None
    return _Url(scheme, host)


def _scheme(raw: str) -> tuple[str | None, str]:
    """Go ``getScheme``: ``("", raw)`` without one; ``(None, raw)`` for ``missing protocol scheme``."""
    for index, char in enumerate(raw):
        if char.isascii() and char.isalpha():
            continue
        if char in _SCHEME_REST:
            if index == 0:
                return "", raw
            continue
        if char == ":":
            if index == 0:
                return None, raw
            return raw[:index].lower(), raw[index + 1 :]
        return "", raw
    return "", raw


def _valid_host(scheme: str, host: str) -> bool:
    """Go ``parseHost`` (Go 1.26, which Kueue 0.19.2 is built with): a bracketed IPv6 literal with an optional
    port, or a name with an optional numeric port after its first colon (``http``, ``https``) or its last."""
    if "%" in host or host.rfind("[") > 0:
        return False
    if host.startswith("["):
        end = host.rfind("]")
        if end < 0 or not _valid_optional_port(host[end + 1 :]):
            return False
        try:
            # Only an IPv6 address may be bracketed (an IPv4-mapped one is IPv6 to both Go and Python).
            return isinstance(ipaddress.ip_address(host[1:end]), ipaddress.IPv6Address)
        except ValueError:
            return False
    colon = host.find(":") if scheme in ("http", "https") else host.rfind(":")
    return colon < 0 or _valid_optional_port(host[colon:])


def _valid_optional_port(port: str) -> bool:
    return port == "" or (port[0] == ":" and all(c in "0123456789" for c in port[1:]))


def _split_host(hostport: str) -> str:
    """The host of ``net.SplitHostPort``, or ``hostport`` itself where it fails (as ``isValidHostname`` does)."""
    colon = hostport.rfind(":")
    if colon < 0:
        return hostport
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0 or end + 1 != colon:
            return hostport
        host, after = hostport[1:end], end + 1
        if "[" in hostport[1:] or "]" in hostport[after:]:
            return hostport
        return host
    host = hostport[:colon]
    if ":" in host or "[" in hostport or "]" in hostport:
        return hostport
    return host


def _is_ip(host: str) -> bool:
    """Go ``net.ParseIP``: dotted decimal IPv4 (no leading zeros) or IPv6 without a zone."""
    if "%" in host or not host.isascii():
        return False
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _is_valid_hostname(server: str) -> bool:
    """Kueue ``isValidHostname``: the URL's host is an IP address or a DNS-1123 subdomain."""
    url = _parse_url(server)
    if url is None:
        return False
    host = _split_host(url.host)
    if _is_ip(host):
        return True
    return len(host) <= _DNS1123_MAX and _DNS1123_SUBDOMAIN.fullmatch(host) is not None


def _over_tls(server: str) -> bool:
    """client-go ``rest.IsConfigTransportTLS`` at the point ``ClientConfig`` reads credentials: the server is an
    ``https`` URL with a host (a bare ``host:port`` defaults to ``http``; no CA is known to client-go yet)."""
    url = _parse_url(server)
    return url is not None and url.scheme == "https" and url.host != ""


def server_refusal(server: str) -> str | None:
    """Why a worker's ``server`` cannot carry the token a worker mints for its manager: over anything but
    ``https://`` client-go sends no token (so the manager's Kueue would reach the worker without credentials),
    and a host Kueue refuses (:func:`_is_valid_hostname`). None if the URL will do (a URL holds no
    credential: the message quotes it, cut when long)."""
    shown = quoted(server)
    if len(server) > 2048 or not _over_tls(server):
        return f"must be an https:// URL of the worker's API server, got {shown}"
    if not _is_valid_hostname(server.lower()):
        return (
            "Kueue refuses it (untrusted server endpoint): its host is neither an IP address nor a DNS name, "
            f"got {shown}"
        )
    return None
