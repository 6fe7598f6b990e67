"""``aiperf-kueue:multikueue``: this stack's part in a MultiKueue fleet, in Kueue's own names.

Kueue's MultiKueue (Kueue 0.19.2, ``apis/kueue/v1beta2/multikueue_types.go``): a manager cluster queues
the work and dispatches each workload to a worker cluster with room. On the manager: an AdmissionCheck
with ``controllerName: kueue.x-k8s.io/multikueue`` whose parameters name a MultiKueueConfig, which lists
MultiKueueClusters, each reaching its worker with a kubeconfig held in a Secret of Kueue's namespace.

Here a fleet is stacks of this one project: a ``manager`` stack names its ``workers`` (each a stack
of the project: its stack file gives plan the worker's inventory); a ``worker`` stack names its
``manager`` and gets from it the namespaces, LocalQueues, ClusterQueues and priority classes the
manager's queues need, with quotas from its own inventory (``docs/multikueue.md``).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from aiperf_kueue.common.display import quoted
from aiperf_kueue.config.base import DnsLabel, Model
from aiperf_kueue.upstream.kueue_kubeconfig import server_refusal

#: The AdmissionCheck controller of MultiKueue (Kueue ``kueue.MultiKueueControllerName``).
CONTROLLER_NAME = "kueue.x-k8s.io/multikueue"
#: Kueue 0.19.2's MultiKueueConfig ``spec.clusters`` ``MaxItems``.
MAX_CLUSTERS = 20
#: A Pulumi stack name (``pulumi stack init`` allows letters, digits, ``-``, ``_`` and ``.``).
_STACK = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
#: A Go ``time.Duration`` as ``metav1.Duration`` parses it: one or more number-unit pairs.
_DURATION = re.compile(r"([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h)){1,6}")
#: A fully qualified stack reference, ``<organization>/<project>/<stack>``.
_STACK_REFERENCE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}/[A-Za-z0-9][A-Za-z0-9._-]{0,99}/[A-Za-z0-9._-]{1,100}")


def _stack(value: str) -> str:
    if not _STACK.fullmatch(value):
        raise ValueError(
            "must be a stack name of this project (letters, digits, '-', '_' and '.', at most 100), "
            f"got {quoted(value[:80])}"
        )
    return value


class MultiKueueCluster(Model):
    """One worker of the manager: a Kueue MultiKueueCluster, and the stack that deploys the worker."""

    name: DnsLabel
    """The MultiKueueCluster's name (DNS-1123 label, required); the kubeconfig Secret is named
    ``multikueue-<name>`` in Kueue's namespace. Removing a worker is destructive in review."""

    stack: str
    """The worker's stack of this project (required), e.g. ``gpu-east`` for ``stacks/Pulumi.gpu-east.yaml``:
    plan reads its inventory from that file (the fleet's quotas and which worker can run each job)."""

    kubeconfig: str | None = None
    """The kubeconfig the manager's Kueue reaches this worker with, as a ``secure:`` value
    (``pulumi config set --secret --path 'aiperf-kueue:multikueue.workers[0].kubeconfig' "$(cat w.kubeconfig)"``).
    Default none: the worker stack's ``multikueueKubeconfig`` output, read by stack reference. One Kueue would
    refuse (a ``tokenFile``, ``insecure-skip-tls-verify``, a ``certificate-authority`` path, an ``exec`` plugin...)
    stops ``pulumi preview`` and ``pulumi up`` (``docs/multikueue.md``)."""

    stack_reference: str | None = None
    """The worker stack as a stack reference, ``<organization>/<project>/<stack>`` (default:
    ``<this stack's organization>/aiperf-kueue/<stack>``). Only without ``kubeconfig``."""

    @field_validator("stack")
    @classmethod
    def _stack_name(cls, value: str) -> str:
        return _stack(value)

    @field_validator("kubeconfig")
    @classmethod
    def _secret_text(cls, value: str | None) -> str | None:
        # Never echo the value: it is a credential (the secure-value check makes it one, docs/secrets.md).
        if value is not None and not value.strip():
            raise ValueError("is empty: give the worker's kubeconfig as a secure value, or leave it out")
        return value

    @field_validator("stack_reference")
    @classmethod
    def _reference(cls, value: str | None) -> str | None:
        if value is not None and not _STACK_REFERENCE.fullmatch(value):
            raise ValueError(f"must be <organization>/<project>/<stack>, got {quoted(value[:80])}")
        return value

    @model_validator(mode="after")
    def _one_source(self) -> MultiKueueCluster:
        if self.kubeconfig is not None and self.stack_reference is not None:
            raise ValueError(
                "sets kubeconfig and stackReference; keep one (the kubeconfig, or the stack that exports it)"
            )
        return self


