"""``aiperf-kueue simulate``: literal timelines of small scenarios, bad input, promised defaults."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aiperf_kueue.cli.cli import main
from aiperf_kueue.simulate.report import EITHER, compare
from aiperf_kueue.simulate.run import Result, simulate_scenario
from aiperf_kueue.simulate.scenario import DEFAULT_SETTLE_SECONDS, load_scenario
from aiperf_kueue.simulate.world import DEFAULT_REQUEST_SECONDS

SCENARIOS = Path(__file__).parent / "simulate_scenarios"


def run(name: str, directory: Path | None = None) -> Result:
    return simulate_scenario(load_scenario(directory or SCENARIOS / name))


def timeline(result: Result) -> list[tuple[str, list[float], list[float], float | None]]:
    from aiperf_kueue.simulate.report import timeline_rows

    return [
        (f"{r['namespace']}/{r['job']}", r["admitted"], r["preempted"], r["finished"])
        for r in timeline_rows(result.outcome)
    ]


def admitted(result: Result, step: int) -> dict[str, object]:
    return {w["job"]: w["admitted"] for w in result.steps[step][1]}


def test_completion_frees_quota() -> None:
    result = run("completion")
    assert timeline(result) == [("team-a/a1", [0.0], [], 20.0), ("team-a/a2", [20.0], [], 40.0)]
    assert result.step_records() == [
        {
            "step": "01-base",
            "workloads": [
                {
                    "job": "a1",
                    "namespace": "team-a",
                    "admitted": True,
                    "clusterQueue": "team-a",
                    "flavors": {"cpu": "default", "memory": "default"},
                    "preemptedCount": 0,
                    "finished": True,
                },
                {
                    "job": "a2",
                    "namespace": "team-a",
                    "admitted": True,
                    "clusterQueue": "team-a",
                    "flavors": {"cpu": "default", "memory": "default"},
                    "preemptedCount": 0,
                    "finished": True,
                },
            ],
        }
    ]


def test_priority_preemption_within_cluster_queue() -> None:
    result = run("priority")
    assert timeline(result) == [("team-a/low", [0.0], [30.0], None), ("team-a/high", [30.0], [], None)]
    low = result.steps[1][1][0]
    assert (low["admitted"], low["preemptedCount"]) == (False, 1)
    assert result.outcome.jobs[("team-a", "low")].eviction_reasons == ["Preempted"]
    details = [e.detail for e in result.outcome.events if e.kind == "preempted"]
    assert details == ["by team-a/high (InClusterQueue)"]


def test_cohort_borrowing_then_reclaim() -> None:
    result = run("reclaim")
    assert timeline(result) == [
        ("team-a/a1", [0.0], [], None),
        ("team-a/a2", [30.0], [60.0], None),
        ("team-b/b1", [60.0], [], None),
    ]
    assert admitted(result, 1) == {"a1": True, "a2": True}
    assert admitted(result, 2) == {"a1": True, "a2": False, "b1": True}
    details = [e.detail for e in result.outcome.events if e.kind == "preempted"]
    assert details == ["by team-b/b1 (InCohortReclamation)"]


def test_strict_fifo_blocks_head_of_line_best_effort_does_not() -> None:
    result = run("fifo")
    assert admitted(result, 1) == {
        "strict-r": True,
        "best-r": True,
        "strict-h": False,
        "strict-s": False,
        "best-h": False,
        "best-s": True,
    }
    assert result.steps[1][1][5]["flavors"] == {"cpu": "p2", "memory": "p2"}


def test_lending_and_borrowing_limits_hold() -> None:
    result = run("limits")
    # b1 and b2 are created together: which one gets team-b's own quota depends on timing ("either"), but
    # while a limit holds only one of them runs (unheld, both would be True); without limits both run.
    assert [admitted(result, i) for i in range(3)] == [
        {"a1": True, "b1": EITHER, "b2": EITHER},
        {"a1": True, "b1": EITHER, "b2": EITHER},
        {"a1": True, "b1": True, "b2": True},
    ]
    assert timeline(result) == [
        ("team-a/a1", [0.0], [], None),
        ("team-b/b1", [0.0], [], None),
        ("team-b/b2", [60.0], [], None),
    ]


def test_fair_sharing_admits_the_team_with_the_lower_share(tmp_path: Path) -> None:
    result = run("fairsharing")
    assert admitted(result, 1) == {"a1": True, "a2": True, "b1": True, "a3": False, "b2": True}
    # Without fair sharing both are borrowing at the same priority and time: Kueue's pick depends on timing.
    copy = tmp_path / "classic"
    shutil.copytree(SCENARIOS / "fairsharing", copy)
    for stack in copy.glob("0*.yaml"):
        stack.write_text(stack.read_text().replace("  aiperf-kueue:kueue:\n    fairSharing: {}\n", ""))
    classic = run("", copy)
    assert admitted(classic, 1) == {"a1": True, "a2": True, "b1": True, "a3": EITHER, "b2": EITHER}


def test_compare_accepts_either_and_reports_disagreements() -> None:
    predicted = {
        "step": "02-x",
        "workloads": [
            {"job": "a", "namespace": "n", "admitted": EITHER, "clusterQueue": "q", "flavors": {}, "finished": False},
            {"job": "b", "namespace": "n", "admitted": True, "clusterQueue": "q", "flavors": {"cpu": "f"}},
        ],
    }
    observed = {
        "step": "02-x",
        "workloads": [
            {"job": "a", "namespace": "n", "admitted": True, "clusterQueue": "q", "flavors": {}, "finished": False},
            {"job": "b", "namespace": "n", "admitted": False, "clusterQueue": "q", "flavors": {"cpu": "f"}},
            {"job": "c", "namespace": "n", "admitted": True},
        ],
    }
    assert compare(predicted, observed) == [
        "02-x n/b admitted: predicted True, observed False",
        "02-x n/c: recorded by the cluster, but not predicted",
    ]
    assert compare(predicted, {**observed, "workloads": observed["workloads"][:1]}) == [
        "02-x n/b: predicted, but the cluster recorded no such job"
    ]


def test_promised_defaults() -> None:
    scenario = load_scenario(SCENARIOS / "priority")
    assert DEFAULT_SETTLE_SECONDS == 120.0
    assert DEFAULT_REQUEST_SECONDS == 1.0
    assert [s.settle_seconds for s in scenario.steps] == [30.0, 30.0]
    assert [s.run_seconds for s in scenario.steps] == [{}, {}]
    result = run("priority")
    # Kueue's defaults: BestEffortFIFO, MayStopSearch/TryNextFlavor, weight 1, waitForPodsReady on in 0.19 (30m).
    world = result.outcome.worlds[0]
    cq = world.queues["team-a"]
    assert (cq.queueing_strategy, cq.when_can_borrow, cq.when_can_preempt, cq.weight) == (
        "BestEffortFIFO",
        "MayStopSearch",
        "TryNextFlavor",
        1.0,
    )
    assert (cq.reclaim_within_cohort, cq.borrow_within_cohort) == ("Never", "Never")
    ready = world.wait_for_pods_ready
    assert (ready.enabled, ready.timeout, ready.block_admission) == (True, 1800.0, False)
    assert (world.fair_sharing, world.strategies) == (False, ())


def test_estimate_from_requests_and_concurrency(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "dev"]) == 0
    out = capsys.readouterr().out
    # 100 requests at concurrency 4, 1 s each: 25 s, marked as an estimate.
    assert "| aiperf-benchmarks/smoke | benchmarks | 0 | 25s (estimate) | 0s | - | 25s |" in out
    assert "Campaign makespan: 25s" in out
    assert "```mermaid\ngantt\n" in out
    assert "  aiperf-benchmarks/smoke (finished) :done, 0, 25\n" in out


def _scenario(tmp_path: Path, text: str) -> Path:
    directory = tmp_path / "sc"
    directory.mkdir()
    shutil.copy(SCENARIOS / "completion" / "01-base.yaml", directory / "01-base.yaml")
    (directory / "scenario.yaml").write_text(text)
    return directory


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("steps: []\n", "scenario.yaml: steps: expected a non-empty list of steps"),
        ("steps:\n  - stack: base.yaml\n", "scenario.yaml: steps[0].stack: 'base.yaml' is not a revision file name"),
        ("steps:\n  - stack: 02-gone.yaml\n", "scenario.yaml: steps[0].stack: 02-gone.yaml not found in"),
        ("steps:\n  - stack: 01-base.yaml\n    settleSeconds: -1\n", "steps[0].settleSeconds: -1 is out of range"),
        ("steps:\n  - stack: 01-base.yaml\n    runSeconds: {a1: fast}\n", "steps[0].runSeconds.a1: 'fast' is not a"),
        ("steps:\n  - stack: 01-base.yaml\n    runSeconds: {zz: 5}\n", "runSeconds.'zz': no job of that name"),
        ("steps:\n  - stack: 01-base.yaml\n    waitSeconds: 5\n", "steps[0].waitSeconds: unknown key"),
        ("stepz: []\n", "scenario.yaml: expected exactly one key, steps (a list of steps); found ['stepz']"),
        ("steps: [\n", "scenario.yaml: not YAML (while parsing"),
        ("a: &a [*a, *a]\nsteps: *a\n", "scenario.yaml"),
    ],
)
def test_bad_scenario_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    directory = _scenario(tmp_path, text)
    out = tmp_path / "out"
    assert main(["simulate", "x", "--scenario", str(directory), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert message in err
    assert "Traceback" not in err
    assert not out.exists()


def test_out_writes_the_e2e_record_per_step(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["simulate", "x", "--scenario", str(SCENARIOS / "priority"), "--out", str(out)]) == 0
    assert sorted(p.name for p in (out / "steps").iterdir()) == ["01.json", "02.json"]
    assert (out / "steps" / "02.json").read_text().startswith('{\n  "step": "02-high",')
    assert "```mermaid" in (out / "timeline.md").read_text()
