"""The AIPerfJobs the program registers, as the mock engine records them: inputs, options, order, secrets.

Literal expectations for the prod stack (``stacks/Pulumi.prod.yaml``: the job ``llama-latency``
and the 5-point sweep ``llama-sweep``), variants of it built in the tests, and the ``plan``
output of a stack whose endpoint header comes from ``secure:`` config.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiperf_kueue.cli.cli import main
from aiperf_kueue.cli.engine import ProgramRun, run_program
from aiperf_kueue.cli.report import clean
from aiperf_kueue.plan.manifests import AIPERF_JOB_IMMUTABLE
from aiperf_kueue.stackfile.loader import read_stack_file
from tests.support import ROOT, SECRET_SIG, by_name, committed_run, stack_values

SECRET_MARK = "1b47061264138c4ac30d75fd1eb44270"
JOB_TYPE = "kubernetes:aiperf.nvidia.com/v1alpha1:AIPerfJob"
URN = "urn:pulumi:prod::aiperf-kueue::"
JOBS_URN = f"{URN}aiperf-kueue:index:AIPerfJobs::jobs"
OPERATOR_CHART = f"{URN}aiperf-kueue:index:AIPerfOperator$kubernetes:helm.sh/v4:Chart::operator-chart"
#: The patch that gives the operator its ``AIPERF_K8S_*`` defaults: a job applied before it would
#: be sized and queued by the chart's defaults.
OPERATOR_ENV = f"{URN}aiperf-kueue:index:AIPerfOperator$kubernetes:apps/v1:DeploymentPatch::operator-env"
JOBSET_CHART = f"{URN}aiperf-kueue:index:JobSetInstall$kubernetes:helm.sh/v4:Chart::jobset-chart"
KUEUE_READY = f"{URN}aiperf-kueue:index:KueueInstall$pulumi-python:dynamic/aiperf-kueue:KueueReadinessGate::kueue-ready"
LOCAL_QUEUE = f"{URN}aiperf-kueue:index:BenchmarkNamespaces$kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue::ns-"
PRIORITY = (
    f"{URN}aiperf-kueue:index:PriorityClasses$kubernetes:kueue.x-k8s.io/v1beta2:WorkloadPriorityClass::priorities-"
)

#: The 19 CRD-immutable spec fields, as replaceOnChanges paths; cancel and timeoutSeconds stay mutable.
REPLACE_ON_CHANGES = [
    "spec.image",
    "spec.imagePullPolicy",
    "spec.benchmark",
    "spec.resourceMode",
    "spec.connectionsPerWorker",
    "spec.ttlSecondsAfterFinished",
    "spec.resultsTtlDays",
    "spec.keepFailedPods",
    "spec.podTemplate",
    "spec.scheduling",
    "spec.schemaVersion",
    "spec.sweep",
    "spec.multiRun",
    "spec.plot",
    "spec.variables",
    "spec.randomSeed",
    "spec.noSweepTable",
    "spec.skipEndpointCheck",
    "spec.failurePolicy",
]

LLAMA_ENDPOINT = ["http://llama.inference.svc:8000"]
DATASETS = [{"name": "main", "type": "synthetic"}]
SERVER_METRICS = {"urls": ["http://llama.inference.svc:8000/metrics"], "discovery": {"mode": "disabled"}}
MODELS = ["meta-llama/Llama-3.1-8B-Instruct"]
IMAGE = "nvcr.io/nvidia/aiperf:0.13.0"


def secret(value: str) -> dict[str, str]:
    """A Pulumi secret as registered (the engine's wire form)."""
    return {SECRET_SIG: SECRET_MARK, "value": value}


def job_records(run: ProgramRun) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in run.resources if r["type"] == JOB_TYPE}


# --------------------------------------------------------------------------- prod as committed


def test_prod_registers_one_child_per_job_under_the_component() -> None:
    run = committed_run("prod")
    jobs = job_records(run)
    assert sorted(jobs) == [
        "jobs-bench-research-llama-sweep-c1",
        "jobs-bench-research-llama-sweep-c1024",
        "jobs-bench-research-llama-sweep-c128",
        "jobs-bench-research-llama-sweep-c32",
        "jobs-bench-research-llama-sweep-c8",
        "jobs-bench-team-a-llama-latency",
    ]
    assert {r["parent"] for r in jobs.values()} == {JOBS_URN}
    component = by_name(run)["jobs"]
    assert (component["type"], component["parent"], component["dependsOn"]) == (
        "aiperf-kueue:index:AIPerfJobs",
        f"{URN}pulumi:pulumi:Stack::aiperf-kueue-prod",
        [],
    )


