"""The stack's WorkloadPriorityClasses."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from components.kube import KubeObject

TYPE = "aiperf-kueue:index:PriorityClasses"


@dataclass(frozen=True, kw_only=True)
class PriorityClassesArgs:
    """WorkloadPriorityClass manifests."""

    classes: Sequence[dict[str, Any]]
    after: Sequence[pulumi.Resource] = ()
    """What every class waits for: the Kueue readiness gate and the ClusterQueues (the documented
    order: ResourceFlavors, Cohort, ClusterQueues, then LocalQueues and WorkloadPriorityClasses)."""


class PriorityClasses(pulumi.ComponentResource):
    """One child per class, named after the component and the class."""

    classes: dict[str, KubeObject]
    """WorkloadPriorityClass resources by name, for jobs to depend on."""
    class_names: list[str]

    def __init__(self, name: str, args: PriorityClassesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self, depends_on=list(args.after))
        self.classes = {
            m["metadata"]["name"]: KubeObject(f"{name}-{m['metadata']['name']}", m, child) for m in args.classes
        }
        self.class_names = [m["metadata"]["name"] for m in args.classes]
        self.register_outputs({"priorityClassNames": self.class_names})
