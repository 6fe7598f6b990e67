"""``spec.benchmark`` of an AIPerfJob as AIPerf 0.13.0 accepts it (``aiperf.config.BenchmarkConfig``).

The sections that decide what the operator builds are typed with the release's rules: the
endpoint (URLs, type, credentials, readiness probe), the phases (type, kind, stop condition,
concurrency), the runtime (workers, pods, record processors) and the telemetry switches.
Sections the release validates deeply and that change nothing the program predicts (dataset
contents, ramps, SLA filters, adaptive scaling, ...) are checked for their keys only and kept as
given; AIPerf validates their values when the job is created.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal
from urllib.parse import urlparse

from pydantic import (
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from aiperf_kueue.config.base import Model

#: The redaction placeholder an ``apiKey`` may hold (``common/redact.py`` ``REDACTED_VALUE``).
REDACTED = "<redacted>"
#: Pod env variables the operator accepts an endpoint's credentials from, when Secret-backed
#: (``common/endpoint_credentials.py``).
INJECTED_API_KEY = "AIPERF_INJECTED_API_KEY"
OPENAI_API_KEY = "OPENAI_API_KEY"
INJECTED_HEADERS = "AIPERF_INJECTED_HEADERS"
INJECTED_ENDPOINT_URLS = "AIPERF_INJECTED_ENDPOINT_URLS"

_PHASE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_WINDOWS_RESERVED = frozenset(
    {"CON", "PRN", "AUX", "NUL"} | {f"COM{i}" for i in range(1, 10)} | {f"LPT{i}" for i in range(1, 10)}
)
#: ``${NAME}`` or ``${NAME:default}``: substituted in the operator's process (``config/loader/env_vars.py``).
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


def _number(value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"must be a number, got {value!r}")
    return value


#: A JSON number (integer or decimal, never a bool), kept as given.
Number = Annotated[int | float, PlainValidator(_number)]


class CrdModel(Model):
    """A closed object of the AIPerfJob spec: camelCase keys only, unknown keys rejected."""

    model_config = ConfigDict(populate_by_name=False)

    @model_validator(mode="before")
    @classmethod
    def _camel_case_hint(cls, data: Any) -> Any:
        # The API server drops unknown keys of closed objects, snake_case spellings included
        # (the operator would never see them): name the camelCase key instead.
        if isinstance(data, dict) and cls.model_config.get("extra") != "allow":
            aliases = {f.alias or n for n, f in cls.model_fields.items()}
            for key in data:
                if isinstance(key, str) and key not in aliases and to_camel(key) in aliases:
                    raise ValueError(f"unknown key {key!r}: the AIPerfJob CRD uses camelCase, write {to_camel(key)!r}")
        return data


class KeysOnly(CrdModel):
    """A release object whose values AIPerf validates: only its keys are checked here, the
    values are kept as given. ``KEYS`` lists them (camelCase)."""

    model_config = ConfigDict(extra="allow")
    KEYS: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError(f"must be a mapping, got {data!r}")
        allowed = cls.KEYS | {f.alias or n for n, f in cls.model_fields.items()}
        for key in data:
            if key in allowed:
                continue
            if isinstance(key, str) and to_camel(key) in allowed:
                raise ValueError(f"unknown key {key!r}: the AIPerfJob CRD uses camelCase, write {to_camel(key)!r}")
            raise ValueError(f"unknown key {key!r}; allowed: {', '.join(sorted(allowed))}")
        return data


# --------------------------------------------------------------------------- endpoint


EndpointType = Literal[
    "audio_transcription", "chat", "cohere_rankings", "completions", "responses", "messages", "chat_embeddings",
    "embeddings", "hf_tei_rankings", "huggingface_generate", "image_generation", "image_edit", "video_generation",
    "image_retrieval", "nim_embeddings", "nim_rankings", "solido_rag", "raw", "template",
]  # fmt: skip
#: Endpoint types whose plugin requires multipart/form-data (``requires_form_data``).
FORM_DATA_TYPES = ("audio_transcription", "image_edit", "video_generation")
#: Endpoint types that never tokenize their input.
NON_TOKENIZING_TYPES = ("audio_transcription", "image_retrieval")


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
            raise ValueError(f"must be true, false or a mapping, got {value!r}")
        unknown = sorted(set(value) - keys)
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r}; allowed: {', '.join(sorted(keys))}")
        for key in paths:
            path = value.get(key)
            if path is not None and (not isinstance(path, str) or "://" in path or not path.startswith("/")):
                raise ValueError(f"{key} must be a relative path starting with '/', got {path!r}")
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

    @field_validator("urls")
    @classmethod
    def _urls(cls, urls: list[str]) -> list[str]:
        # config/endpoint.py _validate_endpoint_boundaries, after normalize_http_url.
        for url in urls:
            if "://" not in url and url.partition(":")[0].lower() not in _FOREIGN_SCHEMES:
                url = f"http://{url}"
            if url != url.strip() or any(ch.isspace() for ch in url):
                raise ValueError(f"URL {url!r} contains whitespace")
            parsed = urlparse(url)
            if not parsed.scheme or not parsed.netloc or not parsed.hostname:
                raise ValueError(f"URL {url!r} is missing scheme or host; expected 'http://host:port'")
            if parsed.scheme.lower() not in ("http", "https"):
                raise ValueError(f"URL {url!r} has unsupported scheme {parsed.scheme!r}; expected 'http' or 'https'")
            try:
                port = parsed.port
            except ValueError:
                raise ValueError(f"URL {url!r} has an invalid port; ports are integers 1..65535") from None
            if port is not None and not 1 <= port <= 65535:
                raise ValueError(f"URL {url!r} has port {port} outside the valid range 1..65535")
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


# --------------------------------------------------------------------------- phases

PhaseType = Literal["concurrency", "poisson", "gamma", "constant", "user_centric", "fixed_schedule"]
_RATE_TYPES = ("poisson", "gamma", "constant", "user_centric")
_PHASE_KEYS = frozenset(
    {
        "adaptiveAssessmentPeriod", "adaptiveControlMax", "adaptiveControlMin", "adaptiveControlVariable",
        "adaptiveMinCompletedRequests", "adaptiveScale", "adaptiveScaleBaseStep", "adaptiveScaleMaxStepMultiplier",
        "adaptiveScaleStepPercent", "adaptiveScaleStepPolicy", "adaptiveScaleStrategyType", "adaptiveSustainDuration",
        "agenticCacheWarmupDuration", "agenticWarmupGracePeriod", "burstPhaseStarts", "cancellation",
        "concurrencyRamp", "failedRequestThreshold", "prefillRamp", "sla", "systemIdleGapCapSeconds", "timingMode",
        "trajectoryStartMaxRatio", "trajectoryStartMinRatio",
    }
)  # fmt: skip
#: Keys only some phase types have.
_TYPE_KEYS: dict[str, frozenset[str]] = {
    **{t: frozenset({"rate", "rateRamp", "rateSeries"}) for t in ("poisson", "constant")},
    "gamma": frozenset({"rate", "rateRamp", "rateSeries", "smoothness"}),
    "user_centric": frozenset({"rate", "rateRamp", "rateSeries", "users"}),
    "fixed_schedule": frozenset({"autoOffset", "startOffset", "endOffset"}),
    "concurrency": frozenset(),
}


def _duration(value: Any) -> Any:
    # DurationSpec: seconds as a number, or a string such as "300", "5m", "2h".
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"must be seconds or a duration such as '5m', got {value!r}")
    return value


class Phase(KeysOnly):
    """One entry of ``benchmark.phases``. The keys that decide the load and the sizing are
    typed; the other keys the release has (ramps, SLA filters, adaptive scaling, ...) are
    kept as given."""

    KEYS = _PHASE_KEYS | frozenset().union(*_TYPE_KEYS.values())

    name: StrictStr
    """Unique phase name, e.g. ``warmup`` or ``profiling`` (required; letters, digits, ``_``,
    ``-``, starting with a letter or ``_``; unique ignoring case)."""

    kind: Literal["warmup", "profiling"] | None = None
    """Runtime role; required for names other than ``warmup``/``profiling`` (which imply it).
    At least one phase must be ``profiling``."""

    type: PhaseType
    """Load type (required): ``concurrency``, ``poisson``, ``gamma``, ``constant``,
    ``user_centric`` or ``fixed_schedule``."""

    concurrency: StrictInt | None = Field(None, ge=1)
    """Most requests in flight (>= 1; a concurrency phase defaults to 1). The operator sizes
    workers from the largest concurrency of all phases."""

    prefill_concurrency: StrictInt | None = Field(None, ge=1)
    """Most requests in prefill at once (>= 1, at most ``concurrency``; needs ``streaming``)."""

    requests: StrictInt | None = Field(None, ge=1)
    """Stop after this many requests (>= 1). One of ``requests``, ``duration`` or ``sessions``
    is required except for ``fixed_schedule``."""

    duration: Annotated[Any, PlainValidator(_duration)] = None
    """Stop after this long: seconds, or ``"5m"``, ``"2h"``."""

    sessions: StrictInt | None = Field(None, ge=1)
    """Stop after this many sessions (>= 1)."""

    grace_period: Annotated[Any, PlainValidator(_duration)] = None
    """Time allowed after ``duration`` for in-flight requests (needs ``duration``)."""

    seamless: StrictBool | None = None
    """Start without waiting for the previous phase to drain; not on the first phase (default false)."""

    exclude_from_results: StrictBool | None = None
    """Forced by ``kind``: true for warmup, false for profiling; any other value is rejected."""

    rate: Number | None = Field(None, gt=0)
    """Requests per second of a rate phase (> 0); a rate phase needs ``rate`` or ``rateSeries``."""

    users: StrictInt | None = Field(None, ge=1)
    """Users of a ``user_centric`` phase (>= 1, required there)."""

    @model_validator(mode="after")
    def _release_rules(self) -> Phase:
        name = self.name
        if not _PHASE_NAME.fullmatch(name):
            raise ValueError(
                f"phase name must start with a letter or '_' and use only letters, digits, '_' and '-', got {name!r}"
            )
        if name.split(".", 1)[0].upper() in _WINDOWS_RESERVED:
            raise ValueError(f"phase name {name!r} is reserved by Windows and cannot name an artifact directory")
        kind = self.effective_kind()
        if kind is None:
            raise ValueError(f"phase {name!r}: kind is required for names other than warmup and profiling")
        if name in ("warmup", "profiling") and kind != name:
            raise ValueError(f"phase name {name!r} is reserved for kind {name!r}; got kind {kind!r}")
        if self.exclude_from_results is not None and self.exclude_from_results != (kind == "warmup"):
            raise ValueError(
                f"phase {name!r}: excludeFromResults must be {str(kind == 'warmup').lower()} for kind {kind!r}"
            )
        extra = set(self.model_extra or {}) & frozenset().union(*_TYPE_KEYS.values())
        wrong = sorted(extra - _TYPE_KEYS[self.type])
        for field in ("rate", "users"):
            if getattr(self, field) is not None and field not in _TYPE_KEYS[self.type]:
                wrong.append(field)
        if wrong:
            raise ValueError(f"phase {name!r}: a {self.type} phase has no {', '.join(sorted(wrong))}")
        stops = (self.requests, self.duration, self.sessions)
        if self.type != "fixed_schedule" and all(s is None for s in stops):
            raise ValueError(f"phase {name!r}: at least one of requests, duration or sessions must be set")
        if self.prefill_concurrency is not None and self.prefill_concurrency > self.effective_concurrency(0):
            raise ValueError(f"phase {name!r}: prefillConcurrency must be <= concurrency")
        if self.grace_period is not None and self.duration is None:
            raise ValueError(f"phase {name!r}: gracePeriod requires duration")
        if self.type in _RATE_TYPES:
            series = (self.model_extra or {}).get("rateSeries")
            if self.rate is None and series is None:
                raise ValueError(f"phase {name!r}: a {self.type} phase needs rate or rateSeries")
            if self.rate is not None and series is not None:
                raise ValueError(f"phase {name!r}: rate and rateSeries are mutually exclusive")
        if self.type == "user_centric":
            if self.users is None:
                raise ValueError(f"phase {name!r}: a user_centric phase needs users")
            for stop, count in (("sessions", self.sessions), ("requests", self.requests)):
                if count is not None and count < self.users:
                    raise ValueError(f"phase {name!r}: {stop} ({count}) must be >= users ({self.users})")
        return self

    def effective_kind(self) -> str | None:
        """``kind``, or the one the names ``warmup``/``profiling`` imply."""
        if self.kind is None and self.name in ("warmup", "profiling"):
            return self.name
        return self.kind

    def effective_concurrency(self, default: int = 1) -> int:
        """``concurrency`` as the release reads it: a concurrency phase defaults to 1, others to none."""
        if self.concurrency is not None:
            return self.concurrency
        return 1 if self.type == "concurrency" else default


# --------------------------------------------------------------------------- other sections


class Runtime(CrdModel):
    """``benchmark.runtime``: worker processes. The operator overwrites ``ui``, ``apiPort``,
    ``apiHost``, ``communication``, ``serviceRunType`` and ``datasetApiBaseUrl`` for every job."""

    ui: Literal["dashboard", "none", "simple"] | None = None
    """UI mode (overwritten: the operator forces ``simple``)."""

    workers: StrictInt | None = Field(None, ge=1)
    """Total workers across all worker pods, >= 1 (default: ``ceil(largest phase concurrency /
    connectionsPerWorker)``, at least ``workersMin``, rounded up to whole pods). Used as given:
    a total above ``workersPerPod`` that is not a multiple of it fails the job."""

    record_processors: StrictInt | None = Field(None, ge=1)
    """Total record processors (default: one per worker); must divide by the worker-pod count."""

    service_run_type: Literal["kubernetes", "multiprocessing"] | None = None
    """Overwritten by the operator (``kubernetes``)."""

    communication: dict[str, Any] | None = None
    """Overwritten by the operator."""

    api_port: StrictInt | None = Field(None, ge=1, le=65535)
    """AIPerf API port, 1-65535 (overwritten by the operator)."""

    api_host: StrictStr | None = None
    """AIPerf API host; needs ``apiPort`` (overwritten by the operator)."""

    dataset_api_base_url: StrictStr | None = None
    """Overwritten by the operator."""

    workers_per_pod: StrictInt | None = Field(None, ge=1, le=100)
    """Workers per worker pod, 1-100 (default: the operator's ``AIPERF_WORKER_DEFAULT_WORKERS_PER_POD``,
    10). A derived total is rounded up to a multiple of it."""

    record_processors_per_pod: StrictInt | None = Field(None, ge=1, le=100)
    """Record processors per worker pod, 1-100 (default: workers per pod ÷ the operator's scale factor)."""

    workers_min: StrictInt | None = Field(None, ge=1)
    """Floor of a derived worker total, >= 1 and at most ``workers`` (default none)."""

    stats_interval: Number | None = Field(None, ge=0, le=1000)
    """Seconds between realtime stats publishes, 0-1000 (default 5 or 30)."""

    @model_validator(mode="after")
    def _release_rules(self) -> Runtime:
        if self.api_host is not None and self.api_port is None:
            raise ValueError("runtime.apiHost requires runtime.apiPort to be set")
        if self.workers is not None and self.workers_min is not None and self.workers_min > self.workers:
            raise ValueError("runtime.workersMin must be <= runtime.workers")
        return self


def _models(value: Any) -> Any:
    if isinstance(value, str):
        raise ValueError(
            f"must be a list of model names or a mapping with items, got the string {value!r}: AIPerf 0.13.0 "
            "fails such a job after its preflight (\"'str' object has no attribute 'get'\"); write "
            f"models: [{value}] or the shorthand model: {value}"
        )
    if isinstance(value, list):
        if not value or not all(isinstance(m, str) and m for m in value):
            raise ValueError(f"must be a non-empty list of model names, got {value!r}")
        return value
    if isinstance(value, dict):
        items = value.get("items")
        if not isinstance(items, list) or not items:
            raise ValueError("a models mapping needs a non-empty items list")
        unknown = sorted(set(value) - {"items", "strategy"})
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r}; allowed: items, strategy")
        return value
    raise ValueError(f"must be a list of model names or a mapping with items, got {value!r}")


