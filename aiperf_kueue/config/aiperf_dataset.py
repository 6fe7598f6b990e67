"""A ``spec.benchmark`` dataset's keys and values as AIPerf 0.13.0 takes them.

Upstream: aiperf 0.13.0 aiperf/config/dataset/{config,system_prompt}.py, loader/{normalizers,helpers}.py, config.py

A dataset mapping is kept as given by the API server, and AIPerf takes the camelCase keys and the
snake_case field names alike: its ``name``, ``type`` and keys are checked first
(:func:`dataset_rules`), then the synthetic, file and public variants' fields (counts, seeds,
bounds, switches, enums, the nested objects of :mod:`~aiperf_kueue.config.aiperf_content`, the
inline ``records`` as a list or a mapping of pools of mappings) and the cross-field rules between
them. :func:`benchmark_rules` holds the release's benchmark-level rules that read the dataset
(cache-bust and system-prompt support by endpoint, prefix prompts against a system prompt, the
warmup-isolation targets). ``systemPromptFile`` is a path on the operator's file system, which the
release reads at validation; only its type is checked here. The enums are case-insensitive and
take ``-`` for ``_``, as the release's ``ExtensibleStrEnum``.

Deliberately stricter than the release: a synthetic dataset sets ``isl`` (``osl``) or
``prompts.isl`` (``prompts.osl``), not both; the release merges the two (the shorthand's keys
fill the missing ones) or silently drops the shorthand.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, PlainValidator, StrictBool, StrictInt, StrictStr, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from aiperf_kueue.common.display import show
from aiperf_kueue.common.suggest import did_you_mean
from aiperf_kueue.config.aiperf_base import Number
from aiperf_kueue.config.aiperf_content import (
    FIELD_NAMES,
    Audio,
    CacheBust,
    Distribution,
    Images,
    PrefixPrompts,
    Prompts,
    PromptSelection,
    Rankings,
    Synthesis,
    Video,
    enum_key,
    range_ratio_rule,
)
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
        if not isinstance(value, str) or enum_key(value) not in values:
            listed = ", ".join(values) if len(values) < 10 else f"{len(values)} names, e.g. {example}"
            raise ValueError(f"must be one of {listed} (AIPerf 0.13.0), got {show(value)}")
        return value

    return PlainValidator(check)


def _key(value: str | None) -> str | None:
    return enum_key(value) if value is not None else None


class _Dataset(Model):
    """The fields every variant has (``SystemPromptMixin`` and the shared ones)."""

    name: StrictStr
    type: StrictStr | None = None
    entries: StrictInt | None = Field(None, ge=1)
    random_seed: StrictInt | None = None
    sampling: Annotated[str | None, _one_of(SAMPLING, "random")] = None
    system_prompt: StrictStr | None = None
    system_prompt_file: StrictStr | None = None
    osl: Distribution | None = None

    @model_validator(mode="after")
    def _system_prompt_rule(self) -> _Dataset:
        if self.system_prompt is not None and self.system_prompt_file is not None:
            raise ValueError("set systemPrompt or systemPromptFile, not both")
        if self.system_prompt is not None and not self.system_prompt.strip():
            raise ValueError("systemPrompt is blank: omit it for no system prompt")
        return self


class SyntheticDataset(_Dataset):
    """A ``synthetic`` dataset."""

    prompts: Prompts | None = None
    isl: Distribution | None = None
    prefix_prompts: PrefixPrompts | None = None
    turns: Distribution | None = None
    turn_delay: Distribution | None = None
    turn_delay_ratio: Number | None = Field(None, ge=0)
    images: Images | None = None
    audio: Audio | None = None
    video: Video | None = None
    rankings: Rankings | None = None

    @model_validator(mode="after")
    def _prompt_rules(self) -> SyntheticDataset:
        # The release hoists isl/osl into prompts (_hoist_synthetic_prompt_fields): one of the two here.
        prompts = self.prompts or Prompts()
        for name in ("isl", "osl"):
            if getattr(self, name) is not None and getattr(prompts, name) is not None:
                raise ValueError(f"set {name} or prompts.{name}, not both")
        range_ratio_rule(prompts, self.isl or prompts.isl, self.osl or prompts.osl)
        if self.turns is not None and self.turns.expected() < 1:
            raise ValueError(f"turns: the mean number of turns must be >= 1, got {self.turns.expected():g}")
        return self


class _Replay(_Dataset):
    """The trace-replay fields the file and public variants share."""

    prompts: PromptSelection | None = None
    synthesis: Synthesis | None = None
    cache_bust: CacheBust | None = None
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


def _records(value: Any) -> Any:
    # list[dict[str, Any]] | dict[str, list[dict[str, Any]]]: the records' own fields are the
    # format loader's to read, so only their shape is checked (as the release does).
    pools: list[tuple[Any, Any]]
    if isinstance(value, dict):
        pools = list(value.items())
    elif isinstance(value, list):
        pools = [(None, value)]
    else:
        raise ValueError(f"must be a list of records or a mapping of pools (lists of records), got {show(value)}")
    for pool, items in pools:
        where = "" if pool is None else f"pool {show(pool)}: "
        if pool is not None and not isinstance(pool, str):
            raise ValueError(f"pool names must be strings, got {show(pool)}")
        if not isinstance(items, list):
            raise ValueError(f"{where}must be a list of records, got {show(items)}")
        for i, record in enumerate(items):
            if not isinstance(record, dict) or not all(isinstance(k, str) for k in record):
                raise ValueError(f"{where}record {i} must be a mapping with string keys, got {show(record)}")
    return value


#: ``FileDataset._HASH_ID_TRACE_FORMATS``: loaders that synthesize prompts from a corpus.
_HASH_ID_FORMATS = ("mooncake_trace", "bailian_trace", "burst_gpt_trace", "sagemaker_data_capture", "weka_trace")
_BATCH_SIZES = ("prompt_batch_size", "image_batch_size", "audio_batch_size", "video_batch_size")


class FileDataset(_Replay):
    """A ``file`` dataset: ``path`` or inline ``records``."""

    path: StrictStr | None = None
    records: Annotated[Any, PlainValidator(_records)] = None
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
        fmt = _key(self.format) or "single_turn"
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
        corpus = self.prompts.corpus if self.prompts is not None else None
        if corpus is not None and enum_key(corpus) == "random" and fmt in _HASH_ID_FORMATS:
            raise ValueError(
                f"prompts.corpus random does not work with format {fmt}: its loader builds prompts from a text "
                "corpus (use sonnet or coding)"
            )
        return self


class PublicDataset(_Replay):
    """A ``public`` dataset: one of AIPerf's named datasets."""

    dataset: Annotated[str, _one_of(PUBLIC_DATASETS, "sharegpt")]
    hf_subset: StrictStr | None = None
    filters: dict[StrictStr, StrictStr] | None = None
    hf_weka_dataset: StrictStr | None = None

    @model_validator(mode="after")
    def _release_rules(self) -> PublicDataset:
        name = enum_key(self.dataset)
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
    if kind == "too_short":
        return f"must have at least {ctx.get('min_length')} item(s), got {len(given)}"
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
            elif i == 0 or part in FIELD_NAMES:
                path += f".{to_camel(part)}"
            elif "[" not in part:  # a union branch's tag (``list[any]``, ``[normal]``) is no key
                path += f".{part}"
        raise ValueError(f"{path}: {_message(err)}") from None


