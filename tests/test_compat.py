"""The compatibility matrix (:mod:`aiperf_kueue.upstream.compat`): its cells re-derived from the two facts
through the preflight emulation, and what ``plan``/``diff`` do with it on Kueue 0.20.7.

The released operator's side of every cell is proven in ``tests/test_aiperf_oracle_compat.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aiperf_kueue.cli.cli import main
from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.plan.preflight import Cluster, check_kueue_queue
from aiperf_kueue.plan.stack_plan import StackPlan, plan_stack
from aiperf_kueue.stackfile.loader import parse_config
from aiperf_kueue.upstream import compat, kueue
from tests.support import ROOT, stack_values

ANNOTATION = "kueue.x-k8s.io/default-queue-name"


@pytest.mark.parametrize(
    ("version", "served"),
    [
        ((0, 10, 1), ("v1beta1",)),
        ((0, 14, 3), ("v1beta1",)),
        ((0, 15, 0), ("v1beta1", "v1beta2")),
        ((0, 19, 2), ("v1beta1", "v1beta2")),
        ((0, 20, 0), ("v1beta2",)),
        ((0, 20, 7), ("v1beta2",)),
        ((0, 21, 0), ("v1beta2",)),
    ],
)
def test_served_api_versions(version: tuple[int, int, int], served: tuple[str, ...]) -> None:
    assert kueue.served_api_versions(version) == served


def test_the_matrix_as_stated() -> None:
    table = {
        (line, aiperf, route): (v.works, v.preflight)
        for (line, aiperf), row in compat.MATRIX.items()
        for route, v in row.items()
    }
    assert table == {
        ("0.10-0.19", "0.13.0", "queueName"): (True, "PASS"),
        ("0.10-0.19", "0.13.0", "operatorDefaultQueue"): (True, "PASS"),
        ("0.10-0.19", "0.13.0", "noQueue"): (False, "PASS"),
        ("0.10-0.19", "0.13.0", "chartQueues"): (False, "-"),
        ("0.20-0.21", "0.13.0", "queueName"): (False, "FAIL"),
        ("0.20-0.21", "0.13.0", "operatorDefaultQueue"): (True, "SKIP"),
        ("0.20-0.21", "0.13.0", "noQueue"): (False, "SKIP"),
        ("0.20-0.21", "0.13.0", "chartQueues"): (False, "-"),
    }


@pytest.mark.parametrize("line", compat.KUEUE_LINES, ids=lambda line: line.name)
@pytest.mark.parametrize("release", ["0.13.0"])
def test_every_cell_follows_from_the_served_versions(line: compat.KueueLine, release: str) -> None:
    """Both ends of each line: the operator's view of Kueue and the emulated preflight give the cell."""
    row = compat.MATRIX[(line.name, release)]
    last = (line.end[0], line.end[1] - 1, 0)
    for version in (line.first, last):
        sees = compat.operator_reads_local_queues(version, release)
        assert sees == ("v1beta1" in kueue.served_api_versions(version))
        cluster = Cluster(
            kueue_installed=sees,
            local_queues={"bench": ("aiperf-queue",)},
            annotations={"bench": {ANNOTATION: "aiperf-queue"}},
        )
        assert check_kueue_queue("bench", "aiperf-queue", cluster).status == row["queueName"].preflight
        assert check_kueue_queue("bench", None, cluster).status == row["operatorDefaultQueue"].preflight
        assert check_kueue_queue("bench", None, cluster).status == row["noQueue"].preflight
        assert row["queueName"].works == sees
        assert compat.chart_renders_queues(version, release) == sees
        assert (compat.explicit_queue_refusal(version, release) is None) == sees


