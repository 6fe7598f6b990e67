"""What the program sets up around the AIPerf operator's chart, as plain data.

The operator's ``AIPERF_K8S_*`` settings (default queue and priority class, the pod sizing it
applies to every benchmark), set explicitly on its container by a forced server-side-apply
patch of its Deployment, and the access the operator's benchmark pods need in each benchmark namespace
(one ClusterRole, a RoleBinding per namespace; the chart would make a Role in one namespace only).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aiperf_kueue.config import StackConfig
from aiperf_kueue.config.expansion import JobEntry
from aiperf_kueue.config.installs import OperatorConfig
from aiperf_kueue.installs.releases import operator_fullname
from aiperf_kueue.workload.sizing import DEFAULT_PRIORITY_CLASS_ENV, DEFAULT_QUEUE_ENV, sizing_from_config
from aiperf_kueue.workload.sizing import operator_env as operator_sizing_env

#: The operator container the ``AIPERF_K8S_*`` variables are set on (chart deployment.yaml).
OPERATOR_CONTAINER = "operator"
#: Lets the env patch take the fields over from the chart's field manager (pulumi NOTES §7): the
#: chart's Deployment owns ``env`` under server-side apply, and a patch of it would conflict.
PATCH_FORCE_ANNOTATION = "pulumi.com/patchForce"


def operator_env(op: OperatorConfig, default_queue: str | None, sizing_env: dict[str, str]) -> list[dict[str, str]]:
    """The ``AIPERF_K8S_*`` variables set on the operator container, explicitly.

    ``default_queue`` is the effective env default (:func:`aiperf_kueue.plan.submit.default_queue`).
    The chart has no value for them; setting every one makes the requests Kueue sees
    independent of the defaults baked into the image.
    """
    env: dict[str, str] = {}
    if default_queue:
        env[DEFAULT_QUEUE_ENV] = default_queue
    if op.default_priority_class:
        env[DEFAULT_PRIORITY_CLASS_ENV] = op.default_priority_class
    env.update(sizing_env)
    return [{"name": k, "value": v} for k, v in env.items()]


def sizing_env(config: StackConfig) -> dict[str, str]:
    """Every operator setting that shapes a benchmark's pods, from the release's defaults and
    ``operator.sizing``: pod sizes, the sweep controller's, workers per pod, the JobSet TTL and
    process-namespace sharing (:func:`aiperf_kueue.workload.sizing.operator_env`)."""
    return operator_sizing_env(sizing_from_config(config.operator))


def operator_env_patch(op: OperatorConfig, env: list[dict[str, str]]) -> dict[str, Any]:
    """A server-side-apply patch of the operator Deployment carrying only ``env``, forced."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": operator_fullname(op),
            "namespace": op.namespace,
            "annotations": {PATCH_FORCE_ANNOTATION: "true"},
        },
        "spec": {"template": {"spec": {"containers": [{"name": OPERATOR_CONTAINER, "env": env}]}}},
    }


def benchmark_service_accounts(entries: Iterable[JobEntry]) -> dict[str, list[str]]:
    """Per namespace, the service accounts declared jobs run their pods as besides ``default``
    (``podTemplate.serviceAccountName``), sorted."""
    accounts: dict[str, set[str]] = {}
    for entry in entries:
        template = entry.spec.pod_template
        name = template.service_account_name if template is not None else None
        if name and name != "default":
            accounts.setdefault(entry.namespace, set()).add(name)
    return {ns: sorted(names) for ns, names in accounts.items()}


#: What the operator's benchmark pods do in their own namespace, as the chart's ``benchmark-rbac.yaml`` grants it:
#: read pods, drive their JobSet and their AIPerfJob (the controller pushes its ``subPhase`` to the status).
BENCHMARK_RULES: tuple[dict[str, Any], ...] = (
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    {
        "apiGroups": ["jobset.x-k8s.io"],
        "resources": ["jobsets"],
        "verbs": ["get", "list", "watch", "patch", "update"],
    },
    {
        "apiGroups": ["aiperf.nvidia.com"],
        "resources": ["aiperfjobs", "aiperfjobs/status"],
        "verbs": ["get", "list", "watch", "patch", "update"],
    },
)
_LABELS = {"app.kubernetes.io/part-of": "aiperf-kueue"}


def benchmark_role_name(fullname: str) -> str:
    """The ClusterRole every benchmark namespace binds: ``<fullname>-benchmark`` (the operator chart's fullname,
    :func:`operator_fullname`), the name the chart gives its per-namespace Role."""
    return f"{fullname}-benchmark"


def benchmark_cluster_role(fullname: str) -> dict[str, Any]:
    """The benchmark pods' rules, once for the whole cluster. A ClusterRole grants nothing by itself: each
    benchmark namespace's RoleBinding (:func:`benchmark_binding`) grants it in that namespace only, so the access
    is the chart's per-namespace Role's, with one object per cluster instead of one per namespace."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": benchmark_role_name(fullname), "labels": dict(_LABELS)},
        "rules": [dict(rule) for rule in BENCHMARK_RULES],
    }


def benchmark_binding(namespace: str, fullname: str, service_accounts: Iterable[str] = ()) -> dict[str, Any]:
    """The RoleBinding that grants :func:`benchmark_cluster_role` in one benchmark namespace, to its ``default``
    service account, which benchmark pods run as, and to each other one declared jobs there run as
    (``service_accounts``).

    Named ``<fullname>-benchmark-access``, not the chart Role's name: a RoleBinding's ``roleRef`` is immutable, so
    a stack deployed with the earlier per-namespace Role moves by a replacement, and a new name makes the
    engine create the new binding before it deletes the old one (no moment without access)."""
    accounts = ["default", *sorted(set(service_accounts) - {"default"})]
    role = benchmark_role_name(fullname)
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": f"{role}-access", "namespace": namespace, "labels": dict(_LABELS)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": namespace} for sa in accounts],
    }
