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

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from aiperf_kueue.common import limits
from aiperf_kueue.common.display import line
from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.config.multikueue import CONTROLLER_NAME, MultiKueue, MultiKueueCluster
from aiperf_kueue.plan.manifests import PART_OF, PATCH_FORCE, Manifest
from aiperf_kueue.stackfile.yaml_input import parse_yaml_document
from aiperf_kueue.upstream.kueue import GROUP, KueueTarget
from aiperf_kueue.upstream.kueue_kubeconfig import REASON, KubeconfigProblem, kubeconfig_problems

#: The key of the kubeconfig in a MultiKueueCluster's Secret (Kueue ``MultiKueueConfigSecretKey``).
SECRET_KEY = "kubeconfig"
#: The ServiceAccount a worker makes for its manager's Kueue (and its ClusterRole and binding).
WORKER_ACCOUNT = "multikueue"
#: The Secret holding that ServiceAccount's long-lived token, on a worker with ``multikueue.server``.
TOKEN_SECRET = "multikueue-token"
TOKEN_TYPE = "kubernetes.io/service-account-token"
#: The annotation naming the ServiceAccount a token Secret is for (Kubernetes ``v1.ServiceAccountNameKey``).
SERVICE_ACCOUNT_ANNOTATION = "kubernetes.io/service-account.name"
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


def worker_token_secret(namespace: str) -> Manifest:
    """The long-lived token of the worker's :data:`WORKER_ACCOUNT`, a Secret of type
    ``kubernetes.io/service-account-token`` that Kubernetes' token controller fills with ``token`` and ``ca.crt``
    (Kubernetes' documented way to a long-lived ServiceAccount token, "Manually create an API token for a
    ServiceAccount" in its service-account tasks): what a worker with
    ``multikueue.server`` builds its manager's kubeconfig from."""
    meta = _meta(TOKEN_SECRET, namespace)
    meta["annotations"] = {**meta["annotations"], SERVICE_ACCOUNT_ANNOTATION: WORKER_ACCOUNT}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": TOKEN_TYPE}


def minted_kubeconfig(server: str, data: object) -> str:
    """The kubeconfig a worker's manager reaches it with: ``server``, and the CA and token the token controller
    wrote into :func:`worker_token_secret`'s ``data`` (base64, as the API returns a Secret's data). Raises
    ``ValueError`` naming the key, never a value, while the token is not there."""
    if not isinstance(data, Mapping):
        raise ValueError(f"the Secret {TOKEN_SECRET} has no data: the token controller has not filled it")
    for key in ("token", "ca.crt"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise ValueError(f"the Secret {TOKEN_SECRET} has no {key}: the token controller has not filled it")
    try:
        token = base64.b64decode(data["token"], validate=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError):
        raise ValueError(f"the Secret {TOKEN_SECRET}'s token is not base64 of text") from None
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "worker", "cluster": {"server": server, "certificate-authority-data": data["ca.crt"]}}],
        "users": [{"name": WORKER_ACCOUNT, "user": {"token": token}}],
        "contexts": [{"name": "worker", "context": {"cluster": "worker", "user": WORKER_ACCOUNT}}],
        "current-context": "worker",
    }
    return json.dumps(doc, sort_keys=True)


def kubeconfig_text_problems(text: object) -> list[KubeconfigProblem]:
    """Why Kueue would refuse a worker's kubeconfig given as text (YAML or JSON, the Secret's ``kubeconfig``):
    :func:`aiperf_kueue.upstream.kueue_kubeconfig.kubeconfig_problems`, after reading it within the bounds a
    stack file is read with (size, nesting, aliases). A problem never quotes the text: it is a credential."""
    if not isinstance(text, str):
        return [KubeconfigProblem("kubeconfig", "is not text")]
    data = text.encode("utf-8", "surrogatepass")
    if len(data) > limits.MAX_FILE_BYTES:
        return [KubeconfigProblem("kubeconfig", f"is more than {limits.MAX_FILE_BYTES:,} bytes")]
    try:
        doc = parse_yaml_document(data, "kubeconfig")
    except ConfigError:
        # The reader's own messages may quote the text; only that it failed is said.
        return [KubeconfigProblem("kubeconfig", "is not YAML or JSON read within bounds (syntax, nesting, aliases)")]
    return kubeconfig_problems(doc)


def kubeconfig_refusal(text: object, where: str) -> str | None:
    """One line saying why Kueue would refuse the kubeconfig ``text`` set at ``where`` (the stack file and the
    config key), naming each place in it; None if Kueue would take it. Never quotes the text."""
    problems = kubeconfig_text_problems(text)
    if not problems:
        return None
    return line(
        f"{where}: Kueue would mark this worker's MultiKueueCluster inactive (reason {REASON}) and dispatch "
        f"nothing to it: {'; '.join(map(str, problems))}"
    )
