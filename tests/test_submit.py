"""The namespace default-queue annotation and the ``aiperf kube profile`` arguments per namespace."""

from __future__ import annotations

from typing import Any

import pytest

from aiperf_kueue.cli.engine import run_program
from aiperf_kueue.cli.report import clean
from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.config import Namespace, StackConfig
from aiperf_kueue.config.installs import OperatorConfig
from aiperf_kueue.plan import manifests, submit
from aiperf_kueue.stackfile.loader import parse_config
from tests.support import by_name, committed_run, stack_values

PART_OF = {"app.kubernetes.io/part-of": "aiperf-kueue"}
ANNOTATION = "kueue.x-k8s.io/default-queue-name"


def _namespace_metadata(values: dict[str, Any], stack: str = "prod") -> dict[str, Any]:
    run = run_program(stack, values, stack_values(stack)[1])
    return {
        r["inputs"]["metadata"]["name"]: clean(r["inputs"]["metadata"])
        for r in run.resources
        if r["name"].startswith("ns-") and r["name"].endswith("-ns")
    }


def test_prod_namespaces_are_annotated_with_their_local_queue() -> None:
    resources = by_name(committed_run("prod"))
    assert clean(resources["ns-bench-team-a-ns"]["inputs"]) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "bench-team-a",
            "labels": {**PART_OF, "aiperf-kueue/cluster-queue": "team-a"},
            "annotations": {ANNOTATION: "aiperf-queue"},
        },
    }
    annotations = {
        r["inputs"]["metadata"]["name"]: (r["type"].rsplit(":", 1)[-1], r["inputs"]["metadata"].get("annotations"))
        for r in resources.values()
        if r["name"].startswith("ns-") and r["name"].endswith("-ns")
    }
    assert annotations == {
        "bench-team-a": ("Namespace", {ANNOTATION: "aiperf-queue"}),
        "bench-team-b": ("Namespace", {ANNOTATION: "aiperf-queue"}),
        "ml-team-b": ("NamespacePatch", {ANNOTATION: "aiperf-queue"}),  # create: false, patched server-side
        "bench-research": ("Namespace", {ANNOTATION: "aiperf-queue"}),
    }


def test_the_annotation_is_absent_when_turned_off() -> None:
    values, _ = stack_values("prod")
    namespaces = values["queues"]["clusterQueues"][1]["namespaces"]
    namespaces[0]["defaultQueueAnnotation"] = False  # created
    namespaces[1]["defaultQueueAnnotation"] = False  # create: false
    metadata = _namespace_metadata(values)
    assert metadata["bench-team-b"] == {
        "name": "bench-team-b",
        "labels": {**PART_OF, "aiperf-kueue/cluster-queue": "team-b"},
    }
    assert metadata["ml-team-b"] == {"name": "ml-team-b", "labels": {**PART_OF, "aiperf-kueue/cluster-queue": "team-b"}}
    assert metadata["bench-team-a"]["annotations"] == {ANNOTATION: "aiperf-queue"}


def test_the_annotation_names_the_operators_default_queue() -> None:
    values, _ = stack_values("prod")
    for cq in values["queues"]["clusterQueues"]:
        for ns in cq["namespaces"]:
            ns["defaultQueue"] = True
    values["operator"]["defaultQueue"] = "default"
    metadata = _namespace_metadata(values)
    assert {name: m["annotations"] for name, m in metadata.items()} == {
        "bench-team-a": {ANNOTATION: "default"},
        "bench-team-b": {ANNOTATION: "default"},
        "ml-team-b": {ANNOTATION: "default"},
        "bench-research": {ANNOTATION: "default"},
    }


def test_namespace_builder() -> None:
    ns = Namespace(name="bench", local_queue="lq")
    assert submit.namespace_annotations(ns, None) == {ANNOTATION: "lq"}
    assert submit.namespace_annotations(Namespace(name="bench", default_queue_annotation=False), None) == {}
    assert submit.namespace_annotations(ns, "shared") == {ANNOTATION: "shared"}
    assert manifests.namespace(ns, "team", submit.namespace_annotations(ns, None)) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "bench",
            "labels": {**PART_OF, "aiperf-kueue/cluster-queue": "team"},
            "annotations": {ANNOTATION: "lq"},
        },
    }


def _config(namespaces: list[dict[str, Any]], **operator: Any) -> StackConfig:
    return parse_config(
        {
            "inventory": {"pools": [{"name": "p", "nodes": 1, "cpu": "8", "memory": "16Gi"}]},
            "queues": {"clusterQueues": [{"name": "team", "share": 100, "namespaces": namespaces}]},
            "operator": operator,
        },
        "test.yaml",
    )


@pytest.mark.parametrize(
    ("namespaces", "operator", "expected"),
    [
        # auto (the default): the LocalQueue every namespace has.
        ([{"name": "a"}, {"name": "b"}], {}, "aiperf-queue"),
        ([{"name": "a", "localQueue": "lq"}, {"name": "b", "localQueue": "lq"}], {}, "lq"),
        ([{"name": "a", "localQueue": "x", "defaultQueue": True}, {"name": "b", "defaultQueue": True}], {}, "default"),
        ([{"name": "a", "localQueue": "x"}, {"name": "b"}], {}, None),  # nothing shared: no env default
        ([{"name": "a", "localQueue": "x"}, {"name": "b"}], {"defaultQueue": "auto"}, None),
        # A name is kept as it is; "" and null turn the env default off.
        ([{"name": "a", "defaultQueue": True}], {"defaultQueue": "default"}, "default"),
        ([{"name": "a"}], {"defaultQueue": ""}, None),
        ([{"name": "a"}], {"defaultQueue": None}, None),
    ],
)
def test_the_operators_env_default_queue(
    namespaces: list[dict[str, Any]], operator: dict[str, Any], expected: str | None
) -> None:
    assert submit.default_queue(_config(namespaces, **operator)) == expected


