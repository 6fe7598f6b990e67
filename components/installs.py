"""Kueue, JobSet and the AIPerf operator, each a Helm chart in its own namespace."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from aiperf_kueue.installs.releases import HelmRelease
from aiperf_kueue.providers.kubeconfig import is_kubeconfig_contents
from components.readiness import KueueReadinessGate, KueueReadinessGateArgs

CRD_TYPE = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
PVC_TYPE = "kubernetes:core/v1:PersistentVolumeClaim"
SECRET_TYPE = "kubernetes:core/v1:Secret"
SERVICE_TYPE = "kubernetes:core/v1:Service"
#: pulumi-kubernetes' annotation for "create or update, then do not wait" (its await logic's documented opt-out).
SKIP_AWAIT = "pulumi.com/skipAwait"
_PROTECT = pulumi.ResourceOptions(protect=True)
_RETAIN = pulumi.ResourceOptions(retain_on_delete=True)
#: The charts render their webhook certificate Secrets empty and the controllers fill them (JobSet's and
#: Kueue's internal cert management): that data is theirs, not drift.
_CONTROLLER_DATA = pulumi.ResourceOptions(ignore_changes=["data"])


# helm.v4.Chart manages its CRDs and PVCs as plain children, and Pulumi does not honour Helm's
# `helm.sh/resource-policy: keep`: without these, a destroy or `install: false` deletes them.
# Resource transforms reach them. Pulumi docs (pulumi.com/docs/iac/concepts/options/transforms):
# "The transforms resource option provides a list of transforms to apply to a resource and all of
# its children", e.g. "to add other resource options (such as ignoreChanges or protect)"; and
# (.../options/transformations) "Transforms support modifying child resources of packaged
# components". The Chart v4 reference (pulumi-kubernetes provider/pkg/gen/examples/overlays/chartV4.md):
# rendering each object as a resource "allows you to apply Pulumi Transformations and Pulumi
# Policies to the Kubernetes resources". A ResourceTransformResult's opts set protect and
# retain_on_delete. Under mocks no transform runs (pulumi NOTES §3): plain functions, tested directly.
def protect_crds(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
    """Protect a chart's CustomResourceDefinitions: deleting one deletes every object of its kind."""
    if args.type_ != CRD_TYPE:
        return None
    return pulumi.ResourceTransformResult(args.props, pulumi.ResourceOptions.merge(args.opts, _PROTECT))


