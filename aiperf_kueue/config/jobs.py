"""``aiperf-kueue:jobs``, ``aiperf-kueue:sweeps`` and ``aiperf-kueue:operator.sizing``:
AIPerf benchmarks declared as AIPerfJob custom resources.

:class:`AIPerfJobSpec` is a typed model of the AIPerfJob CRD ``spec``
(``aiperf.nvidia.com/v1alpha1``, chart ``crd-aiperfjob.yaml@08ec5fdf``; aiperf NOTES §1).
Every property the CRD declares is a field here, so a spec passes through to the
custom resource unchanged (:meth:`AIPerfJobSpec.manifest`), and every rule the API
server would apply on create is checked first, with a message naming the key:

- objects the CRD closes (no ``x-kubernetes-preserve-unknown-fields``) reject unknown
  keys, because the API server would silently drop them; camelCase only, as the CRD;
- objects the CRD leaves open (phases, datasets, ``gpuTelemetry``, ``endpoint.extra``,
  ``podTemplate.extraPodSpec``, ...) keep every key as given;
- required fields, enums, minimum/maximum and the CEL rules of the CRD are enforced.

On top of the CRD, a few rules keep benchmarks from waiting or being sized wrongly:
``spec.scheduling`` is set by this program from the job's ``queue`` and
``priorityClass``; ``benchmark.warmup``/``profiling`` shorthands are rejected because
the operator sizes workers from ``benchmark.phases`` only; job names are DNS-1123
labels of at most 35 characters (the AIPerf job-id limit).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
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

from aiperf_kueue import quantity
from aiperf_kueue.config.base import DnsLabel, Model, Quantity, dns_label
from aiperf_kueue.display import show
from aiperf_kueue.errors import ConfigError, Problem, key_path

#: AIPerf job ids (= AIPerfJob names) are DNS labels of at most this many characters
#: (``k8s/resources.py@05d012c6``): the JobSet ``aiperf-<id>`` and its pod host names must fit 63.
JOB_NAME_MAX = 35

#: ``spec.podTemplate.env`` variable the operator reads per job (aiperf NOTES §2b).
RECORD_PROCESSOR_CPU_ENV = "AIPERF_K8S_RECORD_PROCESSOR_CPU_REQUEST"

#: PodSpec keys ``podTemplate.extraPodSpec`` may not set (CRD description of extraPodSpec).
FORBIDDEN_EXTRA_POD_SPEC_KEYS = ("securityContext", "containers", "hostNetwork", "hostPID", "hostIPC", "hostUsers")

#: Sizing presets of :mod:`aiperf_kueue.sizing` (kept equal to ``sizing.PRESETS`` by a test).
SIZING_PRESETS = ("newest", "docs", "legacy-86577339")
SizingPreset = Literal["newest", "docs", "legacy-86577339"]

#: Controller-pod containers, as in the operator's ``AIPERF_K8S_<KEY>_CPU``/``_MEMORY`` variables.
CONTROLLER_KEYS = (
    "SYSTEM_CONTROLLER",
    "DATASET_MANAGER",
    "TIMING_MANAGER",
    "RECORDS_MANAGER",
    "API",
    "GPU_TELEMETRY_MANAGER",
    "SERVER_METRICS_MANAGER",
    "RESULTS_SIDECAR",
    "EVENT_BUS_PROXY",
)
ControllerKey = Literal[
    "SYSTEM_CONTROLLER",
    "DATASET_MANAGER",
    "TIMING_MANAGER",
    "RECORDS_MANAGER",
    "API",
    "GPU_TELEMETRY_MANAGER",
    "SERVER_METRICS_MANAGER",
    "RESULTS_SIDECAR",
    "EVENT_BUS_PROXY",
]

_PHASE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


# --------------------------------------------------------------------------- value types


def job_name(value: str) -> str:
    """An AIPerfJob name: a DNS-1123 label of at most :data:`JOB_NAME_MAX` characters."""
    dns_label(value)
    if len(value) > JOB_NAME_MAX:
        raise ValueError(
            f"must be at most {JOB_NAME_MAX} characters (AIPerf job-id limit), got {len(value)} ({show(value)})"
        )
    return value


def _number(value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"must be a number, got {show(value)}")
    return value


def _int_or_string(value: Any) -> int | str:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"must be an integer or a string, got {show(value)}")
    return value


def _urls(value: Any) -> str | list[str]:
    if isinstance(value, str) and value:
        return value
    if isinstance(value, list) and value and all(isinstance(u, str) and u for u in value):
        return value
    raise ValueError(f"must be a URL or a non-empty list of URLs, got {show(value)}")


def _models(value: Any) -> str | list[str] | dict[str, Any]:
    if isinstance(value, str) and value:
        return value
    if isinstance(value, list) and value and all(isinstance(m, str) and m for m in value):
        return value
    if isinstance(value, dict):
        return value
    raise ValueError(
        f"must be a model name, a non-empty list of model names or an advanced models mapping, got {show(value)}"
    )


def _telemetry(value: Any) -> str | dict[str, Any]:
    # AIPerf GpuTelemetryConfig / ServerMetricsConfig: a URL string (enabled) or a mapping
    # whose optional ``enabled`` is a bool (default true).
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        enabled = value.get("enabled", True)
        if not isinstance(enabled, bool):
            raise ValueError(f"enabled must be true or false, got {show(enabled)}")
        return value
    raise ValueError(f"must be a URL or a mapping (e.g. {{enabled: false}}), got {show(value)}")


#: A JSON number (integer or decimal, never a bool), kept as given.
Number = Annotated[int | float, PlainValidator(_number)]
#: ``x-kubernetes-int-or-string``.
IntOrString = Annotated[int | str, PlainValidator(_int_or_string)]
#: An AIPerfJob name (DNS-1123 label, at most 35 characters).
JobName = Annotated[str, AfterValidator(job_name)]
#: AIPerf GPU telemetry / server metrics setting: a URL, or a mapping with ``enabled``.
Telemetry = Annotated[str | dict[str, Any], PlainValidator(_telemetry)]


def telemetry_enabled(value: str | dict[str, Any] | None) -> bool:
    """Whether a ``gpuTelemetry``/``serverMetrics`` value leaves the collector on.

    Unset, a URL, or a mapping without ``enabled: false`` are all on ("Enabled by default").
    """
    return not (isinstance(value, dict) and value.get("enabled", True) is False)


# --------------------------------------------------------------------------- CRD models


class CrdModel(Model):
    """A closed object of the AIPerfJob CRD: camelCase keys only, unknown keys rejected."""

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


class OpenCrdModel(CrdModel):
    """An object the CRD leaves open (preserve-unknown-fields): unknown keys kept as given."""

    model_config = ConfigDict(extra="allow")


class EndpointTemplate(CrdModel):
    """``benchmark.endpoint.template``: request body of a ``type: template`` endpoint."""

    body: StrictStr
    """Jinja2 template string for the request body (required)."""

    response_field: StrictStr | None = None
    """JSON path of the response text (CRD default ``text``)."""


class ResetKvCache(CrdModel):
    """``benchmark.endpoint.resetKvCache``: POST a KV-cache reset before each benchmark cell."""

    timeout_seconds: Number | None = None
    """Timeout of the reset POST, seconds (default: AIPerf's)."""

    max_retry_seconds: Number | None = None
    """Total retry budget for retryable reset failures, seconds (default: AIPerf's)."""

    path: StrictStr | None = None
    """Relative path of the reset endpoint (default: AIPerf's)."""


class ServerProfiler(CrdModel):
    """``benchmark.endpoint.serverProfiler``: start/stop the server profiler around profiling phases."""

    timeout_seconds: Number | None = None
    """Timeout of the profiler start/stop POSTs, seconds (default: AIPerf's)."""

    start_path: StrictStr | None = None
    """Relative path of profiler start (default: AIPerf's)."""

    stop_path: StrictStr | None = None
    """Relative path of profiler stop (default: AIPerf's)."""


EndpointType = Literal[
    "audio_transcription",
    "chat",
    "cohere_rankings",
    "completions",
    "responses",
    "messages",
    "chat_embeddings",
    "embeddings",
    "hf_tei_rankings",
    "huggingface_generate",
    "image_generation",
    "image_edit",
    "video_generation",
    "image_retrieval",
    "nim_embeddings",
    "nim_rankings",
    "solido_rag",
    "raw",
    "template",
]
_MULTIPART_TYPES = ("audio_transcription", "image_edit", "video_generation")


class Endpoint(CrdModel):
    """``benchmark.endpoint``: the inference server(s) to benchmark."""

    urls: Annotated[str | list[str], PlainValidator(_urls)]
    """Server URL(s), e.g. ``[http://llm.serving:8000]``; a scheme-less URL gets ``http://`` (required)."""

    url_strategy: Literal["round_robin"] | None = None
    """How requests are spread over ``urls`` (CRD default ``round_robin``)."""

    type: EndpointType | None = None
    """API type: ``chat``, ``completions``, ``embeddings``, ``template``, ... (default: inferred by AIPerf)."""

    path: StrictStr | None = None
    """Endpoint path override; must start with ``/`` (default: the type's path)."""

    api_key: StrictStr | None = None
    """API key; ``${VAR}`` is substituted from the pod environment (default none).
    Stored in the custom resource in clear text: prefer ``${VAR}`` with ``podTemplate.env``."""

    timeout: Number | None = Field(None, ge=0)
    """Request timeout in seconds, 0 = none (CRD default 21600)."""

    streaming: StrictBool | None = None
    """Use server-sent events; needed for time-to-first-token (CRD default false)."""

    transport: Literal["http"] | None = None
    """Transport plugin (default: AIPerf's)."""

    aws_region: StrictStr | None = None
    """AWS region for SigV4 signing (default none)."""

    aws_profile: StrictStr | None = None
    """Named AWS credentials profile (default none)."""

    auth_type: Literal["sigv4"] | None = None
    """Request signing method (default none)."""

    aws_service: StrictStr | None = None
    """SigV4 signing name (default none)."""

    connection_reuse: Literal["pooled", "never", "sticky-user-sessions"] | None = None
    """HTTP connection management (CRD default ``pooled``)."""

    use_legacy_max_tokens: StrictBool | None = None
    """Send ``max_tokens`` instead of ``max_completion_tokens`` (CRD default false)."""

    use_server_token_count: StrictBool | None = None
    """Use server-reported token counts (CRD default false)."""

    per_chunk_usage: StrictBool | None = None
    """Request per-chunk token usage on streams (CRD default false)."""

    template: EndpointTemplate | None = None
    """Request template; required with and only used by ``type: template``."""

    headers: dict[str, StrictStr] | None = None
    """Extra HTTP headers, values with ``${VAR}`` substitution (default none)."""

    extra: dict[str, Any] | None = None
    """Extra request-body fields, free-form (default none)."""

    download_video_content: StrictBool | None = None
    """Download generated videos (CRD default false)."""

    request_content_type: Literal["application/json", "multipart/form-data"] | None = None
    """Request body encoding; multipart only for audio_transcription, image_edit, video_generation."""

    session_header: StrictStr | None = None
    """Header carrying the per-session affinity id (default none)."""

    uuid_and_strip: StrictBool | None = None
    """AIPerf-managed image stripping for vLLM's multimodal cache (CRD default false)."""

    wait_for_model_timeout: Number | None = Field(None, ge=0)
    """Seconds to wait for the model to become ready before starting, 0 = no probe (CRD default 0)."""

    wait_for_model_interval: Number | None = Field(None, gt=0)
    """Seconds between readiness probes, > 0 (CRD default 5)."""

    wait_for_model_mode: Literal["models", "inference", "both"] | None = None
    """Readiness probe strategy (CRD default ``inference``)."""

    reset_kv_cache: ResetKvCache | None = None
    """KV-cache reset before each benchmark cell (default off)."""

    server_profiler: ServerProfiler | None = None
    """Server profiler start/stop around profiling phases (default off)."""

    @model_validator(mode="after")
    def _cel(self) -> Endpoint:
        # The CRD's x-kubernetes-validations on benchmark.endpoint.
        if self.type == "template" and self.template is None:
            raise ValueError("endpoint.template is required when endpoint.type='template'")
        if self.template is not None and self.type is not None and self.type != "template":
            raise ValueError(
                "endpoint.template is only used when endpoint.type='template' (omit type to have it inferred)"
            )
        if (
            self.request_content_type == "multipart/form-data"
            and self.type is not None
            and self.type not in _MULTIPART_TYPES
        ):
            raise ValueError(
                "requestContentType='multipart/form-data' is only supported on endpoint types that accept "
                "form data: audio_transcription, image_edit, video_generation"
            )
        if self.path is not None and not self.path.startswith("/"):
            raise ValueError(
                "endpoint.path must start with '/' (e.g. '/v1/chat/completions', not 'v1/chat/completions')"
            )
        return self


class Phase(OpenCrdModel):
    """One entry of ``benchmark.phases`` (open in the CRD; AIPerf validates the rest).

    Only the keys this program reads are typed; every other key is kept as given.
    """

    name: StrictStr
    """Unique phase name, e.g. ``warmup`` or ``profiling`` (required; letters, digits, ``_``, ``-``)."""

    kind: Literal["warmup", "profiling"] | None = None
    """Runtime role; required by AIPerf for names other than ``warmup``/``profiling``."""

    type: StrictStr | None = None
    """Load type: ``concurrency``, ``poisson``, ``gamma``, ``constant``, ``user_centric``, ``fixed_schedule``."""

    concurrency: StrictInt | None = Field(None, ge=1)
    """Most requests in flight (>= 1). The operator sizes workers from the largest phase
    concurrency; a phase without one counts as 1. Must be a literal integer here."""

    requests: StrictInt | None = Field(None, ge=1)
    """Stop after this many requests (>= 1; default: another stop condition)."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _PHASE_NAME.fullmatch(value):
            raise ValueError(
                f"must start with a letter or '_' and use only letters, digits, '_' and '-', got {show(value)}"
            )
        return value


class UserFile(CrdModel):
    """``benchmark.artifacts.userFiles[]``: a templated file written into the run directory."""

    path: StrictStr
    """Output path relative to the run directory (required)."""

    format: Literal["json", "yaml", "text"] | None = None
    """Serialization format (default: AIPerf's)."""

    content: Any
    """Templated value (required)."""


class Artifacts(CrdModel):
    """``benchmark.artifacts``: benchmark output files."""

    dir: StrictStr | None = None
    """Output directory (CRD default ``artifacts``; the operator forces ``/results``)."""

    prefix: StrictStr | None = None
    """Base filename of every export (default: AIPerf's)."""

    summary: Any | None = None
    """Summary export formats (default: AIPerf's)."""

    records: Any | None = None
    """Per-request record export formats (default: AIPerf's)."""

    raw: StrictBool | None = None
    """Export raw request/response payloads (CRD default false)."""

    trace: StrictBool | None = None
    """Export HTTP trace data (CRD default false)."""

    slice_duration: Number | None = None
    """Time-slice length for trend analysis, seconds > 0 (default none)."""

    show_trace_timing: StrictBool | None = None
    """Show HTTP trace timing in the console (CRD default false)."""

    user_files: list[UserFile] | None = None
    """Templated files written before the benchmark starts (default none)."""

    auto_plot: StrictBool | None = None
    """Run ``aiperf plot`` after the benchmark (default: AIPerf's)."""

    plot_required: StrictBool | None = None
    """Fail the run when auto-plot fails (CRD default false)."""

    export_outputs_json: StrictBool | None = None
    """Export generated response text to ``outputs.json`` (default: AIPerf's)."""


class Tokenizer(CrdModel):
    """``benchmark.tokenizer``: token counting and prompt generation."""

    name: StrictStr | None = None
    """Hugging Face id, local path, or ``builtin`` (default: the model's)."""

    revision: StrictStr | None = None
    """Branch, tag or commit (CRD default ``main``)."""

    trust_remote_code: StrictBool | None = None
    """Allow custom tokenizer code (CRD default false)."""

    apply_chat_template: StrictBool | None = None
    """Apply the chat template when counting input tokens (CRD default false)."""

    resolved_names: dict[str, StrictStr] | None = None
    """Pre-resolved tokenizer names (default none)."""


class Otel(CrdModel):
    """``benchmark.otel``: OpenTelemetry metrics streaming."""

    metrics_url: StrictStr | None = None
    """OTLP/HTTP metrics endpoint (default none: off)."""

    stream_metrics_enabled: StrictBool | None = None
    """Stream metric records (CRD default true)."""

    stream_timing_enabled: StrictBool | None = None
    """Stream timing records (CRD default true)."""

    custom_resource_attributes: dict[str, StrictStr] | None = None
    """Extra OTel resource attributes (default none)."""

    gen_ai_provider: StrictStr | None = None
    """GenAI semantic-convention provider override (default none)."""


class Mlflow(CrdModel):
    """``benchmark.mlflow``: MLflow tracking and artifact upload."""

    tracking_uri: StrictStr | None = None
    """MLflow tracking URI (default none: off)."""

    experiment: StrictStr | None = None
    """Experiment name (CRD default ``aiperf``)."""

    run_name: StrictStr | None = None
    """Run name (default: generated)."""

    tags: dict[str, StrictStr] | None = None
    """Extra run tags (default none)."""

    parent_run_id: StrictStr | None = None
    """Parent run id (default none)."""

    artifact_globs: list[StrictStr] | None = None
    """Artifact glob overrides (default: AIPerf's)."""


class Wandb(CrdModel):
    """``benchmark.wandb``: Weights & Biases upload."""

    project: StrictStr | None = None
    """Project name (default none: off)."""

    entity: StrictStr | None = None
    """Team or user (default: the API key's)."""

    run_name: StrictStr | None = None
    """Run name (default: generated)."""

    tags: list[StrictStr] | None = None
    """Extra run tags (default none)."""


class Runtime(CrdModel):
    """``benchmark.runtime``: worker processes. The operator overwrites ``ui``, ``apiPort``,
    ``apiHost`` and ``communication`` for every job (``apply_k8s_runtime_config``)."""

    ui: Literal["dashboard", "none", "simple"] | None = None
    """UI mode (CRD default ``dashboard``; the operator forces ``simple``)."""

    workers: IntOrString | None = None
    """Total workers across all worker pods (default: ``ceil(max phase concurrency /
    connectionsPerWorker)``, rounded up to whole pods). Used as given: a total above
    ``workersPerPod`` that is not a multiple of it fails the job. Must be a number here."""

    record_processors: StrictInt | None = Field(None, ge=1)
    """Total record processors (default: one per worker); must divide by the worker-pod count."""

    service_run_type: Literal["kubernetes", "multiprocessing"] | None = None
    """Operator-managed (forced to ``kubernetes``): may not be set."""

    communication: dict[str, Any] | None = None
    """Inter-process communication (overwritten by the operator)."""

    api_port: IntOrString | None = None
    """AIPerf API port (overwritten by the operator)."""

    api_host: StrictStr | None = None
    """AIPerf API host; needs ``apiPort`` (overwritten by the operator)."""

    dataset_api_base_url: StrictStr | None = None
    """Operator-managed (injected into worker pods): may not be set."""

    workers_per_pod: StrictInt | None = Field(None, ge=1, le=100)
    """Workers per worker pod, 1-100 (default: the operator's ``AIPERF_WORKER_DEFAULT_WORKERS_PER_POD``, 10)."""

    record_processors_per_pod: StrictInt | None = Field(None, ge=1, le=100)
    """Record processors per worker pod, 1-100 (default: workers per pod ÷ the operator's scale factor)."""

    workers_min: IntOrString | None = None
    """Lower bound of the adaptive worker ramp; at most ``workers`` (default none)."""

    stats_interval: Number | None = Field(None, ge=0, le=1000)
    """Seconds between realtime stats publishes, 0-1000 (default 5 or 30)."""

    @field_validator("service_run_type", "dataset_api_base_url")
    @classmethod
    def _operator_managed(cls, value: Any) -> Any:
        raise ValueError("is operator-managed for every AIPerfJob; do not set it in the spec")

    @field_validator("workers")
    @classmethod
    def _numeric_workers(cls, value: int | str | None) -> int | str | None:
        if isinstance(value, str) and not value.strip().lstrip("+-").isdigit():
            raise ValueError(
                f"must be a number: the worker count decides the pods Kueue admits, so it cannot be "
                f"templated or left to auto-detection here, got {show(value)}"
            )
        return value

    @model_validator(mode="after")
    def _cel(self) -> Runtime:
        if self.api_host is not None and self.api_port is None:
            raise ValueError("runtime.apiHost requires runtime.apiPort to be set")
        if self.workers_min is not None and self.workers is not None:
            low, high = _as_int(self.workers_min), _as_int(self.workers)
            if low is None or high is None or low > high:
                raise ValueError("runtime.workersMin must be <= runtime.workers")
        return self

    def explicit_workers(self) -> int | None:
        """``workers`` as the operator reads it: a number >= 1, else ``None`` (derive it)."""
        value = _as_int(self.workers) if self.workers is not None else None
        return value if value is not None and value >= 1 else None


def _as_int(value: int | str) -> int | None:
    if isinstance(value, int):
        return value
    try:
        return int(value.strip())
    except ValueError:
        return None


class Logging(CrdModel):
    """``benchmark.logging``."""

    level: Literal["TRACE", "DEBUG", "INFO", "NOTICE", "WARNING", "SUCCESS", "ERROR", "CRITICAL"] | None = None
    """Log level (CRD default ``INFO``)."""


class Metrics(CrdModel):
    """``benchmark.metrics``: the CRD declares no fields here, so it can only be empty."""


class Accuracy(CrdModel):
    """``benchmark.accuracy``: accuracy benchmarking mode."""

    benchmark: (
        Literal[
            "mmlu",
            "mmlu_pro",
            "aime",
            "hellaswag",
            "bigbench",
            "aime24",
            "aime25",
            "math_500",
            "gsm8k",
            "gpqa_diamond",
            "lcb_codegeneration",
            "bfcl_ast",
        ]
        | None
    ) = None
    """Accuracy benchmark to run (default none: off)."""

    tasks: list[StrictStr] | None = None
    """Tasks or subtasks to evaluate (default: all)."""

    n_shots: StrictInt | None = Field(None, ge=0, le=32)
    """Few-shot examples per prompt, 0-32 (default: the benchmark's)."""

    enable_cot: StrictBool | None = None
    """Chain-of-thought prompting (default: the benchmark's)."""

    grader: (
        Literal[
            "exact_match",
            "math",
            "multiple_choice",
            "code_execution",
            "lighteval_expr",
            "lighteval_latex",
            "lighteval_gpqa",
            "lighteval_gsm8k",
            "mmlu_pro",
            "tool_call_ast",
        ]
        | None
    ) = None
    """Grader override (default: the benchmark's)."""

    system_prompt: StrictStr | None = None
    """Custom system prompt (default none)."""

    verbose: StrictBool | None = None
    """Per-problem grading details (CRD default false)."""


class Benchmark(CrdModel):
    """``spec.benchmark``: the AIPerf benchmark (BenchmarkConfig)."""

    models: Annotated[str | list[str] | dict[str, Any], PlainValidator(_models)] | None = None
    """Model name(s): a string, a list, or an advanced mapping (default: the server's)."""

    model: Annotated[str | list[str] | dict[str, Any], PlainValidator(_models)] | None = None
    """Shorthand for ``models``; set at most one of the two."""

    endpoint: Endpoint
    """The inference endpoint (required)."""

    datasets: list[dict[str, Any]] | None = Field(None, min_length=1, max_length=1)
    """Exactly one dataset mapping, free-form (default: AIPerf's synthetic dataset)."""

    dataset: Any | None = None
    """Shorthand for ``datasets``; set at most one of the two."""

    phases: list[Phase] | None = Field(None, min_length=1)
    """Phases in execution order, unique names (default: AIPerf's). Worker count and so the
    requests Kueue sees follow the largest ``concurrency`` here."""

    warmup: Any | None = None
    """Shorthand for a warmup phase: rejected, write it in ``phases``."""

    profiling: Any | None = None
    """Shorthand for a profiling phase: rejected, write it in ``phases``."""

    artifacts: Artifacts | None = None
    """Output files (default: AIPerf's)."""

    slos: dict[str, Number] | None = None
    """Metric name → threshold; a request is good only if it meets all (default none)."""

    tokenizer: Tokenizer | None = None
    """Tokenizer (default: the model's)."""

    gpu_telemetry: Telemetry | None = None
    """DCGM GPU telemetry: a URL or a mapping; ``{enabled: false}`` turns it off and removes
    the GPU_TELEMETRY_MANAGER container from the controller pod (default on)."""

    server_metrics: Telemetry | None = None
    """Prometheus server metrics: a URL or a mapping; ``{enabled: false}`` turns it off and
    removes the SERVER_METRICS_MANAGER container from the controller pod (default on)."""

    network_latency: Any | None = None
    """Network latency calibration, free-form (default off)."""

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
    """Metrics aggregation (the CRD declares no fields: only ``{}``)."""

    accuracy: Accuracy | None = None
    """Accuracy benchmarking (default off)."""

    scenario: StrictStr | None = None
    """Named scenario locking the benchmark invariants (default none)."""

    unsafe_override: StrictBool | None = None
    """Turn scenario lock errors into warnings (CRD default false)."""

    @field_validator("warmup", "profiling")
    @classmethod
    def _no_shorthand(cls, value: Any, info: Any) -> Any:
        name = info.field_name
        raise ValueError(
            f"the operator sizes workers from benchmark.phases only, so a {name} shorthand would get one "
            f"worker whatever its concurrency; write it as a phases entry: phases: [{{name: {name}, ...}}]"
        )

    @field_validator("phases")
    @classmethod
    def _unique_phases(cls, phases: list[Phase] | None) -> list[Phase] | None:
        seen: set[str] = set()
        for phase in phases or []:
            if phase.name in seen:
                raise ValueError(f"phase names must be unique, {phase.name!r} repeats")
            seen.add(phase.name)
        return phases

    @model_validator(mode="after")
    def _one_of(self) -> Benchmark:
        for long, short in (("models", "model"), ("datasets", "dataset")):
            if getattr(self, long) is not None and getattr(self, short) is not None:
                raise ValueError(f"set {long} or its shorthand {short}, not both")
        return self

    def max_concurrency(self) -> int:
        """The largest phase ``concurrency`` (a phase without one counts as 1; no phases: 1)."""
        return max((p.concurrency or 1 for p in self.phases or []), default=1)


class PodTemplate(CrdModel):
    """``spec.podTemplate``: copied into the controller and worker pods. There is no
    per-container ``resources``: pod sizes come from the operator (see ``operator.sizing``)."""

    env: list[dict[str, Any]] | None = None
    """Container environment, Kubernetes EnvVar entries. Of the operator's sizing variables
    only ``AIPERF_K8S_RECORD_PROCESSOR_CPU_REQUEST`` has an effect here (default none)."""

    volumes: list[dict[str, Any]] | None = None
    """Extra pod volumes, Kubernetes Volume entries (default none)."""

    volume_mounts: list[dict[str, Any]] | None = None
    """Extra volume mounts of every container (default none)."""

    node_selector: dict[str, StrictStr] | None = None
    """Node selector; Kueue adds the flavor's node labels on admission (default none)."""

    tolerations: list[dict[str, Any]] | None = None
    """Pod tolerations; Kueue adds the flavor's tolerations on admission (default none)."""

    affinity: dict[str, Any] | None = None
    """Kubernetes Affinity (default none)."""

    annotations: dict[str, StrictStr] | None = None
    """Extra pod annotations (default none)."""

    labels: dict[str, StrictStr] | None = None
    """Extra pod labels (default none)."""

    image_pull_secrets: list[dict[str, Any]] | None = None
    """``[{name: secret}]`` (default none)."""

    service_account_name: StrictStr | None = None
    """Pod service account (default: the namespace's ``default``)."""

    container_security_context: dict[str, Any] | None = None
    """securityContext merged into every container (default none)."""

    share_process_namespace: StrictBool | None = None
    """One PID namespace per pod (CRD default false)."""

    priority_class_name: StrictStr | None = None
    """Kubernetes PriorityClass of the pods, not Kueue's (that is the job's ``priorityClass``)."""

    runtime_class_name: StrictStr | None = None
    """RuntimeClass; its pod overhead counts towards the quota Kueue charges (default none)."""

    scheduler_name: StrictStr | None = None
    """Scheduler for the pods (default: the cluster's)."""

    topology_spread_constraints: list[dict[str, Any]] | None = None
    """Kubernetes TopologySpreadConstraints (default none)."""

    host_aliases: list[dict[str, Any]] | None = None
    """Extra /etc/hosts entries (default none)."""

    dns_policy: Literal["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"] | None = None
    """Pod DNS policy (default ``ClusterFirst``)."""

    dns_config: dict[str, Any] | None = None
    """Pod DNS config (default none)."""

    termination_grace_period_seconds: StrictInt | None = Field(None, ge=0)
    """Grace period before SIGKILL, seconds >= 0 (default: Kubernetes' 30)."""

    pod_security_context: dict[str, Any] | None = None
    """Pod securityContext additions (default: the operator's hardened one)."""

    init_containers: list[dict[str, Any]] | None = None
    """Init containers of both pods; their requests count towards the quota Kueue charges."""

    extra_pod_spec: dict[str, Any] | None = None
    """Raw PodSpec keys merged last; may not set securityContext, containers, hostNetwork,
    hostPID, hostIPC or hostUsers (default none)."""

    @field_validator("env")
    @classmethod
    def _env(cls, env: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        for i, item in enumerate(env or []):
            if not isinstance(item.get("name"), str) or not item["name"]:
                raise ValueError(f"env[{i}] needs a name")
            if item["name"] == RECORD_PROCESSOR_CPU_ENV and isinstance(item.get("value"), str) and item["value"]:
                try:
                    quantity.parse(item["value"])
                except ValueError:
                    raise ValueError(
                        f"env[{i}] {RECORD_PROCESSOR_CPU_ENV} must be a CPU quantity, got {show(item['value'])}"
                    ) from None
        return env

    @field_validator("extra_pod_spec")
    @classmethod
    def _extra_pod_spec(cls, extra: dict[str, Any] | None) -> dict[str, Any] | None:
        bad = [k for k in FORBIDDEN_EXTRA_POD_SPEC_KEYS if k in (extra or {})]
        if bad:
            raise ValueError(
                f"may not set {', '.join(bad)} (security-critical or operator-owned PodSpec keys; "
                "the operator rejects them)"
            )
        return extra


class Convergence(CrdModel):
    """``spec.multiRun.convergence``: adaptive trial stopping (AIPerfSweep only)."""

    metric: StrictStr
    """Metric tag, e.g. ``ttft`` (required)."""

    stat: Literal["avg", "p50", "p90", "p95", "p99", "min", "max"] | None = None
    """Statistic inspected (CRD default ``avg``)."""

    mode: Literal["ci_width", "cv", "distribution"] | None = None
    """Criterion (CRD default ``ci_width``)."""

    threshold: Number | None = Field(None, gt=0, lt=1)
    """Criterion threshold, strictly between 0 and 1."""

    min_runs: StrictInt | None = Field(None, ge=2)
    """Trials before checking, >= 2 (CRD default 2)."""


class MultiRun(CrdModel):
    """``spec.multiRun``: on an AIPerfJob at most one run and no convergence."""

    num_runs: StrictInt | None = Field(None, ge=1, le=10)
    """Trials, 1-10; an AIPerfJob allows only 1 (CRD default 1)."""

    cooldown_seconds: Number | None = Field(None, ge=0, le=86400)
    """Cooldown between trials, 0-86400 seconds (CRD default 0)."""

    confidence_level: Number | None = Field(None, gt=0, lt=1)
    """Confidence level of aggregate statistics, strictly between 0 and 1 (CRD default 0.95)."""

    set_consistent_seed: StrictBool | None = None
    """Set a seed when none is given (CRD default true)."""

    vary_seed_per_trial: StrictBool | None = None
    """Distinct seed per trial (CRD default false)."""

    disable_warmup_after_first: StrictBool | None = None
    """Skip warmup after the first trial (CRD default true)."""

    convergence: Convergence | None = None
    """Adaptive stopping; not allowed on an AIPerfJob."""

    @model_validator(mode="after")
    def _cel(self) -> MultiRun:
        if (
            self.convergence is not None
            and self.convergence.min_runs is not None
            and self.num_runs is not None
            and self.convergence.min_runs > self.num_runs
        ):
            raise ValueError(
                "multiRun.convergence.minRuns must be <= multiRun.numRuns; either lower minRuns or raise numRuns"
            )
        return self


class FailurePolicy(CrdModel):
    """``spec.failurePolicy``."""

    on_child_failure: Literal["continue", "abort"] | None = None
    """``continue`` or ``abort`` after a failed child (CRD default ``continue``)."""

    max_failures: StrictInt | None = Field(None, ge=0)
    """Failure budget, >= 0 (CRD default 0)."""


class AIPerfJobSpec(CrdModel):
    """The ``spec`` of one AIPerfJob, exactly as the custom resource gets it.

    Everything except ``cancel`` and ``timeoutSeconds`` is immutable once created
    (CRD CEL rules): changing it means replacing the AIPerfJob.
    """

    image: StrictStr | None = Field(None, min_length=1)
    """AIPerf image of the benchmark pods (default: the chart's ``defaults.image`` CRD default;
    a CRD applied without the chart has none, so set it)."""

    image_pull_policy: Literal["Always", "Never", "IfNotPresent"] | None = None
    """Image pull policy (chart default ``IfNotPresent``)."""

    benchmark: Benchmark
    """The benchmark (required)."""

    resource_mode: Literal["guaranteed", "burstable", "none"] | None = None
    """CPU/memory of the pods (CRD default ``burstable``): ``burstable`` requests only,
    ``guaranteed`` requests = limits, ``none`` no requests (Kueue then reserves nothing)."""

    connections_per_worker: StrictInt | None = Field(None, ge=1)
    """Concurrent connections per worker, >= 1 (CRD default 100); with the largest phase
    concurrency it decides the worker count."""

    timeout_seconds: Number | None = Field(None, ge=0)
    """Job timeout in seconds, 0 = none (CRD default 0). Mutable."""

    ttl_seconds_after_finished: StrictInt | None = Field(None, ge=0)
    """Seconds the JobSet is kept after it finishes (CRD default 300)."""

    results_ttl_days: StrictInt | None = Field(None, ge=1, le=365)
    """Days result files are kept, 1-365 (default: the operator's)."""

    keep_failed_pods: StrictBool | None = None
    """Keep failed pods for debugging (CRD default false)."""

    cancel: StrictBool | None = None
    """Cancel the job (CRD default false). Mutable."""

    pod_template: PodTemplate | None = None
    """Pod settings of the controller and worker pods (default none)."""

    scheduling: Any | None = None
    """Set by this program from the job's ``queue`` and ``priorityClass``: may not be set."""

    schema_version: Literal["2.0"] | None = None
    """Config schema version (CRD default ``2.0``)."""

    sweep: Any | None = None
    """Must be omitted on an AIPerfJob (CRD rule): use ``aiperf-kueue:sweeps``."""

    multi_run: MultiRun | None = None
    """Multi-run statistics; on an AIPerfJob ``numRuns`` <= 1 and no convergence."""

    plot: dict[str, Any] | None = None
    """Plot configuration, free-form (default none)."""

    variables: dict[str, Any] | None = None
    """Values exposed to Jinja2 templates, free-form (default none)."""

    random_seed: StrictInt | None = Field(None, ge=0)
    """Global random seed, >= 0 (default none)."""

    no_sweep_table: StrictBool | None = None
    """Suppress the sweep table (CRD default false)."""

    skip_endpoint_check: StrictBool | None = None
    """Skip the operator's endpoint reachability probe (CRD default false)."""

    failure_policy: FailurePolicy | None = None
    """Failure handling (default: continue)."""

    @field_validator("scheduling", mode="before")
    @classmethod
    def _no_scheduling(cls, value: Any) -> Any:
        raise ValueError(
            "is set by aiperf-kueue from the job's queue and priorityClass; use `queue` / `priorityClass` on "
            "the job instead of spec.scheduling"
        )

    @field_validator("sweep", mode="before")
    @classmethod
    def _no_sweep(cls, value: Any) -> Any:
        if value is not None:
            raise ValueError(
                "AIPerfJob.spec.sweep must be null/omitted; declare a concurrency sweep in aiperf-kueue:sweeps"
            )
        return value

    @model_validator(mode="after")
    def _cel(self) -> AIPerfJobSpec:
        multi = self.multi_run
        if multi is not None and ((multi.num_runs or 1) > 1 or multi.convergence is not None):
            raise ValueError(
                "AIPerfJob.spec.multiRun must describe one run without convergence "
                "(numRuns <= 1, no convergence); use kind AIPerfSweep for multi-run orchestration"
            )
        return self

    def manifest(self) -> dict[str, Any]:
        """The spec as given (camelCase, unset keys omitted), without ``scheduling``."""
        return self.model_dump(by_alias=True, exclude_unset=True)

    def record_processor_cpu_request(self) -> str | None:
        """``AIPERF_K8S_RECORD_PROCESSOR_CPU_REQUEST`` from ``podTemplate.env`` as the operator
        reads it: the first entry of that name with a string ``value``; empty means unset."""
        for item in (self.pod_template.env if self.pod_template else None) or []:
            if item.get("name") == RECORD_PROCESSOR_CPU_ENV and isinstance(item.get("value"), str):
                return item["value"] or None
        return None


# --------------------------------------------------------------------------- stack config


class Job(Model):
    """One AIPerfJob (``aiperf-kueue:jobs[]``)."""

    name: JobName
    """AIPerfJob name = AIPerf job id: DNS-1123 label, at most 35 characters (required)."""

    namespace: DnsLabel
    """Benchmark namespace; must be one of a ClusterQueue's ``namespaces`` (required)."""

    queue: DnsLabel | None = None
    """LocalQueue in ``namespace`` (default: that namespace's ``localQueue``). Written to
    ``spec.scheduling.queueName``."""

    priority_class: DnsLabel | None = None
    """Kueue WorkloadPriorityClass from ``aiperf-kueue:priorityClasses`` (default none).
    Written to ``spec.scheduling.priorityClass``."""

    spec: AIPerfJobSpec
    """The AIPerfJob ``spec`` (required); ``scheduling`` is set by this program."""

    retain_on_delete: StrictBool = True
    """Keep the AIPerfJob (its status and results) in the cluster when it leaves the stack
    (default true). A spec change replaces the job: with retention on, the old object stays
    and the new one cannot take its name, so give a changed run a new name (or set false)."""


class Sweep(Model):
    """A concurrency sweep (``aiperf-kueue:sweeps[]``): one AIPerfJob per concurrency,
    named ``<name>-c<N>``, whose target phase runs at concurrency N."""

    name: DnsLabel
    """Sweep name; generated job names ``<name>-c<N>`` must stay within 35 characters (required)."""

    namespace: DnsLabel
    """Benchmark namespace of every generated job (required)."""

    queue: DnsLabel | None = None
    """LocalQueue of every generated job (default: the namespace's ``localQueue``)."""

    priority_class: DnsLabel | None = None
    """Kueue WorkloadPriorityClass of every generated job (default none)."""

    concurrency: list[Annotated[StrictInt, Field(ge=1)]] = Field(min_length=1)
    """Concurrency per job, e.g. ``[1, 8, 32, 128]`` (required, unique, each a literal integer >= 1:
    ``true``, ``"8"`` or ``8.0`` are rejected, as the swept phase's ``concurrency`` would be)."""

    phase: StrictStr | None = None
    """Name of the phase in ``spec.benchmark.phases`` whose ``concurrency`` is swept
    (default: the phase named ``profiling``, else the only phase with ``kind: profiling``)."""

    requests_per_concurrency: StrictInt | None = Field(None, ge=1)
    """Also set the swept phase's ``requests`` to N × this, so each point sends a number of
    requests proportional to its concurrency (default: keep the base phase's ``requests``)."""

    spec: AIPerfJobSpec
    """Base AIPerfJob ``spec``; ``benchmark.phases`` must contain the swept phase (required)."""

    retain_on_delete: StrictBool = True
    """Keep the AIPerfJob (its status and results) in the cluster when it leaves the stack
    (default true). A spec change replaces the job: with retention on, the old object stays
    and the new one cannot take its name, so give a changed run a new name (or set false)."""

    @field_validator("concurrency")
    @classmethod
    def _unique(cls, values: list[int]) -> list[int]:
        seen: set[int] = set()
        for value in values:
            if value in seen:
                raise ValueError(f"concurrency values must be unique, {value} repeats")
            seen.add(value)
        return values

    @model_validator(mode="after")
    def _points(self) -> Sweep:
        longest = max(self.job_names(), key=len)
        if len(longest) > JOB_NAME_MAX:
            room = JOB_NAME_MAX - (len(longest) - len(self.name))
            raise ValueError(
                f"sweep {self.name!r} generates job name {longest!r} ({len(longest)} characters); AIPerf job "
                f"names are at most {JOB_NAME_MAX} characters: shorten the sweep name to at most {room} characters"
            )
        self.phase_index()
        return self

    def job_names(self) -> list[str]:
        """The generated job names, in ``concurrency`` order."""
        return [f"{self.name}-c{n}" for n in self.concurrency]

    def phase_index(self) -> int:
        """Index of the swept phase in ``spec.benchmark.phases``; ``ValueError`` if there is none."""
        phases = self.spec.benchmark.phases or []
        names = [p.name for p in phases]
        if self.phase is not None:
            if self.phase not in names:
                raise ValueError(
                    f"sweep {self.name!r}: spec.benchmark.phases has no phase named {self.phase!r} "
                    f"(phases: {', '.join(names) or 'none'})"
                )
            return names.index(self.phase)
        if "profiling" in names:
            return names.index("profiling")
        profiling = [i for i, p in enumerate(phases) if p.kind == "profiling"]
        if len(profiling) == 1:
            return profiling[0]
        raise ValueError(
            f"sweep {self.name!r}: spec.benchmark.phases needs a phase named 'profiling' (or exactly one with "
            f"kind: profiling), or set `phase` to the phase to sweep (phases: {', '.join(names) or 'none'})"
        )

    def point_spec(self, concurrency: int) -> AIPerfJobSpec:
        """The base spec with the swept phase at ``concurrency`` (and its requests scaled)."""
        data = self.spec.manifest()
        phase = data["benchmark"]["phases"][self.phase_index()]
        phase["concurrency"] = concurrency
        if self.requests_per_concurrency is not None:
            phase["requests"] = concurrency * self.requests_per_concurrency
        return AIPerfJobSpec.model_validate(data)


class ResourceOverride(Model):
    """CPU and/or memory of one operator-sized container or pod."""

    cpu: Quantity | None = None
    """CPU request, whole millicores (``"150m"``, ``"2"``); unset keeps the preset's."""

    memory: Quantity | None = None
    """Memory request (``"4Gi"``); unset keeps the preset's."""

    @field_validator("cpu")
    @classmethod
    def _whole_millicores(cls, value: str | None) -> str | None:
        if value is not None and (quantity.parse(value) * 1000).denominator != 1:
            raise ValueError(f"must be a whole number of millicores, got {show(value)}")
        return value

    @field_validator("memory")
    @classmethod
    def _whole_bytes(cls, value: str | None) -> str | None:
        if value is not None and quantity.parse(value).denominator != 1:
            raise ValueError(f"must be a whole number of bytes, got {show(value)}")
        return value


class OperatorSizing(Model):
    """``aiperf-kueue:operator.sizing``: the pod sizes the AIPerf operator gives benchmark pods.

    They are baked into the operator image and differ a lot between versions (aiperf
    NOTES §0, §2b), so the program pins them as ``AIPERF_K8S_*`` env vars on the operator
    Deployment and sizes Kueue admission from the same numbers.
    """

    preset: SizingPreset = "newest"
    """Starting point (default ``newest``): ``newest`` (worker pod 150m/4Gi, controller
    450m/1792Mi), ``docs`` (worker pod 3350m/6Gi), ``legacy-86577339`` (worker pod
    4000m/12Gi, controller 7250m/17.5Gi)."""

    worker_pod: ResourceOverride | None = None
    """Total of one worker pod, split by the operator over its containers
    (``AIPERF_K8S_WORKER_POD_CPU``/``_MEMORY``); memory in whole MiB (default: the preset's)."""

    controller: dict[ControllerKey, ResourceOverride] = Field(default_factory=dict)
    """Per controller container, keyed ``SYSTEM_CONTROLLER``, ``API``, ... (``AIPERF_K8S_<KEY>_CPU``/
    ``_MEMORY``; default: the preset's)."""

    event_bus_sidecar_enabled: StrictBool | None = None
    """Run the EVENT_BUS_PROXY container (``AIPERF_K8S_EVENT_BUS_SIDECAR_ENABLED``; default true)."""

    record_processor_cpu_request: Quantity | None = None
    """Fixed CPU per record processor (``AIPERF_K8S_RECORD_PROCESSOR_CPU_REQUEST``); a worker
    pod then requests max(worker pod CPU, record processors × this) (default unset)."""

    record_processor_scale_factor: StrictInt | None = Field(None, ge=1, le=100)
    """Workers per record processor when not configured per job
    (``AIPERF_K8S_RECORD_PROCESSOR_SCALE_FACTOR``, 1-100; default 1)."""

    @field_validator("worker_pod")
    @classmethod
    def _whole_mib(cls, value: ResourceOverride | None) -> ResourceOverride | None:
        if (
            value is not None
            and value.memory is not None
            and (quantity.parse(value.memory) / quantity.MIB).denominator != 1
        ):
            raise ValueError(
                f"memory must be a whole number of MiB (the operator splits it in MiB), got {show(value.memory)}"
            )
        return value


# --------------------------------------------------------------------------- expansion


@dataclass(frozen=True)
class JobEntry:
    """One AIPerfJob to declare: a ``jobs[]`` entry or one point of a sweep."""

    name: str
    """AIPerfJob name (DNS-1123 label, at most 35 characters)."""

    namespace: str
    """Benchmark namespace."""

    queue: str | None
    """LocalQueue asked for (``None``: the namespace's default LocalQueue)."""

    priority_class: str | None
    """WorkloadPriorityClass, or ``None``."""

    spec: AIPerfJobSpec
    """The spec (for a sweep point: the base spec with the swept phase's concurrency set)."""

    origin: tuple[str | int, ...]
    """Config key path of the entry: ``("jobs", 3)`` or ``("sweeps", 1)``."""

    sweep: str | None = None
    """Sweep name for a sweep point."""

    concurrency: int | None = None
    """Concurrency of a sweep point."""

    retain_on_delete: bool = True
    """Keep the AIPerfJob when it leaves the stack."""

    def manifest_spec(self, queue_name: str) -> dict[str, Any]:
        """The custom resource ``spec``: the spec as given plus ``scheduling`` (queue, priority class)."""
        scheduling: dict[str, str] = {"queueName": queue_name}
        if self.priority_class is not None:
            scheduling["priorityClass"] = self.priority_class
        return {**self.spec.manifest(), "scheduling": scheduling}


def expand_sweeps(jobs: Sequence[Job], sweeps: Sequence[Sweep], source: str) -> list[JobEntry]:
    """Every job to declare: ``jobs`` in order, then each sweep's points in ``concurrency`` order.

    Raises :class:`~aiperf_kueue.errors.ConfigError` (``source`` names the stack file) when two
    entries would create the same AIPerfJob (same namespace and name).
    """
    entries = [
        JobEntry(
            j.name, j.namespace, j.queue, j.priority_class, j.spec, ("jobs", i), retain_on_delete=j.retain_on_delete
        )
        for i, j in enumerate(jobs)
    ]
    for i, sweep in enumerate(sweeps):
        for n, name in zip(sweep.concurrency, sweep.job_names(), strict=True):
            entries.append(
                JobEntry(
                    name,
                    sweep.namespace,
                    sweep.queue,
                    sweep.priority_class,
                    sweep.point_spec(n),
                    ("sweeps", i),
                    sweep=sweep.name,
                    concurrency=n,
                    retain_on_delete=sweep.retain_on_delete,
                )
            )
    problems: list[Problem] = []
    first: dict[tuple[str, str], JobEntry] = {}
    # The AIPerfJobs component names each child after "<namespace>-<name>": distinct jobs must differ there too.
    resources: dict[str, JobEntry] = {}
    for entry in entries:
        key = (entry.namespace, entry.name)
        made_by = f" (sweep {entry.sweep!r})" if entry.sweep else ""
        where = key_path(*entry.origin, "name") if entry.sweep is None else key_path(*entry.origin)
        if key in first:
            other = first[key]
            problems.append(
                Problem(
                    where,
                    f"AIPerfJob {entry.namespace}/{entry.name}{made_by} is already declared by "
                    f"{key_path(*other.origin)}{f' (sweep {other.sweep!r})' if other.sweep else ''}",
                )
            )
            continue
        first[key] = entry
        other = resources.setdefault(f"{entry.namespace}-{entry.name}", entry)
        if other is not entry:
            problems.append(
                Problem(
                    where,
                    f"AIPerfJob {entry.namespace}/{entry.name}{made_by} and {other.namespace}/{other.name} "
                    f"({key_path(*other.origin)}) would share the Pulumi resource name "
                    f"'{entry.namespace}-{entry.name}' (namespace and name joined by '-'); rename one",
                )
            )
    if problems:
        raise ConfigError(source, problems)
    return entries
