"""Make the harness's out-of-cluster Kueue look installed in the cluster, as the readiness gate expects to find it.

The program's readiness gate waits for three things (``aiperf_kueue`` readiness): the Kueue controller Deployment
rolled out and Available, ready EndpointSlice endpoints behind the webhook Service whose IPs are the ready controller
pods' IPs, then a server-side dry-run create of a ResourceFlavor that Kueue's webhook admits. The last step reaches
the real Kueue (the webhook configurations point at the local process). For the first two, this module declares the
Deployment and Service a Helm install would create and plays the kubelet for the one pod the Deployment's ReplicaSet
creates: binds it to a control-plane Node and reports it Running and Ready. kube-controller-manager's own Deployment,
ReplicaSet and EndpointSlice controllers do the rest.

Addresses: the pod reports 192.0.2.1, the sandbox's second loopback address (TEST-NET-1). Nothing dials it: the API
server reaches Kueue's webhooks by URL on 127.0.0.1.
"""

from __future__ import annotations

import json
from typing import Any

from tests.e2e.cluster import LocalCluster, _deadline_loop
from tests.e2e.kube import Kube
from tests.e2e.nodes import ready_status

HOST_NODE = "e2e-control-plane"
POD_IP = "192.0.2.1"
CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


def _host_node(cluster: LocalCluster) -> None:
    if cluster.kubectl("get", "node", HOST_NODE, check=False).returncode == 0:
        return
    cluster.apply(
        [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": HOST_NODE, "labels": {"node-role.kubernetes.io/control-plane": ""}},
                "spec": {"taints": [CONTROL_PLANE_TAINT]},
            }
        ]
    )
    cluster.kubectl(
        "patch", "node", HOST_NODE, "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": ready_status({"cpu": "4", "memory": "8Gi", "pods": "110"})}),
    )
    cluster.kubectl("taint", "node", HOST_NODE, "node.kubernetes.io/not-ready:NoSchedule-")


def _run_pod(kube: Kube, namespace: str, pod: dict[str, Any]) -> None:
    """Play the scheduler and the kubelet for one pod: bind it, then report it Running and Ready."""
    name = pod["metadata"]["name"]
    if not pod["spec"].get("nodeName"):
        kube.bind(namespace, name, HOST_NODE)
    now = "2026-01-01T00:00:00Z"
    containers = [
        {
            "name": c["name"],
            "image": c["image"],
            "imageID": "",
            "ready": True,
            "started": True,
            "restartCount": 0,
            "state": {"running": {"startedAt": now}},
        }
        for c in pod["spec"]["containers"]
    ]
    status = {
        "phase": "Running",
        "podIP": POD_IP,
        "podIPs": [{"ip": POD_IP}],
        "hostIP": POD_IP,
        "startTime": now,
        "conditions": [
            {"type": kind, "status": "True", "lastTransitionTime": now}
            for kind in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
        ],
        "containerStatuses": containers,
    }
    kube.patch_pod_status(namespace, name, status)


def present_kueue(
    cluster: LocalCluster,
    *,
    namespace: str = "kueue-system",
    deployment: str = "kueue-controller-manager",
    service: str = "kueue-webhook-service",
    version: str = "v0.19.2",
    start_pod: bool = True,
) -> None:
    """Declare Kueue's Deployment and webhook Service; with ``start_pod``, make its pod Ready and wait until the
    Deployment is Available and the Service has a ready endpoint."""
    _host_node(cluster)
    labels = {"control-plane": "controller-manager", "app.kubernetes.io/name": "kueue"}
    cluster.kubectl("create", "namespace", namespace, check=False)
    cluster.apply(
        [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": deployment, "namespace": namespace, "labels": labels},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {
                            "tolerations": [{**CONTROL_PLANE_TAINT, "operator": "Exists"}],
                            "containers": [
                                {
                                    "name": "manager",
                                    # Never pulled: the harness runs Kueue as a local process.
                                    "image": f"registry.invalid/kueue:{version}",
                                    "ports": [{"name": "webhook-server", "containerPort": 9443}],
                                }
                            ],
                        },
                    },
                },
            },
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": service, "namespace": namespace, "labels": labels},
                "spec": {"selector": labels, "ports": [{"port": 443, "targetPort": "webhook-server"}]},
            },
        ]
    )
    if start_pod:
        start_kueue_pods(cluster, namespace=namespace, deployment=deployment, service=service)


def start_kueue_pods(
    cluster: LocalCluster, *, namespace: str, deployment: str, service: str, timeout: float = 60
) -> None:
    """Report the Deployment's pods Running and Ready; wait for Available and a ready webhook endpoint."""
    selector = "control-plane=controller-manager,app.kubernetes.io/name=kueue"
    kube = Kube(cluster.kubeconfig)
    try:
        for _ in _deadline_loop(f"{namespace}/{deployment} to be Available with a ready endpoint", timeout, 0.5):
            pods = cluster.get_json("pods", "-n", namespace, "-l", selector)["items"]
            for pod in pods:
                ready = [c for c in (pod.get("status") or {}).get("conditions", []) if c["type"] == "Ready"]
                if not ready or ready[0]["status"] != "True":
                    _run_pod(kube, namespace, pod)
            dep = cluster.get_json("deployment", deployment, "-n", namespace)
            available = [c for c in (dep.get("status") or {}).get("conditions", []) if c["type"] == "Available"]
            slices = cluster.get_json(
                "endpointslices", "-n", namespace, "-l", f"kubernetes.io/service-name={service}"
            )
            endpoints = [e for s in slices["items"] for e in s.get("endpoints") or [] if e["conditions"].get("ready")]
            if available and available[0]["status"] == "True" and endpoints:
                return
    finally:
        kube.close()
