"""The dynamic provider behind :class:`components.readiness.KueueReadinessGate`.

**State contract.** Pulumi pickles the provider instance (dill, by reference) into the state of
every stack as the gate's ``__provider`` input, and unpickles it to run ``diff``, ``update`` and
``delete``, on ``pulumi up``, ``refresh`` and ``destroy``, for as long as the stack has the gate.
The pickle names this module and the class: ``aiperf_kueue.providers.readiness`` and
``KueueReadinessProvider``. Renaming either breaks every existing stack, so both are pinned by a
test, and a pickle is loaded in a fresh interpreter by another. Stacks created before this module
existed hold ``components.readiness.KueueReadinessProvider``: that name stays importable (an
alias of this class), also under test. Instances carry no state, so the class may change freely.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pulumi
import pulumi.dynamic

from aiperf_kueue.upstream.kueue import READINESS_MAX_INTERVAL_SECONDS


class KueueReadinessProvider(pulumi.dynamic.ResourceProvider):
    """Dynamic provider whose ``create`` is the three-step wait for Kueue.

    Pulumi pickles this provider into the state (by reference: this module and the class's
    name, see the module docstring) and unpickles it in a separate provider process, so the
    class is self-contained: everything it needs is a class attribute or imported inside the
    method that needs it.
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
        for key in ("intervalSeconds", "timeoutSeconds"):
            value = news.get(key)
            if not isinstance(value, int | float) or value <= 0:
                failures.append(pulumi.dynamic.CheckFailure(key, f"{key} must be a number > 0, got {value}"))
        interval = news.get("intervalSeconds")
        if isinstance(interval, int | float) and interval > READINESS_MAX_INTERVAL_SECONDS:
            failures.append(
                pulumi.dynamic.CheckFailure(
                    "intervalSeconds",
                    f"intervalSeconds must be <= {READINESS_MAX_INTERVAL_SECONDS:g} (the backoff cap), got {interval}",
                )
            )
        return pulumi.dynamic.CheckResult(news, failures)

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        """Wait for Kueue; fail the ``up`` with :class:`~aiperf_kueue.providers.kueue_wait.KueueNotReady`'s message."""
        from aiperf_kueue.providers import kueue_wait  # the Kubernetes client: loaded on `pulumi up` only

        api = kueue_wait.load_api_server(props.get("kubeconfig") or None, props.get("context") or None)
        report = kueue_wait.wait_for_kueue(
            api,
            namespace=props["namespace"],
            deployment=props["deployment"],
            webhook_service=props["webhookService"],
            api_version=props["apiVersion"],
            # The engine hands numbers over as floats.
            attempts=int(props["attempts"]),
            interval=float(props["intervalSeconds"]),
            max_interval=READINESS_MAX_INTERVAL_SECONDS,
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