def test_lines_cover_the_supported_range_without_gaps() -> None:
    assert compat.KUEUE_LINES[0].first == kueue.MIN_VERSION
    assert compat.KUEUE_LINES[-1].end == kueue.MAX_VERSION_EXCLUSIVE
    assert [a.end for a in compat.KUEUE_LINES[:-1]] == [b.first for b in compat.KUEUE_LINES[1:]]
    assert [line.name for line in compat.KUEUE_LINES] == ["0.10-0.19", "0.20-0.21"]


def _values(version: str) -> dict[str, Any]:
    values, _ = stack_values("dev")
    values["kueue"]["version"] = version
    return values


def _plan(values: dict[str, Any]) -> StackPlan:
    return plan_stack(parse_config(values, "dev"), "dev", ROOT)


def test_on_0_20_the_declared_job_and_the_cli_go_through_the_default_queue() -> None:
    plan = _plan(_values("0.20.7"))
    (job,) = plan.aiperf_jobs()
    assert job["spec"]["scheduling"] == {}
    assert plan.cli_commands() == {
        "aiperf-benchmarks": "aiperf kube profile --namespace aiperf-benchmarks --image nvcr.io/nvidia/aiperf:0.13.0"
    }
    rows = [(r["subject"].split(" ")[0], r["queueName"], r["status"], r["message"]) for r in plan.preflight_table()]
    assert rows == [
        ("AIPerfJob", None, "SKIP", "Kueue not installed (queue check skipped)"),
        (
            "aiperf",
            "aiperf-queue",
            "FAIL",
            "Kueue is not installed, but LocalQueue 'aiperf-queue' was explicitly requested. Install Kueue or remove "
            "scheduling.queueName from spec.",
        ),
        ("aiperf", None, "SKIP", "Kueue not installed (queue check skipped)"),
    ]
    then = plan.preflight_table()[0]["then"]
    assert then == (
        "the operator labels the JobSet kueue.x-k8s.io/queue-name=aiperf-queue (operator.defaultQueue: auto, the "
        "LocalQueue every benchmark namespace has) and creates it suspended; Kueue admits it through LocalQueue "
        "aiperf-queue (ClusterQueue benchmarks)"
    )
    # The admission proof still holds: the job fits its ClusterQueue as on 0.19.
    (row,) = plan.jobs_table()
    assert (row["queue"], row["clusterQueue"], row["fits"], row["fitOnNominal"]) == (
        "aiperf-queue",
        "benchmarks",
        True,
        1,
    )
    assert plan.warnings == ()


def test_on_0_19_the_declared_job_names_its_queue() -> None:
    plan = _plan(_values("0.19.2"))
    (job,) = plan.aiperf_jobs()
    assert job["spec"]["scheduling"] == {"queueName": "aiperf-queue"}
    assert [r["status"] for r in plan.preflight_table()] == ["PASS", "PASS", "PASS"]


def test_a_job_that_never_fits_is_still_refused_on_0_20() -> None:
    values = _values("0.20.7")
    values["jobs"][0]["spec"]["benchmark"]["phases"][0]["concurrency"] = 5000
    with pytest.raises(ConfigError) as info:
        _plan(values)
    (problem,) = info.value.problems
    assert problem.path == "jobs[0]"
    assert problem.message.startswith(
        "smoke: fix: run at most 20 workers (2 of its 5 worker pods, 10 workers each): lower the concurrency, or give "
        "ClusterQueue benchmarks cpu +9975m, memory +17831Mi in flavor default (nominalQuota)"
    )


def test_a_priority_class_named_default_warns_on_0_20_naming_each_job() -> None:
    values = _values("0.20.7")
    values["priorityClasses"] = [{"name": "default", "value": 10}]
    assert _plan(values).warnings == (
        "priorityClasses[0].name: Kueue 0.20.7 makes the WorkloadPriorityClass named 'default' (value 10) the "
        "priority of every workload that names none (WorkloadPriorityClassDefaulting, from Kueue 0.20): it silently "
        "applies to jobs[0] smoke, and to every aiperf kube profile run without --priority-class; name the class on "
        "purpose (priorityClass per job, or operator.defaultPriorityClass), or rename it if no job should get it by "
        "default",
    )
    values["kueue"]["version"] = "0.19.2"
    assert _plan(values).warnings == ()


