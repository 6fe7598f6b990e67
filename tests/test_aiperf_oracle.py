"""Every committed stack's AIPerfJobs, created by the released AIPerf 0.13.0 operator's own code.

For each job ``plan`` admits, the real ``on_create`` handler (:mod:`oracle`) runs with the operator
env the program sets (``operator-env`` patch) in the cluster the stack creates. It must accept
the job (spec validation, worker sizing, all preflight checks, the JobSet build) and create a
JobSet equal to the plan's prediction: name, labels, ``suspend``, TTL, pods per replicatedJob,
every container's requests and limits, init containers; and the plan's per-job totals must be
the sum of that JobSet's pods. Only Kubernetes API calls are stubbed (:data:`oracle.STUBBED_CALLS`).
"""

from __future__ import annotations

import json
import re
import typing
from typing import Any

import pytest
from pydantic import BaseModel

from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.config import aiperf_benchmark as bench
from aiperf_kueue.config import aiperf_comm as comm
from aiperf_kueue.config import aiperf_dataset as dataset
from aiperf_kueue.config import aiperf_endpoint as endpoint
from aiperf_kueue.config import aiperf_outputs as outputs
from aiperf_kueue.config import aiperf_phases as phases
from aiperf_kueue.config import aiperf_plot as plot
from aiperf_kueue.config import aiperf_sections as sections
from aiperf_kueue.config import aiperf_spec
from aiperf_kueue.installs import operator_objects
from aiperf_kueue.installs import releases as installs
from aiperf_kueue.plan import manifests
from aiperf_kueue.plan.stack_plan import StackPlan, plan_stack
from aiperf_kueue.plan.submit import default_queue
from aiperf_kueue.stackfile.loader import parse_config
from aiperf_kueue.workload.job_shape import predicted_jobset
from aiperf_kueue.workload.requests import canonical, container_requests, kueue_pod_requests, total
from tests.oracle import (
    STUBBED_CALLS,
    Oracle,
    jobset_view,
    oracle_fixture,  # noqa: F401 (the session fixture `oracle`)
    stack_cluster,
)
from tests.support import CHECKED_STACKS, ROOT, expects_no_warnings, stack_values

#: Secrets the committed stacks' jobs reference, which their clusters must hold (created by hand:
#: the program never sees an endpoint's key).
SECRETS: dict[str, dict[str, dict[str, list[str]]]] = {
    "prod": {"bench-team-a": {"llama-endpoint": ["api-key"]}},
}


def referenced_secrets(plan: StackPlan) -> dict[str, dict[str, list[str]]]:
    """The Secrets (namespace -> name -> keys) the stack's jobs read through ``secretKeyRef``: a
    user creates them beside the stack, so the stubbed cluster has them (prod: llama-endpoint)."""
    found: dict[str, dict[str, list[str]]] = {}

    def walk(value: Any, namespace: str) -> None:
        if isinstance(value, dict):
            ref = value.get("secretKeyRef")
            if isinstance(ref, dict) and isinstance(ref.get("name"), str) and isinstance(ref.get("key"), str):
                keys = found.setdefault(namespace, {}).setdefault(ref["name"], [])
                keys += [ref["key"]] if ref["key"] not in keys else []
            for item in value.values():
                walk(item, namespace)
        elif isinstance(value, list):
            for item in value:
                walk(item, namespace)

    for admission in plan.jobs.admissions:
        walk(admission.entry.spec.manifest(), admission.entry.namespace)
    return found


def test_the_secrets_prod_reads_are_found() -> None:
    assert referenced_secrets(_plan("prod")) == SECRETS["prod"]


def _plan(stack: str) -> StackPlan:
    values, _ = stack_values(stack)
    source = f"stacks/Pulumi.{stack}.yaml"
    return plan_stack(parse_config(values, source), source, ROOT)


