"""What keeps the installs from working as configured, one problem (or warning) each.

Settings of Kueue's manager configuration and of the operator that cannot be honoured, the
merged operator values against the chart's own ``values.schema.json``, settings the release
manifests (``kueue.source: manifests``) cannot honour, the Kubernetes provider settings the
installs need, and a local operator chart that is not there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aiperf_kueue.common.errors import Problem, key_path
from aiperf_kueue.config import Namespace, StackConfig
from aiperf_kueue.config.installs import OperatorConfig
from aiperf_kueue.installs.releases import KUEUE_MANIFESTS_NAMESPACE, KUEUE_MANIFESTS_RELEASE, operator_release
from aiperf_kueue.upstream import compat
from aiperf_kueue.upstream.aiperf_release import DEFAULT_VERSION, RELEASES, release
from aiperf_kueue.upstream.kueue import DEFAULT_LOCAL_QUEUE, KueueTarget


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
    chart_kueue = op.values.get("kueue")
    if (
        op.install
        and isinstance(chart_kueue, dict)
        and chart_kueue.get("createQueues") is True
        and not compat.chart_renders_queues(target.version, op.aiperf_version)
    ):
        api = RELEASES[compat.modelled_release(op.aiperf_version)].chart_queues_api_version
        problems.append(
            Problem(
                "operator.values.kueue.createQueues",
                f"the AIPerf {op.aiperf_version} chart renders its queues only where kueue.x-k8s.io/{api} is served "
                f"(templates/kueue-queues.yaml checks .Capabilities.APIVersions), which Kueue {target.version_text} "
                "no longer serves: it would silently create none; remove it (this program declares every queue)",
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
