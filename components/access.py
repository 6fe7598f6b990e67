"""The benchmark pods' access: one ClusterRole, granted in each benchmark namespace by its RoleBinding."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from components.kube import KubeObject

TYPE = "aiperf-kueue:index:BenchmarkAccess"


@dataclass(frozen=True, kw_only=True)
class BenchmarkAccessArgs:
    """The ClusterRole manifest (``aiperf_kueue.installs.operator_objects.benchmark_cluster_role``)."""

    cluster_role: dict[str, Any]


class BenchmarkAccess(pulumi.ComponentResource):
    """The rules once per cluster, so a benchmark namespace needs only a RoleBinding (one resource fewer in
    every namespace, and in every checkpoint of a fleet: docs/scale.md)."""

    cluster_role: KubeObject
    """Depend on this from each RoleBinding: binding a role that does not exist yet is refused to anyone
    without the ``bind`` verb."""

    def __init__(self, name: str, args: BenchmarkAccessArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        self.cluster_role = KubeObject(f"{name}-clusterrole", args.cluster_role, pulumi.ResourceOptions(parent=self))