def operator_env(plan: StackPlan) -> dict[str, str]:
    """The env the program's ``operator-env`` patch sets on the operator container."""
    config = plan.config
    env = operator_objects.operator_env(config.operator, default_queue(config), operator_objects.sizing_env(config))
    return {e["name"]: e["value"] for e in env}


def _kueue_total(jobset: dict[str, Any]) -> dict[str, str | int]:
    """Kueue's charge for a real JobSet: per replicatedJob, pods × the pod's request."""
    parts = []
    for rj in jobset["spec"]["replicatedJobs"]:
        pod = rj["template"]["spec"]["template"]["spec"]
        own = total(container_requests(c, c["name"]) for c in pod["containers"])
        per_pod = kueue_pod_requests(own, pod.get("initContainers", []), {})
        parts.append({r: a * rj["replicas"] for r, a in per_pod.items()})
    return canonical(total(parts))


@pytest.mark.parametrize("stack", CHECKED_STACKS)
def test_every_job_of_a_committed_stack_is_created_as_planned(stack: str, oracle: Oracle) -> None:
    plan = _plan(stack)
    config = plan.config
    env = operator_env(plan)
    cluster = stack_cluster(config, referenced_secrets(plan))
    image = installs.operator_image(config.operator)
    rows = {row["name"]: row for row in plan.jobs_table()}
    # One per job and per sweep point (a stack may declare none yet: then nothing is created).
    assert len(plan.jobs.admissions) == len(config.jobs) + sum(len(s.concurrency) for s in config.sweeps)
    for admission in plan.jobs.admissions:
        entry = admission.entry
        job = manifests.aiperf_job(admission, image, config.operator.default_priority_class)
        spec, name = job["spec"], job["metadata"]["name"]  # <entry.name>-<digest>: the operator's job id
        assert name == rows[entry.name]["objectName"]
        result = oracle.create(env, cluster, {"name": name, "namespace": entry.namespace, "spec": spec})
        assert (result["outcome"], result["statusError"], result["unanswered"]) == ("created", None, []), result
        assert [c for c in result["preflight"] if c["status"] == "fail"] == []
        if expects_no_warnings(stack):
            # The shipped and opted-in stacks plan without warnings, and the operator warns of nothing
            # either (they give the records manager 512Mi and turn server-metrics discovery off). A
            # team's stack that did not opt in may warn (tests/test_own_stacks.py).
            assert [c for c in result["preflight"] if c["status"] == "warn"] == []
            assert plan.warnings == ()
        (jobset,) = result["jobsets"]
        predicted = predicted_jobset(
            admission.shape,
            name=name,
            spec=spec,
            sizing=plan.sizing,
            default_priority_class=env.get("AIPERF_K8S_JOBSET_KUEUE_DEFAULT_PRIORITY_CLASS"),
        )
        assert jobset_view(jobset) == predicted, entry.name
        assert _kueue_total(jobset) == rows[entry.name]["requests"], entry.name
        assert result["returned"] == {"jobSetName": f"aiperf-{name}", "workers": admission.shape.total_workers}
        # The preflight the plan reports for the job is the operator's.
        (kueue_queue,) = [c for c in result["preflight"] if c["name"] == "Kueue Queue"]
        (mine,) = [c for c in plan.preflight if c.job == entry.name]
        assert (kueue_queue["status"].upper(), kueue_queue["message"]) == (mine.outcome.status, mine.outcome.message)


def test_the_committed_stacks_exercise_exactly_the_stubbed_calls(oracle: Oracle) -> None:
    """The stub answers these Kubernetes API calls and nothing else; prod's jobs make all but the
    ones no committed job needs (a named ServiceAccount, the Kueue-installed probe)."""
    plan = _plan("prod")
    env = operator_env(plan)
    cluster = stack_cluster(plan.config, SECRETS["prod"])
    admission = plan.jobs.admissions[0]
    spec = manifests.aiperf_job(admission, installs.operator_image(plan.config.operator), None)["spec"]
    result = oracle.create(
        env, cluster, {"name": admission.entry.name, "namespace": admission.entry.namespace, "spec": spec}
    )
    assert result["unanswered"] == []
    unused = [["GET", "read serviceaccount"], ["GET", "list localqueues"]]
    assert sorted(result["calls"]) == sorted(c for c in STUBBED_CALLS if c not in unused)


