"""Install settings: the Kueue chart's manager config, JobSet and the AIPerf operator."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictStr, field_validator, model_validator

from aiperf_kueue.common.display import show
from aiperf_kueue.config.base import DnsLabel, Flag, Model, Number, WholeNumber, dns_label
from aiperf_kueue.config.sizing import OperatorSizing
from aiperf_kueue.upstream.aiperf_release import DEFAULT_VERSION, RELEASES
from aiperf_kueue.upstream.kueue import READINESS_ATTEMPTS, READINESS_INTERVAL_SECONDS, READINESS_MAX_INTERVAL_SECONDS

JOBSET_FRAMEWORK = "jobset.x-k8s.io/jobset"
#: ``operator.defaultQueue`` meaning "the LocalQueue every benchmark namespace has".
DEFAULT_QUEUE_AUTO = "auto"
#: ``operator.aiperfVersion`` / ``operator.env`` of an external operator nobody declared.
UNKNOWN = "unknown"


class Readiness(Model):
    """The gate between the Kueue install and the first Kueue object (runs on ``pulumi up``)."""

    attempts: WholeNumber = Field(default=READINESS_ATTEMPTS, ge=1, le=1000)
    """Tries per step before giving up (default 40): Deployment available, webhook
    endpoints ready, then a server-side dry-run create of a ResourceFlavor."""

    interval_seconds: Number = Field(default=READINESS_INTERVAL_SECONDS, gt=0)
    """First wait between tries, in seconds (default 2, at most 10), doubled after each failure
    up to 10 s; the whole wait gives up after 300 s. The defaults cover the 10–30 s Kueue's
    webhook needs after its Deployment is Ready. At most 10 because the backoff never waits
    longer: the gate would refuse a larger first wait on ``pulumi up``, so plan refuses it first."""

    @field_validator("interval_seconds")
    @classmethod
    def _within_the_backoff_cap(cls, value: float) -> float:
        cap = READINESS_MAX_INTERVAL_SECONDS
        if value > cap:
            raise ValueError(
                f"must be <= {cap:g} (seconds; the gate's backoff doubles the interval up to {cap:g} s), got {value:g}"
            )
        return value


Strategy = Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"]


def _both_strategies() -> list[Strategy]:
    return ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]


class FairSharingConfig(Model):
    """Cluster-wide fair sharing in Kueue's manager configuration."""

    enable: Flag = True
    """Turn fair sharing on (default true when this block is present)."""

    preemption_strategies: list[Strategy] = Field(default_factory=_both_strategies, min_length=1, max_length=2)
    """Kueue's ``preemptionStrategies`` (default both, Kueue's default order). Required by the
    v1beta2 configuration; the v1beta1 one (Kueue 0.10) writes ``enable: true`` with them."""


class WaitForPodsReady(Model):
    """Kueue's ``waitForPodsReady``: evict admitted workloads whose pods never all start."""

    enable: Flag = True
    """On (default when this block is present). Kueue 0.19 turns it on by default anyway;
    0.10 needs it here."""

    timeout: str = "10m"
    """How long all pods of an admitted workload may take to be ready (default 10m; Kueue's own 30m)."""

    block_admission: Flag = False
    """Admit nothing else until the last admitted workload's pods are ready (default false)."""


