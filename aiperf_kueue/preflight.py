"""AIPerf's "Kueue Queue" preflight, run at plan time against the cluster this stack creates.

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
included, counts as not installed).

:func:`stack_checks` applies it to every submission the platform can see: each AIPerfJob
the stack declares (always with a queueName), and per benchmark namespace
``aiperf kube profile`` as exported in ``aiperfCli`` and without ``--queue-name``. The
cluster is the one this stack creates: its LocalQueues and namespace annotations, and
Kueue installed (by this program, or elsewhere with ``kueue.install: false``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

from aiperf_kueue import manifests
from aiperf_kueue.admission import JobAdmission, quoted
from aiperf_kueue.config import Pool, StackConfig
from aiperf_kueue.config.aiperf_benchmark import telemetry_enabled
from aiperf_kueue.config.aiperf_spec import AIPerfJobSpec
from aiperf_kueue.config.expansion import JobEntry
from aiperf_kueue.config.installs import DEFAULT_QUEUE_AUTO
from aiperf_kueue.errors import Problem, key_path
from aiperf_kueue.kueue import DEFAULT_LOCAL_QUEUE, DEFAULT_QUEUE_ANNOTATION, QUEUE_NAME_LABEL, KueueTarget
from aiperf_kueue.sizing import Sizing
from aiperf_kueue.submit import (
    DEFAULT_QUEUE_ENV,
    benchmark_namespaces,
    default_queue,
    namespace_annotations,
    namespace_queue,
    operator_env_known,
)

#: The operator's name for the check (the ``Pre-flight failed: <check>: <message>`` prefix).
CHECK_NAME = "Kueue Queue"

Status = Literal["PASS", "WARN", "FAIL", "SKIP"]

#: How a submission reached the cluster.
Kind = Literal["AIPerfJob", "aiperf kube profile", "aiperf kube profile without --queue-name"]


@dataclass(frozen=True)
class Cluster:
    """What the check reads from the cluster."""

    kueue_installed: bool
    """Whether listing LocalQueues succeeds (the Kueue CRDs are served)."""

    local_queues: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """LocalQueue names per namespace."""

    annotations: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Annotations per namespace."""

    local_queue_http_error: int | None = None
    """HTTP status (not 404) every LocalQueue read returns instead of an answer, e.g. 403 when the
    operator's ClusterRole lacks ``kueue.x-k8s.io/localqueues`` get/list (``None``: reads work)."""


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
                "install Kueue (kueue.install: true) before submitting, or submit without a queue",
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
            "install Kueue, or accept that the job runs without gang-scheduling and quota",
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
    """AIPerfJob name (declared jobs only)."""

    sweep: str | None = None
    """The sweep a declared job is a point of."""

    mismatch: str | None = None
    """Why a passing check misleads (the annotation names a queue the operator won't stamp), with
    the fix: a plan warning even on PASS."""

    @property
    def subject(self) -> str:
        """``AIPerfJob bench/llama-latency`` or ``aiperf kube profile -n bench ...``."""
        if self.job is not None:
            return f"{self.kind} {self.namespace}/{self.job}"
        flag = f" --queue-name {self.queue_name}" if self.queue_name else " (no --queue-name)"
        return f"aiperf kube profile -n {self.namespace}{flag}"

    def as_dict(self) -> dict[str, Any]:
        """The ``plan.json`` / stack-output row."""
        return {
            "check": CHECK_NAME,
            "subject": self.subject,
            "kind": self.kind,
            "job": self.job,
            "namespace": self.namespace,
            "queueName": self.queue_name,
            "status": self.outcome.status,
            "message": self.outcome.message,
            "fix": self.outcome.fix,
            "then": self.then,
        }


def stack_cluster(config: StackConfig) -> Cluster:
    """The cluster this stack creates: Kueue is installed (here, or elsewhere when
    ``kueue.install`` is false), one or two LocalQueues and the annotation per namespace."""
    local_queues: dict[str, tuple[str, ...]] = {}
    annotations: dict[str, dict[str, str]] = {}
    default = default_queue(config)
    for _, _, ns in benchmark_namespaces(config):
        local_queues[ns.name] = tuple(manifests.local_queue_names(ns))
        annotations[ns.name] = namespace_annotations(ns, default)
    return Cluster(kueue_installed=True, local_queues=local_queues, annotations=annotations)


