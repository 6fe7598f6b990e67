"""A real Kueue upgrade on the real engine: ``dev`` deployed on Kueue 0.15.0, with workloads admitted and pending,
then ``pulumi up`` to Kueue 0.19.2 (issue 24, item 2).

0.15.0 is a release below 0.16 (where v1beta2 becomes the default) that the Go module proxy serves, so the
stack starts on Kueue's v1beta1 API (``apiVersion: auto``) and the upgrade moves every Kueue object to v1beta2:
a new type token per object, which the program's aliases (``aiperf_kueue.kueue.former_type_tokens``) make an
update in place. Both charts come from their Go module zips; the harness runs the Kueue binary of the version the
chart's Deployment names (:mod:`tests.e2e.charts`): ``kueue-v0.15.0`` first, then ``kueue``, restarted when
``pulumi up`` rolls the Deployment's image.

The workloads are two batch Jobs in the benchmark namespace, on its LocalQueue, as a user's would be: the first
takes 5 of the ClusterQueue's 7.2 CPUs and is admitted, the second asks for 5 more and waits. After the upgrade the
same objects (by UID) are there, the first keeps its admission, and once the first is deleted the second is
admitted by the new Kueue.
"""

from __future__ import annotations

import copy
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tests.e2e.cluster import _deadline_loop, module_dir
from tests.e2e.conftest import BUILD, JOBSET_MODULE, KUEUE_MODULE, ROOT, ClusterFactory, Report
from tests.e2e.engine import PROJECT, EngineRun, e2e_config, engine_run
from tests.support import missing_input

STACK = ROOT / "stacks" / "Pulumi.dev.yaml"
OLD = BUILD.KUEUE_OLD
OLD_MODULE = f"sigs.k8s.io/kueue@{OLD}"
NAMESPACE = "aiperf-benchmarks"
QUEUE = "aiperf-queue"
#: Kueue's objects the stack declares, and the Workloads of the submitted Jobs.
KINDS = ("resourceflavors", "clusterqueues", "localqueues", "workloads")
#: Each Job asks for this many CPUs: one fits the ClusterQueue's 7.2 (8 less the stack's 10 % headroom), two do not.
CPU = "5"


def _job(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"kueue.x-k8s.io/queue-name": QUEUE}},
        "spec": {
            "suspend": True,
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "bench",
                            "image": "registry.invalid/never-pulled:1",
                            "resources": {"requests": {"cpu": CPU, "memory": "1Gi"}},
                        }
                    ],
                }
            },
        },
    }


def owned(run: EngineRun, resource: str, owner_kind: str) -> dict[str, dict[str, Any]]:
    """The ``resource`` objects of the benchmark namespace whose first owner is a ``owner_kind``, by owner name."""
    out = {}
    for item in run.cluster.get_json(resource, "-n", NAMESPACE)["items"]:
        owners = item["metadata"].get("ownerReferences") or []
        if owners and owners[0]["kind"] == owner_kind:
            out[owners[0]["name"]] = item
    return out


def _workloads(run: EngineRun) -> dict[str, dict[str, Any]]:
    """Job name → its Workload."""
    return owned(run, "workloads.kueue.x-k8s.io", "Job")


def _admission(workload: dict[str, Any]) -> dict[str, Any] | None:
    """The Workload's admission: its ClusterQueue and, per pod set, its flavors and count (None while pending)."""
    admission = (workload.get("status") or {}).get("admission")
    if not admission:
        return None
    return {
        "clusterQueue": admission["clusterQueue"],
        "podSets": [
            {"name": p["name"], "flavors": p.get("flavors"), "count": p.get("count")}
            for p in admission["podSetAssignments"]
        ],
    }


def _pending_reason(workload: dict[str, Any]) -> str | None:
    for condition in (workload.get("status") or {}).get("conditions") or []:
        if condition["type"] == "QuotaReserved" and condition["status"] == "False":
            return str(condition["reason"])
    return None


