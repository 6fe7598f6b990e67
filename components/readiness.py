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


class KueueReadinessProvider(pulumi.dynamic.ResourceProvider):
    """Dynamic provider whose ``create`` is the three-step wait for Kueue.

    Pulumi pickles this provider into the state and unpickles it in a separate
    provider process, so the class is self-contained: everything it needs is a
    class attribute or imported inside the method that needs it.
    """

    #: Nothing secret is captured (a kubeconfig's contents arrive as an input, a Pulumi secret),
    #: so keep the pickled provider readable in state.
    serialize_as_secret_always = False

    #: Inputs naming *which* Kueue is gated: a change means a different, upgraded or
    #: reconfigured Kueue (``releaseDigest``: a new manager configuration restarts the
    #: controller) whose webhook must be waited for again, so replace.
    REPLACE_ON: ClassVar[tuple[str, ...]] = (
        "kueueVersion",
        "releaseDigest",
        "namespace",
        "deployment",
        "webhookService",
        "apiVersion",
    )
    #: Inputs that only tune how to wait or connect: updated in place, no new wait.
    TUNING: ClassVar[tuple[str, ...]] = ("kubeconfig", "context", "attempts", "intervalSeconds", "timeoutSeconds")
    #: Outputs of a wait, carried over by ``update``.
    RESULTS: ClassVar[tuple[str, ...]] = ("ready", "attemptsPerStep", "elapsedSeconds")

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.CheckResult:
        """Reject inputs the wait would refuse, at preview time rather than mid-``up``."""
        failures = []
        for key in ("namespace", "deployment", "webhookService", "apiVersion", "kueueVersion"):
            if not isinstance(news.get(key), str) or not news[key]:
                failures.append(pulumi.dynamic.CheckFailure(key, f"{key} must be a non-empty string"))
        attempts = news.get("attempts")
        if not isinstance(attempts, int | float) or attempts < 1 or int(attempts) != attempts:
            failures.append(pulumi.dynamic.CheckFailure("attempts", f"attempts must be an integer ≥ 1, got {attempts}"))
        from aiperf_kueue.providers.kueue_wait import MAX_INTERVAL_SECONDS

        for key in ("intervalSeconds", "timeoutSeconds"):
            value = news.get(key)
            if not isinstance(value, int | float) or value <= 0:
                failures.append(pulumi.dynamic.CheckFailure(key, f"{key} must be a number > 0, got {value}"))
        interval = news.get("intervalSeconds")
        if isinstance(interval, int | float) and interval > MAX_INTERVAL_SECONDS:
            failures.append(
                pulumi.dynamic.CheckFailure(
                    "intervalSeconds",
                    f"intervalSeconds must be <= {MAX_INTERVAL_SECONDS:g} (the backoff cap), got {interval}",
                )
            )
        return pulumi.dynamic.CheckResult(news, failures)

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        """Wait for Kueue; fail the ``up`` with :class:`~aiperf_kueue.providers.kueue_wait.KueueNotReady`'s message."""
        from aiperf_kueue.providers import kueue_wait as readiness

        api = readiness.load_api_server(props.get("kubeconfig") or None, props.get("context") or None)
        report = readiness.wait_for_kueue(
            api,
            namespace=props["namespace"],
            deployment=props["deployment"],
            webhook_service=props["webhookService"],
            api_version=props["apiVersion"],
            # The engine hands numbers over as floats.
            attempts=int(props["attempts"]),
            interval=float(props["intervalSeconds"]),
            max_interval=readiness.MAX_INTERVAL_SECONDS,
            deadline=float(props["timeoutSeconds"]),
        )
        outs = {
            **{k: v for k, v in props.items() if not k.startswith("__")},
            "ready": True,
            "attemptsPerStep": report.attempts,
            "elapsedSeconds": round(report.seconds, 3),
        }
        return pulumi.dynamic.CreateResult(f"{props['namespace']}/{props['deployment']}", outs)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        """Replace (wait again) when the gated Kueue changes; update in place when only tuning does."""
        replaces = [k for k in self.REPLACE_ON if olds.get(k) != news.get(k)]
        # The pickled ``__provider`` is left out: it changes with unrelated code
        # edits and would show a spurious update on every run.
        changed = replaces or [k for k in self.TUNING if olds.get(k) != news.get(k)]
        return pulumi.dynamic.DiffResult(changes=bool(changed), replaces=replaces, delete_before_replace=False)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        """New tuning inputs, same Kueue: keep the earlier wait's results, don't wait again."""
        outs = {k: v for k, v in news.items() if not k.startswith("__")}
        outs.update({k: olds[k] for k in self.RESULTS if k in olds})
        return pulumi.dynamic.UpdateResult(outs)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing to delete: the gate only ever read from the cluster."""


@dataclass(frozen=True, kw_only=True)
class KueueReadinessGateArgs:
    """What to wait for, and how long. Defaults match the Kueue Helm chart."""

    namespace: str = "kueue-system"
    deployment: str = "kueue-controller-manager"
    webhook_service: str = "kueue-webhook-service"
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
    attempts: int = 20
    """Attempts per step."""
    interval_seconds: float = 1.0
    """First retry delay; doubles per attempt, capped at 10 s."""
    timeout_seconds: float = 300.0
    """Deadline for all three steps together."""


class KueueReadinessGate(pulumi.dynamic.Resource, module="aiperf-kueue", name="KueueReadinessGate"):
    """Created once Kueue admits a dry-run ResourceFlavor: ``depends_on`` it from queue objects.

    Give it ``depends_on`` the Helm release, so the wait starts after the install.
    """

    ready: pulumi.Output[bool]
    """True once created (the create fails otherwise)."""
    attempts_per_step: pulumi.Output[dict[str, int]]
    """Attempts each step took: ``{"deployment": 1, "endpoints": 3, "dryRun": 2}``."""
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
            "kubeconfig": args.kubeconfig,
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
