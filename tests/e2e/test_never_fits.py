"""A job the plan proves can never be admitted stays pending on a real Kueue, for the reason the plan gives.

``plan`` refuses ``tests/e2e/stacks/Pulumi.e2e-never-fits.yaml`` (exit 2): its one job needs more than its
ClusterQueue can ever hold, and the message quotes what Kueue would say. To show Kueue says it, the test applies
the stack anyway from raw manifests: the queues from the same stack planned without its jobs, the AIPerfJob from the
same stack planned on an inventory large enough to pass the check (the job's own manifest does not depend on the
inventory). The real operator turns it into a JobSet; Kueue must leave the Workload pending with that message.
"""

from __future__ import annotations

import copy
import re
import time
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.cluster import _deadline_loop
from tests.e2e.conftest import OUT, ROOT, ClusterFactory, Report
from tests.e2e.nodes import create_nodes, declared_pools, node_objects
from tests.e2e.operator import resolve_to_loopback, start_operator
from tests.e2e.stackrun import apply_order, kueue_manager_config, object_of, operator_env, plan_error, plan_stack

STACK = ROOT / "tests" / "e2e" / "stacks" / "Pulumi.e2e-never-fits.yaml"
PROJECT = "aiperf-kueue"
KUEUE_SAYS = re.compile(r'Kueue would keep it pending with "(.*)"$')


def _variant(name: str, change: Any) -> Path:
    document = yaml.safe_load(STACK.read_text())
    change(document["config"])
    path = OUT / "never-fits" / f"Pulumi.{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def _without_jobs(config: dict[str, Any]) -> None:
    del config[f"{PROJECT}:jobs"]


def _big_inventory(config: dict[str, Any]) -> None:
    for pool in config[f"{PROJECT}:inventory"]["pools"]:
        pool["nodes"] = pool["nodes"] * 100


def test_a_job_that_never_fits_stays_pending_with_the_plans_reason(
    new_cluster: ClusterFactory, aiperf_venv: Path, report: Report
) -> None:
    code, output = plan_error(STACK, OUT / "never-fits" / "refused")
    reason = KUEUE_SAYS.search(output.strip().splitlines()[-1])
    assert (code, bool(reason)) == (2, True), output
    assert reason is not None
    queues = plan_stack(_variant("e2e-never-fits-queues", _without_jobs), OUT / "never-fits" / "queues")
    big = plan_stack(_variant("e2e-never-fits-big", _big_inventory), OUT / "never-fits" / "big")
    job = next(object_of(r) for r in big.resources if r["type"].endswith(":AIPerfJob"))

    cluster = new_cluster("never-fits", kueue_manager_config(queues))
    create_nodes(cluster, node_objects(declared_pools(STACK)))
    resolve_to_loopback(job["spec"]["benchmark"]["endpoint"]["urls"])
    start_operator(cluster, aiperf_venv, operator_env(queues), cluster.dir)
    cluster.apply([object_of(r) for r in apply_order(queues.resources)])
    cluster.apply([copy.deepcopy(job)])

    workload: dict[str, Any] = {}
    message = None
    for _ in _deadline_loop("a Workload with Kueue's pending message", 120, interval=0.5):
        items = cluster.get_json("workloads", "-n", job["metadata"]["namespace"])["items"]
        if items:
            workload = items[0]
            pending = [c for c in (workload.get("status") or {}).get("conditions", []) if c["type"] == "QuotaReserved"]
            if pending and pending[0]["status"] == "False" and pending[0].get("message"):
                message = pending[0]["message"]
                break
    time.sleep(5)  # a few more scheduling cycles: it must still not be admitted
    workload = cluster.get_json("workload", workload["metadata"]["name"], "-n", job["metadata"]["namespace"])
    assert ((workload.get("status") or {}).get("admission"), message) == (None, reason.group(1))
    report.checks["never fits"] = f"Workload pending with the plan's reason: {message}"
    report.stacks["e2e-never-fits"] = {
        "stackFile": str(STACK),
        "applied": len(queues.resources),
        "rejections": [],
        "note": "plan refuses it (exit 2); applied from raw manifests, Kueue keeps it pending",
        "jobs": [
            {
                "name": job["metadata"]["name"],
                "namespace": job["metadata"]["namespace"],
                "cluster": {"admitted": False, "pendingMessage": message},
                "plan": {"fits": False, "reason": reason.group(1)},
                "match": True,
                "differences": [],
            }
        ],
    }
