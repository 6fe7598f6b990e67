"""The compatibility matrix (:mod:`aiperf_kueue.upstream.compat`) against the released AIPerf 0.13.0 operator code.

For each Kueue line and each submission route, the real ``on_create`` handler (:mod:`tests.oracle`)
creates the dev stack's smoke job in a stub cluster serving that line's ``kueue.x-k8s.io``
versions (0.19.2: v1beta1 and v1beta2; 0.20.7: v1beta2 only, the 404 the operator then gets is the
API server's answer for an unserved version). Its "Kueue Queue" preflight must be the matrix's
verdict and the plan's row, in the operator's own words; where it creates the JobSet, the queue
label and ``suspend`` say whether Kueue gets it.
"""

from __future__ import annotations

from typing import Any

import pytest

from aiperf_kueue.installs import operator_objects
from aiperf_kueue.installs import releases as installs
from aiperf_kueue.plan import manifests
from aiperf_kueue.plan.stack_plan import StackPlan, plan_stack
from aiperf_kueue.plan.submit import default_queue
from aiperf_kueue.stackfile.loader import parse_config
from aiperf_kueue.upstream import compat
from aiperf_kueue.upstream.kueue import QUEUE_NAME_LABEL
from tests.oracle import Oracle, oracle_fixture, stack_cluster  # noqa: F401 (the session fixture `oracle`)
from tests.support import ROOT, stack_values

#: The served versions per Kueue pin: what the stub's API serves.
SERVED = {"0.19.2": ["v1beta1", "v1beta2"], "0.20.7": ["v1beta2"]}
NAMESPACE, QUEUE = "aiperf-benchmarks", "aiperf-queue"
FAIL_MESSAGE = (
    "Kueue is not installed, but LocalQueue 'aiperf-queue' was explicitly requested. Install Kueue or remove "
    "scheduling.queueName from spec."
)
SKIP_MESSAGE = "Kueue not installed (queue check skipped)"
PASS_EXISTS = "Kueue LocalQueue 'aiperf-queue' exists"
PASS_ANNOTATION = "No explicit queue specified but namespace has kueue.x-k8s.io/default-queue-name annotation"


def _plan(version: str, default_queue_setting: str | None = "auto") -> StackPlan:
    values, _ = stack_values("dev")
    values["kueue"]["version"] = version
    values["operator"]["defaultQueue"] = default_queue_setting
    return plan_stack(parse_config(values, "dev"), "dev", ROOT)


def _env(plan: StackPlan) -> dict[str, str]:
    config = plan.config
    env = operator_objects.operator_env(config.operator, default_queue(config), operator_objects.sizing_env(config))
    return {e["name"]: e["value"] for e in env}


def _run(oracle: Oracle, plan: StackPlan, spec: dict[str, Any], version: str) -> dict[str, Any]:
    cluster = {**stack_cluster(plan.config), "kueueServedVersions": SERVED[version]}
    name = manifests.job_object_name("smoke", spec)
    return oracle.create(_env(plan), cluster, {"name": name, "namespace": NAMESPACE, "spec": spec})


def _kueue_queue(result: dict[str, Any]) -> tuple[str, str]:
    (check,) = [c for c in result["preflight"] if c["name"] == "Kueue Queue"]
    return check["status"].upper(), check["message"]


def _spec(plan: StackPlan, *, queue_name: bool) -> dict[str, Any]:
    (admission,) = plan.jobs.admissions
    image = installs.operator_image(plan.config.operator)
    spec: dict[str, Any] = manifests.aiperf_job(admission, image, None, queue_name=queue_name)["spec"]
    return spec


def _row(plan: StackPlan, subject: str) -> tuple[str, str]:
    (row,) = [r for r in plan.preflight_table() if r["subject"].startswith(subject)]
    return row["status"], row["message"]


