"""The stack's one explicit Kubernetes provider, and the refusal to deploy without a named cluster."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from aiperf_kueue.common.errors import PROJECT
from aiperf_kueue.installs.cluster import ClusterTarget
from aiperf_kueue.providers.kubeconfig import is_kubeconfig_contents

#: Pulumi.yaml disables the default provider (``pulumi:disable-default-providers``): every component
#: gets this one through ``providers``, and a resource that did not would fail instead of deploying
#: to the current context.
PROVIDER_NAME = "cluster"


def cluster_provider(
    target: ClusterTarget | None, source: str, *, kubeconfig_secret: bool = False, offline: bool = False
) -> k8s.Provider:
    """The provider every component deploys with; ``pulumi.RunError`` (no traceback) for a stack that names
    no cluster, unless the run is ``offline``, the offline plan's mock engine, which deploys nothing (``plan``
    warns). ``kubeconfig_secret``: the engine handed ``kubernetes:kubeconfig`` over as a secret."""
    if target is None:
        if not offline:
            raise pulumi.RunError(
                f"invalid stack config:\n{source}: {PROJECT}:cluster: the stack names no cluster, and pulumi up "
                "would deploy to whatever kubectl's current context is; set cluster.context to this stack's "
                "kubeconfig context, or cluster.currentContext: true to opt in"
            )
        target = ClusterTarget(None, None, True, "(none: offline plan)")
    args = target.provider_args()
    kubeconfig = args.get("kubeconfig")
    # Contents carry credentials, and a value stack config keeps secret stays one: a secret in state.
    if kubeconfig is not None and (
        is_kubeconfig_contents(kubeconfig) or (target.kubeconfig_from_provider and kubeconfig_secret)
    ):
        args["kubeconfig"] = pulumi.Output.secret(kubeconfig)
    return k8s.Provider(PROVIDER_NAME, **args)
