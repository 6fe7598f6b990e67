"""Flavors that the pods may not use: nodeSelector, required node affinity and taints (Kueue's
``checkFlavorForPodSets``); ``pods`` charged when covered; stopPolicy and ``resourceMode: none``.

Job sizes as in test_admission.py: concurrency 50 with the small sizing is a controller pod of
450m/1792Mi and one worker pod of 150m/5Gi, 600m/6912Mi in all.
"""

from __future__ import annotations

import copy
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.config import Taint, Toleration
from aiperf_kueue.config.aiperf_spec import AIPerfJobSpec
from aiperf_kueue.plan.stack_plan import plan_stack
from aiperf_kueue.stackfile.loader import parse_config
from aiperf_kueue.upstream.kueue import KueueTarget
from aiperf_kueue.workload.admission import assign
from aiperf_kueue.workload.flavor_assigner import Flavor, Flavors, PodSetAssignment
from aiperf_kueue.workload.job_shape import job_shape
from aiperf_kueue.workload.placement import NodeSelectorRequirement, Placement, placement
from aiperf_kueue.workload.requests import SizingError
from tests.test_admission import amounts, make_plan, pod_sets, preset

ROOT = Path(__file__).resolve().parents[1]
MI = 2**20
GPU_TAINT = Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule")
GPU_TOLERATION = Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")
#: An H100 pool as the prod stack writes it, but without its own toleration (so pods must bring one).
H100 = Flavor("gpu-h100", (("gpus", "8"), ("node-pool", "gpu-h100")), (GPU_TAINT,))
#: The same pool with its toleration: every pod passes the taint check, only labels decide.
H100_TOLERATED = Flavor("gpu-h100", H100.node_labels, (GPU_TAINT,), (GPU_TOLERATION,))

NO_MATCH = "flavor gpu-h100 doesn't match node affinity"
UNTOLERATED = "untolerated taint {nvidia.com/gpu present NoSchedule <nil>} in flavor gpu-h100"


def affinity(*terms: list[tuple[str, str, list[str]]]) -> dict[str, Any]:
    """A required node affinity: ``terms`` ORed, each a list of (key, operator, values) ANDed."""
    selector_terms = [
        {"matchExpressions": [{"key": k, "operator": op, "values": values} for k, op, values in term]} for term in terms
    ]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": selector_terms}}}


def spec(pod_template: dict[str, Any] | None = None, **fields: Any) -> AIPerfJobSpec:
    phases = [{"name": "profiling", "type": "concurrency", "concurrency": 50, "requests": 100}]
    benchmark = {
        "models": ["m"],
        "endpoint": {"urls": ["http://llm:8000"]},
        "datasets": [{"name": "main"}],
        "phases": phases,
    }
    data: dict[str, Any] = {"benchmark": benchmark, **fields}
    if pod_template is not None:
        data["podTemplate"] = pod_template
    return AIPerfJobSpec.model_validate(data)


def placed(pod_template: dict[str, Any]) -> Placement:
    return placement(spec(pod_template))


# --------------------------------------------------------------------------- taints


@pytest.mark.parametrize(
    ("tolerations", "reason"),
    [
        ([], UNTOLERATED),
        ([{"key": "nvidia.com/gpu", "operator": "Exists"}], None),
        ([{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}], None),
        ([{"key": "nvidia.com/gpu", "operator": "Equal", "value": "absent"}], UNTOLERATED),
        ([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}], UNTOLERATED),
        ([{"key": "dedicated", "operator": "Exists"}], UNTOLERATED),
        ([{"operator": "Exists"}], None),  # empty key with Exists tolerates every taint
    ],
)
def test_taints_must_be_tolerated(tolerations: list[dict[str, Any]], reason: str | None) -> None:
    assert H100.mismatch(placed({"tolerations": tolerations})) == reason


def test_the_flavors_own_tolerations_count() -> None:
    assert H100_TOLERATED.mismatch(Placement()) is None


def test_prefer_no_schedule_taints_are_not_checked() -> None:
    soft = Flavor(
        "spot", (), (Taint(key="spot", value="true", effect="PreferNoSchedule"), Taint(key="x", effect="NoExecute"))
    )
    assert soft.mismatch(Placement()) == "untolerated taint {x  NoExecute <nil>} in flavor spot"
    assert soft.mismatch(placed({"tolerations": [{"key": "x", "operator": "Exists"}]})) is None


