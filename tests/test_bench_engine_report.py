"""The real-engine half of ``make bench`` (tests/e2e/bench_engine.py) turns engine events into figures the same way
on any machine: checked here on made-up events, with no cluster and no engine. Nothing asserts a measured time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e import bench_report as report


def _events(steps: list[tuple[str, str, float, float]]) -> list[dict[str, object]]:
    """``(urn, op, start, end)`` as the engine's pre-step and outputs events."""
    out: list[dict[str, object]] = []
    for urn, op, start, end in steps:
        kind = "pulumi:providers:kubernetes" if urn == "provider" else f"kubernetes:core/v1:{urn.split('-')[0]}"
        out.append({"op": op, "urn": urn, "type": kind, "at": start})
        out.append({"op": "outputs", "urn": urn, "type": kind, "at": end})
    return out


def test_step_stats_count_what_the_engine_did_and_how_fast() -> None:
    events = _events([
        ("provider", "create", 0.0, 0.5),
        ("Namespace-a", "create", 1.0, 2.0),
        ("Namespace-b", "create", 1.0, 4.0),
        ("Role-a", "create", 2.0, 3.0),
        ("Role-old", "same", 0.5, 0.6),
    ])
    stats = report.step_stats(events)
    # The default provider and the unchanged resource are not steps of the update.
    assert stats["steps"] == 3
    assert stats["ops"] == {"create": 4, "same": 1}
    assert stats["span"] == 3.0
    assert stats["byType"]["Namespace"] == {"steps": 2, "median": 2.0, "p90": 3.0, "max": 3.0}
    assert report.step_stats(events, same=True)["steps"] == 4
    assert report.phases(stats, 0.0, 5.0) == {"beforeFirstStep": 1.0, "steps": 3.0, "afterLastStep": 1.0}


def test_a_stopped_update_is_extrapolated_and_says_so() -> None:
    x = report.extrapolate(600.0, 600, 1800, 1.0, 10, 30)
    assert x["label"].startswith("EXTRAPOLATED")
    assert x["lowerBoundSeconds"] == 600 + 1200
    # The remaining steps rewrite a state growing from 10 to 30 bytes: each costs twice the last one, on average.
    assert x["stateProportionalSeconds"] == 600 + 1200 * 2


def _size(namespaces: int, objects: int, kubectl: float, up: float, skip: float, *, stopped: bool = False) -> dict:
    creates = objects + namespaces
    return {
        "namespaces": namespaces,
        "manifestObjects": objects,
        "kubectlApply": {"seconds": kubectl},
        "pulumiUp": {"seconds": up, "stopped": stopped, "created": creates},
        "pulumiUpSkipCheckpoints": {"seconds": skip, "created": creates},
        "noChangePreview": {"seconds": skip / 2, "same": creates + 100},
        "skipCheckpointsUpOverKubectl": skip / kubectl,
    }


def test_marginal_costs_and_the_targets() -> None:
    small, large = _size(10, 50, 1.0, 30.0, 10.0), _size(1000, 5000, 100.0, 200.0, 100.0)
    [m] = report.marginal([large, small])
    assert (m["from"], m["to"]) == (10, 1000)
    assert m["kubectlMsPerObject"] == pytest.approx(1000 * 99 / 4950)
    assert m["upSkipCheckpointsMsPerCreate"] == pytest.approx(1000 * 90 / 5940)
    targets = report.targets([small, large], None)
    assert targets["upOverKubectlAt1000"]["measured"] == 2.0
    assert not targets["upOverKubectlAt1000"]["reached"]
    assert not targets["upOverKubectlAt1000"]["extrapolated"]
    # A stopped update gives no marginal cost of its own, and its ratio is marked extrapolated.
    stopped = _size(1000, 5000, 100.0, 600.0, 100.0, stopped=True)
    stopped["pulumiUp"]["extrapolation"] = report.extrapolate(600.0, 1000, 5990, 1.0, 10, 10)
    assert report.marginal([small, stopped])[0]["upMsPerCreate"] is None
    assert report.targets([stopped], None)["upOverKubectlAt1000"]["extrapolated"]


def test_the_real_engine_section_keeps_the_offline_ones(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"machine": {}, "sizes": [1], "realEngine": {"old": True}}))
    report.write_section(path, {"new": True})
    assert json.loads(path.read_text()) == {"machine": {}, "sizes": [1], "realEngine": {"new": True}}
