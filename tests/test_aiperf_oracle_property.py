"""Generated stacks: ``plan`` decides every AIPerfJob exactly as the released operator does.

Hypothesis draws jobs and sweeps over the dimensions that decide what the operator builds
(phase concurrencies and types, connectionsPerWorker, workers, workersPerPod, workersMin,
record processors, resourceMode, telemetry on and off, init containers, a pinned
record-processor CPU) and operator sizings. For each, the program plans the stack; every
AIPerfJob goes through AIPerf 0.13.0's ``on_create`` (:mod:`oracle`) with the env the program sets:

- a job ``plan`` admits is created, into a JobSet equal to the plan's prediction;
- a job ``plan`` refuses as the operator would is failed by it with exactly the quoted
  ``status.error``;
- a spec ``plan`` refuses is refused by the operator's own validation, and the other way round.

The budget is small in ``make test`` (``AIPERF_ORACLE_EXAMPLES``, default 25); raise it to search
harder. Hand-written edge cases follow in ``test_edge_case``.
"""

from __future__ import annotations

import copy
import json
import os
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.config.aiperf_spec import AIPerfJobSpec
from aiperf_kueue.installs import operator_objects
from aiperf_kueue.installs import releases as installs
from aiperf_kueue.plan import manifests
from aiperf_kueue.plan.stack_plan import StackPlan, plan_stack
from aiperf_kueue.plan.submit import default_queue
from aiperf_kueue.stackfile.loader import parse_config
from aiperf_kueue.workload.job_shape import predicted_jobset
from tests.oracle import (
    Oracle,
    jobset_view,
    oracle_fixture,  # noqa: F401 (the session fixture `oracle`)
    stack_cluster,
)

EXAMPLES = int(os.environ.get("AIPERF_ORACLE_EXAMPLES", "25"))
NAMESPACE = "bench"

#: Operator sizings the stacks draw from (``operator.sizing``).
SIZINGS: list[dict[str, Any]] = [
    {},
    {"workerPod": {"cpu": "500m", "memory": "1Gi"}},
    {"workerPod": {"cpu": "8", "memory": "16Gi"}, "recordProcessorCpuRequest": "250m"},
    {
        "eventBusSidecarEnabled": False,
        "recordProcessorScaleFactor": 4,
        "controller": {"API": {"cpu": "200m", "memory": "1Gi"}},
    },
]


def stack(sizing: dict[str, Any], jobs: list[dict[str, Any]], sweeps: list[dict[str, Any]]) -> dict[str, Any]:
    """A one-namespace stack on big nodes (so only the operator's own rules can refuse a job)."""
    return {
        "inventory": {"pools": [{"name": "cpu", "nodes": 8, "cpu": "64", "memory": "512Gi"}]},
        "queues": {"clusterQueues": [{"name": "bench", "share": 100, "namespaces": [{"name": NAMESPACE}]}]},
        "operator": {"sizing": sizing},
        "jobs": jobs,
        "sweeps": sweeps,
    }


@st.composite
def phases(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(1, 3))
    out = []
    for i in range(count):
        last = i == count - 1
        name = "profiling" if last else draw(st.sampled_from(["warmup", f"ramp_{i}"]))
        phase: dict[str, Any] = {"name": name, "type": draw(st.sampled_from(["concurrency", "concurrency", "poisson"]))}
        if name.startswith("ramp"):
            phase["kind"] = draw(st.sampled_from(["warmup", "profiling"]))
        if phase["type"] == "poisson":
            phase["rate"] = draw(st.sampled_from([1, 2.5, 40]))
        if phase["type"] == "concurrency" or draw(st.booleans()):
            phase["concurrency"] = draw(st.one_of(st.integers(1, 40), st.integers(40, 2500)))
        phase["requests"] = draw(st.integers(1, 500))
        out.append(phase)
    return out


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    bench: dict[str, Any] = {
        "models": ["m"],
        "endpoint": {"urls": ["http://llm.serving:8000"], "type": "chat"},
        "datasets": [{"name": "main", "type": "synthetic"}],
        "phases": draw(phases()),
    }
    runtime: dict[str, Any] = {}
    for key, values in (
        ("workers", st.integers(1, 45)),
        ("workersPerPod", st.integers(1, 24)),
        ("workersMin", st.integers(1, 30)),
        ("recordProcessorsPerPod", st.integers(1, 12)),
        ("recordProcessors", st.integers(1, 24)),
    ):
        if draw(st.integers(0, 3)) == 0:
            runtime[key] = draw(values)
    if runtime:
        bench["runtime"] = runtime
    for key in ("gpuTelemetry", "serverMetrics"):
        if draw(st.booleans()):
            bench[key] = {"enabled": draw(st.booleans())}
    spec: dict[str, Any] = {"benchmark": bench}
    if draw(st.booleans()):
        spec["resourceMode"] = draw(st.sampled_from(["burstable", "guaranteed", "none"]))
    if draw(st.booleans()):
        spec["connectionsPerWorker"] = draw(st.sampled_from([1, 7, 50, 100, 500]))
    template: dict[str, Any] = {}
    if draw(st.integers(0, 3)) == 0:
        template["initContainers"] = [
            {"name": f"init-{i}", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}
            for i, cpu in enumerate(draw(st.lists(st.sampled_from(["100m", "2", "4500m"]), min_size=1, max_size=2)))
        ]
    if draw(st.integers(0, 4)) == 0:
        value = draw(st.sampled_from(["100m", "2", "0", "1500m"]))
        template["env"] = [{"name": "AIPERF_K8S_RECORD_PROCESSOR_CPU_REQUEST", "value": value}]
    if template:
        spec["podTemplate"] = template
    return spec


