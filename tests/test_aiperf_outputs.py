"""``benchmark.artifacts``: the values AIPerf 0.13.0 takes and refuses, with the one line the loader
prints for each refusal; a user file's content is never shown."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from aiperf_kueue.config.aiperf_outputs import duration_seconds
from aiperf_kueue.config.aiperf_spec import AIPerfJobSpec
from tests.aiperf_spec import DATASET, problems, with_benchmark


def spec(artifacts: Any) -> dict[str, Any]:
    return with_benchmark(datasets=[DATASET], artifacts=artifacts)


@pytest.mark.parametrize(
    "artifacts",
    [
        {},
        {
            "dir": "/results",
            "prefix": "run1",
            "summary": ["json"],
            "records": False,
            "raw": True,
            "trace": False,
            "sliceDuration": "5m",
            "showTraceTiming": True,
            "autoPlot": True,
            "plotRequired": False,
            "exportOutputsJson": True,
            "userFiles": [
                {"path": "notes/readme.txt", "content": "run {{ job_name }}"},
                {"path": "meta.yaml", "format": "yaml", "content": {"k": [1, 2]}},
                {"path": "n.json", "content": 5},
            ],
        },
        {"summary": False, "records": ["jsonl"], "sliceDuration": 2.5},
        # Only with exportOutputsJson must <prefix>.json (a known suffix stripped) not be outputs.json.
        {"prefix": "outputs.json"},
        {"prefix": "outputs_raw.json", "exportOutputsJson": True},
    ],
)
def test_accepted_artifacts_are_kept_as_given(artifacts: dict[str, Any]) -> None:
    data = spec(artifacts)
    assert AIPerfJobSpec.model_validate(copy.deepcopy(data)).manifest() == data


A = "benchmark.artifacts"
YAML12 = " (YAML 1.2, which Pulumi reads, has only true and false)"


@pytest.mark.parametrize(
    ("artifacts", "expected"),
    [
        ({"summary": []}, {f"{A}.summary": "must be [json] or false (no export), got an empty list"}),
        ({"summary": ["JSON"]}, {f"{A}.summary": "must be [json] or false (no export), got a list of 1 item ('JSON')"}),
        ({"records": True}, {f"{A}.records": "must be [jsonl] or false (no export), got true"}),
        ({"raw": "on"}, {f"{A}.raw": "must be true or false, got 'on'" + YAML12}),
        ({"dir": 5}, {f"{A}.dir": "must be a string, got 5"}),
        ({"prefix": 1}, {f"{A}.prefix": "must be a string, got 1"}),
        ({"sliceDuration": 0}, {f"{A}.sliceDuration": "must be > 0, got 0"}),
        ({"sliceDuration": "0s"}, {f"{A}.sliceDuration": "must be > 0, got '0s'"}),
        (
            {"sliceDuration": "5 parsecs"},
            {f"{A}.sliceDuration": "must be seconds or a duration such as '30s', '5m', '2h' or 'inf', got '5 parsecs'"},
        ),
        ({"sliceDuration": True}, {f"{A}.sliceDuration": "must be seconds or a duration such as '5m', got true"}),
        (
            {"prefix": "./outputs_console.txt", "exportOutputsJson": True},
            {
                A: "prefix './outputs_console.txt' names ./outputs.json, the file exportOutputsJson writes "
                "(outputs.json): use another prefix"
            },
        ),
        (
            {"prefx": "run"},
            {
                A: "unknown key 'prefx' (did you mean 'prefix'?); allowed: autoPlot, dir, exportOutputsJson, "
                "plotRequired, prefix, raw, records, showTraceTiming, sliceDuration, summary, trace, userFiles"
            },
        ),
        (
            {"slice_duration": 5},
            {A: "unknown key 'slice_duration': the AIPerfJob CRD uses camelCase, write 'sliceDuration'"},
        ),
        ({"userFiles": {"path": "a"}}, {f"{A}.userFiles": "must be a list of files, each a mapping {path, content}"}),
        (
            {"userFiles": [{"path": "a", "content": "x"}, "b"]},
            {f"{A}.userFiles": "entry 1 must be a mapping {path, content}"},
        ),
        ({"userFiles": [{"path": "a"}]}, {f"{A}.userFiles[0].content": "required, but not set"}),
        (
            {"userFiles": [{"path": "a", "content": None}]},
            {f"{A}.userFiles[0]": "content is required (null is no content)"},
        ),
        (
            {"userFiles": [{"path": "/etc/a", "content": "x"}]},
            {f"{A}.userFiles[0]": "path '/etc/a' is absolute: it must be relative to the run directory"},
        ),
        (
            {"userFiles": [{"path": "a/../../b", "content": "x"}]},
            {f"{A}.userFiles[0]": "path 'a/../../b' has a '..' segment: it must stay in the run directory"},
        ),
        ({"userFiles": [{"path": "", "content": "x"}]}, {f"{A}.userFiles[0]": "path is empty"}),
        (
            {"userFiles": [{"path": "a\tb", "content": "x"}]},
            {f"{A}.userFiles[0]": 'path "a\\tb" holds a control character'},
        ),
        (
            {"userFiles": [{"path": "a", "format": "JSON", "content": {}}]},
            {f"{A}.userFiles[0].format": "must be one of 'json', 'yaml' or 'text', got 'JSON'"},
        ),
        (
            {"userFiles": [{"path": "a", "mode": "0600", "content": "x"}]},
            {f"{A}.userFiles[0]": "unknown key 'mode'; allowed: content, format, path"},
        ),
    ],
)
def test_refused_artifacts_name_the_key(artifacts: dict[str, Any], expected: dict[str, str]) -> None:
    assert problems(spec(artifacts)) == expected


def test_a_user_files_content_is_never_shown() -> None:
    # A user file may carry a token: a refusal names its path and format, never the content.
    token = "hf_s3cr3tT0k3nValue"
    for files in (
        [{"path": "a", "format": "json", "content": token}],
        [{"path": "a", "format": "text", "content": {"token": token}}],
        [{"path": "/abs", "content": token}],
        {"path": "a", "content": token},
        [token],
    ):
        found = problems(spec({"userFiles": files}))
        assert len(found) == 1 and token not in str(found), found
    assert problems(spec({"userFiles": [{"path": "a", "format": "json", "content": token}]})) == {
        f"{A}.userFiles[0]": "path 'a': format json needs structured content (a mapping, list or scalar)"
    }


@pytest.mark.parametrize(
    ("given", "seconds"),
    [
        (30, 30.0),
        (2.5, 2.5),
        ("300", 300.0),
        ("30 sec", 30.0),
        ("5m", 300.0),
        ("1.5 Hour", 5400.0),
        (" inf ", float("inf")),
    ],
)
def test_durations_read_as_the_release_reads_them(given: Any, seconds: float) -> None:
    assert duration_seconds(given) == seconds