def test_a_bad_default_queue_names_what_is_allowed() -> None:
    with pytest.raises(ConfigError) as err:
        _config([{"name": "a"}], defaultQueue="Bad_Queue")
    assert err.value.lines() == [
        "test.yaml: aiperf-kueue:operator.defaultQueue: must be 'auto', '' (no env default) or a LocalQueue name: "
        "must be a DNS-1123 label (lower-case letters, digits and '-', starting and ending with a letter or digit), "
        "got 'Bad_Queue'"
    ]


def test_by_default_the_env_the_annotation_and_the_cli_name_one_queue() -> None:
    run = committed_run("prod")
    resources = by_name(run)
    env = clean(resources["operator-env"]["inputs"])["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env[0] == {"name": "AIPERF_K8S_JOBSET_KUEUE_DEFAULT_QUEUE_NAME", "value": "aiperf-queue"}
    annotations = {
        clean(r["inputs"])["metadata"]["annotations"][ANNOTATION]
        for r in resources.values()
        if r["name"].startswith("ns-") and r["name"].endswith("-ns")
    }
    assert annotations == {"aiperf-queue"}
    assert {cmd.split("--queue-name ")[1].split()[0] for cmd in run.outputs["aiperfCli"].values()} == {"aiperf-queue"}


def test_without_an_env_default_the_patch_sets_no_default_queue() -> None:
    values, secrets = stack_values("prod")
    values["operator"]["defaultQueue"] = ""
    env = clean(by_name(run_program("prod", values, secrets))["operator-env"]["inputs"])
    names = [e["name"] for e in env["spec"]["template"]["spec"]["containers"][0]["env"]]
    assert "AIPERF_K8S_JOBSET_KUEUE_DEFAULT_QUEUE_NAME" not in names
    assert names[0] == "AIPERF_K8S_JOBSET_KUEUE_DEFAULT_PRIORITY_CLASS"


# aiperf kube profile ---------------------------------------------------------------------------------

#: Flag names of ``KubeOptions`` (ai-dynamo/aiperf ``src/aiperf/config/kube.py@23bae68f``).
VERIFIED_FLAGS = {"-n", "--namespace", "--image", "--queue-name", "--priority-class"}


def test_prod_cli_arguments() -> None:
    assert committed_run("prod").outputs["aiperfCli"] == {
        ns: f"aiperf kube profile --namespace {ns} --image nvcr.io/nvidia/aiperf:0.13.0 --queue-name aiperf-queue "
        "--priority-class benchmark-low"
        for ns in ("bench-team-a", "bench-team-b", "ml-team-b", "bench-research")
    }


def test_cli_arguments_use_only_verified_flags() -> None:
    args = submit.profile_args(
        Namespace(name="bench"), OperatorConfig(default_priority_class="low"), "nvcr.io/nvidia/aiperf:0.13.0", None
    )
    assert args[:3] == ["aiperf", "kube", "profile"]
    assert {a for a in args if a.startswith("-")} <= VERIFIED_FLAGS


def test_cli_arguments_follow_the_operators_defaults() -> None:
    ns = Namespace(name="bench", local_queue="lq", default_queue=True)
    image = "nvcr.io/nvidia/aiperf:0.13.0"
    assert submit.profile_command(ns, OperatorConfig(), image, None) == (
        "aiperf kube profile --namespace bench --image nvcr.io/nvidia/aiperf:0.13.0 --queue-name lq"
    )
    assert submit.profile_command(ns, OperatorConfig(default_priority_class="low"), image, "default") == (
        "aiperf kube profile --namespace bench --image nvcr.io/nvidia/aiperf:0.13.0 --queue-name default "
        "--priority-class low"
    )


def test_kubectl_outputs_for_troubleshooting() -> None:
    kubectl = committed_run("prod").outputs["kubectl"]
    # One command over every benchmark namespace, not one per namespace (a fleet's checkpoints carry each).
    assert kubectl["namespaceAnnotations"] == (
        "kubectl get namespaces -l aiperf-kueue/cluster-queue -o custom-columns='NAMESPACE:.metadata.name,"
        "CLUSTERQUEUE:.metadata.labels.aiperf-kueue/cluster-queue,"
        "DEFAULT-QUEUE:.metadata.annotations.kueue\\.x-k8s\\.io/default-queue-name'"
    )
    assert kubectl["describeWorkloads"] == "kubectl describe workloads -A"
    assert kubectl["aiperfJobs"] == "kubectl get aiperfjobs -A"
    assert kubectl["workloads"] == "kubectl get workloads -A"
    assert kubectl["localQueues"] == "kubectl get localqueues -A"
    assert kubectl["preemption"]["research"] == "kubectl get clusterqueue research -o jsonpath='{.spec.preemption}'"
    assert kubectl["priorityClasses"] == "kubectl get workloadpriorityclasses"
    assert kubectl["kueueReady"] == (
        "kubectl wait deploy/kueue-controller-manager -n kueue-system --for=condition=available"
    )
