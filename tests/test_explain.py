"""``aiperf-kueue explain``: why each waiting job waits, from live objects (literal lines), and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aiperf_kueue.cli.cli import main
from aiperf_kueue.simulate.explain import explain

T0, T1, T2 = "2026-12-04T10:00:00Z", "2026-12-04T10:00:05Z", "2026-12-04T10:00:09Z"


def cq(name: str, cohort: str | None = "org", cpu: str = "4", used: str = "0", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            **({"cohortName": cohort} if cohort else {}),
            "resourceGroups": [
                {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [
                    {"name": "cpu", "nominalQuota": cpu}]}]}
            ],
            **spec,
        },
        "status": {"flavorsReservation": [{"name": "default", "resources": [{"name": "cpu", "total": used}]}]},
    }


def lq(ns: str, target: str, stop: str | None = None) -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": "benchmarks"},
            "spec": {"clusterQueue": target, **({"stopPolicy": stop} if stop else {})}}


def job(ns: str, name: str) -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": f"{name}-1a2b3c", "labels": {"aiperf-kueue/job": name}},
            "status": {"jobSetName": f"{name}-js", "phase": "Initializing"}}


def wl(ns: str, name: str, created: str, *, priority: int = 0, message: str = "", admitted: bool = False,
       evictions: list[dict[str, Any]] | None = None, conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    conds = [{"type": "QuotaReserved", "status": "True" if admitted else "False", "reason": "Pending",
              "message": message}, *(conditions or [])]
    return {
        "metadata": {"namespace": ns, "name": f"jobset-{name}-js", "creationTimestamp": created,
                     "ownerReferences": [{"kind": "JobSet", "name": f"{name}-js"}]},
        "spec": {"queueName": "benchmarks", "priority": priority},
        "status": {"conditions": conds, **({"schedulingStats": {"evictions": evictions}} if evictions else {})},
    }


SHORT = "couldn't assign flavors to pod set workers: insufficient unused quota for cpu in flavor default, 2 more needed"


def test_quota_reclaim_order_and_preemption() -> None:
    found = explain(
        [
            wl("team-a", "a1", T0, admitted=True),
            wl("team-a", "a2", T1, message=SHORT, evictions=[{"reason": "Preempted", "count": 1}],
               conditions=[{"type": "Preempted", "status": "False", "reason": "InCohortReclamation"}]),
            wl("team-a", "a3", T0, priority=10, message=SHORT),
        ],
        [cq("team-a"), cq("team-b", used="6")],
        [lq("team-a", "team-a"), lq("team-b", "team-b")],
        [job("team-a", "a1"), job("team-a", "a2"), job("team-a", "a3")],
    )
    assert [e.line() for e in found] == [
        "team-a/a2: pending, 2 of 2 in ClusterQueue team-a: short by 2 of cpu on flavor default in ClusterQueue "
        "team-a; waiting for reclaim from team-b (reclaimWithinCohort: Never); preempted 1 time (InCohortReclamation)",
        "team-a/a3: pending, 1 of 2 in ClusterQueue team-a: short by 2 of cpu on flavor default in ClusterQueue "
        "team-a; waiting for reclaim from team-b (reclaimWithinCohort: Never)",
    ]
    assert found[0].as_dict() == {
        "namespace": "team-a", "job": "a2", "state": "pending", "clusterQueue": "team-a", "position": 2, "queued": 2,
        "reasons": [
            "short by 2 of cpu on flavor default in ClusterQueue team-a",
            "waiting for reclaim from team-b (reclaimWithinCohort: Never)",
            "preempted 1 time (InCohortReclamation)",
        ],
    }


def test_strict_fifo_stopped_queue_pods_ready_and_capacity() -> None:
    too_big = ("couldn't assign flavors to pod set workers: insufficient quota for cpu in flavor default, previously "
               "considered podsets requests (0) + current podset request (9) > maximum capacity (4)")
    found = explain(
        [
            wl("strict", "s1", T0, message=too_big),
            wl("strict", "s2", T1, message=SHORT),
            wl("strict", "s3", T2, message=SHORT),
            wl("held", "h1", T0, message=SHORT),
            wl("ready", "r1", T0, evictions=[{"reason": "PodsReadyTimeout", "count": 3}],
               conditions=[{"type": "Evicted", "status": "True", "reason": "PodsReadyTimeout",
                            "lastTransitionTime": T2}]),
            wl("ready", "r0", T1, admitted=True),
        ],
        [cq("strict", cohort=None, queueingStrategy="StrictFIFO"), cq("held", cohort=None), cq("ready", cohort=None)],
        [lq("strict", "strict"), lq("held", "held", stop="Hold"), lq("ready", "ready")],
        [job("strict", "s1"), job("strict", "s2"), job("strict", "s3"), job("held", "h1"), job("ready", "r1"),
         job("ready", "r0"), job("other", "x")],
        namespaces={"strict", "held", "ready"},
    )
    assert [e.line() for e in found] == [
        "held/h1: pending, 1 of 1 in ClusterQueue held: LocalQueue held/benchmarks stopped (stopPolicy: Hold)",
        "ready/r1: evicted, 1 of 1 in ClusterQueue ready: evicted 3 times by waitForPodsReady",
        "strict/s1: pending, 1 of 3 in ClusterQueue strict: needs 9 of cpu on flavor default, more than ClusterQueue "
        "strict can ever hold (4)",
        "strict/s2: pending, 2 of 3 in ClusterQueue strict: behind 1 workloads under StrictFIFO (head: "
        "strict/jobset-s1-js)",
        "strict/s3: pending, 3 of 3 in ClusterQueue strict: behind 2 workloads under StrictFIFO (head: "
        "strict/jobset-s1-js)",
    ]


def test_a_job_without_workload_and_finished_jobs() -> None:
    done = job("ns", "done")
    done["status"] = {"phase": "Completed"}
    fresh = job("ns", "fresh")
    fresh["status"] = {"phase": "Pending"}
    found = explain([], [], [], [done, fresh])
    assert [e.line() for e in found] == [
        "ns/fresh: no workload: the operator has not created its JobSet's Workload yet (operator phase Pending)"
    ]


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["explain", "dev", "--kubeconfig", "{tmp}/missing"],
         "--kubeconfig {tmp}/missing: no such file; give the kubeconfig of the cluster to explain"),
        (["explain", "dev", "--kubeconfig", "{tmp}/kubeconfig", "--context", "nowhere"],
         "--kubeconfig {tmp}/kubeconfig: cannot use the --context nowhere: "),
        (["explain", "{tmp}/Pulumi.bad.yaml", "--kubeconfig", "{tmp}/kubeconfig"],
         "{tmp}/Pulumi.bad.yaml: aiperf-kueue:inventory: required, but not set"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], line: str
) -> None:
    (tmp_path / "kubeconfig").write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "here",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "x"}}],
        "contexts": [{"name": "here", "context": {"cluster": "c", "user": "u"}}],
    }))
    (tmp_path / "Pulumi.bad.yaml").write_text("config:\n  aiperf-kueue:queues: 7\n")
    assert main([a.replace("{tmp}", str(tmp_path)) for a in argv]) == 2
    captured = capsys.readouterr()
    err = captured.err.splitlines()
    assert len(err) == 1, captured.err
    assert err[0].startswith(line.replace("{tmp}", str(tmp_path)))
    assert captured.out == ""


def test_an_unreachable_cluster_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "kubeconfig").write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "here",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "x"}}],
        "contexts": [{"name": "here", "context": {"cluster": "c", "user": "u"}}],
    }))
    assert main(["explain", "dev", "--kubeconfig", str(tmp_path / "kubeconfig"), "--context", "here"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1
    assert err[0].startswith("aiperf-kueue explain: cannot read workloads: ")


def test_reclaim_reaches_borrowers_anywhere_in_the_cohort_tree() -> None:
    # org -> dept-x (team-a), dept-y (team-c): team-c borrows beyond its nominal quota in the other department.
    cohorts = [
        {"metadata": {"name": "org"}, "spec": {}},
        {"metadata": {"name": "dept-x"}, "spec": {"parentName": "org"}},
        {"metadata": {"name": "dept-y"}, "spec": {"parentName": "org"}},
    ]
    queues = [cq("team-a", "dept-x"), cq("team-c", "dept-y", used="6"), cq("solo", None, used="9")]
    args = (
        [wl("team-a", "a1", T0, message=SHORT)],
        queues,
        [lq("team-a", "team-a")],
        [job("team-a", "a1")],
    )
    line = (
        "team-a/a1: pending, 1 of 1 in ClusterQueue team-a: short by 2 of cpu on flavor default in ClusterQueue "
        "team-a; waiting for reclaim from team-c (reclaimWithinCohort: Never)"
    )
    assert [e.line() for e in explain(*args, cohorts=cohorts)] == [line]
    # Without the Cohort objects dept-x and dept-y are separate roots: no borrower is named.
    assert [e.line() for e in explain(*args)] == [line.split("; waiting")[0]]
