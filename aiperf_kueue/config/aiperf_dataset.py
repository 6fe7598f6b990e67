"""A ``spec.benchmark`` dataset's own values as AIPerf 0.13.0 takes them.

Upstream: aiperf 0.13.0 aiperf/config/dataset/config.py, aiperf/config/dataset/system_prompt.py

The synthetic, file and public variants' scalar fields (counts, seeds, bounds, switches, enums)
and the cross-field rules between them. The nested objects (``prompts``, ``isl``, ``osl``,
``turns``, ``turnDelay``, ``images``, ``audio``, ``video``, ``rankings``, ``prefixPrompts``,
``synthesis``, ``cacheBust``, the ``records`` themselves) are kept as given: AIPerf validates them
when the job is created. ``systemPromptFile`` is a path on the operator's file system, which the
release reads at validation; only its type is checked here.

Keys are checked before this (``_dataset_rules`` in :mod:`~aiperf_kueue.config.aiperf_benchmark`):
a dataset mapping is kept as given by the API server, and AIPerf takes the camelCase keys and the
snake_case field names alike. The enums are case-insensitive, as the release's ``ExtensibleStrEnum``.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, PlainValidator, StrictBool, StrictInt, StrictStr, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from aiperf_kueue.common.display import show
from aiperf_kueue.config.aiperf_base import Number
from aiperf_kueue.config.base import Model

#: ``DatasetSamplingStrategy`` (plugin/enums.py).
SAMPLING = ("random", "sequential", "shuffle")
#: ``DatasetFormat`` (config/dataset/defaults.py, re-exported by config.py).
FORMATS = (
    "burst_gpt_trace", "bailian_trace", "baseten_trace", "mooncake_trace", "raw_payload", "inputs_json",
    "dag_jsonl", "sagemaker_data_capture", "multi_turn", "random_pool", "single_turn",
    "speed_bench_qualitative", "speed_bench_coding", "speed_bench_humanities", "speed_bench_math",
    "speed_bench_multilingual", "speed_bench_qa", "speed_bench_rag", "speed_bench_reasoning",
    "speed_bench_roleplay", "speed_bench_stem", "speed_bench_summarization", "speed_bench_writing",
    *(
        f"speed_bench_throughput_{n}k{e}"
        for n in (1, 2, 8, 16, 32)
        for e in ("", "_low_entropy", "_mixed", "_high_entropy")
    ),
    "tracelab", "weka_trace",
)  # fmt: skip
#: ``PublicDatasetType`` (plugin/enums.py).
PUBLIC_DATASETS = (
    "exgentic_v2", "exgentic", "sharegpt", "aimo", "mmstar", "mmvu", "vision_arena", "llava_onevision",
    "aimo_aime", "aimo_numina_cot", "aimo_numina_1_5", "spec_bench", "spec_al_gsm8k", "spec_al_math500",
    "spec_al_humaneval", "spec_al_mbpp", "spec_al_mtbench", "instruct_coder", "blazedit_5k", "blazedit_10k",
    "librispeech", "voxpopuli", "gigaspeech", "ami", "spgispeech", "semianalysis_cc_traces_weka",
    "semianalysis_cc_traces_weka_no_subagents", "semianalysis_cc_traces_weka_with_subagents",
    "semianalysis_cc_traces_weka_with_subagents_256k",
    *(
        f"semianalysis_cc_traces_weka_with_subagents_{d}{s}"
        for d in ("060226", "060526", "060826")
        for s in ("", "_256k")
    ),
    *(f"semianalysis_cc_traces_weka_{d}{s}" for d in ("061326", "061526", "062126") for s in ("", "_256k")),
    "weka_hf",
)  # fmt: skip


def _one_of(values: tuple[str, ...], example: str) -> Any:
    def check(value: Any) -> Any:
        if not isinstance(value, str) or value.lower() not in values:
            listed = ", ".join(values) if len(values) < 10 else f"{len(values)} names, e.g. {example}"
            raise ValueError(f"must be one of {listed} (AIPerf 0.13.0), got {show(value)}")
        return value

    return PlainValidator(check)


def _lower(value: str | None) -> str | None:
    return value.lower() if value is not None else None


class _Dataset(Model):
    """The fields every variant has (``SystemPromptMixin`` and the shared ones)."""

    name: StrictStr
    type: StrictStr | None = None
    entries: StrictInt | None = Field(None, ge=1)
    random_seed: StrictInt | None = None
    sampling: Annotated[str | None, _one_of(SAMPLING, "random")] = None
    system_prompt: StrictStr | None = None
    system_prompt_file: StrictStr | None = None
    prompts: Any = None
    osl: Any = None

    @model_validator(mode="after")
    def _system_prompt_rule(self) -> _Dataset:
        if self.system_prompt is not None and self.system_prompt_file is not None:
            raise ValueError("set systemPrompt or systemPromptFile, not both")
        if self.system_prompt is not None and not self.system_prompt.strip():
            raise ValueError("systemPrompt is blank: omit it for no system prompt")
        return self


class SyntheticDataset(_Dataset):
    """A ``synthetic`` dataset."""

    isl: Any = None
    prefix_prompts: Any = None
    turns: Any = None
    turn_delay: Any = None
    turn_delay_ratio: Number | None = Field(None, ge=0)
    images: Any = None
    audio: Any = None
    video: Any = None
    rankings: Any = None


class _Replay(_Dataset):
    """The trace-replay fields the file and public variants share."""

    synthesis: Any = None
    cache_bust: Any = None
    inter_turn_delay_cap_seconds: Number | None = Field(None, ge=0)
    trace_idle_gap_cap_seconds: Number | None = Field(None, ge=0)
    ignore_trace_delays: StrictBool | None = None
    use_think_time_only: StrictBool | None = None
    max_context_length: StrictInt | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _trace_delay_rule(self) -> _Replay:
        if self.ignore_trace_delays and self.use_think_time_only:
            raise ValueError("ignoreTraceDelays and useThinkTimeOnly are mutually exclusive (each sets turn delays)")
        return self


_BATCH_SIZES = ("prompt_batch_size", "image_batch_size", "audio_batch_size", "video_batch_size")


class FileDataset(_Replay):
    """A ``file`` dataset: ``path`` or inline ``records``."""

    path: StrictStr | None = None
    records: list[Any] | dict[StrictStr, list[Any]] | None = None
    format: Annotated[str | None, _one_of(FORMATS, "mooncake_trace")] = None
    trace_session_sample_ratio: Number | None = Field(None, gt=0, le=1)
    max_idle_gap_cap_seconds: Number | None = Field(None, gt=0)
    replay_speedup: Number | None = Field(None, gt=0)
    open_loop_replay: StrictBool | None = None
    open_loop_strict: StrictBool | None = None
    omit_kv_hints: StrictBool | None = None
    force_min_tokens: StrictBool | None = None
    prompt_batch_size: StrictInt | None = Field(None, ge=0)
    image_batch_size: StrictInt | None = Field(None, ge=0)
    audio_batch_size: StrictInt | None = Field(None, ge=0)
    video_batch_size: StrictInt | None = Field(None, ge=0)
    block_size: StrictInt | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _release_rules(self) -> FileDataset:
        fmt = _lower(self.format) or "single_turn"
        batch = [to_camel(n) for n in _BATCH_SIZES if getattr(self, n) is not None]
        if batch and fmt != "random_pool":
            raise ValueError(f"{', '.join(batch)}: only for format random_pool, got format {fmt}")
        if self.max_context_length is not None and fmt not in ("weka_trace", "single_turn"):
            raise ValueError(f"maxContextLength only applies to format weka_trace, got format {fmt}")
        if (self.path is None) == (self.records is None):
            raise ValueError("a file dataset needs exactly one of path (a file) and records (inline)")
        if isinstance(self.records, dict):
            if fmt != "random_pool":
                raise ValueError(f"records as a mapping of pools is only for format random_pool, got format {fmt}")
            if not self.records:
                raise ValueError("records: a mapping of pools needs at least one pool")
            empty = [pool for pool, items in self.records.items() if not items]
            if empty:
                raise ValueError(f"records: pool {show(empty[0])} is empty; every pool needs a record")
        if isinstance(self.records, list) and not self.records:
            raise ValueError("records: needs at least one record")
        if self.open_loop_strict and self.open_loop_replay is False:
            raise ValueError("openLoopStrict requires open-loop replay: remove openLoopReplay: false")
        return self


class PublicDataset(_Replay):
    """A ``public`` dataset: one of AIPerf's named datasets."""

    dataset: Annotated[str, _one_of(PUBLIC_DATASETS, "sharegpt")]
    hf_subset: StrictStr | None = None
    filters: dict[StrictStr, StrictStr] | None = None
    hf_weka_dataset: StrictStr | None = None

    @model_validator(mode="after")
    def _release_rules(self) -> PublicDataset:
        name = self.dataset.lower()
        if self.max_context_length is not None and "weka" not in name:
            raise ValueError(f"maxContextLength only applies to the Weka public datasets, got dataset {name}")
        if self.hf_weka_dataset is not None and name != "weka_hf":
            raise ValueError(f"hfWekaDataset is only for dataset weka_hf, got dataset {name}")
        if name == "weka_hf" and not (self.hf_weka_dataset or "").strip():
            raise ValueError("dataset weka_hf needs a non-empty hfWekaDataset (a HuggingFace repo)")
        return self


