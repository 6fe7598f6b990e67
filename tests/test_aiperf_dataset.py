"""A dataset's own values: what AIPerf 0.13.0 takes, and the one line for each refusal."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from aiperf_kueue.config.aiperf_spec import AIPerfJobSpec
from tests.aiperf_spec import with_benchmark


def spec(dataset: dict[str, Any]) -> dict[str, Any]:
    return with_benchmark(datasets=[{"name": "main", **dataset}])


def refusal(dataset: dict[str, Any]) -> str | None:
    try:
        AIPerfJobSpec.model_validate(spec(dataset))
    except ValidationError as exc:
        (err,) = exc.errors()
        return str(err["ctx"]["error"])
    return None


@pytest.mark.parametrize(
    "dataset",
    [
        {"type": "synthetic", "entries": 1, "randomSeed": -5, "sampling": "Shuffle", "turnDelayRatio": 0},
        {"type": "synthetic", "random_seed": 7, "isl": {"mean": 512}, "prompts": {"batch_size": 2, "corpus": "Coding"}},
        {"type": "file", "path": "/data/trace.jsonl", "format": "mooncake_trace", "replaySpeedup": 2.5},
        {"type": "file", "records": [{"text": "hi"}], "openLoopStrict": True, "traceSessionSampleRatio": 1},
        {"type": "file", "records": {"a": [{"text": "hi"}]}, "format": "random_pool", "imageBatchSize": 0},
        {"type": "file", "path": "/d", "maxContextLength": 4096},
        {"type": "public", "dataset": "ShareGPT", "filters": {"lang": "en"}, "hfSubset": "s"},
        {"type": "public", "dataset": "Vision-Arena"},
        {"type": "file", "records": {"a": [{"text": "hi"}]}, "format": "Random-Pool"},
        {"type": "public", "dataset": "weka_hf", "hfWekaDataset": "org/repo", "maxContextLength": 8},
        {"type": "public", "dataset": "semianalysis_cc_traces_weka_061526_256k", "maxContextLength": 8},
    ],
)
def test_accepted_datasets_are_kept_as_given(dataset: dict[str, Any]) -> None:
    data = spec(dataset)
    assert AIPerfJobSpec.model_validate(copy.deepcopy(data)).manifest() == data


W = "datasets[0]"


@pytest.mark.parametrize(
    ("dataset", "expected"),
    [
        ({"type": "synthetic", "entries": 0}, f"{W}.entries: must be >= 1, got 0"),
        ({"type": "synthetic", "entries": "5"}, f"{W}.entries: must be a whole number, got '5'"),
        (
            {"type": "synthetic", "sampling": "rand"},
            f"{W}.sampling: must be one of random, sequential, shuffle (AIPerf 0.13.0), got 'rand'",
        ),
        ({"type": "synthetic", "turnDelayRatio": -0.5}, f"{W}.turnDelayRatio: must be >= 0, got -0.5"),
        ({"type": "synthetic", "systemPrompt": "  "}, f"{W}: systemPrompt is blank: omit it for no system prompt"),
        (
            {"type": "synthetic", "systemPrompt": "a", "systemPromptFile": "/p"},
            f"{W}: set systemPrompt or systemPromptFile, not both",
        ),
        ({"type": "file"}, f"{W}: a file dataset needs exactly one of path (a file) and records (inline)"),
        (
            {"type": "file", "path": "/d", "records": [{}]},
            f"{W}: a file dataset needs exactly one of path (a file) and records (inline)",
        ),
        ({"type": "file", "records": []}, f"{W}: records: needs at least one record"),
        (
            {"type": "file", "records": {"a": []}, "format": "random_pool"},
            f"{W}: records: pool 'a' is empty; every pool needs a record",
        ),
        (
            {"type": "file", "records": {"a": [{}]}},
            f"{W}: records as a mapping of pools is only for format random_pool, got format single_turn",
        ),
        (
            {"type": "file", "path": "/d", "format": "csv"},
            f"{W}.format: must be one of 45 names, e.g. mooncake_trace (AIPerf 0.13.0), got 'csv'",
        ),
        (
            {"type": "file", "path": "/d", "promptBatchSize": 2, "blockSize": 4},
            f"{W}: promptBatchSize: only for format random_pool, got format single_turn",
        ),
        (
            {"type": "file", "path": "/d", "format": "mooncake_trace", "maxContextLength": 8},
            f"{W}: maxContextLength only applies to format weka_trace, got format mooncake_trace",
        ),
        (
            {"type": "file", "path": "/d", "openLoopStrict": True, "openLoopReplay": False},
            f"{W}: openLoopStrict requires open-loop replay: remove openLoopReplay: false",
        ),
        (
            {"type": "file", "path": "/d", "ignoreTraceDelays": True, "useThinkTimeOnly": True},
            f"{W}: ignoreTraceDelays and useThinkTimeOnly are mutually exclusive (each sets turn delays)",
        ),
        (
            {"type": "file", "path": "/d", "traceSessionSampleRatio": 1.5},
            f"{W}.traceSessionSampleRatio: must be <= 1, got 1.5",
        ),
        ({"type": "file", "path": "/d", "replaySpeedup": 0}, f"{W}.replaySpeedup: must be > 0, got 0"),
        ({"type": "file", "path": "/d", "omitKvHints": "yes"}, f"{W}.omitKvHints: must be true or false, got 'yes'"),
        ({"type": "public"}, f"{W}.dataset: required, but not set"),
        (
            {"type": "public", "dataset": "alpaca"},
            f"{W}.dataset: must be one of 42 names, e.g. sharegpt (AIPerf 0.13.0), got 'alpaca'",
        ),
        (
            {"type": "public", "dataset": "sharegpt", "filters": {"lang": 1}},
            f"{W}.filters.lang: must be a string, got 1",
        ),
        (
            {"type": "public", "dataset": "sharegpt", "maxContextLength": 8},
            f"{W}: maxContextLength only applies to the Weka public datasets, got dataset sharegpt",
        ),
        (
            {"type": "public", "dataset": "sharegpt", "hfWekaDataset": "o/r"},
            f"{W}: hfWekaDataset is only for dataset weka_hf, got dataset sharegpt",
        ),
        (
            {"type": "public", "dataset": "weka_hf", "hfWekaDataset": " "},
            f"{W}: dataset weka_hf needs a non-empty hfWekaDataset (a HuggingFace repo)",
        ),
    ],
)
def test_refused_datasets_name_the_key(dataset: dict[str, Any], expected: str) -> None:
    assert refusal(dataset) == expected
