"""Kueue flavor assignment on an empty cluster, with small hand-built QueuePlans.

Job sizes (the small sizing unless said otherwise; see test_job_shape.py):
small (AIPerf 0.13.0 with a 150m / 5Gi worker pod), concurrency 50 → controller 450m/1792Mi + 1 worker pod
150m/5Gi = 600m/6912Mi; 0.13.0's defaults, concurrency 50 → 450m/1792Mi + 3350m/6Gi = 3800m/7936Mi.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

import pytest

from aiperf_kueue.common import quantity
from aiperf_kueue.common.errors import Problem
from aiperf_kueue.config.aiperf_spec import AIPerfJobSpec
from aiperf_kueue.config.expansion import expand_sweeps
from aiperf_kueue.config.jobs import Job, Sweep
from aiperf_kueue.config.sizing import OperatorSizing
from aiperf_kueue.queues.queue_plan import PoolTotal, QueuePlan
from aiperf_kueue.stackfile.loader import parse_config
from aiperf_kueue.upstream.kueue import KueueTarget
from aiperf_kueue.workload.admission import Assignment, assign, check_jobs
from aiperf_kueue.workload.flavor_assigner import PodSetAssignment
from aiperf_kueue.workload.job_shape import PodSet, job_shape
from aiperf_kueue.workload.sizing import Sizing, release_sizing, with_overrides

GI = 2**30
MI = 2**20
Amounts = dict[str, Fraction]


def amounts(cpu: str, memory: str, **more: str) -> Amounts:
    out = {"cpu": quantity.parse(cpu), "memory": quantity.parse(memory)}
    out.update({k.replace("_", "-"): quantity.parse(v) for k, v in more.items()})
    return out


def make_plan(
    pools: dict[str, Amounts],
    nominal: dict[str, dict[str, Amounts]],
    borrowing: dict[str, dict[str, Amounts]] | None = None,
    lending: dict[str, dict[str, Amounts]] | None = None,
    covered: tuple[str, ...] = ("cpu", "memory"),
) -> QueuePlan:
    return QueuePlan(
        target=KueueTarget.resolve("0.19.2", "auto"),
        covered_resources=covered,
        pools=tuple(PoolTotal(name, totals, None) for name, totals in pools.items()),
        nominal=nominal,
        borrowing=borrowing or {},
        lending=lending or {},
    )


def cohorted(plan: QueuePlan, cohort: str = "all") -> QueuePlan:
    """``plan`` with every ClusterQueue in one flat cohort."""
    return dataclasses.replace(plan, parents=dict.fromkeys(plan.nominal, cohort), cohorts=(cohort,))


#: Operator sizings the tests size jobs with: 0.13.0's defaults, and a small worker pod.
SIZINGS: dict[str, Sizing] = {
    "0.13.0": release_sizing("0.13.0"),
    "small": with_overrides(
        release_sizing("0.13.0"), OperatorSizing.model_validate({"workerPod": {"cpu": "150m", "memory": "5Gi"}})
    ),
}


def preset(name: str = "small") -> Sizing:
    return SIZINGS[name]


def spec(concurrency: int = 50, **fields: Any) -> AIPerfJobSpec:
    phases = [{"name": "profiling", "type": "concurrency", "concurrency": concurrency, "requests": 100}]
    benchmark = {
        "models": ["m"],
        "endpoint": {"urls": ["http://llm:8000"]},
        "datasets": [{"name": "main"}],
        "phases": phases,
        **fields.pop("benchmark", {}),
    }
    return AIPerfJobSpec.model_validate({"benchmark": benchmark, **fields})


def pod_sets(concurrency: int = 50, sizing: str = "small", **fields: Any) -> tuple[PodSet, ...]:
    return job_shape(spec(concurrency, **fields), preset(sizing)).pod_sets


#: One CPU pool shared by three teams.
SHARED = make_plan(
    {"cpu": amounts("16", "128Gi")},
    {
        "team-a": {"cpu": amounts("2", "64Gi")},
        "team-b": {"cpu": amounts("6", "32Gi")},
        "team-c": {"cpu": amounts("8", "32Gi")},
    },
)


def test_max_capacity_without_cohort_is_nominal() -> None:
    assert SHARED.max_capacity("team-a", "cpu", "cpu") == 2
    assert SHARED.borrowable("team-a", "cpu", "memory") == 0


def test_max_capacity_in_cohort_adds_what_the_others_lend() -> None:
    # team-b and team-c lend everything: 6 + 8 = 14 CPU, 32Gi + 32Gi memory.
    assert cohorted(SHARED).max_capacity("team-a", "cpu", "cpu") == 16
    assert cohorted(SHARED).max_capacity("team-a", "cpu", "memory") == 128 * GI


def test_max_capacity_respects_lending_and_borrowing_limits() -> None:
    plan = make_plan(
        {"cpu": amounts("16", "128Gi")},
        SHARED.nominal,
        borrowing={"team-a": {"cpu": {"cpu": Fraction(3)}}},
        lending={"team-c": {"cpu": {"cpu": Fraction(1), "memory": Fraction(0)}}},
    )
    # Others lend 6 + 1 = 7 CPU, but team-a's borrowingLimit caps it at 3.
    assert cohorted(plan).borrowable("team-a", "cpu", "cpu") == 3
    assert cohorted(plan).max_capacity("team-a", "cpu", "cpu") == 5
    # Memory: team-b lends 32Gi, team-c 0 (lendingLimit); no borrowingLimit for memory.
    assert cohorted(plan).max_capacity("team-a", "cpu", "memory") == 96 * GI
    # team-b borrows from team-a (all 2) and team-c (lendingLimit 1): 6 + 3.
    assert cohorted(plan).max_capacity("team-b", "cpu", "cpu") == 9


def test_fits_on_nominal() -> None:
    result = assign(SHARED, "team-a", pod_sets(50))
    assert result == Assignment(
        cluster_queue="team-a",
        pod_sets=(PodSetAssignment("controller", 1, "cpu"), PodSetAssignment("workers", 1, "cpu")),
        usage={"cpu": {"cpu": Fraction(600, 1000), "memory": Fraction(6912 * MI)}},
        fits=True,
        borrowing=False,
        jobs_on_nominal=3,  # floor(2 / 600m) = 3; floor(64Gi / 6912Mi) = 9
        requests={"cpu": Fraction(600, 1000), "memory": Fraction(6912 * MI)},
    )


def test_fits_only_by_borrowing() -> None:
    # 0.13.0's defaults: 3800m / 7936Mi. team-a has 2 CPU of its own; the cohort lends 14 more.
    result = assign(cohorted(SHARED), "team-a", pod_sets(50, "0.13.0"))
    assert result == Assignment(
        cluster_queue="team-a",
        pod_sets=(
            PodSetAssignment("controller", 1, "cpu", borrowing=False),  # 450m <= 2
            PodSetAssignment("workers", 1, "cpu", borrowing=True),  # 450m + 3350m > 2
        ),
        usage={"cpu": {"cpu": Fraction(3800, 1000), "memory": Fraction(7936 * MI)}},
        fits=True,
        borrowing=True,
        jobs_on_nominal=0,
        error=None,
        requests={"cpu": Fraction(3800, 1000), "memory": Fraction(7936 * MI)},
    )


def test_fits_nowhere_without_cohort() -> None:
    result = assign(SHARED, "team-a", pod_sets(50, "0.13.0"))
    assert not result.fits
    # The controller (450m) takes the flavor first; the worker pod (3350m) then finds 2 - 450m left.
    assert result.error == (
        "fix: give ClusterQueue team-a cpu +1800m in flavor cpu (nominalQuota); needs cpu 3800m, memory 7936Mi; "
        "ClusterQueue team-a can reach at most cpu 2, memory 64Gi "
        "(nominal, no cohort); podSet controller gets flavor cpu, then podSet workers (cpu 3350m, memory 6Gi) "
        "fits no flavor; Kueue would keep it pending with \"couldn't assign flavors to pod set workers: "
        "insufficient quota for cpu in flavor cpu, previously considered podsets requests (450m) + current "
        'podset request (3350m) > maximum capacity (2)"'
    )
    assert result.pod_sets == (PodSetAssignment("controller", 1, None), PodSetAssignment("workers", 1, None))


def test_fits_nowhere_even_by_borrowing() -> None:
    plan = make_plan(
        {"cpu": amounts("8", "64Gi")},
        {"team-a": {"cpu": amounts("2", "32Gi")}, "team-b": {"cpu": amounts("6", "32Gi")}},
    )
    # 200 workers = 20 pods: 450m + 20 × 150m = 3450m; 1792Mi + 20 × 5120Mi = 104192Mi.
    result = assign(cohorted(plan), "team-a", pod_sets(20_000))
    # Room after the controller: (65536Mi - 1792Mi) / 5120Mi = 12.45 → 12 worker pods (cpu: 7550m / 150m = 50).
    # Missing: 104192Mi - 64Gi (65536Mi) = 38656Mi.
    assert result.error == (
        "fix: run at most 12 of its 20 worker pods: lower the concurrency, or give ClusterQueue team-a memory "
        "+38656Mi in flavor cpu (nominalQuota, or more to borrow in its cohort); "
        "needs cpu 3450m, memory 104192Mi; ClusterQueue team-a can reach at most "
        "cpu 8 (nominal 2 + borrowable 6), memory 64Gi (nominal 32Gi + borrowable 32Gi); podSet controller gets "
        "flavor cpu, then podSet workers (cpu 3, memory 100Gi) fits no flavor; Kueue would keep it pending with "
        "\"couldn't assign flavors to pod set workers: insufficient quota for memory in flavor cpu, previously "
        'considered podsets requests (1792Mi) + current podset request (100Gi) > maximum capacity (64Gi)"'
    )


#: Two pools: a small one first, a large one second.
TWO_POOLS = {"small": amounts("1", "8Gi"), "large": amounts("16", "64Gi")}


def test_lands_on_second_flavor_when_first_is_too_small() -> None:
    # small: 1 CPU but only 1Gi memory: neither podSet fits there.
    plan = make_plan(TWO_POOLS, {"team-a": {"small": amounts("1", "1Gi"), "large": amounts("8", "32Gi")}})
    result = assign(plan, "team-a", pod_sets(50))
    assert result.pod_sets == (PodSetAssignment("controller", 1, "large"), PodSetAssignment("workers", 1, "large"))
    assert result.flavors == ("large",)
    assert result.usage == {"large": {"cpu": Fraction(600, 1000), "memory": Fraction(6912 * MI)}}
    assert (result.borrowing, result.jobs_on_nominal) == (False, 4)  # floor(32Gi / 6912Mi) = 4; 8 / 600m = 13


def test_podsets_accumulate_on_a_flavor() -> None:
    # small holds 600m: controller (450m) then workers (150m) fill it exactly.
    fits = make_plan(TWO_POOLS, {"team-a": {"small": amounts("600m", "8Gi"), "large": amounts("8", "32Gi")}})
    assert assign(fits, "team-a", pod_sets(50)).flavors == ("small",)
    # 599m: the controller still fits small, but 450m + 150m does not, so the workers go to large.
    split = make_plan(TWO_POOLS, {"team-a": {"small": amounts("599m", "8Gi"), "large": amounts("8", "32Gi")}})
    result = assign(split, "team-a", pod_sets(50))
    assert result.pod_sets == (PodSetAssignment("controller", 1, "small"), PodSetAssignment("workers", 1, "large"))
    assert result.usage == {
        "small": {"cpu": Fraction(450, 1000), "memory": Fraction(1792 * MI)},
        "large": {"cpu": Fraction(150, 1000), "memory": Fraction(5120 * MI)},
    }
    assert result.jobs_on_nominal == 1  # small: floor(599m / 450m) = 1


def test_each_podset_gets_the_first_flavor_it_fits() -> None:
    # small: 400m. The controller (450m) goes to large; the worker pod (150m) alone fits small.
    plan = make_plan(TWO_POOLS, {"team-a": {"small": amounts("400m", "8Gi"), "large": amounts("8", "32Gi")}})
    result = assign(plan, "team-a", pod_sets(50))
    assert result.pod_sets == (PodSetAssignment("controller", 1, "large"), PodSetAssignment("workers", 1, "small"))


def test_fits_nowhere_lists_every_flavor() -> None:
    plan = make_plan(TWO_POOLS, {"team-a": {"small": amounts("1", "1Gi"), "large": amounts("2", "4Gi")}})
    result = assign(plan, "team-a", pod_sets(50, "0.13.0"))
    # The controller (450m, 1792Mi) fits only large; the worker pod (3350m, 6Gi) then fits neither. Kueue
    # names every resource short in every flavor, sorted. The fix grows small by the whole job
    # (3800m - 1 = 2800m, 7936Mi - 1Gi = 6912Mi): small grown by the worker pod's shortfall alone
    # (+2350m, +5Gi) would take the controller first and leave the worker pod 450m / 1792Mi short again.
    assert result.error == (
        "fix: give ClusterQueue team-a cpu +2800m, memory +6912Mi in flavor small (nominalQuota); needs cpu 3800m, "
        "memory 7936Mi; ClusterQueue team-a can reach at most "
        "cpu 1, memory 1Gi in flavor small; cpu 2, memory 4Gi in flavor large (nominal, no cohort); podSet "
        "controller gets flavor large, then podSet workers (cpu 3350m, memory 6Gi) fits no flavor; Kueue would "
        "keep it pending with \"couldn't assign flavors to pod set workers: "
        "insufficient quota for cpu in flavor large, previously considered podsets requests (450m) + current "
        "podset request (3350m) > maximum capacity (2), "
        "insufficient quota for cpu in flavor small, previously considered podsets requests (0) + current "
        "podset request (3350m) > maximum capacity (1), "
        "insufficient quota for memory in flavor large, previously considered podsets requests (1792Mi) + "
        "current podset request (6Gi) > maximum capacity (4Gi), "
        "insufficient quota for memory in flavor small, previously considered podsets requests (0) + current "
        'podset request (6Gi) > maximum capacity (1Gi)"'
    )


def test_controller_that_fits_nowhere_is_the_podset_named() -> None:
    plan = make_plan(TWO_POOLS, {"team-a": {"small": amounts("400m", "8Gi"), "large": amounts("300m", "32Gi")}})
    result = assign(plan, "team-a", pod_sets(50))
    # small + 50m holds the controller (450m); the worker pod (150m, 5Gi) then goes to large.
    assert result.error == (
        "fix: give ClusterQueue team-a cpu +50m in flavor small (nominalQuota); "
        "needs cpu 600m, memory 6912Mi; ClusterQueue team-a can reach at most cpu 400m, memory 8Gi in flavor "
        "small; cpu 300m, memory 32Gi in flavor large (nominal, no cohort); Kueue would keep it pending with "
        "\"couldn't assign flavors to pod set controller: "
        "insufficient quota for cpu in flavor large, previously considered podsets requests (0) + current "
        "podset request (450m) > maximum capacity (300m), "
        "insufficient quota for cpu in flavor small, previously considered podsets requests (0) + current "
        'podset request (450m) > maximum capacity (400m)"'
    )


@pytest.mark.parametrize(
    ("small", "large", "sizing", "fix", "grown"),
    [
        # The worker pod's shortfall alone would draw the controller into small: the whole job's.
        (amounts("1", "1Gi"), amounts("2", "4Gi"), "0.13.0", "cpu +2800m, memory +6912Mi", amounts("3800m", "7936Mi")),
        # The controller is short; once small holds it, the worker pod goes to large.
        (amounts("400m", "8Gi"), amounts("300m", "32Gi"), "small", "cpu +50m", amounts("450m", "8Gi")),
    ],
)
def test_the_quota_fix_admits_the_job(small: Amounts, large: Amounts, sizing: str, fix: str, grown: Amounts) -> None:
    pools = {"small": amounts("16", "64Gi"), "large": amounts("16", "64Gi")}
    plan = make_plan(pools, {"team-a": {"small": small, "large": large}})
    result = assign(plan, "team-a", pod_sets(50, sizing))
    assert result.error is not None
    assert result.error.startswith(f"fix: give ClusterQueue team-a {fix} in flavor small (nominalQuota); ")
    fixed = make_plan(pools, {"team-a": {"small": grown, "large": large}})
    assert assign(fixed, "team-a", pod_sets(50, sizing)).fits


def test_kueue_before_0_15_words_the_capacity_reason_as_it_did() -> None:
    plan = dataclasses.replace(SHARED, target=KueueTarget.resolve("0.10.1", "auto"))
    result = assign(plan, "team-a", pod_sets(50, "0.13.0"))
    assert result.error is not None
    assert result.error.endswith(
        "\"couldn't assign flavors to pod set workers: insufficient quota for cpu in flavor cpu, request > "
        'maximum capacity (3800m > 2)"'
    )


def test_when_can_borrow_try_next_flavor() -> None:
    # team-a owns nothing in small (team-b lends it 8 CPU there) and 8 CPU in large.
    plan = make_plan(
        {"small": amounts("8", "32Gi"), "large": amounts("8", "32Gi")},
        {
            "team-a": {"small": amounts("0", "0"), "large": amounts("8", "32Gi")},
            "team-b": {"small": amounts("8", "32Gi"), "large": amounts("0", "0")},
        },
    )
    stop = assign(cohorted(plan), "team-a", pod_sets(50))
    assert (stop.flavors, stop.borrowing, stop.jobs_on_nominal) == (("small",), True, 0)
    try_next = assign(cohorted(plan), "team-a", pod_sets(50), when_can_borrow="TryNextFlavor")
    assert (try_next.flavors, try_next.borrowing, try_next.jobs_on_nominal) == (("large",), False, 4)


def test_uncovered_resource_waits_forever() -> None:
    init = [{"name": "scratch", "resources": {"requests": {"ephemeral-storage": "10Gi"}}}]
    result = assign(SHARED, "team-a", pod_sets(50, podTemplate={"initContainers": init}))
    assert result.error == (
        "requests ephemeral-storage 20Gi, which ClusterQueue team-a does not cover: it would wait forever with "
        "'resource ephemeral-storage unavailable in ClusterQueue'; add ephemeral-storage to "
        "queues.coveredResources (with the pools' extraResources) or drop the request"
    )


def test_covered_extra_resource_is_charged() -> None:
    plan = make_plan(
        {"cpu": amounts("16", "128Gi", ephemeral_storage="1Ti")},
        {"team-a": {"cpu": amounts("2", "64Gi", ephemeral_storage="50Gi")}},
        covered=("cpu", "memory", "ephemeral-storage"),
    )
    init = [{"name": "scratch", "resources": {"requests": {"ephemeral-storage": "10Gi"}}}]
    result = assign(plan, "team-a", pod_sets(50, podTemplate={"initContainers": init}))
    assert result.usage["cpu"]["ephemeral-storage"] == 20 * GI
    assert result.jobs_on_nominal == 2  # floor(50Gi / 20Gi)


def test_resource_mode_none_always_fits() -> None:
    result = assign(SHARED, "team-a", pod_sets(20_000, resourceMode="none"))
    assert result == Assignment(
        cluster_queue="team-a",
        pod_sets=(PodSetAssignment("controller", 1, None), PodSetAssignment("workers", 20, None)),
        usage={},
        fits=True,
        borrowing=False,
        jobs_on_nominal=None,
    )


def test_unknown_cluster_queue() -> None:
    with pytest.raises(KeyError, match="unknown ClusterQueue 'team-z'"):
        assign(SHARED, "team-z", pod_sets(50))


# --------------------------------------------------------------------------- check_jobs

STACK: dict[str, Any] = {
    "inventory": {"pools": [{"name": "cpu", "nodes": 2, "cpu": "8", "memory": "64Gi"}]},
    "queues": {
        "clusterQueues": [
            {"name": "team-a", "share": 25, "namespaces": [{"name": "bench-a", "defaultQueue": True}]},
            {"name": "team-b", "share": 75, "namespaces": [{"name": "bench-b", "localQueue": "lq-b"}]},
        ]
    },
    "priorityClasses": [{"name": "high", "value": 100}],
}
#: The plan of STACK: 25% / 75% of 16 CPU and 128Gi.
STACK_PLAN = make_plan(
    {"cpu": amounts("16", "128Gi")},
    {"team-a": {"cpu": amounts("4", "32Gi")}, "team-b": {"cpu": amounts("12", "96Gi")}},
)


def base_spec(**fields: Any) -> dict[str, Any]:
    phases = [{"name": "profiling", "type": "concurrency", "concurrency": 1, "requests": 100}]
    benchmark = {
        "models": ["m"],
        "endpoint": {"urls": ["http://llm:8000"]},
        "datasets": [{"name": "main"}],
        "phases": phases,
    }
    return {"benchmark": benchmark, **fields}


def test_check_jobs_reports_a_sweep_point_that_never_fits() -> None:
    config = parse_config(STACK, "test.yaml")
    jobs = [Job.model_validate({"name": "smoke", "namespace": "bench-a", "priorityClass": "high", "spec": base_spec()})]
    # connectionsPerWorker 1: c128 → 128 workers → 130 → 13 pods:
    # 450m + 13 × 150m = 2400m; 1792Mi + 13 × 5120Mi = 68352Mi > team-a's 32Gi.
    sweeps = [
        Sweep.model_validate(
            {
                "name": "latency-sweep",
                "namespace": "bench-a",
                "concurrency": [1, 8, 32, 128],
                "spec": base_spec(connectionsPerWorker=1),
            }
        )
    ]
    report = check_jobs(expand_sweeps(jobs, sweeps, "test.yaml"), config, STACK_PLAN, preset())
    assert [(a.entry.name, a.local_queue, a.shape.num_pods, a.assignment.fits) for a in report.admissions] == [
        ("smoke", "aiperf-queue", 1, True),
        ("latency-sweep-c1", "aiperf-queue", 1, True),
        ("latency-sweep-c8", "aiperf-queue", 1, True),  # 8 workers, one pod
        ("latency-sweep-c32", "aiperf-queue", 4, True),  # 32 → 40 workers: 1050m / 22272Mi
        ("latency-sweep-c128", "aiperf-queue", 13, False),
    ]
    # Room after the controller: (32768Mi - 1792Mi) / 5120Mi = 6.05 → 6 pods = 60 workers (cpu: 3550m / 150m = 23).
    # Missing: 68352Mi - 32Gi (32768Mi) = 35584Mi.
    message = (
        "fix: run at most 60 workers (6 of its 13 worker pods, 10 workers each): lower the concurrency, or give "
        "ClusterQueue team-a memory +35584Mi in flavor cpu (nominalQuota); "
        "needs cpu 2400m, memory 68352Mi; ClusterQueue team-a can reach at most cpu 4, memory 32Gi "
        "(nominal, no cohort); podSet controller gets flavor cpu, then podSet workers (cpu 1950m, memory 65Gi) "
        "fits no flavor; Kueue would keep it pending with \"couldn't assign flavors to pod set workers: "
        "insufficient quota for memory in flavor cpu, previously considered podsets requests (1792Mi) + current "
        'podset request (65Gi) > maximum capacity (32Gi)"'
    )
    assert report.problems == (Problem("sweeps[0]", f"latency-sweep-c128: {message}"),)
    assert report.admissions[-1].message == f"sweeps[0] latency-sweep-c128: {message}"
    assert report.admissions[0].message is None
    assert report.warnings == ()


def test_check_jobs_borrowing_warning_in_cohort() -> None:
    config = parse_config({**STACK, "queues": {**STACK["queues"], "cohort": "all"}}, "test.yaml")
    sweeps = [
        Sweep.model_validate(
            {"name": "lat", "namespace": "bench-a", "concurrency": [128], "spec": base_spec(connectionsPerWorker=1)}
        )
    ]
    report = check_jobs(expand_sweeps([], sweeps, "test.yaml"), config, cohorted(STACK_PLAN), preset())
    assert report.problems == ()
    assert report.admissions[0].assignment.borrowing
    assert report.warnings == (
        "sweeps[0] lat-c128: needs cpu 2400m, memory 68352Mi, more than ClusterQueue team-a's nominal quota in "
        "flavor cpu; it runs only on quota borrowed from cohort 'all' and waits while the lenders use it",
    )


def test_check_jobs_resolution_problems() -> None:
    config = parse_config(STACK, "test.yaml")
    jobs = [
        Job.model_validate(entry)
        for entry in [
            {"name": "nowhere", "namespace": "other", "spec": base_spec()},
            {"name": "bad-queue", "namespace": "bench-b", "queue": "aiperf-queue", "spec": base_spec()},
            {"name": "bad-class", "namespace": "bench-b", "priorityClass": "low", "spec": base_spec()},
            {"name": "bad-size", "namespace": "bench-b", "spec": _workers(25)},
            {"name": "default-lq", "namespace": "bench-a", "queue": "default", "spec": base_spec()},
            {"name": "own-lq", "namespace": "bench-b", "spec": base_spec()},
        ]
    ]
    report = check_jobs(expand_sweeps(jobs, [], "test.yaml"), config, STACK_PLAN, preset())
    assert report.problems == (
        Problem(
            "jobs[0].namespace",
            "nowhere: namespace 'other' belongs to no ClusterQueue, so no LocalQueue exists there and the job "
            "would stay Queued forever; list it in a ClusterQueue's namespaces",
        ),
        Problem(
            "jobs[1].queue",
            "bad-queue: no LocalQueue 'aiperf-queue' in namespace 'bench-b' (LocalQueues there: lq-b); Kueue would "
            'keep the job pending with "LocalQueue aiperf-queue doesn\'t exist"',
        ),
        Problem(
            "jobs[2].priorityClass",
            "bad-class: unknown WorkloadPriorityClass 'low'; declared: high (aiperf-kueue:priorityClasses)",
        ),
        Problem(
            "jobs[3].spec.benchmark.runtime.workers",
            'bad-size: AIPerf 0.13.0 would fail the AIPerfJob (status.error "total_workers=25 is not a multiple of '
            "workers_per_pod=10, and a JobSet replicated job cannot express a partial final pod. Use a multiple of 10 "
            '(e.g. 20 or 30), or set runtime.workers_per_pod to a value that divides 25."); 25 workers is not a '
            "multiple of workersPerPod 10, and a JobSet cannot express a partial final pod: use 20 or 30, or set "
            "runtime.workersPerPod to a divisor of 25",
        ),
    )
    assert [(a.entry.name, a.cluster_queue, a.local_queue) for a in report.admissions] == [
        ("default-lq", "team-a", "default"),
        ("own-lq", "team-b", "lq-b"),
    ]


def _workers(n: int) -> dict[str, Any]:
    spec = base_spec()
    spec["benchmark"]["runtime"] = {"workers": n}
    return spec
