"""Config models of ``aiperf-kueue:jobs`` / ``sweeps``: the typed AIPerfJob spec, its CRD rules, sweeps.

Messages are checked as the loader shows them (``aiperf_kueue.loader._problem``). Where the
AIPerf reference CRD is available (``../shared/reference/aiperf``), the models are also
compared with it: same fields, required keys and enums per closed object, and specs the
models accept (reject) are accepted (rejected) by the CRD's schema and CEL rules.
"""

from __future__ import annotations

import copy
import typing
from typing import Annotated, Any

import pytest
import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

from aiperf_kueue.config import jobs as models
from aiperf_kueue.config.jobs import AIPerfJobSpec, Job, JobEntry, OperatorSizing, Sweep, expand_sweeps
from aiperf_kueue.errors import ConfigError
from aiperf_kueue.loader import _problem, parse_config, read_stack_file
from tests.crd_validation import load_crd, validate
from tests.support import require_shared

URLS = ["http://llm.serving:8000"]


def base(**fields: Any) -> dict[str, Any]:
    phases = [
        {"name": "warmup", "type": "concurrency", "concurrency": 4, "requests": 20},
        {"name": "profiling", "type": "concurrency", "concurrency": 8, "requests": 100},
    ]
    return {"benchmark": {"endpoint": {"urls": URLS, "type": "chat"}, "phases": phases}, **fields}


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
    data = base()
    data["benchmark"].update(benchmark)
    return data