VARIANTS: dict[str, type[_Dataset]] = {"synthetic": SyntheticDataset, "file": FileDataset, "public": PublicDataset}


def _message(err: Any) -> str:
    kind, given, ctx = err["type"], err.get("input"), err.get("ctx") or {}
    if kind == "value_error":
        return str(ctx.get("error", err["msg"]))
    if kind in ("greater_than_equal", "greater_than", "less_than_equal"):
        op = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<="}[kind]
        return f"must be {op} {next(iter(ctx.values()))}, got {show(given)}"
    if kind == "missing":
        return "required, but not set"
    wanted = {"int_type": "a whole number", "bool_type": "true or false", "string_type": "a string"}
    if kind in wanted:
        return f"must be {wanted[kind]}, got {show(given)}"
    if kind in ("dict_type", "list_type"):
        return f"must be {'a mapping' if kind == 'dict_type' else 'a list'}, got {show(given)}"
    return f"is not allowed here ({kind.replace('_', ' ')}), got {show(given)}"


def check_dataset(dataset: dict[str, Any], kind: str, where: str) -> None:
    """Validate ``dataset`` (keys already checked) as AIPerf 0.13.0's ``kind`` variant; one line naming
    the first key it refuses."""
    try:
        VARIANTS[kind].model_validate(dataset)
    except ValidationError as exc:
        err = exc.errors()[0]
        path = where
        for i, part in enumerate(err["loc"]):
            if isinstance(part, int):
                path += f"[{part}]"
            elif i == 0:
                path += f".{to_camel(part)}"
            elif "[" not in part:  # a union branch's tag (``list[any]``) is no key
                path += f".{part}"
        raise ValueError(f"{path}: {_message(err)}") from None
