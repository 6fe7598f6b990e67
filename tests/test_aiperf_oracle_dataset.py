"""A dataset's own values (``benchmark.datasets[0]``), accepted and refused exactly as AIPerf 0.13.0 does.

Hypothesis draws synthetic, file and public datasets mixing valid and invalid scalar values,
nested objects (distributions, ``prompts``, ``prefixPrompts``, ``images``, ``audio``, ``video``,
``rankings``, ``synthesis``, ``cacheBust``, inline ``records``) and the combinations the release's
cross-field rules refuse, on a chat or a completions endpoint (cache-bust and the system prompt
depend on it); the program's spec model must accept exactly the specs the release's own spec
validation (``validate_job_spec``, via :mod:`oracle`) accepts.

Not drawn, on purpose, where the program is deliberately stricter: ``null``, values the
release's lax parsing converts (``"5"`` or ``true`` for a count or a distribution, ``1`` for a
bool, ``16.0`` for a bit depth, a range ratio written as text), a non-string distribution
``type`` (the release ignores it), ``.inf`` in a distribution, ``isl`` (``osl``) together with
``prompts.isl`` (``prompts.osl``: the release merges or drops the shorthand), ``islStddev`` in
camelCase with a negative ``isl``, and ``systemPromptFile`` (read from the operator's file
system by the release).
"""

from __future__ import annotations

import copy
import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from pydantic.alias_generators import to_camel

from aiperf_kueue.config import aiperf_content as content
from aiperf_kueue.config import aiperf_dataset
from aiperf_kueue.config.aiperf_dataset import DATASET_KEYS
from tests.oracle import (
    Oracle,
    accepted_here,
    oracle_fixture,  # noqa: F401 (the session fixture `oracle`)
)

EXAMPLES = int(os.environ.get("AIPERF_ORACLE_EXAMPLES", "25")) * 4

BASE: dict[str, Any] = {
    "image": "nvcr.io/nvidia/aiperf:0.13.0",
    "scheduling": {"queueName": "aiperf-queue"},
    "benchmark": {
        "models": ["m"],
        "endpoint": {"urls": ["http://llm.serving:8000"], "type": "chat"},
        "datasets": [{"name": "main", "type": "synthetic"}],
        "phases": [{"name": "profiling", "type": "concurrency", "concurrency": 8, "requests": 10}],
    },
}

