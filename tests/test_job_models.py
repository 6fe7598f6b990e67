"""Config models of ``aiperf-kueue:jobs`` / ``sweeps``: the typed AIPerfJob spec, its rules, sweeps.

Messages are checked as the loader shows them (``aiperf_kueue.stackfile.loader._problem``). The models
mirror AIPerf 0.13.0 (``tests/test_aiperf_oracle*.py`` compare them with the release's own);
where the reference CRD is available (``../shared/reference/aiperf``), specs the models accept
(reject) are also accepted (rejected) by that CRD's schema and CEL rules.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from pydantic import BaseModel, ValidationError

from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.config.aiperf_spec import AIPerfJobSpec
from aiperf_kueue.config.expansion import JobEntry, expand_sweeps
from aiperf_kueue.config.jobs import Job, Sweep
from aiperf_kueue.config.sizing import OperatorSizing
from aiperf_kueue.stackfile.loader import _problem, parse_config, read_stack_file
from tests.crd_validation import load_crd, validate
from tests.support import require_shared

URLS = ["http://llm.serving:8000"]


def base(**fields: Any) -> dict[str, Any]:
    phases = [
        {"name": "warmup", "type": "concurrency", "concurrency": 4, "requests": 20},
        {"name": "profiling", "type": "concurrency", "concurrency": 8, "requests": 100},
    ]
    benchmark = {
        "models": ["m"],
        "endpoint": {"urls": URLS, "type": "chat"},
        "datasets": [{"name": "main"}],
        "phases": phases,
    }
    return {"benchmark": benchmark, **fields}


def problems(model: type[BaseModel], data: Any) -> dict[str, str]:
    """``{key path: message}`` the loader would print, ``{}`` when valid.

    The loader lists the allowed keys after an unknown one by walking StackConfig from the
    root; these models are validated on their own here, so that list is cut off.
    """
    try:
        model.model_validate(data)
    except ValidationError as exc:
        return {p.path: p.message.split("; allowed: ")[0] for p in (_problem(e) for e in exc.errors())}
    return {}


def with_benchmark(**benchmark: Any) -> dict[str, Any]:
    """``base()`` with these benchmark keys set (``None``: removed)."""
    data = base()
    data["benchmark"].update(benchmark)
    data["benchmark"] = {k: v for k, v in data["benchmark"].items() if v is not None}
    return data


#: A spec using many CRD fields, open and closed; it must pass through unchanged.
RICH: dict[str, Any] = {
    "image": "nvcr.io/nvidia/aiperf:0.13.0",
    "imagePullPolicy": "IfNotPresent",
    "resourceMode": "guaranteed",
    "connectionsPerWorker": 200,
    "timeoutSeconds": 3600,
    "ttlSecondsAfterFinished": 600,
    "resultsTtlDays": 7,
    "keepFailedPods": False,
    "cancel": False,
    "schemaVersion": "2.0",
    "randomSeed": 42,
    "skipEndpointCheck": True,
    "multiRun": {"numRuns": 1, "cooldownSeconds": 0.5},
    "failurePolicy": {"onChildFailure": "abort", "maxFailures": 0},
    "variables": {"isl": 512, "nested": {"any": ["thing"]}},
    "plot": {"visualization": {"multiRunPlots": {"any": {"free": "form"}}}, "experimentClassification": {"x": 1}},
    "podTemplate": {
        "env": [
            {"name": "OPENAI_API_KEY", "valueFrom": {"secretKeyRef": {"name": "llm", "key": "token"}}},
            {"name": "AIPERF_K8S_RECORD_PROCESSOR_CPU_REQUEST", "value": "100m"},
        ],
        "nodeSelector": {"pool": "cpu"},
        "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
        "imagePullSecrets": [{"name": "ngc"}],
        "priorityClassName": "benchmarks",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "extraPodSpec": {"schedulingGates": [{"name": "wait"}]},
    },
    "benchmark": {
        "models": ["meta-llama/Llama-3.1-8B-Instruct"],
        "endpoint": {
            "urls": URLS,
            "type": "chat",
            "streaming": True,
            "apiKey": "<redacted>",
            "headers": {"X-Team": "perf"},
            "timeout": 600,
            "path": "/v1/chat/completions",
            "extra": {"ignore_eos": True},
            "resetKvCache": {"timeoutSeconds": 5, "path": "/reset"},
        },
        "datasets": [{"name": "main", "type": "synthetic", "isl": {"mean": 512}}],
        "phases": [
            {"name": "warmup", "type": "concurrency", "concurrency": 8, "requests": 40, "seamless": False},
            {
                "name": "profiling",
                "type": "concurrency",
                "concurrency": 64,
                "requests": 640,
                "concurrencyRamp": {"duration": 30},
                "prefillConcurrency": 16,
            },
        ],
        "artifacts": {"prefix": "run", "userFiles": [{"path": "meta.json", "format": "json", "content": {"a": 1}}]},
        "slos": {"ttft": 250, "itl": 12.5},
        "tokenizer": {"name": "builtin"},
        "gpuTelemetry": {"enabled": False},
        "serverMetrics": "http://llm.serving:8000/metrics",
        "runtime": {"workers": 10, "workersPerPod": 5, "recordProcessorsPerPod": 2, "statsInterval": 10},
        "logging": {"level": "DEBUG"},
        "accuracy": {"benchmark": "gsm8k", "nShots": 5},
        "otel": {"metricsUrl": "http://otel:4318", "customResourceAttributes": {"team": "perf"}},
    },
}


def test_spec_passes_through_unchanged() -> None:
    spec = AIPerfJobSpec.model_validate(copy.deepcopy(RICH))
    assert spec.manifest() == RICH


MINIMAL: dict[str, Any] = {
    "benchmark": {
        "models": ["m"],
        "endpoint": {"urls": ["x:8000"]},
        "datasets": [{"name": "main"}],
        "phases": [{"name": "profiling", "type": "concurrency", "requests": 1}],
    }
}


def test_minimal_spec() -> None:
    assert AIPerfJobSpec.model_validate(copy.deepcopy(MINIMAL)).manifest() == MINIMAL


def test_manifest_spec_adds_scheduling() -> None:
    entry = JobEntry("a", "ns", None, "high", AIPerfJobSpec.model_validate(base()), ("jobs", 0))
    assert entry.manifest_spec("aiperf-queue") == {
        **base(),
        "scheduling": {"queueName": "aiperf-queue", "priorityClass": "high"},
    }


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({}, {"benchmark": "required, but not set"}),
        ({"benchmark": {}}, {"benchmark.endpoint": "required, but not set"}),
        ({"benchmark": {"endpoint": {}}}, {"benchmark.endpoint.urls": "required, but not set"}),
        (
            {"benchmark": {"endpoint": {"urls": []}}},
            {"benchmark.endpoint.urls": "must have at least 1 item(s), got 0"},
        ),
        (
            {"benchmark": {"endpoint": {"urls": "http://x"}}},
            {"benchmark.endpoint.urls": "must be a list, got 'http://x'"},
        ),
        (
            with_benchmark(endpoint={"urls": URLS, "type": "template"}),
            {"benchmark.endpoint": "endpoint.template is required when endpoint.type is 'template'"},
        ),
        (
            with_benchmark(models=None),
            {"benchmark": "benchmark.models is required (a list of model names)"},
        ),
        (
            with_benchmark(datasets=None),
            {"benchmark": "benchmark.datasets is required (one dataset, e.g. [{name: main, type: synthetic}])"},
        ),
        (
            with_benchmark(phases=None),
            {"benchmark": "benchmark.phases is required (e.g. [{name: profiling, type: concurrency, ...}])"},
        ),
        (
            with_benchmark(phases=[{"name": "profiling", "requests": 1}]),
            {"benchmark.phases[0].type": "required, but not set"},
        ),
        (
            base(multiRun={"convergence": {}}),
            {"multiRun.convergence.metric": "required, but not set"},
        ),
    ],
)
def test_required_fields(data: dict[str, Any], expected: dict[str, str]) -> None:
    assert problems(AIPerfJobSpec, data) == expected


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (base(resourceMode="fast"), {"resourceMode": "must be one of 'guaranteed', 'burstable' or 'none', got 'fast'"}),
        (
            base(imagePullPolicy="always"),
            {"imagePullPolicy": "must be one of 'Always', 'Never' or 'IfNotPresent', got 'always'"},
        ),
        (base(schemaVersion="1.0"), {"schemaVersion": "must be one of '2.0', got '1.0'"}),
        (
            with_benchmark(logging={"level": "info"}),
            {
                "benchmark.logging.level": "must be one of 'TRACE', 'DEBUG', 'INFO', 'NOTICE', 'WARNING', 'SUCCESS', "
                "'ERROR' or 'CRITICAL', got 'info'"
            },
        ),
        (
            with_benchmark(endpoint={"urls": URLS, "connectionReuse": "sticky"}),
            {
                "benchmark.endpoint.connectionReuse": "must be one of 'pooled', 'never' or 'sticky-user-sessions', "
                "got 'sticky'"
            },
        ),
        (
            base(failurePolicy={"onChildFailure": "stop"}),
            {"failurePolicy.onChildFailure": "must be one of 'continue' or 'abort', got 'stop'"},
        ),
    ],
)
def test_enum_errors(data: dict[str, Any], expected: dict[str, str]) -> None:
    assert problems(AIPerfJobSpec, data) == expected


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (base(connectionsPerWorker=0), {"connectionsPerWorker": "must be >= 1, got 0"}),
        (
            base(connectionsPerWorker="100"),
            {
                "connectionsPerWorker": "must be a whole number (e.g. "
                "connectionsPerWorker: 8), got '100', text because of its quotes"
            },
        ),
        (base(timeoutSeconds=-1), {"timeoutSeconds": "must be >= 0, got -1"}),
        (base(timeoutSeconds="1h"), {"timeoutSeconds": "must be a number, got '1h'"}),
        (base(resultsTtlDays=400), {"resultsTtlDays": "must be <= 365, got 400"}),
        (
            base(cancel="yes"),
            {"cancel": "must be true or false, got 'yes' (YAML 1.2, which Pulumi reads, has only true and false)"},
        ),
        (base(multiRun={"confidenceLevel": 1}), {"multiRun.confidenceLevel": "must be < 1, got 1"}),
        (
            with_benchmark(runtime={"workersPerPod": 101}),
            {"benchmark.runtime.workersPerPod": "must be <= 100, got 101"},
        ),
        (
            with_benchmark(datasets=[{"name": "a"}, {"name": "b"}]),
            {"benchmark.datasets": "must have at most 1 items, got 2"},
        ),
        (with_benchmark(phases=[]), {"benchmark.phases": "must have at least 1 item(s), got 0"}),
        (
            with_benchmark(phases=[{"name": "profiling", "type": "concurrency", "concurrency": 0, "requests": 1}]),
            {"benchmark.phases[0].concurrency": "must be >= 1, got 0"},
        ),
        (
            with_benchmark(phases=[{"name": "profiling", "type": "concurrency", "concurrency": "{{ c }}"}]),
            {"benchmark.phases[0].concurrency": "must be a whole number (e.g. concurrency: 8), got '{{ c }}'"},
        ),
        (
            with_benchmark(phases=[{"name": "1st", "kind": "profiling", "type": "concurrency", "requests": 1}]),
            {
                "benchmark.phases[0]": "phase name must start with a letter or '_' and use only letters, digits, '_' "
                "and '-', got '1st'"
            },
        ),
        (
            with_benchmark(
                phases=[
                    {"name": "Profiling", "kind": "profiling", "type": "concurrency", "requests": 1},
                    {"name": "profiling", "type": "concurrency", "requests": 1},
                ]
            ),
            {"benchmark": "phase names must be unique ignoring case, 'profiling' repeats 'Profiling'"},
        ),
        (
            with_benchmark(phases=[{"name": "p", "type": "concurrency", "requests": 1}]),
            {"benchmark.phases[0]": "phase 'p': kind is required for names other than warmup and profiling"},
        ),
        (
            with_benchmark(phases=[{"name": "profiling", "type": "poisson", "requests": 1}]),
            {"benchmark.phases[0]": "phase 'profiling': a poisson phase needs rate or rateSeries"},
        ),
        (
            with_benchmark(phases=[{"name": "profiling", "type": "concurrency"}]),
            {"benchmark.phases[0]": "phase 'profiling': at least one of requests, duration or sessions must be set"},
        ),
        (
            with_benchmark(phases=[{"name": "warmup", "type": "concurrency", "requests": 1}]),
            {"benchmark": "a phase of kind 'profiling' is required"},
        ),
        (
            with_benchmark(endpoint={"urls": URLS, "headers": {"X-N": 1}}),
            {"benchmark.endpoint.headers.X-N": "must be a string, got 1"},
        ),
    ],
)
def test_bounds_and_types(data: dict[str, Any], expected: dict[str, str]) -> None:
    assert problems(AIPerfJobSpec, data) == expected


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            base(scheduling={"queueName": "team-a"}),
            {
                "scheduling": "is set by aiperf-kueue from the job's queue and priorityClass; use `queue` / "
                "`priorityClass` on the job instead of spec.scheduling"
            },
        ),
        (
            base(sweep={"type": "grid"}),
            {"sweep": "AIPerfJob.spec.sweep must be omitted; declare a concurrency sweep in aiperf-kueue:sweeps"},
        ),
        (
            base(multiRun={"numRuns": 3}),
            {
                "": "AIPerfJob.spec.multiRun must describe one run without convergence (numRuns <= 1, no convergence); "
                "use AIPerfSweep for multi-run orchestration"
            },
        ),
        (
            with_benchmark(endpoint={"urls": URLS, "type": "chat", "requestContentType": "multipart/form-data"}),
            {
                "benchmark.endpoint": "requestContentType multipart/form-data is only supported on "
                "audio_transcription, image_edit, video_generation, not on endpoint type chat"
            },
        ),
        (
            with_benchmark(endpoint={"urls": URLS, "path": "v1/chat/completions"}),
            {"benchmark.endpoint": "endpoint.path must start with '/' (e.g. '/v1/chat/completions')"},
        ),
        (
            with_benchmark(endpoint={"urls": URLS, "waitForModelMode": "models"}),
            {
                "benchmark.endpoint": "waitForModelMode has no effect unless waitForModelTimeout is positive; set "
                "waitForModelTimeout to enable the readiness probe"
            },
        ),
        (
            with_benchmark(endpoint={"urls": URLS, "authType": "sigv4"}),
            {"benchmark.endpoint.authType": "unknown key 'authType'"},
        ),
        (
            with_benchmark(endpoint={"urls": ["ftp://llm"]}),
            {"benchmark.endpoint.urls": "URL 'ftp://llm' has unsupported scheme 'ftp'; expected 'http' or 'https'"},
        ),
        (
            with_benchmark(accuracy={"benchmark": "bfcl_ast"}),
            {
                "benchmark.accuracy.benchmark": "must be one of 'mmlu', 'mmlu_pro', 'aime', 'hellaswag', 'bigbench', "
                "'aime24', 'aime25', 'math_500', 'gsm8k', 'gpqa_diamond' or 'lcb_codegeneration', got 'bfcl_ast'"
            },
        ),
        (
            with_benchmark(models="m"),
            {
                "benchmark.models": "must be a list of model names or a mapping with items, got the string 'm': AIPerf "
                "0.13.0 fails such a job after its preflight (\"'str' object has no attribute 'get'\"); write models: "
                "[m] or the shorthand model: m"
            },
        ),
        (
            # The fix does not repeat a name too long for one line (found by the fuzzer).
            with_benchmark(models="9" * 4000),
            {
                "benchmark.models": "must be a list of model names or a mapping with items, got the string "
                f"'{'9' * 80}'… (4000 characters): AIPerf 0.13.0 fails such a job after its preflight (\"'str' object "
                "has no attribute 'get'\"); write models: [NAME] or the shorthand model: NAME"
            },
        ),
        (
            with_benchmark(runtime={"apiHost": "0.0.0.0"}),
            {"benchmark.runtime": "runtime.apiHost requires runtime.apiPort to be set"},
        ),
        (
            with_benchmark(runtime={"workers": 4, "workersMin": 8}),
            {"benchmark.runtime": "runtime.workersMin must be <= runtime.workers"},
        ),
        (
            base(podTemplate={"extraPodSpec": {"hostNetwork": True, "containers": []}}),
            {
                "podTemplate": "extraPodSpec may not override security-critical PodSpec keys: containers, hostNetwork. "
                "Use the typed podTemplate fields instead."
            },
        ),
        (
            base(podTemplate={"containerSecurityContext": {"privileged": True}}),
            {
                "podTemplate": "containerSecurityContext may not set privileged to a privilege-escalating value: it "
                "would weaken the hardened securityContext AIPerf applies to every benchmark pod"
            },
        ),
        (
            with_benchmark(profiling={"type": "concurrency", "concurrency": 1500, "requests": 1}),
            {"benchmark": "set phases or its shorthand profiling, not both"},
        ),
        (
            with_benchmark(model="m", models=["m"]),
            {"benchmark": "set models or its shorthand model, not both"},
        ),
        (
            with_benchmark(runtime={"workers": "auto"}),
            {"benchmark.runtime.workers": "must be a whole number (e.g. workers: 8), got 'auto'"},
        ),
        (
            with_benchmark(gpuTelemetry={"enabled": "no"}),
            {"benchmark.gpuTelemetry": "enabled must be true or false, got 'no'"},
        ),
        (
            base(podTemplate={"env": [{"name": "AIPERF_K8S_RECORD_PROCESSOR_CPU_REQUEST", "value": "lots"}]}),
            {"podTemplate": "env[0] AIPERF_K8S_RECORD_PROCESSOR_CPU_REQUEST must be a CPU quantity, got 'lots'"},
        ),
    ],
)
def test_rules(data: dict[str, Any], expected: dict[str, str]) -> None:
    assert problems(AIPerfJobSpec, data) == expected


def test_unknown_keys() -> None:
    assert problems(AIPerfJobSpec, base(foo=1)) == {"foo": "unknown key 'foo'"}
    assert problems(AIPerfJobSpec, base(connections_per_worker=5)) == {
        "": "unknown key 'connections_per_worker': the AIPerfJob CRD uses camelCase, write 'connectionsPerWorker'"
    }
    assert problems(AIPerfJobSpec, with_benchmark(metrics={"anything": 1})) == {
        "benchmark.metrics.anything": "unknown key 'anything'"
    }
    # Objects whose values AIPerf validates keep them as given, but only under keys the release has.
    kept = with_benchmark(gpuTelemetry={"enabled": True, "collector": "pynvml"}, networkLatency={"pingInterval": 1})
    kept["benchmark"]["phases"][1]["concurrencyRamp"] = {"duration": 30}
    assert AIPerfJobSpec.model_validate(copy.deepcopy(kept)).manifest() == kept
    snake = with_benchmark()
    snake["benchmark"]["phases"][1]["prefill_concurrency"] = 4
    assert problems(AIPerfJobSpec, snake) == {
        "benchmark.phases[1]": "unknown key 'prefill_concurrency': the AIPerfJob CRD uses camelCase, write "
        "'prefillConcurrency'"
    }
    assert problems(AIPerfJobSpec, with_benchmark(networkLatency={"x": 1})) == {
        "benchmark.networkLatency.x": "unknown key 'x'"
    }
    # A near miss names the key meant, in closed and keys-only objects alike.
    assert problems(AIPerfJobSpec, with_benchmark(artifacts={"prefx": "run"})) == {
        "benchmark.artifacts": "unknown key 'prefx' (did you mean 'prefix'?)"
    }


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # 28 + "-" + 6 hex digits of the spec = 35, AIPerf's job-id limit.
        ("a" * 28, {}),
        (
            "a" * 29,
            {
                "name": f"must be at most 28 characters, got 29 ('{'a' * 29}'): the AIPerfJob's name adds '-' and a "
                "6-digit digest of its spec, within AIPerf's 35-character job-id limit; shorten it by 1 character"
            },
        ),
        (
            "a" * 35,
            {
                "name": f"must be at most 28 characters, got 35 ('{'a' * 35}'): the AIPerfJob's name adds '-' and a "
                "6-digit digest of its spec, within AIPerf's 35-character job-id limit; shorten it by 7 characters"
            },
        ),
        (
            "Latency",
            {
                "name": "must be a DNS-1123 label (lower-case letters, digits and '-', starting and ending with a "
                "letter or digit), got 'Latency'"
            },
        ),
    ],
)
def test_job_name(name: str, expected: dict[str, str]) -> None:
    assert problems(Job, {"name": name, "namespace": "bench", "spec": base()}) == expected


def test_job_fields() -> None:
    job = Job.model_validate({"name": "a", "namespace": "bench", "queue": "q", "priorityClass": "high", "spec": base()})
    assert (job.queue, job.priority_class) == ("q", "high")
    assert problems(Job, {"name": "a", "namespace": "bench", "spec": base(), "scheduling": {}}) == {
        "scheduling": "unknown key 'scheduling'"
    }


def sweep(**fields: Any) -> dict[str, Any]:
    return {"name": "latency-sweep", "namespace": "bench", "concurrency": [1, 8, 32, 128], "spec": base(), **fields}


def test_sweep_expansion() -> None:
    jobs = [Job.model_validate({"name": "smoke", "namespace": "bench", "spec": base()})]
    sweeps = [Sweep.model_validate(sweep(priorityClass="low", requestsPerConcurrency=10))]
    entries = expand_sweeps(jobs, sweeps, "test.yaml")
    assert [(e.name, e.origin, e.sweep, e.concurrency, e.priority_class) for e in entries] == [
        ("smoke", ("jobs", 0), None, None, None),
        ("latency-sweep-c1", ("sweeps", 0), "latency-sweep", 1, "low"),
        ("latency-sweep-c8", ("sweeps", 0), "latency-sweep", 8, "low"),
        ("latency-sweep-c32", ("sweeps", 0), "latency-sweep", 32, "low"),
        ("latency-sweep-c128", ("sweeps", 0), "latency-sweep", 128, "low"),
    ]
    assert [e.spec.manifest()["benchmark"]["phases"] for e in entries[1:3]] == [
        [
            {"name": "warmup", "type": "concurrency", "concurrency": 4, "requests": 20},
            {"name": "profiling", "type": "concurrency", "concurrency": 1, "requests": 10},
        ],
        [
            {"name": "warmup", "type": "concurrency", "concurrency": 4, "requests": 20},
            {"name": "profiling", "type": "concurrency", "concurrency": 8, "requests": 80},
        ],
    ]
    # The base spec is left as it was.
    assert sweeps[0].spec.manifest() == base()


def test_sweep_keeps_requests_without_multiplier() -> None:
    point = Sweep.model_validate(sweep()).point_spec(32)
    assert point.manifest()["benchmark"]["phases"][1] == {
        "name": "profiling",
        "type": "concurrency",
        "concurrency": 32,
        "requests": 100,
    }


def test_sweep_phase_selection() -> None:
    phases = [
        {"name": "steady", "kind": "profiling", "type": "concurrency", "requests": 5},
        {"name": "burst", "kind": "profiling", "type": "poisson", "rate": 2, "requests": 5},
    ]
    by_kind = sweep(spec=with_benchmark(phases=phases[:1]))
    assert Sweep.model_validate(by_kind).point_spec(8).manifest()["benchmark"]["phases"] == [
        {"name": "steady", "kind": "profiling", "type": "concurrency", "requests": 5, "concurrency": 8}
    ]
    explicit = sweep(spec=with_benchmark(phases=phases), phase="burst")
    assert Sweep.model_validate(explicit).point_spec(8).manifest()["benchmark"]["phases"][1] == {
        "name": "burst",
        "kind": "profiling",
        "type": "poisson",
        "rate": 2,
        "requests": 5,
        "concurrency": 8,
    }
    shorthand = with_benchmark(phases=None, profiling={"type": "concurrency", "requests": 5})
    assert Sweep.model_validate(sweep(spec=shorthand)).point_spec(8).manifest()["benchmark"]["profiling"] == {
        "type": "concurrency",
        "requests": 5,
        "concurrency": 8,
    }
    assert problems(Sweep, sweep(spec=with_benchmark(phases=phases))) == {
        "": "sweep 'latency-sweep': spec.benchmark.phases needs a phase named 'profiling' (or exactly one with kind: "
        "profiling), or set `phase` to the phase to sweep (phases: steady, burst)"
    }
    assert problems(Sweep, sweep(phase="cooldown")) == {
        "": "sweep 'latency-sweep': spec.benchmark.phases has no phase named 'cooldown' (phases: warmup, profiling)"
    }


def test_sweep_name_overflow_names_the_sweep() -> None:
    name = "x" * 24  # + "-c128" = 29
    assert problems(Sweep, sweep(name=name)) == {
        "": f"sweep '{name}' generates job name '{name}-c128' (29 characters), and job names are at most 28 (the "
        "AIPerfJob's name adds '-' and a 6-digit digest of its spec, within AIPerf's 35-character job-id limit): "
        "shorten the sweep name to at most 23 characters"
    }
    assert problems(Sweep, sweep(name="x" * 23)) == {}


def test_sweep_field_errors() -> None:
    assert problems(Sweep, sweep(concurrency=[])) == {"concurrency": "must have at least 1 item(s), got 0"}
    assert problems(Sweep, sweep(concurrency=[8, 8])) == {"concurrency": "concurrency values must be unique, 8 repeats"}
    assert problems(Sweep, sweep(concurrency=[0])) == {"concurrency[0]": "must be >= 1, got 0"}
    assert problems(Sweep, sweep(spec=base(scheduling={}))) == {
        "spec.scheduling": "is set by aiperf-kueue from the job's queue and priorityClass; use `queue` / "
        "`priorityClass` on the job instead of spec.scheduling"
    }


@pytest.mark.parametrize(
    ("model", "data", "expected"),
    [
        # A bool is an int in Python: without strict types true became concurrency 1 (job "-c1").
        (
            Sweep,
            sweep(concurrency=[True, 8]),
            {"concurrency[0]": "must be a whole number (e.g. concurrency: 8), got true"},
        ),
        (
            Sweep,
            sweep(concurrency=["8"]),
            {"concurrency[0]": "must be a whole number (e.g. concurrency: 8), got '8', text because of its quotes"},
        ),
        (Sweep, sweep(concurrency=[8.0]), {"concurrency[0]": "must be a whole number (e.g. concurrency: 8), got 8.0"}),
        (
            Sweep,
            sweep(requestsPerConcurrency="10"),
            {
                "requestsPerConcurrency": "must be a whole number (e.g. "
                "requestsPerConcurrency: 8), got '10', text because of its quotes"
            },
        ),
        (
            Sweep,
            sweep(requestsPerConcurrency=True),
            {"requestsPerConcurrency": "must be a whole number (e.g. requestsPerConcurrency: 8), got true"},
        ),
        (
            Sweep,
            sweep(retainOnDelete="yes"),
            {
                "retainOnDelete": "must be true or false, got 'yes' (YAML 1.2, "
                "which Pulumi reads, has only true and false)"
            },
        ),
        (Sweep, sweep(retainOnDelete=0), {"retainOnDelete": "must be true or false, got 0"}),
        (
            Job,
            {"name": "a", "namespace": "bench", "spec": base(), "retainOnDelete": "false"},
            {"retainOnDelete": "must be true or false, got 'false', text because of its quotes"},
        ),
        (
            OperatorSizing,
            {"eventBusSidecarEnabled": "false"},
            {"eventBusSidecarEnabled": "must be true or false, got 'false', text because of its quotes"},
        ),
        (
            OperatorSizing,
            {"recordProcessorScaleFactor": 2.0},
            {"recordProcessorScaleFactor": "must be a whole number (e.g. recordProcessorScaleFactor: 8), got 2.0"},
        ),
        (
            OperatorSizing,
            {"recordProcessorScaleFactor": True},
            {"recordProcessorScaleFactor": "must be a whole number (e.g. recordProcessorScaleFactor: 8), got true"},
        ),
    ],
)
def test_job_and_sweep_numbers_and_switches_are_strict(
    model: type[BaseModel], data: dict[str, Any], expected: dict[str, str]
) -> None:
    assert problems(model, data) == expected


def test_strict_fields_still_take_their_own_type() -> None:
    parsed = Sweep.model_validate(sweep(concurrency=[1, 8], requestsPerConcurrency=10, retainOnDelete=False))
    assert (parsed.concurrency, parsed.requests_per_concurrency, parsed.retain_on_delete) == ([1, 8], 10, False)
    sizing = OperatorSizing.model_validate({"eventBusSidecarEnabled": False, "recordProcessorScaleFactor": 4})
    assert (sizing.event_bus_sidecar_enabled, sizing.record_processor_scale_factor) == (False, 4)


#: What ``plan`` should say where a whole ``secure:`` value stands for a list or mapping.
SECURE_ONLY_STRINGS = (
    "is a secure value, but secure values are supported only as single string values (e.g. one header value, "
    "an env value); write {what} here and make only its string values secure"
)


@pytest.mark.parametrize(
    ("where", "path", "what"),
    [
        ((), "jobs", "a list"),
        (("spec", "benchmark", "endpoint", "headers"), "jobs[0].spec.benchmark.endpoint.headers", "a mapping"),
        (("spec", "benchmark", "endpoint"), "jobs[0].spec.benchmark.endpoint", "a mapping"),
        (("spec", "benchmark", "phases"), "jobs[0].spec.benchmark.phases", "a list"),
    ],
)
def test_secure_value_where_a_list_or_mapping_is_expected(
    tmp_path: Any, where: tuple[str, ...], path: str, what: str
) -> None:
    job: dict[str, Any] = {"name": "j1", "namespace": "bench", "spec": base()}
    jobs: Any = [job]
    if where:
        parent = job
        for key in where[:-1]:
            parent = parent[key]
        parent[where[-1]] = {"secure": "v1:AAAA"}
    else:
        jobs = {"secure": "v1:AAAA"}
    pools = [{"name": "cpu", "nodes": 1, "cpu": "8", "memory": "32Gi"}]
    queues = {"clusterQueues": [{"name": "a", "share": 100, "namespaces": [{"name": "bench"}]}]}
    config = {"aiperf-kueue:inventory": {"pools": pools}, "aiperf-kueue:queues": queues, "aiperf-kueue:jobs": jobs}
    stack = tmp_path / "Pulumi.test.yaml"
    stack.write_text(yaml.safe_dump({"config": config}))
    values, _ = read_stack_file(stack)
    with pytest.raises(ConfigError) as raised:
        parse_config(values, "Pulumi.test.yaml")
    named = "" if path == "jobs" else "j1: "
    assert raised.value.lines() == [
        f"Pulumi.test.yaml: aiperf-kueue:{path}: {named}{SECURE_ONLY_STRINGS.format(what=what)}"
    ]


def test_duplicate_jobs() -> None:
    jobs = [Job.model_validate({"name": "latency-sweep-c8", "namespace": "bench", "spec": base()})]
    sweeps = [Sweep.model_validate(sweep()), Sweep.model_validate(sweep(namespace="other"))]
    with pytest.raises(ConfigError) as info:
        expand_sweeps(jobs, sweeps, "Pulumi.dev.yaml")
    assert info.value.lines() == [
        "Pulumi.dev.yaml: aiperf-kueue:sweeps[0]: AIPerfJob bench/latency-sweep-c8 (sweep 'latency-sweep') is "
        "already declared by jobs[0]"
    ]


def test_operator_sizing_defaults() -> None:
    sizing = OperatorSizing.model_validate({})
    assert (sizing.worker_pod, sizing.controller, sizing.sweep_controller) == (None, {}, None)
    assert problems(OperatorSizing, {"preset": "newest"}) == {"preset": "unknown key 'preset'"}


# --------------------------------------------------------------------------- the reference CRD


@pytest.fixture(scope="module")
def crd() -> Any:
    path = require_shared("aiperf", "aiperfjobs.aiperf.nvidia.com.crd.yaml")
    return load_crd(path, "08ec5fdf")[0]


def crd_findings(crd: Any, spec: dict[str, Any]) -> list[str]:
    obj = {
        "apiVersion": crd.api_version,
        "kind": "AIPerfJob",
        "metadata": {"name": "a", "namespace": "b"},
        "spec": spec,
    }
    # The CRD's root schema does not list apiVersion/kind; only findings under spec matter.
    return [f"{f.path}: {f.message}" for f in validate(obj, crd).findings if f.path.startswith("spec")]


def test_accepted_specs_pass_the_crd(crd: Any) -> None:
    for data in (RICH, base(), MINIMAL):
        entry = JobEntry("a", "b", None, None, AIPerfJobSpec.model_validate(copy.deepcopy(data)), ("jobs", 0))
        assert crd_findings(crd, entry.manifest_spec("q")) == []


@pytest.mark.parametrize(
    "data",
    [
        base(resourceMode="fast"),
        base(connectionsPerWorker=0),
        base(timeoutSeconds="1h"),
        base(foo=1),
        base(sweep={"type": "grid"}),
        base(multiRun={"numRuns": 3}),
        with_benchmark(datasets=[{"name": "a"}, {"name": "b"}]),
        with_benchmark(endpoint={"urls": URLS, "type": "template"}),
        with_benchmark(endpoint={"urls": URLS, "path": "v1"}),
        with_benchmark(runtime={"apiHost": "0.0.0.0"}),
        with_benchmark(runtime={"workers": 4, "workersMin": 8}),
        with_benchmark(runtime={"workersPerPod": 101}),
        with_benchmark(metrics={"anything": 1}),
    ],
)
def test_rejected_specs_fail_the_crd_too(crd: Any, data: dict[str, Any]) -> None:
    assert problems(AIPerfJobSpec, data)
    assert crd_findings(crd, data)


def test_communication_plot_and_shorthand_phases_take_the_releases_values() -> None:
    """The sections AIPerf 0.13.0 types and the program once kept free-form: each bad value is
    named at its key (the oracle tests compare acceptance with the release itself)."""
    def runtime(communication: Any) -> dict[str, Any]:
        return with_benchmark(runtime={"communication": communication})

    assert problems(AIPerfJobSpec, runtime({"type": "dual", "recordsPort": 5557, "controllerHost": "c"})) == {}
    assert problems(AIPerfJobSpec, runtime({"type": "IPC"})) == {
        "benchmark.runtime.communication": "type must be one of ipc, tcp, dual (lower case), got type 'IPC'"
    }
    assert problems(AIPerfJobSpec, runtime({"type": "ipc", "host": "h"})) == {
        "benchmark.runtime.communication": "unknown key 'host' for type ipc"
    }
    assert problems(AIPerfJobSpec, runtime({"type": "tcp", "recordsPort": 0})) == {
        "benchmark.runtime.communication.recordsPort": "must be >= 1, got 0"
    }
    assert problems(AIPerfJobSpec, runtime({"type": "tcp", "eventBusProxy": {"frontendPort": 1}})) == {
        "benchmark.runtime.communication.eventBusProxy.backendPort": "required, but not set"
    }
    assert problems(AIPerfJobSpec, base(plot={})) == {"plot.visualization": "required, but not set"}
    assert problems(AIPerfJobSpec, base(plot="plot.yaml")) == {
        "plot": "must be an inline mapping (visualization, settings, experimentClassification), got the path "
        "'plot.yaml': AIPerf would read it from the operator's own file system, where the stack's files are "
        "not; inline the plot YAML here"
    }
    assert problems(AIPerfJobSpec, base(plot={"visualization": {"singleRunDefaults": ["ttft"]}})) == {
        "plot.visualization": "singleRunDefaults names 'ttft', which singleRunPlots does not define; defined: none"
    }
    downsampling = {"visualization": {}, "settings": {"serverMetricsDownsampling": {"aggregationMethod": "sum"}}}
    assert problems(AIPerfJobSpec, base(plot=downsampling)) == {
        "plot.settings.serverMetricsDownsampling.aggregationMethod": (
            "must be one of 'mean', 'max', 'min' or 'median', got 'sum'"
        )
    }
    assert problems(AIPerfJobSpec, base(variables=[1])) == {"variables": "must be a mapping, got a list of 1 item (1)"}
    shorthand = with_benchmark(phases=None, profiling={"type": "concurrency", "concurrency": 0, "requests": 1})
    assert problems(AIPerfJobSpec, shorthand) == {"benchmark.profiling.concurrency": "must be >= 1, got 0"}
    shorthand = with_benchmark(phases=None, profiling={"type": "concurrency", "requests": 1})
    shorthand["benchmark"]["warmup"] = None  # the release's normalizer makes it phases[0], not a mapping
    assert problems(AIPerfJobSpec, shorthand) == {
        "benchmark.warmup": "must be a phase mapping (e.g. {type: concurrency, concurrency: 8}), got null"
    }
