"""The scenario format (aiperf_kueue/simulate/scenario.py, the one reader of the e2e and simulate), offline: the
project's scenarios load, malformed ones are refused with one line naming the file and the key, and
``python -m tests.e2e.scenario`` exits 2 on them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aiperf_kueue.simulate.scenario import DEFAULT_SETTLE_SECONDS, ScenarioError, load_all, load_scenario
from tests.e2e.scenario import run_keys

ROOT = Path(__file__).resolve().parents[1]
OWN = ROOT / "tests" / "e2e" / "scenarios"
BASE = OWN / "completion-frees-quota"


def test_the_projects_scenarios_load() -> None:
    scenarios = {s.name: s for s in load_all(sorted(p for p in OWN.iterdir() if p.is_dir()))}
    assert {name: [step.name for step in s.steps] for name, s in scenarios.items()} == {
        "borrow-within-cohort": ["01-fill", "02-top", "03-high"],
        "capacity-grows": ["01-j1", "02-j2", "03-grow", "04-shrink"],
        "cohort-reclaim": ["01-a1", "02-a2", "03-b1"],
        "cohort-tree-reclaim": ["01-a1", "02-a2", "03-c1"],
        "completion-frees-quota": ["01-first", "02-second"],
        "edit-while-running": ["01-v1", "02-v2", "03-grow"],
        "fair-sharing": ["01-a-floods", "02-b-floods"],
        "fifo-strict-vs-besteffort": ["01-run", "02-big", "03-small"],
        "gang-fragmentation": ["01-gang"],
        "gpu-placement": ["01-place"],
        "pods-quota": ["01-first", "02-second"],
        "priority-preemption": ["01-low", "02-high"],
        "warnings-come-true": ["01-fill", "02-more"],
    }
    second = scenarios["completion-frees-quota"].steps[1]
    assert (second.number, second.settle_seconds, dict(second.run_seconds), second.jobs) == (
        "02", 180.0, {"first": 30.0}, ("first", "second")
    )


def _scenario(tmp_path: Path, scenario_yaml: str, files: dict[str, str] | None = None) -> Path:
    d = tmp_path / "s"
    d.mkdir()
    for name in ("01-first.yaml", "02-second.yaml"):
        shutil.copyfile(BASE / name, d / name)
    for name, text in (files or {}).items():
        (d / name).write_text(text)
    (d / "scenario.yaml").write_text(scenario_yaml)
    return d


def test_defaults(tmp_path: Path) -> None:
    s = load_scenario(_scenario(tmp_path, "steps:\n  - stack: 01-first.yaml\n"))
    assert [(x.name, x.settle_seconds, dict(x.run_seconds)) for x in s.steps] == [
        ("01-first", DEFAULT_SETTLE_SECONDS, {})
    ]


@pytest.mark.parametrize(
    ("scenario_yaml", "message"),
    [
        ("steps:\n  - stack: 03-missing.yaml\n", "s/scenario.yaml: steps[0].stack: 03-missing.yaml not found in"),
        ("steps: []\n", "s/scenario.yaml: steps: expected a non-empty list of steps"),
        ("step:\n  - stack: 01-first.yaml\n", "s/scenario.yaml: expected exactly one key, steps"),
        ("steps:\n  - stack: first.yaml\n",
         "s/scenario.yaml: steps[0].stack: 'first.yaml' is not a revision file name"),
        ("steps:\n  - {stack: 02-second.yaml}\n  - {stack: 01-first.yaml}\n",
         "s/scenario.yaml: steps[1].stack: 01-first.yaml does not come after 02-second.yaml"),
        ("steps:\n  - {stack: 01-first.yaml, settle: 3}\n",
         "s/scenario.yaml: steps[0].settle: unknown key; allowed: stack, settleSeconds, runSeconds"),
        ("steps:\n  - {stack: 01-first.yaml, settleSeconds: soon}\n",
         "s/scenario.yaml: steps[0].settleSeconds: 'soon' is not a number of seconds"),
        ("steps:\n  - {stack: 01-first.yaml, settleSeconds: -1}\n",
         "s/scenario.yaml: steps[0].settleSeconds: -1 is out of range"),
        ("steps:\n  - {stack: 01-first.yaml, settleSeconds: .nan}\n",
         "s/scenario.yaml: steps[0].settleSeconds: nan is not a number of seconds"),
        ("steps:\n  - {stack: 01-first.yaml, runSeconds: {first: true}}\n",
         "s/scenario.yaml: steps[0].runSeconds.first: True is not a number of seconds"),
        ("steps:\n  - {stack: 01-first.yaml, runSeconds: {second: 20}}\n",
         "s/scenario.yaml: steps[0].runSeconds.'second': no job of that name in 01-first.yaml or an earlier revision; "
         "declared: first"),
        ("steps:\n  - {stack: 01-first.yaml, runSeconds: [first]}\n",
         "s/scenario.yaml: steps[0].runSeconds: expected a mapping of job name to seconds"),
        ("steps: [\n", "s/scenario.yaml: not YAML"),
    ],
)
def test_malformed_scenarios_are_refused_naming_file_and_key(tmp_path: Path, scenario_yaml: str, message: str) -> None:
    with pytest.raises(ScenarioError) as exc:
        load_scenario(_scenario(tmp_path, scenario_yaml))
    text = str(exc.value)
    assert "\n" not in text
    assert text.startswith(str(tmp_path / message.split(":", 1)[0]) + ":")
    assert message.split(":", 1)[1].strip() in text


def test_revisions_of_another_stack_are_refused(tmp_path: Path) -> None:
    other = "encryptionsalt: v1:abc:def\n" + (BASE / "02-second.yaml").read_text()
    d = _scenario(tmp_path, "steps:\n  - stack: 01-first.yaml\n  - stack: 02-second.yaml\n", {"02-second.yaml": other})
    with pytest.raises(ScenarioError) as exc:
        load_scenario(d)
    assert str(exc.value) == (
        f"{d}/scenario.yaml: steps[1].stack: 02-second.yaml belongs to another stack than 01-first.yaml (its "
        "secretsprovider/encryptionsalt/encryptedkey differ); a scenario revises one stack"
    )


def test_a_revision_the_program_refuses_is_refused_with_its_key(tmp_path: Path) -> None:
    bad = (BASE / "02-second.yaml").read_text().replace("nodes: 1", "nodes: 0")
    d = _scenario(tmp_path, "steps:\n  - stack: 01-first.yaml\n  - stack: 02-second.yaml\n", {"02-second.yaml": bad})
    with pytest.raises(ScenarioError) as exc:
        load_scenario(d)
    assert str(exc.value).startswith(f"{d}/02-second.yaml: aiperf-kueue:inventory.pools[0].nodes")


def test_hostile_yaml_is_refused_quickly(tmp_path: Path) -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    with pytest.raises(ScenarioError) as exc:
        load_scenario(_scenario(tmp_path, bomb + "steps: x\n"))
    assert "expected exactly one key, steps" in str(exc.value)


def test_the_checker_exits_2_with_one_line(tmp_path: Path) -> None:
    d = _scenario(tmp_path, "steps:\n  - {stack: 01-first.yaml, runSeconds: {nobody: 5}}\n")
    result = subprocess.run(
        [sys.executable, "-m", "tests.e2e.scenario", str(BASE), str(d)], capture_output=True, text=True, cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"error: {d}/scenario.yaml: steps[0].runSeconds.'nobody': no job of that name in 01-first.yaml or an earlier "
        "revision; declared: first"
    ]
    assert result.stdout == ""


def test_edit_while_running_edits_only_the_benchmark() -> None:
    """Revision 2 changes `latency`'s spec (a new run), revision 3 only the pool size."""
    from aiperf_kueue.stackfile.loader import parse_config, read_stack

    d = OWN / "edit-while-running"
    configs = [parse_config(read_stack(d / f).values, f) for f in ("01-v1.yaml", "02-v2.yaml", "03-grow.yaml")]
    specs = [c.jobs[0].spec.model_dump(by_alias=True, exclude_none=True) for c in configs]
    assert [c.jobs[0].name for c in configs] == ["latency"] * 3
    assert [s["benchmark"]["phases"][0]["requests"] for s in specs] == [100, 200, 200]
    assert specs[1] == specs[2]
    assert [c.inventory.pools[0].nodes for c in configs] == [1, 1, 2]


class _Step:
    def __init__(self, *records: tuple[str, str]) -> None:
        self.records = [{"job": job, "namespace": "bench", "object": obj} for job, obj in records]


def test_run_keys_name_a_jobs_later_runs_in_the_order_they_appeared() -> None:
    steps = [
        _Step(("latency", "latency-ffffff"), ("other", "other-000000")),
        _Step(("latency", "latency-000000"), ("latency", "latency-ffffff")),
        _Step(("latency", "latency-aaaaaa"), ("latency", "latency-000000"), ("latency", "latency-ffffff")),
    ]
    got = [{key: r["object"] for key, r in runs.items()} for runs in run_keys(steps)]
    assert got == [
        {"latency": "latency-ffffff", "other": "other-000000"},
        {"latency": "latency-ffffff", "latency#2": "latency-000000"},
        {"latency": "latency-ffffff", "latency#2": "latency-000000", "latency#3": "latency-aaaaaa"},
    ]
