"""The simulator's fast paths (one try per shape key and quota version, cycles that only set jobs aside done at
once, the borrower index) give exactly the events of the plain cycle-by-cycle scheduler."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aiperf_kueue.simulate import engine
from aiperf_kueue.simulate.engine import Revision, Simulation
from aiperf_kueue.simulate.run import plan_file
from aiperf_kueue.simulate.world import SimJob, build_world
from tests.bench.simulate import stack_text

FAIR = "  aiperf-kueue:kueue:\n    fairSharing: {}\n  aiperf-kueue:priorityClasses:"
STRICT = (
    "        preemption: {reclaimWithinCohort: LowerPriority, withinClusterQueue: LowerOrNewerEqualPriority,"
    " borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 2}}\n        queueingStrategy: StrictFIFO"
)


def variant(name: str) -> str:
    text = stack_text(8, 6)
    if name == "fair":
        return text.replace("  aiperf-kueue:priorityClasses:", FAIR)
    if name == "strict":
        return text.replace(
            "        preemption: {reclaimWithinCohort: Any, withinClusterQueue: LowerPriority}", STRICT
        )
    return text


def events(tmp_path: Path, name: str, reverse: bool) -> list[tuple[float, tuple[str, str], str, str]]:
    path = tmp_path / "Pulumi.gen.yaml"
    path.write_text(variant(name))
    world = build_world(plan_file(path))
    out = Simulation([Revision("gen", 0.0, world)], reverse_ties=reverse).run()
    return [(e.time, e.job, e.kind, e.detail) for e in out.events]


def plain(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scheduler without its fast paths: every cycle run, every head assigned on its own."""
    monkeypatch.setattr(Simulation, "_skip_inadmissible_cycles", lambda self, limit: 0)

    def own_key(job: SimJob) -> tuple[Any, ...]:
        return (job.key, job.queue_time)

    monkeypatch.setattr(engine, "_shape_key", own_key)


@pytest.mark.parametrize(
    ("name", "reverse", "count", "preempted"),
    [("flat", False, 148, 2), ("flat", True, 150, 3), ("fair", False, 148, 2), ("strict", False, 144, 0)],
)
def test_fast_paths_change_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, reverse: bool, count: int, preempted: int
) -> None:
    fast = events(tmp_path, name, reverse)
    with monkeypatch.context() as patch:
        plain(patch)
        slow = events(tmp_path, name, reverse)
    assert len(fast) == count
    assert sum(1 for e in fast if e[2] == "preempted") == preempted
    assert fast == slow