@st.composite
def stacks(draw: st.DrawFn) -> dict[str, Any]:
    sizing = draw(st.sampled_from(SIZINGS))
    spec = draw(specs())
    if draw(st.booleans()):
        return stack(sizing, [{"name": "job", "namespace": NAMESPACE, "spec": spec}], [])
    points = draw(st.lists(st.sampled_from([1, 8, 64, 300, 1024, 2000]), min_size=1, max_size=3, unique=True))
    return stack(sizing, [], [{"name": "sw", "namespace": NAMESPACE, "concurrency": points, "spec": spec}])


_QUOTED = re.compile(r'status\.error ("(?:[^"\\]|\\.)*")\); ')


def check_against_the_operator(
    values: dict[str, Any], oracle: Oracle, secrets: dict[str, dict[str, list[str]]] | None = None
) -> None:
    """Plan ``values``; run each job the stack declares through the operator; compare."""
    try:
        config = parse_config(copy.deepcopy(values), "gen.yaml")
    except ConfigError as exc:
        _refused_by_the_spec_model(values, exc, oracle)
        return
    try:
        plan: StackPlan | None = plan_stack(config, "gen.yaml")
        refusals: list[tuple[str, str]] = []
    except ConfigError as exc:
        plan, refusals = None, [(p.path, p.message) for p in exc.problems]
    image = installs.operator_image(config.operator)
    env = {
        e["name"]: e["value"]
        for e in operator_objects.operator_env(
            config.operator, default_queue(config), operator_objects.sizing_env(config)
        )
    }
    cluster = stack_cluster(config, secrets)
    if plan is not None:
        for admission in plan.jobs.admissions:
            spec = manifests.aiperf_job(admission, image, None)["spec"]
            result = oracle.create(env, cluster, {"name": admission.entry.name, "namespace": NAMESPACE, "spec": spec})
            assert (result["outcome"], result["statusError"], result["unanswered"]) == ("created", None, []), result
            predicted = predicted_jobset(admission.shape, name=admission.entry.name, spec=spec, sizing=plan.sizing)
            assert jobset_view(result["jobsets"][0]) == predicted
        return
    # Refused: every refusal quotes the operator's status.error, which the operator must produce.
    from aiperf_kueue.config.expansion import expand_sweeps

    for entry in expand_sweeps(config.jobs, config.sweeps, "gen.yaml"):
        spec = {**entry.spec.manifest(), "scheduling": {"queueName": "aiperf-queue"}}
        spec.setdefault("image", image)
        result = oracle.create(env, cluster, {"name": entry.name, "namespace": NAMESPACE, "spec": spec})
        assert result["unanswered"] == []
        origin = f"{entry.origin[0]}[{entry.origin[1]}]"
        message = next((m for p, m in refusals if p.startswith(origin) and m.startswith(f"{entry.name}:")), None)
        if message is None:
            assert result["outcome"] == "created", (refusals, result)
            continue
        quoted = _QUOTED.search(message)
        if quoted is None:
            # Kueue's refusal (the quota can never hold it): the operator itself creates the job.
            assert result["outcome"] == "created", (message, result)
            continue
        assert result["statusError"] == json.loads(quoted.group(1)), (message, result)


