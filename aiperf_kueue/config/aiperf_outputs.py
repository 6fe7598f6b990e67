"""``spec.benchmark``'s output sections as AIPerf 0.13.0 takes them: ``artifacts``, ``logging``,
``metrics`` and ``accuracy``.

Upstream: aiperf 0.13.0 aiperf/config/{artifacts,user_files,logging,metrics,accuracy}.py, loader/duration.py

``artifacts``: the export formats, switches, the slice duration (seconds or a duration such as
``5m``), the prefix that must not collide with ``outputs.json``, and the ``userFiles`` the operator
writes into the run directory (a relative path without ``..``, content matching its format). A
user file's ``content`` is never shown in a message: it may hold a credential.
"""

from __future__ import annotations

import posixpath
import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, PlainValidator, StrictBool, StrictInt, StrictStr, model_validator

from aiperf_kueue.common.display import show
from aiperf_kueue.config.aiperf_base import CrdModel, NearMiss

# loader/duration.py _DURATION_PATTERN: a number of seconds, minutes or hours.
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|hr|hour)?", re.IGNORECASE)
_UNIT_SECONDS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hr": 3600, "hour": 3600}


def duration_seconds(value: Any) -> float:
    """``_parse_duration``: seconds as a number, ``inf``, or a string such as ``30s``, ``5m``, ``2h``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"must be seconds or a duration such as '5m', got {show(value)}")
    if not isinstance(value, str):
        return float(value)
    text = value.strip()
    if text.lower() in ("inf", "infinity"):
        return float("inf")
    match = _DURATION.fullmatch(text)
    if match is None:
        raise ValueError(f"must be seconds or a duration such as '30s', '5m', '2h' or 'inf', got {show(value)}")
    return float(match[1]) * _UNIT_SECONDS[(match[2] or "s").lower()]


def _slice_duration(value: Any) -> Any:
    if duration_seconds(value) <= 0:
        raise ValueError(f"must be > 0, got {show(value)}")
    return value


def _formats(only: str) -> Any:
    # list[Literal[only]] | Literal[False]: the one format, or false for none.
    def check(value: Any) -> Any:
        if value is False:
            return value
        if not isinstance(value, list) or not value or any(v != only or not isinstance(v, str) for v in value):
            raise ValueError(f"must be [{only}] or false (no export), got {show(value)}")
        return value

    return PlainValidator(check)


# user_files.py _FORBIDDEN_PATH_CHARS: C0 controls and DEL.
_CONTROL = frozenset(chr(c) for c in range(32)) | {"\x7f"}


class UserFile(NearMiss):
    """One ``artifacts.userFiles`` entry: a file written into the run directory."""

    path: StrictStr
    """Relative path under the run directory (required; no ``..`` segment)."""

    format: Literal["json", "yaml", "text"] | None = None
    """``text`` for string content, else ``json`` (default: by the content)."""

    content: Annotated[Any, Field()]
    """The file's content, rendered with Jinja2 (required): a string for ``text``, else a mapping,
    list or scalar."""

    @model_validator(mode="before")
    @classmethod
    def _content_set(cls, data: Any) -> Any:
        # The API server drops a null value, so ``content: null`` reaches the release unset.
        if isinstance(data, dict) and data.get("content", 0) is None:
            raise ValueError("content is required (null is no content)")
        return data

    @model_validator(mode="after")
    def _release_rules(self) -> UserFile:
        path = self.path
        if not path:
            raise ValueError("path is empty")
        if any(c in _CONTROL for c in path):
            raise ValueError(f"path {show(path)} holds a control character")
        if path.startswith("/"):
            raise ValueError(f"path {show(path)} is absolute: it must be relative to the run directory")
        if ".." in path.split("/"):
            raise ValueError(f"path {show(path)} has a '..' segment: it must stay in the run directory")
        text = isinstance(self.content, str)
        fmt = self.format or ("text" if text else "json")
        if fmt != "text" and text:
            raise ValueError(f"path {show(path)}: format {fmt} needs structured content (a mapping, list or scalar)")
        if fmt == "text" and not text:
            raise ValueError(f"path {show(path)}: format text needs string content")
        return self


def _user_files_shape(value: Any) -> Any:
    # Checked before the entries, so that a misplaced content is not shown as the value refused.
    if not isinstance(value, list):
        raise ValueError("must be a list of files, each a mapping {path, content}")
    for i, entry in enumerate(value):
        if not isinstance(entry, dict):
            raise ValueError(f"entry {i} must be a mapping {{path, content}}")
    return value


# ArtifactsConfig._PREFIX_SUFFIXES_TO_STRIP, longest first.
_PREFIX_SUFFIXES = (
    "_server_metrics.parquet", "_server_metrics.jsonl", "_server_metrics.json", "_server_metrics.csv",
    "_network_latency.jsonl", "_gpu_telemetry.jsonl", "_timeslices.csv", "_timeslices.json", "_console.txt",
    "_raw.jsonl", ".parquet", ".csv", ".json", ".jsonl",
)  # fmt: skip


def _base(prefix: str) -> str:
    return next((prefix[: -len(s)] for s in _PREFIX_SUFFIXES if prefix.endswith(s)), prefix)


class Artifacts(NearMiss):
    """``benchmark.artifacts`` (the operator forces ``dir: /results``)."""

    dir: StrictStr | None = None
    """Output directory (overwritten by the operator)."""

    prefix: StrictStr | None = None
    """Base name of the export files (default ``profile_export_aiperf``); a known suffix
    (``.json``, ``_raw.jsonl``, ...) is stripped."""

    summary: Annotated[Any, _formats("json")] = None
    """Summary formats: ``[json]`` (default) or ``false``."""

    records: Annotated[Any, _formats("jsonl")] = None
    """Per-request record formats: ``[jsonl]`` (default) or ``false``."""

    raw: StrictBool | None = None
    """Export raw request/response records (default false)."""

    trace: StrictBool | None = None
    """Export HTTP trace timing (default false)."""

    slice_duration: Annotated[Any, PlainValidator(_slice_duration)] = None
    """Time-slice width: seconds (> 0) or a duration such as ``30s`` or ``5m`` (default none)."""

    show_trace_timing: StrictBool | None = None
    """Show HTTP trace timing in the console (default false)."""

    user_files: Annotated[list[UserFile], BeforeValidator(_user_files_shape)] | None = None
    """Files written into the run directory before the benchmark (default none)."""

    auto_plot: StrictBool | None = None
    """Render plots after the run (default false)."""

    plot_required: StrictBool | None = None
    """Fail the run when plotting fails (default false)."""

    export_outputs_json: StrictBool | None = None
    """Write ``outputs.json`` (default false)."""

    @model_validator(mode="after")
    def _release_rules(self) -> Artifacts:
        # ArtifactsConfig._check_outputs_json_collision: <prefix>.json next to outputs.json.
        if self.export_outputs_json and self.prefix is not None:
            base = _base(self.prefix)
            directory = self.dir or "./artifacts"
            if base and posixpath.normpath(posixpath.join(directory, f"{base}.json")) == posixpath.normpath(
                posixpath.join(directory, "outputs.json")
            ):
                raise ValueError(
                    f"prefix {show(self.prefix)} names {base}.json, the file exportOutputsJson writes (outputs.json): "
                    "use another prefix"
                )
        return self


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
