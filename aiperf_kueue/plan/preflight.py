"""AIPerf's "Kueue Queue" preflight, run at plan time against the cluster this stack creates.

Upstream: aiperf 0.13.0 aiperf/operator/preflight/_infra.py, aiperf/operator/handlers/create.py

The operator runs this check on every new AIPerfJob; any FAIL sets the job ``Failed`` with
``Pre-flight failed: Kueue Queue: <message>`` (``op/preflight/_infra.py`` and
``op/handlers/create.py``, aiperf NOTES §4). :func:`check_kueue_queue` is the same decision
table with the operator's exact wording, as a pure function of what the check reads:

==========================================================  =====  ==========================================
Situation                                                   Result Message
==========================================================  =====  ==========================================
queueName set, LocalQueue found                             PASS   ``Kueue LocalQueue '<q>' exists``
queueName set, 404, Kueue not installed                     FAIL   ``Kueue is not installed, but LocalQueue ...``
queueName set, 404, Kueue installed                         FAIL   ``Kueue LocalQueue '<q>' not found. ...``
queueName set, other HTTP error (403)                       WARN   ``Could not verify Kueue queue: HTTP <code>``
no queueName, Kueue not installed                           SKIP   ``Kueue not installed (queue check skipped)``
no queueName, namespace annotated with a queue (non-empty)  PASS   ``No explicit queue specified but ...``
no queueName, no annotation (or an empty one)               WARN   ``Kueue is installed but no queue configured. ...``
==========================================================  =====  ==========================================

The check reads **only** ``spec.scheduling.queueName``, never the operator's env default;
"installed" means listing LocalQueues in the job's namespace succeeds (any error, 403
included, counts as not installed). The operator lists them through one apiVersion (v1beta1 in
AIPerf 0.13.0): on a Kueue that no longer serves it (0.20+) the list is a 404 and Kueue looks not
installed, although it runs and admits through v1beta2 (:mod:`aiperf_kueue.upstream.compat`).

:func:`stack_checks` applies it to every submission the platform can see: each AIPerfJob
the stack declares (with a queueName, except where only the default queue runs), and per benchmark namespace
``aiperf kube profile`` as exported in ``aiperfCli`` and without ``--queue-name``. The
cluster is the one this stack creates: its LocalQueues and namespace annotations, and
Kueue installed (by this program, or elsewhere with ``kueue.install: false``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from aiperf_kueue.common.errors import Problem, key_path
from aiperf_kueue.config import StackConfig
from aiperf_kueue.config.expansion import JobEntry
from aiperf_kueue.config.installs import DEFAULT_QUEUE_AUTO
from aiperf_kueue.plan import manifests
from aiperf_kueue.plan.submit import (
    DEFAULT_QUEUE_ENV,
    benchmark_namespaces,
    default_queue,
    namespace_annotations,
    namespace_queue,
    operator_env_known,
)
from aiperf_kueue.upstream import compat
from aiperf_kueue.upstream.kueue import DEFAULT_LOCAL_QUEUE, DEFAULT_QUEUE_ANNOTATION, QUEUE_NAME_LABEL, KueueTarget

#: The operator's name for the check (the ``Pre-flight failed: <check>: <message>`` prefix).
CHECK_NAME = "Kueue Queue"

Status = Literal["PASS", "WARN", "FAIL", "SKIP"]

#: How a submission reached the cluster.
Kind = Literal["AIPerfJob", "aiperf kube profile", "aiperf kube profile without --queue-name"]


@dataclass(frozen=True)
class Cluster:
    """What the check reads from the cluster."""

    kueue_installed: bool
    """Whether listing LocalQueues through the operator's apiVersion succeeds (the Kueue CRDs serve it)."""

    local_queues: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """LocalQueue names per namespace."""

    annotations: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Annotations per namespace."""

    local_queue_http_error: int | None = None
    """HTTP status (not 404) every LocalQueue read returns instead of an answer, e.g. 403 when the
    operator's ClusterRole lacks ``kueue.x-k8s.io/localqueues`` get/list (``None``: reads work)."""

    operator_gap: str | None = None
    """Why the operator sees no Kueue although Kueue runs (:func:`aiperf_kueue.upstream.compat.api_gap`:
    it reads an apiVersion Kueue no longer serves; ``kueue_installed`` is then False); None: no gap."""


