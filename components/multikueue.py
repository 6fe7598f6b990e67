"""A fleet's MultiKueue objects: the manager's dispatch (AdmissionCheck, MultiKueueConfig, MultiKueueClusters and
their kubeconfig Secrets), a worker's access for its manager (a ServiceAccount, its ClusterRole and binding)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from aiperf_kueue.plan.multikueue_manifests import kubeconfig_refusal, minted_kubeconfig
from components.kube import KubeObject

MANAGER_TYPE = "aiperf-kueue:index:MultiKueueManager"
WORKER_TYPE = "aiperf-kueue:index:MultiKueueWorker"
#: The output of a worker stack that a manager reads by stack reference.
KUBECONFIG_OUTPUT = "multikueueKubeconfig"


@dataclass(frozen=True, kw_only=True)
class WorkerCluster:
    """One worker as the manager declares it."""

    cluster: dict[str, Any]
    """The MultiKueueCluster manifest (:func:`aiperf_kueue.plan.multikueue_manifests.multikueue_cluster`)."""
    secret: dict[str, Any]
    """Its kubeconfig Secret, without data (:func:`aiperf_kueue.plan.multikueue_manifests.kubeconfig_secret`)."""
    kubeconfig: pulumi.Input[str]
    """The kubeconfig: a Pulumi secret (the stack's ``secure:`` value, or the worker stack's output)."""
    where: str
    """Where it is set, as a refusal names it: ``<stack file>: aiperf-kueue:multikueue.workers[0].kubeconfig``."""


@dataclass(frozen=True, kw_only=True)
class MultiKueueManagerArgs:
    """The manager's MultiKueue manifests (:mod:`aiperf_kueue.plan.multikueue_manifests`)."""

    workers: Sequence[WorkerCluster]
    multikueue_config: dict[str, Any]
    admission_check: dict[str, Any]
    after: Sequence[pulumi.Resource] = ()
    """What every object waits for: the Kueue readiness gate."""
    check_kubeconfigs: bool = True
    """Whether each kubeconfig is checked as Kueue checks it (:func:`checked_kubeconfig`): not in the offline
    plan, which never decrypts a secret."""


class MultiKueueManager(pulumi.ComponentResource):
    """Secrets, then their MultiKueueClusters, then the MultiKueueConfig naming them, then the AdmissionCheck."""

    admission_check: KubeObject
    """For the ClusterQueues that carry it to wait for."""
    cluster_names: list[str]

    def __init__(self, name: str, args: MultiKueueManagerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(MANAGER_TYPE, name, None, opts)
        clusters: list[pulumi.Resource] = []
        for worker in args.workers:
            cluster_name = worker.cluster["metadata"]["name"]
            meta = worker.secret["metadata"]
            secret = k8s.core.v1.Secret(
                f"{name}-secret-{cluster_name}",
                metadata=meta,
                type=worker.secret["type"],
                # A Pulumi secret end to end: in state, previews and plan output only as ciphertext or [secret].
                string_data={
                    "kubeconfig": checked_kubeconfig(worker.kubeconfig, worker.where)
                    if args.check_kubeconfigs
                    else pulumi.Output.secret(worker.kubeconfig)
                },
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.after)),
            )
            clusters.append(
                KubeObject(
                    f"{name}-cluster-{cluster_name}",
                    worker.cluster,
                    pulumi.ResourceOptions(parent=self, depends_on=[*args.after, secret]),
                )
            )
        config = KubeObject(
            f"{name}-config-{args.multikueue_config['metadata']['name']}",
            args.multikueue_config,
            pulumi.ResourceOptions(parent=self, depends_on=[*args.after, *clusters]),
        )
        self.admission_check = KubeObject(
            f"{name}-check-{args.admission_check['metadata']['name']}",
            args.admission_check,
            pulumi.ResourceOptions(parent=self, depends_on=[*args.after, config]),
        )
        self.cluster_names = [w.cluster["metadata"]["name"] for w in args.workers]
        self.register_outputs({"clusterNames": self.cluster_names})


@dataclass(frozen=True, kw_only=True)
class MintedToken:
    """A worker's own token for its manager (``multikueue.server``): its Secret, and what the kubeconfig needs."""

    secret: dict[str, Any]
    """The token Secret (:func:`aiperf_kueue.plan.multikueue_manifests.worker_token_secret`)."""
    server: str
    """The worker's API server URL as the manager reaches it."""
    where: str
    """Where ``server`` is set, as a refusal names it: ``<stack file>: aiperf-kueue:multikueue.server``."""
    offline: bool = False
    """The offline plan: the Secret's data never comes back from a cluster, so no kubeconfig is built."""


