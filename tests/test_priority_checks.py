"""Priority without preemption, and priority classes sharing a value: warnings exactly in their cases."""

from __future__ import annotations

from typing import Any

import pytest

from aiperf_kueue.plan.stack_plan import plan_stack
from aiperf_kueue.queues.priority_checks import classes_in_use, priority_warnings
from aiperf_kueue.stackfile.loader import parse_config
from tests.support import WARNING_FREE_STACKS, committed_run, stack_values


def _stack(preemption: dict[str, Any] | None, *, cohort: bool = True, job_class: str | None = "high") -> dict[str, Any]:
    cq: dict[str, Any] = {"name": "team", "share": 50, "namespaces": [{"name": "bench"}]}
    if preemption is not None:
        cq["preemption"] = preemption
    job: dict[str, Any] = {
        "name": "run",
        "namespace": "bench",
        "spec": {
            "benchmark": {
                "models": ["m"],
                "endpoint": {"urls": ["http://m:8000"]},
                "datasets": [{"name": "main", "type": "synthetic"}],
                "phases": [{"name": "profiling", "type": "concurrency", "concurrency": 4, "requests": 10}],
                "serverMetrics": {"enabled": False},
            }
        },
    }
    if job_class is not None:
        job["priorityClass"] = job_class
    values: dict[str, Any] = {
        "inventory": {"pools": [{"name": "cpu", "nodes": 2, "cpu": "16", "memory": "64Gi"}]},
        "queues": {"clusterQueues": [cq, {"name": "other", "share": 50}]},
        "priorityClasses": [{"name": "high", "value": 1000}, {"name": "low", "value": 10}],
        "jobs": [job],
        # As the committed stacks: no "Memory Estimation" WARN from AIPerf's preflight.
        "operator": {"sizing": {"controller": {"RECORDS_MANAGER": {"memory": "512Mi"}}}},
    }
    if cohort:
        values["queues"]["cohort"] = "all"
    return values


def _warnings(values: dict[str, Any]) -> list[str]:
    return priority_warnings(parse_config(values, "test.yaml"))


NO_PREEMPTION_IN_COHORT = (
    "queues.clusterQueues[0].preemption: ClusterQueue 'team' admits jobs with WorkloadPriorityClass high (jobs[0] "
    "run), but its preemption cannot act on priority (withinClusterQueue and reclaimWithinCohort are Never or "
    "unset): a higher-priority job only moves ahead in the queue and never preempts an admitted one; set "
    "preemption.withinClusterQueue: LowerPriority, and/or preemption.reclaimWithinCohort: LowerPriority (or Any) "
    "to take back lent quota"
)


@pytest.mark.parametrize(
    "preemption",
    [
        None,
        {},
        {"withinClusterQueue": "Never"},
        {"reclaimWithinCohort": "Never"},
        {"withinClusterQueue": "Never", "reclaimWithinCohort": "Never"},
    ],
)
def test_priority_without_preemption_warns(preemption: dict[str, Any] | None) -> None:
    assert _warnings(_stack(preemption)) == [NO_PREEMPTION_IN_COHORT]


@pytest.mark.parametrize(
    "preemption",
    [
        {"withinClusterQueue": "LowerPriority"},
        {"withinClusterQueue": "LowerOrNewerEqualPriority"},
        {"reclaimWithinCohort": "LowerPriority"},
        {"reclaimWithinCohort": "Any"},
        {"withinClusterQueue": "Never", "reclaimWithinCohort": "Any"},
    ],
)
def test_preemption_that_acts_on_priority_does_not_warn(preemption: dict[str, Any]) -> None:
    assert _warnings(_stack(preemption)) == []


def test_no_priority_class_in_use_does_not_warn() -> None:
    assert _warnings(_stack(None, job_class=None)) == []


def test_without_a_cohort_reclaim_does_not_count() -> None:
    assert _warnings(_stack({"reclaimWithinCohort": "Any"}, cohort=False)) == [
        "queues.clusterQueues[0].preemption: ClusterQueue 'team' admits jobs with WorkloadPriorityClass high (jobs[0] "
        "run), but its preemption cannot act on priority (withinClusterQueue and reclaimWithinCohort are Never or "
        "unset, and it is in no cohort): a higher-priority job only moves ahead in the queue and never preempts an "
        "admitted one; set preemption.withinClusterQueue: LowerPriority (reclaimWithinCohort acts only in a cohort)"
    ]
    assert _warnings(_stack({"withinClusterQueue": "LowerPriority"}, cohort=False)) == []