@dataclass(frozen=True)
class Outcome:
    """One result of the check."""

    status: Status
    """PASS, WARN, FAIL or SKIP."""

    message: str
    """The operator's message, verbatim."""

    fix: str | None = None
    """What to change (``None`` on PASS)."""


def check_kueue_queue(namespace: str, queue_name: str | None, cluster: Cluster) -> Outcome:
    """The operator's ``_check_kueue_queue`` for a job in ``namespace`` with ``spec.scheduling.queueName``."""
    queues = cluster.local_queues.get(namespace, ()) if cluster.kueue_installed else ()
    suggestion = queues[0] if queues else "<queue-name>"
    if queue_name:
        if cluster.local_queue_http_error is not None:
            return Outcome(
                "WARN",
                f"Could not verify Kueue queue: HTTP {cluster.local_queue_http_error}",
                "let the operator read LocalQueues: its ClusterRole needs get and list on kueue.x-k8s.io "
                "localqueues (the chart's clusterrole.yaml grants them)",
            )
        if queue_name in queues:
            return Outcome("PASS", f"Kueue LocalQueue '{queue_name}' exists")
        if not _installed(cluster):
            return Outcome(
                "FAIL",
                f"Kueue is not installed, but LocalQueue '{queue_name}' was explicitly requested. "
                "Install Kueue or remove scheduling.queueName from spec.",
                (
                    f"{cluster.operator_gap}; submit without a queue: the operator's default queue "
                    "(operator.defaultQueue) labels the JobSet and Kueue admits it through v1beta2"
                )
                if cluster.operator_gap
                else "install Kueue (kueue.install: true) before submitting, or submit without a queue",
            )
        return Outcome(
            "FAIL",
            f"Kueue LocalQueue '{queue_name}' not found. Create it or remove scheduling.queueName from spec.",
            f"name a LocalQueue of namespace {namespace} ({', '.join(queues) or 'none'}), or create "
            f"'{queue_name}' there (a namespace's localQueue, or defaultQueue: true for 'default')",
        )
    if not _installed(cluster):
        return Outcome(
            "SKIP",
            "Kueue not installed (queue check skipped)",
            (
                f"nothing to fix on this route: {cluster.operator_gap}; the job still reaches Kueue through the "
                "operator's default queue (then:)"
            )
            if cluster.operator_gap
            else "install Kueue, or accept that the job runs without gang-scheduling and quota",
        )
    # The operator tests the annotation's value: an empty one configures no queue.
    if cluster.annotations.get(namespace, {}).get(DEFAULT_QUEUE_ANNOTATION):
        return Outcome(
            "PASS",
            f"No explicit queue specified but namespace has {DEFAULT_QUEUE_ANNOTATION} annotation",
        )
    return Outcome(
        "WARN",
        "Kueue is installed but no queue configured. Job will bypass gang-scheduling and quota management.",
        f"set spec.scheduling.queueName (aiperf kube profile --queue-name {suggestion}), or annotate the "
        f"namespace: kubectl annotate namespace {namespace} {DEFAULT_QUEUE_ANNOTATION}={suggestion}",
    )


def _installed(cluster: Cluster) -> bool:
    # The operator lists LocalQueues (limit=1); any error, 403 included, reads as "not installed".
    return cluster.kueue_installed and cluster.local_queue_http_error is None


# --------------------------------------------------------------------------- this stack's cluster