BOOL = st.sampled_from([True, False, "x"])
COUNT = st.sampled_from([0, 1, 5, -1, 2.5, "x"])
NUMBER = st.sampled_from([0, 0.5, 1, 2, -1, "x"])
DIST = st.sampled_from(
    [
        5, 1, 0, -1, 2.5, [1], "x",
        {"mean": 5}, {"mean": 5, "stddev": 1}, {"mean": -1}, {"mean": 5, "stddev": -1},
        {"mean": 5, "median": 4}, {"mean": 4, "median": 5}, {"mean": 0, "median": 0},
        {"value": 3, "min": 1, "max": 4}, {"value": 2, "min": 3, "max": 1},
        {"peaks": [{"mean": 1}, {"value": 2, "weight": 3}]}, {"peaks": [{"mean": 1}]},
        {"peaks": [{"distribution": 4, "weight": 0}, {"mean": 2, "weight": 0}]},
        {"points": [{"value": 1, "weight": 2}]}, {"points": []}, {"points": [{"value": 1, "weight": 0}]},
        {"type": "normal", "mean": 2}, {"type": "fixed", "mean": 2}, {"type": "gauss", "value": 1}, {"foo": 1},
        {"mean": 1, "bogus": 2},
    ]
)  # fmt: skip
CACHE_BUST = st.sampled_from(
    [{"target": "none"}, {"target": "System-Prefix"}, {"target": "warmup_isolation_system"},
     {"target": "warmup_isolation_first_turn"}, {"target": "x"}, {}, {"bogus": 1}, "x"]
)  # fmt: skip
PROMPTS = st.fixed_dictionaries(
    {},
    optional={
        "isl": DIST,
        "osl": DIST,
        "batchSize": COUNT,
        "block_size": COUNT,
        "corpus": st.sampled_from(["sonnet", "Coding", "random", "x"]),
        "cacheBust": CACHE_BUST,
        "sequenceDistribution": st.sampled_from(
            [
                [{"isl": 5, "osl": 6, "probability": 100}],
                [{"isl": 5, "osl": 6, "probability": 50}],
                [],
                [{"isl": 5, "isl_stddev": 1, "osl": 6, "probability": 99.5}],
                [{"isl": 5, "osl": 6, "probability": 101}],
            ]
        ),
        "randomRangeRatio": st.sampled_from([0.5, 0, 1, 1.5, {"input": 0.1, "output": 0.2}, {"input": 0.1}]),
        "randomCorpusStyle": st.sampled_from(["vllm", "SGLang", "x"]),
        "bogus": st.just(1),
    },
)
PREFIX = st.fixed_dictionaries(
    {}, optional={"poolSize": COUNT, "length": COUNT, "sharedSystemLength": COUNT, "user_context_length": COUNT}
)
IMAGES = st.fixed_dictionaries(
    {},
    optional={
        "batchSize": COUNT,
        "width": DIST,
        "height": DIST,
        "format": st.sampled_from(["png", "JPEG", "random", "gif", 1]),
        "source": st.sampled_from(["noise", "assets", "/imgs", "Noise", 1]),
        "sourceSampling": st.sampled_from(["random-with-replacement", "shuffle_cycle", "Sequential-Cycle", "x"]),
        "bogus": st.just(1),
    },
)
AUDIO = st.fixed_dictionaries(
    {},
    optional={
        "batchSize": COUNT,
        "length": DIST,
        "format": st.sampled_from(["wav", "MP3", "ogg"]),
        "sampleRates": st.sampled_from([[16, 44.1], [], "x"]),
        "depths": st.sampled_from([[16, 24], [16.5], "x"]),
        "channels": st.sampled_from([1, 2, 0, 3, "x"]),
    },
)
VIDEO = st.fixed_dictionaries(
    {},
    optional={
        "batchSize": COUNT,
        "duration": NUMBER,
        "fps": COUNT,
        "width": COUNT,
        "format": st.sampled_from(["mp4", "WEBM", "avi"]),
        "codec": st.sampled_from(["libvpx", 1]),
        "synthType": st.sampled_from(["moving_shapes", "Grid-Clock", "x"]),
        "audio": st.fixed_dictionaries(
            {},
            optional={
                "sampleRate": st.sampled_from([44.1, 8, 7, 97, "x"]),
                "channels": st.sampled_from([0, 1, 2, 3]),
                "codec": st.sampled_from(["aac", "LibOpus", "mp3"]),
                "depth": st.sampled_from([8, 16, 12, "x"]),
            },
        ),
        "bogus": st.just(1),
    },
)
RANKINGS = st.fixed_dictionaries(
    {}, optional={"passages": DIST, "passageTokens": DIST, "query_tokens": DIST, "bogus": st.just(1)}
)
SYNTHESIS = st.fixed_dictionaries(
    {},
    optional={
        "speedupRatio": NUMBER,
        "prefixLenMultiplier": NUMBER,
        "prefixRootMultiplier": COUNT,
        "prompt_len_multiplier": NUMBER,
        "outputLenMultiplier": NUMBER,
        "maxIsl": COUNT,
        "maxOsl": COUNT,
        "allowDatasetWrap": BOOL,
        "bogus": st.just(1),
    },
)
SELECTION = st.one_of(
    st.fixed_dictionaries({}, optional={"corpus": st.sampled_from(["sonnet", "Coding", "random", "x"])}),
    st.sampled_from([{"isl": 5}, "x"]),
)
COMMON = {
    "entries": COUNT,
    "randomSeed": st.sampled_from([0, 42, -5, 2.5, "x"]),
    "sampling": st.sampled_from(["random", "sequential", "shuffle", "SHUFFLE", "other", 1]),
    "systemPrompt": st.sampled_from(["be brief", "", " ", 1]),
    "osl": DIST,
    "bogus": st.just(1),
}
REPLAY = {
    "interTurnDelayCapSeconds": NUMBER,
    "traceIdleGapCapSeconds": NUMBER,
    "ignoreTraceDelays": BOOL,
    "useThinkTimeOnly": BOOL,
    "maxContextLength": COUNT,
    "prompts": SELECTION,
    "synthesis": SYNTHESIS,
    "cacheBust": CACHE_BUST,
}
SYNTHETIC = st.fixed_dictionaries(
    {"name": st.just("main"), "type": st.just("synthetic")},
    optional={
        **COMMON,
        "turnDelayRatio": NUMBER,
        "isl": DIST,
        "prompts": PROMPTS,
        "prefixPrompts": PREFIX,
        "turns": DIST,
        "turnDelay": DIST,
        "images": IMAGES,
        "audio": AUDIO,
        "video": VIDEO,
        "rankings": RANKINGS,
    },
)
FILE = st.fixed_dictionaries(
    {"name": st.just("main"), "type": st.just("file")},
    optional={
        **COMMON,
        **REPLAY,
        "path": st.sampled_from(["/data/t.jsonl", 1]),
        "records": st.sampled_from(
            [[{"text": "hi"}], [], {"p": [{"text": "hi"}]}, {"p": []}, {}, "x", [1], {"p": [1]}, {"p": {"text": "hi"}}]
        ),
        "format": st.sampled_from(["single_turn", "random_pool", "mooncake_trace", "weka_trace", "Multi-Turn", "x"]),
        "traceSessionSampleRatio": NUMBER,
        "maxIdleGapCapSeconds": NUMBER,
        "replaySpeedup": NUMBER,
        "openLoopReplay": BOOL,
        "openLoopStrict": BOOL,
        "omitKvHints": BOOL,
        "forceMinTokens": BOOL,
        "promptBatchSize": COUNT,
        "imageBatchSize": COUNT,
        "blockSize": COUNT,
    },
)
PUBLIC = st.fixed_dictionaries(
    {"name": st.just("main"), "type": st.just("public")},
    optional={
        **COMMON,
        **REPLAY,
        "dataset": st.sampled_from(["sharegpt", "ShareGPT", "weka-hf", "semianalysis_cc_traces_weka", "x", 1]),
        "hfSubset": st.sampled_from(["s", 1]),
        "filters": st.sampled_from([{"k": "v"}, {"k": 1}, [], "x"]),
        "hfWekaDataset": st.sampled_from(["org/repo", " ", 1]),
    },
)


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    spec = copy.deepcopy(BASE)
    drawn = copy.deepcopy(draw(st.one_of(SYNTHETIC, FILE, PUBLIC)))
    # Few keys at a time, so that a fair share of the datasets is valid.
    dataset = {k: v for k, v in drawn.items() if k in ("name", "type") or not draw(st.integers(0, 2))}
    if "bogus" in dataset and draw(st.integers(0, 3)):
        del dataset["bogus"]
    if dataset["type"] == "file" and "path" not in dataset and "records" not in dataset and draw(st.booleans()):
        dataset["path"] = "/data/t.jsonl"
    if dataset["type"] == "public" and "dataset" not in dataset and draw(st.integers(0, 4)):
        dataset["dataset"] = "sharegpt"
    prompts = dataset.get("prompts")
    if dataset["type"] == "synthetic" and isinstance(prompts, dict):
        # Not both isl and prompts.isl: the program refuses what the release merges.
        for key in ("isl", "osl"):
            if key in dataset:
                prompts.pop(key, None)
    if not draw(st.integers(0, 3)):
        spec["benchmark"]["endpoint"]["type"] = "completions"
    spec["benchmark"]["datasets"] = [dataset]
    return spec