@pytest.mark.parametrize(
    ("version", "status", "message", "outcome"),
    [
        ("0.19.2", "PASS", PASS_EXISTS, "created"),
        ("0.20.7", "FAIL", FAIL_MESSAGE, "failed"),
    ],
)
def test_route_queue_name(oracle: Oracle, version: str, status: str, message: str, outcome: str) -> None:
    plan = _plan(version)
    spec = _spec(plan, queue_name=True)
    assert spec["scheduling"] == {"queueName": QUEUE}
    result = _run(oracle, plan, spec, version)
    assert _kueue_queue(result) == (status, message)
    assert result["outcome"] == outcome
    verdict = compat.verdicts(plan.queues.target.version, "0.13.0")["queueName"]
    assert (verdict.works, verdict.preflight) == (outcome == "created", status)
    # The plan's row for `aiperf kube profile --queue-name` is the operator's answer.
    assert _row(plan, f"aiperf kube profile -n {NAMESPACE} --queue-name {QUEUE}") == (status, message)
    if outcome == "failed":
        assert result["statusError"] == f"Pre-flight failed: Kueue Queue: {FAIL_MESSAGE}"
        assert result["jobsets"] == []
    else:
        (jobset,) = result["jobsets"]
        assert (jobset["metadata"]["labels"][QUEUE_NAME_LABEL], jobset["spec"]["suspend"]) == (QUEUE, True)


@pytest.mark.parametrize(
    ("version", "status", "message"), [("0.19.2", "PASS", PASS_ANNOTATION), ("0.20.7", "SKIP", SKIP_MESSAGE)]
)
def test_route_operator_default_queue(oracle: Oracle, version: str, status: str, message: str) -> None:
    plan = _plan(version)
    spec = _spec(plan, queue_name=False)
    assert "queueName" not in spec["scheduling"]
    result = _run(oracle, plan, spec, version)
    assert (result["outcome"], result["statusError"], result["unanswered"]) == ("created", None, [])
    assert _kueue_queue(result) == (status, message)
    # The operator stamps its env default on the JobSet and suspends it: Kueue (v1beta2) admits it.
    (jobset,) = result["jobsets"]
    assert (jobset["metadata"]["labels"][QUEUE_NAME_LABEL], jobset["spec"]["suspend"]) == (QUEUE, True)
    verdict = compat.verdicts(plan.queues.target.version, "0.13.0")["operatorDefaultQueue"]
    assert (verdict.works, verdict.preflight) == (True, status)
    assert _row(plan, f"aiperf kube profile -n {NAMESPACE} (no --queue-name)") == (status, message)
    if version == "0.20.7":
        # On 0.20 the declared job itself goes this way: the plan writes no queueName and predicts the SKIP.
        assert plan.aiperf_jobs()[0]["spec"] == spec
        assert _row(plan, "AIPerfJob") == (status, message)


@pytest.mark.parametrize(
    ("version", "status", "message"), [("0.19.2", "PASS", PASS_ANNOTATION), ("0.20.7", "SKIP", SKIP_MESSAGE)]
)
def test_route_no_queue(oracle: Oracle, version: str, status: str, message: str) -> None:
    plan = _plan("0.19.2", default_queue_setting="")  # a stack that plans: no env default, jobs name their queue
    assert "AIPERF_K8S_JOBSET_KUEUE_DEFAULT_QUEUE_NAME" not in _env(plan)
    spec = _spec(plan, queue_name=False)
    result = _run(oracle, plan, spec, version)
    assert (result["outcome"], result["statusError"]) == ("created", None)
    assert _kueue_queue(result) == (status, message)
    # No queue label: the JobSet bypasses Kueue, created unsuspended.
    (jobset,) = result["jobsets"]
    assert QUEUE_NAME_LABEL not in jobset["metadata"]["labels"]
    assert jobset["spec"].get("suspend") in (None, False)
    verdict = compat.verdicts(tuple(int(p) for p in version.split(".")), "0.13.0")["noQueue"]  # type: ignore[arg-type]
    assert (verdict.works, verdict.preflight) == (False, status)
