"""Classical preemption's room bound (:meth:`Preemptor._room`) answers "no targets" only where the trial removals
would find none: the events with the bound and with every search tried out are the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aiperf_kueue.simulate.engine import Revision, Simulation
from aiperf_kueue.simulate.preempt import Preemptor
from aiperf_kueue.simulate.run import plan_file
from aiperf_kueue.simulate.world import build_world
from tests.bench.simulate import stack_text

POLICIES = (
    "{reclaimWithinCohort: Any, withinClusterQueue: LowerPriority}",
    "{reclaimWithinCohort: LowerPriority, withinClusterQueue: LowerOrNewerEqualPriority,"
    " borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 2}}",
    "{reclaimWithinCohort: Any, borrowWithinCohort: {policy: LowerPriority}}",
    "{reclaimWithinCohort: LowerPriority}",
)


def stack(seed: int) -> str:
    """The bench's stack on 12 queues, each with a policy of :data:`POLICIES` and some with quota limits."""
    lines: list[str] = []
    for line in (
        stack_text(12, 8)
        .replace("        preemption: {reclaimWithinCohort: Any, withinClusterQueue: LowerPriority}\n", "")
        .splitlines()
    ):
        lines.append(line)
        if line.startswith("        nominalQuota:"):
            q = int(lines[-2].rsplit("-", 1)[1])
            lines.append(f"        preemption: {POLICIES[(q + seed) % len(POLICIES)]}")
            if q % 4 == 1:
                lines.append('        lendingLimit: {default: {cpu: "2", memory: 2000Mi}}')
            if q % 5 == 2:
                lines.append('        borrowingLimit: {default: {cpu: "3", memory: 6000Mi}}')
    return "\n".join(lines) + "\n"


def events(tmp_path: Path, seed: int) -> list[tuple[float, tuple[str, str], str, str]]:
    path = tmp_path / "Pulumi.gen.yaml"
    path.write_text(stack(seed))
    out = Simulation([Revision("gen", 0.0, build_world(plan_file(path)))]).run()
    return [(e.time, e.job, e.kind, e.detail) for e in out.events]


@pytest.mark.parametrize(("seed", "empty"), [(0, 2040), (1, 2001), (2, 2213), (3, 1885)])
def test_room_bound_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, empty: int) -> None:
    answers: list[bool] = []
    room = Preemptor._room

    def counted(self: Preemptor, *args: Any) -> bool:
        answers.append(room(self, *args))
        return answers[-1]

    with monkeypatch.context() as patch:
        patch.setattr(Preemptor, "_room", counted)
        bounded = events(tmp_path, seed)
    assert answers.count(False) == empty  # the bound did answer "no targets" without trials
    monkeypatch.setattr(Preemptor, "_room", lambda self, *args: True)
    tried = events(tmp_path, seed)
    assert bounded == tried
    assert (len(bounded), sum(1 for e in bounded if e[2] == "preempted")) == (294, 3)
