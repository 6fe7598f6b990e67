"""A real JobSet upgrade on the real engine: ``dev`` deployed with JobSet 0.11.1, with an admitted JobSet and a pending
one, then ``pulumi up`` to JobSet 0.12.0 (issue 24, item 2).

0.11.1 is the newest 0.11 release the Go module proxy serves (v0.11.2 and v0.11.3 are not). The stack pins it with
``aiperf-kueue:jobset`` ``version`` and ``chart`` (the chart from the v0.11.1 module zip); the upgrade bumps both to
0.12.0, the program's default. The harness runs the JobSet binary of the release the chart's Deployment names
(:mod:`tests.e2e.charts`: both charts tag their image ``main``, so the chart's ``app.kubernetes.io/version`` label
decides): ``jobset-v0.11.1`` first, then ``jobset``, restarted when ``pulumi up`` changes the Deployment. Kueue stays
at 0.19.2 throughout.

The cluster is a living one (:mod:`tests.e2e.living`): kube-scheduler places pods, kwok runs them on the stack's
one fleet node ``default-0`` (made from its inventory), the controller namespaces are pinned off the fleet. The load
(:mod:`tests.e2e.upgrade_load`) is two JobSets in the benchmark namespace, on its LocalQueue, as AIPerf's operator
makes them: the first takes 5 of the ClusterQueue's 7.2 CPUs, is admitted, the old JobSet controller runs its Job
(unsuspended) and its pod is Running on ``default-0``; the second asks for 5 more and waits (JobSet makes its Job
too, suspended, no pod). After the upgrade the same JobSets, Workloads and Jobs are there (by UID), the JobSet CRD is
the same object, the same pod (UID) is still Running on the same node, the first Workload keeps its admission and was
never evicted or preempted, its JobSet was never restarted by the new controller (``status.restarts`` 0); once the
first is deleted the second is admitted, the new JobSet controller unsuspends its Job, and its pod Runs on
``default-0``.
"""

from __future__ import annotations

import time
from typing import Any

from tests.e2e.conftest import BUILD, JOBSET_MODULE, KUEUE_MODULE, ClusterFactory, Report
from tests.e2e.engine import EngineRun, e2e_config, engine_run
from tests.e2e.test_engine_upgrade import STACK
from tests.e2e.upgrade_load import (
    ADMITTED,
    NAMESPACE,
    ONE_POD_RUNNING,
    assert_kept,
    deletes_and_replaces,
    jobset_status,
    owned,
    pinned,
    require_binary,
    second_runs_once_first_leaves,
    start_load,
    steps_of,
)

OLD = BUILD.JOBSET_OLD
OLD_MODULE = f"sigs.k8s.io/jobset@{OLD}"
CRD = "jobsets.jobset.x-k8s.io"
#: ``spec.suspend`` of the JobSets and their Jobs while the first is admitted and the second waits.
ONE_RUNS_ONE_WAITS = {"jobsets": {"first": False, "second": True}, "jobs": {"first": False, "second": True}}


def _jobs(run: EngineRun) -> dict[str, dict[str, Any]]:
    """JobSet name → the one Job the JobSet controller created for it."""
    return owned(run.cluster, "jobs.batch", "JobSet")


def _suspended(run: EngineRun) -> dict[str, dict[str, bool]]:
    """``spec.suspend`` of each JobSet and of each JobSet's Job, by JobSet name."""
    jobsets = run.cluster.get_json("jobsets.jobset.x-k8s.io", "-n", NAMESPACE)["items"]
    return {
        "jobsets": {j["metadata"]["name"]: bool(j["spec"].get("suspend")) for j in jobsets},
        "jobs": {name: bool(job["spec"].get("suspend")) for name, job in _jobs(run).items()},
    }


def _uids(run: EngineRun) -> dict[str, str]:
    """``kind/namespace/name`` → UID of the queues, the JobSets, their Workloads and Jobs, and the JobSet CRD."""
    out = {}
    for resource in (
        "clusterqueues.kueue.x-k8s.io",
        "localqueues.kueue.x-k8s.io",
        "workloads.kueue.x-k8s.io",
        "jobsets.jobset.x-k8s.io",
        "jobs.batch",
    ):
        for item in run.cluster.get_json(resource, "-A")["items"]:
            meta = item["metadata"]
            if meta.get("namespace") in (None, NAMESPACE):
                out[f"{item['kind']}/{meta.get('namespace', '')}/{meta['name']}"] = meta["uid"]
    crd = run.cluster.get_json("customresourcedefinitions", CRD)
    out[f"CustomResourceDefinition//{CRD}"] = crd["metadata"]["uid"]
    return out