#: A cluster whose CPU pool is too small for a 0.13.0 worker pod and whose GPU pool is tainted.
NODE_STACK: dict[str, Any] = {
    "inventory": {
        "pools": [
            {"name": "small", "nodes": 4, "cpu": "3", "memory": "16Gi", "nodeLabels": {"node-pool": "small"}},
            {
                "name": "gpu",
                "nodes": 1,
                "cpu": "32",
                "memory": "256Gi",
                "gpus": 8,
                "nodeLabels": {"node-pool": "gpu"},
                "nodeTaints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            },
        ]
    },
    "queues": {"clusterQueues": [{"name": "q", "share": 100, "namespaces": [{"name": "bench"}]}]},
}
_SPEC: dict[str, Any] = {
    "benchmark": {
        "models": ["m"],
        "endpoint": {"urls": ["http://llm:8000"]},
        "datasets": [{"name": "main"}],
        "phases": [{"name": "profiling", "type": "concurrency", "requests": 5}],
    }
}
_GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("pod_template", "status_error"),
    [
        # Only the tainted pool is big enough, and the pod template does not tolerate its taint.
        (
            {},
            "Pre-flight failed: Per-Node Schedulability: No single node can fit the largest pod (3.4 CPU, 6.0Gi mem). "
            "Add larger nodes or reduce pod resource requirements.",
        ),
        # No node has the label, so none can fit the pod either: both checks fail.
        (
            {"nodeSelector": {"node-pool": "gpu-h100"}},
            "Pre-flight failed: Node Selector Match: No node matches nodeSelector {node-pool=gpu-h100}. Label nodes "
            "with: kubectl label node <name> node-pool=gpu-h100; Per-Node Schedulability: No single node can fit the "
            "largest pod (3.4 CPU, 6.0Gi mem). Add larger nodes or reduce pod resource requirements.",
        ),
        ({"tolerations": [_GPU_TOLERATION]}, None),
        ({"nodeSelector": {"node-pool": "gpu"}, "tolerations": [_GPU_TOLERATION]}, None),
    ],
)
def test_the_node_checks_are_the_operators(
    pod_template: dict[str, Any], status_error: str | None, oracle: Oracle
) -> None:
    spec = {**_SPEC, "podTemplate": pod_template} if pod_template else _SPEC
    values = {**NODE_STACK, "jobs": [{"name": "j", "namespace": "bench", "spec": spec}]}
    config = parse_config(values, "nodes.yaml")
    try:
        plan_stack(config, "nodes.yaml")
        planned = None
    except ConfigError as exc:
        (problem,) = exc.problems
        planned = json.loads(re.search(r'status\.error ("(?:[^"\\]|\\.)*")\); ', problem.message).group(1))  # type: ignore[union-attr]
    env = {
        e["name"]: e["value"]
        for e in operator_objects.operator_env(
            config.operator, default_queue(config), operator_objects.sizing_env(config)
        )
    }
    job = {**spec, "image": installs.operator_image(config.operator), "scheduling": {"queueName": "aiperf-queue"}}
    result = oracle.create(env, stack_cluster(config), {"name": "j", "namespace": "bench", "spec": job})
    assert (_checks(planned), _checks(result["statusError"])) == (_checks(status_error), _checks(status_error))


def _checks(status_error: str | None) -> set[str] | None:
    """The failed checks of a preflight ``status.error``, in no order (the operator's varies)."""
    if status_error is None:
        return None
    return set(re.split(r"; (?=[A-Z][A-Za-z -]+: )", status_error.removeprefix("Pre-flight failed: ")))