class MultiKueue(Model):
    """A stack's role in a MultiKueue fleet: a ``manager`` and its ``workers``, or a ``worker`` of a ``manager``."""

    role: Literal["manager", "worker"]
    """``manager``: queues the fleet's work and dispatches it (its inventory is its workers', summed by
    pool); ``worker``: runs what the manager dispatches (its queues are the manager's). Required."""

    workers: list[MultiKueueCluster] = Field(default_factory=list)
    """The manager's workers, in Kueue's order of preference (the MultiKueueConfig's ``clusters``):
    1 to 20, names and stacks unique. Only for ``role: manager``."""

    manager: str | None = None
    """The manager's stack of this project, e.g. ``fleet`` for ``stacks/Pulumi.fleet.yaml``: its
    ``queues`` and ``priorityClasses`` are this worker's. Required for ``role: worker``, only there."""

    kubeconfig: str | None = None
    """A worker's kubeconfig for the manager, as a ``secure:`` value: the worker exports it as the secret output
    ``multikueueKubeconfig``, which a manager's worker without ``kubeconfig`` reads by stack reference (default
    none: no output). Made by hand for the worker's ``multikueue`` ServiceAccount (``docs/multikueue.md``);
    ``server`` instead has the worker mint it. Only for ``role: worker``."""

    server: str | None = None
    """A worker's API server URL as its manager's Kueue reaches it, ``https://<host>[:<port>]`` (default none).
    Set, the worker mints its manager's credentials itself: a long-lived token Secret ``multikueue-token`` of its
    ``multikueue`` ServiceAccount in Kueue's namespace (Kubernetes' documented long-lived token), and exports
    ``multikueueKubeconfig`` (a secret output) from this URL, the cluster's CA and that token: one ``pulumi up``
    per worker, no token by hand. Instead of ``kubeconfig``; only for ``role: worker``."""

    worker_lost_timeout: str | None = None
    """How long the manager's Kueue waits for a worker it lost before a job admitted there starts over elsewhere,
    a Go duration (``"5m"``, ``"30s"``; Kueue's ``multiKueue.workerLostTimeout``, default Kueue's: 15m). Only for
    ``role: manager``."""

    multi_kueue_config: DnsLabel = "aiperf-fleet"
    """The manager's MultiKueueConfig name (default ``aiperf-fleet``)."""

    admission_check: DnsLabel = "multikueue"
    """The manager's AdmissionCheck name (default ``multikueue``); every ClusterQueue of the manager carries it."""

    @field_validator("kubeconfig")
    @classmethod
    def _secret_text(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("is empty: give this worker's kubeconfig as a secure value, or leave it out")
        return value

    @field_validator("server")
    @classmethod
    def _server(cls, value: str | None) -> str | None:
        if value is None:
            return None
        refusal = server_refusal(value)
        if refusal is not None:
            raise ValueError(refusal)
        return value

    @field_validator("worker_lost_timeout")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        if value is not None and not _DURATION.fullmatch(value):
            raise ValueError(f'must be a Go duration such as "5m" or "30s", got {quoted(value[:80])}')
        return value

    @field_validator("manager")
    @classmethod
    def _manager(cls, value: str | None) -> str | None:
        return None if value is None else _stack(value)

    @model_validator(mode="after")
    def _by_role(self) -> MultiKueue:
        if self.role == "manager":
            if self.manager is not None or self.kubeconfig is not None or self.server is not None:
                raise ValueError("role manager takes workers; manager, kubeconfig and server are a worker's")
            if not 1 <= len(self.workers) <= MAX_CLUSTERS:
                raise ValueError(
                    f"role manager needs 1 to {MAX_CLUSTERS} workers (Kueue's MultiKueueConfig limit), got "
                    f"{len(self.workers)}"
                )
            for key in ("name", "stack"):
                values = [getattr(w, key) for w in self.workers]
                twice = sorted({v for v in values if values.count(v) > 1})
                if twice:
                    raise ValueError(f"workers' {key}s must be unique, {', '.join(map(quoted, twice))} repeats")
        else:
            if self.workers:
                raise ValueError("role worker takes a manager; workers are a manager's")
            if self.worker_lost_timeout is not None:
                raise ValueError("role worker takes no workerLostTimeout; it is the manager's Kueue setting")
            if self.manager is None:
                raise ValueError("role worker needs manager: the manager's stack name, whose queues this worker gets")
            if self.kubeconfig is not None and self.server is not None:
                raise ValueError(
                    "sets kubeconfig and server; keep one (server: the worker mints its token and exports the "
                    "kubeconfig itself)"
                )
        return self