def _refused_by_the_spec_model(values: dict[str, Any], exc: ConfigError, oracle: Oracle) -> None:
    """A spec the config model refuses: the operator refuses it too (its validation, or, for the
    one the program refuses ahead of it, models as one string, its create path)."""
    config = parse_config(stack(values["operator"]["sizing"], [], []), "gen.yaml")
    env = {
        e["name"]: e["value"]
        for e in operator_objects.operator_env(
            config.operator, default_queue(config), operator_objects.sizing_env(config)
        )
    }
    for entry in values.get("jobs", []) + values.get("sweeps", []):
        job = {
            **entry["spec"],
            "image": installs.operator_image(config.operator),
            "scheduling": {"queueName": "aiperf-queue"},
        }
        if not oracle.validate(job)["accepted"]:
            continue  # crd_models refuses it too
        result = oracle.create(env, stack_cluster(config), {"name": "job", "namespace": NAMESPACE, "spec": job})
        assert result["outcome"] == "failed", (exc.problems, result)


@settings(
    max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
@given(values=stacks())
def test_plan_decides_like_the_operator(values: dict[str, Any], oracle: Oracle) -> None:
    check_against_the_operator(values, oracle)


BASE: dict[str, Any] = {
    "benchmark": {
        "models": ["m"],
        "endpoint": {"urls": ["http://llm.serving:8000"], "type": "chat"},
        "datasets": [{"name": "main", "type": "synthetic"}],
        "phases": [{"name": "profiling", "type": "concurrency", "concurrency": 8, "requests": 10}],
    }
}


def _edit(path: str, value: Any) -> dict[str, Any]:
    """BASE with ``value`` at the dotted ``path`` (``None`` removes the key)."""
    spec = copy.deepcopy(BASE)
    *parents, last = path.split(".")
    node: Any = spec
    for part in parents:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    if value is None:
        del node[last]
    elif last.isdigit():
        node[int(last)] = value
    else:
        node[last] = value
    return spec


_SECRET = {"valueFrom": {"secretKeyRef": {"name": "llm", "key": "key"}}}

#: (case, spec, whether the released operator creates the job). The program must agree.
EDGE_CASES: list[tuple[str, dict[str, Any], bool]] = [
    ("the base spec", BASE, True),
    ("a phase without its type discriminator", _edit("benchmark.phases.0.type", None), False),
    ("models as one string (validated, then the job fails)", _edit("benchmark.models", "m"), False),
    (
        "the model shorthand as one string",
        {"benchmark": {**_edit("benchmark.models", None)["benchmark"], "model": "m"}},
        True,
    ),
    ("endpoint.urls as a string", _edit("benchmark.endpoint.urls", "http://llm.serving:8000"), False),
    ("endpoint.authType", _edit("benchmark.endpoint.authType", "sigv4"), False),
    ("endpoint.awsRegion", _edit("benchmark.endpoint.awsRegion", "us-east-1"), False),
    ("accuracy benchmark bfcl_ast", _edit("benchmark.accuracy", {"benchmark": "bfcl_ast"}), False),
    ("accuracy grader tool_call_ast", _edit("benchmark.accuracy", {"grader": "tool_call_ast"}), False),
    ("accuracy benchmark gsm8k", _edit("benchmark.accuracy", {"benchmark": "gsm8k"}), True),
    ("waitForModelMode without waitForModelTimeout", _edit("benchmark.endpoint.waitForModelMode", "models"), False),
    (
        "waitForModelMode with waitForModelTimeout",
        _edit(
            "benchmark.endpoint",
            {"urls": ["http://llm.serving:8000"], "waitForModelMode": "models", "waitForModelTimeout": 30},
        ),
        True,
    ),
    ("no datasets", _edit("benchmark.datasets", None), False),
    ("no models", _edit("benchmark.models", None), False),
    ("no phases", _edit("benchmark.phases", None), False),
    ("a dataset without a name", _edit("benchmark.datasets.0", {"type": "synthetic"}), False),
    (
        "the warmup/profiling shorthand",
        {
            "benchmark": {
                **_edit("benchmark.phases", None)["benchmark"],
                "warmup": {"type": "concurrency", "concurrency": 2, "requests": 5},
                "profiling": {"type": "concurrency", "concurrency": 250, "requests": 50},
            }
        },
        True,
    ),
    (
        "only a warmup phase",
        _edit("benchmark.phases.0", {"name": "w", "kind": "warmup", "type": "concurrency", "requests": 1}),
        False,
    ),
    (
        "phase names equal ignoring case",
        _edit(
            "benchmark.phases",
            [
                {"name": "Profiling", "kind": "profiling", "type": "concurrency", "requests": 1},
                {"name": "profiling", "type": "concurrency", "requests": 1},
            ],
        ),
        False,
    ),
    (
        "a poisson phase without rate",
        _edit("benchmark.phases.0", {"name": "profiling", "type": "poisson", "requests": 5}),
        False,
    ),
    ("a phase without a stop condition", _edit("benchmark.phases.0.requests", None), False),
    ("perChunkUsage without useServerTokenCount", _edit("benchmark.endpoint.perChunkUsage", True), False),
    ("apiKey <redacted> without a Secret", _edit("benchmark.endpoint.apiKey", "<redacted>"), False),
    (
        "apiKey <redacted> with OPENAI_API_KEY from a Secret",
        {
            **_edit("benchmark.endpoint.apiKey", "<redacted>"),
            "podTemplate": {"env": [{"name": "OPENAI_API_KEY", **_SECRET}]},
        },
        True,
    ),
    (
        "AIPERF_INJECTED_API_KEY from a Secret, no apiKey",
        {**BASE, "podTemplate": {"env": [{"name": "AIPERF_INJECTED_API_KEY", **_SECRET}]}},
        True,
    ),
    (
        "an Authorization header without AIPERF_INJECTED_HEADERS",
        _edit("benchmark.endpoint.headers", {"Authorization": "Bearer x"}),
        False,
    ),
    ("a URL with userinfo", _edit("benchmark.endpoint.urls", ["http://user:pw@llm.serving:8000"]), False),
    ("a ${VAR} the operator's env lacks", _edit("benchmark.endpoint.headers", {"X-Team": "${TEAM}"}), False),
    ("a ${VAR} with a default", _edit("benchmark.endpoint.headers", {"X-Team": "${TEAM:research}"}), True),
    ("extraPodSpec.securityContext", {**BASE, "podTemplate": {"extraPodSpec": {"securityContext": {}}}}, False),
    ("podSecurityContext runAsUser 0", {**BASE, "podTemplate": {"podSecurityContext": {"runAsUser": 0}}}, False),
    (
        "runtime.serviceRunType, which the operator overwrites",
        _edit("benchmark.runtime", {"serviceRunType": "kubernetes"}),
        True,
    ),
    ("workersMin above workers", _edit("benchmark.runtime", {"workers": 2, "workersMin": 3}), False),
    ("workersMin raising a derived total to whole pods", _edit("benchmark.runtime", {"workersMin": 13}), True),
    ("9 workers per pod in a 4Gi worker pod (below the 162Mi floor)", _edit("benchmark.runtime", {"workers": 9}), True),
]


@pytest.mark.parametrize(("case", "spec", "created"), EDGE_CASES, ids=[c[0] for c in EDGE_CASES])
def test_edge_case(case: str, spec: dict[str, Any], created: bool, oracle: Oracle) -> None:
    values = stack({}, [{"name": "job", "namespace": NAMESPACE, "spec": spec}], [])
    config = parse_config(stack({}, [], []), "gen.yaml")
    env = {
        e["name"]: e["value"]
        for e in operator_objects.operator_env(
            config.operator, default_queue(config), operator_objects.sizing_env(config)
        )
    }
    job = {
        **copy.deepcopy(spec),
        "image": installs.operator_image(config.operator),
        "scheduling": {"queueName": "aiperf-queue"},
    }
    secrets = {NAMESPACE: {"llm": ["key"]}}
    result = oracle.create(env, stack_cluster(config, secrets), {"name": "job", "namespace": NAMESPACE, "spec": job})
    assert (result["outcome"] == "created") is created, result
    try:
        plan_stack(parse_config(values, "gen.yaml"), "gen.yaml")
        planned = True
    except ConfigError:
        planned = False
    assert planned is created
    # Where the spec model itself refuses, so does the release's spec validation (crd_models), but
    # for models as one string, which it validates and then fails the job on.
    try:
        AIPerfJobSpec.model_validate(copy.deepcopy(spec))
        modelled = True
    except ValidationError:
        modelled = False
    if not modelled:
        assert oracle.validate(job)["accepted"] is (case == "models as one string (validated, then the job fails)")
    check_against_the_operator(values, oracle, secrets)
