"""A ``spec.benchmark`` dataset's nested objects as AIPerf 0.13.0 takes them.

Upstream: aiperf 0.13.0 aiperf/config/{distributions,types}.py, aiperf/config/dataset/{content,video,trace}.py

The sampling distributions (``isl``, ``osl``, ``turns``, ``turnDelay``, image sizes, audio
lengths, ranking counts), the synthetic ``prompts`` block with its sequence distribution and its
range ratio (``VLLMRatioConfig``/``SGLangRatioConfig`` of
aiperf/common/models/sequence_distribution.py), ``prefixPrompts``, ``images``, ``audio``,
``video`` (with its audio track), ``rankings``, ``synthesis``, ``cacheBust`` and the file/public
``prompts`` corpus selection. Every object is closed, as the release's are; keys are camelCase
or the snake_case field names alike, as the release's ``BaseConfig`` takes them. Enums are
case-insensitive and take ``-`` for ``_``, as the release's ``CaseInsensitiveStrEnum``.

Deliberately stricter than the release, as the rest of the spec model: a value its lax parsing
would convert (``"16"`` for a bit depth, ``true`` for a length, a ratio written as text) is
refused, and every distribution number must be finite (the release refuses ``.inf`` in most
places, not all).
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import (
    BeforeValidator,
    Discriminator,
    Field,
    PlainValidator,
    StrictBool,
    StrictInt,
    StrictStr,
    Tag,
    model_validator,
)
from pydantic.alias_generators import to_camel

from aiperf_kueue.common.display import show
from aiperf_kueue.common.suggest import did_you_mean
from aiperf_kueue.config.aiperf_base import Number
from aiperf_kueue.config.base import Model

# The release's enums (aiperf/common/enums/enums.py), their values.
AUDIO_FORMATS = ("wav", "mp3")
CACHE_BUST_TARGETS = (
    "none", "system_prefix", "system_suffix", "first_turn_prefix", "first_turn_suffix", "warmup_isolation_system",
    "warmup_isolation_first_turn",
)  # fmt: skip
PROMPT_CORPORA = ("sonnet", "coding", "random")
IMAGE_FORMATS = ("png", "jpeg", "random")
IMAGE_SOURCE_SAMPLING = ("random-with-replacement", "shuffle-cycle", "sequential-cycle")
VIDEO_FORMATS = ("mp4", "webm")
VIDEO_AUDIO_CODECS = ("aac", "libvorbis", "libopus")
VIDEO_SYNTH_TYPES = ("moving_shapes", "grid_clock", "noise")
RANDOM_CORPUS_STYLES = ("vllm", "sglang")
#: The distribution kinds an explicit ``type`` may name (``_CANONICAL_TYPES``).
DISTRIBUTION_TYPES = ("fixed", "normal", "lognormal", "multimodal", "empirical")


def enum_key(value: str) -> str:
    """``value`` as ``CaseInsensitiveStrEnum`` compares it: lower case, ``-`` as ``_``."""
    return value.lower().replace("-", "_")


def choice(values: tuple[str, ...]) -> Any:
    """A validator taking one of the release enum's ``values``, as the enum matches them."""
    keys = {enum_key(v) for v in values}

    def check(value: Any) -> Any:
        if not isinstance(value, str) or enum_key(value) not in keys:
            raise ValueError(f"must be one of {', '.join(values)} (AIPerf 0.13.0), got {show(value)}")
        return value

    return PlainValidator(check)


def _finite(value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"must be a number, got {show(value)}")
    if not math.isfinite(value):
        raise ValueError(f"must be a finite number, got {show(value)}")
    return value


#: A finite JSON number (not a bool), kept as given.
Finite = Annotated[int | float, PlainValidator(_finite)]


class Closed(Model):
    """A closed release object: its camelCase keys or snake_case field names, nothing else."""

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError(f"must be a mapping, got {show(data)}")
        allowed = sorted(to_camel(n) for n in cls.model_fields)
        for key in data:
            if not isinstance(key, str) or (key not in cls.model_fields and key not in allowed):
                hint = did_you_mean(str(key), allowed)
                raise ValueError(f"unknown key {show(key)}{hint}; allowed: {', '.join(allowed)}")
        return data


# ---- Sampling distributions (config/distributions.py) ----


class _Distribution(Closed):
    """The bounds every distribution takes; an explicit ``type`` was used to pick the kind."""

    min: Finite | None = None
    max: Finite | None = None

    @model_validator(mode="before")
    @classmethod
    def _without_type(cls, data: Any) -> Any:
        if isinstance(data, dict) and "type" in data:
            return {k: v for k, v in data.items() if k != "type"}
        return data

    @model_validator(mode="after")
    def _bounds_rule(self) -> _Distribution:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({show(self.min)}) must be <= max ({show(self.max)})")
        return self

    def expected(self) -> float:
        """The release's ``expected_value``: the unclamped mean."""
        raise NotImplementedError


