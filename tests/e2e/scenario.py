"""``python -m tests.e2e.scenario DIR...``: check scenarios before any cluster starts (``make e2e SCENARIOS=``).

The format and its reader are the product's (:mod:`aiperf_kueue.simulate.scenario`): the e2e and
``aiperf-kueue simulate --scenario`` read scenarios with the same code. Exits 0 when every scenario is well formed,
else 2 and one line naming the file and the key.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aiperf_kueue.simulate.scenario import Scenario, ScenarioError, Step, load_all, load_scenario

__all__ = ["Scenario", "ScenarioError", "Step", "load_all", "load_scenario", "main", "run_keys"]


def run_keys(steps: Sequence[Any]) -> list[dict[str, dict[str, Any]]]:
    """Per step, its records by run: a job's key is its config name; when one step holds several runs of a job (an
    edited job's new run beside the retained old one), the run first seen keeps the name and the later ones are
    ``<job>#2``, ``<job>#3``, in the order they appeared (step, then object name). ``steps``: objects with
    ``records``, each record with ``job``, ``namespace`` and ``object``."""
    first_seen: dict[tuple[str, str], int] = {}
    for i, step in enumerate(steps):
        for r in step.records:
            first_seen.setdefault((r["namespace"], r["object"]), i)
    out = []
    for step in steps:
        by_job: dict[str, list[dict[str, Any]]] = {}
        for r in step.records:
            by_job.setdefault(r["job"], []).append(r)
        keyed: dict[str, dict[str, Any]] = {}
        for job, runs in by_job.items():
            runs.sort(key=lambda r: (first_seen[(r["namespace"], r["object"])], r["object"]))
            for n, r in enumerate(runs, 1):
                keyed[job if n == 1 else f"{job}#{n}"] = r
        out.append(keyed)
    return out


def main(argv: Sequence[str]) -> int:
    """0 when every scenario is well formed, else 2 and one line."""
    try:
        scenarios = load_all([Path(a) for a in argv])
    except ScenarioError as exc:
        print(f"error: {exc.lines()[0]}", file=sys.stderr)
        return 2
    for s in scenarios:
        print(f"{s.directory}: {len(s.steps)} steps ({', '.join(step.name for step in s.steps)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

