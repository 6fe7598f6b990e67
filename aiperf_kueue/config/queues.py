"""``aiperf-kueue:queues``: ClusterQueues, their shares and their namespaces."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from aiperf_kueue.common.display import show
from aiperf_kueue.config.base import (
    DnsLabel,
    Flag,
    Int32,
    LabelValue,
    Model,
    PoolQuantities,
    QualifiedName,
    Quantity,
    percent,
)


class BorrowWithinCohort(Model):
    """Preemption while borrowing (Kueue ``borrowWithinCohort``)."""

    policy: Literal["Never", "LowerPriority"] = "Never"
    """``Never`` (Kueue's default) or ``LowerPriority``; needs reclaimWithinCohort != Never."""

    max_priority_threshold: Int32 | None = None
    """Only workloads at or below this priority may be preempted (optional, a 32-bit integer)."""


class Preemption(Model):
    """Kueue ``spec.preemption``; every policy defaults to ``Never`` as in Kueue."""

    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] | None = None
    """Preempt lower-priority workloads of the same ClusterQueue (Kueue default Never)."""

    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] | None = None
    """Reclaim nominal quota from cohort members that borrowed it (Kueue default Never)."""

    borrow_within_cohort: BorrowWithinCohort | None = None
    """Preempt while borrowing (Kueue default ``{policy: Never}``)."""


class FlavorFungibility(Model):
    """Kueue ``spec.flavorFungibility``: when to try the next flavor. Written in v1beta2
    terms; for Kueue < 0.15 ``MayStopSearch`` is written as ``Borrow`` / ``Preempt``."""

    when_can_borrow: Literal["MayStopSearch", "TryNextFlavor"] | None = None
    """Kueue default ``MayStopSearch``: stop at the first flavor that fits by borrowing."""

    when_can_preempt: Literal["MayStopSearch", "TryNextFlavor"] | None = None
    """Kueue default ``TryNextFlavor``: move on when fitting needs preemption."""

    preference: Literal["BorrowingOverPreemption", "PreemptionOverBorrowing"] | None = None
    """Only when both are TryNextFlavor; Kueue >= 0.15."""


class FairSharing(Model):
    """Kueue ``spec.fairSharing``."""

    weight: Quantity = "1"
    """Share weight, a quantity (default 1). 0 means this queue always loses;
    a positive weight must be larger than 1n. Written in the form Kueue stores it
    (``0.5`` → ``500m``, ``1000`` → ``1k``), so it never shows as a diff."""


class Namespace(Model):
    """A benchmark namespace whose jobs this ClusterQueue admits."""

    name: DnsLabel
    """Namespace name (DNS-1123 label, required). Not ``kube-system`` nor the Kueue, JobSet or
    operator install namespace: Kueue's job webhooks ignore those."""

    create: Flag = True
    """True (default): the program creates the namespace. False: it exists already and
    only this program's labels are server-side-applied to it. Must be false for the
    namespaces every cluster has (``default``, ``kube-public``, ``kube-node-lease``)."""

    local_queue: DnsLabel = "aiperf-queue"
    """Name of the LocalQueue in this namespace (default ``aiperf-queue``); jobs name it in
    the ``kueue.x-k8s.io/queue-name`` label, so it must be a DNS-1123 label."""

    default_queue: Flag = False
    """Also create a LocalQueue named ``default``, Kueue's own default for jobs without a
    queue label (default false; Kueue >= 0.17, alpha and off in 0.10)."""

    default_queue_annotation: Flag = True
    """Annotate the namespace ``kueue.x-k8s.io/default-queue-name: <queue>`` (default true), also
    for ``create: false`` namespaces. ``<queue>`` is ``operator.defaultQueue`` when set, else
    ``localQueue``: the queue the operator's env default stamps, so the two always agree.
    Why: AIPerf's preflight passes a job without ``spec.scheduling.queueName`` only in an
    annotated namespace, and warns otherwise. Neither Kueue nor the operator routes a job by
    the annotation; ``operator.defaultQueue`` (or a LocalQueue named ``default``) does."""

    labels: dict[QualifiedName, LabelValue] = Field(default_factory=dict)
    """Extra labels on the namespace (default none)."""

    retain_on_delete: Flag = True
    """Keep the namespace, and the results in it, when it leaves the stack (default true).
    Only for ``create: true``."""