def stack_checks(
    config: StackConfig, entries: Sequence[JobEntry], target: KueueTarget, cluster: Cluster | None = None
) -> tuple[Check, ...]:
    """The check for every declared AIPerfJob whose namespace is a benchmark namespace, then per
    namespace for ``aiperf kube profile`` with the exported arguments and without ``--queue-name``."""
    cluster = cluster or stack_cluster(config)
    default = default_queue(config)
    unrouted = _unrouted(config, default)
    namespaces = {ns.name: (path, cq, ns) for path, cq, ns in benchmark_namespaces(config)}
    checks: list[Check] = []
    for entry in entries:
        if entry.namespace not in namespaces:
            continue  # the admission check reports the unknown namespace
        _, cq, ns = namespaces[entry.namespace]
        queue = entry.queue or namespace_queue(ns, default)
        outcome = check_kueue_queue(entry.namespace, queue, cluster)
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


def problems(checks: Sequence[Check]) -> list[Problem]:
    """Every FAIL of a declared AIPerfJob, as a config problem at its ``queue`` key naming the job
    (a sweep once, by its name: its points share namespace and queue)."""
    out: list[Problem] = []
    for c in checks:
        if c.outcome.status != "FAIL" or c.job is None:
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


# --------------------------------------------------------------------------- checks of the job itself

#: Registries the operator's "Image Reference" check treats as public (``operator/preflight/_common.py``).
PUBLIC_REGISTRIES = frozenset({"docker.io", "registry-1.docker.io", "ghcr.io", "quay.io", "nvcr.io", "registry.k8s.io"})


def image_reference(image: str, has_pull_secrets: bool) -> Outcome:
    """The operator's "Image Reference" check: WARN for an implicit ``latest`` tag, or a registry
    outside :data:`PUBLIC_REGISTRIES` without ``imagePullSecrets``."""
    rest, _, digest = image.rpartition("@") if "@" in image else (image, "", "")
    tag = ""
    if ":" in rest.split("/")[-1]:
        rest, tag = rest.rsplit(":", 1)
    parts = rest.split("/")
    registry = "docker.io" if len(parts) == 1 or ("." not in parts[0] and ":" not in parts[0]) else parts[0]
    problems = []
    if not tag and not digest:
        problems.append("Image uses implicit 'latest' tag which may cause inconsistent deployments")
    if registry not in PUBLIC_REGISTRIES and not has_pull_secrets:
        problems.append(f"Registry '{registry}' may require authentication but no imagePullSecrets configured")
    if problems:
        return Outcome(
            "WARN",
            f"Image '{image}': {'; '.join(problems)}",
            "pin a tag or digest, and give podTemplate.imagePullSecrets for a private registry",
        )
    return Outcome("PASS", f"Image '{image}' reference is valid")


def _cores(text: str) -> float:
    # kubernetes/utils.py parse_cpu, as the check reads node allocatable and the sizing env.
    if not text or text == "0":
        return 0.0
    scale = {"n": 1e-9, "u": 1e-6, "m": 1e-3}.get(text[-1])
    return float(text[:-1]) * scale if scale is not None else float(text)


def _gib(text: str) -> float:
    return parse_memory_mib_float(text) / 1024


def parse_memory_mib_float(text: str) -> float:
    """Memory text → MiB as a float, as ``parse_memory_bytes`` reads it."""
    value = text.strip()
    if not value or value == "0":
        return 0.0
    for suffix, multiplier in (
        ("Ki", 1024), ("Mi", 1024**2), ("Gi", 1024**3), ("Ti", 1024**4), ("Pi", 1024**5), ("Ei", 1024**6),
        ("k", 1000), ("K", 1000), ("M", 1000**2), ("G", 1000**3), ("T", 1000**4), ("P", 1000**5), ("E", 1000**6),
    ):  # fmt: skip
        if value.endswith(suffix):
            return float(value[: -len(suffix)]) * multiplier / 1024**2
    return float(value) / 1024**2


def _cpu_text(cores: float) -> str:
    return f"{int(cores * 1000)}m" if cores < 1 else f"{cores:.1f}"


def _memory_text(gib: float) -> str:
    return f"{int(gib * 1024)}Mi" if gib < 1 else f"{gib:.1f}Gi"


