"""``benchmark.tokenizer``, ``networkLatency``, ``otel``, ``mlflow`` and ``wandb``: the values
AIPerf 0.13.0 takes and refuses, with the one line the loader prints for each refusal."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from aiperf_kueue.config.aiperf_spec import AIPerfJobSpec
from tests.aiperf_spec import DATASET, problems, with_benchmark


def spec(**sections: Any) -> dict[str, Any]:
    return with_benchmark(datasets=[DATASET], **sections)


YAML12 = " (YAML 1.2, which Pulumi reads, has only true and false)"
QUOTED = ", text because of its quotes"
NO_PROJECT = " a non-blank project: without one nothing is uploaded to Weights & Biases"

ACCEPTED = [
    {"tokenizer": {"name": "builtin", "revision": "v1", "trustRemoteCode": True, "applyChatTemplate": False}},
    {"tokenizer": {"resolvedNames": {"m": "org/tok"}}},
    {"networkLatency": {"enabled": True, "pingInterval": 0.5, "meanMs": 0}},
    {"networkLatency": {"pingInterval": 2, "meanMs": 1.5}},
    {
        "otel": {
            "metricsUrl": "http://otel:4318/v1/metrics",
            "streamMetricsEnabled": False,
            "streamTimingEnabled": True,
            "customResourceAttributes": {"team": "perf"},
            "genAiProvider": "vllm",
        }
    },
    {
        "mlflow": {
            "trackingUri": "http://mlflow:5000",
            "experiment": "e",
            "runName": "r",
            "tags": {"k": "v"},
            "parentRunId": "p",
            "artifactGlobs": ["*.json"],
        }
    },
    {"wandb": {"project": "p", "entity": "team", "runName": "r", "tags": ["a", "b"]}},
    # Blank secondary values are unset to the release, so they need no project.
    {"wandb": {"project": " ", "entity": "  ", "tags": [" "]}},
]


@pytest.mark.parametrize("sections", ACCEPTED)
def test_accepted_values_are_kept_as_given(sections: dict[str, Any]) -> None:
    data = spec(**sections)
    assert AIPerfJobSpec.model_validate(copy.deepcopy(data)).manifest() == data


@pytest.mark.parametrize(
    ("sections", "expected"),
    [
        (
            {"tokenizer": {"trustRemoteCode": "yes"}},
            {"benchmark.tokenizer.trustRemoteCode": "must be true or false, got 'yes'" + YAML12},
        ),
        ({"tokenizer": {"name": 5}}, {"benchmark.tokenizer.name": "must be a string, got 5"}),
        (
            {"tokenizer": {"resolvedNames": {"m": 1}}},
            {"benchmark.tokenizer.resolvedNames.m": "must be a string, got 1"},
        ),
        ({"networkLatency": {"pingInterval": 0}}, {"benchmark.networkLatency.pingInterval": "must be > 0, got 0"}),
        ({"networkLatency": {"meanMs": -0.5}}, {"benchmark.networkLatency.meanMs": "must be >= 0, got -0.5"}),
        ({"networkLatency": {"enabled": 1}}, {"benchmark.networkLatency.enabled": "must be true or false, got 1"}),
        (
            {"networkLatency": {"pingInterval": True}},
            {"benchmark.networkLatency.pingInterval": "must be a number, got true"},
        ),
        (
            {"otel": {"streamTimingEnabled": "false"}},
            {"benchmark.otel.streamTimingEnabled": "must be true or false, got 'false'" + QUOTED},
        ),
        (
            {"otel": {"customResourceAttributes": ["a"]}},
            {"benchmark.otel.customResourceAttributes": "must be a mapping, got a list of 1 item ('a')"},
        ),
        ({"otel": {"metricsURL": "http://x"}}, {"benchmark.otel.metricsURL": "unknown key 'metricsURL'"}),
        ({"mlflow": {"tags": "a:b"}}, {"benchmark.mlflow.tags": "must be a mapping, got 'a:b'"}),
        ({"mlflow": {"artifactGlobs": "*.json"}}, {"benchmark.mlflow.artifactGlobs": "must be a list, got '*.json'"}),
        ({"wandb": {"entity": "team"}}, {"benchmark.wandb": "entity needs" + NO_PROJECT}),
        (
            {"wandb": {"project": "", "runName": "r", "tags": ["t"]}},
            {"benchmark.wandb": "runName and tags need" + NO_PROJECT},
        ),
        ({"wandb": {"project": "p", "tags": "t"}}, {"benchmark.wandb.tags": "must be a list, got 't'"}),
    ],
)
def test_refused_values_name_the_key(sections: dict[str, Any], expected: dict[str, str]) -> None:
    assert problems(spec(**sections)) == expected


def test_a_refused_tracking_uri_is_not_echoed() -> None:
    # A tracking URI may carry a password; a refusal elsewhere in the section must not print it.
    uri = "https://user:hunter2@mlflow.example"
    found = problems(spec(mlflow={"trackingUri": uri, "experiment": 1}))
    assert found == {"benchmark.mlflow.experiment": "must be a string, got 1"}