@pytest.mark.parametrize(
    ("server_metrics", "records_manager", "predicted", "reported"),
    [
        (None, None, 2, "OOM risk detected: RecordsManager uses 75% of its container limit"),
        (
            {"urls": ["http://llm:9090/metrics"], "discovery": {"mode": "disabled"}},
            None,
            1,
            "OOM risk detected: RecordsManager uses",
        ),
        ({"enabled": False}, "512Mi", 0, None),
    ],
)
def test_the_memory_estimation_warnings_the_plan_predicts(
    server_metrics: dict[str, Any] | None,
    records_manager: str | None,
    predicted: int,
    reported: str | None,
    oracle: Oracle,
) -> None:
    # dev, with AIPerf's defaults for what the committed stack sets to avoid these warnings.
    values, _ = stack_values("dev")
    values["jobs"][0]["spec"]["benchmark"].pop("serverMetrics")
    values["operator"] = {}
    if server_metrics is not None:
        values["jobs"][0]["spec"]["benchmark"]["serverMetrics"] = server_metrics
    if records_manager is not None:
        values["operator"] = {"sizing": {"controller": {"RECORDS_MANAGER": {"memory": records_manager}}}}
    config = parse_config(values, "dev.yaml")
    plan = plan_stack(config, "dev.yaml")
    assert len([w for w in plan.warnings if 'preflight WARNs "Memory Estimation"' in w]) == predicted
    (admission,) = plan.jobs.admissions
    spec = manifests.aiperf_job(admission, installs.operator_image(config.operator), None)["spec"]
    result = oracle.create(
        operator_env(plan), stack_cluster(config), {"name": "smoke", "namespace": "aiperf-benchmarks", "spec": spec}
    )
    memory = [c["message"] for c in result["preflight"] if c["name"] == "Memory Estimation" and c["status"] == "warn"]
    assert bool(memory) == (reported is not None)
    if reported is not None:
        assert memory[0].startswith(reported)


def _keys(model: type[BaseModel]) -> set[str]:
    extra: frozenset[str] = getattr(model, "KEYS", frozenset())
    return {f.alias or n for n, f in model.model_fields.items()} | set(extra)


#: Every object of the spec the program types, by path, and the keys its model takes.
PROGRAM_KEYS: dict[str, set[str]] = {
    "": _keys(aiperf_spec.AIPerfJobSpec),
    "podTemplate": _keys(aiperf_spec.PodTemplate),
    "multiRun": _keys(aiperf_spec.MultiRun),
    "multiRun.convergence": _keys(aiperf_spec.Convergence),
    "failurePolicy": _keys(aiperf_spec.FailurePolicy),
    "benchmark": _keys(bench.Benchmark),
    "benchmark.models": {"items", "strategy"},
    "benchmark.endpoint": _keys(endpoint.Endpoint),
    "benchmark.endpoint.template": _keys(endpoint.EndpointTemplate),
    "benchmark.endpoint.resetKvCache": {"timeoutSeconds", "maxRetrySeconds", "path"},
    "benchmark.endpoint.serverProfiler": {"timeoutSeconds", "startPath", "stopPath"},
    "benchmark.phases": _keys(phases.Phase),
    "benchmark.artifacts": _keys(outputs.Artifacts),
    "benchmark.artifacts.userFiles": _keys(outputs.UserFile),
    "benchmark.tokenizer": _keys(sections.Tokenizer),
    "benchmark.gpuTelemetry": set(bench._GPU_TELEMETRY_KEYS) - {"url"},
    "benchmark.serverMetrics": set(bench._SERVER_METRICS_KEYS) - {"url"},
    "benchmark.networkLatency": _keys(sections.NetworkLatency),
    "benchmark.otel": _keys(sections.Otel),
    "benchmark.mlflow": _keys(sections.Mlflow),
    "benchmark.wandb": _keys(sections.Wandb),
    "benchmark.runtime": _keys(bench.Runtime),
    "benchmark.runtime.communication": _keys(comm.Communication),
    **{f"benchmark.runtime.communication[{tag}]": set(keys) for tag, keys in comm.KEYS.items()},
    "benchmark.runtime.communication.eventBusProxy": _keys(comm.TcpProxy),
    **{f"benchmark.datasets[{tag}]": set(keys) for tag, keys in dataset.DATASET_KEYS.items()},
    "plot": _keys(plot.Plot),
    "plot.visualization": _keys(plot.PlotVisualization),
    "plot.settings": _keys(plot.PlotSettings),
    "plot.settings.serverMetricsDownsampling": _keys(plot.ServerMetricsDownsampling),
    "plot.experimentClassification": _keys(plot.ExperimentClassification),
    "benchmark.logging": _keys(outputs.Logging),
    "benchmark.metrics": _keys(outputs.Metrics),
    "benchmark.accuracy": _keys(outputs.Accuracy),
}


