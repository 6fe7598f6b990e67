"""The MultiKueue objects of a fleet, as plain dicts: the manager's AdmissionCheck, MultiKueueConfig,
MultiKueueClusters and their kubeconfig Secrets; a worker's ServiceAccount and its RBAC for the manager.

Follows Kueue 0.19.2: ``apis/kueue/v1beta2/multikueue_types.go`` and ``admissioncheck_types.go`` (shapes;
v1beta1's MultiKueueCluster has ``spec.kubeConfig`` where v1beta2 has ``spec.clusterSource.kubeConfig``),
``pkg/controller/admissionchecks/multikueue`` (the Secret is read from Kueue's own namespace, key
``kubeconfig``; the remote client creates, updates and deletes Workloads and their status and the jobs on the
worker), and ``pkg/controller/jobframework/defaults.go`` (a JobSet submitted to a ClusterQueue carrying a
MultiKueue admission check gets ``spec.managedBy: kueue.x-k8s.io/multikueue`` from Kueue's webhook).
"""

from __future__ import annotations

from typing import Any

from aiperf_kueue.config.multikueue import CONTROLLER_NAME, MultiKueue, MultiKueueCluster
from aiperf_kueue.plan.manifests import PART_OF, PATCH_FORCE, Manifest
from aiperf_kueue.upstream.kueue import GROUP, KueueTarget

#: The key of the kubeconfig in a MultiKueueCluster's Secret (Kueue ``MultiKueueConfigSecretKey``).
SECRET_KEY = "kubeconfig"
#: The ServiceAccount a worker makes for its manager's Kueue (and its ClusterRole and binding).
WORKER_ACCOUNT = "multikueue"
#: What MultiKueue's remote client does on a worker (Kueue 0.19.2 ``multikueue/workload.go`` and the
#: JobSet and batch/Job adapters): create, watch, update and delete Workloads, their status, and the jobs.
WORKER_RULES: tuple[dict[str, Any], ...] = (
    {
        "apiGroups": [GROUP],
        "resources": ["workloads"],
        "verbs": ["create", "delete", "get", "list", "watch", "update", "patch"],
    },
    {"apiGroups": [GROUP], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]},
    {
        "apiGroups": ["jobset.x-k8s.io"],
        "resources": ["jobsets"],
        "verbs": ["create", "delete", "get", "list", "watch", "update", "patch"],
    },
    {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets/status"], "verbs": ["get", "patch", "update"]},
    {
        "apiGroups": ["batch"],
        "resources": ["jobs"],
        "verbs": ["create", "delete", "get", "list", "watch", "update", "patch"],
    },
    {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["get", "patch", "update"]},
)


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return {**meta, "labels": dict(PART_OF), "annotations": dict(PATCH_FORCE)}


def secret_name(cluster: MultiKueueCluster) -> str:
    """The Secret holding ``cluster``'s kubeconfig: ``multikueue-<name>``."""
    return f"multikueue-{cluster.name}"


def admission_check(mk: MultiKueue, target: KueueTarget) -> Manifest:
    """The manager's AdmissionCheck: controller ``kueue.x-k8s.io/multikueue``, parameters its MultiKueueConfig."""
    return {
        "apiVersion": f"{GROUP}/{target.api}",
        "kind": "AdmissionCheck",
        "metadata": _meta(mk.admission_check),
        "spec": {
            "controllerName": CONTROLLER_NAME,
            "parameters": {"apiGroup": GROUP, "kind": "MultiKueueConfig", "name": mk.multi_kueue_config},
        },
    }


def multikueue_config(mk: MultiKueue, target: KueueTarget) -> Manifest:
    """The MultiKueueConfig: the workers' MultiKueueClusters, in the config's order (Kueue's preference)."""
    return {
        "apiVersion": f"{GROUP}/{target.api}",
        "kind": "MultiKueueConfig",
        "metadata": _meta(mk.multi_kueue_config),
        "spec": {"clusters": [w.name for w in mk.workers]},
    }


def multikueue_cluster(cluster: MultiKueueCluster, target: KueueTarget) -> Manifest:
    """One worker's MultiKueueCluster: its kubeconfig from the Secret :func:`secret_name` in Kueue's namespace."""
    kubeconfig = {"location": secret_name(cluster), "locationType": "Secret"}
    spec = {"clusterSource": {"kubeConfig": kubeconfig}} if target.api == "v1beta2" else {"kubeConfig": kubeconfig}
    return {
        "apiVersion": f"{GROUP}/{target.api}",
        "kind": "MultiKueueCluster",
        "metadata": _meta(cluster.name),
        "spec": spec,
    }


def kubeconfig_secret(cluster: MultiKueueCluster, namespace: str) -> Manifest:
    """The Secret of ``cluster``'s kubeconfig, without its data: the component adds it as a Pulumi secret."""
    return {"apiVersion": "v1", "kind": "Secret", "metadata": _meta(secret_name(cluster), namespace), "type": "Opaque"}


def with_admission_check(cluster_queue: Manifest, check: str, target: KueueTarget) -> Manifest:
    """``cluster_queue`` carrying the MultiKueue admission check ``check`` (v1beta2's ``admissionChecksStrategy``,
    v1beta1's ``admissionChecks``): every workload it admits is dispatched to a worker."""
    spec = dict(cluster_queue["spec"])
    if target.api == "v1beta2":
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": check}]}
    else:
        spec["admissionChecks"] = [check]
    return {**cluster_queue, "spec": spec}


def worker_access(namespace: str) -> list[Manifest]:
    """A worker's ServiceAccount for its manager's Kueue, in Kueue's namespace, with a ClusterRole of
    :data:`WORKER_RULES` bound to it (as Kueue's MultiKueue setup guide makes them)."""
    name = WORKER_ACCOUNT
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(name, namespace)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _meta(f"{name}-worker"),
            "rules": [dict(r) for r in WORKER_RULES],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(f"{name}-worker"),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"{name}-worker"},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
        },
    ]