@dataclass(frozen=True, kw_only=True)
class MultiKueueWorkerArgs:
    """A worker's access for its manager (:func:`aiperf_kueue.plan.multikueue_manifests.worker_access`)."""

    access: Sequence[dict[str, Any]]
    after: Sequence[pulumi.Resource] = ()
    """What the objects wait for: Kueue's namespace exists once its readiness gate passed."""
    token: MintedToken | None = None
    """Mint the ServiceAccount's token on the worker and build the manager's kubeconfig from it (None: the
    kubeconfig comes from stack config, or is not exported)."""



class MultiKueueWorker(pulumi.ComponentResource):
    """The ServiceAccount, ClusterRole and ClusterRoleBinding the manager's Kueue works on this worker with, and,
    with a :class:`MintedToken`, that ServiceAccount's token and the kubeconfig built from it."""

    kubeconfig: pulumi.Output[str] | None
    """The minted kubeconfig, a Pulumi secret (None without a :class:`MintedToken`)."""

    def __init__(self, name: str, args: MultiKueueWorkerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(WORKER_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self, depends_on=list(args.after))
        account: pulumi.Resource | None = None
        for manifest in args.access:
            resource = f"{name}-{manifest['kind'].lower()}-{manifest['metadata']['name']}"
            if manifest["kind"] == "ServiceAccount":
                # A core object's type token is kubernetes:core/v1:<Kind>; KubeObject's "kubernetes:v1:..." is refused
                # by the provider ("apiVersion does not have both a group and a version", found by the engine e2e).
                account = k8s.core.v1.ServiceAccount(resource, metadata=manifest["metadata"], opts=child)
            else:
                KubeObject(resource, manifest, child)
        self.kubeconfig = None
        if args.token is not None:
            token = args.token
            # The provider waits until the token controller has filled a service-account-token Secret
            # (pulumi-kubernetes' Secret awaiter), so its data comes back with the token and the CA. That data is the
            # token controller's, not this program's, and not drift.
            secret = k8s.core.v1.Secret(
                f"{name}-secret-{token.secret['metadata']['name']}",
                metadata=token.secret["metadata"],
                type=token.secret["type"],
                opts=pulumi.ResourceOptions(
                    parent=self,
                    depends_on=[*args.after, *([account] if account is not None else [])],
                    ignore_changes=["data"],
                ),
            )
            if token.offline:
                self.kubeconfig = pulumi.Output.secret(MINTED_PLACEHOLDER)
            else:
                minted: pulumi.Output[str] = secret.data.apply(lambda data: _minted(token.server, data, token.where))
                self.kubeconfig = checked_kubeconfig(minted, token.where)
        self.register_outputs({})


#: What the offline plan shows for a kubeconfig minted at ``pulumi up`` (its token exists only on the cluster).
MINTED_PLACEHOLDER = "[secret: minted by pulumi up from the worker's multikueue-token Secret]"


def _minted(server: str, data: Any, where: str) -> str:
    try:
        return minted_kubeconfig(server, data)
    except ValueError as exc:
        raise pulumi.RunError(f"{where}: {exc}") from None


def worker_kubeconfig(name: str, stack: str, reference: str | None, parent: pulumi.Resource | None = None) -> Any:
    """A worker stack's :data:`KUBECONFIG_OUTPUT`, read by stack reference (``reference``, default
    ``<organization>/<project>/<stack>``), kept a Pulumi secret."""
    ref = reference or f"{pulumi.get_organization()}/{pulumi.get_project()}/{stack}"
    stack_ref = pulumi.StackReference(
        f"multikueue-{name}", stack_name=ref, opts=pulumi.ResourceOptions(parent=parent) if parent else None
    )
    return pulumi.Output.secret(stack_ref.require_output(KUBECONFIG_OUTPUT))


def checked_kubeconfig(kubeconfig: pulumi.Input[str], where: str) -> pulumi.Output[str]:
    """``kubeconfig`` kept a Pulumi secret, checked once known (``pulumi preview`` and ``up`` decrypt it): one Kueue
    would refuse (:func:`aiperf_kueue.plan.multikueue_manifests.kubeconfig_refusal`) ends the run with one line
    naming ``where`` and the places in the kubeconfig, never its text. Without this, Kueue marks the worker's
    MultiKueueCluster inactive and the manager's workloads wait with no error where ``pulumi up`` ran."""

    def check(text: str) -> str:
        refusal = kubeconfig_refusal(text, where)
        if refusal is not None:
            # RunError: the engine prints the message alone, no traceback (and so no local holding the text).
            raise pulumi.RunError(f"invalid stack config:\n{refusal}")
        return text

    return pulumi.Output.secret(kubeconfig).apply(check)
