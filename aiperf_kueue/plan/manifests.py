"""Builders of every Kubernetes object the program declares, as plain dicts.

Pure functions of the config and the plan, tested without Pulumi; the
components only register what these return.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from aiperf_kueue.common import quantity
from aiperf_kueue.config import ClusterQueue, Namespace, Pool, PriorityClass, Queues
from aiperf_kueue.config.aiperf_spec import SPEC_DIGEST_LENGTH
from aiperf_kueue.queues.queue_plan import QueuePlan, Quotas
from aiperf_kueue.upstream.kueue import DEFAULT_LOCAL_QUEUE, KueueTarget
from aiperf_kueue.workload.admission import JobAdmission

#: The label this program puts on a benchmark namespace; its ClusterQueue selects on it.
CLUSTER_QUEUE_LABEL = "aiperf-kueue/cluster-queue"
#: Marks every object this program manages.
PART_OF = {"app.kubernetes.io/part-of": "aiperf-kueue"}

Manifest = dict[str, Any]


#: pulumi-kubernetes' annotation to force server-side apply over another field manager: the program owns its
#: Kueue objects whole, so a field changed by hand (``kubectl edit clusterqueue``) is drift that the next
#: ``pulumi up --refresh`` takes back, instead of an apply conflict that stops the update (found by make e2e).
PATCH_FORCE = {"pulumi.com/patchForce": "true"}


def _meta(name: str, namespace: str | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = {**PART_OF, **(labels or {})}
    return meta


def _kueue_meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    """A Kueue object's metadata: the program's labels, and :data:`PATCH_FORCE`."""
    return {**_meta(name, namespace), "annotations": dict(PATCH_FORCE)}


def resource_flavor(pool: Pool, target: KueueTarget) -> Manifest:
    """One ResourceFlavor per pool: its node labels, taints and tolerations."""
    spec: dict[str, Any] = {}
    if pool.node_labels:
        spec["nodeLabels"] = dict(pool.node_labels)
    if pool.node_taints:
        spec["nodeTaints"] = [t.model_dump(by_alias=True, exclude_none=True) for t in pool.node_taints]
    if pool.tolerations:
        spec["tolerations"] = [t.model_dump(by_alias=True, exclude_none=True) for t in pool.tolerations]
    return {
        "apiVersion": target.resource_flavor,
        "kind": "ResourceFlavor",
        "metadata": _kueue_meta(pool.name),
        "spec": spec,
    }


def cohort(name: str, plan: QueuePlan, config: Queues) -> Manifest:
    """A Cohort the ClusterQueues join (explicit, so it shows in diffs): ``queues.cohort`` with an empty
    spec unless ``queues.cohorts`` declares it, then with its parent, own quota, limits and weight."""
    spec: dict[str, Any] = {}
    declared = next((c for c in config.cohorts if c.name == name), None)
    if declared is not None:
        if declared.parent_name is not None:
            spec["parentName"] = declared.parent_name
        limited = name in plan.cohort_borrowing or name in plan.cohort_lending
        if name in plan.cohort_nominal or limited:
            spec["resourceGroups"] = _resource_groups(
                plan, plan.cohort_nominal.get(name, {}), plan.cohort_borrowing, plan.cohort_lending, name
            )
        if declared.fair_sharing is not None:
            spec["fairSharing"] = {"weight": quantity.format_decimal(quantity.parse(declared.fair_sharing.weight))}
    return {"apiVersion": plan.target.cohort, "kind": "Cohort", "metadata": _kueue_meta(name), "spec": spec}


def _resource_groups(
    plan: QueuePlan, nominal: Mapping[str, Mapping[str, Fraction]], borrowing: Quotas, lending: Quotas, name: str
) -> list[dict[str, Any]]:
    """One resource group listing every pool and every covered resource (quota 0 where none)."""
    flavors = []
    for pool in plan.pools:
        resources = []
        for res in plan.covered_resources:
            entry: dict[str, Any] = {
                "name": res,
                "nominalQuota": quantity.manifest_quantity(res, nominal.get(pool.name, {}).get(res, Fraction(0))),
            }
            for key, limits in (("borrowingLimit", borrowing), ("lendingLimit", lending)):
                amount = limits.get(name, {}).get(pool.name, {}).get(res)
                if amount is not None:
                    entry[key] = quantity.manifest_quantity(res, amount)
            resources.append(entry)
        flavors.append({"name": pool.name, "resources": resources})
    return [{"coveredResources": list(plan.covered_resources), "flavors": flavors}]


def namespace_selector(cluster_queue: str) -> dict[str, Any]:
    """Selects only the namespaces assigned to ``cluster_queue``; never ``{}`` (all)."""
    return {"matchLabels": {CLUSTER_QUEUE_LABEL: cluster_queue}}


def cluster_queue(cq: ClusterQueue, plan: QueuePlan, cohort_name: str | None) -> Manifest:
    """A ClusterQueue with one resource group listing every pool, every covered resource."""
    target = plan.target
    spec: dict[str, Any] = {}
    if cohort_name is not None:
        spec[target.cohort_field] = cohort_name
    spec["namespaceSelector"] = namespace_selector(cq.name)
    spec["resourceGroups"] = _resource_groups(plan, plan.nominal[cq.name], plan.borrowing, plan.lending, cq.name)
    if cq.preemption is not None:
        spec["preemption"] = cq.preemption.model_dump(by_alias=True, exclude_none=True)
    if cq.queueing_strategy is not None:
        spec["queueingStrategy"] = cq.queueing_strategy
    if cq.flavor_fungibility is not None:
        ff = cq.flavor_fungibility.model_dump(by_alias=True, exclude_none=True)
        if not target.has_may_stop_search:
            # Kueue < 0.15 spells MayStopSearch as Borrow / Preempt.
            legacy = {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}
            ff = {k: (legacy[k] if v == "MayStopSearch" else v) for k, v in ff.items()}
        spec["flavorFungibility"] = ff
    if cq.fair_sharing is not None:
        # As Kueue stores it ("0.5" → "500m"): the given text would show as a diff forever.
        spec["fairSharing"] = {"weight": quantity.format_decimal(quantity.parse(cq.fair_sharing.weight))}
    if cq.stop_policy is not None:
        spec["stopPolicy"] = cq.stop_policy
    return {
        "apiVersion": target.cluster_queue,
        "kind": "ClusterQueue",
        "metadata": _kueue_meta(cq.name),
        "spec": spec,
    }


def namespace(ns: Namespace, cluster_queue_name: str, annotations: dict[str, str] | None = None) -> Manifest:
    """The benchmark namespace, labelled for its ClusterQueue's namespaceSelector and carrying
    ``annotations`` (the default-queue annotation, :func:`aiperf_kueue.plan.submit.namespace_annotations`)."""
    labels = {**ns.labels, CLUSTER_QUEUE_LABEL: cluster_queue_name}
    meta = _meta(ns.name, labels=labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def local_queue_names(ns: Namespace) -> list[str]:
    """The LocalQueues of a namespace: its own, then ``default`` when asked for."""
    return [ns.local_queue, *([DEFAULT_LOCAL_QUEUE] if ns.default_queue else [])]


def local_queue(name: str, namespace_name: str, cluster_queue_name: str, target: KueueTarget) -> Manifest:
    """A LocalQueue in the benchmark namespace pointing at its ClusterQueue."""
    return {
        "apiVersion": target.local_queue,
        "kind": "LocalQueue",
        "metadata": _kueue_meta(name, namespace=namespace_name),
        "spec": {"clusterQueue": cluster_queue_name},
    }


def workload_priority_class(pc: PriorityClass, target: KueueTarget) -> Manifest:
    """A WorkloadPriorityClass; ``value`` and ``description`` are top-level fields."""
    manifest: Manifest = {
        "apiVersion": target.workload_priority_class,
        "kind": "WorkloadPriorityClass",
        "metadata": _kueue_meta(pc.name),
        "value": pc.value,
    }
    if pc.description:
        manifest["description"] = pc.description
    return manifest


#: The AIPerfJob CRD's group/version (aiperf NOTES §1).
AIPERF_JOB_API_VERSION = "aiperf.nvidia.com/v1alpha1"

#: ``spec`` fields the CRD freezes after creation (CEL ``oldSelf == self``): a change replaces
#: the job. Only ``cancel`` and ``timeoutSeconds`` (:data:`AIPERF_JOB_MUTABLE`) may change in place.
AIPERF_JOB_IMMUTABLE = (
    "image", "imagePullPolicy", "benchmark", "resourceMode", "connectionsPerWorker", "ttlSecondsAfterFinished",
    "resultsTtlDays", "keepFailedPods", "podTemplate", "scheduling", "schemaVersion", "sweep", "multiRun", "plot",
    "variables", "randomSeed", "noSweepTable", "skipEndpointCheck", "failurePolicy",
)  # fmt: skip

#: ``spec`` fields the CRD lets change in place: left out of the name's digest, so cancelling a
#: run or changing its timeout updates that run instead of starting a new one.
AIPERF_JOB_MUTABLE = ("cancel", "timeoutSeconds")

#: The label naming the config entry an AIPerfJob comes from (``jobs[].name``, or ``<sweep>-c<N>``):
#: every run of it, the current one and the earlier ones a spec change left behind, carries it.
JOB_LABEL = "aiperf-kueue/job"

NO_MASK: Mapping[str, str] = MappingProxyType({})


def _masked(value: Any, mask: Mapping[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: _masked(v, mask) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v, mask) for v in value]
    if isinstance(value, str):
        return mask.get(value, value)
    return value


def spec_digest(spec: Mapping[str, Any], mask: Mapping[str, str] = NO_MASK) -> str:
    """The first :data:`~aiperf_kueue.config.aiperf_spec.SPEC_DIGEST_LENGTH` hex digits of the
    SHA-256 of ``spec`` without :data:`AIPERF_JOB_MUTABLE`, as canonical JSON (sorted keys,
    compact separators): the same spec gives the same digest in every process.

    ``mask``: every string of the spec equal to one of its keys is hashed as its value instead.
    Under ``pulumi up`` it maps each decrypted ``secure:`` value to the placeholder ``plan`` shows
    for it (``[encrypted 1a2b3c4d]``), so both name the job alike and the name never depends on
    a secret's plaintext.
    """
    frozen = {k: v for k, v in spec.items() if k not in AIPERF_JOB_MUTABLE}
    text = json.dumps(_masked(frozen, mask) if mask else frozen, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:SPEC_DIGEST_LENGTH]


def job_object_name(name: str, spec: Mapping[str, Any], mask: Mapping[str, str] = NO_MASK) -> str:
    """``<name>-<digest>``: the AIPerfJob's ``metadata.name`` (and AIPerf job id).

    The CRD freezes the spec, and a job is retained when replaced (it holds the results): under
    the config name alone the replacement would meet the retained run (``AlreadyExists``). Named
    after its spec, a changed benchmark is a new run beside the earlier one; the Pulumi resource
    keeps the config name, so the change is a replace of one logical resource.
    """
    return f"{name}-{spec_digest(spec, mask)}"


def aiperf_job(
    admission: JobAdmission,
    default_image: str,
    default_priority_class: str | None,
    mask: Mapping[str, str] = NO_MASK,
    *,
    queue_name: bool = True,
) -> Manifest:
    """The AIPerfJob of one admitted entry: ``spec.scheduling`` names the queue, so AIPerf's own
    preflight checks that LocalQueue; ``spec.image`` defaults to the operator's. Named
    :func:`job_object_name` of the final spec (``mask``: see :func:`spec_digest`).

    ``queue_name`` False: no ``queueName`` (an empty ``scheduling`` at least); the operator's env
    default queue labels the JobSet. Where the operator cannot read Kueue's LocalQueues (AIPerf
    0.13.0 on Kueue >= 0.20, :mod:`aiperf_kueue.upstream.compat`) that is the only route that runs."""
    entry = admission.entry
    spec = entry.manifest_spec(admission.local_queue if queue_name else None)
    if entry.priority_class is None and default_priority_class is not None:
        spec["scheduling"]["priorityClass"] = default_priority_class
    spec.setdefault("image", default_image)
    labels = {"aiperf-kueue/cluster-queue": admission.cluster_queue, JOB_LABEL: entry.name}
    if entry.sweep is not None:
        labels["aiperf-kueue/sweep"] = entry.sweep
    return {
        "apiVersion": AIPERF_JOB_API_VERSION,
        "kind": "AIPerfJob",
        "metadata": _meta(job_object_name(entry.name, spec, mask), namespace=entry.namespace, labels=labels),
        "spec": spec,
    }