@dataclass(frozen=True)
class Check:
    """One submission into this stack's cluster and the operator's preflight verdict on it."""

    kind: Kind
    """``AIPerfJob`` (declared by this stack) or an ``aiperf kube profile`` submission."""

    namespace: str
    """Where it is submitted."""

    queue_name: str | None
    """Its ``spec.scheduling.queueName`` (``None``: none)."""

    origin: tuple[str | int, ...]
    """Config key path it comes from: ``jobs[0]``, ``sweeps[1]`` or a namespace."""

    outcome: Outcome
    """The check's result."""

    then: str
    """What happens to the JobSet after a passing preflight: which queue admits it, if any."""

    job: str | None = None
    """The job's config name (declared jobs only)."""

    sweep: str | None = None
    """The sweep a declared job is a point of."""

    mismatch: str | None = None
    """Why a passing check misleads (the annotation names a queue the operator won't stamp), with
    the fix: a plan warning even on PASS."""

    object_name: str | None = None
    """A declared job's AIPerfJob name, ``<job>-<digest>`` (known once the manifest is built:
    :meth:`aiperf_kueue.plan.stack_plan.StackPlan.preflight_table`)."""

    @property
    def subject(self) -> str:
        """``AIPerfJob bench/llama-latency-1a2b3c`` or ``aiperf kube profile -n bench ...``."""
        if self.job is not None:
            return f"{self.kind} {self.namespace}/{self.object_name or self.job}"
        flag = f" --queue-name {self.queue_name}" if self.queue_name else " (no --queue-name)"
        return f"aiperf kube profile -n {self.namespace}{flag}"

    def as_dict(self) -> dict[str, Any]:
        """The ``plan.json`` / stack-output row."""
        return {
            "check": CHECK_NAME,
            "subject": self.subject,
            "kind": self.kind,
            "job": self.job,
            "objectName": self.object_name,
            "namespace": self.namespace,
            "queueName": self.queue_name,
            "status": self.outcome.status,
            "message": self.outcome.message,
            "fix": self.outcome.fix,
            "then": self.then,
        }


def stack_cluster(config: StackConfig, target: KueueTarget | None = None) -> Cluster:
    """The cluster this stack creates, as the operator sees it: Kueue is installed (here, or
    elsewhere when ``kueue.install`` is false) and visible unless the operator reads an apiVersion
    the pinned Kueue (``target``, default ``kueue.version``) no longer serves; one or two
    LocalQueues and the annotation per namespace."""
    local_queues: dict[str, tuple[str, ...]] = {}
    annotations: dict[str, dict[str, str]] = {}
    default = default_queue(config)
    for _, _, ns in benchmark_namespaces(config):
        local_queues[ns.name] = tuple(manifests.local_queue_names(ns))
        annotations[ns.name] = namespace_annotations(ns, default)
    gap = compat.api_gap((target or config.kueue.target()).version, config.operator.aiperf_version)
    return Cluster(kueue_installed=gap is None, local_queues=local_queues, annotations=annotations, operator_gap=gap)


def writes_queue_name(config: StackConfig, target: KueueTarget) -> bool:
    """Whether the AIPerfJobs this stack declares carry ``spec.scheduling.queueName`` (and the
    ``aiperf kube profile`` line it prints ``--queue-name``): not where the operator cannot read
    Kueue's LocalQueues (:func:`aiperf_kueue.upstream.compat.operator_reads_local_queues`), where only the
    operator's default queue runs."""
    return compat.operator_reads_local_queues(target.version, config.operator.aiperf_version)