def _wait_for(run: EngineRun, what: str, check: Any, timeout: float = 180) -> dict[str, dict[str, Any]]:
    for _ in _deadline_loop(what, timeout, interval=2):
        workloads = _workloads(run)
        if check(workloads):
            return workloads
    raise AssertionError("unreachable")


def _uids(run: EngineRun) -> dict[str, str]:
    """``kind/namespace/name`` → UID of every Kueue object of :data:`KINDS`."""
    out = {}
    for kind in KINDS:
        for item in run.cluster.get_json(f"{kind}.kueue.x-k8s.io", "-A")["items"]:
            meta = item["metadata"]
            out[f"{item['kind']}/{meta.get('namespace', '')}/{meta['name']}"] = meta["uid"]
    return out


def _steps(run: EngineRun) -> dict[str, Counter[str]]:
    """Engine steps of the last ``up`` per resource type: ``{type: Counter(op)}`` (``same`` left out)."""
    out: dict[str, Counter[str]] = {}
    for event in run.events:
        if event["op"] not in ("outputs", "same", "read", "refresh"):
            out.setdefault(event["type"], Counter())[event["op"]] += 1
    return out


def _version_config(config: dict[str, Any], module: str, version: str) -> dict[str, Any]:
    out = copy.deepcopy(config)
    out[f"{PROJECT}:kueue"] = {
        **out[f"{PROJECT}:kueue"],
        "version": version,
        "apiVersion": "auto",
        "chart": str(module_dir(module) / "charts" / "kueue"),
    }
    return out


