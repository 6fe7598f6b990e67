"""A dataset's own values (``benchmark.datasets[0]``), accepted and refused exactly as AIPerf 0.13.0 does.

Hypothesis draws synthetic, file and public datasets mixing valid and invalid scalar values and
the combinations the release's cross-field rules refuse; the program's spec model must accept
exactly the specs the release's own spec validation (``validate_job_spec``, via :mod:`oracle`)
accepts.

Not drawn, on purpose: ``null``, values the release's lax parsing converts (``"5"`` or ``true``
for a count, ``1`` for a bool: the program is strict), nested
objects (``prompts``, ``images``, ...: kept as given) and ``systemPromptFile`` (read from the
operator's file system by the release).
"""

from __future__ import annotations

import copy
import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiperf_kueue.config import aiperf_dataset
from aiperf_kueue.config.aiperf_benchmark import _DATASET_KEYS
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
COMMON = {
    "entries": COUNT,
    "randomSeed": st.sampled_from([0, 42, -5, 2.5, "x"]),
    "sampling": st.sampled_from(["random", "sequential", "shuffle", "SHUFFLE", "other", 1]),
    "systemPrompt": st.sampled_from(["be brief", "", " ", 1]),
    "bogus": st.just(1),
}
REPLAY = {
    "interTurnDelayCapSeconds": NUMBER,
    "traceIdleGapCapSeconds": NUMBER,
    "ignoreTraceDelays": BOOL,
    "useThinkTimeOnly": BOOL,
    "maxContextLength": COUNT,
}
SYNTHETIC = st.fixed_dictionaries(
    {"name": st.just("main"), "type": st.just("synthetic")}, optional={**COMMON, "turnDelayRatio": NUMBER}
)
FILE = st.fixed_dictionaries(
    {"name": st.just("main"), "type": st.just("file")},
    optional={
        **COMMON,
        **REPLAY,
        "path": st.sampled_from(["/data/t.jsonl", 1]),
        "records": st.sampled_from([[{"text": "hi"}], [], {"p": [{"text": "hi"}]}, {"p": []}, {}, "x"]),
        "format": st.sampled_from(["single_turn", "random_pool", "mooncake_trace", "weka_trace", "Multi_Turn", "x"]),
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
        "dataset": st.sampled_from(["sharegpt", "ShareGPT", "weka_hf", "semianalysis_cc_traces_weka", "x", 1]),
        "hfSubset": st.sampled_from(["s", 1]),
        "filters": st.sampled_from([{"k": "v"}, {"k": 1}, [], "x"]),
        "hfWekaDataset": st.sampled_from(["org/repo", " ", 1]),
    },
)


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    spec = copy.deepcopy(BASE)
    drawn = draw(st.one_of(SYNTHETIC, FILE, PUBLIC))
    # Few keys at a time, so that a fair share of the datasets is valid.
    dataset = {k: v for k, v in drawn.items() if k in ("name", "type") or not draw(st.integers(0, 2))}
    if "bogus" in dataset and draw(st.integers(0, 3)):
        del dataset["bogus"]
    if dataset["type"] == "file" and "path" not in dataset and "records" not in dataset and draw(st.booleans()):
        dataset["path"] = "/data/t.jsonl"
    if dataset["type"] == "public" and "dataset" not in dataset and draw(st.integers(0, 4)):
        dataset["dataset"] = "sharegpt"
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
]


def test_the_drawn_specs_reach_both_outcomes(oracle: Oracle) -> None:
    """Hand-picked datasets: accepted and refused by both (so the parity above is not vacuous)."""
    for dataset, accepted in [*((d, True) for d in GOOD), *((d, False) for d in BAD)]:
        spec = copy.deepcopy(BASE)
        spec["benchmark"]["datasets"] = [dataset]
        assert (accepted_here(spec), oracle.validate(spec)["accepted"]) == (accepted, accepted), dataset


def test_the_dataset_models_take_the_checked_keys_and_the_releases_enums(oracle: Oracle) -> None:
    """Every key the key check lets through is typed (or kept as given) by a variant model, and
    the enums are the release's values (``type`` is the discriminator)."""
    for tag, model in aiperf_dataset.VARIANTS.items():
        assert {f.alias or n for n, f in model.model_fields.items()} == _DATASET_KEYS[tag], tag
    enums = oracle.ask({}, {"fields": True})["enums"]
    assert {path: sorted(values) for path, values in enums.items() if path.startswith("benchmark.datasets[")} == {
        **{f"benchmark.datasets[{t}].sampling": sorted(aiperf_dataset.SAMPLING) for t in aiperf_dataset.VARIANTS},
        **{f"benchmark.datasets[{t}].type": [t] for t in aiperf_dataset.VARIANTS},
        "benchmark.datasets[file].format": sorted(aiperf_dataset.FORMATS),
        "benchmark.datasets[public].dataset": sorted(aiperf_dataset.PUBLIC_DATASETS),
    }