def test_the_operators_default_class_counts_for_every_queue_with_namespaces() -> None:
    values = _stack({"withinClusterQueue": "LowerPriority"}, job_class=None)
    values["queues"]["clusterQueues"][1]["namespaces"] = [{"name": "other-bench"}]
    values["operator"] = {"defaultPriorityClass": "low"}
    config = parse_config(values, "test.yaml")
    assert classes_in_use(config) == {
        "team": {"low": ["jobs[0] run", "operator.defaultPriorityClass"]},
        "other": {"low": ["operator.defaultPriorityClass"]},
    }
    assert priority_warnings(config) == [
        "queues.clusterQueues[1].preemption: ClusterQueue 'other' admits jobs with WorkloadPriorityClass low "
        "(operator.defaultPriorityClass), but its preemption cannot act on priority (withinClusterQueue and "
        "reclaimWithinCohort are Never or unset): a higher-priority job only moves ahead in the queue and never "
        "preempts an admitted one; set preemption.withinClusterQueue: LowerPriority, and/or "
        "preemption.reclaimWithinCohort: LowerPriority (or Any) to take back lent quota"
    ]


def test_priority_classes_sharing_a_value_warn() -> None:
    values = _stack({"withinClusterQueue": "LowerPriority"})
    values["priorityClasses"] += [{"name": "urgent", "value": 1000}, {"name": "also-low", "value": 10}]
    assert _warnings(values) == [
        "priorityClasses[2].value: WorkloadPriorityClasses 'high' (priorityClasses[0]) and 'urgent' share value "
        "1000: Kueue compares values only, so neither is ordered ahead of nor preempts the other; give them distinct "
        "values",
        "priorityClasses[3].value: WorkloadPriorityClasses 'low' (priorityClasses[1]) and 'also-low' share value 10: "
        "Kueue compares values only, so neither is ordered ahead of nor preempts the other; give them distinct values",
    ]


def test_prod_research_without_preemption_would_warn() -> None:
    values, _ = stack_values("prod")
    values["queues"]["clusterQueues"][2]["preemption"] = {"withinClusterQueue": "Never"}
    assert _warnings(values) == [
        "queues.clusterQueues[2].preemption: ClusterQueue 'research' admits jobs with WorkloadPriorityClass "
        "benchmark-low (sweeps[0] llama-sweep, operator.defaultPriorityClass), but its preemption cannot act on "
        "priority (withinClusterQueue and reclaimWithinCohort are Never or unset): a higher-priority job only moves "
        "ahead in the queue and never preempts an admitted one; set preemption.withinClusterQueue: LowerPriority, "
        "and/or preemption.reclaimWithinCohort: LowerPriority (or Any) to take back lent quota"
    ]


@pytest.mark.parametrize("stack", WARNING_FREE_STACKS)
def test_warning_free_stacks_have_no_priority_warnings(stack: str) -> None:
    values, _ = stack_values(stack)
    assert _warnings(values) == []
    assert committed_run(stack).warnings == []


def test_priority_warnings_are_plan_warnings() -> None:
    values = _stack(None)
    plan = plan_stack(parse_config(values, "test.yaml"), "test.yaml")
    no_reclaim = (
        "cohort 'all', but no member of the cohort can reclaim (preemption.reclaimWithinCohort is Never or unset "
        "everywhere): lent quota stays with the borrower's jobs until they finish, so nominal quota is not "
        "guaranteed; fix: set preemption.reclaimWithinCohort: Any (or LowerPriority) on each member that lends, so it "
        "can take its quota back, or stop the sharing with lendingLimit / borrowingLimit 0"
    )
    assert plan.warnings == (
        "queues.clusterQueues[1]: ClusterQueue 'other' has no namespaces; no job can be submitted to it (it can still "
        "lend its quota in a cohort)",
        f"queues.clusterQueues[0]: ClusterQueue 'team' borrows from {no_reclaim}",
        f"queues.clusterQueues[1]: ClusterQueue 'other' lends to {no_reclaim}",
        NO_PREEMPTION_IN_COHORT,
    )
