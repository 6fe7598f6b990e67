"""The harness's Kubernetes client for what it does many times a second: the kubelet's part for chart pods.

The chart watcher (:mod:`tests.e2e.charts`) reads pods, Deployments, ConfigMaps, Services and Secrets every half
second while ``pulumi up`` runs. With a ``kubectl`` process per read that was most of a core on a 2-core machine, and
spawning kubectl from the watcher thread once failed with EFAULT. This client is the ``kubernetes`` package the
program itself uses, one per thread that needs it; objects come back as plain API dicts (camelCase), as
``kubectl get -o json`` gives them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

#: Seconds one request may take before the pass that made it fails (and is retried by the watcher).
REQUEST_TIMEOUT = 20


class CustomList(TypedDict):
    """A list of custom objects as the API serves it: the items, and the list's ``metadata.resourceVersion``
    (where a watch starts)."""

    items: list[dict[str, Any]]
    metadata: dict[str, Any]


def list_custom(custom: k8s.CustomObjectsApi, group: str, version: str, plural: str) -> CustomList:
    """Every object of ``group/version/plural`` in every namespace. The client types the answer as ``object``; for
    a custom resource it is the decoded JSON list, a dict (an empty list may come without ``items``)."""
    listed = custom.list_cluster_custom_object(group, version, plural, _request_timeout=REQUEST_TIMEOUT)
    if not isinstance(listed, dict):
        raise TypeError(f"listing {group}/{version} {plural} gave a {type(listed).__name__}, not a dict")
    return {"items": list(listed.get("items") or []), "metadata": dict(listed.get("metadata") or {})}


class Kube:
    """Typed reads and the few writes the harness makes, against one kubeconfig."""

    def __init__(self, kubeconfig: Path) -> None:
        self._client = k8s_config.new_client_from_config(config_file=str(kubeconfig))
        self.core = k8s.CoreV1Api(self._client)
        self.apps = k8s.AppsV1Api(self._client)

    def close(self) -> None:
        """Release the connection pool."""
        self._client.close()

    def _plain(self, obj: object) -> dict[str, Any]:
        return dict(self._client.sanitize_for_serialization(obj))

    def pods(self, namespace: str) -> list[dict[str, Any]]:
        """Every pod in ``namespace``."""
        items = self.core.list_namespaced_pod(namespace, _request_timeout=REQUEST_TIMEOUT).items
        return [self._plain(p) for p in items]

    def services(self, namespace: str) -> list[dict[str, Any]]:
        """Every Service in ``namespace``."""
        items = self.core.list_namespaced_service(namespace, _request_timeout=REQUEST_TIMEOUT).items
        return [self._plain(s) for s in items]

    def deployment(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The Deployment, or None when it does not exist."""
        return self._read(self.apps.read_namespaced_deployment, namespace, name)

    def config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The ConfigMap, or None when it does not exist."""
        return self._read(self.core.read_namespaced_config_map, namespace, name)

    def secret(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The Secret (data base64-encoded, as the API serves it), or None when it does not exist."""
        return self._read(self.core.read_namespaced_secret, namespace, name)

    def _read(self, read: Any, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self._plain(read(name, namespace, _request_timeout=REQUEST_TIMEOUT))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def delete_pod_now(self, namespace: str, name: str) -> None:
        """Remove a pod for good (grace period 0, as ``kubectl delete --force`` does); gone already is fine."""
        try:
            self.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0, _request_timeout=REQUEST_TIMEOUT)
        except ApiException as exc:
            if exc.status != 404:
                raise

    def bind(self, namespace: str, pod: str, node: str) -> None:
        """The scheduler's part: bind ``pod`` to ``node``."""
        body = k8s.V1Binding(
            api_version="v1",
            kind="Binding",
            metadata=k8s.V1ObjectMeta(name=pod, namespace=namespace),
            target=k8s.V1ObjectReference(api_version="v1", kind="Node", name=node),
        )
        # The API answers a Binding create with a Status, which the client cannot read as a V1Binding.
        response = self.core.create_namespaced_binding(
            namespace, body, _preload_content=False, _request_timeout=REQUEST_TIMEOUT
        )
        response.release_conn()  # type: ignore[attr-defined]  # the raw urllib3 response

    def patch_pod_status(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        """A merge patch of the pod's status subresource (the kubelet's report)."""
        self.core.patch_namespaced_pod_status(
            name,
            namespace,
            {"status": status},
            _content_type="application/merge-patch+json",
            _request_timeout=REQUEST_TIMEOUT,
        )