class FixedDistribution(_Distribution):
    """A constant (a bare number is one)."""

    value: Finite

    @model_validator(mode="before")
    @classmethod
    def _scalar(cls, data: Any) -> Any:
        return {"value": data} if isinstance(data, (int, float)) and not isinstance(data, bool) else data

    def expected(self) -> float:
        """The constant."""
        return float(self.value)


class NormalDistribution(_Distribution):
    """``{mean, stddev}``, truncated at 0."""

    mean: Annotated[Finite, Field(ge=0)]
    stddev: Annotated[Finite, Field(ge=0)] = 0

    def expected(self) -> float:
        """The mean."""
        return float(self.mean)


class LogNormalDistribution(_Distribution):
    """``{mean, median}``, median <= mean."""

    mean: Annotated[Finite, Field(gt=0)]
    median: Annotated[Finite, Field(gt=0)]

    @model_validator(mode="after")
    def _median_rule(self) -> LogNormalDistribution:
        if self.median > self.mean:
            raise ValueError(f"median ({show(self.median)}) must be <= mean ({show(self.mean)})")
        return self

    def expected(self) -> float:
        """The mean."""
        return float(self.mean)


class _Peak(Closed):
    """One peak of a multimodal distribution, ``{distribution: ..., weight}`` (the inline form is
    reshaped to it first)."""

    distribution: Distribution
    weight: Annotated[Finite, Field(ge=0)] = 1

    @model_validator(mode="before")
    @classmethod
    def _inline(cls, data: Any) -> Any:
        # PeakEntry.inline_weight: keys besides weight are the distribution, unless one is named so.
        if not isinstance(data, dict):
            return data
        rest = {k: v for k, v in data.items() if k != "weight"}
        weight = {"weight": data["weight"]} if "weight" in data else {}
        if "distribution" in rest:
            return {"distribution": rest["distribution"], **weight}
        return {"distribution": rest, **weight}


class MultimodalDistribution(_Distribution):
    """``{peaks: [...]}``: two or more weighted distributions."""

    peaks: list[_Peak] = Field(min_length=2)

    def expected(self) -> float:
        """The weighted mean of the peaks' means."""
        total = sum(p.weight for p in self.peaks)
        if not total:
            raise ValueError("peaks: the weights sum to 0, so the distribution has no mean")
        return sum(p.weight / total * p.distribution.expected() for p in self.peaks)


class _Point(Closed):
    """One ``{value, weight}`` of an empirical distribution."""

    value: Finite
    weight: Annotated[Finite, Field(gt=0)] = 1


class EmpiricalDistribution(_Distribution):
    """``{points: [{value, weight}, ...]}``: at least one point."""

    points: list[_Point] = Field(min_length=1)

    def expected(self) -> float:
        """The weighted mean of the values."""
        total = sum(p.weight for p in self.points)
        return sum(p.weight / total * p.value for p in self.points)


def _kind(value: Any) -> str | None:
    # _distribution_discriminator's order; the tags hold "[" so the error path leaves them out.
    if isinstance(value, (int, float)):
        return "[fixed]"
    if isinstance(value, dict):
        if isinstance(value.get("type"), str):
            return f"[{value['type']}]"
        for key, kind in (("peaks", "multimodal"), ("points", "empirical"), ("median", "lognormal")):
            if key in value:
                return f"[{kind}]"
        for key, kind in (("stddev", "normal"), ("value", "fixed"), ("mean", "normal")):
            if key in value:
                return f"[{kind}]"
    return None


_SHAPES = "a number, {mean, stddev}, {mean, median}, {value}, {peaks: [...]} or {points: [...]}"