def stack_checks(
    config: StackConfig, entries: Sequence[JobEntry], target: KueueTarget, cluster: Cluster | None = None
) -> tuple[Check, ...]:
    """The check for every declared AIPerfJob whose namespace is a benchmark namespace, then per
    namespace for ``aiperf kube profile`` with the exported arguments and without ``--queue-name``."""
    cluster = cluster or stack_cluster(config, target)
    explicit = writes_queue_name(config, target)
    default = default_queue(config)
    unrouted = _unrouted(config, default)
    namespaces = {ns.name: (path, cq, ns) for path, cq, ns in benchmark_namespaces(config)}
    checks: list[Check] = []
    for entry in entries:
        if entry.namespace not in namespaces:
            continue  # the admission check reports the unknown namespace
        _, cq, ns = namespaces[entry.namespace]
        # Where only the default queue runs, a job names a queue only if its config does (refused).
        queue = entry.queue or (namespace_queue(ns, default) if explicit else None)
        outcome = check_kueue_queue(entry.namespace, queue, cluster)
        if queue is None:
            then = _unlabelled(
                config, default, entry.namespace, cluster.local_queues.get(entry.namespace, ()), cq, target
            )
        else:
            then = _queued(queue, cq)
        checks.append(Check("AIPerfJob", entry.namespace, queue, entry.origin, outcome, then, entry.name, entry.sweep))
    for path, cq, ns in benchmark_namespaces(config):
        queue = namespace_queue(ns, default)
        checks.append(
            Check(
                "aiperf kube profile",
                ns.name,
                queue,
                path,
                check_kueue_queue(ns.name, queue, cluster),
                _queued(queue, cq),
            )
        )
        unlabelled = _unlabelled(config, default, ns.name, cluster.local_queues.get(ns.name, ()), cq, target)
        outcome = check_kueue_queue(ns.name, None, cluster)
        checks.append(
            Check(
                "aiperf kube profile without --queue-name",
                ns.name,
                None,
                (*path, "defaultQueueAnnotation"),
                outcome,
                unlabelled,
                mismatch=_mismatch(unrouted, ns.name, cluster, outcome, unlabelled),
            )
        )
    return tuple(checks)


def _queued(queue: str, cluster_queue: str) -> str:
    return (
        f"JobSet labelled {QUEUE_NAME_LABEL}={queue} and created suspended; Kueue admits it through "
        f"LocalQueue {queue} (ClusterQueue {cluster_queue})"
    )


def _unlabelled(
    config: StackConfig,
    default: str | None,
    namespace: str,
    local_queues: Sequence[str],
    cluster_queue: str,
    target: KueueTarget,
) -> str:
    """Where a job without ``spec.scheduling.queueName`` ends up: the annotation routes nothing,
    the operator's env default ``default`` does (unknown when an external operator's env is)."""
    if not operator_env_known(config):
        return (
            f"unknown: the external operator's env is not declared (operator.env: unknown); with {DEFAULT_QUEUE_ENV} "
            "naming a LocalQueue of this namespace it labels the JobSet and creates it suspended for Kueue, without "
            "it the JobSet carries no queue label; declare operator.env to know which"
        )
    if default:
        if not config.operator.install:
            how = f"{DEFAULT_QUEUE_ENV} in the external operator's declared env"
        elif config.operator.default_queue_setting != DEFAULT_QUEUE_AUTO:
            how = "operator.defaultQueue"
        else:
            how = "operator.defaultQueue: auto, the LocalQueue every benchmark namespace has"
        return (
            f"the operator labels the JobSet {QUEUE_NAME_LABEL}={default} ({how}) and "
            f"creates it suspended; Kueue admits it through LocalQueue {default} (ClusterQueue {cluster_queue})"
        )
    if DEFAULT_LOCAL_QUEUE in local_queues and target.default_local_queue_defaulting:
        # Kueue's job webhook defaults the queue label to a LocalQueue named "default", then
        # suspends the labelled job (LocalQueueDefaulting, GA from 0.17).
        return (
            f"no queue label from the operator; Kueue labels the JobSet {QUEUE_NAME_LABEL}={DEFAULT_LOCAL_QUEUE} "
            f"(a LocalQueue named default, Kueue >= 0.17) and admits it through it (ClusterQueue {cluster_queue})"
        )
    if config.kueue.manage_jobs_without_queue_name:
        return (
            "no queue label: Kueue (manageJobsWithoutQueueName) suspends the JobSet and never admits it, "
            f"no LocalQueue being named; pass --queue-name {local_queues[0] if local_queues else '<queue-name>'}"
        )
    return (
        "no queue label: the JobSet bypasses Kueue (no quota, no gang admission; neither Kueue nor the "
        f"operator routes by the annotation); pass --queue-name {local_queues[0] if local_queues else '<queue-name>'}"
    )


