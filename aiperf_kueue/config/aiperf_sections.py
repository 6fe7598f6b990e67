"""The small ``spec.benchmark`` sections AIPerf 0.13.0 validates: tokenizer, network latency and
the tracking integrations (OpenTelemetry, MLflow, Weights & Biases).

Upstream: aiperf 0.13.0 aiperf/config/tokenizer.py, aiperf/config/network_latency.py,
aiperf/config/otel.py, aiperf/config/mlflow.py, aiperf/config/wandb.py

Strict where the release's parsing is lax (``true``/``5`` as a string, a comma-separated string of
tags): the CRD generated from the release's models types these keys, so the API server refuses
what the release's Python would convert. Values are never echoed back in messages from here: a
tracking URI or a resource attribute may carry a credential.
"""

from __future__ import annotations

from pydantic import Field, StrictBool, StrictStr, model_validator

from aiperf_kueue.config.aiperf_base import CrdModel, Number


class Tokenizer(CrdModel):
    """``benchmark.tokenizer``."""

    name: StrictStr | None = None
    """HuggingFace tokenizer name, local path or ``builtin`` (default: the model's)."""

    revision: StrictStr | None = None
    """Branch, tag or commit of the tokenizer (default ``main``)."""

    trust_remote_code: StrictBool | None = None
    """Run the tokenizer repository's own code (default false)."""

    apply_chat_template: StrictBool | None = None
    """Count input tokens through the chat template (default false)."""

    resolved_names: dict[StrictStr, StrictStr] | None = None
    """Model → tokenizer names; filled in by AIPerf, a value given here is ignored."""


class NetworkLatency(CrdModel):
    """``benchmark.networkLatency``."""

    enabled: StrictBool | None = None
    """Measure the endpoint's TCP round trip and report network-adjusted latencies (default false)."""

    ping_interval: Number | None = Field(None, gt=0)
    """Seconds between round-trip probes, > 0 (default: AIPerf's environment default)."""

    mean_ms: Number | None = Field(None, ge=0)
    """A fixed round trip in milliseconds, >= 0, instead of probing (default none)."""


class Otel(CrdModel):
    """``benchmark.otel``."""

    metrics_url: StrictStr | None = None
    """OTLP/HTTP metrics endpoint; setting it turns streaming on (default off)."""

    stream_metrics_enabled: StrictBool | None = None
    """Stream metric records (default true)."""

    stream_timing_enabled: StrictBool | None = None
    """Stream timing records (default true)."""

    custom_resource_attributes: dict[StrictStr, StrictStr] | None = None
    """Extra OTel resource attributes, string → string (default none)."""

    gen_ai_provider: StrictStr | None = None
    """GenAI semantic-convention provider override (default none)."""


class Mlflow(CrdModel):
    """``benchmark.mlflow``."""

    tracking_uri: StrictStr | None = None
    """MLflow tracking URI; setting it turns the upload on (default off)."""

    experiment: StrictStr | None = None
    """Experiment name (default ``aiperf``)."""

    run_name: StrictStr | None = None
    """Run name (default none)."""

    tags: dict[StrictStr, StrictStr] | None = None
    """Run tags, string → string (default none)."""

    parent_run_id: StrictStr | None = None
    """Parent run ID (default none)."""

    artifact_globs: list[StrictStr] | None = None
    """Globs of the result files to upload (default: AIPerf's JSON, CSV, JSONL, Parquet and plots)."""


def _blank(value: str | None) -> bool:
    # The release strips these strings and reads an empty one as unset.
    return value is None or not value.strip()


class Wandb(CrdModel):
    """``benchmark.wandb``."""

    project: StrictStr | None = None
    """Project name; setting it turns the upload on (default off)."""

    entity: StrictStr | None = None
    """Team or user (default: the API key's); needs ``project``."""

    run_name: StrictStr | None = None
    """Run name (default none); needs ``project``."""

    tags: list[StrictStr] | None = None
    """Run tags (default none); needs ``project``."""

    @model_validator(mode="after")
    def _project_rule(self) -> Wandb:
        # WandbConfig._require_project_for_secondary_fields, on the stripped values.
        if _blank(self.project):
            given = [
                key
                for key, blank in (
                    ("entity", _blank(self.entity)),
                    ("runName", _blank(self.run_name)),
                    ("tags", not any(t.strip() for t in self.tags or [])),
                )
                if not blank
            ]
            if given:
                raise ValueError(
                    f"{' and '.join(given)} {'needs' if len(given) == 1 else 'need'} a non-blank project: "
                    "without one nothing is uploaded to Weights & Biases"
                )
        return self