def _shape(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError(f"must be {_SHAPES}, got {show(value)}")
    if isinstance(value, dict) and "type" in value:
        kind = value["type"]
        if not isinstance(kind, str) or kind not in DISTRIBUTION_TYPES:
            raise ValueError(f"type must be one of {', '.join(DISTRIBUTION_TYPES)}, got {show(kind)}")
    if _kind(value) is None:
        raise ValueError(f"must be {_SHAPES}, got {show(value)}")
    return value


#: A ``SamplingDistribution``: its kind read from ``type`` or from its keys, as the release does.
Distribution = Annotated[
    Annotated[FixedDistribution, Tag("[fixed]")]
    | Annotated[NormalDistribution, Tag("[normal]")]
    | Annotated[LogNormalDistribution, Tag("[lognormal]")]
    | Annotated[MultimodalDistribution, Tag("[multimodal]")]
    | Annotated[EmpiricalDistribution, Tag("[empirical]")],
    Discriminator(_kind),
    BeforeValidator(_shape),
]
_Peak.model_rebuild()


# ---- Prompts (config/dataset/content.py, config/types.py) ----


class CacheBust(Closed):
    """``cacheBust`` / ``prompts.cacheBust``: where to inject a per-conversation marker."""

    target: Annotated[str, choice(CACHE_BUST_TARGETS)] = "none"


class SequenceEntry(Closed):
    """One ``prompts.sequenceDistribution`` entry: ``{isl, osl, probability}``."""

    isl: Distribution
    isl_stddev: Annotated[Finite, Field(ge=0)] | None = None
    osl: Distribution
    osl_stddev: Annotated[Finite, Field(ge=0)] | None = None
    probability: Annotated[Finite, Field(ge=0, le=100)]

    @model_validator(mode="after")
    def _stddev_rule(self) -> SequenceEntry:
        # merge_stddev_shorthand: a number with a stddev becomes {mean, stddev}, whose mean is >= 0.
        for name, dist, stddev in (("isl", self.isl, self.isl_stddev), ("osl", self.osl, self.osl_stddev)):
            if stddev is not None and isinstance(dist, FixedDistribution) and dist.value < 0:
                raise ValueError(f"{name} must be >= 0 with {name}Stddev (a normal mean), got {show(dist.value)}")
        return self


def _ratio(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float, dict)):
        raise ValueError(f"must be a number or a mapping {{input, output}}, got {show(value)}")
    if isinstance(value, dict):
        if sorted(value) != ["input", "output"]:
            raise ValueError("a mapping needs exactly the keys input and output")
        for key in ("input", "output"):
            try:
                _finite(value[key])
            except ValueError as exc:
                raise ValueError(f"{key} {exc}") from None
    elif not math.isfinite(value):
        raise ValueError(f"must be a finite number, got {show(value)}")
    return value


class Prompts(Closed):
    """A synthetic dataset's ``prompts`` (``PromptConfig``)."""

    isl: Distribution | None = None
    osl: Distribution | None = None
    block_size: StrictInt | None = Field(None, gt=0)
    batch_size: StrictInt | None = Field(None, ge=1)
    cache_bust: CacheBust | None = None
    corpus: Annotated[str | None, choice(PROMPT_CORPORA)] = None
    sequence_distribution: list[SequenceEntry] | None = None
    random_range_ratio: Annotated[Any, PlainValidator(_ratio)] = None
    random_corpus_style: Annotated[str | None, choice(RANDOM_CORPUS_STYLES)] = None

    @model_validator(mode="after")
    def _sequence_rule(self) -> Prompts:
        if self.sequence_distribution is not None:
            total = sum(e.probability for e in self.sequence_distribution)
            if not 99 <= total <= 101:
                raise ValueError(f"sequenceDistribution: the probabilities must sum to ~100 (99-101), got {total:g}")
        return self


def range_ratio_rule(prompts: Prompts, isl: Any, osl: Any) -> None:
    """``PromptConfig._validate_random_range_ratio`` with the dataset's effective ``isl``/``osl``
    (the shorthand siblings are hoisted into ``prompts`` by the release)."""
    ratio = prompts.random_range_ratio
    if ratio is None:
        return
    if prompts.sequence_distribution is not None:
        raise ValueError("prompts.randomRangeRatio cannot be combined with prompts.sequenceDistribution")
    for name, dist in (("isl", isl), ("osl", osl)):
        if dist is None:
            raise ValueError(f"prompts.randomRangeRatio requires {name} to be set")
        if int(dist.expected()) < 1:
            raise ValueError(f"prompts.randomRangeRatio requires an {name} mean >= 1, got {int(dist.expected())}")
        if getattr(dist, "stddev", 0):
            raise ValueError(f"prompts.randomRangeRatio cannot be combined with an {name} stddev")
    sglang = enum_key(prompts.random_corpus_style or "vllm") == "sglang"
    if isinstance(ratio, dict):
        if sglang:
            raise ValueError("prompts.randomRangeRatio: the sglang corpus style takes one number, not input/output")
        pair = (ratio["input"], ratio["output"])
    else:
        pair = (ratio, ratio)
    for side, r in zip(("input", "output"), pair, strict=True):
        if not (0 <= r <= 1 if sglang else 0 <= r < 1):
            bound = "0 to 1" if sglang else "0 to below 1"
            raise ValueError(f"prompts.randomRangeRatio: the {side} ratio must be {bound}, got {show(r)}")


class PromptSelection(Closed):
    """A file or public dataset's ``prompts``: the corpus only."""

    corpus: Annotated[str | None, choice(PROMPT_CORPORA)] = None