def _unrouted(config: StackConfig, default: str | None) -> tuple[str, str] | None:
    """Why the operator stamps no queue label, and the fix; None when it has an env default."""
    if default:
        return None
    if not config.operator.install:
        if not operator_env_known(config):
            return (
                "the external operator's env is not declared (operator.env: unknown), so it may stamp none",
                f"declare operator.env (with {DEFAULT_QUEUE_ENV}), or set defaultQueueAnnotation: false here",
            )
        return (
            f"the external operator's declared env sets no {DEFAULT_QUEUE_ENV}",
            f"set {DEFAULT_QUEUE_ENV} on that operator (and in operator.env), or set defaultQueueAnnotation: false "
            "here",
        )
    if config.operator.default_queue_setting == DEFAULT_QUEUE_AUTO:
        names = sorted({ns.local_queue for _, _, ns in benchmark_namespaces(config)})
        return (
            f"operator.defaultQueue is auto, and the benchmark namespaces share no LocalQueue "
            f"(localQueue: {', '.join(names)})",
            "give every benchmark namespace the same localQueue, or set operator.defaultQueue to a LocalQueue "
            "each of them has, or set defaultQueueAnnotation: false here",
        )
    return (
        "operator.defaultQueue is off",
        "set operator.defaultQueue (auto, or a LocalQueue every benchmark namespace has), or set "
        "defaultQueueAnnotation: false here",
    )


def _mismatch(
    unrouted: tuple[str, str] | None, namespace: str, cluster: Cluster, outcome: Outcome, then: str
) -> str | None:
    """The warning for an annotated namespace whose annotation promises a queue the operator won't
    stamp (``unrouted``: no env default): the preflight passes, and the job goes where ``then`` says."""
    promised = cluster.annotations.get(namespace, {}).get(DEFAULT_QUEUE_ANNOTATION)
    if unrouted is None or promised is None or outcome.status != "PASS":
        return None
    why, fix = unrouted
    return (
        f"namespace {namespace} is annotated {DEFAULT_QUEUE_ANNOTATION}={promised}, so AIPerf's preflight passes "
        f"jobs without a queue there, but the operator stamps no queue label ({why}): {then}. Fix: {fix}"
    )


def problems(
    checks: Sequence[Check], config: StackConfig | None = None, target: KueueTarget | None = None
) -> list[Problem]:
    """Every FAIL of a declared AIPerfJob, as a config problem at its ``queue`` key naming the job
    (a sweep once, by its name: its points share namespace and queue). With ``config`` and
    ``target``, a job naming its queue where the operator cannot read LocalQueues says why and
    how to route it instead (:func:`aiperf_kueue.upstream.compat.explicit_queue_refusal`)."""
    refusal = (
        compat.explicit_queue_refusal(target.version, config.operator.aiperf_version)
        if config is not None and target is not None
        else None
    )
    out: list[Problem] = []
    for c in checks:
        if c.outcome.status != "FAIL" or c.job is None:
            continue
        if refusal is not None and c.queue_name is not None:
            out.append(Problem(key_path(*c.origin, "queue"), f"{c.sweep or c.job}: {refusal}"))
            continue
        what = "every AIPerfJob of the sweep" if c.sweep else "the AIPerfJob"
        out.append(
            Problem(
                key_path(*c.origin, "queue"),
                f"{c.sweep or c.job}: AIPerf's preflight would fail {what} (phase Failed, \"Pre-flight failed: "
                f'{CHECK_NAME}: {c.outcome.message}"); {c.outcome.fix}',
            )
        )
    return list(dict.fromkeys(out))


