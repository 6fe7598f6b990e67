"""A dataset's nested objects (distributions, prompts, prefix prompts, media, rankings, synthesis,
cache-bust, inline records) and the benchmark rules that read them: what AIPerf 0.13.0 takes,
and the one line the loader prints for each refusal."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from aiperf_kueue.config.aiperf_spec import AIPerfJobSpec
from tests.aiperf_spec import problems, with_benchmark


def spec(dataset: dict[str, Any], **benchmark: Any) -> dict[str, Any]:
    return with_benchmark(datasets=[{"name": "main", **dataset}], **benchmark)


SYN = {"type": "synthetic"}
FILE = {"type": "file", "path": "/data/trace.jsonl"}
PUBLIC = {"type": "public", "dataset": "sharegpt"}

ACCEPTED = [
    # Every distribution kind, bounds, an explicit type, snake_case keys.
    {**SYN, "isl": 512, "osl": {"mean": 128, "stddev": 16, "min": 1, "max": 256}},
    {**SYN, "isl": {"mean": 512, "median": 400}, "osl": {"type": "fixed", "value": 64}},
    {**SYN, "isl": {"peaks": [{"mean": 128, "stddev": 20, "weight": 60}, {"distribution": 2048}]}},
    {**SYN, "isl": {"points": [{"value": 128, "weight": 40}, {"value": 512}]}, "turns": 3, "turnDelay": {"mean": 0}},
    {
        **SYN,
        "prompts": {
            "isl": 100,
            "osl": 10,
            "batch_size": 2,
            "blockSize": 16,
            "corpus": "Coding",
            "randomRangeRatio": {"input": 0.2, "output": 0.5},
            "cacheBust": {"target": "System-Prefix"},
        },
    },
    {**SYN, "prompts": {"isl": 100, "osl": 10, "randomRangeRatio": 1, "randomCorpusStyle": "sglang"}},
    {
        **SYN,
        "prompts": {
            "sequenceDistribution": [
                {"isl": 128, "isl_stddev": 8, "osl": 64, "probability": 40},
                {"isl": {"mean": 512, "median": 400}, "osl": 256, "probability": 60.5},
            ]
        },
    },
    {**SYN, "prefixPrompts": {"pool_size": 4, "length": 100}},
    {**SYN, "prefixPrompts": {"sharedSystemLength": 50, "userContextLength": 20}},
    {
        **SYN,
        "images": {
            "batchSize": 1,
            "width": {"mean": 512, "stddev": 10},
            "height": 256,
            "format": "PNG",
            "source": "/images",
            "sourceSampling": "shuffle_cycle",
        },
    },
    {
        **SYN,
        "audio": {
            "batchSize": 1,
            "length": 5,
            "format": "MP3",
            "sampleRates": [16, 44.1],
            "depths": [16],
            "channels": 2,
        },
    },
    {
        **SYN,
        "video": {
            "batchSize": 1,
            "duration": 2.5,
            "fps": 4,
            "width": 640,
            "format": "webm",
            "codec": "libvpx",
            "synthType": "grid-clock",
            "audio": {"sampleRate": 48, "channels": 1, "codec": "libopus", "depth": 24},
        },
    },
    {**SYN, "rankings": {"passages": 5, "passage_tokens": {"mean": 10}, "queryTokens": 3}},
    {
        **FILE,
        "format": "mooncake_trace",
        "osl": {"mean": 5},
        "prompts": {"corpus": "sonnet"},
        "cacheBust": {"target": "first-turn-prefix"},
        "synthesis": {"speedupRatio": 2, "prefixRootMultiplier": 2, "outputLenMultiplier": 0, "allowDatasetWrap": True},
    },
    {"type": "file", "records": [{"text": "hi", "output_length": 5}]},
    {**PUBLIC, "osl": 64, "synthesis": {"max_isl": 1000}, "cacheBust": {"target": "none"}},
    # The release's warmup_isolation_system needs a system message: a verbatim prompt is one.
    {**SYN, "systemPrompt": "be brief", "prompts": {"cacheBust": {"target": "warmup_isolation_system"}}},
]


@pytest.mark.parametrize("dataset", ACCEPTED)
def test_accepted_nested_objects_are_kept_as_given(dataset: dict[str, Any]) -> None:
    data = spec(dataset)
    assert AIPerfJobSpec.model_validate(copy.deepcopy(data)).manifest() == data


W = "benchmark"
D = "datasets[0]"


@pytest.mark.parametrize(
    ("dataset", "expected"),
    [
        # Distributions.
        ({**SYN, "isl": {"mean": 5, "stddev": -1}}, f"{D}.isl.stddev: must be >= 0, got -1"),
        ({**SYN, "osl": {"mean": 5, "median": 6}}, f"{D}.osl: median (6) must be <= mean (5)"),
        ({**SYN, "osl": {"mean": 0, "median": 0}}, f"{D}.osl.mean: must be > 0, got 0"),
        ({**SYN, "isl": {"value": 4, "min": 5, "max": 3}}, f"{D}.isl: min (5) must be <= max (3)"),
        ({**SYN, "isl": {"value": 1e400}}, f"{D}.isl.value: must be a finite number, got .inf"),
        ({**SYN, "isl": {"peaks": [{"mean": 1}]}}, f"{D}.isl.peaks: must have at least 2 item(s), got 1"),
        ({**SYN, "isl": {"points": [{"value": 1, "weight": 0}]}}, f"{D}.isl.points[0].weight: must be > 0, got 0"),
        ({**SYN, "isl": {"type": "fixed", "mean": 3}}, f"{D}.isl: unknown key 'mean'; allowed: max, min, value"),
        (
            {**SYN, "isl": {"type": "gauss", "mean": 3}},
            f"{D}.isl: type must be one of fixed, normal, lognormal, multimodal, empirical, got 'gauss'",
        ),
        (
            {**SYN, "isl": "512"},
            f"{D}.isl: must be a number, {{mean, stddev}}, {{mean, median}}, {{value}}, {{peaks: [...]}} or "
            "{points: [...]}, got '512'",
        ),
        (
            {**SYN, "isl": {"mean": 1, "stdev": 2}},
            f"{D}.isl: unknown key 'stdev' (did you mean 'stddev'?); allowed: max, mean, min, stddev",
        ),
        ({**SYN, "turns": 0.5}, f"{D}: turns: the mean number of turns must be >= 1, got 0.5"),
        ({**SYN, "turnDelay": {"mean": -1}}, f"{D}.turnDelay.mean: must be >= 0, got -1"),
        # Synthetic prompts.
        ({**SYN, "isl": 5, "prompts": {"isl": 6}}, f"{D}: set isl or prompts.isl, not both"),
        ({**SYN, "prompts": {"batchSize": 0}}, f"{D}.prompts.batchSize: must be >= 1, got 0"),
        ({**SYN, "prompts": {"blockSize": 0}}, f"{D}.prompts.blockSize: must be > 0, got 0"),
        (
            {**SYN, "prompts": {"corpus": "poems"}},
            f"{D}.prompts.corpus: must be one of sonnet, coding, random (AIPerf 0.13.0), got 'poems'",
        ),
        (
            {**SYN, "prompts": {"sequenceDistribution": [{"isl": 5, "osl": 6, "probability": 50}]}},
            f"{D}.prompts: sequenceDistribution: the probabilities must sum to ~100 (99-101), got 50",
        ),
        (
            {**SYN, "prompts": {"sequenceDistribution": [{"isl": 5, "osl": 6, "probability": 101.5}]}},
            f"{D}.prompts.sequenceDistribution[0].probability: must be <= 100, got 101.5",
        ),
        (
            {**SYN, "prompts": {"sequenceDistribution": [{"isl": -5, "isl_stddev": 2, "osl": 6, "probability": 100}]}},
            f"{D}.prompts.sequenceDistribution[0]: isl must be >= 0 with islStddev (a normal mean), got -5",
        ),
        (
            {**SYN, "osl": 10, "prompts": {"randomRangeRatio": 0.5}},
            f"{D}: prompts.randomRangeRatio requires isl to be set",
        ),
        (
            {**SYN, "isl": 0, "osl": 10, "prompts": {"randomRangeRatio": 0.5}},
            f"{D}: prompts.randomRangeRatio requires an isl mean >= 1, got 0",
        ),
        (
            {**SYN, "isl": {"mean": 100, "stddev": 5}, "osl": 10, "prompts": {"randomRangeRatio": 0.5}},
            f"{D}: prompts.randomRangeRatio cannot be combined with an isl stddev",
        ),
        (
            {**SYN, "prompts": {"isl": 100, "osl": 10, "randomRangeRatio": 1}},
            f"{D}: prompts.randomRangeRatio: the input ratio must be 0 to below 1, got 1",
        ),
        (
            {
                **SYN,
                "prompts": {
                    "isl": 9,
                    "osl": 9,
                    "randomRangeRatio": {"input": 0.1, "output": 0.2},
                    "randomCorpusStyle": "sglang",
                },
            },
            f"{D}: prompts.randomRangeRatio: the sglang corpus style takes one number, not input/output",
        ),
        (
            {**SYN, "prompts": {"isl": 9, "osl": 9, "randomRangeRatio": "0.5"}},
            f"{D}.prompts.randomRangeRatio: must be a number or a mapping {{input, output}}, got '0.5'",
        ),
        (
            {**SYN, "prompts": {"isl": 9, "osl": 9, "randomRangeRatio": {"input": 0.1}}},
            f"{D}.prompts.randomRangeRatio: a mapping needs exactly the keys input and output",
        ),
        # Prefix prompts.
        (
            {**SYN, "prefixPrompts": {"poolSize": 2, "sharedSystemLength": 3}},
            f"{D}.prefixPrompts: poolSize/length and sharedSystemLength/userContextLength are mutually exclusive",
        ),
        ({**SYN, "prefixPrompts": {"length": 0}}, f"{D}.prefixPrompts.length: must be >= 1, got 0"),
        # Media.
        (
            {**SYN, "images": {"sourceSampling": "shuffle-cycle"}},
            f"{D}.images: sourceSampling other than random-with-replacement needs source assets or a directory: "
            "noise has no finite source pool",
        ),
        (
            {**SYN, "images": {"format": "gif"}},
            f"{D}.images.format: must be one of png, jpeg, random (AIPerf 0.13.0), got 'gif'",
        ),
        ({**SYN, "images": {"source": 1}}, f"{D}.images.source: must be a string, got 1"),
        ({**SYN, "images": {"batchSize": -1}}, f"{D}.images.batchSize: must be >= 0, got -1"),
        ({**SYN, "audio": {"channels": 3}}, f"{D}.audio.channels: must be <= 2, got 3"),
        ({**SYN, "audio": {"depths": [16.5]}}, f"{D}.audio.depths[0]: must be a whole number, got 16.5"),
        ({**SYN, "audio": {"sampleRates": 16}}, f"{D}.audio.sampleRates: must be a list, got 16"),
        (
            {**SYN, "video": {"audio": {"codec": "aac"}}},
            f"{D}.video.audio: codec needs channels 1 or 2 (0, the default, is no audio track)",
        ),
        (
            {**SYN, "video": {"audio": {"depth": "16"}}},
            f"{D}.video.audio.depth: must be one of 8, 16, 24, 32, got '16'",
        ),
        ({**SYN, "video": {"audio": {"sampleRate": 100}}}, f"{D}.video.audio.sampleRate: must be <= 96, got 100"),
        ({**SYN, "video": {"duration": 0}}, f"{D}.video.duration: must be > 0, got 0"),
        (
            {**SYN, "video": {"synthType": "plasma"}},
            f"{D}.video.synthType: must be one of moving_shapes, grid_clock, noise (AIPerf 0.13.0), got 'plasma'",
        ),
        ({**SYN, "video": {"fps": 0}}, f"{D}.video.fps: must be >= 1, got 0"),
        ({**SYN, "rankings": {"passages": {"mean": -1}}}, f"{D}.rankings.passages.mean: must be >= 0, got -1"),
        (
            {**SYN, "rankings": {"passage_count": 5}},
            f"{D}.rankings: unknown key 'passage_count'; allowed: passageTokens, passages, queryTokens",
        ),
        # Trace replay.
        ({**FILE, "synthesis": {"speedupRatio": 0}}, f"{D}.synthesis.speedupRatio: must be > 0, got 0"),
        (
            {**FILE, "synthesis": {"prefixRootMultiplier": 0}},
            f"{D}.synthesis.prefixRootMultiplier: must be >= 1, got 0",
        ),
        (
            {**FILE, "synthesis": {"allowDatasetWrap": "yes"}},
            f"{D}.synthesis.allowDatasetWrap: must be true or false, got 'yes'",
        ),
        (
            {**FILE, "cacheBust": {"target": "x"}},
            f"{D}.cacheBust.target: must be one of none, system_prefix, system_suffix, first_turn_prefix, "
            "first_turn_suffix, warmup_isolation_system, warmup_isolation_first_turn (AIPerf 0.13.0), got 'x'",
        ),
        (
            {**FILE, "prompts": {"corpus": "random"}, "format": "mooncake_trace"},
            f"{D}: prompts.corpus random does not work with format mooncake_trace: its loader builds prompts from "
            "a text corpus (use sonnet or coding)",
        ),
        ({**FILE, "prompts": {"isl": 5}}, f"{D}.prompts: unknown key 'isl'; allowed: corpus"),
        ({**PUBLIC, "osl": {"mean": -1}}, f"{D}.osl.mean: must be >= 0, got -1"),
        # Inline records: their shape only.
        (
            {"type": "file", "records": [1]},
            f"{D}.records: record 0 must be a mapping with string keys, got 1",
        ),
        (
            {"type": "file", "records": {"p": {"text": "hi"}}, "format": "random_pool"},
            f"{D}.records: pool 'p': must be a list of records, got a mapping of 1 key (text: 'hi')",
        ),
        (
            {"type": "file", "records": "a.jsonl"},
            f"{D}.records: must be a list of records or a mapping of pools (lists of records), got 'a.jsonl'",
        ),
        # The variant's tag is exact, as the release's union matches it.
        (
            {"type": "Synthetic"},
            f"{D}.type must be one of synthetic, file, public (AIPerf 0.13.0's dataset types), got 'Synthetic'",
        ),
    ],
)
def test_refused_nested_values_name_the_key(dataset: dict[str, Any], expected: str) -> None:
    assert problems(spec(dataset)) == {W: expected}


CHAT_ONLY = "(chat, responses, messages)"
SYSTEM_ROLE = "(chat, chat_embeddings, messages, responses)"


@pytest.mark.parametrize(
    ("dataset", "benchmark", "expected"),
    [
        (
            {**PUBLIC, "cacheBust": {"target": "system_prefix"}},
            {"endpoint": {"urls": ["http://llm:8000"], "type": "completions"}},
            f"cacheBust target system_prefix needs an endpoint type that supports it {CHAT_ONLY}, got completions",
        ),
        (
            {**SYN, "isl": 8, "prompts": {"cacheBust": {"target": "first_turn_suffix"}}},
            {"endpoint": {"urls": ["http://llm:8000"], "type": "embeddings"}},
            f"cacheBust target first_turn_suffix needs an endpoint type that supports it {CHAT_ONLY}, got embeddings",
        ),
        (
            {**SYN, "systemPrompt": "hi"},
            {"endpoint": {"urls": ["http://llm:8000"], "type": "completions"}},
            f"systemPrompt/systemPromptFile needs an endpoint type with a system role {SYSTEM_ROLE}, got completions",
        ),
        (
            {**SYN, "systemPromptFile": "/p.txt", "prefixPrompts": {"sharedSystemLength": 3}},
            {},
            "systemPrompt/systemPromptFile and prefixPrompts.sharedSystemLength are mutually exclusive: both fill "
            "the system message",
        ),
        (
            {**SYN, "system_prompt": "hi", "prefix_prompts": {"pool_size": 3}},
            {},
            "systemPrompt/systemPromptFile and prefixPrompts.poolSize/length are mutually exclusive: both fill the "
            "system message",
        ),
        (
            {**SYN, "prompts": {"cacheBust": {"target": "warmup_isolation_system"}}},
            {},
            "cacheBust target warmup_isolation_system needs a system message on a synthetic dataset: set "
            "prefixPrompts.sharedSystemLength or systemPrompt (or use warmup_isolation_first_turn)",
        ),
        (
            {**FILE, "cacheBust": {"target": "Warmup-Isolation-First-Turn"}},
            {
                "phases": [
                    {
                        "name": "profiling",
                        "type": "concurrency",
                        "concurrency": 8,
                        "requests": 10,
                        "timingMode": "agentic_replay",
                    }
                ]
            },
            "cacheBust target warmup_isolation_first_turn does not work with the agentic_replay timing mode",
        ),
        (
            {**FILE, "sampling": "shuffle"},
            {
                "phases": [
                    {"name": "warmup", "type": "fixed_schedule"},
                    {"name": "profiling", "type": "concurrency", "requests": 5},
                ]
            },
            "a fixed_schedule phase needs the file dataset's sampling sequential, got shuffle",
        ),
        (
            {**FILE, "format": "mooncake_trace"},
            {"phases": [{"name": "profiling", "type": "user_centric", "rate": 1, "users": 2, "requests": 10}]},
            "a user_centric phase needs the file dataset's format multi_turn, got mooncake_trace",
        ),
    ],
)
def test_benchmark_rules_on_the_dataset(dataset: dict[str, Any], benchmark: dict[str, Any], expected: str) -> None:
    assert problems(spec(dataset, **benchmark)) == {W: expected}


def test_phase_rules_apply_to_file_datasets_only() -> None:
    user_centric = [{"name": "profiling", "type": "user_centric", "rate": 1, "users": 2, "requests": 10}]
    assert problems(spec({**SYN, "sampling": "random"}, phases=user_centric)) == {}
    assert problems(spec({**FILE, "format": "Multi-Turn"}, phases=user_centric)) == {}


def test_the_shorthand_dataset_is_checked_alike() -> None:
    data = with_benchmark(dataset={"isl": {"mean": -3}})
    assert problems(data) == {W: "dataset.isl.mean: must be >= 0, got -3"}
