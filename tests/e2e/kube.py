"""The harness's Kubernetes client for what it does many times a second: the kubelet's part for chart pods.

The chart watcher (:mod:`tests.e2e.charts`) reads pods, Deployments, ConfigMaps, Services and Secrets every half
second while ``pulumi up`` runs. With a ``kubectl`` process per read that was most of a core on a 2-core machine, and
spawning kubectl from the watcher thread once failed with EFAULT. This client is the ``kubernetes`` package the
program itself uses, one per thread that needs it; objects come back as plain API dicts (camelCase), as
``kubectl get -o json`` gives them.

Reads go through :func:`read_json`, the client's own request path without its typed models: kubernetes 37.0.2
validates every call's arguments and builds a pydantic model per object, and turning those back into dicts cost
the harness's pollers about 40 s of CPU per scenario (py-spy, 2026-12-08), a fifth of all the CPU a scenario
uses on the 2-core machine.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
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


def read_json(api: k8s.ApiClient, path: str, query: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """GET ``path`` (``/api/v1/pods``, ``/apis/apps/v1/...``) with ``query``, decoded JSON; None for 404. The typed
    methods' own steps, public on the generated ``ApiClient`` (``param_serialize``, ``call_api``), with the plain JSON
    kept instead of models."""
    request = api.param_serialize(
        "GET", path, query_params=list((query or {}).items()), header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
    )
    response = api.call_api(*request, _request_timeout=REQUEST_TIMEOUT)
    data = response.read()
    if response.status == 404:
        return None
    if not 200 <= response.status <= 299:
        raise ApiException(status=response.status, reason=response.reason, body=data.decode(errors="replace"))
    decoded = json.loads(data)
    if not isinstance(decoded, dict):
        raise TypeError(f"GET {path} gave a {type(decoded).__name__}, not an object")
    return decoded


def read_list(api: k8s.ApiClient, path: str, query: Mapping[str, str] | None = None) -> CustomList:
    """A list ``path`` serves: its items and its metadata (an empty list may come without ``items``); a 404 (the
    kind is not served yet) is an empty list."""
    return _as_list(read_json(api, path, query) or {})


def _as_list(listed: Mapping[str, Any]) -> CustomList:
    return {"items": list(listed.get("items") or []), "metadata": dict(listed.get("metadata") or {})}


def list_custom(custom: k8s.CustomObjectsApi, group: str, version: str, plural: str) -> CustomList:
    """Every object of ``group/version/plural`` in every namespace."""
    listed = read_json(custom.api_client, f"/apis/{group}/{version}/{plural}")
    if listed is None:
        # As the typed call did: a kind not served is an error, not an empty list.
        raise ApiException(status=404, reason=f"{group}/{version} {plural} not served")
    return _as_list(listed)


class Kube:
    """Typed reads and the few writes the harness makes, against one kubeconfig."""

    def __init__(self, kubeconfig: Path) -> None:
        self._client = k8s_config.new_client_from_config(config_file=str(kubeconfig))
        self.core = k8s.CoreV1Api(self._client)
        self.apps = k8s.AppsV1Api(self._client)

    def close(self) -> None:
        """Release the connection pool."""
        self._client.close()

    def pods(self, namespace: str) -> list[dict[str, Any]]:
        """Every pod in ``namespace``."""
        return read_list(self._client, f"/api/v1/namespaces/{namespace}/pods")["items"]

    def pods_labelled(self, label: str) -> list[dict[str, Any]]:
        """Every pod in every namespace that has ``label`` (a label selector)."""
        return read_list(self._client, "/api/v1/pods", {"labelSelector": label})["items"]

    def node_names(self) -> set[str]:
        """The names of the cluster's Nodes."""
        return {n["metadata"]["name"] for n in read_list(self._client, "/api/v1/nodes")["items"]}

    def services(self, namespace: str) -> list[dict[str, Any]]:
        """Every Service in ``namespace``."""
        return read_list(self._client, f"/api/v1/namespaces/{namespace}/services")["items"]

    def deployment(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The Deployment, or None when it does not exist."""
        return read_json(self._client, f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}")

    def config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The ConfigMap, or None when it does not exist."""
        return read_json(self._client, f"/api/v1/namespaces/{namespace}/configmaps/{name}")

    def secret(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The Secret (data base64-encoded, as the API serves it), or None when it does not exist."""
        return read_json(self._client, f"/api/v1/namespaces/{namespace}/secrets/{name}")

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