#: A spec using many CRD fields, open and closed; it must pass through unchanged.
RICH: dict[str, Any] = {
    "image": "nvcr.io/nvidia/aiperf:0.8.0",
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
    "plot": {"anything": True},
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
            "apiKey": "${OPENAI_API_KEY}",
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
                "prefill_concurrency": 16,
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


def test_minimal_spec() -> None:
    assert AIPerfJobSpec.model_validate({"benchmark": {"endpoint": {"urls": "http://x"}}}).manifest() == {
        "benchmark": {"endpoint": {"urls": "http://x"}}
    }


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
            {"benchmark.endpoint.urls": "must be a URL or a non-empty list of URLs, got []"},
        ),
        (
            with_benchmark(endpoint={"urls": URLS, "type": "template"}),
            {"benchmark.endpoint": "endpoint.template is required when endpoint.type='template'"},
        ),
        (
            with_benchmark(artifacts={"userFiles": [{"path": "a"}]}),
            {"benchmark.artifacts.userFiles[0].content": "required, but not set"},
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
            with_benchmark(phases=[{"name": "profiling", "concurrency": 0}]),
            {"benchmark.phases[0].concurrency": "must be >= 1, got 0"},
        ),
        (
            with_benchmark(phases=[{"name": "profiling", "concurrency": "{{ c }}"}]),
            {"benchmark.phases[0].concurrency": "must be a whole number (e.g. concurrency: 8), got '{{ c }}'"},
        ),
        (
            with_benchmark(phases=[{"name": "1st"}]),
            {
                "benchmark.phases[0].name": "must start with a letter or '_' and use only letters, digits, '_' "
                "and '-', got '1st'"
            },
        ),
        (
            with_benchmark(phases=[{"name": "p"}, {"name": "p"}]),
            {"benchmark.phases": "phase names must be unique, 'p' repeats"},
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
            {"sweep": "AIPerfJob.spec.sweep must be null/omitted; declare a concurrency sweep in aiperf-kueue:sweeps"},
        ),
        (
            base(multiRun={"numRuns": 3}),
            {
                "": "AIPerfJob.spec.multiRun must describe one run without convergence (numRuns <= 1, no convergence); "
                "use kind AIPerfSweep for multi-run orchestration"
            },
        ),
        (
            with_benchmark(endpoint={"urls": URLS, "type": "chat", "template": {"body": "{}"}}),
            {
                "benchmark.endpoint": "endpoint.template is only used when endpoint.type='template' (omit type to "
                "have it inferred)"
            },
        ),
        (
            with_benchmark(endpoint={"urls": URLS, "type": "chat", "requestContentType": "multipart/form-data"}),
            {
                "benchmark.endpoint": "requestContentType='multipart/form-data' is only supported on endpoint types "
                "that accept form data: audio_transcription, image_edit, video_generation"
            },
        ),
        (
            with_benchmark(endpoint={"urls": URLS, "path": "v1/chat/completions"}),
            {
                "benchmark.endpoint": "endpoint.path must start with '/' (e.g. '/v1/chat/completions', not "
                "'v1/chat/completions')"
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
                "podTemplate.extraPodSpec": "may not set containers, hostNetwork (security-critical or operator-owned "
                "PodSpec keys; the operator rejects them)"
            },
        ),
        (
            with_benchmark(profiling={"type": "concurrency", "concurrency": 1500}),
            {
                "benchmark.profiling": "the operator sizes workers from benchmark.phases only, so a profiling "
                "shorthand would get one worker whatever its concurrency; write it as a phases entry: phases: "
                "[{name: profiling, ...}]"
            },
        ),
        (
            with_benchmark(model="m", models=["m"]),
            {"benchmark": "set models or its shorthand model, not both"},
        ),
        (
            with_benchmark(runtime={"serviceRunType": "kubernetes"}),
            {"benchmark.runtime.serviceRunType": "is operator-managed for every AIPerfJob; do not set it in the spec"},
        ),
        (
            with_benchmark(runtime={"workers": "auto"}),
            {
                "benchmark.runtime.workers": "must be a number: the worker count decides the pods Kueue admits, so it "
                "cannot be templated or left to auto-detection here, got 'auto'"
            },
        ),
        (
            with_benchmark(gpuTelemetry={"enabled": "no"}),
            {"benchmark.gpuTelemetry": "enabled must be true or false, got 'no'"},
        ),
        (
            base(podTemplate={"env": [{"name": "AIPERF_K8S_RECORD_PROCESSOR_CPU_REQUEST", "value": "lots"}]}),
            {"podTemplate.env": "env[0] AIPERF_K8S_RECORD_PROCESSOR_CPU_REQUEST must be a CPU quantity, got 'lots'"},
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
    # Open objects keep unknown keys, snake_case included.
    kept = with_benchmark(gpuTelemetry={"enabled": True, "collector": "pynvml"}, networkLatency={"x": 1})
    kept["benchmark"]["phases"][1]["prefill_concurrency"] = 4
    assert AIPerfJobSpec.model_validate(copy.deepcopy(kept)).manifest() == kept


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a" * 35, {}),
        ("a" * 36, {"name": f"must be at most 35 characters (AIPerf job-id limit), got 36 ('{'a' * 36}')"}),
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
    phases = [{"name": "steady", "kind": "profiling", "type": "concurrency"}, {"name": "burst", "kind": "profiling"}]
    by_kind = sweep(spec=with_benchmark(phases=phases[:1]))
    assert Sweep.model_validate(by_kind).point_spec(8).manifest()["benchmark"]["phases"] == [
        {"name": "steady", "kind": "profiling", "type": "concurrency", "concurrency": 8}
    ]
    explicit = sweep(spec=with_benchmark(phases=phases), phase="burst")
    assert Sweep.model_validate(explicit).point_spec(8).manifest()["benchmark"]["phases"][1] == {
        "name": "burst",
        "kind": "profiling",
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
    name = "x" * 31  # + "-c128" = 36
    assert problems(Sweep, sweep(name=name)) == {
        "": f"sweep '{name}' generates job name '{name}-c128' (36 characters); AIPerf job names are at most 35 "
        "characters: shorten the sweep name to at most 30 characters"
    }
    assert problems(Sweep, sweep(name="x" * 30)) == {}


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
    "endpoint.apiKey, an env value); write {what} here and make only its string values secure"
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
    assert (sizing.preset, sizing.worker_pod, sizing.controller) == ("newest", None, {})
    assert problems(OperatorSizing, {"preset": "latest"}) == {
        "preset": "must be one of 'newest', 'docs' or 'legacy-86577339', got 'latest'"
    }


# --------------------------------------------------------------------------- the reference CRD

#: Closed objects of the CRD spec → the model that mirrors each.
CLOSED = {
    "": AIPerfJobSpec,
    "benchmark": models.Benchmark,
    "benchmark.endpoint": models.Endpoint,
    "benchmark.endpoint.template": models.EndpointTemplate,
    "benchmark.endpoint.resetKvCache": models.ResetKvCache,
    "benchmark.endpoint.serverProfiler": models.ServerProfiler,
    "benchmark.artifacts": models.Artifacts,
    "benchmark.artifacts.userFiles[]": models.UserFile,
    "benchmark.tokenizer": models.Tokenizer,
    "benchmark.otel": models.Otel,
    "benchmark.mlflow": models.Mlflow,
    "benchmark.wandb": models.Wandb,
    "benchmark.runtime": models.Runtime,
    "benchmark.logging": models.Logging,
    "benchmark.metrics": models.Metrics,
    "benchmark.accuracy": models.Accuracy,
    "podTemplate": models.PodTemplate,
    "scheduling": None,  # forbidden: set from queue / priorityClass
    "multiRun": models.MultiRun,
    "multiRun.convergence": models.Convergence,
    "failurePolicy": models.FailurePolicy,
}


@pytest.fixture(scope="module")
def crd_spec() -> dict[str, Any]:
    path = require_shared("aiperf", "aiperfjobs.aiperf.nvidia.com.crd.yaml")
    doc = yaml.safe_load(path.read_text())
    spec: dict[str, Any] = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return spec


def closed_objects(node: dict[str, Any], path: str = "") -> dict[str, dict[str, Any]]:
    """Every object node with ``properties`` and no preserve-unknown-fields, by path."""
    out: dict[str, dict[str, Any]] = {}
    if node.get("type") == "object" and not node.get("x-kubernetes-preserve-unknown-fields") and "properties" in node:
        out[path] = node
    elif (
        node.get("type") == "object"
        and not node.get("x-kubernetes-preserve-unknown-fields")
        and not node.get("additionalProperties")
    ):
        out[path] = node  # e.g. benchmark.metrics: no fields at all
    for name, sub in node.get("properties", {}).items():
        out.update(closed_objects(sub, f"{path}.{name}" if path else name))
    if isinstance(node.get("items"), dict):
        out.update(closed_objects(node["items"], f"{path}[]"))
    return out


def test_crd_integers_and_booleans_are_strict(crd_spec: dict[str, Any]) -> None:
    """Every field the CRD types integer or boolean rejects what the API server would: true, "1", 1.0, "true"."""
    checked: list[str] = []
    for path, node in closed_objects(crd_spec).items():
        model = CLOSED.get(path)
        if model is None:
            continue
        fields = {f.alias or n: f for n, f in model.model_fields.items()}
        for name, prop in node.get("properties", {}).items():
            kind = prop.get("type")
            if kind not in ("integer", "boolean"):
                continue
            meta = fields[name].metadata  # the bounds (ge, le), without the alias that only a model field takes
            annotation = Annotated[fields[name].annotation, *meta] if meta else fields[name].annotation
            adapter: TypeAdapter[Any] = TypeAdapter(annotation)
            good, bad = (int(prop.get("minimum", 0)), [True, "1", 1.0]) if kind == "integer" else (True, ["true", 1])
            assert adapter.validate_python(good) == good, (path, name)
            for value in bad:
                with pytest.raises(ValidationError):
                    adapter.validate_python(value)
            checked.append(f"{path}.{name}" if path else name)
    assert len(checked) == 39  # 12 integer and 27 boolean fields in crd-aiperfjob.yaml@08ec5fdf


def literal_values(annotation: Any) -> list[Any] | None:
    for arg in typing.get_args(annotation) or (annotation,):
        if typing.get_origin(arg) is typing.Literal:
            return list(typing.get_args(arg))
    return None


def test_models_mirror_every_closed_crd_object(crd_spec: dict[str, Any]) -> None:
    found = closed_objects(crd_spec)
    assert sorted(found) == sorted(CLOSED)
    for path, node in found.items():
        model = CLOSED[path]
        if model is None:
            continue
        fields = {f.alias: f for f in model.model_fields.values()}
        assert sorted(fields) == sorted(node.get("properties", {})), path
        required = sorted(a for a, f in fields.items() if f.is_required())
        assert required == sorted(node.get("required", [])), path
        for name, sub in node.get("properties", {}).items():
            if "enum" in sub:
                assert literal_values(fields[name].annotation) == sub["enum"], f"{path}.{name}"


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
    for data in (RICH, base(), {"benchmark": {"endpoint": {"urls": "http://x"}}}):
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