@settings(
    max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
@given(spec=specs())
def test_a_dataset_is_accepted_exactly_when_the_release_accepts_it(spec: dict[str, Any], oracle: Oracle) -> None:
    release = oracle.validate(copy.deepcopy(spec))
    assert accepted_here(spec) is release["accepted"], (spec, release["error"])


GOOD = [
    {"name": "main", "type": "synthetic", "entries": 5, "sampling": "SHUFFLE", "turnDelayRatio": 0},
    {"name": "main", "type": "file", "records": {"p": [{"text": "hi"}]}, "format": "random_pool", "promptBatchSize": 0},
    {"name": "main", "type": "public", "dataset": "weka_hf", "hfWekaDataset": "org/repo", "maxContextLength": 8},
    {
        "name": "main",
        "isl": {"peaks": [{"mean": 128, "stddev": 20, "weight": 60}, {"mean": 2048, "median": 1800}]},
        "osl": {"points": [{"value": 64, "weight": 3}, {"value": 128}]},
        "turns": {"mean": 2, "stddev": 1},
        "prompts": {"randomRangeRatio": {"input": 0.2, "output": 0.5}, "cacheBust": {"target": "first-turn-prefix"}},
        "prefixPrompts": {"sharedSystemLength": 50},
        "images": {"batchSize": 1, "width": 256, "source": "assets", "sourceSampling": "Shuffle-Cycle"},
        "audio": {"batch_size": 1, "length": {"mean": 5, "median": 4}, "format": "MP3", "depths": [16, 24]},
        "video": {"batchSize": 1, "synthType": "grid-clock", "audio": {"channels": 2, "codec": "libopus", "depth": 8}},
        "rankings": {"passages": 5, "queryTokens": {"value": 3, "min": 1}},
    },
    {
        "name": "main",
        "type": "file",
        "records": [{"text": "hi"}],
        "format": "mooncake_trace",
        "prompts": {"corpus": "coding"},
        "synthesis": {"speedupRatio": 2, "max_isl": 100},
        "cacheBust": {"target": "system_suffix"},
    },
]
BAD = [
    {"name": "main", "type": "synthetic", "entries": 0},
    {"name": "main", "type": "synthetic", "systemPrompt": " "},
    {"name": "main", "type": "file"},
    {"name": "main", "type": "file", "path": "/d", "promptBatchSize": 1},
    {"name": "main", "type": "file", "path": "/d", "openLoopStrict": True, "openLoopReplay": False},
    {"name": "main", "type": "file", "path": "/d", "ignoreTraceDelays": True, "useThinkTimeOnly": True},
    {"name": "main", "type": "public", "dataset": "sharegpt", "maxContextLength": 8},
    {"name": "main", "type": "public", "dataset": "sharegpt", "hfWekaDataset": "org/repo"},
    {"name": "main", "type": "Synthetic"},
    {"name": "main", "isl": {"mean": 4, "median": 5}},
    {"name": "main", "turns": {"peaks": [{"mean": 2, "weight": 0}, {"value": 3, "weight": 0}]}},
    {"name": "main", "prompts": {"isl": 100, "osl": 10, "randomRangeRatio": 1}},
    {"name": "main", "systemPrompt": "hi", "prefixPrompts": {"poolSize": 2}},
    {"name": "main", "prompts": {"cacheBust": {"target": "warmup_isolation_system"}}},
    {"name": "main", "images": {"sourceSampling": "shuffle-cycle"}},
    {"name": "main", "video": {"audio": {"codec": "aac"}}},
    {"name": "main", "type": "file", "path": "/d", "format": "weka_trace", "prompts": {"corpus": "Random"}},
    {"name": "main", "type": "file", "records": {"p": [{"text": "hi"}, 2]}, "format": "random_pool"},
    {"name": "main", "type": "public", "dataset": "sharegpt", "synthesis": {"outputLenMultiplier": -1}},
]
#: Benchmark-level rules on the dataset: (dataset, endpoint type, timing mode of the profiling phase).
BAD_BENCHMARKS = [
    ({"name": "main", "type": "file", "path": "/d", "cacheBust": {"target": "system_prefix"}}, "completions", None),
    ({"name": "main", "systemPrompt": "hi"}, "completions", None),
    ({"name": "main", "prompts": {"cacheBust": {"target": "warmup_isolation_first_turn"}}}, "chat", "agentic_replay"),
]


def test_the_drawn_specs_reach_both_outcomes(oracle: Oracle) -> None:
    """Hand-picked datasets: accepted and refused by both (so the parity above is not vacuous)."""
    for dataset, accepted in [*((d, True) for d in GOOD), *((d, False) for d in BAD)]:
        spec = copy.deepcopy(BASE)
        spec["benchmark"]["datasets"] = [dataset]
        assert (accepted_here(spec), oracle.validate(spec)["accepted"]) == (accepted, accepted), dataset
    for dataset, endpoint, timing_mode in BAD_BENCHMARKS:
        spec = copy.deepcopy(BASE)
        spec["benchmark"]["datasets"] = [dataset]
        spec["benchmark"]["endpoint"]["type"] = endpoint
        if timing_mode is not None:
            spec["benchmark"]["phases"][0]["timingMode"] = timing_mode
        assert (accepted_here(spec), oracle.validate(spec)["accepted"]) == (False, False), dataset
        # The same dataset on a chat endpoint without the timing mode is accepted by both.
        spec["benchmark"]["endpoint"]["type"] = "chat"
        spec["benchmark"]["phases"][0].pop("timingMode", None)
        assert (accepted_here(spec), oracle.validate(spec)["accepted"]) == (True, True), dataset
    # A file dataset's sampling and format against the phase types, on either side of the rule.
    fixed = [{"name": "profiling", "type": "fixed_schedule"}]
    user_centric = [{"name": "profiling", "type": "user_centric", "rate": 1, "users": 2, "requests": 10}]
    for extra, phase_list, accepted in [
        ({"sampling": "random"}, fixed, False),
        ({}, fixed, True),
        ({"format": "mooncake_trace"}, user_centric, False),
        ({"format": "Multi_Turn"}, user_centric, True),
    ]:
        spec = copy.deepcopy(BASE)
        spec["benchmark"]["datasets"] = [{"name": "main", "type": "file", "path": "/d", **extra}]
        spec["benchmark"]["phases"] = phase_list
        assert (accepted_here(spec), oracle.validate(spec)["accepted"]) == (accepted, accepted), (extra, phase_list)


def test_the_dataset_models_take_the_checked_keys_and_the_releases_enums(oracle: Oracle) -> None:
    """Every key the key check lets through is typed by a variant model, and
    the enums are the release's values (``type`` is the discriminator)."""
    for tag, model in aiperf_dataset.VARIANTS.items():
        assert {f.alias or n for n, f in model.model_fields.items()} == DATASET_KEYS[tag], tag
    enums = oracle.ask({}, {"fields": True})["enums"]
    assert {path: sorted(values) for path, values in enums.items() if path.startswith("benchmark.datasets[")} == {
        **{f"benchmark.datasets[{t}].sampling": sorted(aiperf_dataset.SAMPLING) for t in aiperf_dataset.VARIANTS},
        **{f"benchmark.datasets[{t}].type": [t] for t in aiperf_dataset.VARIANTS},
        "benchmark.datasets[file].format": sorted(aiperf_dataset.FORMATS),
        "benchmark.datasets[public].dataset": sorted(aiperf_dataset.PUBLIC_DATASETS),
    }


#: The nested objects, by the key the release's CRD schema lists them under.
NESTED: dict[str, type[BaseModel]] = {
    "audio": content.Audio,
    "cacheBust": content.CacheBust,
    "images": content.Images,
    "prefixPrompts": content.PrefixPrompts,
    "prompts": content.Prompts,
    "rankings": content.Rankings,
    "synthesis": content.Synthesis,
    "video": content.Video,
}
DISTRIBUTIONS = (
    content.FixedDistribution,
    content.NormalDistribution,
    content.LogNormalDistribution,
    content.MultimodalDistribution,
    content.EmpiricalDistribution,
)


def test_the_nested_models_take_the_releases_keys_and_enums(oracle: Oracle) -> None:
    """Each nested object takes the release's keys (a distribution: the keys of its kinds), and
    its enums are the release's values."""
    fields = oracle.ask({}, {"fields": True})
    keys = {path: set(found) for path, found in fields["keys"].items()}
    for name, model in NESTED.items():
        assert {to_camel(n) for n in model.model_fields} == keys[f"benchmark.datasets.{name}"], name
    distribution = {n for kind in DISTRIBUTIONS for n in kind.model_fields}
    for name in ("osl", "turns", "turnDelay"):
        assert distribution == keys[f"benchmark.datasets.{name}"], name
    assert {
        p: sorted(v) for p, v in fields["enums"].items() if p.startswith("benchmark.datasets.") and p.count(".") == 3
    } == {
        "benchmark.datasets.audio.format": sorted(content.AUDIO_FORMATS),
        "benchmark.datasets.cacheBust.target": sorted(content.CACHE_BUST_TARGETS),
        "benchmark.datasets.images.format": sorted(content.IMAGE_FORMATS),
        # Any other string is a directory of source images: the program takes any string.
        "benchmark.datasets.images.source": ["assets", "noise"],
        "benchmark.datasets.images.sourceSampling": sorted(content.IMAGE_SOURCE_SAMPLING),
        "benchmark.datasets.prompts.corpus": sorted(content.PROMPT_CORPORA),
        "benchmark.datasets.prompts.randomCorpusStyle": sorted(content.RANDOM_CORPUS_STYLES),
        "benchmark.datasets.video.format": sorted(content.VIDEO_FORMATS),
        "benchmark.datasets.video.synthType": sorted(content.VIDEO_SYNTH_TYPES),
    }
