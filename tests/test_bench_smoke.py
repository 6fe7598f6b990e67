"""``make bench`` at its smallest: the structure of its output and the resource counts, never timing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tests.bench.__main__ as bench
from tests.bench import fleet, replay


def test_fleet_sizes_land_near_their_targets() -> None:
    for target in (100, 1000, 10_000):
        size = fleet.fleet_for(target)
        assert abs(fleet.expected_resources(size) - target) <= max(5, target // 100), size


def test_replay_orders_parents_and_dependencies_first() -> None:
    records = [
        {"urn": "c", "parent": "a", "dependsOn": ["b"]},
        {"urn": "b", "parent": "a", "dependsOn": []},
        {"urn": "a", "parent": "stack", "dependsOn": []},
    ]
    assert [r["urn"] for r in replay.order(records)] == ["a", "b", "c"]


#: The bench report, its printed lines and its output directory.
Smallest = tuple[dict[str, Any], list[str], Path]


@pytest.fixture(scope="module")
def smallest(tmp_path_factory: pytest.TempPathFactory) -> Smallest:
    out = tmp_path_factory.mktemp("bench") / "results.json"
    # The real-engine half of `make bench` wrote its section before; the offline half keeps it.
    out.write_text(json.dumps({"realEngine": {"measuredAt": "earlier"}}))
    assert bench.main(["--sizes", "100", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    return report, bench.table(report), out


def test_bench_reports_program_floor_and_replay_for_the_same_resource_count(smallest: Smallest) -> None:
    report, _, _ = smallest
    assert set(report) == {"machine", "repeat", "sizes", "growth", "realEngine"}
    assert report["realEngine"] == {"measuredAt": "earlier"}
    assert set(report["machine"]) >= {"cores", "python", "pulumi", "pulumi-kubernetes"}
    [size] = report["sizes"]
    expected = fleet.expected_resources(fleet.fleet_for(100))
    assert size["target"] == 100
    assert size["expectedResources"] == expected
    # The program registers exactly what the generator promises; floor and replay register as many.
    assert size["resources"] == expected
    for kind in ("program", "floor", "replay"):
        assert size[kind]["resources"] == expected
        assert set(size[kind]) == {"resources", "wall", "cpu", "resourcesPerSecond", "peakRssMiB", "runs"}
        assert [m["kind"] for m in size["measurements"][kind]] == [kind]
    assert set(size["programOverFloor"]) == {"wall", "cpu", "peakRss"}
    assert set(size["programOverReplay"]) == {"wall", "cpu"}
    program = size["measurements"]["program"][0]
    assert set(program["files"]) == {"charts.yaml", "manifests.yaml", "plan.json", "resources.json"}
    assert report["growth"] == []


def test_bench_prints_a_table(smallest: Smallest) -> None:
    _, lines, _ = smallest
    assert lines[0].split()[:3] == ["target", "resources", "program"]
    assert lines[1].split()[:2] == ["100", str(fleet.expected_resources(fleet.fleet_for(100)))]


def test_growth_compares_consecutive_sizes() -> None:
    def size(target: int, resources: int, wall: float) -> dict[str, Any]:
        kind = {"wall": wall}
        return {"target": target, "resources": resources, "program": kind, "floor": kind}

    [row] = bench.growth([size(100, 100, 1.0), size(1000, 1000, 12.0)])
    assert row["from"] == 100 and row["to"] == 1000
    assert row["program"] == {"wall": 12.0, "perResource": pytest.approx(1.2)}
    assert "replay" not in row
