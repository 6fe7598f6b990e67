"""The spec sections the program once kept free-form, accepted and refused exactly as AIPerf 0.13.0 does.

``benchmark.runtime.communication``, ``benchmark.artifacts``, ``plot``, ``variables`` and the
``warmup``/``profiling`` shorthand: Hypothesis draws values mixing valid and invalid keys, tags, types and bounds; the
program's spec model (:class:`AIPerfJobSpec`) must accept exactly the specs the release's own
spec validation (``validate_job_spec``, via :mod:`oracle`) accepts. The field sets and enums are
compared with the release's models in ``tests/test_aiperf_oracle.py``.

Not drawn, on purpose, where the program is stricter than the release's Python and the API
server decides first: ``null`` (the API server prunes a null field of a CRD object without
``nullable``), snake_case keys (pruned; the program names the camelCase key), values the
release's lax parsing converts (``"5557"`` or ``true`` for a port, ``"yes"`` for a switch), an
unknown key in a ``userFiles`` entry (the API server prunes it; the release ignores it), and an
absolute plot path (read from the operator's file system; the program refuses any path).
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

PORT = st.sampled_from([1, 5557, 65535, 0, 65536, -1, "x", 2.5, [1]])
TEXT = st.sampled_from(["127.0.0.1", "/tmp/x", "", 5, ["h"]])
PROXY = st.one_of(
    st.fixed_dictionaries({}, optional={"frontendPort": PORT, "backendPort": PORT, "bogus": st.just(1)}),
    st.sampled_from(["5661", 5661]),
)
COMMUNICATION = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(["ipc", "tcp", "dual", "IPC", "Tcp", "udp", 1]),
            "path": TEXT,
            "host": TEXT,
            "ipcPath": TEXT,
            "tcpHost": TEXT,
            "controllerHost": TEXT,
            "recordsPort": PORT,
            "creditRouterPort": PORT,
            "controlPort": PORT,
            "creditReturnPushPullPort": PORT,
            "eventBusProxy": PROXY,
            "datasetManagerProxy": PROXY,
            "rawInferenceProxy": PROXY,
            "bogus": st.just(1),
        },
    ),
    st.sampled_from(["ipc", 1, ["ipc"]]),
)
NAMES = st.lists(st.sampled_from(["ttft", "itl", "x"]), max_size=2)
PLOTS = st.dictionaries(st.sampled_from(["ttft", "itl"]), st.sampled_from([{"type": "scatter"}, {}, 1]), max_size=2)
VISUALIZATION = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "multiRunDefaults": st.one_of(NAMES, st.just("ttft")),
            "singleRunDefaults": NAMES,
            "multiRunPlots": PLOTS,
            "singleRunPlots": st.one_of(PLOTS, st.just([])),
            "bogus": st.just(1),
        },
    ),
    st.just("v"),
)
DOWNSAMPLING = st.fixed_dictionaries(
    {},
    optional={
        "enabled": st.sampled_from([True, False, "x", 2]),
        "windowSizeSeconds": st.sampled_from([1, 2.5, 0, -1, "x"]),
        "aggregationMethod": st.sampled_from(["mean", "max", "min", "median", "sum", "MAX", 1]),
        "bogus": st.just(1),
    },
)
CLASSIFICATION = st.fixed_dictionaries(
    {},
    optional={
        "baselines": st.sampled_from([["*base*"], [], "x", [1]]),
        "treatments": st.sampled_from([["*t*"], 1]),
        "default": st.sampled_from(["baseline", "treatment", "control"]),
        "groupExtractionPattern": st.sampled_from(["^(a)", 1]),
        "groupDisplayNames": st.sampled_from([{"a": "A"}, {"a": 1}, []]),
        "anythingElse": st.just(1),
    },
)
PLOT = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "visualization": VISUALIZATION,
            "settings": st.one_of(
                st.fixed_dictionaries({}, optional={"serverMetricsDownsampling": DOWNSAMPLING, "bogus": st.just(1)}),
                st.just(1),
            ),
            "experimentClassification": CLASSIFICATION,
            "theme": st.just("dark"),
        },
    ),
    st.sampled_from(["plot.yaml", 1, [], True]),
)
USER_FILE = st.fixed_dictionaries(
    {"path": st.sampled_from(["a.txt", "d/b.json", "a/./b", "", "/abs", "../up", "a\tb"])},
    optional={
        "format": st.sampled_from(["json", "yaml", "text", "JSON"]),
        "content": st.sampled_from(["text {{ job_name }}", {"k": [1]}, [1], 5]),
    },
)
ARTIFACTS = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "dir": st.sampled_from(["/results", 5]),
            "prefix": st.sampled_from(["run1", "outputs", "outputs.json", "./outputs_raw.jsonl", "", 1]),
            "summary": st.sampled_from([["json"], [], False, True, ["csv"]]),
            "records": st.sampled_from([["jsonl"], False, ["json"]]),
            "raw": st.sampled_from([True, False, "x"]),
            "sliceDuration": st.sampled_from([5, 2.5, "5m", "30 sec", "inf", 0, -1, "0s", "5 parsecs", [1]]),
            "exportOutputsJson": st.booleans(),
            "autoPlot": st.booleans(),
            "userFiles": st.one_of(st.lists(USER_FILE, max_size=2), st.just("x")),
            "bogus": st.just(1),
        },
    ),
    st.just("x"),
)
VARIABLES = st.sampled_from([{}, {"isl": 512}, {"n": {"x": [1, None]}}, [1], "x", 5])
PHASE = st.fixed_dictionaries(
    {"type": st.sampled_from(["concurrency", "poisson", "burst"])},
    optional={
        "name": st.sampled_from(["warmup", "profiling", "main", "9bad"]),
        "kind": st.sampled_from(["warmup", "profiling", "other"]),
        "concurrency": st.sampled_from([1, 8, 0, "x"]),
        "rate": st.sampled_from([1.5, 0, "x"]),
        "requests": st.sampled_from([1, 10, 0]),
        "bogus": st.just(1),
    },
)
SHORTHAND: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {}, optional={"warmup": st.one_of(PHASE, st.just("x")), "profiling": st.one_of(PHASE, st.just([]))}
)


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    spec = copy.deepcopy(BASE)
    if draw(st.booleans()):
        spec["benchmark"]["runtime"] = {"communication": draw(COMMUNICATION)}
    if draw(st.booleans()):
        spec["benchmark"]["artifacts"] = draw(ARTIFACTS)
    if draw(st.booleans()):
        spec["plot"] = draw(PLOT)
    if draw(st.booleans()):
        spec["variables"] = draw(VARIABLES)
    shorthand = draw(SHORTHAND)
    if shorthand:
        if draw(st.integers(0, 4)):  # mostly instead of phases; sometimes both (refused)
            del spec["benchmark"]["phases"]
        spec["benchmark"].update(shorthand)
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
    good["benchmark"]["runtime"] = {"communication": {"type": "tcp", "recordsPort": 5557, "host": "h"}}
    good["plot"] = {"visualization": {"singleRunDefaults": ["ttft"], "singleRunPlots": {"ttft": {}}}}
    good["variables"] = {"isl": 512}
    good["benchmark"]["artifacts"] = {
        "prefix": "outputs_raw.json",
        "exportOutputsJson": True,
        "sliceDuration": "30 sec",
        "userFiles": [{"path": "d/a.txt", "content": "x"}, {"path": "b", "format": "yaml", "content": [1]}],
    }
    bad = copy.deepcopy(good)
    bad["plot"]["visualization"]["singleRunDefaults"] = ["itl"]
    assert (accepted_here(good), oracle.validate(good)["accepted"]) == (True, True)
    assert (accepted_here(bad), oracle.validate(bad)["accepted"]) == (False, False)
    artifacts: dict[str, Any]
    for artifacts in (
        {"prefix": "./outputs_console.txt", "exportOutputsJson": True},
        {"userFiles": [{"path": "a/../../b", "content": "x"}]},
        {"userFiles": [{"path": "a", "format": "text", "content": {"k": 1}}]},
        {"sliceDuration": "0s"},
        {"records": []},
    ):
        bad = copy.deepcopy(good)
        bad["benchmark"]["artifacts"] = artifacts
        assert (accepted_here(bad), oracle.validate(bad)["accepted"]) == (False, False), artifacts
