"""One benchmark namespace: the namespace (or a label patch of it) and its LocalQueues."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.kube import KubeObject

TYPE = "aiperf-kueue:index:BenchmarkNamespace"
NAMESPACE = "kubernetes:core/v1:Namespace"
NAMESPACE_PATCH = "kubernetes:core/v1:NamespacePatch"


@dataclass(frozen=True, kw_only=True)
class BenchmarkNamespaceArgs:
    """The namespace manifest, its LocalQueues and the ClusterQueue they point at."""

    namespace: dict[str, Any]
    local_queues: Sequence[dict[str, Any]]
    cluster_queue: pulumi.Resource
    create: bool = True
    """Create the namespace; false: it belongs to someone else, only our labels are applied."""
    retain_on_delete: bool = True
    """Keep the namespace (it holds results) in the cluster when it leaves the stack."""
    binding: dict[str, Any] | None = None
    """The RoleBinding that grants the operator's benchmark pods their access in this namespace. Declared with
    ``operator.install: false`` too: the operator, wherever it is installed, runs its benchmarks here, and its
    chart makes this RBAC only in namespaces it is told about."""
    access: pulumi.Resource | None = None
    """The ClusterRole the binding grants (``components.access``): created before the binding."""
    after: Sequence[pulumi.Resource] = ()
    """What the LocalQueues wait for: the Kueue readiness gate."""


class BenchmarkNamespace(pulumi.ComponentResource):
    """Adding or removing a namespace touches only this component's children."""

    local_queues: dict[str, KubeObject]
    """LocalQueue resources by name, for jobs to depend on."""
    local_queue_names: list[str]
    namespace_name: str

    def __init__(self, name: str, args: BenchmarkNamespaceArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        meta = args.namespace["metadata"]
        # A flip of ``create`` keeps the live namespace: each type is aliased to the other, so the engine
        # updates the one resource in place (a Namespace <-> a patch of its labels) instead of deleting the
        # namespace, and every run in it, after the patch has been applied.
        if args.create:
            ns: pulumi.Resource = k8s.core.v1.Namespace(
                f"{name}-ns",
                metadata=meta,
                # Results of finished benchmarks live in the namespace.
                opts=pulumi.ResourceOptions(
                    parent=self, retain_on_delete=args.retain_on_delete, aliases=[pulumi.Alias(type_=NAMESPACE_PATCH)]
                ),
            )
        else:
            # The namespace belongs to someone else: server-side apply only our labels.
            ns = k8s.core.v1.NamespacePatch(
                f"{name}-ns",
                metadata=meta,
                opts=pulumi.ResourceOptions(parent=self, aliases=[pulumi.Alias(type_=NAMESPACE)]),
            )
        self.local_queue_names = [m["metadata"]["name"] for m in args.local_queues]
        self.local_queues = {}
        for manifest in args.local_queues:
            self.local_queues[manifest["metadata"]["name"]] = KubeObject(
                f"{name}-lq-{manifest['metadata']['name']}",
                manifest,
                pulumi.ResourceOptions(
                    parent=self,
                    depends_on=[*args.after, ns, args.cluster_queue],
                    # spec.clusterQueue is immutable (CEL self == oldSelf) and the name is fixed.
                    replace_on_changes=["spec.clusterQueue"],
                    delete_before_replace=True,
                ),
            )
        if args.binding is not None:
            # The logical name the per-namespace Role's binding had: a stack deployed before replaces it in place
            # of deleting one binding and creating another (docs/operations.md).
            KubeObject(
                f"{name}-rolebinding",
                args.binding,
                pulumi.ResourceOptions(parent=self, depends_on=[ns, *([args.access] if args.access else [])]),
            )
        self.namespace_name = meta["name"]
        # No outputs registered: nothing reads them, and a fleet keeps this component once per namespace in every
        # checkpoint of its state.
