"""Kueue releases this program targets, and each kind's apiVersion per release.

Every Kueue apiVersion string in the program comes from here, next to the
version rules that pick it (kueue NOTES §1): v1beta2 is served from 0.15 and is
the storage version from 0.16; Cohort was v1alpha1 (``spec.parent``) up to 0.12.

Kueue 0.20.0 stopped serving ``kueue.x-k8s.io/v1beta1``. That, and the 0.20 defaults below
(WorkloadPriorityClass defaulting, unadmitted-workload reasons), are read from the project's
issue 31, not from Kueue's source: the Go module proxy answers ``403 This module version is not
available`` for every ``sigs.k8s.io/kueue`` v0.20.x and v0.21.x (checked with ``go list -m``), so
no 0.20 CRD, chart or changelog is readable here. 0.20 and 0.21 are supported by design, untested.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

GROUP = "kueue.x-k8s.io"

#: Versions the test-suite runs against; others in the range are supported by design.
TESTED_VERSIONS = ("0.10.1", "0.19.2")
#: Newest tested release: the default pin.
DEFAULT_VERSION = "0.19.2"
#: Inclusive lower and exclusive upper bound of supported releases.
MIN_VERSION = (0, 10, 0)
MAX_VERSION_EXCLUSIVE = (0, 22, 0)
SUPPORTED_RANGE = ">=0.10.0, <0.22.0"
#: The newest release line whose API rules the program knows (for the refusal of a newer one).
NEWEST_KNOWN_LINE = "0.21"

#: First release serving v1beta2 (0.15), and the first that no longer serves v1beta1 (0.20,
#: issue 31: "Kueue 0.20.0 stopped serving kueue.x-k8s.io/v1beta1").
V1BETA2_FIRST = (0, 15, 0)
V1BETA1_GONE = (0, 20, 0)
#: From 0.20 a WorkloadPriorityClass named ``default`` is the priority of every workload that
#: names none (WorkloadPriorityClassDefaulting, on in 0.20; issue 31).
DEFAULT_PRIORITY_CLASS = "default"
PRIORITY_CLASS_DEFAULTING_FIRST = (0, 20, 0)

ApiVersion = Literal["v1beta1", "v1beta2"]

#: Kueue >= 0.14 caps the resource quotas of one resource group (Σ over flavors of
#: len(resources)) at 512 (kueue NOTES §2, ClusterQueue rule 6). Its other two totals,
#: Σ flavors <= 256 and Σ coveredResources <= 256 over all groups, cannot bind here: this
#: program writes one group, already capped at 64 flavors and 64 covered resources.
MAX_QUOTAS_PER_GROUP = 512

#: Labels and annotations Kueue reads.
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
DEFAULT_QUEUE_ANNOTATION = "kueue.x-k8s.io/default-queue-name"
#: The LocalQueue name Kueue itself treats as a namespace's default (LocalQueueDefaulting).
DEFAULT_LOCAL_QUEUE = "default"

#: Where the Kueue chart and the release manifests put Kueue, and the names they give its
#: controller Deployment and webhook Service (release ``kueue``, no name overrides).
KUEUE_NAMESPACE = "kueue-system"
KUEUE_DEPLOYMENT = "kueue-controller-manager"
KUEUE_WEBHOOK_SERVICE = "kueue-webhook-service"
#: The chart names the webhook Service ``<fullname>-webhook-service`` and the Secret Kueue's internal cert
#: management keeps its CA and serving certificate in ``<fullname>-webhook-server-cert`` (sigs.k8s.io/kueue v0.19.2,
#: charts/kueue/templates/manager/manager-config.yaml and internalcert/secret.yaml).
WEBHOOK_SERVICE_SUFFIX = "-webhook-service"
WEBHOOK_SECRET_SUFFIX = "-webhook-server-cert"

#: The readiness gate's defaults (``kueue.readiness``): tries per step, the first wait between
#: tries in seconds, and the deadline for all four steps. They cover the 10–30 s Kueue's webhook
#: needs after its Deployment is Ready.
READINESS_ATTEMPTS = 40
READINESS_INTERVAL_SECONDS = 2.0
READINESS_TIMEOUT_SECONDS = 300.0
#: Longest wait between two tries of a step, in seconds: the backoff doubles up to it. Config
#: (``kueue.readiness.intervalSeconds``) and the gate's ``check`` refuse a first interval above it.
READINESS_MAX_INTERVAL_SECONDS = 10.0


#: Every apiVersion each Kueue kind has had across the supported releases. One live object is served
#: under all of them (the API server converts), so a program that moves a kind from one to another
#: (a Kueue upgrade across v1beta1 -> v1beta2 with ``apiVersion: auto``) must tell the engine it is
#: the same resource: without that the type token changes (``kubernetes:kueue.x-k8s.io/v1beta1:*``
#: -> ``v1beta2``), and the engine creates the "new" one (server-side apply adopts the live object)
#: and then deletes the "old" one: the live queue itself.
KIND_API_VERSIONS: dict[str, tuple[str, ...]] = {
    "ResourceFlavor": ("v1beta1", "v1beta2"),
    "ClusterQueue": ("v1beta1", "v1beta2"),
    "LocalQueue": ("v1beta1", "v1beta2"),
    "WorkloadPriorityClass": ("v1beta1", "v1beta2"),
    # v1alpha1 up to 0.12 (no conversion: the program's Cohort has an empty spec, so nothing is lost).
    "Cohort": ("v1alpha1", "v1beta1", "v1beta2"),
}


def former_type_tokens(api_version: str, kind: str) -> list[str]:
    """The Pulumi type tokens the same Kueue object had under its other apiVersions, for
    ``aliases``: ``kueue.x-k8s.io/v1beta2`` ClusterQueue -> ``[kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue]``.
    Empty for anything that is not a Kueue kind."""
    group, _, version = api_version.partition("/")
    if group != GROUP or kind not in KIND_API_VERSIONS:
        return []
    return [f"kubernetes:{GROUP}/{v}:{kind}" for v in KIND_API_VERSIONS[kind] if v != version]


def parse_version(text: str) -> tuple[int, int, int]:
    """``"0.19.2"`` or ``"v0.19.2"`` → ``(0, 19, 2)``; ``ValueError`` otherwise."""
    parts = text.removeprefix("v").split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"not a Kueue release version (x.y.z): {text!r}")
    return int(parts[0]), int(parts[1]), int(parts[2])


def is_supported(version: tuple[int, int, int]) -> bool:
    """Whether this program knows the API rules of ``version``."""
    return MIN_VERSION <= version < MAX_VERSION_EXCLUSIVE


def served_api_versions(version: tuple[int, int, int]) -> tuple[ApiVersion, ...]:
    """The ``kueue.x-k8s.io`` versions a Kueue release serves for ClusterQueue, LocalQueue,
    ResourceFlavor, WorkloadPriorityClass and Workload: v1beta1 up to 0.19, v1beta2 from 0.15."""
    served: list[ApiVersion] = []
    if version < V1BETA1_GONE:
        served.append("v1beta1")
    if version >= V1BETA2_FIRST:
        served.append("v1beta2")
    return tuple(served)


@dataclass(frozen=True)
class KueueTarget:
    """The API surface of one pinned Kueue release, in one chosen apiVersion."""

    version: tuple[int, int, int]
    api: ApiVersion

    @classmethod
    def resolve(cls, version: str, api_version: str) -> KueueTarget:
        """Pick the apiVersion: ``auto`` is v1beta2 from 0.16 on, v1beta1 below."""
        parsed = parse_version(version)
        if api_version == "auto":
            return cls(parsed, "v1beta2" if parsed >= (0, 16, 0) else "v1beta1")
        if api_version == "v1beta1":
            return cls(parsed, "v1beta1")
        if api_version == "v1beta2":
            return cls(parsed, "v1beta2")
        raise ValueError(f"unknown Kueue apiVersion {api_version!r}")

    @property
    def version_text(self) -> str:
        """The release as ``x.y.z``."""
        return ".".join(str(p) for p in self.version)

    @property
    def v1beta2_served(self) -> bool:
        """v1beta2 is served from Kueue 0.15."""
        return self.version >= V1BETA2_FIRST

    @property
    def v1beta1_served(self) -> bool:
        """v1beta1 is served up to Kueue 0.19; 0.20 stopped serving it."""
        return self.version < V1BETA1_GONE

    @property
    def served(self) -> tuple[ApiVersion, ...]:
        """:func:`served_api_versions` of the release."""
        return served_api_versions(self.version)

    @property
    def priority_class_defaulting(self) -> bool:
        """A WorkloadPriorityClass named ``default`` applies to every workload naming none (0.20+)."""
        return self.version >= PRIORITY_CLASS_DEFAULTING_FIRST

    # apiVersion per kind ---------------------------------------------------
    @property
    def resource_flavor(self) -> str:
        """ApiVersion of ResourceFlavor."""
        return f"{GROUP}/{self.api}"

    @property
    def cluster_queue(self) -> str:
        """ApiVersion of ClusterQueue."""
        return f"{GROUP}/{self.api}"

    @property
    def local_queue(self) -> str:
        """ApiVersion of LocalQueue."""
        return f"{GROUP}/{self.api}"

    @property
    def workload_priority_class(self) -> str:
        """ApiVersion of WorkloadPriorityClass."""
        return f"{GROUP}/{self.api}"

    @property
    def cohort(self) -> str:
        """ApiVersion of Cohort: v1alpha1 up to 0.12, then the chosen version."""
        if self.api == "v1beta1" and self.version < (0, 13, 0):
            return f"{GROUP}/v1alpha1"
        return f"{GROUP}/{self.api}"

    # limits and field shapes ----------------------------------------------
    @property
    def max_per_group(self) -> int:
        """Flavors, covered resources and resources per flavor in one group: 16 before 0.14, then 64."""
        return 64 if self.version >= (0, 14, 0) else 16

    @property
    def cohort_field(self) -> str:
        """The ClusterQueue field naming its cohort: ``cohortName`` in v1beta2."""
        return "cohortName" if self.api == "v1beta2" else "cohort"

    @property
    def has_may_stop_search(self) -> bool:
        """``MayStopSearch`` and ``preference`` exist from 0.15; older releases say Borrow/Preempt."""
        return self.version >= (0, 15, 0)

    @property
    def default_local_queue_defaulting(self) -> bool:
        """A LocalQueue named ``default`` defaults unlabelled jobs (GA, always on, from 0.17)."""
        return self.version >= (0, 17, 0)

    @property
    def wpc_description_max(self) -> int | None:
        """WorkloadPriorityClass ``description`` is capped at 2048 characters in v1beta2 only."""
        return 2048 if self.api == "v1beta2" else None