def per_node_schedulability(spec: AIPerfJobSpec, sizing: Sizing, pools: Sequence[Pool]) -> Outcome:
    """The operator's "Per-Node Schedulability" check against the stack's nodes (the pools, each
    node empty): FAIL when no node the pod template may use (its nodeSelector, its tolerations of
    NoSchedule/NoExecute taints) has the allocatable of the larger of the controller pod (all its
    possible containers) and the worker pod, as the operator's env sizes them."""
    if (spec.resource_mode or sizing.release.resource_mode) == "none":
        return Outcome("SKIP", "Skipped because spec.resourceMode=none omits controller/worker CPU and memory")
    ctrl_cpu = sum(_cores(s.cpu) for s in sizing.controller.values())
    ctrl_mem = sum(_gib(s.memory) for s in sizing.controller.values())
    need_cpu = max(ctrl_cpu, _cores(sizing.worker_pod.cpu))
    need_mem = max(ctrl_mem, _gib(sizing.worker_pod.memory))
    template = spec.pod_template
    selector = (template.node_selector if template else None) or {}
    tolerations = (template.tolerations if template else None) or []
    usable = [
        pool
        for pool in pools
        if all(pool.node_labels.get(k) == v for k, v in selector.items())
        and all(_tolerated(t.key, t.effect, tolerations) for t in pool.node_taints if t.effect != "PreferNoSchedule")
    ]
    if any(_cores(p.cpu) >= need_cpu and _gib(p.memory) >= need_mem for p in usable):
        return Outcome("PASS", "At least one node can fit the largest pod")
    fix = (
        "give the pools bigger nodes (inventory.pools[].cpu/memory), or shrink operator.sizing.workerPod and the "
        "controller containers"
        if usable
        else "every pool's nodes are excluded by a NoSchedule/NoExecute taint the pod template does not tolerate "
        "or by its nodeSelector; the operator checks spec.podTemplate's own tolerations, not the ones Kueue adds "
        "for a flavor, so add the pool's tolerations to spec.podTemplate.tolerations"
    )
    return Outcome(
        "FAIL",
        f"No single node can fit the largest pod ({_cpu_text(need_cpu)} CPU, {_memory_text(need_mem)} mem). "
        "Add larger nodes or reduce pod resource requirements.",
        fix,
    )


def node_selector_match(spec: AIPerfJobSpec, pools: Sequence[Pool]) -> Outcome:
    """The operator's "Node Selector Match" check: FAIL when ``podTemplate.nodeSelector`` matches
    no node of the pools (by labels alone)."""
    selector = (spec.pod_template.node_selector if spec.pod_template else None) or {}
    if not selector:
        return Outcome("SKIP", "No nodeSelector specified")
    if any(all(pool.node_labels.get(k) == v for k, v in selector.items()) for pool in pools):
        return Outcome("PASS", "node(s) match nodeSelector")
    text = ", ".join(f"{k}={v}" for k, v in selector.items())
    return Outcome(
        "FAIL",
        f"No node matches nodeSelector {{{text}}}. Label nodes with: kubectl label node <name> {text}",
        "select labels of a pool (inventory.pools[].nodeLabels), or drop the nodeSelector",
    )


def _tolerated(key: str, effect: str, tolerations: Sequence[Any]) -> bool:
    # The check's loose matching (_toleration_matches_taint): key and effect, never the value.
    for t in tolerations:
        if not isinstance(t, dict):
            continue
        op, t_key, t_effect = t.get("operator") or "Equal", t.get("key") or "", t.get("effect") or ""
        if ((op == "Exists" and not t_key) or t_key == key) and (not t_effect or t_effect == effect):
            return True
    return False


