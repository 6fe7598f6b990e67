"""The real-engine half of ``make bench`` (tests/e2e/bench_engine.py) turns engine events into figures the same way
on any machine: checked here on made-up events, with no cluster and no engine. Nothing asserts a measured time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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


def _size(
    namespaces: int, objects: int, kubectl: float, up: float, skip: float, *, stopped: bool = False
) -> dict[str, Any]:
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


def test_chart_state_bytes_count_the_charts_resources_and_their_crds_apart() -> None:
    crd_type = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
    crd = {"urn": f"urn:pulumi:s::p::aiperf-kueue:index:Install$kubernetes:helm.sh/v4:Chart${crd_type}::q",
           "type": crd_type}
    deployment = {"urn": "urn:pulumi:s::p::kubernetes:helm.sh/v4:Chart$kubernetes:apps/v1:Deployment::d",
                  "type": "kubernetes:apps/v1:Deployment"}
    queue = {"urn": "urn:pulumi:s::p::kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue::lq",
             "type": "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue"}
    state = {"checkpoint": {"latest": {"resources": [crd, deployment, queue]}}}

    def size(r: dict[str, str]) -> int:
        return len(json.dumps(r, separators=(",", ":")))

    assert report.chart_state_bytes(state) == {"charts": size(crd) + size(deployment), "crds": size(crd)}


def _measured(namespaces: int, *, stopped: bool = False) -> dict[str, Any]:
    size = _size(namespaces, 5 * namespaces, 2.0, 20.0, 4.0, stopped=stopped)
    size["upOverKubectl"] = 10.0
    size["stateBytesPerNamespace"] = 2500.0
    size["chartStateBytes"] = {"charts": 400_000, "crds": 350_000}
    size["pulumiUp"]["firstAdmittedShare"] = 0.05
    size["oneNamespaceEdit"] = {"kubectlSeconds": 1.0, "previewSeconds": 5.0, "upSeconds": 7.5}
    return size


def test_goals_report_issue_27s_table_and_what_this_run_did_not_measure() -> None:
    prod = {"noChangePreview": {"median": 5.0}, "previewOverPlan": 12.0}
    rows = {r["figure"]: r for r in report.goals([_measured(10), _measured(100)], prod)}
    assert [r["figure"] for r in report.goals([], None)] == [key for key, _, _ in report.GOALS]
    assert (rows["up100"]["measured"], rows["up100"]["met"]) == ("10.0x", False)
    # --quick stops at 100 namespaces: the 1,000-namespace figures are not measured, neither met nor missed.
    assert (rows["up1000"]["measured"], rows["up1000"]["met"]) == ("not measured", None)
    assert rows["skip1000"]["met"] is None
    assert (rows["prodPreview"]["measured"], rows["prodPreview"]["met"]) == ("5.0 s", False)
    assert rows["planVsPreview"]["met"] is True
    # 2.5 KB per namespace is within 3 KB, 400 KB of charts is not within 300 KB.
    assert (rows["stateBytes"]["measured"], rows["stateBytes"]["met"]) == ("2.5 KB / 0.40 MB (at 100)", False)
    assert (rows["firstAdmittedShare"]["measured"], rows["firstAdmittedShare"]["met"]) == ("5 % (at 100)", True)
    # 7.5 s is within 3 x 1 s of kubectl plus the 5 s preview (8 s).
    assert rows["oneNamespaceEdit"]["met"] is True
    assert rows["up100"]["before"] == "60x"
    # A stopped 1,000-namespace update is labelled extrapolated and never counts as met.
    stopped = _measured(1000, stopped=True)
    rows = {r["figure"]: r for r in report.goals([stopped], None)}
    assert rows["up1000"]["met"] is False
    assert "extrapolated" in rows["up1000"]["measured"]
    lines = report.goal_rows(report.goals([stopped], None))
    assert lines[0].split() == ["figure", "before", "this", "run", "goal", "met"]
    assert len(lines) == 1 + len(report.GOALS)


def test_goals_say_what_the_fleet_stack_of_two_measured_beside_the_single_stack() -> None:
    fleet = _measured(100)
    fleet["upOverKubectl"] = 4.0
    # The fleet stack's own state holds no chart; the charts are the platform stack's 4.26 MB.
    fleet["chartStateBytes"] = {"charts": 0, "crds": 0}
    fleet["platformUp"] = {"seconds": 24.0, "stateBytes": 4_260_000}
    split = {"sizes": [fleet], "prod": {"noChangePreview": {"median": 2.8}, "previewOverPlan": 2.1}}
    prod = {"noChangePreview": {"median": 7.0}, "previewOverPlan": 5.0}
    rows = {r["figure"]: r for r in report.goals([_measured(100)], prod, split)}
    assert (rows["up100"]["measured"], rows["up100"]["met"]) == ("10.0x", False)
    assert (rows["up100"]["twoStacks"], rows["up100"]["twoStacksMet"]) == ("4.0x", True)
    assert (rows["prodPreview"]["twoStacks"], rows["prodPreview"]["twoStacksMet"]) == ("2.8 s", True)
    assert (rows["planVsPreview"]["twoStacks"], rows["planVsPreview"]["twoStacksMet"]) == ("2.1x faster", False)
    # The split has no skip-checkpoints run: not measured, neither met nor missed.
    assert (rows["skip1000"]["twoStacks"], rows["skip1000"]["twoStacksMet"]) == ("not measured", None)
    assert rows["stateBytes"]["twoStacks"] == "2.5 KB / 4.26 MB in the platform stack (at 100)"
    assert rows["stateBytes"]["twoStacksMet"] is False
    lines = report.goal_rows(list(rows.values()))
    assert lines[0].split() == ["figure", "before", "this", "run", "goal", "met", "two", "stacks", "met"]
    assert lines[1].split()[-2:] == ["4.0x", "yes"]
    # Without --split the table keeps its five columns.
    assert "twoStacks" not in report.goals([_measured(100)], prod)[0]


def test_split_only_at_1000_namespaces_fills_the_two_stacks_column_alone() -> None:
    """``--split-only --sizes 1000``: no one-stack fleet, no prod; the fleet stack's up with and without checkpoints."""
    fleet = _measured(1000)
    fleet["upOverKubectl"], fleet["skipCheckpointsUpOverKubectl"] = 12.5, 1.5
    fleet["platformUp"] = {"seconds": 30.0, "stateBytes": 4_300_000}
    rows = {r["figure"]: r for r in report.goals([], None, {"sizes": [fleet], "prod": None})}
    assert (rows["up1000"]["measured"], rows["up1000"]["met"]) == ("not measured", None)
    assert (rows["up1000"]["twoStacks"], rows["up1000"]["twoStacksMet"]) == ("12.5x", False)
    assert (rows["skip1000"]["twoStacks"], rows["skip1000"]["twoStacksMet"]) == ("1.5x", True)
    assert (rows["up100"]["twoStacks"], rows["up100"]["twoStacksMet"]) == ("not measured", None)
    assert rows["stateBytes"]["twoStacks"] == "2.5 KB / 4.30 MB in the platform stack (at 1000)"


