"""The stack's benchmark namespaces: each one's namespace (or a label patch of it), LocalQueues and RoleBinding."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.kube import KubeObject

TYPE = "aiperf-kueue:index:BenchmarkNamespaces"
#: The component each namespace had of its own before (``ns-<namespace>``), until 2026-12-07: the children keep
#: their live objects by aliases to their URNs under it.
EARLIER_TYPE = "aiperf-kueue:index:BenchmarkNamespace"
NAMESPACE = "kubernetes:core/v1:Namespace"
NAMESPACE_PATCH = "kubernetes:core/v1:NamespacePatch"


@dataclass(frozen=True, kw_only=True)
class BenchmarkNamespacesArgs:
    """What every benchmark namespace waits for."""

    access: pulumi.Resource | None = None
    """The ClusterRole the namespaces' RoleBindings grant (``components.access``): created before the bindings."""
    after: Sequence[pulumi.Resource] = ()
    """What the LocalQueues wait for: the Kueue readiness gate."""


@dataclass(frozen=True, kw_only=True)
class BenchmarkNamespaceArgs:
    """One namespace's manifest, its LocalQueues and the ClusterQueue they point at."""

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


@dataclass(frozen=True)
class NamespaceResources:
    """What one benchmark namespace registered: its namespace resource and its LocalQueues by name."""

    namespace: pulumi.CustomResource
    local_queues: dict[str, KubeObject]


class BenchmarkNamespaces(pulumi.ComponentResource):
    """One component for every benchmark namespace, added one at a time (:meth:`add`): a namespace is three
    resources (the Namespace, its LocalQueue, its RoleBinding), and a fleet's state and each step's checkpoint
    carry no per-namespace component (docs/scale.md). Adding or removing a namespace touches only its own."""

    def __init__(self, name: str, args: BenchmarkNamespacesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        self._name = name
        self._args = args
        # No outputs registered: nothing reads them.

    def add(self, args: BenchmarkNamespaceArgs) -> NamespaceResources:
        """Register one namespace's resources, named ``<component>-<namespace>-ns``, ``...-lq-<queue>`` and
        ``...-rolebinding``: with the component named ``ns``, the names the earlier per-namespace component
        ``ns-<namespace>`` gave them."""
        meta = args.namespace["metadata"]
        name = f"{self._name}-{meta['name']}"
        earlier = pulumi.create_urn(f"ns-{meta['name']}", EARLIER_TYPE)
        # A flip of ``create`` keeps the live namespace: each type is aliased to the other, so the engine
        # updates the one resource in place (a Namespace <-> a patch of its labels) instead of deleting the
        # namespace, and every run in it, after the patch has been applied. Each is aliased under the earlier
        # component too.
        own, other = (NAMESPACE, NAMESPACE_PATCH) if args.create else (NAMESPACE_PATCH, NAMESPACE)
        aliases: list[pulumi.Input[str | pulumi.Alias]] = [
            pulumi.Alias(type_=other),
            *(pulumi.create_urn(f"{name}-ns", t, parent=earlier) for t in (own, other)),
        ]
        ns: pulumi.CustomResource
        if args.create:
            ns = k8s.core.v1.Namespace(
                f"{name}-ns",
                metadata=meta,
                # Results of finished benchmarks live in the namespace.
                opts=pulumi.ResourceOptions(parent=self, retain_on_delete=args.retain_on_delete, aliases=aliases),
            )
        else:
            # The namespace belongs to someone else: server-side apply only our labels.
            ns = k8s.core.v1.NamespacePatch(
                f"{name}-ns", metadata=meta, opts=pulumi.ResourceOptions(parent=self, aliases=aliases)
            )
        local_queues = {
            manifest["metadata"]["name"]: KubeObject(
                f"{name}-lq-{manifest['metadata']['name']}",
                manifest,
                pulumi.ResourceOptions(
                    parent=self,
                    depends_on=[*self._args.after, ns, args.cluster_queue],
                    # spec.clusterQueue is immutable (CEL self == oldSelf) and the name is fixed.
                    replace_on_changes=["spec.clusterQueue"],
                    delete_before_replace=True,
                ),
                former_parent=earlier,
            )
            for manifest in args.local_queues
        }
        if args.binding is not None:
            # The logical name the per-namespace Role's binding had: a stack deployed before replaces it in place
            # of deleting one binding and creating another (docs/operations.md).
            access = [self._args.access] if self._args.access else []
            KubeObject(
                f"{name}-rolebinding",
                args.binding,
                pulumi.ResourceOptions(parent=self, depends_on=[ns, *access]),
                former_parent=earlier,
            )
        return NamespaceResources(ns, local_queues)