def _model(value: Any) -> Any:
    if isinstance(value, str):
        if not value:
            raise ValueError("must be a model name, got ''")
        return value
    return _models(value)


def _telemetry(keys: frozenset[str]) -> Any:
    def check(value: Any) -> Any:
        # GpuTelemetryConfig / ServerMetricsConfig: a URL (enabled), or a mapping.
        if isinstance(value, str):
            return value
        if not isinstance(value, dict):
            raise ValueError(f"must be a URL or a mapping (e.g. {{enabled: false}}), got {value!r}")
        unknown = sorted(set(value) - keys)
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r}; allowed: {', '.join(sorted(keys))}")
        if not isinstance(value.get("enabled", True), bool):
            raise ValueError(f"enabled must be true or false, got {value['enabled']!r}")
        return value

    return PlainValidator(check)


def telemetry_enabled(value: str | dict[str, Any] | None) -> bool:
    """Whether a ``gpuTelemetry``/``serverMetrics`` value leaves the collector on (default on)."""
    return not (isinstance(value, dict) and value.get("enabled", True) is False)


class Artifacts(KeysOnly):
    """``benchmark.artifacts`` (the operator forces ``dir: /results``)."""

    KEYS = frozenset(
        {"dir", "prefix", "summary", "records", "raw", "trace", "sliceDuration", "showTraceTiming", "userFiles",
         "autoPlot", "plotRequired", "exportOutputsJson"}
    )  # fmt: skip


