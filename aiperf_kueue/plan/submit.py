"""How a job enters a benchmark namespace: its default queue, the namespace annotation, the CLI.

Three routes bind an AIPerfJob to a LocalQueue (AIPerf's "Kueue Integration" page):
``spec.scheduling.queueName`` (what every AIPerfJob this program declares carries, and what
``aiperf kube profile --queue-name`` writes), the operator's env default
``AIPERF_K8S_JOBSET_KUEUE_DEFAULT_QUEUE_NAME`` (``operator.defaultQueue``), and the namespace
annotation ``kueue.x-k8s.io/default-queue-name``. Only the first two put the
``kueue.x-k8s.io/queue-name`` label on the JobSet; the annotation is read by AIPerf's
preflight alone (aiperf NOTES §2, §4, §6.3). This module keeps all three naming one queue:
:func:`default_queue` is the env default, and the annotation and a declared job's queue follow it.
"""

from __future__ import annotations

import shlex

from aiperf_kueue.config import Namespace, StackConfig
from aiperf_kueue.config.installs import DEFAULT_QUEUE_AUTO, OperatorConfig
from aiperf_kueue.plan import manifests
from aiperf_kueue.upstream.kueue import DEFAULT_QUEUE_ANNOTATION

#: The CLI command that submits one AIPerfJob (``aiperf kube profile``).
PROFILE_COMMAND = ("aiperf", "kube", "profile")


def shared_local_queue(config: StackConfig) -> str | None:
    """The LocalQueue every benchmark namespace has: their ``localQueue`` if they all share it,
    else ``default`` if each has one (``defaultQueue: true``), else None (or no namespaces)."""
    namespaces = [ns for _, _, ns in benchmark_namespaces(config)]
    if not namespaces:
        return None
    everywhere = set.intersection(*(set(manifests.local_queue_names(ns)) for ns in namespaces))
    return next((q for q in manifests.local_queue_names(namespaces[0]) if q in everywhere), None)


#: The operator's env default queue variable.
DEFAULT_QUEUE_ENV = "AIPERF_K8S_JOBSET_KUEUE_DEFAULT_QUEUE_NAME"


def operator_env_known(config: StackConfig) -> bool:
    """Whether the operator's env is known: set by this program, or declared (``operator.env``)."""
    return config.operator.install or isinstance(config.operator.env, dict)


def default_queue(config: StackConfig) -> str | None:
    """The operator's env default queue (``AIPERF_K8S_JOBSET_KUEUE_DEFAULT_QUEUE_NAME``), or None:
    ``operator.defaultQueue`` as named, :func:`shared_local_queue` for ``auto``, None when off; for
    an external operator, its declared env's (None also when unknown: :func:`operator_env_known`)."""
    op = config.operator
    if not op.install:
        return (op.env.get(DEFAULT_QUEUE_ENV) or None) if isinstance(op.env, dict) else None
    if op.default_queue_setting == DEFAULT_QUEUE_AUTO:
        return shared_local_queue(config)
    return op.default_queue


def namespace_queue(ns: Namespace, default: str | None) -> str:
    """The LocalQueue a job in ``ns`` lands in when it names none: the operator's env default
    ``default`` (:func:`default_queue`, a LocalQueue of every namespace), else the namespace's own
    ``localQueue``. The same rule picks a declared job's queue."""
    return default or ns.local_queue


def namespace_annotations(ns: Namespace, default: str | None) -> dict[str, str]:
    """``{kueue.x-k8s.io/default-queue-name: <queue>}`` when ``defaultQueueAnnotation`` is on, else ``{}``;
    ``<queue>`` is :func:`namespace_queue` with the env default ``default``."""
    return {DEFAULT_QUEUE_ANNOTATION: namespace_queue(ns, default)} if ns.default_queue_annotation else {}


def namespace_commands() -> dict[str, str]:
    """The ``kubectl`` output's commands over the benchmark namespaces, one command each for all of them:
    the Workloads, LocalQueues and AIPerfJobs in every namespace, and every namespace this program labels with
    its ClusterQueue and default-queue annotation (``<none>``: no annotation).

    Why one each: a copy per namespace (``-n <namespace>``) was 0.36 KB a namespace in every checkpoint of every
    later update, and at fleet size nobody reads a thousand copies of one command (issue 27); ``-n <namespace>``
    narrows any of them to one namespace."""
    label, annotation = (key.replace(".", r"\.") for key in (manifests.CLUSTER_QUEUE_LABEL, DEFAULT_QUEUE_ANNOTATION))
    columns = (
        f"NAMESPACE:.metadata.name,CLUSTERQUEUE:.metadata.labels.{label},"
        f"DEFAULT-QUEUE:.metadata.annotations.{annotation}"
    )
    return {
        "workloads": "kubectl get workloads -A",
        "localQueues": "kubectl get localqueues -A",
        # docs/troubleshooting.md: why a job is Queued, Failed in preflight, or never preempts.
        "describeWorkloads": "kubectl describe workloads -A",
        "aiperfJobs": "kubectl get aiperfjobs -A",
        "namespaceAnnotations": (
            f"kubectl get namespaces -l {manifests.CLUSTER_QUEUE_LABEL} -o custom-columns='{columns}'"
        ),
    }


def cli_priority_class(op: OperatorConfig) -> str | None:
    """The ``--priority-class`` of a CLI submission: the operator's ``defaultPriorityClass``.

    It is what the operator would stamp anyway; passing it makes the label independent of
    the operator's env. Without a default, no class: an ad hoc run should not claim one of
    the declared classes (often the first is the highest) by accident.
    """
    return op.default_priority_class


def profile_args(
    ns: Namespace, op: OperatorConfig, image: str, default: str | None, *, queue_name: bool = True
) -> list[str]:
    """``aiperf kube profile`` arguments that submit into ``ns`` through this platform's queue
    (``default``: the operator's env default queue, :func:`default_queue`). ``queue_name`` False:
    no ``--queue-name``, the operator's env default routes the job (AIPerf 0.13.0 on Kueue >= 0.20,
    where an explicit queue fails its preflight: :mod:`aiperf_kueue.upstream.compat`).

    Flags checked against ``KubeOptions`` in ``aiperf/config/kube.py`` of AIPerf 0.13.0:
    ``-n/--namespace``, ``--image`` (optional there, but the image must be the modelled release),
    ``--queue-name`` and ``--priority-class`` (group "Kubernetes Scheduling"). The benchmark's
    own flags (``--url``, ``--model``, ...) follow them.
    """
    args = [*PROFILE_COMMAND, "--namespace", ns.name, "--image", image]
    if queue_name:
        args += ["--queue-name", namespace_queue(ns, default)]
    priority = cli_priority_class(op)
    if priority is not None:
        args += ["--priority-class", priority]
    return args


def profile_command(
    ns: Namespace, op: OperatorConfig, image: str, default: str | None, *, queue_name: bool = True
) -> str:
    """:func:`profile_args` as one shell-quoted command line."""
    return shlex.join(profile_args(ns, op, image, default, queue_name=queue_name))


def benchmark_namespaces(config: StackConfig) -> list[tuple[tuple[str | int, ...], str, Namespace]]:
    """Every benchmark namespace with its config key path and its ClusterQueue, in config order."""
    return [
        (("queues", "clusterQueues", i, "namespaces", j), cq.name, ns)
        for i, cq in enumerate(config.queues.cluster_queues)
        for j, ns in enumerate(cq.namespaces)
    ]
