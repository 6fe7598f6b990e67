"""``spec.benchmark`` of an AIPerfJob as AIPerf 0.13.0 accepts it (``aiperf.config.BenchmarkConfig``).

Upstream: aiperf 0.13.0 aiperf/config/config.py, aiperf/config/loader/normalizers.py

The sections that decide what the operator builds are typed with the release's rules: the
endpoint (:mod:`~aiperf_kueue.config.aiperf_endpoint`), the phases
(:mod:`~aiperf_kueue.config.aiperf_phases`), the runtime (workers, pods, record processors) and
the telemetry switches. The dataset, its nested objects and the benchmark rules that read it are
in :mod:`~aiperf_kueue.config.aiperf_dataset` and :mod:`~aiperf_kueue.config.aiperf_content`; the
tokenizer, network latency and tracking integrations in
:mod:`~aiperf_kueue.config.aiperf_sections`; artifacts, logging, metrics and accuracy in
:mod:`~aiperf_kueue.config.aiperf_outputs`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    PlainSerializer,
    PlainValidator,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)

from aiperf_kueue.common.display import SHOWN, show
from aiperf_kueue.common.suggest import did_you_mean
from aiperf_kueue.config.aiperf_base import CrdModel, Number
from aiperf_kueue.config.aiperf_comm import Communication
from aiperf_kueue.config.aiperf_dataset import benchmark_rules, dataset_rules
from aiperf_kueue.config.aiperf_endpoint import NON_TOKENIZING_TYPES, Endpoint
from aiperf_kueue.config.aiperf_outputs import Accuracy, Artifacts, Logging, Metrics
from aiperf_kueue.config.aiperf_phases import Phase
from aiperf_kueue.config.aiperf_sections import Mlflow, NetworkLatency, Otel, Tokenizer, Wandb


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

    communication: Communication | None = None
    """Inter-process transport, by ``type`` (overwritten by the operator, but a value the release
    refuses fails the job)."""

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
        # The fix repeats the name, unless it is too long or odd to repeat on one line.
        name = value if len(value) <= SHOWN and value.isprintable() else "NAME"
        raise ValueError(
            f"must be a list of model names or a mapping with items, got the string {show(value)}: AIPerf 0.13.0 "
            "fails such a job after its preflight (\"'str' object has no attribute 'get'\"); write "
            f"models: [{name}] or the shorthand model: {name}"
        )
    if isinstance(value, list):
        if not value or not all(isinstance(m, str) and m for m in value):
            raise ValueError(f"must be a non-empty list of model names, got {show(value)}")
        for m in value:
            # A model name goes into every request and every result file: one printable line.
            if not m.isprintable():
                raise ValueError(f"model name {show(m)} holds a line break or control character")
        return value
    if isinstance(value, dict):
        items = value.get("items")
        if not isinstance(items, list) or not items:
            raise ValueError("a models mapping needs a non-empty items list")
        unknown = sorted(set(value) - {"items", "strategy"})
        if unknown:
            raise ValueError(
                f"unknown key {show(unknown[0])}{did_you_mean(str(unknown[0]), ('items', 'strategy'))}; "
                "allowed: items, strategy"
            )
        return value
    raise ValueError(f"must be a list of model names or a mapping with items, got {show(value)}")


def _model(value: Any) -> Any:
    if isinstance(value, str):
        if not value:
            raise ValueError("must be a model name, got ''")
        if not value.isprintable():
            raise ValueError(f"model name {show(value)} holds a line break or control character")
        return value
    return _models(value)


def _telemetry(keys: frozenset[str]) -> Any:
    def check(value: Any) -> Any:
        # GpuTelemetryConfig / ServerMetricsConfig: a URL (enabled), or a mapping.
        if isinstance(value, str):
            return value
        if not isinstance(value, dict):
            raise ValueError(f"must be a URL or a mapping (e.g. {{enabled: false}}), got {show(value)}")
        unknown = sorted(set(value) - keys)
        if unknown:
            raise ValueError(
                f"unknown key {show(unknown[0])}{did_you_mean(str(unknown[0]), keys)}; "
                f"allowed: {', '.join(sorted(keys))}"
            )
        if not isinstance(value.get("enabled", True), bool):
            raise ValueError(f"enabled must be true or false, got {show(value['enabled'])}")
        if "discovery" in value:
            _discovery(value["discovery"])
        return value

    return PlainValidator(check)


# AIPerf 0.13.0, aiperf/config/server_metrics.py ServerMetricsDiscoveryConfig (extra="forbid") and its
# ServerMetricsDiscoveryMode (case-insensitive).
_DISCOVERY_KEYS = ("labelSelector", "mode", "namespace", "timeoutSeconds")
_DISCOVERY_MODES = ("auto", "kubernetes", "disabled")


def _discovery(value: Any) -> None:
    if not isinstance(value, dict):
        raise ValueError(f"discovery must be a mapping (e.g. {{mode: disabled}}), got {show(value)}")
    unknown = sorted(str(k) for k in set(value) - set(_DISCOVERY_KEYS))
    if unknown:
        raise ValueError(
            f"discovery: unknown key {show(unknown[0])}{did_you_mean(unknown[0], _DISCOVERY_KEYS)}; "
            f"allowed: {', '.join(_DISCOVERY_KEYS)}"
        )
    mode = value.get("mode", "auto")
    if not isinstance(mode, str) or mode.lower() not in _DISCOVERY_MODES:
        raise ValueError(f"discovery.mode must be one of {', '.join(_DISCOVERY_MODES)}, got {show(mode)}")


def telemetry_enabled(value: str | dict[str, Any] | None) -> bool:
    """Whether a ``gpuTelemetry``/``serverMetrics`` value leaves the collector on (default on)."""
    return not (isinstance(value, dict) and value.get("enabled", True) is False)


_GPU_TELEMETRY_KEYS = frozenset({"enabled", "urls", "url", "metricsFile", "collector", "mode"})
_SERVER_METRICS_KEYS = frozenset({"enabled", "urls", "url", "formats", "discovery"})


def _shorthand(name: str) -> Any:
    """``warmup``/``profiling``: validated as the phase the release's normalizer makes of it
    (``{name: <name>, kind: <name>, **given}``, config/loader/normalizers.py), kept as given."""

    def check(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if not isinstance(value, dict):
            raise ValueError(f"must be a phase mapping (e.g. {{type: concurrency, concurrency: 8}}), got {show(value)}")
        handler({"name": name, "kind": name, **value})
        return value

    return check


def _as_given(value: Any) -> Any:
    return value


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
    unless ``dataset`` is given. Its keys and values are checked, nested objects (prompts,
    images, ...) included, and kept as given."""

    dataset: dict[str, Any] | None = None
    """Shorthand for ``datasets``: one dataset mapping, named ``default``."""

    phases: list[Phase] | None = Field(None, min_length=1)
    """Phases in execution order, unique names ignoring case, at least one ``profiling``;
    required unless the ``warmup``/``profiling`` shorthand is given. The worker count, and so
    the requests Kueue sees, follow the largest ``concurrency`` here."""

    warmup: Annotated[Phase, WrapValidator(_shorthand("warmup")), PlainSerializer(_as_given)] = None  # type: ignore[assignment]
    """Shorthand: the warmup phase, a phase mapping named and kinded ``warmup`` unless it says
    otherwise; needs ``profiling``, not with ``phases``. Kept as given."""

    profiling: Annotated[Phase, WrapValidator(_shorthand("profiling")), PlainSerializer(_as_given)] = None  # type: ignore[assignment]
    """Shorthand: the profiling phase, a phase mapping named and kinded ``profiling`` unless it
    says otherwise; not with ``phases``. Kept as given."""

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

    @model_validator(mode="before")
    @classmethod
    def _normalizer_rules(cls, data: Any) -> Any:
        # config/loader/normalizers.py: checked before any value, as the release does.
        if not isinstance(data, dict):
            return data
        for short, long in (
            ("warmup", "phases"),
            ("profiling", "phases"),
            ("dataset", "datasets"),
            ("model", "models"),
        ):
            if short in data and long in data:
                raise ValueError(f"set {long} or its shorthand {short}, not both")
        if "warmup" in data and "profiling" not in data:
            raise ValueError("the warmup shorthand requires profiling: a warmup-only benchmark produces no results")
        return data

    @model_validator(mode="after")
    def _release_rules(self) -> Benchmark:
        # BenchmarkConfig's validators.
        if self.models is None and self.model is None:
            raise ValueError("benchmark.models is required (a list of model names)")
        if self.datasets is None and self.dataset is None:
            raise ValueError("benchmark.datasets is required (one dataset, e.g. [{name: main, type: synthetic}])")
        for i, ds in enumerate(self.datasets or []):
            if "name" not in ds:
                raise ValueError(f"datasets[{i}] is missing required 'name' field (e.g. 'main')")
            dataset_rules(ds, f"datasets[{i}]")
        if self.dataset is not None:
            dataset_rules(self.dataset, "dataset")
        if self.phases is None and self.profiling is None:
            raise ValueError("benchmark.phases is required (e.g. [{name: profiling, type: concurrency, ...}])")
        phases = self.all_phases()
        seen: dict[str, str] = {}
        for phase in phases:
            if phase.name.lower() in seen:
                raise ValueError(
                    f"phase names must be unique ignoring case, {show(phase.name)} repeats "
                    f"{show(seen[phase.name.lower()])}"
                )
            seen[phase.name.lower()] = phase.name
        if not any(p.effective_kind() == "profiling" for p in phases):
            raise ValueError("a phase of kind 'profiling' is required")
        if phases and phases[0].seamless:
            raise ValueError(f"phase {show(phases[0].name)} cannot be seamless: it is first")
        if any(p.prefill_concurrency is not None for p in phases) and not self.endpoint.streaming:
            raise ValueError("prefillConcurrency requires endpoint.streaming")
        if self.tokenizer is not None and self.endpoint.effective_type() in NON_TOKENIZING_TYPES:
            raise ValueError(f"a {self.endpoint.effective_type()} endpoint never tokenizes: remove benchmark.tokenizer")
        profiling = [p for p in phases if p.effective_kind() == "profiling"]
        timing_mode = (profiling[0].model_extra or {}).get("timingMode")
        dataset = self.dataset if self.dataset is not None else (self.datasets or [{}])[0]
        benchmark_rules(
            dataset,
            self.endpoint.effective_type(),
            [p.type for p in phases],
            timing_mode if isinstance(timing_mode, str) else None,
        )
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
