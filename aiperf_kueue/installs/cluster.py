"""The cluster a stack deploys to, and the settings of the one explicit Kubernetes provider built for it.

Pulumi's default Kubernetes provider is disabled in ``Pulumi.yaml`` (``pulumi:disable-default-providers``):
every object goes through the provider this program builds from :class:`ClusterTarget`, so a stack can
never fall back to whatever kubectl points at. The target comes from ``aiperf-kueue:cluster``; a stack
written before that key that names its context the provider's way (``kubernetes:context``, with
``kubernetes:kubeconfig``) keeps working, since the two say the same thing. Every other ``kubernetes:*``
setting is handed to the explicit provider as the default provider would have read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aiperf_kueue.common.display import quoted
from aiperf_kueue.common.errors import Problem
from aiperf_kueue.config.cluster import ClusterConfig

CONTEXT_KEY = "kubernetes:context"
KUBECONFIG_KEY = "kubernetes:kubeconfig"
#: pulumi-kubernetes 4.25.0's scalar provider settings (``kubernetes:<name>``), by the Python SDK's
#: argument name; each is given to the explicit provider as the default provider would read it.
PROVIDER_SETTINGS: dict[str, tuple[str, type]] = {
    "cluster": ("cluster", str),
    "clusterIdentifier": ("cluster_identifier", str),
    "deleteUnreachable": ("delete_unreachable", bool),
    "enableConfigMapMutable": ("enable_config_map_mutable", bool),
    "enableSecretMutable": ("enable_secret_mutable", bool),
    "enableServerSideApply": ("enable_server_side_apply", bool),
    "namespace": ("namespace", str),
    "skipUpdateUnreachable": ("skip_update_unreachable", bool),
    "suppressDeprecationWarnings": ("suppress_deprecation_warnings", bool),
    "suppressHelmHookWarnings": ("suppress_helm_hook_warnings", bool),
}
NO_CLUSTER_WARNING = (
    "cluster: this stack names no cluster, so it would deploy to whatever kubectl's current context is at "
    "pulumi up time (pulumi up refuses it); set aiperf-kueue:cluster.context to this stack's kubeconfig "
    "context, or cluster.currentContext: true to opt in"
)


def _inline(kubeconfig: str) -> bool:
    """Contents, not a path (YAML has a line break, JSON starts with ``{``): shown only as such, never echoed."""
    return "\n" in kubeconfig or kubeconfig.lstrip().startswith("{")


@dataclass(frozen=True)
class ClusterTarget:
    """Where ``pulumi up`` deploys: the context (None: the current one) in the kubeconfig (None: the default)."""

    context: str | None
    kubeconfig: str | None
    current_context: bool
    named_by: str
    """The config key that says so: ``aiperf-kueue:cluster`` or ``kubernetes:context``."""
    settings: dict[str, Any] = field(default_factory=dict)
    """Further provider arguments (Python SDK names), from the stack's other ``kubernetes:*`` settings."""
    kubeconfig_from_provider: bool = False
    """``kubeconfig`` is ``kubernetes:kubeconfig``'s value (a path, or contents that may be a secret)."""

    def describe(self) -> str:
        """One line for ``plan``: ``context kind-aiperf in $KUBECONFIG (else ~/.kube/config)``."""
        inline = self.kubeconfig is not None and _inline(self.kubeconfig)
        where = "kubeconfig from kubernetes:kubeconfig" if inline else self.kubeconfig
        where = where or "$KUBECONFIG (else ~/.kube/config)"
        if self.current_context:
            return f"the current context of {where} (currentContext: true)"
        return f"context {self.context} in {where}"

    def provider_args(self) -> dict[str, Any]:
        """Keyword arguments of ``pulumi_kubernetes.Provider``."""
        args: dict[str, Any] = dict(self.settings)
        if self.context is not None:
            args["context"] = self.context
        if self.kubeconfig is not None:
            args["kubeconfig"] = self.kubeconfig
        return args

    def as_dict(self) -> dict[str, Any]:
        """What ``plan.json`` records (a kubeconfig's contents never: only that there are some)."""
        kubeconfig = self.kubeconfig
        if kubeconfig is not None and _inline(kubeconfig):
            kubeconfig = "(contents from kubernetes:kubeconfig)"
        return {
            "context": self.context,
            "kubeconfig": kubeconfig,
            "currentContext": self.current_context,
            "namedBy": self.named_by,
            "target": self.describe(),
        }


def cluster_target(
    cluster: ClusterConfig | None, provider: Mapping[str, Any]
) -> tuple[ClusterTarget | None, list[Problem]]:
    """The stack's target cluster from ``aiperf-kueue:cluster`` and its ``kubernetes:*`` settings, and what
    is wrong with them; ``None`` when the stack names no cluster (``plan`` warns, ``pulumi up`` refuses)."""
    problems: list[Problem] = []
    settings: dict[str, Any] = {}
    for key, value in sorted(provider.items()):
        name = key.partition(":")[2]
        if key in (CONTEXT_KEY, KUBECONFIG_KEY) or value is None:
            continue
        if name not in PROVIDER_SETTINGS:
            problems.append(
                Problem(
                    key,
                    "is not a setting this program hands to its Kubernetes provider (it builds one explicit provider "
                    f"from aiperf-kueue:cluster); supported: {', '.join(f'kubernetes:{k}' for k in PROVIDER_SETTINGS)}",
                    in_config=False,
                )
            )
            continue
        arg, kind = PROVIDER_SETTINGS[name]
        text = str(value).strip()
        if kind is bool:
            if text.lower() not in ("true", "false"):
                problems.append(Problem(key, f"must be true or false, got {quoted(text[:80])}", in_config=False))
                continue
            settings[arg] = text.lower() == "true"
        else:
            settings[arg] = text
    context = provider.get(CONTEXT_KEY)
    kubeconfig = provider.get(KUBECONFIG_KEY)
    if cluster is not None:
        # kubernetes:kubeconfig may still say which file (aiperf-kueue:cluster.kubeconfig unset); a second,
        # different answer to either question is refused rather than one silently winning.
        file = cluster.kubeconfig if cluster.kubeconfig is not None else kubeconfig
        for key, given, mine in ((CONTEXT_KEY, context, cluster.context), (KUBECONFIG_KEY, kubeconfig, file)):
            if given is not None and str(given) != mine:
                shown = "(its contents)" if _inline(str(given)) else quoted(str(given)[:80])
                problems.append(
                    Problem(
                        key,
                        f"is {shown}, but aiperf-kueue:cluster says otherwise: the program's own provider reads only "
                        f"aiperf-kueue:cluster (default providers are disabled); remove {key}",
                        in_config=False,
                    )
                )
        named = None if file is None else str(file)
        from_provider = cluster.kubeconfig is None and kubeconfig is not None
        named_by = "aiperf-kueue:cluster"
        target = ClusterTarget(cluster.context, named, cluster.current_context, named_by, settings, from_provider)
        return target, problems
    if context is not None:
        text = str(context)
        return ClusterTarget(
            text, None if kubeconfig is None else str(kubeconfig), False, CONTEXT_KEY, settings
        ), problems
    return None, problems