def _literal(model: type[BaseModel], field: str) -> list[str]:
    annotation = model.model_fields[field].annotation
    for arg in (annotation, *typing.get_args(annotation)):
        if typing.get_origin(arg) is typing.Literal:
            return [str(v) for v in typing.get_args(arg)]
    raise AssertionError(field)


def test_the_spec_models_take_the_releases_keys_and_enums(oracle: Oracle) -> None:
    """Per object, the keys the program's models take are the release's (``scheduling`` is the
    program's to set, so it refuses it), and the enums are the release's values."""
    release = oracle.ask({}, {"fields": True})
    theirs = {path: set(keys) for path, keys in release["keys"].items() if path in PROGRAM_KEYS}
    # PublicDataset's ``_entries_explicit`` is the CLI converter's internal sentinel (excluded from
    # serialisation), not a key a spec writes: the program refuses it.
    theirs["benchmark.datasets[public]"].remove("_entries_explicit")
    assert {path: keys for path, keys in PROGRAM_KEYS.items()} == theirs
    enums = release["enums"]
    cases: list[tuple[str, type[BaseModel], str]] = [
        ("benchmark.endpoint.type", endpoint.Endpoint, "type"),
        ("benchmark.endpoint.connectionReuse", endpoint.Endpoint, "connection_reuse"),
        ("benchmark.endpoint.requestContentType", endpoint.Endpoint, "request_content_type"),
        ("benchmark.endpoint.waitForModelMode", endpoint.Endpoint, "wait_for_model_mode"),
        ("benchmark.accuracy.benchmark", outputs.Accuracy, "benchmark"),
        ("benchmark.accuracy.grader", outputs.Accuracy, "grader"),
        ("benchmark.logging.level", outputs.Logging, "level"),
        ("benchmark.artifacts.userFiles.format", outputs.UserFile, "format"),
        ("benchmark.runtime.ui", bench.Runtime, "ui"),
        ("benchmark.runtime.communication.type", comm.Communication, "type"),
        (
            "plot.settings.serverMetricsDownsampling.aggregationMethod",
            plot.ServerMetricsDownsampling,
            "aggregation_method",
        ),
        ("plot.experimentClassification.default", plot.ExperimentClassification, "default"),
        ("benchmark.phases.type", phases.Phase, "type"),
        ("benchmark.phases.kind", phases.Phase, "kind"),
        ("resourceMode", aiperf_spec.AIPerfJobSpec, "resource_mode"),
        ("imagePullPolicy", aiperf_spec.AIPerfJobSpec, "image_pull_policy"),
        ("podTemplate.dnsPolicy", aiperf_spec.PodTemplate, "dns_policy"),
        ("failurePolicy.onChildFailure", aiperf_spec.FailurePolicy, "on_child_failure"),
    ]
    for path, model, field in cases:
        assert sorted(_literal(model, field)) == sorted(enums[path]), path