class Tokenizer(KeysOnly):
    """``benchmark.tokenizer``."""

    KEYS = frozenset({"name", "revision", "trustRemoteCode", "applyChatTemplate", "resolvedNames"})


class Otel(KeysOnly):
    """``benchmark.otel``."""

    KEYS = frozenset({"metricsUrl", "streamMetricsEnabled", "streamTimingEnabled", "customResourceAttributes",
                      "genAiProvider"})  # fmt: skip


class Mlflow(KeysOnly):
    """``benchmark.mlflow``."""

    KEYS = frozenset({"trackingUri", "experiment", "runName", "tags", "parentRunId", "artifactGlobs"})


class Wandb(KeysOnly):
    """``benchmark.wandb``."""

    KEYS = frozenset({"project", "entity", "runName", "tags"})


class NetworkLatency(KeysOnly):
    """``benchmark.networkLatency``."""

    KEYS = frozenset({"enabled", "pingInterval", "meanMs"})


class Logging(CrdModel):
    """``benchmark.logging``."""

    level: Literal["TRACE", "DEBUG", "INFO", "NOTICE", "WARNING", "SUCCESS", "ERROR", "CRITICAL"] | None = None
    """Log level (default ``INFO``)."""


class Metrics(CrdModel):
    """``benchmark.metrics``: the release declares no fields here, so it can only be empty."""


