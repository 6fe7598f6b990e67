"""``benchmark.tokenizer``, ``networkLatency``, ``otel``, ``mlflow`` and ``wandb``, accepted and
refused exactly as AIPerf 0.13.0 does.

Hypothesis draws values mixing valid and invalid keys, types and bounds; the program's spec model
(:class:`AIPerfJobSpec`) must accept exactly the specs the release's own spec validation
(``validate_job_spec``, via :mod:`oracle`) accepts.

Not drawn, on purpose, where the program is stricter than the release's Python and the API server
decides first (the CRD types these keys): ``null``, snake_case keys, and values the release's lax
parsing converts (``"true"`` or ``1`` for a bool, ``"2"`` for a number, a non-string W&B name or
MLflow tag value, a string of tags).
"""

from __future__ import annotations

import copy
import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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

BOOL = st.sampled_from([True, False, "x", 2.5, []])
TEXT = st.sampled_from(["a", "", " ", "http://h:1", 5, ["a"], {}])
NAME = st.sampled_from(["a", "", " ", "  p  "])
NUMBER = st.sampled_from([0, 1, 0.5, -1, -0.5, 1e9, "x", True, []])
STR_MAP = st.one_of(st.dictionaries(st.sampled_from(["k", "team"]), TEXT, max_size=2), st.sampled_from([[], "x", 1]))
BOGUS = {"bogus": st.just(1)}

TOKENIZER = st.fixed_dictionaries(
    {},
    optional={
        "name": TEXT,
        "revision": TEXT,
        "trustRemoteCode": BOOL,
        "applyChatTemplate": BOOL,
        "resolvedNames": STR_MAP,
        **BOGUS,
    },
)
NETWORK_LATENCY = st.fixed_dictionaries(
    {}, optional={"enabled": BOOL, "pingInterval": NUMBER, "meanMs": NUMBER, **BOGUS}
)
OTEL = st.fixed_dictionaries(
    {},
    optional={
        "metricsUrl": TEXT,
        "streamMetricsEnabled": BOOL,
        "streamTimingEnabled": BOOL,
        "customResourceAttributes": STR_MAP,
        "genAiProvider": TEXT,
        **BOGUS,
    },
)
MLFLOW = st.fixed_dictionaries(
    {},
    optional={
        "trackingUri": TEXT,
        "experiment": TEXT,
        "runName": TEXT,
        "tags": st.dictionaries(st.sampled_from(["k", "v"]), NAME, max_size=2),
        "parentRunId": TEXT,
        "artifactGlobs": st.sampled_from([["*.json"], [], [1], {}]),
        **BOGUS,
    },
)
WANDB = st.fixed_dictionaries(
    {},
    optional={
        "project": NAME,
        "entity": NAME,
        "runName": NAME,
        "tags": st.lists(NAME, max_size=2),
        **BOGUS,
    },
)
SECTIONS = {"tokenizer": TOKENIZER, "networkLatency": NETWORK_LATENCY, "otel": OTEL, "mlflow": MLFLOW, "wandb": WANDB}


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    spec = copy.deepcopy(BASE)
    for key, section in SECTIONS.items():
        if draw(st.booleans()):
            # Mostly one bad thing at a time: the bogus key and a non-mapping are rarer.
            body = draw(section)
            if "bogus" in body and draw(st.integers(0, 3)):
                del body["bogus"]
            spec["benchmark"][key] = body if draw(st.integers(0, 9)) else draw(st.sampled_from(["x", 1, []]))
    return spec


@settings(
    max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
@given(spec=specs())
def test_the_sections_are_accepted_exactly_when_the_release_accepts_them(spec: dict[str, Any], oracle: Oracle) -> None:
    release = oracle.validate(copy.deepcopy(spec))
    assert accepted_here(spec) is release["accepted"], (spec, release["error"])


def test_the_drawn_specs_reach_both_outcomes(oracle: Oracle) -> None:
    """Hand-picked specs from the same sections: accepted and refused by both (so the parity
    above is not vacuous)."""
    good = copy.deepcopy(BASE)
    good["benchmark"].update(
        tokenizer={"name": "builtin", "trustRemoteCode": False},
        networkLatency={"enabled": True, "pingInterval": 0.5, "meanMs": 0},
        otel={"metricsUrl": "http://h:1", "customResourceAttributes": {"k": "v"}},
        mlflow={"trackingUri": "http://h:1", "tags": {"k": "v"}, "artifactGlobs": ["*.json"]},
        wandb={"project": " ", "entity": " "},
    )
    for section, bad_body in (
        ("tokenizer", {"trustRemoteCode": "x"}),
        ("networkLatency", {"pingInterval": 0}),
        ("networkLatency", {"meanMs": -1}),
        ("otel", {"customResourceAttributes": {"k": 5}}),
        ("mlflow", {"artifactGlobs": [1]}),
        ("wandb", {"project": " ", "runName": "r"}),
    ):
        bad = copy.deepcopy(good)
        bad["benchmark"][section] = bad_body
        assert (accepted_here(bad), oracle.validate(bad)["accepted"]) == (False, False), section
    assert (accepted_here(good), oracle.validate(good)["accepted"]) == (True, True)
