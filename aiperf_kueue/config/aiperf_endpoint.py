"""``spec.benchmark.endpoint`` as AIPerf 0.13.0 accepts it (``aiperf.config.endpoint.EndpointConfig``),
and the names of the Secret-backed pod env variables its credentials come from.

Upstream: aiperf 0.13.0 aiperf/config/endpoint.py, aiperf/common/endpoint_credentials.py
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal
from urllib.parse import urlparse

from pydantic import Field, PlainValidator, StrictBool, StrictStr, field_validator, model_validator

from aiperf_kueue.common.display import show
from aiperf_kueue.common.suggest import did_you_mean
from aiperf_kueue.config.aiperf_base import CrdModel, Number

REDACTED = "<redacted>"
#: Pod env variables the operator accepts an endpoint's credentials from, when Secret-backed
#: (``common/endpoint_credentials.py``).
INJECTED_API_KEY = "AIPERF_INJECTED_API_KEY"
OPENAI_API_KEY = "OPENAI_API_KEY"
INJECTED_HEADERS = "AIPERF_INJECTED_HEADERS"
INJECTED_ENDPOINT_URLS = "AIPERF_INJECTED_ENDPOINT_URLS"
ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}")
_FOREIGN_SCHEMES = frozenset({"javascript", "data", "file", "mailto", "tel", "ftp", "ws", "wss"})

#: Header names the release treats as credentials (``common/redact.py``).
_SENSITIVE_HEADERS = frozenset(
    {
        "authorization", "proxy-authorization", "x-api-key", "api-key", "ocp-apim-subscription-key",
        "x-goog-api-key", "x-functions-key", "aeg-sas-key", "x-amz-security-token", "cookie", "set-cookie",
        "x-auth-token", "x-access-token", "x-session-token", "x-csrf-token", "x-xsrf-token",
    }
)  # fmt: skip
_SENSITIVE_FRAGMENTS = (
    "auth", "token", "secret", "password", "passwd", "credential", "cookie", "apikey", "api-key", "api_key",
    "session", "signature", "sas-key", "access-key", "private-key",
)  # fmt: skip


def sensitive_header(name: str) -> bool:
    """Whether the release treats header ``name`` as a credential (``is_sensitive_header_name``)."""
    lowered = name.strip().lower()
    return lowered in _SENSITIVE_HEADERS or any(f in lowered for f in _SENSITIVE_FRAGMENTS)


EndpointType = Literal[
    "audio_transcription", "chat", "cohere_rankings", "completions", "responses", "messages", "chat_embeddings",
    "embeddings", "hf_tei_rankings", "huggingface_generate", "image_generation", "image_edit", "video_generation",
    "image_retrieval", "nim_embeddings", "nim_rankings", "solido_rag", "raw", "template",
]  # fmt: skip
#: Endpoint types whose plugin requires multipart/form-data (``requires_form_data``).
FORM_DATA_TYPES = ("audio_transcription", "image_edit", "video_generation")
#: Endpoint types that never tokenize their input.
NON_TOKENIZING_TYPES = ("audio_transcription", "image_retrieval")


#: An HTTP header name (RFC 9110 ``token``).
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


class EndpointTemplate(CrdModel):
    """``benchmark.endpoint.template``: request body of a ``type: template`` endpoint."""

    body: StrictStr
    """Jinja2 template string for the request body (required)."""

    response_field: StrictStr | None = None
    """JSON path of the response text (default ``text``)."""


def _control_hook(keys: frozenset[str], paths: tuple[str, ...]) -> Any:
    """``false | true | {...}``, a relative path in each of ``paths`` (``control_hooks.py``)."""

    def check(value: Any) -> Any:
        if value is None or isinstance(value, bool):
            return value
        if not isinstance(value, dict):
            raise ValueError(f"must be true, false or a mapping, got {show(value)}")
        unknown = sorted(set(value) - keys)
        if unknown:
            raise ValueError(
                f"unknown key {show(unknown[0])}{did_you_mean(str(unknown[0]), keys)}; "
                f"allowed: {', '.join(sorted(keys))}"
            )
        for key in paths:
            path = value.get(key)
            if path is not None and (not isinstance(path, str) or "://" in path or not path.startswith("/")):
                raise ValueError(f"{key} must be a relative path starting with '/', got {show(path)}")
        return value

    return PlainValidator(check)


class Endpoint(CrdModel):
    """``benchmark.endpoint``: the inference server(s) to benchmark."""

    urls: list[StrictStr] = Field(min_length=1)
    """Server URLs, a list, e.g. ``[http://llm.serving:8000]``; a scheme-less URL gets
    ``http://`` (required)."""

    url_strategy: Literal["round_robin"] | None = None
    """How requests are spread over ``urls`` (default ``round_robin``)."""

    type: EndpointType | None = None
    """API type: ``chat`` (default), ``completions``, ``embeddings``, ``template``, ...;
    ``template`` when only ``template`` is given."""

    path: StrictStr | None = None
    """Endpoint path override; must start with ``/`` (default: the type's path)."""

    api_key: StrictStr | None = None
    """Omit it: the key comes from a Secret, as ``AIPERF_INJECTED_API_KEY`` (``valueFrom.
    secretKeyRef``) in ``spec.podTemplate.env``. The only value allowed here is ``<redacted>``,
    which ``OPENAI_API_KEY`` from a Secret then fills (AIPerf 0.13.0's rules)."""

    timeout: Number | None = Field(None, ge=0)
    """Request timeout in seconds, 0 = none (default 21600)."""

    streaming: StrictBool | None = None
    """Use server-sent events; needed for time-to-first-token (default false)."""

    transport: Literal["http"] | None = None
    """Transport plugin (default: detected from the URL)."""

    connection_reuse: Literal["pooled", "never", "sticky-user-sessions"] | None = None
    """HTTP connection management (default ``pooled``)."""

    use_legacy_max_tokens: StrictBool | None = None
    """Send ``max_tokens`` instead of ``max_completion_tokens`` (default false)."""

    use_server_token_count: StrictBool | None = None
    """Use server-reported token counts (default false)."""

    per_chunk_usage: StrictBool | None = None
    """Request per-chunk token usage on streams; needs ``useServerTokenCount``, ``streaming``
    and type ``chat`` (default false)."""

    template: EndpointTemplate | None = None
    """Request template; required with ``type: template``."""

    headers: dict[str, StrictStr] | None = None
    """Extra HTTP headers. A credential header (``Authorization``, ``X-Api-Key``, any name with
    ``auth``, ``token``, ``key``, ...) needs ``AIPERF_INJECTED_HEADERS`` from a Secret (default none)."""

    extra: dict[str, Any] | None = None
    """Extra request-body fields, free-form (default none)."""

    download_video_content: StrictBool | None = None
    """Download generated videos (default false)."""

    request_content_type: Literal["application/json", "multipart/form-data"] | None = None
    """Request body encoding; multipart only (and by default) for audio_transcription,
    image_edit and video_generation."""

    session_header: StrictStr | None = None
    """Header carrying the per-session affinity id (default none)."""

    uuid_and_strip: StrictBool | None = None
    """AIPerf-managed image stripping for vLLM's multimodal cache; type ``chat`` only (default false)."""

    wait_for_model_timeout: Number | None = Field(None, ge=0)
    """Seconds to wait for the model to become ready before starting, 0 = no probe (default 0).
    ``waitForModelInterval`` and ``waitForModelMode`` need it positive."""

    wait_for_model_interval: Number | None = Field(None, gt=0)
    """Seconds between readiness probes, > 0 (default 5)."""

    wait_for_model_mode: Literal["models", "inference", "both"] | None = None
    """Readiness probe strategy (default ``inference``)."""

    reset_kv_cache: Annotated[
        Any, _control_hook(frozenset({"timeoutSeconds", "maxRetrySeconds", "path"}), ("path",))
    ] = None
    """KV-cache reset before each benchmark cell: ``true``, ``false`` or
    ``{timeoutSeconds, maxRetrySeconds, path}`` (default off)."""

    server_profiler: Annotated[
        Any, _control_hook(frozenset({"timeoutSeconds", "startPath", "stopPath"}), ("startPath", "stopPath"))
    ] = None
    """Server profiler around profiling phases: ``true``, ``false`` or
    ``{timeoutSeconds, startPath, stopPath}`` (default off)."""

    @field_validator("headers")
    @classmethod
    def _headers(cls, headers: dict[str, str] | None) -> dict[str, str] | None:
        # RFC 9110: a header name is a token; a value holds no line break (it would start a new
        # header: request smuggling) and no other control character but the tab.
        for name, value in (headers or {}).items():
            if not _HEADER_NAME.fullmatch(name):
                raise ValueError(
                    f"header name {show(name)} must be an HTTP token (letters, digits and !#$%&'*+-.^_`|~)"
                )
            if any(not ch.isprintable() and ch != "\t" for ch in value):
                raise ValueError(f"header {name}: value {show(value)} holds a line break or control character")
        return headers

    @field_validator("urls")
    @classmethod
    def _urls(cls, urls: list[str]) -> list[str]:
        # config/endpoint.py _validate_endpoint_boundaries, after normalize_http_url.
        for url in urls:
            if "://" not in url and url.partition(":")[0].lower() not in _FOREIGN_SCHEMES:
                url = f"http://{url}"
            if url != url.strip() or any(ch.isspace() for ch in url):
                raise ValueError(f"URL {show(url)} contains whitespace")
            if not url.isprintable():
                raise ValueError(f"URL {show(url)} contains an invisible or control character; remove it")
            parsed = urlparse(url)
            if not parsed.scheme or not parsed.netloc or not parsed.hostname:
                raise ValueError(f"URL {show(url)} is missing scheme or host; expected 'http://host:port'")
            if parsed.scheme.lower() not in ("http", "https"):
                raise ValueError(
                    f"URL {show(url)} has unsupported scheme {show(parsed.scheme)}; expected 'http' or 'https'"
                )
            try:
                port = parsed.port
            except ValueError:
                raise ValueError(f"URL {show(url)} has an invalid port; ports are integers 1..65535") from None
            if port is not None and not 1 <= port <= 65535:
                raise ValueError(f"URL {show(url)} has port {port} outside the valid range 1..65535")
        return urls

    def effective_type(self) -> str:
        """The type AIPerf uses: as given, else ``template`` when a template is given, else ``chat``."""
        if self.type is not None:
            return self.type
        return "template" if self.template is not None else "chat"

    @model_validator(mode="after")
    def _release_rules(self) -> Endpoint:
        kind = self.effective_type()
        if self.path is not None and not self.path.startswith("/"):
            raise ValueError("endpoint.path must start with '/' (e.g. '/v1/chat/completions')")
        if kind == "template" and self.template is None:
            raise ValueError("endpoint.template is required when endpoint.type is 'template'")
        if self.uuid_and_strip and kind != "chat":
            raise ValueError("uuidAndStrip requires endpoint.type 'chat'")
        if self.per_chunk_usage:
            if not self.use_server_token_count:
                raise ValueError("perChunkUsage requires useServerTokenCount")
            if kind != "chat":
                raise ValueError("perChunkUsage requires endpoint.type 'chat'")
            if not self.streaming:
                raise ValueError("perChunkUsage requires streaming")
        store = (self.extra or {}).get("store")
        if kind == "responses" and _truthy(store) and not self.use_server_token_count:
            raise ValueError(
                "a responses endpoint with extra.store true sends only the newest turn; set useServerTokenCount"
            )
        if not (self.wait_for_model_timeout or 0) > 0:
            idle = []
            if self.wait_for_model_interval is not None and self.wait_for_model_interval != 5:
                idle.append("waitForModelInterval")
            if self.wait_for_model_mode is not None and self.wait_for_model_mode != "inference":
                idle.append("waitForModelMode")
            if idle:
                raise ValueError(
                    f"{', '.join(idle)} has no effect unless waitForModelTimeout is positive; set "
                    "waitForModelTimeout to enable the readiness probe"
                )
        form = kind in FORM_DATA_TYPES
        if self.request_content_type == "application/json" and form:
            raise ValueError(f"endpoint type {kind} requires multipart/form-data; application/json is not supported")
        if self.request_content_type == "multipart/form-data" and not form:
            raise ValueError(
                f"requestContentType multipart/form-data is only supported on {', '.join(FORM_DATA_TYPES)}, "
                f"not on endpoint type {kind}"
            )
        return self

    def sensitive_headers(self) -> list[str]:
        """The header names the release treats as credentials."""
        return [name for name in self.headers or {} if sensitive_header(name)]


def _truthy(value: Any) -> bool:
    # config/endpoint.py is_truthy_flag: true, 1, "true", "1", "yes", "on".
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes", "on")
    return bool(value) if isinstance(value, (bool, int)) else False
