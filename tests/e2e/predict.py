"""The simulator's prediction for a scenario, compared with what the living cluster recorded for it.

Offline and cheap (no cluster): ``aiperf_kueue.simulate`` replays the scenario and each step's predicted records
are compared with ``out/e2e/scenarios/<name>/<NN>.json`` by :func:`aiperf_kueue.simulate.report.compare`, field by
field (admitted, clusterQueue, flavors, preemptedCount, finished); ``"either"`` accepts any value.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aiperf_kueue.simulate.report import PREDICTED_FIELDS, compare
from aiperf_kueue.simulate.run import simulate_scenario
from aiperf_kueue.simulate.scenario import load_scenario


def _interchangeable(step: dict[str, Any]) -> dict[str, Any]:
    """``step`` with each namespace's jobs named by their place in that namespace's sorted outcomes (``#1``, ...):
    for jobs alike in all but name, of which Kueue picks by arrival order."""
    by_namespace: dict[str, list[dict[str, Any]]] = {}
    for w in step.get("workloads", []):
        by_namespace.setdefault(w["namespace"], []).append(w)
    renamed = []
    for _, jobs in sorted(by_namespace.items()):
        jobs.sort(key=lambda w: json.dumps([w.get(f) for f in PREDICTED_FIELDS], sort_keys=True, default=str))
        renamed += [{**w, "job": f"#{i}"} for i, w in enumerate(jobs, 1)]
    return {**step, "workloads": renamed}


def prediction_differences(directory: Path, records: Path, *, interchangeable: bool = False) -> list[str]:
    """One line per field on which the simulator's prediction and the cluster's records differ, both sides
    printed; a step with no record file is a difference too. ``interchangeable``: a namespace's jobs are compared
    as a set of outcomes, not by name (a scenario whose equal jobs Kueue takes in arrival order)."""
    scenario = load_scenario(directory)
    predicted = simulate_scenario(scenario).step_records()
    out: list[str] = []
    for step, want in zip(scenario.steps, predicted, strict=True):
        path = records / f"{step.number}.json"
        if not path.is_file():
            out.append(f"{step.name}: no record {path}")
            continue
        got = json.loads(path.read_text())
        if interchangeable:
            want, got = _interchangeable(want), _interchangeable(got)
        out += compare(want, got)
    return out