class Accuracy(CrdModel):
    """``benchmark.accuracy``: accuracy benchmarking mode."""

    benchmark: (
        Literal[
            "mmlu", "mmlu_pro", "aime", "hellaswag", "bigbench", "aime24", "aime25", "math_500", "gsm8k",
            "gpqa_diamond", "lcb_codegeneration",
        ]
        | None
    ) = None  # fmt: skip
    """Accuracy benchmark to run (default none: off)."""

    tasks: list[StrictStr] | StrictStr | None = None
    """Tasks or subtasks to evaluate, a list or a comma-separated string (default: all)."""

    n_shots: StrictInt | None = Field(None, ge=0, le=32)
    """Few-shot examples per prompt, 0-32 (default: the benchmark's)."""

    enable_cot: StrictBool | None = None
    """Chain-of-thought prompting (default: the benchmark's)."""

    grader: (
        Literal[
            "exact_match", "math", "multiple_choice", "code_execution", "lighteval_expr", "lighteval_latex",
            "lighteval_gpqa", "lighteval_gsm8k", "mmlu_pro",
        ]
        | None
    ) = None  # fmt: skip
    """Grader override (default: the benchmark's)."""

    system_prompt: StrictStr | None = None
    """Custom system prompt (default none)."""

    verbose: StrictBool | None = None
    """Per-problem grading details (default false)."""