def test_jobset_upgrade_keeps_jobsets_workloads_admissions_and_running_pods(
    new_cluster: ClusterFactory, binaries: dict[str, str], report: Report
) -> None:
    require_binary(binaries, f"jobset-{OLD}", "JobSet")
    cluster = new_cluster("engine-jobset-upgrade", controllers=False, living=True)
    base = e2e_config(STACK, KUEUE_MODULE, JOBSET_MODULE)
    old = pinned(base, "jobset", OLD_MODULE, "0.11.1")
    with engine_run("dev", STACK, cluster, binaries, BUILD.PULUMI_KUBERNETES, old, living=True) as run:
        assert run.up().summary.result == "succeeded"
        controller = run.controllers.by_name("jobset")
        assert controller.version == "v0.11.1"
        assert run.controllers.by_name("kueue").version == "v0.19.2"
        crd_protected = [
            r["urn"].rsplit("::", 1)[1]
            for r in run.state()
            if r.get("protect") and r["type"] == "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
        ]
        assert "jobset-chart:jobsets.jobset.x-k8s.io" in crd_protected

        before_wl, first_pod = start_load(
            run.cluster,
            "the first JobSet admitted, its Job unsuspended by JobSet 0.11.1 and its pod Running on the fleet",
            also=lambda: _suspended(run)["jobs"].get("first") is False,
        )
        # JobSet makes the Jobs of a suspended JobSet suspended: Kueue's admission unsuspends the JobSet, and JobSet
        # its Job.
        assert _suspended(run) == ONE_RUNS_ONE_WAITS
        before = _uids(run)
        assert sorted(k.rsplit("/", 1)[0] + "/" for k in before) == [
            "ClusterQueue//",
            "CustomResourceDefinition//",
            "Job/aiperf-benchmarks/",
            "Job/aiperf-benchmarks/",
            "JobSet/aiperf-benchmarks/",
            "JobSet/aiperf-benchmarks/",
            "LocalQueue/aiperf-benchmarks/",
            "Workload/aiperf-benchmarks/",
            "Workload/aiperf-benchmarks/",
        ]

        # The upgrade: the stack file now pins JobSet 0.12.0 (its chart from the 0.12.0 module zip).
        run.set_config(pinned(run.config, "jobset", JOBSET_MODULE, "0.12.0"))
        started = time.monotonic()
        up = run.up()
        up_s = round(time.monotonic() - started, 1)
        assert up.summary.result == "succeeded"
        steps = {t.split(":", 1)[1]: dict(c) for t, c in sorted(steps_of(run.events).items())}
        # The chart's objects updated in place, the JobSet CRD among them (protected: never replaced); 0.12.0
        # reorganised its RBAC, so its new roles are created and 0.11.1's controller Role and RoleBinding deleted;
        # nothing of Kueue's and no queue is touched, nor the readiness gate (only an update step of the Python dynamic
        # provider it runs in, a provider object that is no cluster object).
        assert steps == {
            "admissionregistration.k8s.io/v1:MutatingWebhookConfiguration": {"update": 1},
            "admissionregistration.k8s.io/v1:ValidatingWebhookConfiguration": {"update": 1},
            "apiextensions.k8s.io/v1:CustomResourceDefinition": {"update": 1},
            "apps/v1:Deployment": {"update": 1},
            "core/v1:ConfigMap": {"update": 1},
            "core/v1:Secret": {"update": 1},
            "core/v1:Service": {"update": 1},
            "core/v1:ServiceAccount": {"update": 1},
            "providers:pulumi-python": {"update": 1},
            "rbac.authorization.k8s.io/v1:ClusterRole": {"create": 4, "update": 1},
            "rbac.authorization.k8s.io/v1:ClusterRoleBinding": {"create": 2, "update": 1},
            "rbac.authorization.k8s.io/v1:Role": {"create": 2, "delete": 1},
            "rbac.authorization.k8s.io/v1:RoleBinding": {"create": 2, "delete": 1},
        }
        updated = sorted(
            e["urn"].rsplit("::", 1)[1]
            for e in run.events
            if e["op"] == "update" and e["type"] == "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
        )
        assert updated == ["jobset-chart:jobsets.jobset.x-k8s.io"]
        destructive = deletes_and_replaces(run.events)
        report.checks["upgrade: jobset 0.11.1 -> 0.12.0, deletes and replaces"] = destructive
        # Only RBAC, which holds no state: the controller's Role and RoleBinding of 0.11.1, which 0.12.0 splits into
        # its leader-election and manager-secrets ones.
        assert destructive == [
            "Role jobset-chart:jobset-system/jobset-controller delete",
            "RoleBinding jobset-chart:jobset-system/jobset-controller delete",
        ]
        assert controller.version == "v0.12.0"
        image = "us-central1-docker.pkg.dev/k8s-staging-images/jobset/jobset:main"
        started_lines = [line for line in controller.log if line.startswith("started ")]
        assert started_lines[0] == f"started jobset-v0.11.1 for {image}"
        assert started_lines[-1] == f"started jobset for {image}"

        after = _uids(run)
        assert after == before  # the same JobSets, Workloads, Job, queues and CRD: nothing deleted and re-created
        # Kept by the new controller too: its JobSet never restarted, the second's Job still suspended.
        assert_kept(run.cluster, first_pod)
        assert _suspended(run) == ONE_RUNS_ONE_WAITS

        # The pending one is admitted once the first one leaves, the new JobSet controller unsuspends its Job, and its
        # pod runs where the first's did.
        final = second_runs_once_first_leaves(
            run.cluster,
            "the second JobSet admitted after the upgrade, its Job unsuspended by JobSet 0.12.0 and its pod Running",
            also=lambda: (
                _suspended(run)["jobs"].get("second") is False
                and jobset_status(run.cluster, "second") == ONE_POD_RUNNING
            ),
        )
        assert final["second"]["metadata"]["uid"] == before_wl["second"]["metadata"]["uid"]
        assert jobset_status(run.cluster, "second") == ONE_POD_RUNNING

        clean = run.preview(expect_no_changes=True)
        assert run.controllers.errors == []
        report.checks["upgrade: jobset 0.11.1 -> 0.12.0"] = (
            f"up in {up_s} s; engine steps {steps}; UIDs kept {sum(1 for k, v in before.items() if after.get(k) == v)}"
            f" of {len(before)} (JobSets, their Workloads and Jobs, queues, JobSet CRD); admitted Workload kept "
            f"{ADMITTED}, never evicted, its pod {first_pod['uid']} still Running on {first_pod['node']}, JobSet "
            f"restarts 0; pending one admitted after the first was deleted, its Job unsuspended by JobSet 0.12.0 and "
            f"its pod Running; then "
            f"{clean.change_summary}"
        )
