"""Endpoint credentials the way AIPerf 0.13.0 takes them, and ``${VAR}`` references it cannot resolve.

Upstream: aiperf 0.13.0 aiperf/common/endpoint_credentials.py

The released operator never takes a key from the custom resource. It validates the spec in its
own process, where ``${VAR}`` is substituted from *the operator's* environment (an unset
variable without a default fails the job), and then requires every credential to reach the
benchmark pods from a Secret (``common/endpoint_credentials.py``
``validate_kubernetes_credential_transport``):

- ``endpoint.apiKey`` set → a Secret-backed ``AIPERF_INJECTED_API_KEY`` or ``OPENAI_API_KEY``
  in ``podTemplate.env``; in the pods ``AIPERF_INJECTED_API_KEY`` fills an unset or
  ``<redacted>`` key and ``OPENAI_API_KEY`` only a ``<redacted>`` one;
- a credential header (``Authorization``, ``X-Api-Key``, ...) → Secret-backed ``AIPERF_INJECTED_HEADERS``;
- a URL with userinfo or a credential query parameter → Secret-backed ``AIPERF_INJECTED_ENDPOINT_URLS``.

This program adds one rule of its own: ``apiKey`` may only be omitted or ``<redacted>``, so a
key is never written into an AIPerfJob (where anyone who can read the object reads it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import unquote_plus

from aiperf_kueue.config.aiperf_endpoint import (
    ENV_REFERENCE,
    INJECTED_API_KEY,
    INJECTED_ENDPOINT_URLS,
    INJECTED_HEADERS,
    OPENAI_API_KEY,
    REDACTED,
)
from aiperf_kueue.config.aiperf_spec import AIPerfJobSpec
from aiperf_kueue.workload.requests import SizingError

ENDPOINT = "spec.benchmark.endpoint"
_SENSITIVE_QUERY = re.compile(
    r"api[-_ ]?key|apikey|key|token|access[-_ ]?token|auth[-_ ]?token|bearer[-_ ]?token|id[-_ ]?token|"
    r"refresh[-_ ]?token|secret|client[-_ ]?secret|password|passwd|credential|access[-_ ]?key[-_ ]?id|"
    r"awsaccesskeyid|sig|signature|x-amz-signature|x-amz-security-token|x-amz-credential|x-goog-signature|"
    r"x-goog-credential",
    re.IGNORECASE,
)
_QUERY_PARAM = re.compile(r"[?&]([^=&#]*)=([^&#]*)")
_USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^@/?#]+@")


def url_has_credentials(url: str) -> bool:
    """Whether the release's ``redact_url`` would change ``url``: userinfo, or a credential query parameter."""
    if REDACTED in url or _USERINFO.search(url):
        return True
    for name, value in _QUERY_PARAM.findall(url):
        try:
            decoded = unquote_plus(name, errors="strict")
        except UnicodeDecodeError:
            decoded = name
        if _SENSITIVE_QUERY.fullmatch(decoded) and value != REDACTED:
            return True
    return False


def _transport_error(missing: list[str], where: str, why: str) -> SizingError:
    names = ", ".join(missing)
    return SizingError(
        where,
        why,
        "Kubernetes endpoint credentials must come from Secret-backed pod environment variables. Configure "
        f"--env-from-secrets for: {names}",
    )


def credential_problems(spec: AIPerfJobSpec) -> list[SizingError]:
    """Where the release would refuse the endpoint's credentials, or the program would store one."""
    endpoint = spec.benchmark.endpoint
    secret_env = spec.pod_template.secret_env_names() if spec.pod_template else set()
    out: list[SizingError] = []
    key = endpoint.api_key
    if key is not None and key != REDACTED:
        out.append(
            SizingError(
                f"{ENDPOINT}.apiKey",
                "a key here is stored in the AIPerfJob for anyone who can read it (and a ${VAR} is resolved in the "
                "operator's process, not the pod's): remove apiKey and give the pods the key from a Secret, "
                f"podTemplate.env: [{{name: {INJECTED_API_KEY}, valueFrom: {{secretKeyRef: {{name: <secret>, "
                "key: <key>}}}]",
            )
        )
    elif key is not None and not {INJECTED_API_KEY, OPENAI_API_KEY} & secret_env:
        out.append(
            _transport_error(
                [f"{INJECTED_API_KEY} (or {OPENAI_API_KEY})"],
                f"{ENDPOINT}.apiKey",
                f"apiKey {REDACTED} needs the key from a Secret: add {INJECTED_API_KEY} with valueFrom.secretKeyRef "
                "to podTemplate.env",
            )
        )
    sensitive = endpoint.sensitive_headers()
    if sensitive and INJECTED_HEADERS not in secret_env:
        out.append(
            _transport_error(
                [INJECTED_HEADERS],
                f"{ENDPOINT}.headers.{sensitive[0]}",
                f"credential header(s) {', '.join(sensitive)} must reach the pods from a Secret: add "
                f"{INJECTED_HEADERS} (a JSON object of header → value) with valueFrom.secretKeyRef to podTemplate.env",
            )
        )
    secret_urls = [i for i, u in enumerate(endpoint.urls) if url_has_credentials(u)]
    if secret_urls and INJECTED_ENDPOINT_URLS not in secret_env:
        out.append(
            _transport_error(
                [INJECTED_ENDPOINT_URLS],
                f"{ENDPOINT}.urls[{secret_urls[0]}]",
                f"a URL with credentials must reach the pods from a Secret: add {INJECTED_ENDPOINT_URLS} (a JSON list "
                "of URLs) with valueFrom.secretKeyRef to podTemplate.env",
            )
        )
    return out


def credential_warnings(spec: AIPerfJobSpec) -> list[str]:
    """Credentials the pods would silently not use."""
    secret_env = spec.pod_template.secret_env_names() if spec.pod_template else set()
    key = spec.benchmark.endpoint.api_key
    if OPENAI_API_KEY in secret_env and INJECTED_API_KEY not in secret_env and key != REDACTED:
        return [
            f"spec.podTemplate.env {OPENAI_API_KEY}: AIPerf 0.13.0 uses it only to fill an apiKey of {REDACTED}, and "
            f"this endpoint has none, so the pods send no key; name the variable {INJECTED_API_KEY} instead (or set "
            f"apiKey: {REDACTED})"
        ]
    return []


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _strings(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{path}[{i}]")


#: The spec keys the operator substitutes ``${VAR}`` in (``AIPerfConfig``'s envelope).
SUBSTITUTED_KEYS = ("benchmark", "variables", "plot", "multiRun", "randomSeed", "schemaVersion", "noSweepTable")


def unresolved_variables(spec: dict[str, Any], operator_env: Mapping[str, str] | None) -> list[SizingError]:
    """Every ``${VAR}`` without a default that the operator's env does not set (``None``: its env
    is unknown, and only what no env could hold is reported, which is nothing)."""
    if operator_env is None:
        return []
    out = []
    for key in SUBSTITUTED_KEYS:
        for path, text in _strings(spec.get(key), f"spec.{key}"):
            for match in ENV_REFERENCE.finditer(text):
                name, default = match.group(1), match.group(2)
                if default is None and name not in operator_env:
                    out.append(
                        SizingError(
                            path,
                            f"${{{name}}} is substituted in the operator's process, whose env has no {name}: give a "
                            f"default (${{{name}:value}}) or, for a credential, a Secret-backed pod env variable",
                            f"Invalid spec: Required environment variable '{name}' is not set\n"
                            "Context: Use ${VAR:default} syntax to provide a default value",
                        )
                    )
    return out
