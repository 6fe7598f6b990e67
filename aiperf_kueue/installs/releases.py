"""Helm releases of Kueue, JobSet and the AIPerf operator, as plain data, and the names they give.

Upstream: kueue v0.19.2 charts/kueue/values.yaml, config/components/manager/controller_manager_config.yaml

The Kueue manager configuration is generated from typed config (never pasted
as a string), in the shape of the pinned release's chart: the v1beta2
Configuration from Kueue 0.15 (tested with the 0.19.2 chart), the v1beta1 one
below (tested with the 0.10.1 chart). What the program adds around the operator
chart is :mod:`aiperf_kueue.installs.operator_objects`; what keeps an install from working
as configured is :mod:`aiperf_kueue.installs.install_checks`.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from aiperf_kueue.common.render import yaml_text
from aiperf_kueue.config import StackConfig
from aiperf_kueue.config.installs import JOBSET_FRAMEWORK, OperatorConfig
from aiperf_kueue.config.stack import unmanaged_namespaces
from aiperf_kueue.installs.cluster import ClusterTarget
from aiperf_kueue.upstream.kueue import KueueTarget

#: Kueue's integration frameworks as each chart family enables them by default.
_FRAMEWORKS_V1BETA2 = [
    "batch/job", "kubeflow.org/mpijob", "ray.io/rayjob", "ray.io/rayservice", "ray.io/raycluster",
    JOBSET_FRAMEWORK, "workload.codeflare.dev/appwrapper", "trainer.kubeflow.org/trainjob",
    "pod", "deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset",
]  # fmt: skip
#: The RayService integration came with Kueue 0.17.0 (sigs.k8s.io/kueue v0.17.0 pkg/controller/jobs/rayservice;
#: absent from v0.16.1's pkg/controller/jobs and from the frameworks of v0.15.0's and v0.16.1's chart values).
RAYSERVICE_SINCE = (0, 17, 0)
_FRAMEWORKS_V1BETA1 = [
    "batch/job", "kubeflow.org/mpijob", "ray.io/rayjob", "ray.io/raycluster", JOBSET_FRAMEWORK,
    "kubeflow.org/mxjob", "kubeflow.org/paddlejob", "kubeflow.org/pytorchjob", "kubeflow.org/tfjob",
    "kubeflow.org/xgboostjob",
]  # fmt: skip


#: A MultiKueue manager's default frameworks: what AIPerf runs (JobSets) and batch Jobs. Kueue 0.19.2's MultiKueue
#: connects to a worker only once it watches there the kind of every enabled integration with a MultiKueue adapter
#: (multikueuecluster.go, updateConfigAndRefreshWatchers): with the chart's list it refused workers without the MPIJob
#: CRD ("no matches for kind MPIJob") and a ServiceAccount without watch on StatefulSets (found by the MultiKueue e2e).
MULTIKUEUE_FRAMEWORKS = ["batch/job", JOBSET_FRAMEWORK]

#: ``name`` in each chart's Chart.yaml: the chart part of its ``fullname`` helper.
KUEUE_CHART_NAME = "kueue"
OPERATOR_CHART_NAME = "aiperf-operator"


@dataclass(frozen=True)
class HelmRelease:
    """One chart install: what ``helm install`` would be given."""

    release_name: str
    chart: str
    version: str | None
    namespace: str
    values: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """For ``charts.yaml``."""
        return {
            "release": self.release_name,
            "chart": self.chart,
            "version": self.version,
            "namespace": self.namespace,
            "values": self.values,
        }


def deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """``extra`` over ``base``: mappings merge key by key, anything else is replaced."""
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def kueue_chart(target: KueueTarget) -> tuple[str, str]:
    """The OCI chart and chart version of a Kueue release (the path moved twice)."""
    if target.version >= (0, 12, 0):
        return "oci://registry.k8s.io/kueue/charts/kueue", target.version_text
    if target.version >= (0, 11, 0):
        return "oci://us-central1-docker.pkg.dev/k8s-staging-images/kueue/charts/kueue", f"v{target.version_text}"
    return "oci://us-central1-docker.pkg.dev/k8s-staging-images/charts/kueue", f"v{target.version_text}"


def config_api_version(target: KueueTarget) -> str:
    """The ``apiVersion`` of Kueue's manager Configuration for the pinned release."""
    return "config.kueue.x-k8s.io/v1beta2" if target.v1beta2_served else "config.kueue.x-k8s.io/v1beta1"