def test_llama_latency_inputs() -> None:
    record = by_name(committed_run("prod"))["jobs-bench-team-a-llama-latency"]
    assert clean(record["inputs"]) == {
        "apiVersion": "aiperf.nvidia.com/v1alpha1",
        "kind": "AIPerfJob",
        "metadata": {
            "name": "llama-latency-7b5e06",
            "namespace": "bench-team-a",
            "labels": {
                "app.kubernetes.io/part-of": "aiperf-kueue",
                "aiperf-kueue/cluster-queue": "team-a",
                "aiperf-kueue/job": "llama-latency",
            },
        },
        "spec": {
            "resourceMode": "burstable",
            "benchmark": {
                "models": MODELS,
                "endpoint": {
                    "urls": LLAMA_ENDPOINT,
                    "type": "chat",
                    "streaming": True,
                    "headers": {"X-Team": "[secret 96c2886c]"},
                },
                "serverMetrics": SERVER_METRICS,
                "datasets": DATASETS,
                "phases": [
                    {"name": "warmup", "type": "concurrency", "concurrency": 8, "requests": 100},
                    {"name": "profiling", "type": "concurrency", "concurrency": 50, "requests": 2000},
                ],
            },
            "podTemplate": {
                "env": [
                    {
                        "name": "AIPERF_INJECTED_API_KEY",
                        "valueFrom": {"secretKeyRef": {"name": "llama-endpoint", "key": "api-key"}},
                    }
                ]
            },
            "scheduling": {"queueName": "aiperf-queue", "priorityClass": "benchmark-high"},
            "image": IMAGE,
        },
    }


def test_llama_latency_options() -> None:
    record = by_name(committed_run("prod"))["jobs-bench-team-a-llama-latency"]
    assert record["replaceOnChanges"] == REPLACE_ON_CHANGES == [f"spec.{f}" for f in AIPERF_JOB_IMMUTABLE]
    assert "spec.cancel" not in record["replaceOnChanges"]
    assert "spec.timeoutSeconds" not in record["replaceOnChanges"]
    # A changed spec is a new run under a name of its own: created first, the old one then kept.
    assert (record["deleteBeforeReplace"], record["retainOnDelete"], record["protect"]) == (False, True, False)
    # Its LocalQueue, its priority class, and every controller: Kueue (gate), JobSet, the operator.
    assert record["dependsOn"] == [
        OPERATOR_ENV,
        OPERATOR_CHART,
        f"{LOCAL_QUEUE}bench-team-a-lq-aiperf-queue",
        JOBSET_CHART,
        KUEUE_READY,
        f"{PRIORITY}benchmark-high",
    ]


def test_sweep_point_c128() -> None:
    record = by_name(committed_run("prod"))["jobs-bench-research-llama-sweep-c128"]
    # No header: nothing is secret, the recorded inputs are plain data.
    assert SECRET_SIG not in json.dumps(record["inputs"])
    assert clean(record["inputs"]) == {
        "apiVersion": "aiperf.nvidia.com/v1alpha1",
        "kind": "AIPerfJob",
        "metadata": {
            "name": "llama-sweep-c128-dc9a2c",
            "namespace": "bench-research",
            "labels": {
                "app.kubernetes.io/part-of": "aiperf-kueue",
                "aiperf-kueue/cluster-queue": "research",
                "aiperf-kueue/job": "llama-sweep-c128",
                "aiperf-kueue/sweep": "llama-sweep",
            },
        },
        "spec": {
            "resourceMode": "burstable",
            "benchmark": {
                "models": MODELS,
                "endpoint": {"urls": LLAMA_ENDPOINT, "type": "chat", "streaming": True},
                "serverMetrics": SERVER_METRICS,
                "datasets": DATASETS,
                "phases": [{"name": "profiling", "type": "concurrency", "concurrency": 128, "requests": 1000}],
            },
            # No priorityClass on the sweep: the operator's defaultPriorityClass, written explicitly.
            "scheduling": {"queueName": "aiperf-queue", "priorityClass": "benchmark-low"},
            "image": IMAGE,
        },
    }
    assert record["replaceOnChanges"] == REPLACE_ON_CHANGES
    assert (record["deleteBeforeReplace"], record["retainOnDelete"]) == (False, True)
    assert record["dependsOn"] == [
        OPERATOR_ENV,
        OPERATOR_CHART,
        f"{LOCAL_QUEUE}bench-research-lq-aiperf-queue",
        JOBSET_CHART,
        KUEUE_READY,
        f"{PRIORITY}benchmark-low",
    ]


