"""``aiperf-kueue:inventory``: the node pools whose capacity the quotas hand out."""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

from pydantic import Field, field_validator, model_validator

from aiperf_kueue.config.base import (
    ByteQuantity,
    CpuQuantity,
    DnsLabel,
    Int64,
    LabelValue,
    Model,
    Percent,
    QualifiedName,
    Quantity,
    WholeNumber,
    resource_quantity,
)

Effect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Toleration(Model):
    """A toleration Kueue adds to pods admitted on this pool (Kubernetes shape)."""

    key: QualifiedName | None = None
    """Taint key to tolerate; omitted means every key (then ``operator`` must be Exists)."""

    operator: Literal["Equal", "Exists"] = "Equal"
    """``Equal`` (default) matches ``value``; ``Exists`` matches any value."""

    value: LabelValue | None = None
    """Taint value for ``Equal``; must be omitted for ``Exists``."""

    effect: Effect | None = None
    """Effect to tolerate; omitted means every effect."""

    toleration_seconds: Int64 | None = None
    """Seconds a NoExecute taint is tolerated, a 64-bit integer; only with ``effect: NoExecute``."""

    @model_validator(mode="after")
    def _kueue_rules(self) -> Toleration:
        # The same rules as the ResourceFlavor CRD's CEL validations.
        if self.key is None and self.operator != "Exists":
            raise ValueError("a toleration without key must use operator Exists")
        # Any value, even "": the CEL rule is !has(x.value), and "" is still written.
        if self.operator == "Exists" and self.value is not None:
            raise ValueError("a toleration with operator Exists must not have a value")
        if self.toleration_seconds is not None and self.effect != "NoExecute":
            raise ValueError("tolerationSeconds needs effect NoExecute")
        return self

    def tolerates(self, taint: Taint) -> bool:
        """``Toleration.ToleratesTaint`` of ``k8s.io/api/core/v1``: whether this tolerates ``taint``."""
        if self.effect is not None and self.effect != taint.effect:
            return False
        if self.key is not None and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return (self.value or "") == (taint.value or "")


class Taint(Model):
    """A taint the pool's nodes carry; Kueue checks that admitted pods tolerate it."""

    key: QualifiedName
    """Taint key (required)."""

    value: LabelValue | None = None
    """Taint value (optional)."""

    effect: Effect
    """``NoSchedule``, ``PreferNoSchedule`` or ``NoExecute`` (required)."""

    def kueue_text(self) -> str:
        """The taint as Kueue prints it in ``untolerated taint {...} in flavor X`` (Go's ``%s`` of a Taint)."""
        return f"{{{self.key} {self.value or ''} {self.effect} <nil>}}"


class Pool(Model):
    """One homogeneous node pool; becomes one ResourceFlavor of the same name."""

    name: DnsLabel
    """ResourceFlavor name (DNS-1123 label). Required: every ClusterQueue refers to it."""

    nodes: WholeNumber = Field(ge=1)
    """Number of nodes in the pool (required, >= 1). For autoscaled pools, the maximum."""

    cpu: CpuQuantity
    """Allocatable CPU per node, a quantity of cores (``"31"``, ``"31500m"``; no binary suffix); required.
    Use the node's *allocatable*, not its capacity, or admitted pods stay Pending."""

    memory: ByteQuantity
    """Allocatable memory per node, a whole number of bytes (``"120Gi"``); required."""

    gpus: WholeNumber = Field(default=0, ge=0)
    """GPUs per node (default 0, a CPU-only pool). Headroom never applies to GPUs."""

    gpu_resource: QualifiedName = "nvidia.com/gpu"
    """Extended resource name the GPUs are requested by (default ``nvidia.com/gpu``). Not a
    standard resource (cpu, memory, pods, ephemeral-storage, hugepages-*) and not one of
    ``queues.coveredResources``: it becomes a covered resource of its own."""

    extra_resources: dict[QualifiedName, Quantity] = Field(default_factory=dict)
    """Per-node allocatable of the extra covered resources (``queues.coveredResources``),
    e.g. ``{ephemeral-storage: 400Gi, pods: 110}`` (default none: quota 0)."""

    node_labels: dict[QualifiedName, LabelValue] = Field(default_factory=dict, max_length=8)
    """Labels that select exactly this pool's nodes (at most 8; default none = every node).
    Kueue adds them to the nodeSelector of pods admitted on this flavor."""

    tolerations: list[Toleration] = Field(default_factory=list, max_length=8)
    """Tolerations Kueue adds to pods admitted on this flavor (at most 8; default none)."""

    node_taints: list[Taint] = Field(default_factory=list, max_length=8)
    """Taints of the pool's nodes that admitted pods must tolerate (at most 8; default none)."""

    cpu_and_memory_for: Literal["allQueues", "gpuQueues"] = "allQueues"
    """Which ClusterQueues get this GPU pool's CPU and memory (default ``allQueues``: each by its
    share). ``gpuQueues``: only those with a GPU quota in this pool; the others get 0 cpu and
    memory in this flavor (their part stays unassigned) and, in a cohort, a borrowingLimit of 0
    there, so Kueue never places their CPU-only pods (AIPerf's controller and workers) on these
    nodes, next to the models under test. Only for a pool with ``gpus``."""

    @field_validator("extra_resources")
    @classmethod
    def _units(cls, amounts: dict[str, str]) -> dict[str, str]:
        for resource, amount in amounts.items():
            try:
                resource_quantity(resource, amount)
            except ValueError as err:
                raise ValueError(f"{resource}: {err}") from None
        return amounts

    @field_validator("node_taints")
    @classmethod
    def _unique_taints(cls, taints: list[Taint]) -> list[Taint]:
        seen: set[tuple[str, str]] = set()
        for taint in taints:
            if (taint.key, taint.effect) in seen:
                raise ValueError(f"taints must be unique by key and effect pair, {taint.key}:{taint.effect} repeats")
            seen.add((taint.key, taint.effect))
        return taints


class Inventory(Model):
    """What the cluster has: the pools and how much of each node to keep free."""

    headroom: Percent = Field(default=Decimal(0), lt=100)
    """Percent of each node's CPU and memory kept out of every quota (default 0, below 100;
    ``10``, ``7.5`` or ``"7.5%"``),
    for daemonsets and system pods the allocatable figure does not already exclude.
    Never applied to GPUs."""

    pools: list[Pool] = Field(min_length=1)
    """Node pools, in the order ClusterQueues list their flavors (required, at least one).
    Kueue tries flavors in this order: list CPU-only pools first."""