def job_problems_and_warnings(
    admissions: Sequence[JobAdmission], config: StackConfig, sizing: Sizing, default_image: str
) -> tuple[list[Problem], list[str]]:
    """The operator's checks of each job against the stack's nodes and image: a FAIL is a
    problem at the job's key carrying the operator's ``status.error``, a WARN a plan warning."""
    problems: list[Problem] = []
    warnings: list[str] = []
    for a in admissions:
        entry, spec = a.entry, a.entry.spec
        label = f"{key_path(*entry.origin)} {entry.name}"
        # Neither check reads the concurrency: a sweep's points fail alike, said once for the sweep.
        what = "every AIPerfJob of the sweep" if entry.sweep else "the AIPerfJob"
        failed = [
            (check, outcome)
            for check, outcome in (
                ("Node Selector Match", node_selector_match(spec, config.inventory.pools)),
                ("Per-Node Schedulability", per_node_schedulability(spec, sizing, config.inventory.pools)),
            )
            if outcome.status == "FAIL"
        ]
        if failed:
            # The operator joins its failed checks with "; " in the order they finish, which varies.
            error = "Pre-flight failed: " + "; ".join(f"{check}: {outcome.message}" for check, outcome in failed)
            fixes = "; ".join(str(outcome.fix) for _, outcome in failed)
            problems.append(
                Problem(
                    key_path(*entry.origin),
                    f"{entry.sweep or entry.name}: AIPerf {sizing.version} would fail {what} (status.error "
                    f"{quoted(error)}); {fixes}",
                )
            )
        pull = bool(spec.pod_template and spec.pod_template.image_pull_secrets)
        image = image_reference(spec.image or default_image, pull)
        if image.status == "WARN":
            warnings.append(f'{label}: AIPerf preflight WARN "Image Reference": "{image.message}" Fix: {image.fix}')
    return list(dict.fromkeys(problems)), list(dict.fromkeys(warnings))


#: The records manager's memory before it stores a single request (``_memory_estimator``:
#: Python subprocess 150 MiB + service 40 MiB), and the share of its limit above which the
#: operator's "Memory Estimation" check WARNs.
RECORDS_MANAGER_FLOOR_MIB = 190
RECORDS_MANAGER_WARN_SHARE = Fraction(1, 2)


def _discovery_on(server_metrics: Any) -> bool:
    """Whether AIPerf's server-metrics Kubernetes discovery is on (enabled, discovery mode not ``disabled``)."""
    if not telemetry_enabled(server_metrics):
        return False
    discovery = server_metrics.get("discovery") if isinstance(server_metrics, dict) else None
    return not (isinstance(discovery, dict) and discovery.get("mode") == "disabled")


def memory_estimation_warnings(admissions: Sequence[JobAdmission], sizing: Sizing) -> list[str]:
    """The operator's "Memory Estimation" WARN where it is certain, for the jobs that request
    resources (it skips the others): server-metrics discovery left on, which its estimate
    cannot bound, and a records manager whose floor alone is over half its
    ``AIPERF_K8S_RECORDS_MANAGER_MEMORY``. The estimate also grows with requests and tokens;
    those warnings need AIPerf's own estimator and are not predicted."""
    sized = [a.entry for a in admissions if a.shape.resource_mode != "none"]
    out = []
    discovering = list(
        dict.fromkeys(
            f"{key_path(*e.origin)} {e.sweep or e.name}"
            for e in sized
            if _discovery_on(e.spec.benchmark.server_metrics)
        )
    )
    if discovering:
        out.append(
            f'{", ".join(discovering)}: AIPerf {sizing.version}\'s preflight WARNs "Memory Estimation" ("OOM risk '
            'detected: Server metrics Kubernetes discovery may add endpoints beyond this estimate. ..."): '
            "server-metrics discovery is on (AIPerf's default). Fix: list the endpoints in "
            "benchmark.serverMetrics.urls with discovery: {mode: disabled}, or serverMetrics: {enabled: false}"
        )
    memory = sizing.controller["RECORDS_MANAGER"].memory
    limit = parse_memory_mib_float(memory)
    if sized and limit > 0 and RECORDS_MANAGER_WARN_SHARE * Fraction(limit) < RECORDS_MANAGER_FLOOR_MIB:
        out.append(
            f"operator.sizing.controller.RECORDS_MANAGER: AIPerf {sizing.version}'s preflight WARNs \"Memory "
            f'Estimation" ("OOM risk detected: RecordsManager uses ... of its container limit") for every job: '
            f"the records manager needs at least {RECORDS_MANAGER_FLOOR_MIB}Mi before it stores a request, over half "
            f"of its {memory}. Fix: set operator.sizing.controller.RECORDS_MANAGER.memory to "
            f"{2 * RECORDS_MANAGER_FLOOR_MIB}Mi or more (the controller pod, and what Kueue charges, grow with it)"
        )
    return out