def test_sweep_points_differ_only_in_name_and_concurrency() -> None:
    jobs = job_records(committed_run("prod"))
    points = {n: clean(r["inputs"]) for n, r in jobs.items() if "llama-sweep" in n}
    concurrency = {p["metadata"]["name"]: p["spec"]["benchmark"]["phases"][0]["concurrency"] for p in points.values()}
    assert concurrency == {
        "llama-sweep-c1-1f564c": 1,
        "llama-sweep-c8-c0b718": 8,
        "llama-sweep-c32-435319": 32,
        "llama-sweep-c128-dc9a2c": 128,
        "llama-sweep-c1024-d5893e": 1024,
    }
    for point in points.values():
        point["metadata"]["name"] = "x"
        point["metadata"]["labels"]["aiperf-kueue/job"] = "x"
        point["spec"]["benchmark"]["phases"][0]["concurrency"] = 0
    assert len({json.dumps(p, sort_keys=True) for p in points.values()}) == 1


def test_prod_jobs_table() -> None:
    common = {"flavor": ["cpu"], "fits": True, "borrowing": False}
    one_pod = {"cpu": "3800m", "memory": "8Gi"}  # 450m + 3350m; 1792Mi + 256Mi (records manager 512Mi) + 6Gi
    research = {"namespace": "bench-research", "queue": "aiperf-queue", "clusterQueue": "research"}
    point = {**research, "priorityClass": "benchmark-low"}
    assert committed_run("prod").outputs["jobs"] == [
        {
            "name": "llama-latency",
            "objectName": "llama-latency-7b5e06",
            "namespace": "bench-team-a",
            "queue": "aiperf-queue",
            "clusterQueue": "team-a",
            "priorityClass": "benchmark-high",
            "pods": 2,
            "workers": 1,
            "requests": one_pod,
            **common,
            "fitOnNominal": 31,  # team-a's cpu flavor: floor(119700m / 3800m)
        },
        {
            "name": "llama-sweep-c1",
            "objectName": "llama-sweep-c1-1f564c",
            **point,
            "pods": 2,
            "workers": 1,
            "requests": one_pod,
            **common,
            "fitOnNominal": 12,
        },
        {
            "name": "llama-sweep-c8",
            "objectName": "llama-sweep-c8-c0b718",
            **point,
            "pods": 2,
            "workers": 1,
            "requests": one_pod,
            **common,
            "fitOnNominal": 12,
        },
        {
            "name": "llama-sweep-c32",
            "objectName": "llama-sweep-c32-435319",
            **point,
            "pods": 2,
            "workers": 1,
            "requests": one_pod,
            **common,
            "fitOnNominal": 12,
        },
        {
            "name": "llama-sweep-c128",
            "objectName": "llama-sweep-c128-dc9a2c",
            **point,
            "pods": 2,
            "workers": 2,
            "requests": one_pod,
            **common,
            "fitOnNominal": 12,  # research's cpu flavor: floor(47880m / 3800m)
        },
        {
            "name": "llama-sweep-c1024",
            "objectName": "llama-sweep-c1024-d5893e",
            **point,
            "pods": 3,
            "workers": 20,
            "requests": {"cpu": "7150m", "memory": "14Gi"},  # 20 workers → 2 worker pods
            **common,
            "fitOnNominal": 6,
        },
    ]


# --------------------------------------------------------------------------- variants of prod


@pytest.fixture(scope="module")
def variant() -> ProgramRun:
    """prod with the job on the ``default`` LocalQueue, no priority class of its own and not
    retained; the sweep not retained either."""
    values, secret_keys = stack_values("prod")
    job = values["jobs"][0]
    job.update(queue="default", retainOnDelete=False)
    del job["priorityClass"]
    values["sweeps"][0]["retainOnDelete"] = False
    return run_program("prod", values, secret_keys)


def test_retain_on_delete_is_the_default(variant: ProgramRun) -> None:
    committed = {n: r["retainOnDelete"] for n, r in job_records(committed_run("prod")).items()}
    assert set(committed.values()) == {True}
    assert {n: r["retainOnDelete"] for n, r in job_records(variant).items()} == {n: False for n in committed}


def test_default_queue_and_operator_priority_class(variant: ProgramRun) -> None:
    record = job_records(variant)["jobs-bench-team-a-llama-latency"]
    assert clean(record["inputs"])["spec"]["scheduling"] == {"queueName": "default", "priorityClass": "benchmark-low"}
    assert record["dependsOn"] == [
        OPERATOR_ENV,
        OPERATOR_CHART,
        f"{LOCAL_QUEUE}bench-team-a-lq-default",
        JOBSET_CHART,
        KUEUE_READY,
        f"{PRIORITY}benchmark-low",
    ]
    assert (record["deleteBeforeReplace"], record["replaceOnChanges"]) == (False, REPLACE_ON_CHANGES)
    # Another queue and priority class: another spec, so another name than prod's llama-latency-7b5e06.
    assert variant.outputs["jobs"][0] == {
        "name": "llama-latency",
        "objectName": "llama-latency-d71385",
        "namespace": "bench-team-a",
        "queue": "default",
        "clusterQueue": "team-a",
        "priorityClass": "benchmark-low",
        "pods": 2,
        "workers": 1,
        "requests": {"cpu": "3800m", "memory": "8Gi"},
        "flavor": ["cpu"],
        "fits": True,
        "borrowing": False,
        "fitOnNominal": 31,
    }