class KueueInstallConfig(Model):
    """Fields of ``aiperf-kueue:kueue`` about installing Kueue (mixed into ``KueueConfig``)."""

    install: Flag = True
    """Install Kueue from its Helm chart (default true). False: Kueue is managed elsewhere;
    nothing of it is declared, and the readiness gate still guards every Kueue object."""

    source: Literal["helm", "manifests"] = "helm"
    """How Kueue is installed when ``install`` is true (default ``helm``). ``helm``: the chart, with
    the manager configuration generated from the settings below. ``manifests``: the release's
    ``manifests.yaml`` for ``version``, exactly as upstream ships it (Kueue's documented
    ``kubectl apply --server-side`` install); its manager configuration is Kueue's default, so
    ``frameworks``, ``manageJobsWithoutQueueName``, ``fairSharing``, ``waitForPodsReady``,
    ``chart``, ``values`` and a non-default ``namespace``/``releaseName`` are rejected with it."""

    namespace: DnsLabel = "kueue-system"
    """Namespace of the Kueue controller (default ``kueue-system``)."""

    release_name: DnsLabel = "kueue"
    """Helm release name (default ``kueue``, which gives ``kueue-controller-manager`` and
    ``kueue-webhook-service``). Objects are named after the chart's ``kueue.fullname``: the
    ``fullnameOverride`` value if set, else the release name if it contains "kueue", else
    ``<release>-kueue``; the readiness gate waits on those names."""

    chart: str | None = None
    """Chart reference (default: the OCI chart for the pinned version,
    ``oci://registry.k8s.io/kueue/charts/kueue`` from 0.12)."""

    protect: Flag = True
    """Protect the chart and its namespace from ``pulumi destroy`` (default true): the chart
    holds Kueue's CRDs, and deleting them deletes every queue and workload."""

    manage_jobs_without_queue_name: Flag = False
    """Kueue's ``manageJobsWithoutQueueName`` (default false): suspend every job without a queue label."""

    frameworks: list[str] | None = None
    """Integrations (default: the chart's list for the pinned version; on a MultiKueue manager
    ``batch/job`` and ``jobset.x-k8s.io/jobset`` only, since its Kueue must watch every enabled kind on
    each worker: docs/multikueue.md). Must include ``jobset.x-k8s.io/jobset``: AIPerf runs every
    benchmark as a JobSet."""

    fair_sharing: FairSharingConfig | None = None
    """Cluster-wide fair sharing (default off)."""

    wait_for_pods_ready: WaitForPodsReady | None = None
    """``waitForPodsReady`` (default: Kueue's own; on from 0.19, off in 0.10)."""

    values: dict[str, Any] = Field(default_factory=dict)
    """Extra chart values, deep-merged last (default none)."""

    readiness: Readiness = Field(default_factory=Readiness)
    """The readiness gate's retry budget."""

    @field_validator("frameworks")
    @classmethod
    def _jobset_on(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and JOBSET_FRAMEWORK not in value:
            raise ValueError(f"must include {JOBSET_FRAMEWORK!r}: AIPerf runs every benchmark as a JobSet")
        return value


class JobSetConfig(Model):
    """``aiperf-kueue:jobset``: the JobSet controller AIPerf's JobSets need."""

    install: Flag = True
    """Install JobSet from its Helm chart (default true). False: it is managed elsewhere."""

    version: str = "0.12.0"
    """Chart version (default 0.12.0, the JobSet release Kueue 0.19.2 builds against)."""

    namespace: DnsLabel = "jobset-system"
    """Namespace of the JobSet controller (default ``jobset-system``)."""

    release_name: DnsLabel = "jobset"
    """Helm release name (default ``jobset``)."""

    chart: str = "oci://registry.k8s.io/jobset/charts/jobset"
    """Chart reference (default the upstream OCI chart)."""

    values: dict[str, Any] = Field(default_factory=dict)
    """Extra chart values, deep-merged last (default none)."""

    protect_crds: Flag = True
    """Protect the chart's CustomResourceDefinitions (default true): deleting the JobSet CRD
    deletes every JobSet, the running benchmarks' among them, so ``pulumi destroy`` or
    ``install: false`` stops at them until protection is lifted deliberately."""


class OperatorImage(Model):
    """The pinned AIPerf image: the operator's, and every AIPerfJob's default."""

    repository: str = "nvcr.io/nvidia/aiperf"
    """Image repository (default ``nvcr.io/nvidia/aiperf``, where AIPerf publishes its releases)."""

    tag: str | None = None
    """Image tag (default: ``operator.aiperfVersion``, e.g. ``0.13.0``). The operator's defaults
    and rules are the release's, so the tag must be that release's image."""


class OperatorConfig(Model):
    """``aiperf-kueue:operator``: the AIPerf operator."""

    install: Flag = True
    """Install the operator chart (default true). False: it is managed elsewhere; declare its
    release in ``aiperfVersion`` and its env in ``env`` (each may be ``unknown``), and the plan
    claims only what they imply. The benchmark RBAC in each benchmark namespace is still
    declared (for ``releaseName``'s operator)."""

    aiperf_version: StrictStr = DEFAULT_VERSION
    """The AIPerf release of the operator (default ``0.13.0``, the first and only release with
    the operator): its image, its sizing defaults and its rules, by which every job is sized and
    checked. With ``install: false``, the external operator's release, or ``unknown``."""

    env: dict[StrictStr, StrictStr] | StrictStr | None = None
    """With ``install: false`` only: the external operator's ``AIPERF_*`` env as deployed
    (``kubectl set env deploy/<operator> --list``), or ``unknown`` (default). Known, it decides
    the default queue and the pod sizes the plan assumes; unknown, the plan says which of its
    claims depend on it (``sizing`` may still declare its pod sizes). With ``install: true``
    the program sets that env itself."""

    chart: str = "../aiperf/deploy/helm/aiperf-operator"
    """The chart: a local path (a checkout of ai-dynamo/aiperf at the release's tag, ``v0.13.0``;
    relative to the project directory) or an ``oci://`` reference with ``version``. The chart is
    not published to a registry (default ``../aiperf/deploy/helm/aiperf-operator``)."""

    version: str | None = None
    """Chart version, for an ``oci://`` chart only."""

    namespace: DnsLabel = "aiperf-system"
    """Namespace of the operator (default ``aiperf-system``)."""

    release_name: DnsLabel = "aiperf-operator"
    """Helm release name (default ``aiperf-operator``). The chart names its objects (the
    Deployment whose env this program patches, the ``<name>-benchmark`` Role, whose rules this
    program declares as a ClusterRole of that name, the ``<name>-results`` PVC) after its
    ``aiperf-operator.fullname``: ``values.fullnameOverride`` if set, else the release name if it
    contains the chart name (``values.nameOverride`` or ``aiperf-operator``), else
    ``<release>-<chart name>``, cut to 63 characters."""

    image: OperatorImage = Field(default_factory=OperatorImage)
    """The pinned image."""

    default_queue_setting: str | None = Field(default=DEFAULT_QUEUE_AUTO, alias="defaultQueue")
    """LocalQueue the operator stamps on JobSets of AIPerfJobs that name none
    (``AIPERF_K8S_JOBSET_KUEUE_DEFAULT_QUEUE_NAME``). Default ``auto``: the LocalQueue every
    benchmark namespace has (their shared ``localQueue``, ``aiperf-queue`` by default, else
    ``default`` if each has one), so the env default, the namespaces' default-queue
    annotation and the queue a job without ``queue`` gets all agree; when the namespaces share
    none, no env default (and a plan warning per annotated namespace). A name: that
    LocalQueue, which must exist in every benchmark namespace. ``""`` or null: no env default
    (a job or ``aiperf kube profile`` run without a queue bypasses Kueue)."""

    default_priority_class: DnsLabel | None = None
    """WorkloadPriorityClass for AIPerfJobs that name none
    (``AIPERF_K8S_JOBSET_KUEUE_DEFAULT_PRIORITY_CLASS``; default none). Must be declared."""

    sizing: OperatorSizing = Field(default_factory=OperatorSizing)
    """Pod sizing the operator gives benchmark pods, set explicitly on its Deployment and
    used by the admission proof (default: the release's, worker pod 3350m / 6Gi in 0.13.0)."""

    values: dict[str, Any] = Field(default_factory=dict)
    """Extra chart values, deep-merged last (default none)."""

    protect_crds: Flag = True
    """Protect the chart's CustomResourceDefinitions (AIPerfJob, AIPerfSweep; default true):
    deleting a CRD deletes every object of its kind, retained AIPerfJobs included, so
    ``pulumi destroy`` or ``install: false`` stops at them until protection is lifted
    deliberately. The chart's results PVC (``storage.enabled``, on by default) and the
    operator's namespace are always kept in the cluster when they leave the stack."""

    @property
    def default_queue(self) -> str | None:
        """The LocalQueue ``defaultQueue`` names explicitly; None for ``auto`` and for off. The
        effective env default is :func:`aiperf_kueue.plan.submit.default_queue` (it needs the namespaces)."""
        setting = self.default_queue_setting
        return None if setting == DEFAULT_QUEUE_AUTO else setting

    @field_validator("default_queue_setting")
    @classmethod
    def _auto_off_or_a_queue(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        if value == DEFAULT_QUEUE_AUTO:
            return value
        try:
            return dns_label(value)
        except ValueError as err:
            why = f"must be {DEFAULT_QUEUE_AUTO!r}, '' (no env default) or a LocalQueue name"
            raise ValueError(f"{why}: {err}") from None

    @field_validator("version")
    @classmethod
    def _no_v(cls, value: str | None) -> str | None:
        return value.removeprefix("v") if value is not None else None

    @field_validator("aiperf_version")
    @classmethod
    def _released(cls, value: str) -> str:
        if value != UNKNOWN and value.removeprefix("v") not in RELEASES:
            raise ValueError(
                f"must be an AIPerf release this program models ({', '.join(RELEASES)}) or {UNKNOWN!r} for an "
                f"external operator, got {show(value)}"
            )
        return value.removeprefix("v")

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str] | str | None) -> dict[str, str] | str | None:
        if isinstance(value, str) and value != UNKNOWN:
            raise ValueError(f"must be a mapping of variable to value, or {UNKNOWN!r}, got {show(value)}")
        return None if value == UNKNOWN else value

    @model_validator(mode="after")
    def _install_or_declare(self) -> OperatorConfig:
        given = self.model_fields_set
        if self.install:
            if self.aiperf_version == UNKNOWN:
                raise ValueError(f"aiperfVersion: {UNKNOWN!r} is only for an external operator (install: false)")
            if "env" in given:
                raise ValueError(
                    "env: only with install: false (the external operator's env); with install: true the program "
                    "sets the operator's env from defaultQueue, defaultPriorityClass and sizing"
                )
        elif "sizing" in given and isinstance(self.env, dict):
            raise ValueError(
                "sizing and env: with install: false the declared env is the external operator's sizing; give one of "
                "them (env: {AIPERF_K8S_WORKER_POD_CPU: ..., ...})"
            )
        return self

    @property
    def image_tag(self) -> str:
        """The image tag: ``image.tag``, else the release's version."""
        if self.image.tag is not None:
            return self.image.tag
        return self.aiperf_version if self.aiperf_version != UNKNOWN else DEFAULT_VERSION
