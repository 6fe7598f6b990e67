"""Every AIPerfJob the program generates is accepted by the AIPerfJob CRD.

Checked with the schema and CEL rules of the reference CRD in ``../shared/reference/aiperf``
(``aiperfjobs.aiperf.nvidia.com.crd.yaml``, chart ``crd-aiperfjob.yaml@08ec5fdf``) via
:mod:`crd_validation`, for every committed stack (``stacks/Pulumi.*.yaml``) and a stack using
more of the spec:

* the pure path: ``plan_stack`` admits the jobs, ``manifests.aiperf_job`` builds them;
* the program path: the inputs ``run_program`` records for each AIPerfJob resource, with every
  Pulumi secret (``apiKey``, header values) replaced by a realistic string first, as the
  provider would send the decrypted value. Both paths must give the same objects.

The only rules not evaluated are the 19 transition rules (``oldSelf``: immutability), skipped
on create; which ones is asserted, and they are exactly ``AIPERF_JOB_IMMUTABLE``. Negative
tests prove the validator rejects what the API server rejects.
"""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiperf_kueue.cli.engine import run_program
from aiperf_kueue.cli.report import clean
from aiperf_kueue.installs import releases as installs
from aiperf_kueue.plan import manifests
from aiperf_kueue.plan.stack_plan import plan_stack
from aiperf_kueue.stackfile.loader import SECRET_PLACEHOLDER_PATTERN, parse_config, read_stack_file, stack_name_of
from tests import crd_validation as cv
from tests.support import CHECKED_STACK_FILES, SECRET_SIG, SHIPPED_EXAMPLES, require_shared

REPO = Path(__file__).resolve().parents[1]
API_VERSION = "aiperf.nvidia.com/v1alpha1"
JOB_TYPE = f"kubernetes:{API_VERSION}:AIPerfJob"
SECRET_MARK = "1b47061264138c4ac30d75fd1eb44270"
#: What a secret stands for during validation when its plaintext is not at hand (``secure:``
#: config is redacted to its "[encrypted 1a2b3c4d]" placeholder before the program sees it).
STAND_IN_KEY = "sk-aiperf-0c1d2e3f4a5b6c7d8e9f"
IMMUTABLE_MESSAGE = "spec.{} is immutable after creation; create a new AIPerfJob to change it"


@pytest.fixture(scope="module")
def crd() -> cv.CrdVersion:
    if not cv.AIPERF_JOB_CRD.is_file():
        # The one way to read it: where it is absent on purpose (AIPERF_KUEUE_REFERENCE=absent) this skips.
        require_shared("aiperf", cv.AIPERF_JOB_CRD.name)
    (version,) = cv.load_crd(cv.AIPERF_JOB_CRD, "08ec5fdf")
    return version


# --------------------------------------------------------------------------- helpers


def builder_jobs(values: dict[str, Any], source: str = "test") -> list[dict[str, Any]]:
    """The AIPerfJobs of a stack from the pure path, in config order."""
    config = parse_config(values, source)
    plan = plan_stack(config, source, REPO)
    image = installs.operator_image(config.operator)
    return [manifests.aiperf_job(a, image, config.operator.default_priority_class) for a in plan.jobs.admissions]


def unwrap_secrets(value: Any, path: str = "", found: list[str] | None = None) -> tuple[Any, list[str]]:
    """Every Pulumi secret replaced by its plaintext, or by :data:`STAND_IN_KEY` where the plaintext
    is the redaction placeholder; also the paths replaced."""
    found = [] if found is None else found
    if isinstance(value, dict):
        if value.get(SECRET_SIG) == SECRET_MARK:
            inner = value["value"]
            assert isinstance(inner, str), f"{path}: a secret that is not a string: {inner!r}"
            found.append(path)
            return (STAND_IN_KEY if SECRET_PLACEHOLDER_PATTERN.fullmatch(inner) else inner), found
        return {k: unwrap_secrets(v, f"{path}.{k}" if path else k, found)[0] for k, v in value.items()}, found
    if isinstance(value, list):
        return [unwrap_secrets(v, f"{path}[{i}]", found)[0] for i, v in enumerate(value)], found
    return value, found