def test_taint_checked_before_labels() -> None:
    assert H100.mismatch(placed({"nodeSelector": {"node-pool": "cpu"}})) == UNTOLERATED


# --------------------------------------------------------------------------- labels


@pytest.mark.parametrize(
    ("pod_template", "reason"),
    [
        ({}, None),
        ({"nodeSelector": {"node-pool": "gpu-h100"}}, None),
        ({"nodeSelector": {"node-pool": "cpu"}}, NO_MATCH),
        ({"nodeSelector": {"node-pool": "gpu-h100", "gpus": "4"}}, NO_MATCH),
        # Keys the flavor does not label are not compared: the scheduler decides on them.
        ({"nodeSelector": {"topology.kubernetes.io/zone": "a"}}, None),
        ({"affinity": affinity([("node-pool", "In", ["gpu-a100", "gpu-h100"])])}, None),
        ({"affinity": affinity([("node-pool", "NotIn", ["gpu-h100"])])}, NO_MATCH),
        ({"affinity": affinity([("node-pool", "NotIn", ["cpu"])])}, None),
        ({"affinity": affinity([("gpus", "Exists", [])])}, None),
        ({"affinity": affinity([("gpus", "DoesNotExist", [])])}, NO_MATCH),
        ({"affinity": affinity([("gpus", "Gt", ["4"])])}, None),
        ({"affinity": affinity([("gpus", "Gt", ["8"])])}, NO_MATCH),
        ({"affinity": affinity([("gpus", "Lt", ["9"])])}, None),
        ({"affinity": affinity([("gpus", "Lt", ["4"])])}, NO_MATCH),
        # Terms are ORed, expressions within a term ANDed.
        ({"affinity": affinity([("node-pool", "In", ["cpu"])], [("node-pool", "In", ["gpu-h100"])])}, None),
        ({"affinity": affinity([("node-pool", "In", ["gpu-h100"]), ("gpus", "In", ["4"])])}, NO_MATCH),
        # A term with only keys the flavor does not label matches, and with it the whole affinity.
        ({"affinity": affinity([("node-pool", "In", ["cpu"])], [("zone", "In", ["a"])])}, None),
        ({"affinity": affinity([("zone", "In", ["a"]), ("node-pool", "In", ["cpu"])])}, NO_MATCH),
        # nodeSelector and affinity must both match.
        (
            {"nodeSelector": {"node-pool": "cpu"}, "affinity": affinity([("node-pool", "In", ["gpu-h100"])])},
            NO_MATCH,
        ),
    ],
)
def test_node_selector_and_affinity_on_the_flavors_label_keys(pod_template: dict[str, Any], reason: str | None) -> None:
    assert H100_TOLERATED.mismatch(placed(pod_template)) == reason


def test_gt_never_matches_a_label_that_is_not_an_integer() -> None:
    flavor = Flavor("odd", (("gpus", "eight"),))
    assert flavor.mismatch(placed({"affinity": affinity([("gpus", "Gt", ["1"])])})) == (
        "flavor odd doesn't match node affinity"
    )


def test_label_keys_per_flavor_or_across_the_resource_group() -> None:
    # Kueue < 0.17 compared every flavor on the label keys of all flavors of the resource group,
    # so a flavor without node labels failed a nodeSelector aimed at another flavor.
    flavors = [Flavor("cpu", (("node-pool", "cpu"),)), Flavor("plain")]
    pinned = placed({"nodeSelector": {"node-pool": "gpu-h100"}})
    assert Flavors(flavors).skipped(pinned) == {"cpu": "flavor cpu doesn't match node affinity"}
    assert Flavors(flavors, union_label_keys=True).skipped(pinned) == {
        "cpu": "flavor cpu doesn't match node affinity",
        "plain": "flavor plain doesn't match node affinity",
    }


def test_flavors_are_matched_once_per_placement() -> None:
    flavors = Flavors([H100])
    first = flavors.skipped(placed({"nodeSelector": {"node-pool": "gpu-h100"}}))
    assert flavors.skipped(placed({"nodeSelector": {"node-pool": "gpu-h100"}})) is first
    assert first == {"gpu-h100": UNTOLERATED}