# AIPerf 0.13.0, aiperf/config/dataset/config.py: the dataset variants (a union discriminated by
# ``type``, a case-insensitive DatasetType) and their keys (extra="forbid"; camelCase aliases, the
# field names too).
DATASET_KEYS: dict[str, frozenset[str]] = {
    "synthetic": frozenset(
        {"audio", "entries", "images", "isl", "name", "osl", "prefixPrompts", "prompts", "randomSeed", "rankings",
         "sampling", "systemPrompt", "systemPromptFile", "turnDelay", "turnDelayRatio", "turns", "type", "video"}
    ),
    "file": frozenset(
        {"audioBatchSize", "blockSize", "cacheBust", "entries", "forceMinTokens", "format", "ignoreTraceDelays",
         "imageBatchSize", "interTurnDelayCapSeconds", "maxContextLength", "maxIdleGapCapSeconds", "name",
         "omitKvHints", "openLoopReplay", "openLoopStrict", "osl", "path", "promptBatchSize", "prompts",
         "randomSeed", "records", "replaySpeedup", "sampling", "synthesis", "systemPrompt", "systemPromptFile",
         "traceIdleGapCapSeconds", "traceSessionSampleRatio", "type", "useThinkTimeOnly", "videoBatchSize"}
    ),
    "public": frozenset(
        {"cacheBust", "dataset", "entries", "filters", "hfSubset", "hfWekaDataset", "ignoreTraceDelays",
         "interTurnDelayCapSeconds", "maxContextLength", "name", "osl", "prompts", "randomSeed", "sampling",
         "synthesis", "systemPrompt", "systemPromptFile", "traceIdleGapCapSeconds", "type", "useThinkTimeOnly"}
    ),
}  # fmt: skip


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def dataset_rules(dataset: dict[str, Any], where: str) -> None:
    """A dataset's ``name``, ``type`` and keys as AIPerf 0.13.0's dataset models take them, then its
    values (:func:`check_dataset`)."""
    name = dataset.get("name", "default")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{where}.name must be a non-empty string (e.g. 'main'), got {show(name)}")
    kind = dataset.get("type", "synthetic")
    allowed = ", ".join(DATASET_KEYS)
    # The release's union picks the variant by the exact tag: ``Synthetic`` matches none.
    if not isinstance(kind, str) or kind not in DATASET_KEYS:
        raise ValueError(f"{where}.type must be one of {allowed} (AIPerf 0.13.0's dataset types), got {show(kind)}")
    keys = DATASET_KEYS[kind]
    for key in dataset:
        if not isinstance(key, str) or (key not in keys and key not in {_snake(k) for k in keys}):
            raise ValueError(
                f"{where}: unknown key {show(key)} for a {kind} dataset"
                f"{did_you_mean(str(key), sorted(keys))}; allowed: {', '.join(sorted(keys))}"
            )
    # The ``dataset`` shorthand is named ``default`` by the release's normalizer.
    check_dataset({"name": name, **dataset}, kind, where)