class ClusterQueue(Model):
    """One team's ClusterQueue: its share of every pool and its namespaces."""

    name: DnsLabel
    """ClusterQueue name (DNS-1123 label, required)."""

    share: Decimal | dict[str, Decimal] | None = None
    """Percent of each pool's total, one number for every pool (``25``) or a map
    ``{pool: percent}`` (absent pools: 0); each written ``25``, ``12.5`` or ``"12.5%"``. Per
    pool the shares may not exceed 100; a sum within 1e-9 of 100 counts as 100 and hands out
    the whole pool (YAML reads
    ``33.333333333333333`` as a float, and three of them add up to 100.000000000000008).
    Exactly one of ``share`` and ``nominalQuota`` is required, except for a stack's only
    ClusterQueue: with neither, it takes the whole inventory (``share: 100``)."""

    nominal_quota: PoolQuantities | None = None
    """Explicit quotas ``{pool: {resource: quantity}}`` instead of ``share``
    (absent pools and resources: 0). Per pool they may not exceed the pool total.
    CPU in whole millicores, everything else in whole units. Written in the form the API
    server stores: ``12000m`` → ``12``; bytes with the largest binary suffix that divides
    them (``2048Mi`` → ``2Gi``), else decimal (``1G`` stays ``1G``, not ``1000000000``)."""

    borrowing_limit: PoolQuantities | None = None
    """Most this queue may borrow beyond its nominal quota, ``{pool: {resource: quantity}}``
    (default: no limit). Needs a cohort (``queues.cohort`` or ``cohortName``)."""

    lending_limit: PoolQuantities | None = None
    """Most of its nominal quota others may borrow, ``{pool: {resource: quantity}}``
    (default: all of it). Needs a cohort (``queues.cohort`` or ``cohortName``); at most the nominal quota."""

    preemption: Preemption | None = None
    """Kueue ``preemption`` (default: Kueue's, never preempt)."""

    queueing_strategy: Literal["StrictFIFO", "BestEffortFIFO"] | None = None
    """Kueue ``queueingStrategy`` (Kueue default BestEffortFIFO)."""

    flavor_fungibility: FlavorFungibility | None = None
    """Kueue ``flavorFungibility`` (default: Kueue's)."""

    fair_sharing: FairSharing | None = None
    """Kueue ``fairSharing`` weight (default: Kueue's, weight 1)."""

    stop_policy: Literal["None", "Hold", "HoldAndDrain"] | None = None
    """Kueue ``stopPolicy`` (default None). Set ``HoldAndDrain`` before removing a queue
    that has admitted workloads."""

    cohort_name: DnsLabel | None = None
    """The Cohort this ClusterQueue joins (Kueue ``cohortName``), one of ``queues.cohorts`` or
    ``queues.cohort`` (default ``queues.cohort``; with neither, no cohort: no borrowing). Naming an
    inner Cohort of a tree puts the queue under that department or team."""

    namespaces: list[Namespace] = Field(default_factory=list)
    """Benchmark namespaces whose LocalQueues point here (default none)."""

    @field_validator("share", mode="before")
    @classmethod
    def _share_shape(cls, value: Any) -> Any:
        return _share(value)

    @model_validator(mode="after")
    def _one_of(self) -> ClusterQueue:
        if (self.share is None) == (self.nominal_quota is None):
            given = "neither is set" if self.share is None else "both are set"
            raise ValueError(f"set exactly one of share and nominalQuota; {given}")
        return self


def _share(value: Any) -> Any:
    # One message per problem, not one per union member.
    if value is None:
        return value
    if isinstance(value, bool):
        raise ValueError(f"must be a percentage or a map of pool to percentage, got {show(value)}")
    if isinstance(value, (int, float, str)):
        return _percent(value)
    if isinstance(value, dict):
        return {str(k): _percent(v, str(k)) for k, v in value.items()}
    raise ValueError(f"must be a percentage or a map of pool to percentage, got {show(value)}")


def _percent(value: Any, where: str | None = None) -> Decimal:
    try:
        return percent(value)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}" if where else str(exc)) from None


