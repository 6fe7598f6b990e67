"""Helm releases of Kueue, JobSet and the AIPerf operator, as plain data.

The Kueue manager configuration is generated from typed config (never pasted
as a string), in the shape of the pinned release's chart: the v1beta2
Configuration from Kueue 0.15 (tested with the 0.19.2 chart), the v1beta1 one
below (tested with the 0.10.1 chart).
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from aiperf_kueue.aiperf_release import DEFAULT_VERSION, RELEASES, release
from aiperf_kueue.config import Namespace, StackConfig
from aiperf_kueue.config.expansion import JobEntry
from aiperf_kueue.config.installs import JOBSET_FRAMEWORK, OperatorConfig
from aiperf_kueue.errors import Problem, key_path
from aiperf_kueue.kueue import DEFAULT_LOCAL_QUEUE, KueueTarget
from aiperf_kueue.sizing import operator_env as operator_sizing_env
from aiperf_kueue.sizing import sizing_from_config

#: Kueue's integration frameworks as each chart family enables them by default.
_FRAMEWORKS_V1BETA2 = [
    "batch/job", "kubeflow.org/mpijob", "ray.io/rayjob", "ray.io/rayservice", "ray.io/raycluster",
    JOBSET_FRAMEWORK, "workload.codeflare.dev/appwrapper", "trainer.kubeflow.org/trainjob",
    "pod", "deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset",
]  # fmt: skip
_FRAMEWORKS_V1BETA1 = [
    "batch/job", "kubeflow.org/mpijob", "ray.io/rayjob", "ray.io/raycluster", JOBSET_FRAMEWORK,
    "kubeflow.org/mxjob", "kubeflow.org/paddlejob", "kubeflow.org/pytorchjob", "kubeflow.org/tfjob",
    "kubeflow.org/xgboostjob",
]  # fmt: skip

#: The operator container the ``AIPERF_K8S_*`` variables are set on (chart deployment.yaml).
OPERATOR_CONTAINER = "operator"
#: ``name`` in each chart's Chart.yaml: the chart part of its ``fullname`` helper.
KUEUE_CHART_NAME = "kueue"
OPERATOR_CHART_NAME = "aiperf-operator"
#: Lets the env patch take the fields over from the chart's field manager (pulumi NOTES §7): the
#: chart's Deployment owns ``env`` under server-side apply, and a patch of it would conflict.
PATCH_FORCE_ANNOTATION = "pulumi.com/patchForce"


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


def unmanaged_namespaces(config: StackConfig) -> list[str]:
    """Namespaces Kueue's job webhooks must leave alone: system, Kueue's, JobSet's, the operator's.

    Kueue's job webhook would otherwise suspend the operator's and JobSet's own Jobs
    (or reject another chart's hook Jobs while Kueue is starting).
    """
    names = ["kube-system", config.kueue.namespace, config.jobset.namespace, config.operator.namespace]
    return list(dict.fromkeys(names))


def kueue_manager_config(config: StackConfig, target: KueueTarget) -> dict[str, Any]:
    """Kueue's Configuration object, in the shape of the pinned release's chart."""
    kueue = config.kueue
    v1beta2 = target.v1beta2_served
    frameworks = kueue.frameworks or (_FRAMEWORKS_V1BETA2 if v1beta2 else _FRAMEWORKS_V1BETA1)
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
    manager = yaml.safe_dump(kueue_manager_config(config, target), sort_keys=False)
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


#: The pulumi-kubernetes provider setting ``kueue.source: manifests`` cannot do without.
SERVER_SIDE_APPLY_KEY = "kubernetes:enableServerSideApply"


def provider_problems(config: StackConfig, provider: Mapping[str, Any]) -> list[Problem]:
    """Stack settings of the Kubernetes provider (``kubernetes:*`` keys, as given in the stack
    file or by the engine) that this stack's config cannot work with: one problem per install
    that needs server-side apply, when the stack turns it off."""
    given = provider.get(SERVER_SIDE_APPLY_KEY)
    if given is None or str(given).strip().lower() != "false":
        return []
    off = f"needs server-side apply, but the stack sets {SERVER_SIDE_APPLY_KEY}: false"
    problems = []
    if config.kueue.install:
        # The workloads CRD is about 1.4 MB, chart or manifests alike; a client-side apply
        # writes it into the 256 KiB last-applied-configuration annotation and fails mid-up.
        where = "kueue.source" if config.kueue.source == "manifests" else "kueue.install"
        problems.append(
            Problem(
                where,
                f"{off} (Kueue's workloads CRD exceeds the 256 KiB annotation a client-side apply writes); remove "
                "that setting, or set kueue.install: false where Kueue is managed elsewhere",
            )
        )
    if config.operator.install:
        problems.append(
            Problem(
                "operator.install",
                f"{off} (the operator's AIPERF_K8S_* env is set with a DeploymentPatch, which pulumi-kubernetes "
                "applies only server-side); remove that setting, or set operator.install: false",
            )
        )
    return problems


def kueue_source_problems(config: StackConfig) -> list[Problem]:
    """Settings ``kueue.source: manifests`` cannot honour, one problem each.

    The release manifests carry Kueue's default manager configuration and fixed names in
    ``kueue-system``; the program generates a configuration only for the Helm chart. A
    setting that would silently not apply is an error rather than a warning.
    """
    kueue = config.kueue
    if not kueue.install or kueue.source != "manifests":
        return []
    why = (
        "is ignored with kueue.source: manifests (the release manifests ship Kueue's default manager "
        "configuration, which this program can only generate for the Helm chart); remove it or use source: helm"
    )
    given: list[tuple[str, bool]] = [
        ("chart", kueue.chart is not None),
        ("values", bool(kueue.values)),
        ("frameworks", kueue.frameworks is not None),
        ("manageJobsWithoutQueueName", kueue.manage_jobs_without_queue_name),
        ("fairSharing", kueue.fair_sharing is not None),
        ("waitForPodsReady", kueue.wait_for_pods_ready is not None),
    ]
    problems = [Problem(key_path("kueue", key), why) for key, is_set in given if is_set]
    if kueue.namespace != KUEUE_MANIFESTS_NAMESPACE:
        problems.append(
            Problem(
                "kueue.namespace",
                f"the release manifests install Kueue into {KUEUE_MANIFESTS_NAMESPACE}, got {kueue.namespace!r}; "
                "remove it or use source: helm",
            )
        )
    if kueue.release_name != KUEUE_MANIFESTS_RELEASE:
        problems.append(
            Problem(
                "kueue.releaseName",
                f"the release manifests name Kueue's objects kueue-* (no Helm release), got {kueue.release_name!r}; "
                "remove it or use source: helm",
            )
        )
    return problems


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


def operator_env(op: OperatorConfig, default_queue: str | None, sizing_env: dict[str, str]) -> list[dict[str, str]]:
    """The ``AIPERF_K8S_*`` variables set on the operator container, explicitly.

    ``default_queue`` is the effective env default (:func:`aiperf_kueue.submit.default_queue`).
    The chart has no value for them; setting every one makes the requests Kueue sees
    independent of the defaults baked into the image.
    """
    env: dict[str, str] = {}
    if default_queue:
        env["AIPERF_K8S_JOBSET_KUEUE_DEFAULT_QUEUE_NAME"] = default_queue
    if op.default_priority_class:
        env["AIPERF_K8S_JOBSET_KUEUE_DEFAULT_PRIORITY_CLASS"] = op.default_priority_class
    env.update(sizing_env)
    return [{"name": k, "value": v} for k, v in env.items()]


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


def benchmark_rbac(namespace: str, fullname: str, service_accounts: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Role + RoleBinding the operator's benchmark pods need in one benchmark namespace, as the
    chart's ``benchmark-rbac.yaml`` makes them: named ``<fullname>-benchmark`` (the operator
    chart's fullname, :func:`operator_fullname`), reading pods, driving JobSets and AIPerfJobs,
    bound to the namespace's ``default`` service account, which benchmark pods run as, and to
    each other one declared jobs there run as (``service_accounts``)."""
    name = f"{fullname}-benchmark"
    labels = {"app.kubernetes.io/part-of": "aiperf-kueue"}
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "rules": [
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
        ],
    }
    accounts = ["default", *sorted(set(service_accounts) - {"default"})]
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": namespace} for sa in accounts],
    }
    return [role, binding]