def recorded_jobs(stack: str, values: dict[str, Any], secret_keys: set[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """The AIPerfJobs the program registers (secrets unwrapped, floats made ints), and where secrets were."""
    run = run_program(stack, values, secret_keys)
    objs: list[dict[str, Any]] = []
    secrets: list[str] = []
    for record in run.resources:
        if record["type"] != JOB_TYPE:
            continue
        inputs, found = unwrap_secrets(record["inputs"])
        objs.append(clean(inputs))
        name = f"{inputs['metadata']['namespace']}/{inputs['metadata']['name']}"
        secrets += [f"{name} {p}" for p in found]
    return objs, secrets


def ident(obj: dict[str, Any]) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


def conform(objs: list[dict[str, Any]], crd: cv.CrdVersion) -> tuple[int, int]:
    """Assert every object is accepted; (objects, CEL rule evaluations)."""
    transition = [cv.Skip("spec", r.rule, cv.TRANSITION) for r in crd.rules if r.transition]
    evaluated = 0
    for obj in objs:
        result = cv.validate(obj, crd)
        assert [(f.path, f.check, f.message) for f in result.findings] == [], ident(obj)
        assert result.skipped == transition, ident(obj)
        evaluated += len(result.evaluated)
    return len(objs), evaluated


# --------------------------------------------------------------------------- the reference CRD


def test_crd_rule_inventory(crd: cv.CrdVersion) -> None:
    """28 rules: 19 transition rules (one per immutable spec field, all on ``spec``), 9 evaluated
    on create; cel-python compiles those and provides every function they call."""
    assert crd.label == "08ec5fdf aiperf.nvidia.com/v1alpha1 AIPerfJob"
    assert crd.namespaced
    assert Counter((r.schema_path, r.transition) for r in crd.rules) == {
        (".spec", True): 19,
        (".spec", False): 2,
        (".spec.benchmark.endpoint", False): 4,
        (".spec.benchmark.runtime", False): 2,
        (".spec.multiRun", False): 1,
    }
    transition = [r.message for r in crd.rules if r.transition]
    assert transition == [IMMUTABLE_MESSAGE.format(f) for f in manifests.AIPERF_JOB_IMMUTABLE]
    for rule in crd.rules:
        assert rule.unsupported_functions == frozenset(), rule.rule
        if not rule.transition:
            cv.compile_rule(rule.rule)


def test_immutable_fields_are_every_spec_field_but_cancel_and_timeout(crd: cv.CrdVersion) -> None:
    spec_fields = set(crd.schema["properties"]["spec"]["properties"])
    assert spec_fields - set(manifests.AIPERF_JOB_IMMUTABLE) == {"cancel", "timeoutSeconds"}
    assert set(manifests.AIPERF_JOB_IMMUTABLE) <= spec_fields
    assert len(manifests.AIPERF_JOB_IMMUTABLE) == len(set(manifests.AIPERF_JOB_IMMUTABLE)) == 19


# --------------------------------------------------------------------------- committed stacks

#: Shipped example → AIPerfJobs it declares (``<name>-<digest of the spec>``), and the CEL rule
#: evaluations over them (the two spec rules and the four endpoint rules per job; the stacks set no
#: runtime or multiRun). Other stacks in stacks/ are checked to conform, without expected figures.
COMMITTED = {
    "dev": (["aiperf-benchmarks/smoke-42740b"], 6),
    "prod": (
        [
            "bench-research/llama-sweep-c1-1f564c",
            "bench-research/llama-sweep-c1024-d5893e",
            "bench-research/llama-sweep-c128-dc9a2c",
            "bench-research/llama-sweep-c32-435319",
            "bench-research/llama-sweep-c8-c0b718",
            "bench-team-a/llama-latency-7b5e06",
        ],
        36,
    ),
}


#: Stack → the Pulumi secrets among its AIPerfJobs' inputs.
#: Header values are always registered as secrets; prod's llama-latency sends an X-Team header.
SECRETS: dict[str, list[str]] = {
    "dev": [],
    "prod": ["bench-team-a/llama-latency-7b5e06 spec.benchmark.endpoint.headers.X-Team"],
}


def test_every_shipped_example_has_expected_figures() -> None:
    assert sorted(COMMITTED) == sorted(SECRETS) == sorted(SHIPPED_EXAMPLES)


@pytest.mark.parametrize("stack", CHECKED_STACK_FILES, ids=stack_name_of)
def test_builder_jobs_conform(stack: Path, crd: cv.CrdVersion) -> None:
    values, _ = read_stack_file(stack)
    objs = builder_jobs(values, str(stack))
    checked = conform(objs, crd)
    if stack_name_of(stack) in COMMITTED:
        names, evaluated = COMMITTED[stack_name_of(stack)]
        assert sorted(ident(o) for o in objs) == names
        assert checked == (len(names), evaluated)


@pytest.mark.parametrize("stack", CHECKED_STACK_FILES, ids=stack_name_of)
def test_program_registers_conforming_jobs(stack: Path, crd: cv.CrdVersion) -> None:
    values, secret_keys = read_stack_file(stack)
    recorded, secrets = recorded_jobs(stack_name_of(stack), copy.deepcopy(values), secret_keys)
    checked = conform(recorded, crd)
    # The run registers exactly what the builders make (the secret unwrapped to its plaintext).
    built = {ident(o): o for o in builder_jobs(values, str(stack))}
    assert {ident(o): o for o in recorded} == built
    if stack_name_of(stack) in COMMITTED:
        names, evaluated = COMMITTED[stack_name_of(stack)]
        assert sorted(ident(o) for o in recorded) == names
        assert checked == (len(names), evaluated)
        assert secrets == SECRETS[stack_name_of(stack)]


# --------------------------------------------------------------------------- more of the spec

#: A job using most spec fields the CRD checks with rules or closed objects; one header value comes
#: from ``secure:`` config, so the program sees only the redaction placeholder. Its credentials come
#: from Secrets, the AIPerf 0.13.0 way: the Authorization header's value is AIPERF_INJECTED_HEADERS.
RICH_JOB: dict[str, Any] = {
    "name": "llama-rich",
    "namespace": "bench-team-b",
    "queue": "aiperf-queue",
    "retainOnDelete": False,
    "spec": {
        "imagePullPolicy": "IfNotPresent",
        "resourceMode": "guaranteed",
        "connectionsPerWorker": 50,
        "timeoutSeconds": 7200,
        "ttlSecondsAfterFinished": 600,
        "resultsTtlDays": 14,
        "keepFailedPods": True,
        "cancel": False,
        "schemaVersion": "2.0",
        "randomSeed": 7,
        "noSweepTable": True,
        "skipEndpointCheck": False,
        "multiRun": {"numRuns": 1, "cooldownSeconds": 0.5, "confidenceLevel": 0.9},
        "failurePolicy": {"onChildFailure": "abort", "maxFailures": 0},
        "variables": {"isl": 512, "nested": {"any": ["thing"]}},
        "plot": {
            "visualization": {"singleRunDefaults": ["ttft"], "singleRunPlots": {"ttft": {"type": "scatter"}}},
            "settings": {"serverMetricsDownsampling": {"windowSizeSeconds": 10, "aggregationMethod": "max"}},
        },
        "podTemplate": {
            "env": [
                {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
                {"name": "AIPERF_INJECTED_HEADERS", "valueFrom": {"secretKeyRef": {"name": "llm", "key": "headers"}}},
            ],
            "nodeSelector": {"node-pool": "cpu"},
            "imagePullSecrets": [{"name": "ngc"}],
            "terminationGracePeriodSeconds": 30,
        },
        "benchmark": {
            "models": ["meta-llama/Llama-3.1-8B-Instruct"],
            "endpoint": {
                "urls": ["http://llama.inference.svc:8000", "http://llama-2.inference.svc:8000"],
                "urlStrategy": "round_robin",
                "type": "chat",
                "path": "/v1/chat/completions",
                "streaming": True,
                "headers": {"X-Team": {"secure": "v1:cmljaC1oZWFkZXItY2lwaGVydGV4dA=="}, "Authorization": "<redacted>"},
                "extra": {"ignore_eos": True},
                "waitForModelTimeout": 600,
                "resetKvCache": {"timeoutSeconds": 5, "path": "/reset_prefix_cache"},
            },
            "datasets": [{"name": "main", "type": "synthetic", "isl": {"mean": 512}}],
            "phases": [
                {"name": "warmup", "type": "concurrency", "concurrency": 8, "requests": 40},
                {"name": "profiling", "type": "concurrency", "concurrency": 200, "requests": 4000},
            ],
            "artifacts": {"prefix": "rich", "userFiles": [{"path": "meta.json", "format": "json", "content": {}}]},
            "slos": {"ttft": 250, "itl": 12.5},
            "tokenizer": {"name": "builtin"},
            "gpuTelemetry": {"enabled": False},
            "runtime": {
                "workers": 4,
                "workersMin": 2,
                "workersPerPod": 2,
                "recordProcessorsPerPod": 1,
                "communication": {"type": "dual", "recordsPort": 5557},
            },
            "logging": {"level": "DEBUG"},
        },
    },
}


#: The rich job's AIPerfJob: its name and the digest of its spec (the secure value as its placeholder).
RICH = "llama-rich-974b3b"


def rich_stack(tmp_path: Path) -> Path:
    """prod plus :data:`RICH_JOB`, written as a stack file with ``secure:`` values."""
    document = yaml.safe_load((REPO / "stacks" / "Pulumi.prod.yaml").read_text())
    document["config"]["aiperf-kueue:jobs"].append(copy.deepcopy(RICH_JOB))
    path = tmp_path / "Pulumi.rich.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def test_a_job_using_more_of_the_spec_conforms_on_both_paths(tmp_path: Path, crd: cv.CrdVersion) -> None:
    path = rich_stack(tmp_path)
    values, secret_keys = read_stack_file(path)
    assert secret_keys == {"jobs"}
    built = {ident(o): o for o in builder_jobs(values, str(path))}
    recorded, secrets = recorded_jobs("rich", copy.deepcopy(values), secret_keys)
    # Per job: 2 spec + 4 endpoint rules; the rich job adds 2 runtime and 1 multiRun rule.
    assert conform(list(built.values()), crd) == (7, 45)
    assert conform(recorded, crd) == (7, 45)
    # Header values are always kept secret (the program cannot tell a credential's from another's).
    assert sorted(secrets) == [
        "bench-team-a/llama-latency-7b5e06 spec.benchmark.endpoint.headers.X-Team",
        f"bench-team-b/{RICH} spec.benchmark.endpoint.headers.Authorization",
        f"bench-team-b/{RICH} spec.benchmark.endpoint.headers.X-Team",
    ]
    rich = {ident(o): o for o in recorded}[f"bench-team-b/{RICH}"]
    assert rich["spec"]["benchmark"]["endpoint"]["headers"] == {"X-Team": STAND_IN_KEY, "Authorization": "<redacted>"}
    # Apart from the stand-in, the registered job is the built one.
    endpoint = built[f"bench-team-b/{RICH}"]["spec"]["benchmark"]["endpoint"]
    assert endpoint["headers"] == {"X-Team": "[encrypted 702dec33]", "Authorization": "<redacted>"}
    endpoint.update(headers={"X-Team": STAND_IN_KEY, "Authorization": "<redacted>"})
    assert {ident(o): o for o in recorded} == built


# --------------------------------------------------------------------------- the validator rejects


def job(**spec: Any) -> dict[str, Any]:
    """A minimal valid AIPerfJob, as the builder writes it, with ``spec`` fields overridden."""
    base: dict[str, Any] = {
        "image": "nvcr.io/nvidia/aiperf:0.13.0",
        "scheduling": {"queueName": "aiperf-queue", "priorityClass": "benchmark-high"},
        "benchmark": {
            "models": ["meta-llama/Llama-3.1-8B-Instruct"],
            "endpoint": {"urls": ["http://llama.inference.svc:8000"], "type": "chat"},
            "datasets": [{"name": "main", "type": "synthetic"}],
            "phases": [{"name": "profiling", "kind": "profiling", "concurrency": 50, "requests": 2000}],
        },
    }
    return {
        "apiVersion": API_VERSION,
        "kind": "AIPerfJob",
        "metadata": {"name": "llama-latency", "namespace": "bench-team-a", "labels": {"aiperf-kueue/x": "y"}},
        "spec": {**base, **spec},
    }


def with_benchmark(**fields: Any) -> dict[str, Any]:
    obj = job()
    obj["spec"]["benchmark"].update(fields)
    return obj


def with_endpoint(**fields: Any) -> dict[str, Any]:
    obj = job()
    obj["spec"]["benchmark"]["endpoint"].update(fields)
    return obj


def findings(obj: dict[str, Any], crd: cv.CrdVersion) -> list[tuple[str, str, str]]:
    return [(f.path, f.check, f.message) for f in cv.validate(obj, crd).findings]


def test_baseline_is_valid_and_defaults_apply(crd: cv.CrdVersion) -> None:
    result = cv.validate(job(), crd)
    assert result.findings == []
    assert result.evaluated == [
        ("spec", "!has(self.sweep)"),
        (
            "spec",
            "!has(self.multiRun) || ((!has(self.multiRun.numRuns) || self.multiRun.numRuns <= 1) && "
            "!has(self.multiRun.convergence))",
        ),
        ("spec.benchmark.endpoint", "!has(self.type) || self.type != 'template' || has(self.template)"),
        ("spec.benchmark.endpoint", "!has(self.template) || !has(self.type) || self.type == 'template'"),
        (
            "spec.benchmark.endpoint",
            "!has(self.requestContentType) || self.requestContentType != 'multipart/form-data' || "
            "!has(self.type) || self.type in ['audio_transcription', 'image_edit', 'video_generation']",
        ),
        ("spec.benchmark.endpoint", "!has(self.path) || self.path.startsWith('/')"),
    ]
    assert [s.rule.split(")", 1)[0] for s in result.skipped] == [
        f"has(oldSelf.{f}" for f in manifests.AIPERF_JOB_IMMUTABLE
    ]
    # Open (preserve-unknown-fields) nodes keep anything; int-or-string takes both.
    anything = with_benchmark(
        models={"advanced": [{"name": "m", "weight": 2}]},
        datasets=[{"name": "main", "type": "file", "whatever": {"deep": [1, 2]}}],
        gpuTelemetry="http://dcgm:9400/metrics",
        runtime={"workers": "4", "apiPort": 9000, "apiHost": "0.0.0.0", "workersMin": 2},
    )
    anything["spec"]["variables"] = {"any": {"nested": True}}
    assert findings(anything, crd) == []


SWEEP_MESSAGE = "AIPerfJob.spec.sweep must be null/omitted. Use kind: AIPerfSweep for parameter sweeps."
MULTI_RUN_MESSAGE = (
    "AIPerfJob.spec.multiRun must describe one run without convergence. Use kind: AIPerfSweep for multi-run "
    "orchestration."
)
MIN_RUNS_MESSAGE = (
    "multiRun.convergence.minRuns must be <= multiRun.numRuns; either lower minRuns or raise numRuns (rule is false)"
)


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(job(sweep={"type": "grid"}), [("spec", "cel", f"{SWEEP_MESSAGE} (rule is false)")], id="sweep"),
        pytest.param(
            job(resourceMode="fast"),
            [("spec.resourceMode", "schema", "'fast' is not one of ['guaranteed', 'burstable', 'none']")],
            id="resource-mode",
        ),
        pytest.param(
            job(multiRun={"numRuns": 3}), [("spec", "cel", f"{MULTI_RUN_MESSAGE} (rule is false)")], id="multi-run"
        ),
        pytest.param(
            job(multiRun={"convergence": {"metric": "ttft"}}),
            # Defaults first: minRuns 2 > numRuns 1 fails the multiRun rule as well.
            [("spec", "cel", f"{MULTI_RUN_MESSAGE} (rule is false)"), ("spec.multiRun", "cel", MIN_RUNS_MESSAGE)],
            id="convergence",
        ),
        pytest.param(
            job(connectionsPerWorker=0),
            [("spec.connectionsPerWorker", "schema", "0 is less than the minimum of 1")],
            id="connections-per-worker",
        ),
        pytest.param(
            job(multiRun={"confidenceLevel": 1}),
            [("spec.multiRun.confidenceLevel", "schema", "1 is greater than or equal to the maximum of 1")],
            id="exclusive-maximum",
        ),
        pytest.param(
            job(schemaVersion="3.0"),
            [("spec.schemaVersion", "schema", "'3.0' is not one of ['2.0']")],
            id="schema-version",
        ),
        pytest.param(job(image=""), [("spec.image", "schema", "'' should be non-empty")], id="empty-image"),
        pytest.param(
            job(cancel="yes"), [("spec.cancel", "schema", "'yes' is not of type 'boolean'")], id="cancel-string"
        ),
        pytest.param(
            job(scheduling={"queueName": "aiperf-queue", "priority": "high"}),
            [("spec.scheduling", "schema", "Additional properties are not allowed ('priority' was unexpected)")],
            id="scheduling-unknown-key",
        ),
        pytest.param(
            with_benchmark(datasets=[{"name": "a"}, {"name": "b"}]),
            [("spec.benchmark.datasets", "schema", "[{'name': 'a'}, {'name': 'b'}] is too long")],
            id="two-datasets",
        ),
        pytest.param(
            with_benchmark(phases=[]), [("spec.benchmark.phases", "schema", "[] should be non-empty")], id="no-phases"
        ),
        pytest.param(
            with_benchmark(metrics={"anything": 1}),
            [("spec.benchmark.metrics", "schema", "Additional properties are not allowed ('anything' was unexpected)")],
            id="metrics-closed",
        ),
        pytest.param(
            with_benchmark(slos={"ttft": "fast"}),
            [("spec.benchmark.slos.ttft", "schema", "'fast' is not of type 'number'")],
            id="slos-map-of-numbers",
        ),
        pytest.param(
            with_benchmark(runtime={"workers": 1.5}),
            [("spec.benchmark.runtime.workers", "schema", "1.5 is not valid under any of the given schemas")],
            id="int-or-string",
        ),
        pytest.param(
            with_benchmark(runtime={"workersPerPod": 101}),
            [("spec.benchmark.runtime.workersPerPod", "schema", "101 is greater than the maximum of 100")],
            id="workers-per-pod",
        ),
        pytest.param(
            with_benchmark(runtime={"workers": 4, "workersMin": "8"}),
            [("spec.benchmark.runtime", "cel", "runtime.workersMin must be <= runtime.workers (rule is false)")],
            id="workers-min",
        ),
        pytest.param(
            with_benchmark(runtime={"apiHost": "0.0.0.0"}),
            [("spec.benchmark.runtime", "cel", "runtime.apiHost requires runtime.apiPort to be set (rule is false)")],
            id="api-host",
        ),
        pytest.param(
            with_endpoint(url="http://llama:8000"),
            [
                (
                    "spec.benchmark.endpoint",
                    "schema",
                    "Additional properties are not allowed ('url' was unexpected)",
                )
            ],
            id="endpoint-unknown-key",
        ),
        pytest.param(
            with_endpoint(path="v1/chat/completions"),
            [
                (
                    "spec.benchmark.endpoint",
                    "cel",
                    "endpoint.path must start with '/' (e.g. '/v1/chat/completions', not 'v1/chat/completions') "
                    "(rule is false)",
                )
            ],
            id="endpoint-path",
        ),
        pytest.param(
            with_endpoint(type="template"),
            [
                (
                    "spec.benchmark.endpoint",
                    "cel",
                    "endpoint.template is required when endpoint.type='template' (rule is false)",
                )
            ],
            id="template-missing",
        ),
        pytest.param(
            with_endpoint(type="chat", requestContentType="multipart/form-data"),
            [
                (
                    "spec.benchmark.endpoint",
                    "cel",
                    "requestContentType='multipart/form-data' is only supported on endpoint types that accept form "
                    "data: audio_transcription, image_edit, video_generation (rule is false)",
                )
            ],
            id="multipart",
        ),
        pytest.param(
            with_endpoint(type="gpt"),
            [
                (
                    "spec.benchmark.endpoint.type",
                    "schema",
                    "'gpt' is not one of ['audio_transcription', 'chat', 'cohere_rankings', 'completions', "
                    "'responses', 'messages', 'chat_embeddings', 'embeddings', 'hf_tei_rankings', "
                    "'huggingface_generate', 'image_generation', 'image_edit', 'video_generation', "
                    "'image_retrieval', 'nim_embeddings', 'nim_rankings', 'solido_rag', 'raw', 'template']",
                )
            ],
            id="endpoint-type",
        ),
    ],
)
def test_rejects(obj: dict[str, Any], expected: list[tuple[str, str, str]], crd: cv.CrdVersion) -> None:
    assert findings(obj, crd) == expected


def test_rejects_missing_required_fields(crd: cv.CrdVersion) -> None:
    no_urls = job()
    del no_urls["spec"]["benchmark"]["endpoint"]["urls"]
    assert findings(no_urls, crd) == [("spec.benchmark.endpoint", "schema", "'urls' is a required property")]
    no_endpoint = job()
    del no_endpoint["spec"]["benchmark"]["endpoint"]
    assert findings(no_endpoint, crd) == [("spec.benchmark", "schema", "'endpoint' is a required property")]
    no_benchmark = job()
    del no_benchmark["spec"]["benchmark"]
    assert findings(no_benchmark, crd) == [("spec", "schema", "'benchmark' is a required property")]
    no_spec = job()
    del no_spec["spec"]
    assert findings(no_spec, crd) == [("", "schema", "'spec' is a required property")]
    no_metric = job(multiRun={"convergence": {"stat": "p99"}})
    assert findings(no_metric, crd) == [
        ("spec.multiRun.convergence", "schema", "'metric' is a required property"),
        ("spec", "cel", f"{MULTI_RUN_MESSAGE} (rule is false)"),
        ("spec.multiRun", "cel", MIN_RUNS_MESSAGE),
    ]


def test_rejects_bad_metadata_and_type(crd: cv.CrdVersion) -> None:
    obj = job()
    del obj["metadata"]["namespace"]
    obj["metadata"]["name"] = "Llama_Latency"
    obj["apiVersion"] = "aiperf.nvidia.com/v1"
    obj["status2"] = {}
    assert findings(obj, crd) == [
        ("", "served", f"aiperf.nvidia.com/v1 AIPerfJob is not {API_VERSION} AIPerfJob"),
        ("metadata.name", "metadata", "must be a DNS-1123 subdomain, got 'Llama_Latency'"),
        ("metadata.namespace", "metadata", "a namespaced object needs a DNS-1123 label namespace, got None"),
        ("", "schema", "Additional properties are not allowed ('status2' was unexpected)"),
    ]


def test_a_secret_left_wrapped_is_rejected(crd: cv.CrdVersion) -> None:
    """Why the program path unwraps secrets first: the wire form is an object, not a string."""
    obj = with_endpoint(apiKey={SECRET_SIG: SECRET_MARK, "value": "sk-live"})
    assert findings(obj, crd) == [
        (
            "spec.benchmark.endpoint.apiKey",
            "schema",
            f"{{'{SECRET_SIG}': '{SECRET_MARK}', 'value': 'sk-live'}} is not of type 'string'",
        )
    ]
    assert findings(unwrap_secrets(obj)[0], crd) == []
