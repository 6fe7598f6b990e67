"""``aiperf-kueue export`` applies to a real cluster as GitOps tools apply it: one ``kubectl apply --server-side``
of the directory, files in name order, once Kueue, JobSet and the operator's CRDs are installed.

The operator's env patch (``operator-env/``, applied first where the operator runs from its chart) is left out: the
e2e cluster has no operator Deployment to patch.
"""

from __future__ import annotations

import subprocess
from typing import Any

from tests.e2e.cluster import _deadline_loop
from tests.e2e.conftest import OUT, ROOT, ClusterFactory, Report
from tests.e2e.stackrun import CLI, kueue_manager_config, plan_stack

STACK = ROOT / "stacks" / "Pulumi.prod.yaml"


def _condition(obj: dict[str, Any], kind: str) -> str | None:
    for c in (obj.get("status") or {}).get("conditions", []):
        if c["type"] == kind:
            return str(c["status"])
    return None


def test_the_export_applies_in_one_server_side_apply(new_cluster: ClusterFactory, report: Report) -> None:
    plan = plan_stack(STACK, OUT / "export" / "plan")
    out = OUT / "export" / "prod"
    done = subprocess.run(
        [str(CLI), "export", str(STACK), "--out", str(out)], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    files = sorted(p.name for p in out.glob("*.yaml") if p.name != "kustomization.yaml")
    cluster = new_cluster("export", kueue_manager_config(plan))
    applied = cluster.kubectl("apply", "--server-side", "--field-manager=gitops", "-f", str(out))
    lines = [line for line in applied.stdout.splitlines() if line.strip()]
    assert len(lines) == len(files)
    assert all(line.endswith("serverside-applied") for line in lines), applied.stdout
    cqs: dict[str, str | None] = {}
    for _ in _deadline_loop("the exported ClusterQueues and LocalQueues to be Active", 60, interval=0.5):
        cqs = {c["metadata"]["name"]: _condition(c, "Active") for c in cluster.get_json("clusterqueues")["items"]}
        lqs = [_condition(q, "Active") for q in cluster.get_json("localqueues", "-A")["items"]]
        if cqs and set(cqs.values()) == {"True"} and lqs and set(lqs) == {"True"}:
            break
    assert cqs == {"team-a": "True", "team-b": "True", "research": "True"}
    # The same directory through kustomize (its Kustomization lists the files in apply order): nothing changes.
    again = cluster.kubectl("apply", "--server-side", "--field-manager=gitops", "-k", str(out))
    outcomes = [line.rsplit(" ", 1)[1] for line in again.stdout.splitlines() if line.strip()]
    assert outcomes == ["serverside-applied"] * len(files)
    report.checks["export applied"] = f"{len(files)} files, kubectl apply --server-side -f and -k, every queue Active"