def test_kueue_upgrade_keeps_queues_workloads_and_admissions(
    new_cluster: ClusterFactory, binaries: dict[str, str], report: Report
) -> None:
    if not Path(binaries.get(f"kueue-{OLD}", "")).is_file():
        missing_input(f"no kueue-{OLD} binary in the e2e manifest: build it with `python3 e2e/build.py --manifest "
                      "out/e2e/binaries.json` (the upgrade e2e runs the Kueue version the stack pins)")
    cluster = new_cluster("engine-upgrade", controllers=False)
    base = e2e_config(STACK, KUEUE_MODULE, JOBSET_MODULE)
    old = _version_config(base, OLD_MODULE, "0.15.0")
    with engine_run("dev", STACK, cluster, binaries, BUILD.PULUMI_KUBERNETES, old) as run:
        assert run.up().summary.result == "succeeded"
        kueue = run.controllers.by_name("kueue")
        assert kueue.version == "v0.15.0"
        state_types = sorted({r["type"] for r in run.state() if r["type"].startswith("kubernetes:kueue.x-k8s.io")})
        assert state_types == [
            "kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue",
            "kubernetes:kueue.x-k8s.io/v1beta1:LocalQueue",
            "kubernetes:kueue.x-k8s.io/v1beta1:ResourceFlavor",
        ]
        cq = run.cluster.get_json("clusterqueues.kueue.x-k8s.io", "benchmarks")
        assert cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0] == {"name": "cpu", "nominalQuota": "7200m"}

        run.cluster.apply([_job("first")])
        _wait_for(run, "the first Job's Workload to be admitted", lambda w: "first" in w and _admission(w["first"]))
        run.cluster.apply([_job("second")])
        before_wl = _wait_for(
            run, "the second Job's Workload to wait for quota", lambda w: "second" in w and _pending_reason(w["second"])
        )
        admitted = _admission(before_wl["first"])
        assert admitted == {
            "clusterQueue": "benchmarks",
            "podSets": [{"name": "main", "flavors": {"cpu": "default", "memory": "default"}, "count": 1}],
        }
        assert _admission(before_wl["second"]) is None
        assert _pending_reason(before_wl["second"]) == "Pending"
        before = _uids(run)
        assert sorted(k.rsplit("/", 1)[0] + "/" for k in before) == [
            "ClusterQueue//",
            "LocalQueue/aiperf-benchmarks/",
            "ResourceFlavor//",
            "Workload/aiperf-benchmarks/",
            "Workload/aiperf-benchmarks/",
        ]

        # The upgrade: the stack file now pins 0.19.2 (its chart from the 0.19.2 module zip).
        run.set_config(_version_config(run.config, KUEUE_MODULE, "0.19.2"))
        started = time.monotonic()
        up = run.up()
        up_s = round(time.monotonic() - started, 1)
        assert up.summary.result == "succeeded"
        steps = _steps(run)
        kueue_steps = {t: dict(c) for t, c in steps.items() if t.startswith("kubernetes:kueue.x-k8s.io/")}
        assert kueue_steps == {
            "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue": {"update": 1},
            "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue": {"update": 1},
            "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor": {"update": 1},
        }
        destructive = sorted(
            {f"{e['type'].rsplit(':', 1)[1]} {e['urn'].rsplit('::', 1)[1]} {e['op']}" for e in run.events
             if e["op"] in ("delete", "replace", "delete-replaced")}
        )
        report.checks["upgrade: kueue 0.15.0 -> 0.19.2, deletes and replaces"] = destructive
        # Only what holds no state: Kueue's manager config (its data changes: pulumi-kubernetes replaces such a
        # ConfigMap) and the readiness gate (replaced on purpose, to wait for the new Kueue).
        assert destructive == [
            "ConfigMap kueue-chart:kueue-system/kueue-manager-config delete-replaced",
            "ConfigMap kueue-chart:kueue-system/kueue-manager-config replace",
            "KueueReadinessGate kueue-ready delete-replaced",
            "KueueReadinessGate kueue-ready replace",
        ]
        assert kueue.version == "v0.19.2"
        image = "us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue"
        started_lines = [line for line in kueue.log if line.startswith("started ")]
        assert started_lines[0] == f"started kueue-v0.15.0 for {image}:release-0.15"
        assert started_lines[-1] == f"started kueue for {image}:release-0.19"

        # The new gate waited for the conversion webhook too (step 4), so the Workloads Kueue 0.15 stored as
        # v1beta1 can be read right away: before that step, this read once met "x509: certificate signed by unknown
        # authority" (the new Kueue had not re-injected its CA into the re-applied CRDs yet).
        (gate,) = [r for r in run.state() if r["type"].endswith(":KueueReadinessGate")]
        gate_attempts = gate["outputs"]["attemptsPerStep"]
        assert sorted(gate_attempts) == ["deployment", "dryRun", "endpoints", "reads"]
        report.checks["upgrade: kueue 0.15.0 -> 0.19.2, gate attempts per step"] = gate_attempts
        after = _uids(run)
        assert after == before  # the same queues and Workloads: nothing deleted and re-created
        after_wl = _workloads(run)
        assert _admission(after_wl["first"]) == admitted
        assert _pending_reason(after_wl["second"]) == "Pending"

        # The pending one is admitted by the new Kueue once the first one leaves.
        run.cluster.kubectl("delete", "job", "first", "-n", NAMESPACE, "--wait=false")
        final = _wait_for(run, "the second Job's Workload to be admitted after the upgrade",
                          lambda w: "first" not in w and "second" in w and _admission(w["second"]))
        assert _admission(final["second"]) == admitted
        second = before_wl["second"]["metadata"]
        assert final["second"]["metadata"]["uid"] == before[f"Workload/{NAMESPACE}/{second['name']}"]

        clean = run.preview(expect_no_changes=True)
        assert run.controllers.errors == []
        report.checks["upgrade: kueue 0.15.0 -> 0.19.2"] = (
            f"up in {up_s} s; engine steps {({t.split(':', 1)[1]: dict(c) for t, c in sorted(steps.items())})}; "
            f"UIDs kept {sum(1 for k, v in before.items() if after.get(k) == v)} of {len(before)}; admitted Workload "
            f"kept {admitted}; pending one admitted after the first was deleted; then {clean.change_summary}"
        )