def test_state_by_type_says_where_the_state_goes() -> None:
    crd = {"type": "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition", "inputs": {"spec": "x" * 50},
           "outputs": {"spec": "x" * 50, "status": {}}}
    ns = {"type": "kubernetes:core/v1:Namespace", "inputs": {}, "outputs": {"metadata": {"name": "a"}}}
    rows = report.state_by_type({"checkpoint": {"latest": {"resources": [ns, crd, dict(ns)]}}})
    # Largest first; inputs and outputs measured apart.
    assert list(rows) == ["CustomResourceDefinition", "Namespace"]
    assert rows["Namespace"]["count"] == 2
    assert rows["Namespace"]["inputs"] == 2 * len("{}")
    assert rows["Namespace"]["outputs"] == 2 * len('{"metadata":{"name":"a"}}')
    assert rows["CustomResourceDefinition"]["inputs"] == len('{"spec":"' + "x" * 50 + '"}')


def test_engine_settings_beyond_the_defaults_are_key_value_pairs(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.e2e import bench_engine

    with pytest.raises(SystemExit) as raised:
        bench_engine.main(["--engine-env", "GOGC"])
    assert raised.value.code == 2
    assert "--engine-env wants KEY=VALUE, got 'GOGC'" in capsys.readouterr().err
    assert bench_engine.ENGINE_SETTINGS == {"backendQuery": "", "env": {}}


def test_another_pulumi_cli_must_be_an_executable_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.e2e import bench_engine

    with pytest.raises(SystemExit) as raised:
        bench_engine.main(["--pulumi-cli", str(tmp_path / "pulumi")])
    assert raised.value.code == 2
    assert f"--pulumi-cli {tmp_path / 'pulumi'}: not an executable file" in capsys.readouterr().err