def kueue_fullname(config: StackConfig) -> str:
    """The Kueue chart's ``kueue.fullname`` (:func:`helm_fullname` with ``kueue.values``); the
    release manifests' fixed ``kueue`` for ``source: manifests``, which takes no values."""
    kueue = config.kueue
    values = kueue.values if kueue.source == "helm" else {}
    return helm_fullname(kueue.release_name, KUEUE_CHART_NAME, values)


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


def chart_tag(op: OperatorConfig) -> str:
    """The ``ai-dynamo/aiperf`` git tag whose chart ships the operator's release (``v0.13.0``)."""
    return release(op.aiperf_version if op.aiperf_version in RELEASES else DEFAULT_VERSION).chart_ref


def local_chart_warning(config: StackConfig, project_dir: Path) -> str | None:
    """The plan warning for a local operator chart that is not there: its ``values.schema.json``
    cannot validate the merged values, and ``pulumi up`` would fail to render it. None for an
    ``oci://`` (or other remote) chart, a chart that exists, or ``install: false``."""
    op = config.operator
    if not op.install or "://" in op.chart:
        return None
    chart = (project_dir / op.chart).resolve()
    if chart.is_dir():
        return None
    return (
        f"operator.chart: local chart {op.chart!r} not found (resolved to {chart}): the merged values were not "
        f"validated against its values.schema.json, and pulumi up cannot render it; check out ai-dynamo/aiperf "
        f"at tag {chart_tag(op)} there, or point operator.chart at the checkout"
    )