def retain_volumes(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
    """Keep a chart's PersistentVolumeClaims in the cluster when they leave the stack: they hold results."""
    if args.type_ != PVC_TYPE:
        return None
    return pulumi.ResourceTransformResult(args.props, pulumi.ResourceOptions.merge(args.opts, _RETAIN))


def leave_cert_data(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
    """Leave a chart's webhook certificate Secret's ``data`` to the controller that writes it: a refresh then
    sees no drift (else ``pulumi up --refresh`` replaces the Secret JobSet filled: found by make e2e)."""
    if args.type_ != SECRET_TYPE or not args.name.endswith("webhook-server-cert"):
        return None
    return pulumi.ResourceTransformResult(args.props, pulumi.ResourceOptions.merge(args.opts, _CONTROLLER_DATA))


# pulumi-kubernetes 4.25.0 waits for a Service's endpoints and then, after each change to them, 10 s more for them
# to "settle" (provider/pkg/await/service.go), so every chart install or upgrade ends at least 10 s after its
# controller's pod is Ready. The charts' Services add nothing to wait for: each chart's Deployment is still awaited
# (Ready replicas, the pods behind those Services), and Kueue's webhook, the one thing the queue objects need, is
# waited for by the readiness gate, endpoints included. Measured on the e2e cluster: Kueue's three Services ended
# 10.3 s after their creation and 1.9 s after the Deployment, on the path to the gate.
def skip_service_await(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
    """Annotate a chart's Service ``pulumi.com/skipAwait: "true"``: created or updated, not waited for."""
    if args.type_ != SERVICE_TYPE:
        return None
    # A chart renders plain values; anything else (an Output) is left as the chart made it, awaited.
    metadata = args.props.get("metadata") or {}
    if not isinstance(metadata, dict):
        return None
    annotations = metadata.get("annotations") or {}
    if not isinstance(annotations, dict):
        return None
    props = {**args.props, "metadata": {**metadata, "annotations": {**annotations, SKIP_AWAIT: "true"}}}
    return pulumi.ResourceTransformResult(props, args.opts)


@dataclass(frozen=True)
class ChartTransform:
    """The chart transforms above as one transform, applied in order. The engine calls each transform of a
    component once per child with the child's whole inputs, which the SDK decodes into Python (and encodes again
    when the transform changes something): four transforms decoded each of Kueue's CRDs, megabytes of schema,
    four times per ``pulumi up``. One transform decodes them once (py-spy on the e2e cluster, 2026-12-08: the
    callbacks were about half the program's CPU in an ``up`` that changed nothing)."""

    steps: tuple[pulumi.ResourceTransform, ...]
    """The transforms, in the order the engine would apply them."""

    def __call__(self, args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        """Each step on what the previous made of the resource; None when none changed it."""
        changed = False
        for step in self.steps:
            result = step(args)
            # The program's steps are synchronous functions returning a result or None.
            if isinstance(result, pulumi.ResourceTransformResult):
                args = pulumi.ResourceTransformArgs(args.custom, args.type_, args.name, result.props, result.opts)
                changed = True
        return pulumi.ResourceTransformResult(args.props, args.opts) if changed else None


#: One instance each, so that a stack registers at most two transform callbacks for its three charts.
_KEEP = ChartTransform((retain_volumes, leave_cert_data, skip_service_await))
_KEEP_AND_PROTECT = ChartTransform((*_KEEP.steps, protect_crds))


def chart_transforms(protect_crds_too: bool) -> list[pulumi.ResourceTransform]:
    """What keeps a chart's results and its controllers' state: its PVCs always retained, its webhook
    certificates left to the controllers, its CRDs protected unless turned off; and its Services not awaited.
    One transform (:class:`ChartTransform`)."""
    return [_KEEP_AND_PROTECT if protect_crds_too else _KEEP]


def _namespace(name: str, namespace: str, opts: pulumi.ResourceOptions) -> k8s.core.v1.Namespace:
    return k8s.core.v1.Namespace(
        name, metadata={"name": namespace, "labels": {"app.kubernetes.io/part-of": "aiperf-kueue"}}, opts=opts
    )


def _chart(name: str, release: HelmRelease, opts: pulumi.ResourceOptions) -> k8s.helm.v4.Chart:
    return k8s.helm.v4.Chart(
        name,
        chart=release.chart,
        version=release.version,
        name=release.release_name,
        namespace=release.namespace,
        values=release.values,
        opts=opts,
    )


def with_provider_cluster(
    gate: KueueReadinessGateArgs, provider: Mapping[str, Any], *, kubeconfig_secret: bool = False
) -> KueueReadinessGateArgs:
    """Wait on the cluster the Kubernetes provider deploys to: its ``kubernetes:context`` and its
    ``kubernetes:kubeconfig`` (``provider``, as the engine hands them over), a path or the contents
    (YAML or JSON). Contents, and a value stack config keeps secret (``kubeconfig_secret``), reach the
    gate as a Pulumi secret: they hold credentials."""
    kubeconfig: pulumi.Input[str] | None = gate.kubeconfig
    if kubeconfig is None:
        value = provider.get("kubernetes:kubeconfig")
        if value is not None and (is_kubeconfig_contents(value) or kubeconfig_secret):
            kubeconfig = pulumi.Output.secret(value)
        else:
            kubeconfig = value
    context = gate.context or provider.get("kubernetes:context")
    return dataclasses.replace(gate, kubeconfig=kubeconfig, context=context)


@dataclass(frozen=True, kw_only=True)
class KueueInstallArgs:
    """The chart or the release manifests (neither when Kueue is managed elsewhere) and the gate's settings."""

    gate: KueueReadinessGateArgs
    """The readiness gate's settings, the cluster it waits on included (:func:`with_provider_cluster`)."""
    release: HelmRelease | None = None
    """The Kueue chart; None with ``manifests``, or when Kueue is managed elsewhere."""
    protect: bool = True
    """Protect Kueue's namespace and its CRDs (a transform on the chart or the manifests, as for JobSet's and the
    operator's): deleting a CRD deletes every object of its kind. The chart's other objects stay unprotected, so
    a reconfiguration may replace them (its ConfigMap is replaced when the manager config changes)."""
    manifests: str | None = None
    """URL of the release's ``manifests.yaml`` (``kueue.source: manifests``), instead of ``release``."""


class KueueInstall(pulumi.ComponentResource):
    """Kueue's namespace and chart, then the readiness gate every Kueue object waits for."""

    gate: KueueReadinessGate
    """Depend on this, not on the chart: a Ready Deployment is not yet a serving webhook."""
    chart: k8s.helm.v4.Chart | None
    manifests: k8s.yaml.v2.ConfigFile | None

    def __init__(self, name: str, args: KueueInstallArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aiperf-kueue:index:KueueInstall", name, None, opts)
        gate_after: list[pulumi.Resource] = []
        self.chart = None
        if args.release is not None:
            # The CRDs are protected, not the whole chart: protect on the chart would be inherited by every
            # object it renders, and pulumi-kubernetes replaces a ConfigMap whose data changes, so any change of
            # Kueue's manager config would stop `pulumi up` ("unable to replace ... marked for protection", found
            # on the real engine). Destroying the chart still stops at its CRDs.
            ns = _namespace(
                f"{name}-ns", args.release.namespace, pulumi.ResourceOptions(parent=self, protect=args.protect)
            )
            self.chart = _chart(
                f"{name}-chart",
                args.release,
                pulumi.ResourceOptions(parent=self, depends_on=[ns], transforms=chart_transforms(args.protect)),
            )
            gate_after.append(self.chart)
        self.manifests = None
        if args.manifests is not None:
            # The manifests bring their own kueue-system Namespace, so none is declared here.
            # Applied server-side, the provider's default (enableServerSideApply): the workloads
            # CRD is about 1.4 MB, far beyond the 256 KiB last-applied-configuration annotation a
            # client-side apply writes (Kueue documents `kubectl apply --server-side` for this file).
            # Its CRDs protected, as the chart's.
            self.manifests = k8s.yaml.v2.ConfigFile(
                f"{name}-manifests",
                file=args.manifests,
                opts=pulumi.ResourceOptions(parent=self, transforms=chart_transforms(args.protect)),
            )
            gate_after.append(self.manifests)
        self.gate = KueueReadinessGate(
            f"{name}-ready",
            args.gate,
            pulumi.ResourceOptions(parent=self, depends_on=gate_after),
        )
        self.register_outputs(
            {
                "chart": args.release.as_dict() if args.release else None,
                "manifests": args.manifests,
            }
        )


@dataclass(frozen=True, kw_only=True)
class JobSetInstallArgs:
    """The JobSet chart."""

    release: HelmRelease
    protect_crds: bool = True
    """Protect the chart's CRDs (``jobset.protectCrds``): deleting the JobSet CRD deletes every JobSet."""


class JobSetInstall(pulumi.ComponentResource):
    """JobSet's namespace and chart."""

    chart: k8s.helm.v4.Chart
    """Depend on this for JobSet's controller and webhook."""

    def __init__(self, name: str, args: JobSetInstallArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aiperf-kueue:index:JobSetInstall", name, None, opts)
        ns = _namespace(f"{name}-ns", args.release.namespace, pulumi.ResourceOptions(parent=self))
        self.chart = _chart(
            f"{name}-chart",
            args.release,
            pulumi.ResourceOptions(parent=self, depends_on=[ns], transforms=chart_transforms(args.protect_crds)),
        )
        self.register_outputs({"chart": args.release.as_dict()})


@dataclass(frozen=True, kw_only=True)
class AIPerfOperatorArgs:
    """The operator chart, the env patch of its Deployment, and what it must wait for."""

    release: HelmRelease
    env_patch: dict[str, Any]
    after: Sequence[pulumi.Resource] = ()
    protect_crds: bool = True
    """Protect the chart's CRDs (``operator.protectCrds``): deleting the AIPerfJob CRD deletes every AIPerfJob."""


class AIPerfOperator(pulumi.ComponentResource):
    """The operator chart, installed once Kueue serves and JobSet is in, then its env patched.

    The chart has no value for the ``AIPERF_K8S_*`` settings, so a server-side-apply
    patch of its Deployment sets them: visible in the plan and in every diff.
    """

    chart: k8s.helm.v4.Chart
    env_patch: k8s.apps.v1.DeploymentPatch
    """Depend on this, not only on the chart: the env it sets is the sizing and default queue the
    admission proof assumes, and a job created before it would get the image's defaults."""

    def __init__(self, name: str, args: AIPerfOperatorArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aiperf-kueue:index:AIPerfOperator", name, None, opts)
        # Retained: the chart's results PVC lives here, and deleting the namespace would delete it.
        ns = _namespace(
            f"{name}-ns", args.release.namespace, pulumi.ResourceOptions(parent=self, retain_on_delete=True)
        )
        self.chart = _chart(
            f"{name}-chart",
            args.release,
            pulumi.ResourceOptions(
                parent=self, depends_on=[ns, *args.after], transforms=chart_transforms(args.protect_crds)
            ),
        )
        patch = args.env_patch
        self.env_patch = k8s.apps.v1.DeploymentPatch(
            f"{name}-env",
            metadata=patch["metadata"],
            spec=patch["spec"],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.chart]),
        )
        self.register_outputs({"chart": args.release.as_dict()})