# --------------------------------------------------------------------------- secrets

CIPHER_HEADER = "v1:AAABAGJlYXJlci10b2tlbi1jaXBoZXJ0ZXh0"


def test_a_plain_header_value_arrives_as_a_secret() -> None:
    """Even written in clear text, a header value is registered as a Pulumi secret: encrypted in
    state, masked in previews (the program cannot tell a credential's value from another's)."""
    committed = by_name(committed_run("prod"))["jobs-bench-team-a-llama-latency"]
    endpoint = committed["inputs"]["spec"]["benchmark"]["endpoint"]
    assert endpoint["headers"] == {"X-Team": secret("team-a")}
    assert clean(endpoint)["headers"] == {"X-Team": "[secret 96c2886c]"}


def secure_stack(tmp_path: Path) -> Path:
    """prod, its job's X-Team header from ``secure:`` config and an X-Trace header in clear."""
    text = (ROOT / "stacks" / "Pulumi.prod.yaml").read_text()
    plain = "              X-Team: team-a\n"
    assert text.count(plain) == 1
    secure = f"              X-Team:\n                secure: {CIPHER_HEADER}\n              X-Trace: perf\n"
    path = tmp_path / "Pulumi.secure.yaml"
    path.write_text(text.replace(plain, secure))
    return path


def test_secure_config_is_registered_as_secrets(tmp_path: Path) -> None:
    values, secret_keys = read_stack_file(secure_stack(tmp_path))
    assert secret_keys == {"jobs"}
    run = run_program("secure", values, secret_keys)
    record = job_records(run)["jobs-bench-team-a-llama-latency"]
    raw = json.dumps(record["inputs"])
    assert SECRET_SIG in raw
    assert record["inputs"]["spec"]["benchmark"]["endpoint"] == {
        "urls": LLAMA_ENDPOINT,
        "type": "chat",
        "streaming": True,
        # The program never sees the ciphertext: the stack file reader redacts it. Every header
        # value is a secret, the clear-text ones too.
        "headers": {"X-Team": secret("[encrypted a032ea1e]"), "X-Trace": secret("perf")},
    }
    everything = json.dumps([run.resources, run.outputs, run.warnings], default=str)
    assert CIPHER_HEADER not in everything
    # Only the header values are masked; the rest of the spec stays reviewable.
    assert clean(record["inputs"])["spec"]["benchmark"]["endpoint"] == {
        "urls": LLAMA_ENDPOINT,
        "type": "chat",
        "streaming": True,
        "headers": {"X-Team": "[encrypted a032ea1e]", "X-Trace": "[secret 342edb77]"},
    }


def test_plan_output_never_contains_the_ciphertext(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["plan", str(secure_stack(tmp_path)), "--out", str(out)]) == 0
    printed = capsys.readouterr()
    files = {p.name: p.read_text() for p in sorted(out.iterdir())}
    assert sorted(files) == ["charts.yaml", "manifests.yaml", "plan.json", "resources.json"]
    for blob in [printed.out, printed.err, *files.values()]:
        assert CIPHER_HEADER not in blob
        assert CIPHER_HEADER.removeprefix("v1:") not in blob
    records = {r["name"]: r for r in json.loads(files["resources.json"])}
    endpoint = records["jobs-bench-team-a-llama-latency"]["inputs"]["spec"]["benchmark"]["endpoint"]
    assert endpoint == {
        "urls": LLAMA_ENDPOINT,
        "type": "chat",
        "streaming": True,
        "headers": {"X-Team": "[encrypted a032ea1e]", "X-Trace": "[secret 342edb77]"},
    }
    docs = [d for d in yaml.safe_load_all(files["manifests.yaml"]) if d["kind"] == "AIPerfJob"]
    latency = next(d for d in docs if d["metadata"]["labels"]["aiperf-kueue/job"] == "llama-latency")
    assert latency["spec"]["benchmark"]["endpoint"] == endpoint
    assert latency["spec"]["benchmark"]["phases"][1] == {
        "name": "profiling",
        "type": "concurrency",
        "concurrency": 50,
        "requests": 2000,
    }