def sizing_env(config: StackConfig) -> dict[str, str]:
    """Every operator setting that shapes a benchmark's pods, from the release's defaults and
    ``operator.sizing``: pod sizes, the sweep controller's, workers per pod, the JobSet TTL and
    process-namespace sharing (:func:`aiperf_kueue.sizing.operator_env`)."""
    return operator_sizing_env(sizing_from_config(config.operator))


# --------------------------------------------------------------------------- install checks


def install_problems(config: StackConfig, target: KueueTarget, project_dir: Path) -> list[Problem]:
    """What keeps the installs from working as configured, in config order: settings of Kueue's
    manager configuration and of the operator that cannot be honoured, then what the operator
    chart's own ``values.schema.json`` rejects of the merged values (a local chart, found
    relative to ``project_dir``)."""
    return [*_settings_problems(config, target), *_operator_values_problems(config, project_dir)]


def _settings_problems(config: StackConfig, target: KueueTarget) -> list[Problem]:
    problems: list[Problem] = []
    op = config.operator
    wfpr = config.kueue.wait_for_pods_ready
    if wfpr is not None and not wfpr.enable and target.v1beta2_served:
        problems.append(
            Problem(
                "kueue.waitForPodsReady.enable",
                f"Kueue {target.version_text} has no switch for waitForPodsReady in its configuration (it is on "
                "from 0.19; only the DisableWaitForPodsReady feature gate turns it off); remove the block instead",
            )
        )
    if op.install and op.chart.startswith("oci://") and not op.version:
        problems.append(
            Problem("operator.version", f"an oci:// chart needs a version, got chart {op.chart!r} and no version")
        )
    namespaces = [(ns.name, ns) for cq in config.queues.cluster_queues for ns in cq.namespaces]
    if op.default_queue:
        missing = [name for name, ns in namespaces if op.default_queue not in _local_queues_of(ns)]
        if missing:
            problems.append(
                Problem(
                    "operator.defaultQueue",
                    f"LocalQueue {op.default_queue!r} must exist in every benchmark namespace, or the operator "
                    f"stamps a queue label Kueue can never resolve there; missing in: {', '.join(missing)} "
                    "(set their localQueue to it, or defaultQueue: true for 'default')",
                )
            )
    classes = [pc.name for pc in config.priority_classes]
    if op.default_priority_class and op.default_priority_class not in classes:
        problems.append(
            Problem(
                "operator.defaultPriorityClass",
                f"{op.default_priority_class!r} is not one of priorityClasses "
                f"({', '.join(classes) or 'none declared'})",
            )
        )
    return problems


def _operator_values_problems(config: StackConfig, project_dir: Path) -> list[Problem]:
    """The merged operator values against the chart's own schema, when it has one."""
    op = config.operator
    if not op.install or "://" in op.chart:
        return []
    schema_file = (project_dir / op.chart / "values.schema.json").resolve()
    if not schema_file.is_file():
        return []
    import jsonschema  # only needed when a local chart is present

    namespaces = [ns.name for cq in config.queues.cluster_queues for ns in cq.namespaces]
    values = operator_release(config, namespaces).values
    validator = jsonschema.Draft7Validator(json.loads(schema_file.read_text()))
    return [
        Problem(
            key_path("operator", "values", *list(err.absolute_path)),
            "the chart's values.schema.json rejects the merged value at "
            f"{'.'.join(str(p) for p in err.absolute_path) or '(root)'}: {err.message}",
        )
        for err in sorted(validator.iter_errors(values), key=lambda e: list(e.absolute_path))
    ]


def _local_queues_of(ns: Namespace) -> list[str]:
    return [ns.local_queue, *([DEFAULT_LOCAL_QUEUE] if ns.default_queue else [])]