#: Endpoint types whose plugin metadata sets ``supports_cache_bust`` / ``consumes_system_message``.
CACHE_BUST_ENDPOINTS = ("chat", "responses", "messages")
SYSTEM_MESSAGE_ENDPOINTS = ("chat", "chat_embeddings", "messages", "responses")


def _get(mapping: Any, key: str) -> Any:
    """``key`` of a dataset mapping, written camelCase or snake_case (values already checked)."""
    if not isinstance(mapping, dict):
        return None
    return mapping.get(key, mapping.get(_snake(key)))


def cache_bust_target(dataset: dict[str, Any]) -> str:
    """``get_cache_bust_target``, lower case: a synthetic dataset's ``prompts.cacheBust`` (its
    ``prompts`` exist once ``isl``/``osl`` are hoisted into them), a file or public dataset's
    ``cacheBust``; ``none`` by default."""
    if dataset.get("type", "synthetic") == "synthetic":
        target = _get(_get(dataset, "prompts"), "cacheBust")
    else:
        target = _get(dataset, "cacheBust")
    value = _get(target, "target")
    return enum_key(value) if isinstance(value, str) else "none"


def benchmark_rules(
    dataset: dict[str, Any], endpoint_type: str, phase_types: list[str], timing_mode: str | None
) -> None:
    """``BenchmarkConfig``'s rules on its first dataset (already checked): a file dataset for the
    phase types (``check_phase_dataset_compatibility``), cache-bust and the system prompt against
    the endpoint type, the system prompt against prefix prompts, and the warmup-isolation targets
    (``timing_mode``: the first profiling phase's ``timingMode``)."""
    if dataset.get("type", "synthetic") == "file":
        sampling = enum_key(_get(dataset, "sampling") or "sequential")
        fmt = enum_key(_get(dataset, "format") or "single_turn")
        if "fixed_schedule" in phase_types and sampling != "sequential":
            raise ValueError(f"a fixed_schedule phase needs the file dataset's sampling sequential, got {sampling}")
        if "user_centric" in phase_types and fmt != "multi_turn":
            raise ValueError(f"a user_centric phase needs the file dataset's format multi_turn, got {fmt}")
    target = cache_bust_target(dataset)
    if target != "none" and endpoint_type not in CACHE_BUST_ENDPOINTS:
        raise ValueError(
            f"cacheBust target {target} needs an endpoint type that supports it ({', '.join(CACHE_BUST_ENDPOINTS)}), "
            f"got {endpoint_type}"
        )
    system_prompt = _get(dataset, "systemPrompt") is not None or _get(dataset, "systemPromptFile") is not None
    prefix = _get(dataset, "prefixPrompts") or {}
    if system_prompt:
        if _get(prefix, "sharedSystemLength") is not None:
            raise ValueError(
                "systemPrompt/systemPromptFile and prefixPrompts.sharedSystemLength are mutually exclusive: "
                "both fill the system message"
            )
        if _get(prefix, "poolSize") is not None or _get(prefix, "length") is not None:
            raise ValueError(
                "systemPrompt/systemPromptFile and prefixPrompts.poolSize/length are mutually exclusive: "
                "both fill the system message"
            )
        if endpoint_type not in SYSTEM_MESSAGE_ENDPOINTS:
            raise ValueError(
                f"systemPrompt/systemPromptFile needs an endpoint type with a system role "
                f"({', '.join(SYSTEM_MESSAGE_ENDPOINTS)}), got {endpoint_type}"
            )
    if target.startswith("warmup_isolation") and enum_key(timing_mode or "") == "agentic_replay":
        raise ValueError(f"cacheBust target {target} does not work with the agentic_replay timing mode")
    shared = _get(prefix, "sharedSystemLength") is not None
    synthetic = dataset.get("type", "synthetic") == "synthetic"
    if target == "warmup_isolation_system" and synthetic and not system_prompt and not shared:
        raise ValueError(
            "cacheBust target warmup_isolation_system needs a system message on a synthetic dataset: "
            "set prefixPrompts.sharedSystemLength or systemPrompt (or use warmup_isolation_first_turn)"
        )