_GPU_TELEMETRY_KEYS = frozenset({"enabled", "urls", "url", "metricsFile", "collector", "mode"})
_SERVER_METRICS_KEYS = frozenset({"enabled", "urls", "url", "formats", "discovery"})


class Benchmark(CrdModel):
    """``spec.benchmark``: the AIPerf benchmark (BenchmarkConfig)."""

    models: Annotated[Any, PlainValidator(_models)] = None
    """Model names, a list (``[meta-llama/Llama-3.1-8B-Instruct]``), or a mapping with
    ``items`` and ``strategy``; required unless ``model`` is given. Not one string: 0.13.0
    fails such a job."""

    model: Annotated[Any, PlainValidator(_model)] = None
    """Shorthand for ``models``: one name, a list or a mapping; set one of the two."""

    endpoint: Endpoint
    """The inference endpoint (required)."""

    datasets: list[dict[str, Any]] | None = Field(None, min_length=1, max_length=1)
    """Exactly one dataset mapping with a ``name`` (type ``synthetic`` when omitted); required
    unless ``dataset`` is given. Its contents are AIPerf's to validate."""

    dataset: dict[str, Any] | None = None
    """Shorthand for ``datasets``: one dataset mapping, named ``default``."""

    phases: list[Phase] | None = Field(None, min_length=1)
    """Phases in execution order, unique names ignoring case, at least one ``profiling``;
    required unless the ``warmup``/``profiling`` shorthand is given. The worker count, and so
    the requests Kueue sees, follow the largest ``concurrency`` here."""

    warmup: dict[str, Any] | None = None
    """Shorthand: the warmup phase (named and kinded ``warmup``); needs ``profiling``, not with ``phases``."""

    profiling: dict[str, Any] | None = None
    """Shorthand: the profiling phase (named and kinded ``profiling``); not with ``phases``."""

    artifacts: Artifacts | None = None
    """Output files (default: AIPerf's)."""

    slos: dict[str, Number] | None = None
    """Metric name → threshold; a request is good only if it meets all (default none)."""

    tokenizer: Tokenizer | None = None
    """Tokenizer (default: the model's); not on audio_transcription or image_retrieval endpoints."""

    gpu_telemetry: Annotated[Any, _telemetry(_GPU_TELEMETRY_KEYS)] = None
    """DCGM GPU telemetry: a URL or a mapping; ``{enabled: false}`` removes the
    GPU_TELEMETRY_MANAGER container from the controller pod (default on)."""

    server_metrics: Annotated[Any, _telemetry(_SERVER_METRICS_KEYS)] = None
    """Prometheus server metrics: a URL or a mapping; ``{enabled: false}`` removes the
    SERVER_METRICS_MANAGER container from the controller pod (default on)."""

    network_latency: NetworkLatency | None = None
    """Network latency calibration (default off)."""

    otel: Otel | None = None
    """OpenTelemetry streaming (default off)."""

    mlflow: Mlflow | None = None
    """MLflow upload (default off)."""

    wandb: Wandb | None = None
    """Weights & Biases upload (default off)."""

    runtime: Runtime | None = None
    """Workers and record processors (default: derived from concurrency)."""

    logging: Logging | None = None
    """Logging (default: level INFO)."""

    metrics: Metrics | None = None
    """Metrics aggregation (no fields: only ``{}``)."""

    accuracy: Accuracy | None = None
    """Accuracy benchmarking (default off)."""

    scenario: StrictStr | None = None
    """Named scenario locking the benchmark invariants (default none)."""

    unsafe_override: StrictBool | None = None
    """Turn scenario lock errors into warnings (default false)."""

    @model_validator(mode="after")
    def _release_rules(self) -> Benchmark:
        # config/loader/normalizers.py, then BenchmarkConfig's validators.
        given = self.model_fields_set
        for short, long in (
            ("warmup", "phases"),
            ("profiling", "phases"),
            ("dataset", "datasets"),
            ("model", "models"),
        ):
            if short in given and long in given:
                raise ValueError(f"set {long} or its shorthand {short}, not both")
        if "warmup" in given and "profiling" not in given:
            raise ValueError("the warmup shorthand requires profiling: a warmup-only benchmark produces no results")
        if self.models is None and self.model is None:
            raise ValueError("benchmark.models is required (a list of model names)")
        if self.datasets is None and self.dataset is None:
            raise ValueError("benchmark.datasets is required (one dataset, e.g. [{name: main, type: synthetic}])")
        for i, ds in enumerate(self.datasets or []):
            if "name" not in ds:
                raise ValueError(f"datasets[{i}] is missing required 'name' field (e.g. 'main')")
        if self.phases is None and self.profiling is None:
            raise ValueError("benchmark.phases is required (e.g. [{name: profiling, type: concurrency, ...}])")
        phases = self.all_phases()
        seen: dict[str, str] = {}
        for phase in phases:
            if phase.name.lower() in seen:
                raise ValueError(
                    f"phase names must be unique ignoring case, {phase.name!r} repeats {seen[phase.name.lower()]!r}"
                )
            seen[phase.name.lower()] = phase.name
        if not any(p.effective_kind() == "profiling" for p in phases):
            raise ValueError("a phase of kind 'profiling' is required")
        if phases and phases[0].seamless:
            raise ValueError(f"phase {phases[0].name!r} cannot be seamless: it is first")
        if any(p.prefill_concurrency is not None for p in phases) and not self.endpoint.streaming:
            raise ValueError("prefillConcurrency requires endpoint.streaming")
        if self.tokenizer is not None and self.endpoint.effective_type() in NON_TOKENIZING_TYPES:
            raise ValueError(f"a {self.endpoint.effective_type()} endpoint never tokenizes: remove benchmark.tokenizer")
        return self

    def all_phases(self) -> list[Phase]:
        """The phases AIPerf runs: ``phases``, or the ``warmup``/``profiling`` shorthand."""
        if self.phases is not None:
            return list(self.phases)
        out = []
        for name in ("warmup", "profiling"):
            body = getattr(self, name)
            if body is not None:
                out.append(Phase.model_validate({"name": name, "kind": name, **body}))
        return out

    def max_concurrency(self) -> int:
        """The largest phase concurrency the operator sizes workers from (1 when none sets one)."""
        return max((p.effective_concurrency(0) for p in self.all_phases()), default=1) or 1
