"""Kueue, JobSet and the AIPerf operator: chart values, env, RBAC and the install graph."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiperf_kueue.cli import engine
from aiperf_kueue.cli.engine import run_program
from aiperf_kueue.cli.report import clean, resource_records
from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.installs import install_checks, operator_objects
from aiperf_kueue.installs import releases as installs
from tests import upstream
from tests.support import (
    CHECKED_STACKS,
    COMMITTED_STACKS,
    SECRET_SIG,
    by_name,
    committed_run,
    flattened_tree,
    plan_values,
    require_shared,
    require_upstream,
    stack_values,
)

KUEUE_GATE = "kueue-ready"


def _manager_config(values: dict[str, Any]) -> dict[str, Any]:
    config, plan = plan_values(values)
    release = installs.kueue_release(config, plan.target)
    manager: dict[str, Any] = yaml.safe_load(release.values["managerConfig"]["controllerManagerConfigYaml"])
    return manager


def test_kueue_manager_config_for_0_19_2() -> None:
    values, _ = stack_values("prod")
    values["kueue"] = {
        "version": "0.19.2",
        "manageJobsWithoutQueueName": True,
        "fairSharing": {},
        "waitForPodsReady": {"timeout": "15m"},
    }
    assert _manager_config(values) == {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {
            "groupKindConcurrency": {
                "Job.batch": 5,
                "Pod": 5,
                "Workload.kueue.x-k8s.io": 10,
                "LocalQueue.kueue.x-k8s.io": 5,
                "ClusterQueue.kueue.x-k8s.io": 5,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 300, "burst": 500},
        "manageJobsWithoutQueueName": True,
        "integrations": {
            "frameworks": [
                "batch/job",
                "kubeflow.org/mpijob",
                "ray.io/rayjob",
                "ray.io/rayservice",
                "ray.io/raycluster",
                "jobset.x-k8s.io/jobset",
                "workload.codeflare.dev/appwrapper",
                "trainer.kubeflow.org/trainjob",
                "pod",
                "deployment",
                "statefulset",
                "leaderworkerset.x-k8s.io/leaderworkerset",
            ]
        },
        "managedJobsNamespaceSelector": {
            "matchExpressions": [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "NotIn",
                    "values": ["kube-system", "kueue-system", "jobset-system", "aiperf-system"],
                }
            ]
        },
        "fairSharing": {"preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]},
        "waitForPodsReady": {"timeout": "15m", "blockAdmission": False},
    }


NOT_OURS = {
    "matchExpressions": [
        {
            "key": "kubernetes.io/metadata.name",
            "operator": "NotIn",
            "values": ["kube-system", "kueue-system", "jobset-system", "aiperf-system"],
        }
    ]
}


@pytest.mark.parametrize(("version", "rayservice"), [("0.15.0", False), ("0.16.1", False), ("0.17.0", True)])
def test_the_rayservice_framework_only_from_kueue_0_17(version: str, rayservice: bool) -> None:
    # Kueue 0.15.0 refused "ray.io/rayservice" and never started (the upgrade e2e).
    values, _ = stack_values("dev")
    values["kueue"] = {"version": version}
    frameworks = _manager_config(values)["integrations"]["frameworks"]
    assert ("ray.io/rayservice" in frameworks) is rayservice
    assert len(frameworks) == (12 if rayservice else 11)


def test_kueue_manager_config_for_0_10_1() -> None:
    values, _ = stack_values("dev")
    values["kueue"] = {"version": "0.10.1", "fairSharing": {}, "waitForPodsReady": {}}
    assert _manager_config(values) == {
        "apiVersion": "config.kueue.x-k8s.io/v1beta1",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8080"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {
            "groupKindConcurrency": {
                "Job.batch": 5,
                "Pod": 5,
                "Workload.kueue.x-k8s.io": 5,
                "LocalQueue.kueue.x-k8s.io": 1,
                "ClusterQueue.kueue.x-k8s.io": 1,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 50, "burst": 100},
        "manageJobsWithoutQueueName": False,
        "integrations": {
            "frameworks": [
                "batch/job",
                "kubeflow.org/mpijob",
                "ray.io/rayjob",
                "ray.io/raycluster",
                "jobset.x-k8s.io/jobset",
                "kubeflow.org/mxjob",
                "kubeflow.org/paddlejob",
                "kubeflow.org/pytorchjob",
                "kubeflow.org/tfjob",
                "kubeflow.org/xgboostjob",
            ],
            # The pod integration's own selector, still read in 0.10 beside the one below.
            "podOptions": {"namespaceSelector": NOT_OURS},
        },
        # From Kueue 0.10.0 (kubernetes-sigs/kueue#3712): every integration skips these namespaces.
        "managedJobsNamespaceSelector": NOT_OURS,
        "fairSharing": {
            "enable": True,
            "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"],
        },
        "waitForPodsReady": {"enable": True, "timeout": "10m", "blockAdmission": False},
    }


@pytest.mark.parametrize(
    ("version", "chart"),
    [
        ("0.19.2", ("oci://registry.k8s.io/kueue/charts/kueue", "0.19.2")),
        ("0.12.0", ("oci://registry.k8s.io/kueue/charts/kueue", "0.12.0")),
        ("0.11.4", ("oci://us-central1-docker.pkg.dev/k8s-staging-images/kueue/charts/kueue", "v0.11.4")),
        ("0.10.1", ("oci://us-central1-docker.pkg.dev/k8s-staging-images/charts/kueue", "v0.10.1")),
    ],
)
def test_kueue_chart_reference_follows_the_version(version: str, chart: tuple[str, str]) -> None:
    values, _ = stack_values("dev")
    values["kueue"] = {"version": version}
    _, plan = plan_values(values)
    assert installs.kueue_chart(plan.target) == chart


def test_extra_values_deep_merge_last() -> None:
    values, _ = stack_values("dev")
    values["kueue"] = {
        "values": {"controllerManager": {"replicas": 2}, "managerConfig": {"controllerManagerConfigYaml": "x"}}
    }
    config, plan = plan_values(values)
    assert installs.kueue_release(config, plan.target).values == {
        "managerConfig": {"controllerManagerConfigYaml": "x"},
        "controllerManager": {"replicas": 2},
    }
    assert installs.deep_merge({"a": {"b": 1, "c": 2}, "l": [1]}, {"a": {"c": 3}, "l": [2]}) == {
        "a": {"b": 1, "c": 3},
        "l": [2],
    }


def test_jobset_integration_cannot_be_turned_off() -> None:
    values, _ = stack_values("dev")
    values["kueue"] = {"frameworks": ["batch/job"]}
    with pytest.raises(ConfigError) as err:
        plan_values(values)
    assert err.value.lines() == [
        "test.yaml: aiperf-kueue:kueue.frameworks: must include 'jobset.x-k8s.io/jobset': AIPerf runs every "
        "benchmark as a JobSet"
    ]


def test_operator_values_fit_this_program() -> None:
    values, _ = stack_values("prod")
    config, _ = plan_values(values)
    release = installs.operator_release(config, ["bench-team-a", "bench-team-b"])
    assert release.as_dict() == {
        "release": "aiperf-operator",
        "chart": "../aiperf/deploy/helm/aiperf-operator",
        "version": None,
        "namespace": "aiperf-system",
        "values": {
            "image": {"repository": "nvcr.io/nvidia/aiperf", "tag": "0.13.0"},
            "defaults": {"image": "nvcr.io/nvidia/aiperf:0.13.0"},
            "kueue": {"createQueues": False},
            "benchmarkNamespace": {"create": False, "name": "bench-team-a"},
            "benchmarkRbacNamespaces": [],
        },
    }


def test_default_queue_must_exist_in_every_benchmark_namespace() -> None:
    values, _ = stack_values("prod")
    values["operator"] = {"defaultQueue": "default"}
    with pytest.raises(ConfigError) as err:
        plan_values(values)
    assert err.value.lines() == [
        "test.yaml: aiperf-kueue:operator.defaultQueue: LocalQueue 'default' must exist in every benchmark "
        "namespace, or the operator stamps a queue label Kueue can never resolve there; missing in: bench-team-b, "
        "ml-team-b, bench-research (set their localQueue to it, or defaultQueue: true for 'default')"
    ]


def test_default_priority_class_must_be_declared() -> None:
    values, _ = stack_values("prod")
    values["operator"] = {"defaultPriorityClass": "urgent"}
    with pytest.raises(ConfigError) as err:
        plan_values(values)
    assert err.value.lines() == [
        "test.yaml: aiperf-kueue:operator.defaultPriorityClass: 'urgent' is not one of priorityClasses "
        "(benchmark-high, benchmark-low)"
    ]


def test_merged_operator_values_validate_against_the_charts_schema(tmp_path: Path) -> None:
    schema = require_shared("aiperf", "values.schema.json")
    chart = tmp_path / "aiperf-operator"
    chart.mkdir()
    shutil.copy(schema, chart / "values.schema.json")  # a stand-in checkout, made per test run
    values, _ = stack_values("prod")
    values["operator"] = {"chart": str(chart)}
    plan_values(values)  # the program's own values pass
    values["operator"] = {"chart": str(chart), "values": {"kueue": {"createQueus": True}}}
    with pytest.raises(ConfigError) as err:
        plan_values(values)
    assert err.value.lines() == [
        "test.yaml: aiperf-kueue:operator.values.kueue: the chart's values.schema.json rejects the merged value "
        "at kueue: Additional properties are not allowed ('createQueus' was unexpected)"
    ]


def _unknown_keys(given: dict[str, Any], known: dict[str, Any], at: str = "") -> list[str]:
    """Key paths in ``given`` that the chart's values.yaml does not have, at any depth; below a
    key whose default is not a non-empty mapping (``{}``, a string, a list), anything goes."""
    out = []
    for key, value in given.items():
        path = f"{at}.{key}" if at else key
        if key not in known:
            out.append(path)
        elif isinstance(value, dict) and isinstance(known[key], dict) and known[key]:
            out += _unknown_keys(value, known[key], path)
    return out


def test_unknown_keys_are_found_at_any_depth() -> None:
    known = {"managerConfig": {"controllerManagerConfigYaml": ""}, "controllerManager": {"replicas": 1}, "x": {}}
    given = {"managerConfig": {"controllerManagerConfigYml": ""}, "controllerManager": {"replicas": 2}, "x": {"y": 1}}
    assert _unknown_keys(given, known) == ["managerConfig.controllerManagerConfigYml"]


@pytest.mark.parametrize("version", ["0.19.2", "0.10.1"])
@pytest.mark.parametrize("stack", CHECKED_STACKS)
def test_kueue_values_use_only_keys_the_chart_knows(stack: str, version: str) -> None:
    chart = require_upstream(upstream.kueue_chart_dir, version)
    chart_values = yaml.safe_load((chart / "values.yaml").read_text())
    values, _ = stack_values(stack)
    if version < "0.15":  # no v1beta2 Cohort API: a tree stack's tree is refused there, its cohort is not
        values = flattened_tree(values)
    values["kueue"] = {**values.get("kueue", {}), "version": version, "fairSharing": {}, "waitForPodsReady": {}}
    values["kueue"]["values"] = {"controllerManager": {"replicas": 2}}  # a nested extra value is checked too
    config, plan = plan_values(values)
    generated = installs.kueue_release(config, plan.target).values
    assert set(generated) == {"managerConfig", "controllerManager"}
    assert _unknown_keys(generated, chart_values) == []


def test_operator_values_validate_against_the_charts_schema() -> None:
    import jsonschema

    schema = json.loads(require_shared("aiperf", "values.schema.json").read_text())
    for stack in COMMITTED_STACKS:
        values, _ = stack_values(stack)
        config, _ = plan_values(values)
        jsonschema.Draft7Validator(schema).validate(installs.operator_release(config, ["bench"]).values)


def test_benchmark_access_has_the_charts_role_rules_bound_in_the_namespace() -> None:
    role = operator_objects.benchmark_cluster_role("aiperf-operator")
    binding = operator_objects.benchmark_binding("bench", "aiperf-operator")
    assert role["kind"] == "ClusterRole"
    assert role["metadata"] == {
        "name": "aiperf-operator-benchmark",
        "labels": {"app.kubernetes.io/part-of": "aiperf-kueue"},
    }
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        {
            "apiGroups": ["jobset.x-k8s.io"],
            "resources": ["jobsets"],
            "verbs": ["get", "list", "watch", "patch", "update"],
        },
        {
            "apiGroups": ["aiperf.nvidia.com"],
            "resources": ["aiperfjobs", "aiperfjobs/status"],
            "verbs": ["get", "list", "watch", "patch", "update"],
        },
    ]
    # A RoleBinding to a ClusterRole grants its rules in the binding's namespace only.
    assert binding["kind"] == "RoleBinding"
    assert binding["metadata"] == {
        "name": "aiperf-operator-benchmark-access",
        "namespace": "bench",
        "labels": {"app.kubernetes.io/part-of": "aiperf-kueue"},
    }
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "default", "namespace": "bench"}]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "aiperf-operator-benchmark",
    }


def test_benchmark_binding_also_binds_the_service_accounts_jobs_run_as() -> None:
    binding = operator_objects.benchmark_binding("bench", "perf-aiperf-operator", ["runner", "default", "collector"])
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "default", "namespace": "bench"},
        {"kind": "ServiceAccount", "name": "collector", "namespace": "bench"},
        {"kind": "ServiceAccount", "name": "runner", "namespace": "bench"},
    ]
    assert (binding["roleRef"]["name"], binding["metadata"]["name"]) == (
        "perf-aiperf-operator-benchmark",
        "perf-aiperf-operator-benchmark-access",
    )


def test_the_cluster_role_is_declared_once_and_every_binding_waits_for_it() -> None:
    values, secrets = stack_values("prod")
    records = run_program("prod", values, secrets).resources
    roles = [r for r in records if r["type"] == "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"]
    bindings = [r for r in records if r["type"] == "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"]
    assert [r["name"] for r in roles] == ["benchmark-access-clusterrole"]
    assert sorted(r["name"] for r in bindings) == [
        "ns-bench-research-rolebinding",
        "ns-bench-team-a-rolebinding",
        "ns-bench-team-b-rolebinding",
        "ns-ml-team-b-rolebinding",
    ]
    assert [r["type"] for r in records if r["type"].endswith(":Role")] == []
    for binding in bindings:
        assert roles[0]["urn"] in binding["dependsOn"], binding["name"]


def test_jobs_are_registered_before_the_namespaces_that_hold_none() -> None:
    """The engine works through registrations in the order they come: the namespaces with jobs, then their jobs,
    then the rest, so the first benchmark starts early in a big update (docs/scale.md)."""
    values, secrets = stack_values("prod")
    run = run_program("prod", values, secrets)
    kinds = (
        "kubernetes:core/v1:Namespace",
        "kubernetes:core/v1:NamespacePatch",
        "kubernetes:aiperf.nvidia.com/v1alpha1:AIPerfJob",
    )
    names = {
        r["urn"]: r["name"] for r in run.resources if r["type"] in kinds and r["name"].startswith(("ns-", "jobs-"))
    }
    sequence = [names[urn] for urn in run.order if urn in names]
    # Among themselves, jobs go out as their dependencies resolve, and so do the namespaces of one group (each
    # waits for its own options, e.g. its ClusterQueue's URN, before the SDK sends it; one make test saw the last
    # two swapped): compared as sets, each group's length as a list.
    assert [len(sequence[:2]), len(sequence[2:8]), len(sequence[8:])] == [2, 6, 2]
    assert (set(sequence[:2]), set(sequence[2:8]), set(sequence[8:])) == (
        {"ns-bench-team-a-ns", "ns-bench-research-ns"},
        {
            "jobs-bench-team-a-llama-latency",
            "jobs-bench-research-llama-sweep-c1",
            "jobs-bench-research-llama-sweep-c8",
            "jobs-bench-research-llama-sweep-c32",
            "jobs-bench-research-llama-sweep-c128",
            "jobs-bench-research-llama-sweep-c1024",
        },
        {"ns-bench-team-b-ns", "ns-ml-team-b-ns"},
    )


@pytest.mark.parametrize(
    ("release", "values", "fullname"),
    [
        ("aiperf-operator", {}, "aiperf-operator"),
        ("perf", {}, "perf-aiperf-operator"),
        ("my-aiperf-operator-v2", {}, "my-aiperf-operator-v2"),  # contains the chart name
        ("perf", {"nameOverride": "bench"}, "perf-bench"),
        ("bench-x", {"nameOverride": "bench"}, "bench-x"),
        ("perf", {"fullnameOverride": "aiperf"}, "aiperf"),
        ("perf", {"fullnameOverride": "a" * 62 + "-b"}, "a" * 62),  # cut to 63, trailing '-' trimmed
        ("r" * 50, {}, "r" * 50 + "-aiperf-opera"),
        ("r" * 62, {}, "r" * 62),  # the cut lands after the '-', which goes
    ],
)
def test_operator_fullname_follows_the_charts_helper(release: str, values: dict[str, Any], fullname: str) -> None:
    config, _ = plan_values({**stack_values("dev")[0], "operator": {"releaseName": release, "values": values}})
    assert installs.operator_fullname(config.operator) == fullname


def test_a_renamed_operator_names_its_deployment_patch_and_rbac_after_the_charts_fullname() -> None:
    values, secrets = stack_values("dev")
    values["operator"] = {"releaseName": "perf", "values": {"nameOverride": "bench"}}
    resources = by_name(run_program("dev", values, secrets))
    assert clean(resources["operator-env"]["inputs"])["metadata"] == {
        "name": "perf-bench",
        "namespace": "aiperf-system",
        "annotations": {"pulumi.com/patchForce": "true"},
    }
    role = clean(resources["benchmark-access-clusterrole"]["inputs"])
    binding = clean(resources["ns-aiperf-benchmarks-rolebinding"]["inputs"])
    assert (role["metadata"]["name"], binding["metadata"]["name"], binding["roleRef"]["name"]) == (
        "perf-bench-benchmark",
        "perf-bench-benchmark-access",
        "perf-bench-benchmark",
    )


def test_kueue_fullname_override_moves_what_the_gate_waits_on() -> None:
    values, _ = stack_values("dev")
    values["kueue"] = {"releaseName": "queueing", "values": {"fullnameOverride": "kq"}}
    config, plan = plan_values(values)
    gate = installs.readiness_gate(config, plan.target)
    assert (gate["deployment"], gate["webhook_service"]) == ("kq-controller-manager", "kq-webhook-service")
    values["kueue"] = {"releaseName": "queueing"}
    config, plan = plan_values(values)
    assert installs.readiness_gate(config, plan.target)["deployment"] == "queueing-kueue-controller-manager"


def test_jobs_running_as_another_service_account_get_it_bound() -> None:
    values, secrets = stack_values("dev")
    values["jobs"][0]["spec"]["podTemplate"] = {"serviceAccountName": "bench-runner"}
    binding = by_name(run_program("dev", values, secrets))["ns-aiperf-benchmarks-rolebinding"]
    assert clean(binding["inputs"])["subjects"] == [
        {"kind": "ServiceAccount", "name": "default", "namespace": "aiperf-benchmarks"},
        {"kind": "ServiceAccount", "name": "bench-runner", "namespace": "aiperf-benchmarks"},
    ]


def test_benchmark_rbac_is_declared_without_the_operator_install() -> None:
    values, secrets = stack_values("dev")
    values["operator"] = {"install": False, "releaseName": "perf"}
    resources = by_name(run_program("dev", values, secrets))
    assert "operator-chart" not in resources
    assert clean(resources["ns-aiperf-benchmarks-rolebinding"]["inputs"])["roleRef"]["name"] == (
        "perf-aiperf-operator-benchmark"
    )


# The recorded graph -----------------------------------------------------------------------------


def _ancestors_and_self(resources: dict[str, dict[str, Any]], record: dict[str, Any]) -> list[dict[str, Any]]:
    by_urn = {r["urn"]: r for r in resources.values()}
    chain = [record]
    while chain[-1]["parent"] in by_urn:
        chain.append(by_urn[chain[-1]["parent"]])
    return chain


def test_the_shipped_install_graph_pins_the_charts() -> None:
    for stack in ("dev", "prod"):
        resources = by_name(committed_run(stack))
        assert (resources["kueue-chart"]["inputs"]["version"], resources["jobset-chart"]["inputs"]["version"]) == (
            "0.19.2",
            "0.12.0",
        )
        assert {"kueue-chart", "jobset-chart", "operator-chart", "operator-env", KUEUE_GATE} <= set(resources)


@pytest.mark.parametrize("stack", CHECKED_STACKS)
def test_install_graph(stack: str) -> None:
    # Any stack a user adds: Kueue, JobSet or the operator may be managed elsewhere (install: false),
    # and Kueue may be another version; what is installed here is ordered the same way.
    values, _ = stack_values(stack)
    config, plan = plan_values(values)
    resources = by_name(committed_run(stack))
    gate = resources[KUEUE_GATE]
    # What this stack installs: the charts present are exactly those whose install is on.
    kueue_chart = resources.get("kueue-chart")
    jobset_chart = resources.get("jobset-chart")
    operator_chart = resources.get("operator-chart")
    operator_env = resources.get("operator-env")
    assert (kueue_chart is not None) == (config.kueue.install and config.kueue.source == "helm")
    assert (jobset_chart is not None) == config.jobset.install
    assert (operator_chart is not None, operator_env is not None) == (config.operator.install,) * 2
    if kueue_chart is not None:
        assert kueue_chart["inputs"]["version"] == installs.kueue_release(config, plan.target).version
        assert (kueue_chart["protect"], kueue_chart["protectsCrds"]) == (False, True)
        assert resources["kueue-ns"]["protect"] is True
        assert gate["dependsOn"] == [kueue_chart["urn"]]
    if jobset_chart is not None:
        assert jobset_chart["inputs"]["version"] == config.jobset.version
    if operator_chart is not None and operator_env is not None:
        assert gate["urn"] in operator_chart["dependsOn"]
        if jobset_chart is not None:
            assert jobset_chart["urn"] in operator_chart["dependsOn"]
        assert operator_env["dependsOn"] == [operator_chart["urn"]]
    # Every AIPerfJob waits for the gate and for whatever of JobSet and the operator is installed here,
    # the env patch too: it pins the sizing the admission proof assumed.
    installed = [r["urn"] for r in (gate, jobset_chart, operator_chart, operator_env) if r is not None]
    jobs = [r for r in resources.values() if r["type"].endswith(":AIPerfJob")]
    # One AIPerfJob per job and per sweep point (prod: 1 + 5).
    assert len(jobs) == len(config.jobs) + sum(len(s.concurrency) for s in config.sweeps)
    for job in jobs:
        assert set(installed) <= set(job["dependsOn"]), job["name"]
    kueue_objects = [r for r in resources.values() if r["type"].startswith("kubernetes:kueue.x-k8s.io/")]
    assert kueue_objects
    for r in kueue_objects:
        assert any(gate["urn"] in x["dependsOn"] for x in _ancestors_and_self(resources, r)), r["name"]
        assert gate["urn"] in r["dependsOn"], f"{r['name']} must wait for Kueue's webhook directly"


def test_readiness_gate_inputs() -> None:
    gate = by_name(committed_run("prod"))[KUEUE_GATE]
    inputs = clean(gate["inputs"])
    inputs.pop("__provider")
    assert inputs == {
        "namespace": "kueue-system",
        "deployment": "kueue-controller-manager",
        "webhookService": "kueue-webhook-service",
        "apiVersion": "v1beta2",
        "kueueVersion": "0.19.2",
        "releaseDigest": "sha256:790533184b7efdc7",
        "attempts": 40,
        "intervalSeconds": 2,
        "timeoutSeconds": 300,
        # The stack's cluster (aiperf-kueue:cluster.context): the gate waits where the provider deploys.
        "context": "prod-gpu",
    }


def _gate_with_provider_kubeconfig(
    monkeypatch: pytest.MonkeyPatch, kubeconfig: str
) -> tuple[dict[str, Any], list[str], dict[str, Any]]:
    """The gate's recorded inputs, its additionalSecretOutputs and the plan's resources.json row,
    with ``kubernetes:kubeconfig`` set as the engine hands provider config over."""
    monkeypatch.setenv("PULUMI_CONFIG_KUBERNETES_KUBECONFIG", kubeconfig)
    secret_outputs: dict[str, list[str]] = {}
    register = engine._RecordingMonitor.RegisterResource

    def recording(self: Any, request: Any) -> Any:
        secret_outputs[request.name] = list(request.additionalSecretOutputs)
        return register(self, request)

    monkeypatch.setattr(engine._RecordingMonitor, "RegisterResource", recording)
    values, secrets = stack_values("dev")
    run = run_program("dev", values, secrets)
    [row] = [r for r in resource_records(run.resources) if r["name"] == KUEUE_GATE]
    return by_name(run)[KUEUE_GATE]["inputs"], secret_outputs[KUEUE_GATE], row


def test_the_gate_follows_a_kubeconfig_path_in_plain_sight(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\n")
    inputs, secret_outputs, _ = _gate_with_provider_kubeconfig(monkeypatch, str(path))
    assert inputs["kubeconfig"] == str(path)
    assert secret_outputs == ["kubeconfig"]  # whatever it holds, state keeps it secret


@pytest.mark.parametrize(
    "contents",
    [
        "apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user: {token: s3cr3t-token}\n",
        '{"apiVersion": "v1", "kind": "Config", "users": [{"name": "u", "user": {"token": "s3cr3t-token"}}]}',
    ],
    ids=["yaml", "json"],
)
def test_kubeconfig_contents_reach_the_gate_as_a_secret(monkeypatch: pytest.MonkeyPatch, contents: str) -> None:
    inputs, secret_outputs, row = _gate_with_provider_kubeconfig(monkeypatch, contents)
    assert inputs["kubeconfig"] == {SECRET_SIG: "1b47061264138c4ac30d75fd1eb44270", "value": contents}
    assert secret_outputs == ["kubeconfig"]
    # plan output shows a fingerprint, never the contents.
    assert row["inputs"]["kubeconfig"].startswith("[secret ")
    assert "s3cr3t" not in json.dumps(row)


def test_a_new_kueue_configuration_changes_the_gates_digest() -> None:
    values, _ = stack_values("prod")
    config, plan = plan_values(values)
    digest = installs.kueue_release_digest(config, plan.target)
    values["kueue"] = {**values["kueue"], "manageJobsWithoutQueueName": True}
    assert installs.readiness_gate(*_config_and_target(values))["release_digest"] not in (digest, None)
    values["kueue"] = {"version": "0.19.2", "values": {"controllerManager": {"replicas": 2}}}
    assert installs.readiness_gate(*_config_and_target(values))["release_digest"] not in (digest, None)
    values["kueue"] = {"version": "0.19.2", "source": "manifests"}
    manifests_digest = installs.readiness_gate(*_config_and_target(values))["release_digest"]
    assert manifests_digest not in (digest, None)
    values["kueue"] = {"version": "0.19.2", "install": False}
    assert installs.readiness_gate(*_config_and_target(values))["release_digest"] is None
    # The same config, the same digest: no spurious wait on every up.
    assert installs.kueue_release_digest(*_config_and_target(stack_values("prod")[0])) == digest


def _config_and_target(values: dict[str, Any]) -> tuple[Any, Any]:
    config, plan = plan_values(values)
    return config, plan.target


def test_local_operator_chart_that_is_not_there_warns(tmp_path: Path) -> None:
    values, _ = stack_values("dev")
    values["operator"] = {"chart": "charts/aiperf-operator"}
    config, _ = plan_values(values)
    assert install_checks.local_chart_warning(config, tmp_path) == (
        "operator.chart: local chart 'charts/aiperf-operator' not found (resolved to "
        f"{tmp_path / 'charts' / 'aiperf-operator'}): the merged values were not validated against its "
        "values.schema.json, and pulumi up cannot render it; check out ai-dynamo/aiperf at tag v0.13.0 "
        "there, or point operator.chart at the checkout"
    )
    (tmp_path / "charts" / "aiperf-operator").mkdir(parents=True)
    assert install_checks.local_chart_warning(config, tmp_path) is None
    for operator in ({"chart": "oci://example.invalid/aiperf-operator", "version": "0.7.0"}, {"install": False}):
        config, _ = plan_values({**values, "operator": operator})
        assert install_checks.local_chart_warning(config, tmp_path) is None


def _run_without(stack: str, key: str) -> dict[str, dict[str, Any]]:
    values, secrets = stack_values(stack)
    values[key] = {**values.get(key, {}), "install": False}
    return by_name(run_program(stack, values, secrets))


def _comparable(resources: dict[str, dict[str, Any]], drop: set[str]) -> dict[str, Any]:
    dropped_urns = {r["urn"] for n, r in resources.items() if n in drop}
    return {
        n: {
            **clean(r["inputs"]),
            "__deps": [d for d in r["dependsOn"] if d not in dropped_urns],
            "__parent": r["parent"],
        }
        for n, r in resources.items()
        if n not in drop and "__provider" not in r["inputs"]
    }


@pytest.mark.parametrize(
    ("key", "gone"),
    [
        ("kueue", {"kueue-ns", "kueue-chart"}),
        ("jobset", {"jobset", "jobset-ns", "jobset-chart"}),
        ("operator", {"operator", "operator-ns", "operator-chart", "operator-env"}),
    ],
)
def test_install_false_declares_nothing_of_it_and_changes_nothing_else(key: str, gone: set[str]) -> None:
    full = by_name(committed_run("prod"))
    without = _run_without("prod", key)
    assert set(full) - set(without) == gone
    assert set(without) <= set(full)
    assert _comparable(without, set()) == _comparable(full, gone)
    if key == "kueue":
        # The gate still guards every Kueue object, waiting on the Kueue someone else installed.
        assert without[KUEUE_GATE]["dependsOn"] == []


def test_a_bad_operator_chart_reference_is_a_config_error() -> None:
    values, _ = stack_values("dev")
    values["operator"] = {"chart": "oci://example.invalid/aiperf-operator"}
    plan_values({**values, "operator": {}})
    with pytest.raises(ConfigError) as err:
        plan_values(values)
    assert err.value.lines() == [
        "test.yaml: aiperf-kueue:operator.version: an oci:// chart needs a version, got chart "
        "'oci://example.invalid/aiperf-operator' and no version"
    ]


def test_operator_env_carries_the_defaults_and_every_sizing_variable() -> None:
    # Every setting of AIPerf 0.13.0 that shapes a benchmark's pods, pinned (test_sizing.DEFAULT_ENV).
    values, secrets = stack_values("prod")
    values["operator"] = {**values["operator"], "defaultQueue": "aiperf-queue"}
    patch = by_name(run_program("prod", values, secrets))["operator-env"]
    assert clean(patch["inputs"]) == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "aiperf-operator",
            "namespace": "aiperf-system",
            # Under server-side apply the chart's manager owns env: the patch takes it over.
            "annotations": {"pulumi.com/patchForce": "true"},
        },
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "operator",
                            "env": [
                                {"name": "AIPERF_K8S_JOBSET_KUEUE_DEFAULT_QUEUE_NAME", "value": "aiperf-queue"},
                                {"name": "AIPERF_K8S_JOBSET_KUEUE_DEFAULT_PRIORITY_CLASS", "value": "benchmark-low"},
                                {"name": "AIPERF_K8S_WORKER_POD_CPU", "value": "3350m"},
                                {"name": "AIPERF_K8S_WORKER_POD_MEMORY", "value": "6Gi"},
                                {"name": "AIPERF_K8S_EVENT_BUS_PROXY_CPU", "value": "50m"},
                                {"name": "AIPERF_K8S_EVENT_BUS_PROXY_MEMORY", "value": "64Mi"},
                                {"name": "AIPERF_K8S_SYSTEM_CONTROLLER_CPU", "value": "75m"},
                                {"name": "AIPERF_K8S_SYSTEM_CONTROLLER_MEMORY", "value": "192Mi"},
                                {"name": "AIPERF_K8S_DATASET_MANAGER_CPU", "value": "50m"},
                                {"name": "AIPERF_K8S_DATASET_MANAGER_MEMORY", "value": "256Mi"},
                                {"name": "AIPERF_K8S_TIMING_MANAGER_CPU", "value": "50m"},
                                {"name": "AIPERF_K8S_TIMING_MANAGER_MEMORY", "value": "192Mi"},
                                {"name": "AIPERF_K8S_RECORDS_MANAGER_CPU", "value": "75m"},
                                {"name": "AIPERF_K8S_RECORDS_MANAGER_MEMORY", "value": "512Mi"},
                                {"name": "AIPERF_K8S_API_CPU", "value": "75m"},
                                {"name": "AIPERF_K8S_API_MEMORY", "value": "256Mi"},
                                {"name": "AIPERF_K8S_GPU_TELEMETRY_MANAGER_CPU", "value": "25m"},
                                {"name": "AIPERF_K8S_GPU_TELEMETRY_MANAGER_MEMORY", "value": "192Mi"},
                                {"name": "AIPERF_K8S_SERVER_METRICS_MANAGER_CPU", "value": "25m"},
                                {"name": "AIPERF_K8S_SERVER_METRICS_MANAGER_MEMORY", "value": "192Mi"},
                                {"name": "AIPERF_K8S_RESULTS_SIDECAR_CPU", "value": "25m"},
                                {"name": "AIPERF_K8S_RESULTS_SIDECAR_MEMORY", "value": "192Mi"},
                                {"name": "AIPERF_K8S_SWEEP_CONTROLLER_CPU", "value": "75m"},
                                {"name": "AIPERF_K8S_SWEEP_CONTROLLER_MEMORY", "value": "512Mi"},
                                {"name": "AIPERF_K8S_EVENT_BUS_SIDECAR_ENABLED", "value": "true"},
                                {"name": "AIPERF_K8S_RECORD_PROCESSOR_SCALE_FACTOR", "value": "1"},
                                {"name": "AIPERF_WORKER_DEFAULT_WORKERS_PER_POD", "value": "10"},
                                {"name": "AIPERF_K8S_JOBSET_TTL_SECONDS_AFTER_FINISHED", "value": "300"},
                                {"name": "AIPERF_K8S_SHARE_PROCESS_NAMESPACE", "value": "false"},
                            ],
                        }
                    ]
                }
            }
        },
    }