def rbac_warning(config: StackConfig) -> str | None:
    """What the preflight answers when the operator may not read LocalQueues, as a plan warning,
    when ``operator.values.rbac.create: false`` leaves that RBAC to someone else (the rows of the
    table above this program's own cluster never reaches)."""
    op = config.operator
    rbac = op.values.get("rbac")
    if not op.install or not isinstance(rbac, dict) or rbac.get("create") is not False:
        return None
    unreadable = Cluster(kueue_installed=True, local_queue_http_error=403)
    queued = check_kueue_queue("", "queue", unreadable)
    unqueued = check_kueue_queue("", None, unreadable)
    return (
        f"{key_path('operator', 'values', 'rbac', 'create')}: the chart creates no ClusterRole for the operator; "
        "unless RBAC provided out of band lets it get and list kueue.x-k8s.io localqueues in every benchmark "
        f'namespace, AIPerf\'s preflight answers {queued.status} "{queued.message}" for every declared job and '
        f'{unqueued.status} "{unqueued.message}" for a submission without a queue, and cannot tell a missing '
        "LocalQueue from a present one. Fix: grant those verbs (the chart's clusterrole.yaml lists them), or "
        "leave rbac.create at true"
    )


def warnings(checks: Sequence[Check]) -> list[str]:
    """Every WARN with its fix, and every misleading PASS (:attr:`Check.mismatch`), as a plan
    warning at the config key that decides it, in check order."""
    out: list[str] = []
    for c in checks:
        if c.outcome.status == "WARN":
            unlabelled = c.kind == "aiperf kube profile without --queue-name"
            out.append(
                f'{key_path(*c.origin)}: AIPerf preflight WARN for {c.subject}: "{c.outcome.message}" '
                f"Fix: {c.outcome.fix}" + (" (or set defaultQueueAnnotation: true)" if unlabelled else "")
            )
        if c.mismatch is not None:
            out.append(f"{key_path(*c.origin)}: {c.mismatch}")
    return out


def route_problems(config: StackConfig, entries: Sequence[JobEntry], target: KueueTarget) -> list[Problem]:
    """Where only the operator's default queue runs (:func:`writes_queue_name` is False), declared
    jobs with no default queue to take have no route into Kueue: one problem at ``operator.defaultQueue``."""
    if writes_queue_name(config, target) or not entries or default_queue(config) is not None:
        return []
    if not operator_env_known(config):
        return []  # route_warnings says what the unknown env decides
    gap = compat.api_gap(target.version, config.operator.aiperf_version)
    key = "operator.defaultQueue" if config.operator.install else "operator.env"
    jobs = ", ".join(dict.fromkeys(e.sweep or e.name for e in entries))
    return [
        Problem(
            key,
            f"{gap}; the operator's default queue is thus the only route into Kueue, and this stack has none: "
            f"{jobs} would run without quota or gang admission. Fix: set operator.defaultQueue to auto (give every "
            f"benchmark namespace the same localQueue) or to a LocalQueue each of them has"
            + ("" if config.operator.install else f" (for an external operator: {DEFAULT_QUEUE_ENV} in its env)"),
        )
    ]


def route_warnings(config: StackConfig, target: KueueTarget) -> list[str]:
    """Where only the operator's default queue runs, what a stack without one (or with an unknown
    external operator env) leaves to chance, as plan warnings."""
    if writes_queue_name(config, target) or not benchmark_namespaces(config):
        return []
    gap = compat.api_gap(target.version, config.operator.aiperf_version)
    if not operator_env_known(config):
        return [
            f"operator.env: {gap}; only the operator's default queue ({DEFAULT_QUEUE_ENV}) routes a job into "
            "Kueue, and the external operator's env is not declared; declare operator.env to know whether it does"
        ]
    if default_queue(config) is not None:
        return []
    return [
        f"operator.defaultQueue: {gap}; only the operator's default queue routes a job into Kueue, and it is "
        "off: every aiperf kube profile run bypasses Kueue (no quota, no gang admission); set operator.defaultQueue"
    ]