class Cohort(Model):
    """One Cohort of a tree (Kueue v1beta2 ``Cohort``): an organisation, a department or a team.

    Its own quota (``share`` or ``nominalQuota``) is a pool shared by everything below it, on top
    of its ClusterQueues' quotas, as in Kueue. Every share, a Cohort's or a ClusterQueue's, is a
    percentage of the pool's total, and per pool all of them together may not exceed 100."""

    name: DnsLabel
    """Cohort name (DNS-1123 label, required); not the name of a ClusterQueue of the stack."""

    parent_name: DnsLabel | None = None
    """The parent Cohort (Kueue ``parentName``), another entry of ``queues.cohorts`` (default none:
    a root). Unlike Kueue, which treats an unknown parent as an empty Cohort, a name that is not
    declared here is an error: it is almost always a typo that cuts a department off its org."""

    share: Decimal | dict[str, Decimal] | None = None
    """The Cohort's own nominal quota as a percent of each pool's total, like a ClusterQueue's
    ``share`` (default none: the Cohort holds no quota of its own and only passes on what its
    members lend). At most one of ``share`` and ``nominalQuota``."""

    nominal_quota: PoolQuantities | None = None
    """Explicit own quotas ``{pool: {resource: quantity}}`` instead of ``share`` (default none)."""

    borrowing_limit: PoolQuantities | None = None
    """Most this Cohort's subtree may borrow from its parent, ``{pool: {resource: quantity}}``
    (default: no limit). Only with ``parentName``: Kueue rejects it on a root."""

    lending_limit: PoolQuantities | None = None
    """Most of this subtree's quota its parent may lend on, ``{pool: {resource: quantity}}``
    (default: all of it). Only with ``parentName``: Kueue rejects it on a root."""

    fair_sharing: FairSharing | None = None
    """Kueue ``fairSharing`` weight of this Cohort against its siblings (default weight 1); read only
    when ``kueue.fairSharing.enable`` is true."""

    @field_validator("share", mode="before")
    @classmethod
    def _share_shape(cls, value: Any) -> Any:
        return _share(value)

    @model_validator(mode="after")
    def _at_most_one(self) -> Cohort:
        if self.share is not None and self.nominal_quota is not None:
            raise ValueError("set at most one of share and nominalQuota; both are set")
        return self


class Queues(Model):
    """The queue hierarchy: an optional cohort, or a tree of them, and the ClusterQueues."""

    cohort: DnsLabel | None = None
    """Cohort every ClusterQueue joins unless it names its own ``cohortName``, so they borrow each
    other's unused quota (default none: no borrowing). A Cohort object of that name is declared too:
    with an empty spec, unless ``cohorts`` declares it."""

    cohorts: list[Cohort] = Field(default_factory=list)
    """A tree of Cohorts, parents named by ``parentName`` (default none). Needs Kueue's v1beta2
    Cohort API: Kueue >= 0.15 with ``kueue.apiVersion`` v1beta2 (or auto)."""

    covered_resources: list[QualifiedName] = Field(default_factory=list)
    """Resources covered besides cpu, memory and the pools' GPU resources, e.g.
    ``[ephemeral-storage, pods]`` when a LimitRange makes pods request them (default none).
    Their amounts come from each pool's ``extraResources``. Covering ``pods`` needs
    ``extraResources.pods`` on the pools: Kueue charges every workload its pod count."""

    cluster_queues: list[ClusterQueue] = Field(min_length=1)
    """The ClusterQueues, usually one per team (required, at least one). The only ClusterQueue
    of a stack may leave out both ``share`` and ``nominalQuota``: it takes the whole inventory."""

    def cohort_of(self, cq: ClusterQueue) -> str | None:
        """The Cohort ``cq`` joins: its ``cohortName``, else ``queues.cohort`` (None: no cohort)."""
        return cq.cohort_name or self.cohort

    @model_validator(mode="before")
    @classmethod
    def _only_queue_takes_everything(cls, data: Any) -> Any:
        # Before validation: the "exactly one of share and nominalQuota" rule of each ClusterQueue
        # then sees share 100, and the dump shows what the queue gets.
        if not isinstance(data, dict):
            return data
        key = "clusterQueues" if "clusterQueues" in data else "cluster_queues"
        queues = data.get(key)
        if isinstance(queues, list) and len(queues) == 1 and isinstance(queues[0], dict):
            only = queues[0]
            if all(only.get(k) is None for k in ("share", "nominalQuota", "nominal_quota")):
                return {**data, key: [{**only, "share": 100}]}
        return data
