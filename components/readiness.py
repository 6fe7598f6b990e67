"""A resource that exists once Kueue's webhook serves, for queue objects to depend on.

A Helm release that reports success, or a Deployment at 1/1 Ready, is not a
webhook that answers: ClusterQueue and ResourceFlavor creates fail for another
10–30 s (kueue NOTES). :class:`KueueReadinessGate` runs
:func:`aiperf_kueue.providers.kueue_wait.wait_for_kueue` on create — only on ``pulumi up``,
never on preview or under mocks — and again whenever the Kueue version, its chart
and values (a digest), or the watched objects change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import pulumi
import pulumi.dynamic

# Also the name of the provider class in the state of stacks created before the class moved to
# aiperf_kueue.providers.readiness: keep it importable from here (see that module).
# Re-exported: states written before the provider moved to aiperf_kueue.providers pickle it by this name
# (tests/test_provider_state.py).
from aiperf_kueue.providers.readiness import KueueReadinessProvider as KueueReadinessProvider
from aiperf_kueue.upstream import kueue


@dataclass(frozen=True, kw_only=True)
class KueueReadinessGateArgs:
    """What to wait for, and how long. Defaults: the Kueue chart's names, and the defaults of
    ``kueue.readiness`` (both from :mod:`aiperf_kueue.upstream.kueue`)."""

    namespace: str = kueue.KUEUE_NAMESPACE
    deployment: str = kueue.KUEUE_DEPLOYMENT
    webhook_service: str = kueue.KUEUE_WEBHOOK_SERVICE
    api_version: str = "v1beta2"
    """``kueue.x-k8s.io`` version of the dry-run ResourceFlavor: ``v1beta1`` before Kueue 0.15."""
    kueue_version: pulumi.Input[str]
    """The installed Kueue release; a change replaces the gate, i.e. waits again after an upgrade."""
    release_digest: str | None = None
    """Digest of the installed chart and its values (or release manifests); a change replaces the
    gate, i.e. waits again after a reconfiguration restarts Kueue. None: Kueue managed elsewhere."""
    kubeconfig: pulumi.Input[str] | None = None
    """Kubeconfig path or contents (YAML or JSON, pass those as a Pulumi secret); None:
    ``$KUBECONFIG``, ``~/.kube/config``, then in-cluster.

    Use the same cluster and context as the Kubernetes provider that installs Kueue.
    """
    context: str | None = None
    """Kubeconfig context; None: its ``current-context``."""
    attempts: int = kueue.READINESS_ATTEMPTS
    """Attempts per step."""
    interval_seconds: float = kueue.READINESS_INTERVAL_SECONDS
    """First retry delay in seconds; doubles per attempt, capped at
    :data:`~aiperf_kueue.upstream.kueue.READINESS_MAX_INTERVAL_SECONDS`."""
    timeout_seconds: float = kueue.READINESS_TIMEOUT_SECONDS
    """Deadline for all four steps together, in seconds."""


class KueueReadinessGate(pulumi.dynamic.Resource, module="aiperf-kueue", name="KueueReadinessGate"):
    """Created once Kueue admits a dry-run ResourceFlavor: ``depends_on`` it from queue objects.

    Give it ``depends_on`` the Helm release, so the wait starts after the install.
    """

    ready: pulumi.Output[bool]
    """True once created (the create fails otherwise)."""
    attempts_per_step: pulumi.Output[dict[str, int]]
    """Attempts each step took: ``{"deployment": 1, "endpoints": 3, "dryRun": 2, "reads": 1}``."""
    elapsed_seconds: pulumi.Output[float]
    """How long the wait took."""

    _OUTPUT_NAMES: ClassVar[dict[str, str]] = {
        "attemptsPerStep": "attempts_per_step",
        "elapsedSeconds": "elapsed_seconds",
    }

    _INPUT_NAMES: ClassVar[dict[str, str]] = {v: k for k, v in _OUTPUT_NAMES.items()}

    def __init__(self, name: str, args: KueueReadinessGateArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        props: dict[str, Any] = {
            "namespace": args.namespace,
            "deployment": args.deployment,
            "webhookService": args.webhook_service,
            "apiVersion": args.api_version,
            "kueueVersion": args.kueue_version,
            "releaseDigest": args.release_digest,
            # Contents (not a path) carry credentials: a secret in the inputs the state keeps, too.
            "kubeconfig": pulumi.Output.secret(args.kubeconfig)
            if isinstance(args.kubeconfig, str) and "\n" in args.kubeconfig
            else args.kubeconfig,
            "context": args.context,
            "attempts": args.attempts,
            "intervalSeconds": args.interval_seconds,
            "timeoutSeconds": args.timeout_seconds,
            # Declared so they become outputs of this resource.
            "ready": None,
            "attempts_per_step": None,
            "elapsed_seconds": None,
        }
        # Kubeconfig contents hold credentials: secret in state whatever the input's secretness.
        # replaceOnChanges repeats what the provider's diff decides, so that a preview (and the
        # offline diff, which sees only options) says "replace" before the provider is asked.
        own = pulumi.ResourceOptions(
            additional_secret_outputs=["kubeconfig"], replace_on_changes=list(KueueReadinessProvider.REPLACE_ON)
        )
        super().__init__(KueueReadinessProvider(), name, props, pulumi.ResourceOptions.merge(opts, own))

    def translate_output_property(self, prop: str) -> str:
        """Engine property names (camelCase, as in state) → Python attribute names."""
        return self._OUTPUT_NAMES.get(prop, prop)

    def translate_input_property(self, prop: str) -> str:
        """Python attribute names → engine property names, the inverse of :meth:`translate_output_property`."""
        return self._INPUT_NAMES.get(prop, prop)
