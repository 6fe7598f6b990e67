"""ResourceFlavors, the Cohorts and the ClusterQueues of a stack."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from components.kube import KubeObject

TYPE = "aiperf-kueue:index:KueueQueues"


@dataclass(frozen=True, kw_only=True)
class KueueQueuesArgs:
    """Manifests from :mod:`aiperf_kueue.plan.manifests`, in apply order."""

    flavors: Sequence[dict[str, Any]]
    cluster_queues: Sequence[dict[str, Any]]
    cohorts: Sequence[dict[str, Any]] = ()
    """Cohorts, each after its parent when the parent is among them."""
    after: Sequence[pulumi.Resource] = ()
    """What every object waits for: the Kueue readiness gate."""


class KueueQueues(pulumi.ComponentResource):
    """Flavors first, then the Cohort (after the flavors), then ClusterQueues that depend on both."""

    cluster_queues: dict[str, KubeObject]
    """ClusterQueue resources by name, for LocalQueues to depend on."""
    cluster_queue_names: list[str]
    flavor_names: list[str]

    def __init__(self, name: str, args: KueueQueuesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self, depends_on=list(args.after))
        flavors = [KubeObject(f"{name}-flavor-{m['metadata']['name']}", m, child) for m in args.flavors]
        before: list[pulumi.Resource] = [*args.after, *flavors]
        # The documented order as real edges: flavors, then the Cohorts (a parent before its children),
        # then ClusterQueues (and the reverse on destroy). Kueue accepts any order; the edges make a
        # destroy take a team's queue down before its department.
        cohorts: dict[str, KubeObject] = {}
        by_name = {m["metadata"]["name"]: m for m in args.cohorts}

        def declare(cohort_name: str) -> KubeObject:
            if cohort_name not in cohorts:
                manifest = by_name[cohort_name]
                parent = manifest["spec"].get("parentName")
                above = [declare(parent)] if parent in by_name and parent != cohort_name else []
                opts = pulumi.ResourceOptions(parent=self, depends_on=[*before, *above])
                cohorts[cohort_name] = KubeObject(f"{name}-cohort-{cohort_name}", manifest, opts)
            return cohorts[cohort_name]

        for cohort_name in by_name:
            declare(cohort_name)
        before += list(cohorts.values())
        self.cluster_queues = {
            m["metadata"]["name"]: KubeObject(
                f"{name}-cq-{m['metadata']['name']}",
                m,
                pulumi.ResourceOptions(parent=self, depends_on=before),
            )
            for m in args.cluster_queues
        }
        self.flavor_names = [m["metadata"]["name"] for m in args.flavors]
        self.cluster_queue_names = list(self.cluster_queues)
        self.register_outputs({"flavorNames": self.flavor_names, "clusterQueueNames": self.cluster_queue_names})
