"""The one benchmark call the living cluster fakes (tests/e2e/benchmark_push.py), offline: which ``subPhase`` a real
AIPerf 0.13.0 controller would have pushed, given the operator's phase and the JobSet's pods."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.benchmark_push import next_push


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