class PrefixPrompts(Closed):
    """``prefixPrompts``: a prefix pool, or a shared system prompt and per-session context."""

    pool_size: StrictInt | None = Field(None, ge=1)
    length: StrictInt | None = Field(None, ge=1)
    shared_system_length: StrictInt | None = Field(None, ge=1)
    user_context_length: StrictInt | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _exclusive_rule(self) -> PrefixPrompts:
        pool = self.pool_size is not None or self.length is not None
        system = self.shared_system_length is not None or self.user_context_length is not None
        if pool and system:
            raise ValueError("poolSize/length and sharedSystemLength/userContextLength are mutually exclusive")
        return self


# ---- Media (content.py, video.py) ----


class Images(Closed):
    """``images``: synthetic images per request."""

    batch_size: StrictInt | None = Field(None, ge=0)
    width: Distribution | None = None
    height: Distribution | None = None
    format: Annotated[str | None, choice(IMAGE_FORMATS)] = None
    source: StrictStr | None = None
    """``noise``, ``assets``, or a directory of source images."""
    source_sampling: Annotated[str | None, choice(IMAGE_SOURCE_SAMPLING)] = None

    @model_validator(mode="after")
    def _sampling_rule(self) -> Images:
        sampling = enum_key(self.source_sampling or "random_with_replacement")
        if sampling != "random_with_replacement" and enum_key(self.source or "noise") == "noise":
            raise ValueError(
                "sourceSampling other than random-with-replacement needs source assets or a directory: "
                "noise has no finite source pool"
            )
        return self


class Audio(Closed):
    """``audio``: synthetic audio per request."""

    batch_size: StrictInt | None = Field(None, ge=0)
    length: Distribution | None = None
    format: Annotated[str | None, choice(AUDIO_FORMATS)] = None
    sample_rates: list[Number] | None = None
    depths: list[StrictInt] | None = None
    channels: StrictInt | None = Field(None, ge=1, le=2)


def _depth(value: Any) -> Any:
    if isinstance(value, bool) or value not in (8, 16, 24, 32) or not isinstance(value, int):
        raise ValueError(f"must be one of 8, 16, 24, 32, got {show(value)}")
    return value


class VideoAudio(Closed):
    """``video.audio``: the audio track muxed into each video."""

    sample_rate: Annotated[Number, Field(ge=8, le=96)] | None = None
    channels: StrictInt | None = Field(None, ge=0, le=2)
    codec: Annotated[str | None, choice(VIDEO_AUDIO_CODECS)] = None
    depth: Annotated[Any, PlainValidator(_depth)] = None

    @model_validator(mode="after")
    def _codec_rule(self) -> VideoAudio:
        if self.codec is not None and not self.channels:
            raise ValueError("codec needs channels 1 or 2 (0, the default, is no audio track)")
        return self


class Video(Closed):
    """``video``: synthetic videos per request."""

    batch_size: StrictInt | None = Field(None, ge=0)
    duration: Annotated[Number, Field(gt=0)] | None = None
    fps: StrictInt | None = Field(None, ge=1)
    width: StrictInt | None = Field(None, ge=1)
    height: StrictInt | None = Field(None, ge=1)
    format: Annotated[str | None, choice(VIDEO_FORMATS)] = None
    codec: StrictStr | None = None
    synth_type: Annotated[str | None, choice(VIDEO_SYNTH_TYPES)] = None
    audio: VideoAudio | None = None


class Rankings(Closed):
    """``rankings``: query-passage pairs for ranking endpoints."""

    passages: Distribution | None = None
    passage_tokens: Distribution | None = None
    query_tokens: Distribution | None = None


# ---- Trace replay (config/dataset/trace.py) ----


class Synthesis(Closed):
    """``synthesis``: trace transformation before replay."""

    speedup_ratio: Annotated[Number, Field(gt=0)] | None = None
    prefix_len_multiplier: Annotated[Number, Field(gt=0)] | None = None
    prefix_root_multiplier: StrictInt | None = Field(None, ge=1)
    prompt_len_multiplier: Annotated[Number, Field(gt=0)] | None = None
    output_len_multiplier: Annotated[Number, Field(ge=0)] | None = None
    max_isl: StrictInt | None = Field(None, ge=1)
    max_osl: StrictInt | None = Field(None, ge=1)
    allow_dataset_wrap: StrictBool | None = None


#: The snake_case field names of these objects (an error path shows them camelCase).
FIELD_NAMES = frozenset(
    n
    for model in (SequenceEntry, Prompts, PrefixPrompts, Images, Audio, VideoAudio, Video, Rankings, Synthesis)
    for n in model.model_fields
)