# --------------------------------------------------------------------------- what the operator copies


def test_placement_of_the_pod_template() -> None:
    template = {
        "nodeSelector": {"node-pool": "gpu-h100", "gpus": "8"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, {"key": "a"}],
        "affinity": affinity([("gpus", "Gt", ["4"]), ("zone", "Exists", [])], [("node-pool", "In", ["x", "y"])]),
    }
    assert placed(template) == Placement(
        node_selector=(("gpus", "8"), ("node-pool", "gpu-h100")),
        node_affinity=(
            (NodeSelectorRequirement("gpus", "Gt", ("4",)), NodeSelectorRequirement("zone", "Exists")),
            (NodeSelectorRequirement("node-pool", "In", ("x", "y")),),
        ),
        tolerations=(GPU_TOLERATION, Toleration(key="a")),
    )
    # Both pods of the JobSet carry it.
    shape = job_shape(spec(template), preset())
    assert [ps.placement for ps in shape.pod_sets] == [placed(template), placed(template)]


def test_extra_pod_spec_replaces_pod_template_keys() -> None:
    template = {
        "nodeSelector": {"node-pool": "cpu"},
        "tolerations": [{"key": "a", "operator": "Exists"}],
        "extraPodSpec": {"nodeSelector": {"node-pool": "gpu-h100"}, "affinity": None},
    }
    assert placed(template) == Placement(
        node_selector=(("node-pool", "gpu-h100"),), tolerations=(Toleration(key="a", operator="Exists"),)
    )


def test_no_pod_template_no_constraints() -> None:
    assert placement(spec()) == Placement()
    assert placed({"affinity": {"podAntiAffinity": {}}}) == Placement()


TERM = "spec.podTemplate.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"


