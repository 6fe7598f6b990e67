"""Which changes of a diff lose live state, and what each loses: the "Destructive" section of a review.

A pull request's reviewer must never find out from the cluster that a change deleted a queue. The
offline diff lists every delete or replace of an object that holds state, the ``--exit-code`` of
``diff`` fails on them (exit 4) unless the change is acknowledged (``--allow-destructive``; the PR
workflow passes it for a ``destructive-ok`` label or a ``Destructive-Change: acknowledged`` commit
trailer), and a change of the stack's cluster is one as well: the next ``pulumi up`` creates every
object on the new cluster and deletes each from the old one.

Not destructive: an object that leaves the stack but stays in the cluster (``retainOnDelete``), and
the in-place updates the program's aliases make of a Kueue apiVersion move or a namespace's ``create``
flip.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiperf_kueue.review.resource_diff import ResourceChange

#: What each stateful kind holds, as the review says it is lost.
LOSSES: dict[str, str] = {
    "Namespace": "the namespace and everything in it: its AIPerfJobs, their results and its LocalQueues",
    "ClusterQueue": (
        "the ClusterQueue's quota: its pending workloads are never admitted, admitted ones lose their accounting "
        "(Kueue holds it Terminating while they run)"
    ),
    "LocalQueue": "the LocalQueue: jobs submitted to it wait forever, its pending workloads are dropped from the queue",
    "Cohort": "the Cohort: its ClusterQueues stop borrowing and lending, borrowed quota is reclaimed",
    "ResourceFlavor": (
        "the ResourceFlavor: ClusterQueues that still name it go inactive, workloads admitted on it lose their flavor"
    ),
    "AIPerfJob": "the benchmark run and its results",
    "CustomResourceDefinition": "the CRD and every object of its kind in the cluster",
    # Kueue 0.19.2 pkg/controller/admissionchecks/multikueue/workload.go: a workload admitted on a worker that is
    # no longer a MultiKueueCluster gets its check set to Retry ("Admitting remote no longer exists").
    "MultiKueueCluster": (
        "a worker of the MultiKueue fleet: jobs it runs lose their admission on the manager and start over on another "
        "worker, and what they left on the removed worker stays there"
    ),
    "MultiKueueConfig": "the fleet's list of workers: the manager's ClusterQueues dispatch nothing until it is back",
    "AdmissionCheck": "the admission check of the manager's ClusterQueues: they stop admitting until it is back",
}
#: A chart whose CRDs are protected carries Kueue's, JobSet's or AIPerf's CRDs.
CHART_LOSS = "the chart's CRDs, and with them every queue, workload or benchmark of their kinds"
CLUSTER_LOSS = (
    "the stack now deploys to another cluster: pulumi up creates every object there and deletes each one "
    "(queues, namespaces, runs not retained) from the cluster it deployed to"
)


@dataclass(frozen=True)
class Destructive:
    """One change that loses state."""

    action: str
    """``delete``, ``replace`` or ``retarget`` (the stack's cluster changes)."""
    name: str
    kind: str
    loses: str


def _kind_name(change: ResourceChange) -> str:
    return change.kind.split(" ", 1)[0] if change.kind else ""


def destructive_changes(
    changes: tuple[ResourceChange, ...], base_data: dict[str, Any] | None, head_data: dict[str, Any]
) -> list[Destructive]:
    """Every change in ``changes`` that deletes or replaces live state, then the cluster change, if any."""
    out: list[Destructive] = []
    for change in changes:
        if change.action not in ("delete", "replace"):
            continue
        kind = _kind_name(change)
        if change.type.startswith("kubernetes:helm.sh/") or change.type.startswith("kubernetes:yaml/"):
            if change.protect:
                out.append(Destructive(change.action, change.name, change.kind or change.type, CHART_LOSS))
            continue
        if kind not in LOSSES:
            continue
        # Left in the cluster: a delete that retains loses nothing there (a replace still recreates it).
        if change.action == "delete" and change.retain_on_delete:
            continue
        out.append(Destructive(change.action, change.name, change.kind, LOSSES[kind]))
    if base_data is not None:
        old, new = base_data.get("cluster"), head_data.get("cluster")
        # A stack written before aiperf-kueue:cluster has no target to compare: nothing to say then.
        if isinstance(old, dict) and (not isinstance(new, dict) or _target(old) != _target(new)):
            after = new.get("target", "(unknown)") if isinstance(new, dict) else "no cluster named"
            out.append(Destructive("retarget", "cluster", f"{old.get('target', '(unknown)')} → {after}", CLUSTER_LOSS))
    return out


def _target(cluster: dict[str, Any]) -> tuple[Any, ...]:
    return (cluster.get("context"), cluster.get("kubeconfig"), cluster.get("currentContext"))