def test_plan_and_diff_list_the_boundary_steps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dev = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text()
    base, head = tmp_path / "Pulumi.before.yaml", tmp_path / "Pulumi.after.yaml"
    base.write_text(dev)
    head.write_text(dev.replace("version: 0.19.2", "version: 0.20.7"))
    assert main(["plan", str(head), "--out", str(tmp_path / "out")]) == 0
    text = capsys.readouterr().out
    assert "From Kueue <= 0.19 to 0.20.7 (v1beta1 is no longer served), before pulumi up:\n  1. Kueue's storage" in text
    steps = json.loads((tmp_path / "out" / "plan.json").read_text())["kueueBoundary"]
    assert steps == compat.boundary_steps((0, 20, 7), "0.13.0")
    assert [s.split(":")[0] for s in steps] == [
        "Kueue's storage migration, on the running Kueue <= 0.19",
        "kueue.apiVersion",
        "jobs with an explicit queue",
        "operator.defaultQueue must route every job (auto, or a LocalQueue every benchmark namespace has)",
    ]
    main(["diff", str(base), str(head), "--allow-destructive"])
    report = capsys.readouterr().out
    assert "- Kueue 0.19.2 → 0.20.7 crosses the v1beta1 → v1beta2 boundary" in report
    assert (
        "- AIPerfJobs of the base that name their queue (spec.scheduling.queueName), each re-declared without it as "
        "a new run: `smoke-42740b` (aiperf-benchmarks)." in report
    )
    # The Kueue objects update in place: nothing of them is replaced or deleted across the boundary.
    assert "| replace | `queues-" not in report and "| delete |" not in report
    assert compat.boundary_steps((0, 19, 2), "0.13.0") == []


def test_docs_show_the_matrix_as_it_is() -> None:
    """``docs/aiperf.md`` carries :func:`aiperf_kueue.upstream.compat.matrix_markdown` between its markers, exactly."""
    text = (ROOT / "docs" / "aiperf.md").read_text()
    start, stop = text.index(compat.MATRIX_BEGIN), text.index(compat.MATRIX_END)
    block = text[start + len(compat.MATRIX_BEGIN) : stop].strip("\n").splitlines()
    assert block == compat.matrix_markdown()
    assert len(block) == 2 + 8


GAP = (
    "AIPerf 0.13.0's operator reads LocalQueues only through kueue.x-k8s.io/v1beta1 (aiperf/kubernetes/cr_refs.py), "
    "which Kueue 0.20.7 no longer serves (v1beta2 only), so its preflight takes Kueue for not installed"
)


def test_no_default_queue_without_declared_jobs_is_a_warning_on_0_20() -> None:
    values = _values("0.20.7")
    del values["jobs"]
    values["operator"]["defaultQueue"] = ""
    assert _plan(values).warnings == (
        f"operator.defaultQueue: {GAP}; only the operator's default queue routes a job into Kueue, and it is off: "
        "every aiperf kube profile run bypasses Kueue (no quota, no gang admission); set operator.defaultQueue",
    )
    values["kueue"]["version"] = "0.19.2"
    assert not [w for w in _plan(values).warnings if w.startswith("operator.defaultQueue")]


def test_an_external_operator_of_unknown_env_is_a_warning_on_0_20() -> None:
    values = _values("0.20.7")
    values["operator"] = {"install": False}
    warnings = _plan(values).warnings
    assert (
        f"operator.env: {GAP}; only the operator's default queue (AIPERF_K8S_JOBSET_KUEUE_DEFAULT_QUEUE_NAME) routes a "
        "job into Kueue, and the external operator's env is not declared; declare operator.env to know whether it does"
    ) in warnings