@pytest.mark.parametrize(
    ("template", "path", "message"),
    [
        (
            {"extraPodSpec": {"nodeSelector": {"gpus": 8}}},
            "spec.podTemplate.extraPodSpec.nodeSelector",
            "must be a mapping of node label to string value, got a mapping of 1 key (gpus: 8)",
        ),
        (
            {"extraPodSpec": {"tolerations": ["gpu"]}},
            "spec.podTemplate.extraPodSpec.tolerations[0]",
            "must be a toleration mapping (key, operator, value, effect), got 'gpu'",
        ),
        (
            {"tolerations": [{"key": "a", "operator": "In"}]},
            "spec.podTemplate.tolerations[0].operator",
            "must be Equal or Exists, got 'In'",
        ),
        (
            {"tolerations": [{"key": "a", "operator": "Exists", "value": "b"}]},
            "spec.podTemplate.tolerations[0].value",
            "must be empty with operator Exists, got 'b'",
        ),
        (
            {"tolerations": [{"key": "a", "effect": "Sometimes"}]},
            "spec.podTemplate.tolerations[0].effect",
            "must be one of NoSchedule, PreferNoSchedule, NoExecute or omitted, got 'Sometimes'",
        ),
        (
            {"tolerations": [{"key": "a", "effect": "NoSchedule", "tolerationSeconds": 30}]},
            "spec.podTemplate.tolerations[0].tolerationSeconds",
            "needs effect NoExecute",
        ),
        (
            {"extraPodSpec": {"tolerations": {"key": "a"}}},
            "spec.podTemplate.extraPodSpec.tolerations",
            "must be a list, got a mapping of 1 key (key: 'a')",
        ),
        (
            {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}},
            TERM,
            "must have at least one node selector term",
        ),
        (
            {"affinity": affinity([("zone", "In", [])])},
            f"{TERM}[0].matchExpressions[0].values",
            "must be non-empty with operator In",
        ),
        (
            {"affinity": affinity([("zone", "Exists", ["a"])])},
            f"{TERM}[0].matchExpressions[0].values",
            "must be empty with operator Exists, got a list of 1 item ('a')",
        ),
        (
            {"affinity": affinity([("gpus", "Lt", ["1", "2"])])},
            f"{TERM}[0].matchExpressions[0].values",
            "must be one integer (as a string) with operator Lt, got a list of 2 items ('1', '2')",
        ),
        (
            {"affinity": affinity([("zone", "Like", ["a"])])},
            f"{TERM}[0].matchExpressions[0].operator",
            "must be one of In, NotIn, Exists, DoesNotExist, Gt, Lt, got 'Like'",
        ),
        (
            # An int among the values is the bad input under test.
            {"affinity": affinity([("gpus", "In", [8])])},  # type: ignore[list-item]
            f"{TERM}[0].matchExpressions[0].values",
            "must be a list of strings (quote numbers), got a list of 1 item (8)",
        ),
    ],
)
def test_placement_shapes_the_api_server_rejects(template: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(SizingError) as raised:
        placed(template)
    assert (raised.value.path, raised.value.message) == (path, message)


# --------------------------------------------------------------------------- assignment

#: A CPU pool then an H100 pool; team-a owns 2 CPU / 8Gi of the first and 32 CPU / 256Gi of the second.
TWO_POOLS = make_plan(
    {"cpu": amounts("16", "64Gi"), "gpu-h100": amounts("32", "256Gi")},
    {"team-a": {"cpu": amounts("2", "8Gi"), "gpu-h100": amounts("32", "256Gi")}},
)
CPU = Flavor("cpu", (("node-pool", "cpu"),))


def test_node_selector_lands_the_job_on_its_pool() -> None:
    pods = job_shape(spec({"nodeSelector": {"node-pool": "gpu-h100"}}), preset()).pod_sets
    result = assign(TWO_POOLS, "team-a", pods, flavors=Flavors([CPU, H100_TOLERATED]))
    assert result.pod_sets == (
        PodSetAssignment("controller", 1, "gpu-h100"),
        PodSetAssignment("workers", 1, "gpu-h100"),
    )
    # floor(32 / 600m) = 53; floor(256Gi / 6912Mi) = 37.
    assert (result.flavors, result.jobs_on_nominal, result.error) == (("gpu-h100",), 37, None)


def test_without_flavors_every_pool_accepts_every_pod() -> None:
    pods = job_shape(spec({"nodeSelector": {"node-pool": "gpu-h100"}}), preset()).pod_sets
    assert assign(TWO_POOLS, "team-a", pods).flavors == ("cpu",)


def test_untolerated_taint_moves_the_job_to_the_next_flavor() -> None:
    tainted = Flavor("cpu", CPU.node_labels, (Taint(key="dedicated", value="x", effect="NoSchedule"),))
    result = assign(TWO_POOLS, "team-a", pod_sets(50), flavors=Flavors([tainted, H100_TOLERATED]))
    assert (result.flavors, result.jobs_on_nominal) == (("gpu-h100",), 37)
    tolerating = job_shape(spec({"tolerations": [{"key": "dedicated", "operator": "Exists"}]}), preset()).pod_sets
    result = assign(TWO_POOLS, "team-a", tolerating, flavors=Flavors([tainted, H100_TOLERATED]))
    assert (result.flavors, result.jobs_on_nominal) == (("cpu",), 1)  # floor(8Gi / 6912Mi) = 1


def test_skipped_flavors_and_a_flavor_too_small() -> None:
    # The pods may use only cpu (H100 is tainted), whose 6Gi cannot hold 1792Mi + 0.13.0's 6Gi worker pod.
    pods = pod_sets(50, "0.13.0")
    plan = make_plan(
        {"cpu": amounts("16", "64Gi"), "gpu-h100": amounts("32", "256Gi")},
        {"team-a": {"cpu": amounts("8", "6Gi"), "gpu-h100": amounts("32", "256Gi")}},
    )
    result = assign(plan, "team-a", pods, flavors=Flavors([CPU, H100]))
    assert result.error == (
        "fix: give ClusterQueue team-a memory +1792Mi in flavor cpu (nominalQuota); needs cpu 3800m, memory "
        "7936Mi; ClusterQueue team-a can reach at most cpu 8, memory 6Gi in flavor cpu "
        "(nominal, no cohort); podSet controller gets flavor cpu, then podSet workers (cpu 3350m, memory 6Gi) "
        "fits no flavor; Kueue would keep it pending with \"couldn't assign flavors to pod set workers: "
        "insufficient quota for memory in flavor cpu, previously considered podsets requests (1792Mi) + current "
        f'podset request (6Gi) > maximum capacity (6Gi), {UNTOLERATED}"'
    )


def test_no_flavor_accepts_the_pods() -> None:
    pods = job_shape(spec({"nodeSelector": {"node-pool": "gpu-a100"}}), preset()).pod_sets
    result = assign(TWO_POOLS, "team-a", pods, flavors=Flavors([CPU, H100]))
    assert result.error == (
        "its pods' nodeSelector, affinity and tolerations (spec.podTemplate) match no flavor of ClusterQueue "
        "team-a (the pools' nodeLabels and nodeTaints); Kueue would keep it pending with \"couldn't assign "
        f"flavors to pod set controller: flavor cpu doesn't match node affinity, {UNTOLERATED}\""
    )
    assert result.pod_sets == (PodSetAssignment("controller", 1, None), PodSetAssignment("workers", 1, None))


def test_a_pod_set_without_requests_checks_no_flavor() -> None:
    # resourceMode none: nothing requested, so no flavor is looked for and none can be skipped.
    pods = job_shape(spec({"nodeSelector": {"node-pool": "gpu-a100"}}, resourceMode="none"), preset()).pod_sets
    result = assign(TWO_POOLS, "team-a", pods, flavors=Flavors([CPU, H100]))
    assert (result.fits, result.flavors, result.requests, result.jobs_on_nominal) == (True, (), {}, None)


# --------------------------------------------------------------------------- pods

PODS_COVERED = ("cpu", "memory", "pods")


def pods_plan(pods_quota: str) -> Any:
    return make_plan(
        {"cpu": amounts("16", "64Gi", pods="110")},
        {"team-a": {"cpu": amounts("8", "32Gi", pods=pods_quota)}},
        covered=PODS_COVERED,
    )


def test_covered_pods_are_charged_one_per_pod() -> None:
    result = assign(pods_plan("4"), "team-a", pod_sets(50))
    assert result.requests == {"cpu": Fraction(600, 1000), "memory": Fraction(6912 * MI), "pods": 2}
    assert result.usage == {"cpu": {"cpu": Fraction(600, 1000), "memory": Fraction(6912 * MI), "pods": 2}}
    assert result.jobs_on_nominal == 2  # floor(4 pods / 2); cpu would allow 13, memory 4


def test_two_pod_job_with_one_pod_of_quota_never_fits() -> None:
    result = assign(pods_plan("1"), "team-a", pod_sets(50))
    # The controller takes the one pod; the single worker pod needs 1 + 1 - 1 = 1 more (no room to run fewer).
    assert result.error == (
        "fix: give ClusterQueue team-a pods +1 in flavor cpu (nominalQuota); "
        "needs cpu 600m, memory 6912Mi, pods 2; ClusterQueue team-a can reach at most cpu 8, memory 32Gi, pods 1 "
        "(nominal, no cohort); podSet controller gets flavor cpu, then podSet workers (cpu 150m, memory 5Gi, "
        "pods 1) fits no flavor; Kueue would keep it pending with \"couldn't assign flavors to pod set workers: "
        "insufficient quota for pods in flavor cpu, previously considered podsets requests (1) + current podset "
        'request (1) > maximum capacity (1)"'
    )


def test_pods_are_charged_even_when_nothing_else_is() -> None:
    result = assign(pods_plan("4"), "team-a", pod_sets(50, resourceMode="none"))
    assert (result.flavors, result.requests, result.jobs_on_nominal) == (("cpu",), {"pods": Fraction(2)}, 2)


# --------------------------------------------------------------------------- whole stacks

STACK: dict[str, Any] = {
    "inventory": {
        "pools": [
            {"name": "cpu", "nodes": 2, "cpu": "8", "memory": "32Gi", "nodeLabels": {"node-pool": "cpu"}},
            {
                "name": "gpu-h100",
                "nodes": 1,
                "cpu": "32",
                "memory": "256Gi",
                "gpus": 8,
                "nodeLabels": {"node-pool": "gpu-h100"},
                "nodeTaints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            },
        ]
    },
    "queues": {"clusterQueues": [{"name": "team-a", "share": 100, "namespaces": [{"name": "bench-a"}]}]},
}


def job(name: str, pod_template: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    return {"name": name, "namespace": "bench-a", "spec": spec(pod_template, **fields).manifest()}


def planned(values: dict[str, Any]) -> Any:
    return plan_stack(parse_config(values, "test.yaml"), "test.yaml", ROOT)


def row(name: str, digest: str, **changes: Any) -> dict[str, Any]:
    """A jobs-table row; ``digest``: of the job's spec, which names its AIPerfJob."""
    base = {
        "name": name,
        "objectName": f"{name}-{digest}",
        "namespace": "bench-a",
        "queue": "aiperf-queue",
        "clusterQueue": "team-a",
        "priorityClass": None,
        "pods": 2,
        "workers": 1,
        "requests": {"cpu": "3800m", "memory": "7936Mi"},
        "flavor": ["cpu"],
        "fits": True,
        "borrowing": False,
        "fitOnNominal": 4,  # floor(16 / 3800m); memory would allow 8
    }
    return {**base, **changes}


GPU_POD_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def test_jobs_table_shows_the_pool_a_node_selector_picks() -> None:
    pinned = {"nodeSelector": {"node-pool": "gpu-h100"}, "tolerations": [GPU_POD_TOLERATION]}
    plan = planned({**STACK, "jobs": [job("anywhere"), job("pinned", pinned)]})
    # gpu-h100: floor(32 / 3800m) = 8; floor(256Gi / 7936Mi) = 33.
    assert plan.jobs_table() == [
        row("anywhere", "bac157"),
        row("pinned", "559793", flavor=["gpu-h100"], fitOnNominal=8),
    ]
    assert plan.jobs.warnings == ()


def test_a_job_pinned_to_a_tainted_pool_needs_its_own_toleration() -> None:
    # Kueue would admit it on gpu-h100 (the flavor adds the toleration), but AIPerf's preflight checks
    # the pod template's own tolerations: no untainted node has the label, so it fails the job first.
    values = {**STACK, "jobs": [job("pinned", {"nodeSelector": {"node-pool": "gpu-h100"}})]}
    with pytest.raises(ConfigError) as raised:
        planned(values)
    assert raised.value.lines() == [
        'test.yaml: aiperf-kueue:jobs[0]: pinned: AIPerf 0.13.0 would fail the AIPerfJob (status.error "Pre-flight '
        "failed: Per-Node Schedulability: No single node can fit the largest pod (3.4 CPU, 6.0Gi mem). Add larger "
        "nodes or reduce pod resource requirements.\"); every pool's nodes are excluded by a NoSchedule/NoExecute "
        "taint the pod template does not tolerate or by its nodeSelector; the operator checks spec.podTemplate's own "
        "tolerations, not the ones Kueue adds for a flavor, so add the pool's tolerations to "
        "spec.podTemplate.tolerations"
    ]


def test_a_taint_on_the_first_pool_moves_jobs_to_the_next() -> None:
    values = copy.deepcopy(STACK)
    values["inventory"]["pools"][0]["nodeTaints"] = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    values["jobs"] = [
        job("plain", {"tolerations": [GPU_POD_TOLERATION]}),
        job("tolerant", {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}),
    ]
    assert planned(values).jobs_table() == [
        row("plain", "8b2f48", flavor=["gpu-h100"], fitOnNominal=8),
        row("tolerant", "c91c47"),
    ]


def test_kueue_0_10_compares_on_every_flavors_label_keys() -> None:
    # The second pool has no labels: on 0.19 it matches any nodeSelector, on 0.10 it fails one on node-pool.
    values = copy.deepcopy(STACK)
    values["inventory"]["pools"][1] = {"name": "spare", "nodes": 1, "cpu": "8", "memory": "32Gi"}
    values["jobs"] = [job("pinned", {"affinity": affinity([("node-pool", "In", ["gpu-h100"])])})]
    assert planned(values).jobs_table() == [row("pinned", "b2ab09", flavor=["spare"], fitOnNominal=2)]
    values["kueue"] = {"version": "0.10.1"}
    with pytest.raises(ConfigError) as raised:
        planned(values)
    assert raised.value.lines() == [
        "test.yaml: aiperf-kueue:jobs[0]: pinned: its pods' nodeSelector, affinity and tolerations "
        "(spec.podTemplate) match no flavor of ClusterQueue team-a (the pools' nodeLabels and nodeTaints); Kueue "
        "would keep it pending with \"couldn't assign flavors to pod set controller: flavor cpu doesn't match "
        "node affinity, flavor spare doesn't match node affinity\""
    ]


def test_covered_pods_show_in_the_jobs_table() -> None:
    values = copy.deepcopy(STACK)
    values["queues"]["coveredResources"] = ["pods"]
    for pool in values["inventory"]["pools"]:
        pool["extraResources"] = {"pods": "110"}
    values["jobs"] = [job("counted")]
    # pods: floor(220 / 2) = 110; CPU still allows only 4.
    assert planned(values).jobs_table() == [
        row("counted", "bac157", requests={"cpu": "3800m", "memory": "7936Mi", "pods": 2}),
    ]


def test_resource_mode_none_bypasses_the_quota() -> None:
    values = {**STACK, "jobs": [job("free", resourceMode="none")]}
    plan = planned(values)
    assert plan.jobs_table() == [row("free", "45273c", requests={}, flavor=[], fitOnNominal=None)]
    assert plan.jobs.warnings == (
        "jobs[0] free: resourceMode none: its pods request nothing, so Kueue admits it at once whenever "
        "ClusterQueue team-a is active, reserves no quota for it and assigns it no flavor (no pool's nodeSelector "
        "or tolerations are added to its pods); it bypasses the quota: nothing guarantees its pods room next to "
        "what others run",
    )


def test_resource_mode_none_with_covered_pods() -> None:
    values = copy.deepcopy(STACK)
    values["queues"]["coveredResources"] = ["pods"]
    values["inventory"]["pools"][0]["extraResources"] = {"pods": "110"}
    values["jobs"] = [job("free", resourceMode="none")]
    plan = planned(values)
    assert plan.jobs_table() == [row("free", "45273c", requests={"pods": 2}, fitOnNominal=110)]
    assert plan.jobs.warnings == (
        "jobs[0] free: resourceMode none: the operator's containers request no CPU or memory, so Kueue charges "
        "it only pods 2 (flavor cpu) and it bypasses the CPU and memory quota: nothing guarantees its pods room "
        "next to what others run",
    )


@pytest.mark.parametrize(
    ("policy", "tail"),
    [
        ("Hold", ""),
        ("HoldAndDrain", "; HoldAndDrain also evicts the workloads it had admitted"),
    ],
)
def test_stop_policy_hold_warns_for_every_job_and_sweep(policy: str, tail: str) -> None:
    values = copy.deepcopy(STACK)
    values["queues"]["clusterQueues"][0]["stopPolicy"] = policy
    values["jobs"] = [job("held")]
    values["sweeps"] = [{"name": "sw", "namespace": "bench-a", "concurrency": [1, 8], "spec": job("x")["spec"]}]
    values["sweeps"][0]["spec"]["benchmark"]["phases"][0]["name"] = "profiling"
    assert planned(values).jobs.warnings == (
        f"jobs[0] held: ClusterQueue team-a has stopPolicy {policy}: it admits nothing new while stopPolicy is "
        f"{policy}, so the job stays pending until the stopPolicy is None again{tail}",
        f"sweeps[0] sw: ClusterQueue team-a has stopPolicy {policy}: it admits nothing new while stopPolicy is "
        f"{policy}, so its jobs stay pending until the stopPolicy is None again{tail}",
    )


def test_stop_policy_none_says_nothing() -> None:
    values = copy.deepcopy(STACK)
    values["queues"]["clusterQueues"][0]["stopPolicy"] = "None"
    values["jobs"] = [job("running")]
    assert planned(values).jobs.warnings == ()


def test_target_flavors_of_a_config() -> None:
    config = parse_config({**STACK}, "test.yaml")
    flavors = Flavors.of(config, KueueTarget.resolve("0.19.2", "auto"))
    assert flavors.flavors == (
        Flavor("cpu", (("node-pool", "cpu"),)),
        Flavor("gpu-h100", (("node-pool", "gpu-h100"),), (GPU_TAINT,), (GPU_TOLERATION,)),
    )
