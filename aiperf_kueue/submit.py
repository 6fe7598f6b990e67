"""How a job enters a benchmark namespace: its default queue, the namespace annotation, the CLI.

Three routes bind an AIPerfJob to a LocalQueue (AIPerf's "Kueue Integration" page):
``spec.scheduling.queueName`` (what every AIPerfJob this program declares carries, and what
``aiperf kube profile --queue-name`` writes), the operator's env default
``AIPERF_K8S_JOBSET_KUEUE_DEFAULT_QUEUE_NAME`` (``operator.defaultQueue``), and the namespace
annotation ``kueue.x-k8s.io/default-queue-name``. Only the first two put the
``kueue.x-k8s.io/queue-name`` label on the JobSet; the annotation is read by AIPerf's
preflight alone (aiperf NOTES §2, §4, §6.3). This module keeps all three naming one queue.
"""

from __future__ import annotations

import shlex

from aiperf_kueue.config import Namespace, StackConfig
from aiperf_kueue.config.installs import OperatorConfig
from aiperf_kueue.kueue import DEFAULT_QUEUE_ANNOTATION

#: The CLI command that submits one AIPerfJob (``aiperf kube profile``).
PROFILE_COMMAND = ("aiperf", "kube", "profile")


def namespace_queue(ns: Namespace, op: OperatorConfig) -> str:
    """The LocalQueue a job in ``ns`` lands in when it names none: the operator's env default
    (``operator.defaultQueue``, which the planner requires in every namespace), else the
    namespace's own ``localQueue``. The same rule picks a declared job's queue."""
    return op.default_queue or ns.local_queue


def namespace_annotations(ns: Namespace, op: OperatorConfig) -> dict[str, str]:
    """``{kueue.x-k8s.io/default-queue-name: <queue>}`` when ``defaultQueueAnnotation`` is on, else ``{}``."""
    return {DEFAULT_QUEUE_ANNOTATION: namespace_queue(ns, op)} if ns.default_queue_annotation else {}


def annotation_command(namespace: str) -> str:
    """The ``kubectl`` command printing ``namespace``'s default-queue annotation (empty: none)."""
    escaped = DEFAULT_QUEUE_ANNOTATION.replace(".", "\\.")
    return f"kubectl get namespace {namespace} -o jsonpath='{{.metadata.annotations.{escaped}}}'"


def cli_priority_class(op: OperatorConfig) -> str | None:
    """The ``--priority-class`` of a CLI submission: the operator's ``defaultPriorityClass``.

    It is what the operator would stamp anyway; passing it makes the label independent of
    the operator's env. Without a default, no class: an ad hoc run should not claim one of
    the declared classes (often the first is the highest) by accident.
    """
    return op.default_priority_class


def profile_args(ns: Namespace, op: OperatorConfig, image: str) -> list[str]:
    """``aiperf kube profile`` arguments that submit into ``ns`` through this platform's queue.

    Flags checked against ``KubeOptions`` in ``src/aiperf/config/kube.py@23bae68f``
    (ai-dynamo/aiperf): ``-n/--namespace``, ``--image`` (required there, no default),
    ``--queue-name`` and ``--priority-class`` (group "Kubernetes Scheduling"). The benchmark's
    own flags (``--url``, ``--model``, ...) follow them.
    """
    args = [*PROFILE_COMMAND, "--namespace", ns.name, "--image", image, "--queue-name", namespace_queue(ns, op)]
    priority = cli_priority_class(op)
    if priority is not None:
        args += ["--priority-class", priority]
    return args


def profile_command(ns: Namespace, op: OperatorConfig, image: str) -> str:
    """:func:`profile_args` as one shell-quoted command line."""
    return shlex.join(profile_args(ns, op, image))


def benchmark_namespaces(config: StackConfig) -> list[tuple[tuple[str | int, ...], str, Namespace]]:
    """Every benchmark namespace with its config key path and its ClusterQueue, in config order."""
    return [
        (("queues", "clusterQueues", i, "namespaces", j), cq.name, ns)
        for i, cq in enumerate(config.queues.cluster_queues)
        for j, ns in enumerate(cq.namespaces)
    ]