def kueue_manager_config(config: StackConfig, target: KueueTarget) -> dict[str, Any]:
    """Kueue's Configuration object, in the shape of the pinned release's chart."""
    kueue = config.kueue
    v1beta2 = target.v1beta2_served
    frameworks = kueue.frameworks or (_FRAMEWORKS_V1BETA2 if v1beta2 else _FRAMEWORKS_V1BETA1)
    if not kueue.frameworks and config.multikueue is not None and config.multikueue.role == "manager":
        frameworks = MULTIKUEUE_FRAMEWORKS
    if not kueue.frameworks and target.version < RAYSERVICE_SINCE:
        # Kueue refuses a framework it does not know ("Unable to load the configuration": the controller
        # never starts); found by the upgrade e2e, whose 0.15.0 controller exited on this list.
        frameworks = [f for f in frameworks if f != "ray.io/rayservice"]
    not_ours = {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": unmanaged_namespaces(config)}
        ]
    }
    cfg: dict[str, Any] = {
        "apiVersion": config_api_version(target),
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443" if v1beta2 else ":8080"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        # The chart's own tuning, kept: replacing the string would otherwise drop it.
        "controller": {
            "groupKindConcurrency": {
                "Job.batch": 5,
                "Pod": 5,
                "Workload.kueue.x-k8s.io": 10 if v1beta2 else 5,
                "LocalQueue.kueue.x-k8s.io": 5 if v1beta2 else 1,
                "ClusterQueue.kueue.x-k8s.io": 5 if v1beta2 else 1,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 300, "burst": 500} if v1beta2 else {"qps": 50, "burst": 100},
        "manageJobsWithoutQueueName": kueue.manage_jobs_without_queue_name,
        "integrations": {"frameworks": list(frameworks)},
    }
    fleet = config.multikueue
    if fleet is not None and fleet.role == "manager" and fleet.worker_lost_timeout is not None:
        cfg["multiKueue"] = {"workerLostTimeout": fleet.worker_lost_timeout}
    # Every integration's webhooks skip these namespaces. managedJobsNamespaceSelector came with
    # Kueue 0.10.0 (kubernetes-sigs/kueue#3712, CHANGELOG-0.10 "Adds a managedJobsNamespaceSelector
    # to the Kueue configuration"), so the v1beta1 configuration carries it too; there it sits
    # beside the older podOptions.namespaceSelector, which the pod integration still reads (Kueue's
    # config validation: "it is ok for both to be non-nil; pods will only be managed if all
    # non-nil selectors match").
    cfg["managedJobsNamespaceSelector"] = not_ours
    if not v1beta2:
        cfg["integrations"]["podOptions"] = {"namespaceSelector": copy.deepcopy(not_ours)}
    if kueue.fair_sharing is not None and kueue.fair_sharing.enable:
        strategies = list(kueue.fair_sharing.preemption_strategies)
        cfg["fairSharing"] = (
            {"preemptionStrategies": strategies} if v1beta2 else {"enable": True, "preemptionStrategies": strategies}
        )
    if kueue.wait_for_pods_ready is not None:
        wfpr = kueue.wait_for_pods_ready
        block: dict[str, Any] = {"timeout": wfpr.timeout, "blockAdmission": wfpr.block_admission}
        if not v1beta2:
            block = {"enable": wfpr.enable, **block}
        cfg["waitForPodsReady"] = block
    return cfg


def kueue_release(config: StackConfig, target: KueueTarget) -> HelmRelease:
    """The Kueue chart with its generated manager configuration; ``values`` merge last."""
    chart, version = kueue_chart(target)
    manager = yaml_text(kueue_manager_config(config, target), yaml.SafeDumper)
    values = deep_merge({"managerConfig": {"controllerManagerConfigYaml": manager}}, config.kueue.values)
    return HelmRelease(config.kueue.release_name, config.kueue.chart or chart, version, config.kueue.namespace, values)


#: What ``kueue.source: manifests`` installs: the release asset, for ``kubectl apply --server-side``.
KUEUE_MANIFESTS_URL = "https://github.com/kubernetes-sigs/kueue/releases/download/v{version}/manifests.yaml"
#: Where the release manifests put Kueue, and the Helm settings they fix (kueue NOTES §4).
KUEUE_MANIFESTS_NAMESPACE = "kueue-system"
KUEUE_MANIFESTS_RELEASE = "kueue"


def kueue_release_digest(config: StackConfig, target: KueueTarget) -> str | None:
    """A digest of what is installed as Kueue: chart, version, release, namespace and merged
    values (manager configuration included), or the release manifests' URL; None when Kueue is
    managed elsewhere. The chart stamps a checksum of its manager configuration on the
    controller's pod template, so a change restarts Kueue and its webhook stops answering for
    10–30 s: the readiness gate replaces itself (waits again) when this digest changes."""
    install = kueue_install(config, target)
    if install["source"] == "external":
        return None
    what: Any = install if install["source"] == "manifests" else kueue_release(config, target).as_dict()
    text = json.dumps(what, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def kueue_manifests_url(target: KueueTarget) -> str:
    """The pinned release's ``manifests.yaml`` (CRDs, RBAC, Deployment, webhooks, default config)."""
    return KUEUE_MANIFESTS_URL.format(version=target.version_text)


def kueue_install(config: StackConfig, target: KueueTarget) -> dict[str, str]:
    """How Kueue gets onto the cluster, for the ``kueue`` stack output and ``plan``:
    ``{"source": "helm"}``, ``{"source": "manifests", "manifests": <url>}``, or ``{"source": "external"}``."""
    if not config.kueue.install:
        return {"source": "external"}
    if config.kueue.source == "manifests":
        return {"source": "manifests", "manifests": kueue_manifests_url(target)}
    return {"source": "helm"}


def jobset_release(config: StackConfig) -> HelmRelease:
    """The JobSet chart."""
    js = config.jobset
    return HelmRelease(js.release_name, js.chart, js.version, js.namespace, copy.deepcopy(js.values))


def operator_image(op: OperatorConfig) -> str:
    """``repository:tag`` of the pinned AIPerf image (the tag defaults to ``aiperfVersion``)."""
    return f"{op.image.repository}:{op.image_tag}"


def operator_release(config: StackConfig, benchmark_namespaces: list[str]) -> HelmRelease:
    """The AIPerf operator chart, made to fit this program.

    No chart-made queues (they would land in the operator's namespace only), no
    chart-made benchmark namespace or RBAC (each benchmark-namespace component owns
    its own), and the image pinned, also as every AIPerfJob's default ``spec.image``.
    """
    op = config.operator
    base: dict[str, Any] = {
        "image": {"repository": op.image.repository, "tag": op.image_tag},
        "defaults": {"image": operator_image(op)},
        "kueue": {"createQueues": False},
        "benchmarkNamespace": {
            "create": False,
            "name": benchmark_namespaces[0] if benchmark_namespaces else "aiperf-benchmarks",
        },
        "benchmarkRbacNamespaces": [],
    }
    version = op.version if op.chart.startswith("oci://") else None
    return HelmRelease(op.release_name, op.chart, version, op.namespace, deep_merge(base, op.values))


def helm_fullname(release_name: str, chart_name: str, values: Mapping[str, Any]) -> str:
    """The standard Helm ``<chart>.fullname`` helper, as both the Kueue and the AIPerf operator
    charts define it: ``fullnameOverride``; else the release name if it contains the chart name
    (``nameOverride`` if set); else ``<release>-<chart name>``; cut to 63 characters, without
    a trailing ``-``."""
    override = values.get("fullnameOverride")
    if override:
        return str(override)[:63].rstrip("-")
    name = str(values.get("nameOverride") or chart_name)
    full = release_name if name in release_name else f"{release_name}-{name}"
    return full[:63].rstrip("-")


def operator_fullname(op: OperatorConfig) -> str:
    """The AIPerf chart's ``aiperf-operator.fullname``: the name of its Deployment, its
    ``<fullname>-benchmark`` Role and its ``<fullname>-results`` PVC."""
    return helm_fullname(op.release_name, OPERATOR_CHART_NAME, op.values)


def kueue_fullname(config: StackConfig) -> str:
    """The Kueue chart's ``kueue.fullname`` (:func:`helm_fullname` with ``kueue.values``); the
    release manifests' fixed ``kueue`` for ``source: manifests``, which takes no values."""
    kueue = config.kueue
    values = kueue.values if kueue.source == "helm" else {}
    return helm_fullname(kueue.release_name, KUEUE_CHART_NAME, values)


def gate_cluster(cluster: ClusterTarget | None) -> dict[str, Any]:
    """The readiness gate's context and kubeconfig: the stack's cluster, as its provider reaches it (a
    ``kubernetes:kubeconfig`` the gate's component reads itself, keeping a secret one secret)."""
    if cluster is None:
        return {}
    own = {} if cluster.kubeconfig_from_provider else {"kubeconfig": cluster.kubeconfig}
    return {"context": cluster.context, **own}


def readiness_gate(config: StackConfig, target: KueueTarget) -> dict[str, Any]:
    """Settings of the readiness gate: what to wait for, for how long, and the digest of the
    Kueue release whose change makes it wait again (:func:`kueue_release_digest`)."""
    full = kueue_fullname(config)
    return {
        "namespace": config.kueue.namespace,
        "deployment": f"{full}-controller-manager",
        "webhook_service": f"{full}-webhook-service",
        "api_version": target.api,
        "kueue_version": target.version_text,
        "release_digest": kueue_release_digest(config, target),
        "attempts": config.kueue.readiness.attempts,
        "interval_seconds": config.kueue.readiness.interval_seconds,
    }
