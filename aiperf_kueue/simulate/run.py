"""A stack, or a scenario of stack revisions, planned and simulated."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.plan.stack_plan import StackPlan, plan_values
from aiperf_kueue.simulate import report
from aiperf_kueue.simulate.engine import Outcome, Revision, Simulation
from aiperf_kueue.simulate.scenario import Scenario
from aiperf_kueue.simulate.world import DEFAULT_REQUEST_SECONDS, build_world
from aiperf_kueue.stackfile.loader import read_stack, stack_name_of


@dataclass(frozen=True)
class Result:
    """One simulation: its outcome and its per-step predictions (``either`` where timing decides)."""

    stack: str
    outcome: Outcome
    steps: list[tuple[str, list[dict[str, Any]]]]

    def step_records(self) -> list[dict[str, Any]]:
        """Per step ``{"step": "NN-label", "workloads": [...]}``, the e2e's record shape."""
        return [{"step": label, "workloads": records} for label, records in self.steps]


def plan_file(path: Path, source: str | None = None) -> StackPlan:
    """Validate and plan the stack file at ``path``; :class:`ConfigError` if it is invalid."""
    source = source if source is not None else str(path)
    stack = read_stack(path, source)
    try:
        return plan_values(stack.values, source, None, provider=stack.provider)
    except ConfigError as exc:
        raise ConfigError(source, exc.problems) from None


def simulate_stack(
    path: Path, *, request_seconds: float = DEFAULT_REQUEST_SECONDS, pods_ready_seconds: float = 0.0
) -> Result:
    """Every job of the stack created at 0 s, each running for its estimated time, until all are done."""
    plan = plan_file(path)

    def once(reverse: bool) -> Outcome:
        world = build_world(plan, None, request_seconds=request_seconds)
        sim = Simulation([Revision("end", 0.0, world)], pods_ready_seconds=pods_ready_seconds, reverse_ties=reverse)
        out = sim.run()
        out.observations.append(("end", sim.records()))
        return out

    first, second = once(False), once(True)
    steps = report.merge_either(first.observations, second.observations)
    return Result(stack_name_of(path), first, steps)


def simulate_scenario(
    scenario: Scenario, *, request_seconds: float = DEFAULT_REQUEST_SECONDS, pods_ready_seconds: float = 0.0
) -> Result:
    """The scenario's revisions one after another, each observed after its settle time."""
    plans = [plan_file(step.stack) for step in scenario.steps]
    stacks = {stack_name_of(step.stack) for step in scenario.steps}

    def once(reverse: bool) -> Outcome:
        revisions: list[Revision] = []
        at = 0.0
        run_seconds: dict[str, float] = {}
        for step, plan in zip(scenario.steps, plans, strict=True):
            run_seconds.update(step.run_seconds)
            world = build_world(plan, dict(run_seconds), request_seconds=request_seconds)
            revisions.append(Revision(step.name, at, world, at + step.settle_seconds))
            at += step.settle_seconds
        return Simulation(revisions, pods_ready_seconds=pods_ready_seconds, reverse_ties=reverse).run(at)

    first, second = once(False), once(True)
    steps = report.merge_either(first.observations, second.observations)
    name = sorted(stacks)[0] if len(stacks) == 1 else scenario.name
    return Result(name, first, steps)
