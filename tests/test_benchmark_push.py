"""The one benchmark call the living cluster fakes (tests/e2e/benchmark_push.py), offline: which ``subPhase`` a real
AIPerf 0.13.0 controller would have pushed, given the operator's phase and the JobSet's pods."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.benchmark_push import next_push, phases_until
from tests.e2e.scenario_run import evicting, rolled_back, unexpected_phases


def _pod(role: str, phase: str, *, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": {"jobset.sigs.k8s.io/replicatedjob-name": role}}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-04T00:00:00Z"
    return {"metadata": meta, "status": {"phase": phase}}


def _job(phase: str, sub: str | None = None) -> dict[str, Any]:
    status = {"phase": phase, **({"subPhase": sub} if sub else {})}
    return {"metadata": {"name": "j", "namespace": "bench"}, "status": status}


RUNNING = [_pod("controller", "Running"), _pod("workers", "Running")]


@pytest.mark.parametrize(
    ("job", "pods", "push"),
    [
        # The controller's pod runs: it configures its services (0.13.0: Initializing).
        (_job("Pending"), RUNNING, "configuring"),
        (_job("Queued"), [_pod("controller", "Running"), _pod("workers", "Pending")], "configuring"),
        # Pushed once; the operator has not projected it yet.
        (_job("Queued", "configuring"), RUNNING, None),
        # The operator says Initializing and every pod runs: the benchmark profiles (0.13.0: Running).
        (_job("Initializing", "configuring"), RUNNING, "profiling"),
        (_job("Initializing"), RUNNING, "profiling"),
        # A worker not running yet: no profiling.
        (_job("Initializing", "configuring"), [_pod("controller", "Running"), _pod("workers", "Pending")], None),
        # No controller running (queued, preempted, or only workers left): nothing pushes.
        (_job("Queued"), [], None),
        (_job("Pending"), [_pod("workers", "Running")], None),
        (_job("Queued"), [_pod("controller", "Pending"), _pod("workers", "Pending")], None),
        (_job("Initializing"), [_pod("controller", "Running", deleting=True), _pod("workers", "Running")], None),
        # Already profiling, or the operator has moved on.
        (_job("Running", "profiling"), RUNNING, None),
        (_job("Running"), RUNNING, None),
        (_job("Failed"), RUNNING, None),
    ],
)
def test_next_push(job: dict[str, Any], pods: list[dict[str, Any]], push: str | None) -> None:
    assert next_push(job, pods) == push


@pytest.mark.parametrize(
    ("seen", "sampled", "phases"),
    [
        # The watch already saw the watchdog's Queued; the record was read before it: cut at the sampled phase.
        (["Pending", "Queued"], "Pending", ["Pending"]),
        # The watch has not yet seen the phase the read gave: added.
        (["Pending"], "Initializing", ["Pending", "Initializing"]),
        # In step: unchanged.
        (["Pending", "Initializing", "Running"], "Running", ["Pending", "Initializing", "Running"]),
        # A rollback the read already shows: the last occurrence counts.
        (["Pending", "Initializing", "Running", "Initializing"], "Initializing",
         ["Pending", "Initializing", "Running", "Initializing"]),
        # The read is older than the rollback the watch saw.
        (["Pending", "Initializing", "Running", "Initializing"], "Running", ["Pending", "Initializing", "Running"]),
        ([], None, []),
        ([], "Pending", ["Pending"]),
    ],
)
def test_a_records_phases_end_at_the_phase_it_read(seen: list[str], sampled: str | None, phases: list[str]) -> None:
    assert phases_until(seen, sampled) == phases


@pytest.mark.parametrize(
    ("phases", "rolled"),
    [
        (["Pending", "Initializing", "Running", "Initializing"], True),
        (["Pending", "Queued", "Initializing", "Running", "Queued"], True),
        (["Pending", "Initializing", "Running"], False),
        (["Pending", "Initializing"], False),
        (["Pending", "Initializing", "Running", "Completed"], False),
        ([], False),
    ],
)
def test_a_running_job_written_back_to_an_earlier_phase_is_a_rollback(phases: list[str], rolled: bool) -> None:
    assert rolled_back(phases) is rolled


RUN = ("Running", ("Pending", "Initializing", "Running"))
WAIT = ("Queued", ("Pending", "Queued"))


@pytest.mark.parametrize(
    ("got", "wrong"),
    [
        ({"01": {"a": RUN, "b": WAIT}}, {}),
        # 0.13.0's rollback of a run expected Running: allowed, named in unexpected_phases.
        ({"01": {"a": ("Initializing", ("Pending", "Initializing", "Running", "Initializing")), "b": WAIT}}, {}),
        # Any other difference is not.
        ({"01": {"a": ("Initializing", ("Pending", "Initializing")), "b": WAIT}},
         {"01 a": ("Initializing", ("Pending", "Initializing"))}),
        ({"01": {"a": RUN, "b": ("Initializing", ("Pending", "Queued", "Initializing"))}},
         {"01 b": ("Initializing", ("Pending", "Queued", "Initializing"))}),
        ({"01": {"a": RUN}}, {"01 b": "missing"}),
        ({"01": {"a": RUN, "b": WAIT, "c": RUN}}, {"01 c": RUN}),
        ({}, {"01 a": "missing", "01 b": "missing"}),
    ],
)
def test_phases_as_expected_or_rolled_back(got: dict[str, Any], wrong: dict[str, Any]) -> None:
    assert unexpected_phases(got, {"01": {"a": RUN, "b": WAIT}}) == wrong


def _workload(**conditions: str) -> dict[str, Any]:
    return {"status": {"conditions": [
        {"type": kind, "status": status, "reason": "InCohortReclamation" if kind == "Evicted" else "X"}
        for kind, status in conditions.items()
    ]}}


@pytest.mark.parametrize(
    ("workload", "why"),
    [
        # Preempted, the JobSet not stopped yet: Kueue still counts its quota, the preemptor waits. On its way.
        (_workload(QuotaReserved="True", Admitted="True", Evicted="True", Preempted="True"),
         "evicted (InCohortReclamation), its quota not released yet"),
        # The quota released: the workload waits like any other.
        (_workload(QuotaReserved="False", Admitted="False", Evicted="True", Preempted="True"), None),
        # Readmitted: SetQuotaReservation reset Evicted to False.
        (_workload(QuotaReserved="True", Admitted="True", Evicted="False", Preempted="False"), None),
        (_workload(QuotaReserved="True", Admitted="True"), None),
        ({}, None),
    ],
)
def test_an_evicted_workload_holding_quota_is_on_its_way(workload: dict[str, Any], why: str | None) -> None:
    assert evicting(workload) == why
