"""AIPerf's "Kueue Queue" preflight at plan time: the operator's table, this stack's cluster, plan output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from aiperf_kueue.cli.cli import main
from aiperf_kueue.cli.engine import run_program
from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.plan import preflight
from aiperf_kueue.plan.preflight import Cluster, Outcome, check_kueue_queue
from aiperf_kueue.plan.stack_plan import plan_stack
from aiperf_kueue.plan.stack_plan import plan_values as plan_stack_values
from aiperf_kueue.stackfile.loader import parse_config
from tests.support import CHECKED_STACKS, SECRET_SIG, committed_plan, committed_run, plan_values, stack_values

ANNOTATION = "kueue.x-k8s.io/default-queue-name"
CLUSTER = Cluster(
    kueue_installed=True,
    local_queues={"bench": ("aiperf-queue",), "plain": ("lq",)},
    annotations={"bench": {ANNOTATION: "aiperf-queue"}, "plain": {}},
)
NO_KUEUE = Cluster(kueue_installed=False)
FORBIDDEN = Cluster(kueue_installed=True, local_queues={"bench": ("aiperf-queue",)}, local_queue_http_error=403)


def plan_preflight(stack: str) -> list[dict[str, Any]]:
    """``plan.json``'s ``preflight`` rows of a committed stack (not a stack output: the review's alone)."""
    rows: list[dict[str, Any]] = committed_plan(stack).plan_data["preflight"]
    return rows


# One test per row of the operator's table (aiperf NOTES §4), with its exact wording ------------------


def test_row_queue_set_and_found_passes() -> None:
    assert check_kueue_queue("bench", "aiperf-queue", CLUSTER) == Outcome(
        "PASS", "Kueue LocalQueue 'aiperf-queue' exists"
    )


def test_row_queue_set_kueue_not_installed_fails() -> None:
    assert check_kueue_queue("bench", "aiperf-queue", NO_KUEUE) == Outcome(
        "FAIL",
        "Kueue is not installed, but LocalQueue 'aiperf-queue' was explicitly requested. Install Kueue or remove "
        "scheduling.queueName from spec.",
        "install Kueue (kueue.install: true) before submitting, or submit without a queue",
    )


def test_row_queue_set_not_found_fails() -> None:
    assert check_kueue_queue("bench", "fast", CLUSTER) == Outcome(
        "FAIL",
        "Kueue LocalQueue 'fast' not found. Create it or remove scheduling.queueName from spec.",
        "name a LocalQueue of namespace bench (aiperf-queue), or create 'fast' there (a namespace's localQueue, "
        "or defaultQueue: true for 'default')",
    )


def test_row_queue_set_other_http_error_warns() -> None:
    assert check_kueue_queue("bench", "aiperf-queue", FORBIDDEN) == Outcome(
        "WARN",
        "Could not verify Kueue queue: HTTP 403",
        "let the operator read LocalQueues: its ClusterRole needs get and list on kueue.x-k8s.io localqueues (the "
        "chart's clusterrole.yaml grants them)",
    )


def test_row_no_queue_kueue_not_installed_skips() -> None:
    assert check_kueue_queue("bench", None, NO_KUEUE) == Outcome(
        "SKIP",
        "Kueue not installed (queue check skipped)",
        "install Kueue, or accept that the job runs without gang-scheduling and quota",
    )


def test_row_no_queue_annotated_namespace_passes() -> None:
    assert check_kueue_queue("bench", None, CLUSTER) == Outcome(
        "PASS", "No explicit queue specified but namespace has kueue.x-k8s.io/default-queue-name annotation"
    )


def test_row_no_queue_no_annotation_warns() -> None:
    assert check_kueue_queue("plain", None, CLUSTER) == Outcome(
        "WARN",
        "Kueue is installed but no queue configured. Job will bypass gang-scheduling and quota management.",
        "set spec.scheduling.queueName (aiperf kube profile --queue-name lq), or annotate the namespace: "
        "kubectl annotate namespace plain kueue.x-k8s.io/default-queue-name=lq",
    )


def test_a_forbidden_install_probe_reads_as_not_installed() -> None:
    # The operator's "installed" probe lists LocalQueues; a 403 there counts as "not installed".
    assert check_kueue_queue("bench", None, FORBIDDEN).status == "SKIP"


# This stack's cluster ------------------------------------------------------------------------------


def test_prod_preflight_table() -> None:
    rows = plan_preflight("prod")
    assert [(r["subject"], r["status"], r["message"]) for r in rows] == [
        # Declared jobs by their AIPerfJobs' names: the config name and the digest of the spec.
        ("AIPerfJob bench-team-a/llama-latency-7b5e06", "PASS", "Kueue LocalQueue 'aiperf-queue' exists"),
        *[
            (f"AIPerfJob bench-research/llama-sweep-{point}", "PASS", "Kueue LocalQueue 'aiperf-queue' exists")
            for point in ("c1-1f564c", "c8-c0b718", "c32-435319", "c128-dc9a2c", "c1024-d5893e")
        ],
        *[
            row
            for ns in ("bench-team-a", "bench-team-b", "ml-team-b", "bench-research")
            for row in (
                (
                    f"aiperf kube profile -n {ns} --queue-name aiperf-queue",
                    "PASS",
                    "Kueue LocalQueue 'aiperf-queue' exists",
                ),
                (
                    f"aiperf kube profile -n {ns} (no --queue-name)",
                    "PASS",
                    "No explicit queue specified but namespace has kueue.x-k8s.io/default-queue-name annotation",
                ),
            )
        ],
    ]
    # The annotation routes nothing; the operator's env default (auto: the namespaces' shared LocalQueue) does.
    unlabelled = {r["namespace"]: r["then"] for r in rows if r["queueName"] is None}
    assert unlabelled == {
        ns: "the operator labels the JobSet kueue.x-k8s.io/queue-name=aiperf-queue (operator.defaultQueue: auto, the "
        "LocalQueue every benchmark namespace has) and creates it suspended; Kueue admits it through LocalQueue "
        f"aiperf-queue (ClusterQueue {cq})"
        for ns, cq in (
            ("bench-team-a", "team-a"),
            ("bench-team-b", "team-b"),
            ("ml-team-b", "team-b"),
            ("bench-research", "research"),
        )
    }


def _unwrapped(value: Any) -> Any:
    """Recorded inputs with Pulumi secrets unwrapped (the spec of a job with an apiKey may arrive as one)."""
    if isinstance(value, dict):
        if SECRET_SIG in value:
            return _unwrapped(value["value"])
        return {k: _unwrapped(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("stack", CHECKED_STACKS)
def test_declared_jobs_are_checked_with_the_queue_they_are_applied_with(stack: str) -> None:
    run = committed_run(stack)
    jobs = [_unwrapped(r["inputs"]) for r in run.resources if r["type"].endswith(":AIPerfJob")]
    applied = {(j["metadata"]["namespace"], j["metadata"]["name"]): j["spec"]["scheduling"]["queueName"] for j in jobs}
    checked = {
        (r["namespace"], r["objectName"]): r["queueName"] for r in plan_preflight(stack) if r["kind"] == "AIPerfJob"
    }
    config, _ = plan_values(stack_values(stack)[0])
    # One AIPerfJob per job and per sweep point (a stack may declare none yet).
    assert len(applied) == len(config.jobs) + sum(len(s.concurrency) for s in config.sweeps)
    assert checked == applied


def _plan(values: dict[str, Any]) -> Any:
    return plan_stack(parse_config(values, "test.yaml"), "test.yaml")


def test_a_namespace_without_the_annotation_warns_for_submissions_without_a_queue() -> None:
    values, _ = stack_values("prod")
    values["queues"]["clusterQueues"][1]["namespaces"][1]["defaultQueueAnnotation"] = False
    plan = _plan(values)
    assert plan.warnings == (
        "queues.clusterQueues[1].namespaces[1].defaultQueueAnnotation: AIPerf preflight WARN for aiperf kube profile "
        '-n ml-team-b (no --queue-name): "Kueue is installed but no queue configured. Job will bypass '
        'gang-scheduling and quota management." Fix: set spec.scheduling.queueName (aiperf kube profile '
        "--queue-name aiperf-queue), or annotate the namespace: kubectl annotate namespace ml-team-b "
        "kueue.x-k8s.io/default-queue-name=aiperf-queue (or set defaultQueueAnnotation: true)",
    )
    statuses = {(r["subject"], r["status"]) for r in plan.preflight_table()}
    assert ("aiperf kube profile -n ml-team-b (no --queue-name)", "WARN") in statuses
    assert ("aiperf kube profile -n bench-team-b (no --queue-name)", "PASS") in statuses


def test_with_the_operators_default_queue_an_unlabelled_job_is_queued_there() -> None:
    values, _ = stack_values("dev")
    values["queues"]["clusterQueues"][0]["namespaces"][0]["defaultQueue"] = True
    values["operator"] = {"defaultQueue": "default"}
    rows = _plan(values).preflight_table()
    assert rows[-1] == {
        "check": "Kueue Queue",
        "subject": "aiperf kube profile -n aiperf-benchmarks (no --queue-name)",
        "kind": "aiperf kube profile without --queue-name",
        "job": None,
        "objectName": None,
        "namespace": "aiperf-benchmarks",
        "queueName": None,
        "status": "PASS",
        "message": "No explicit queue specified but namespace has kueue.x-k8s.io/default-queue-name annotation",
        "fix": None,
        "then": "the operator labels the JobSet kueue.x-k8s.io/queue-name=default (operator.defaultQueue) and "
        "creates it suspended; Kueue admits it through LocalQueue default (ClusterQueue benchmarks)",
    }


def test_manage_jobs_without_queue_name_leaves_an_unlabelled_job_suspended() -> None:
    values, _ = stack_values("dev")
    values["kueue"] = {"manageJobsWithoutQueueName": True}
    values["operator"] = {"defaultQueue": ""}
    assert _plan(values).preflight_table()[-1]["then"] == (
        "no queue label: Kueue (manageJobsWithoutQueueName) suspends the JobSet and never admits it, no LocalQueue "
        "being named; pass --queue-name aiperf-queue"
    )


def test_a_default_local_queue_catches_nothing_on_kueue_0_10() -> None:
    values, _ = stack_values("dev")
    values["kueue"] = {"version": "0.10.1"}
    values["queues"]["clusterQueues"][0]["namespaces"][0]["defaultQueue"] = True
    values["operator"] = {"defaultQueue": ""}
    plan = _plan(values)
    assert plan.preflight_table()[-1]["then"] == (
        "no queue label: the JobSet bypasses Kueue (no quota, no gang admission; neither Kueue nor the operator "
        "routes by the annotation); pass --queue-name aiperf-queue"
    )


# The annotation and the operator's env default agree, or plan says so ------------------------------

BYPASS = (
    "no queue label: the JobSet bypasses Kueue (no quota, no gang admission; neither Kueue nor the operator "
    "routes by the annotation); pass --queue-name {q}"
)


def test_namespaces_sharing_no_local_queue_warn_per_annotated_namespace() -> None:
    values, _ = stack_values("prod")
    namespaces = values["queues"]["clusterQueues"][1]["namespaces"]
    namespaces[0]["localQueue"] = "team-b-queue"  # bench-team-b: now nothing is shared by all four
    namespaces[1]["defaultQueueAnnotation"] = False  # ml-team-b: no promise, so no mismatch (but the WARN)
    plan = _plan(values)
    why = (
        "operator.defaultQueue is auto, and the benchmark namespaces share no LocalQueue (localQueue: aiperf-queue, "
        "team-b-queue)"
    )
    fix = (
        "Fix: give every benchmark namespace the same localQueue, or set operator.defaultQueue to a LocalQueue each "
        "of them has, or set defaultQueueAnnotation: false here"
    )
    team_a = (
        "no queue label from the operator; Kueue labels the JobSet kueue.x-k8s.io/queue-name=default (a LocalQueue "
        "named default, Kueue >= 0.17) and admits it through it (ClusterQueue team-a)"
    )
    assert [w for w in plan.warnings if "share no LocalQueue" in w] == [
        "queues.clusterQueues[0].namespaces[0].defaultQueueAnnotation: namespace bench-team-a is annotated "
        "kueue.x-k8s.io/default-queue-name=aiperf-queue, so AIPerf's preflight passes jobs without a queue there, "
        f"but the operator stamps no queue label ({why}): {team_a}. {fix}",
        "queues.clusterQueues[1].namespaces[0].defaultQueueAnnotation: namespace bench-team-b is annotated "
        "kueue.x-k8s.io/default-queue-name=team-b-queue, so AIPerf's preflight passes jobs without a queue there, "
        f"but the operator stamps no queue label ({why}): {BYPASS.format(q='team-b-queue')}. {fix}",
        "queues.clusterQueues[2].namespaces[0].defaultQueueAnnotation: namespace bench-research is annotated "
        "kueue.x-k8s.io/default-queue-name=aiperf-queue, so AIPerf's preflight passes jobs without a queue there, "
        f"but the operator stamps no queue label ({why}): {BYPASS.format(q='aiperf-queue')}. {fix}",
    ]
    assert len(plan.warnings) == 4  # and the preflight WARN for unannotated ml-team-b
    assert plan.warnings[2].startswith("queues.clusterQueues[1].namespaces[1].defaultQueueAnnotation: AIPerf preflight")


def test_an_env_default_turned_off_warns_for_every_annotated_namespace() -> None:
    values, _ = stack_values("dev")
    values["operator"] = {"defaultQueue": None, "sizing": values["operator"]["sizing"]}
    assert _plan(values).warnings == (
        "queues.clusterQueues[0].namespaces[0].defaultQueueAnnotation: namespace aiperf-benchmarks is annotated "
        "kueue.x-k8s.io/default-queue-name=aiperf-queue, so AIPerf's preflight passes jobs without a queue there, "
        "but the operator stamps no queue label (operator.defaultQueue is off): "
        f"{BYPASS.format(q='aiperf-queue')}. Fix: set operator.defaultQueue (auto, or a LocalQueue every benchmark "
        "namespace has), or set defaultQueueAnnotation: false here",
    )
    values["queues"]["clusterQueues"][0]["namespaces"][0]["defaultQueueAnnotation"] = False
    assert [w.split(": ")[1] for w in _plan(values).warnings] == [
        "AIPerf preflight WARN for aiperf kube profile -n aiperf-benchmarks (no --queue-name)"
    ]


@pytest.mark.parametrize("stack", CHECKED_STACKS)
def test_by_default_annotation_and_env_default_agree(stack: str) -> None:
    # The regression: an annotated namespace used to PASS the preflight with no env default behind it.
    # Any stack may turn the env default off (operator.defaultQueue: "", an external operator's env):
    # then each such PASS must come with the plan warning that says what really happens.
    run = committed_run(stack)
    without_queue = [r for r in plan_preflight(stack) if r["queueName"] is None]
    unwarned = [
        r["namespace"]
        for r in without_queue
        if not r["then"].startswith("the operator labels the JobSet")
        and not any(f"namespace {r['namespace']} is annotated" in w and r["then"] in w for w in run.warnings)
    ]
    assert unwarned == []


def test_the_shipped_examples_annotated_namespaces_have_the_env_default_behind_them() -> None:
    for stack, namespaces in (
        ("dev", ["aiperf-benchmarks"]),
        ("prod", ["bench-team-a", "bench-team-b", "ml-team-b", "bench-research"]),
    ):
        rows = [r for r in plan_preflight(stack) if r["queueName"] is None]
        assert [r["namespace"] for r in rows] == namespaces
        assert [r["then"].split(" (")[0] for r in rows] == [
            "the operator labels the JobSet kueue.x-k8s.io/queue-name=aiperf-queue"
        ] * len(namespaces)


def test_kueue_installed_elsewhere_is_still_installed() -> None:
    values, _ = stack_values("dev")
    values["kueue"] = {"install": False}
    assert [r["status"] for r in _plan(values).preflight_table()] == ["PASS", "PASS", "PASS"]


# A FAIL is a plan error naming the job --------------------------------------------------------------


def test_a_fail_replaces_the_admission_error_and_names_the_job() -> None:
    values, _ = stack_values("prod")
    values["jobs"][0]["queue"] = "fast"
    with pytest.raises(ConfigError) as err:
        _plan(values)
    assert err.value.lines() == [
        "test.yaml: aiperf-kueue:jobs[0].queue: llama-latency: AIPerf's preflight would fail the AIPerfJob (phase "
        "Failed, \"Pre-flight failed: Kueue Queue: Kueue LocalQueue 'fast' not found. Create it or remove "
        'scheduling.queueName from spec."); name a LocalQueue of namespace bench-team-a (aiperf-queue, default), or '
        "create 'fast' there (a namespace's localQueue, or defaultQueue: true for 'default')"
    ]


def test_a_sweep_fails_once_by_its_name() -> None:
    values, _ = stack_values("prod")
    values["sweeps"][0]["queue"] = "default"
    with pytest.raises(ConfigError) as err:
        _plan(values)
    assert err.value.lines() == [
        "test.yaml: aiperf-kueue:sweeps[0].queue: llama-sweep: AIPerf's preflight would fail every AIPerfJob of the "
        "sweep (phase Failed, \"Pre-flight failed: Kueue Queue: Kueue LocalQueue 'default' not found. Create it or "
        'remove scheduling.queueName from spec."); name a LocalQueue of namespace bench-research (aiperf-queue), or '
        "create 'default' there (a namespace's localQueue, or defaultQueue: true for 'default')"
    ]


def test_fail_problems_from_literal_checks() -> None:
    check = preflight.Check(
        "AIPerfJob",
        "bench",
        "fast",
        ("jobs", 2),
        check_kueue_queue("bench", "fast", NO_KUEUE),
        "-",
        job="smoke",
    )
    assert [p.line("s.yaml") for p in preflight.problems([check])] == [
        "s.yaml: aiperf-kueue:jobs[2].queue: smoke: AIPerf's preflight would fail the AIPerfJob (phase Failed, "
        "\"Pre-flight failed: Kueue Queue: Kueue is not installed, but LocalQueue 'fast' was explicitly requested. "
        'Install Kueue or remove scheduling.queueName from spec."); install Kueue (kueue.install: true) before '
        "submitting, or submit without a queue"
    ]


def test_plan_exits_2_on_a_preflight_fail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    values, _ = stack_values("prod")
    values["jobs"][0]["queue"] = "fast"
    stack_file = tmp_path / "Pulumi.fail.yaml"
    stack_file.write_text(yaml.safe_dump({"config": {f"aiperf-kueue:{k}": v for k, v in values.items()}}))
    assert main(["plan", str(stack_file), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{stack_file}: aiperf-kueue:jobs[0].queue: llama-latency: AIPerf's preflight would fail")
    assert len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


# plan output ---------------------------------------------------------------------------------------


def test_plan_prints_the_preflight_and_writes_it_to_plan_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values, _ = stack_values("dev")
    values["queues"]["clusterQueues"][0]["namespaces"][0]["defaultQueueAnnotation"] = False
    stack_file = tmp_path / "Pulumi.warn.yaml"
    stack_file.write_text(yaml.safe_dump({"config": {f"aiperf-kueue:{k}": v for k, v in values.items()}}))
    assert main(["plan", str(stack_file), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    section = out[out.index('AIPerf preflight "Kueue Queue"') : out.index("\nSubmit from the CLI")]
    assert section.splitlines() == [
        'AIPerf preflight "Kueue Queue" (3 submissions into this stack\'s cluster):',
        "  PASS  AIPerfJob aiperf-benchmarks/smoke-42740b                            Kueue LocalQueue 'aiperf-queue' "
        "exists",
        "  PASS  aiperf kube profile -n aiperf-benchmarks --queue-name aiperf-queue  Kueue LocalQueue 'aiperf-queue' "
        "exists",
        "  WARN  aiperf kube profile -n aiperf-benchmarks (no --queue-name)          Kueue is installed but no queue "
        "configured. Job will bypass gang-scheduling and quota management.",
        "        fix: set spec.scheduling.queueName (aiperf kube profile --queue-name aiperf-queue), or annotate the "
        "namespace: kubectl annotate namespace aiperf-benchmarks kueue.x-k8s.io/default-queue-name=aiperf-queue",
        "        then: the operator labels the JobSet kueue.x-k8s.io/queue-name=aiperf-queue (operator.defaultQueue: "
        "auto, the LocalQueue every benchmark namespace has) and creates it suspended; Kueue admits it through "
        "LocalQueue aiperf-queue (ClusterQueue benchmarks)",
    ]
    assert "Warnings (1):" in out
    plan_json = yaml.safe_load((tmp_path / "out" / "plan.json").read_text())
    assert [r["status"] for r in plan_json["preflight"]] == ["PASS", "PASS", "WARN"]
    assert plan_json["warnings"] == [
        "queues.clusterQueues[0].namespaces[0].defaultQueueAnnotation: AIPerf preflight WARN for aiperf kube profile "
        '-n aiperf-benchmarks (no --queue-name): "Kueue is installed but no queue configured. Job will bypass '
        'gang-scheduling and quota management." Fix: set spec.scheduling.queueName (aiperf kube profile --queue-name '
        "aiperf-queue), or annotate the namespace: kubectl annotate namespace aiperf-benchmarks "
        "kueue.x-k8s.io/default-queue-name=aiperf-queue (or set defaultQueueAnnotation: true)"
    ]


def test_under_pulumi_a_preflight_warn_is_a_pulumi_warning() -> None:
    values, secrets = stack_values("dev")
    values["queues"]["clusterQueues"][0]["namespaces"][0]["defaultQueueAnnotation"] = False
    run = run_program("dev", values, secrets)
    assert len(run.warnings) == 1
    assert run.warnings[0].startswith("queues.clusterQueues[0].namespaces[0].defaultQueueAnnotation: AIPerf preflight")
    assert [r["status"] for r in plan_stack_values(values, "dev.yaml").preflight_table()] == ["PASS", "PASS", "WARN"]


def test_operator_rbac_left_to_others_warns_with_the_403_rows() -> None:
    """The HTTP-403 WARN and the not-installed SKIP rows, reached from stack config."""
    values, _ = stack_values("prod")
    values["operator"] = {**values["operator"], "values": {"rbac": {"create": False}}}
    assert _plan(values).warnings == (
        "operator.values.rbac.create: the chart creates no ClusterRole for the operator; unless RBAC provided out "
        "of band lets it get and list kueue.x-k8s.io localqueues in every benchmark namespace, AIPerf's preflight "
        'answers WARN "Could not verify Kueue queue: HTTP 403" for every declared job and SKIP "Kueue not '
        'installed (queue check skipped)" for a submission without a queue, and cannot tell a missing LocalQueue '
        "from a present one. Fix: grant those verbs (the chart's clusterrole.yaml lists them), or leave "
        "rbac.create at true",
    )
    values["operator"]["values"] = {"rbac": {"create": True}}
    assert _plan(values).warnings == ()
    # An external operator (its env declared, naming the namespaces' queue): its RBAC is not this stack's.
    env = {"AIPERF_K8S_JOBSET_KUEUE_DEFAULT_QUEUE_NAME": "aiperf-queue"}
    values["operator"] = {"install": False, "env": env, "values": {"rbac": {"create": False}}}
    env["AIPERF_K8S_RECORDS_MANAGER_MEMORY"] = "512Mi"
    assert _plan(values).warnings == ()
