"""The aiperf-kueue CrossGuard policies: plain validation functions and their policy objects.

Run them with ``pulumi preview --policy-pack policy`` (``__main__.py`` builds the pack; only
there, because constructing a ``PolicyPack`` serves it forever). Tests call the functions,
or a policy's ``validate``, with hand-built arguments.

- ``cluster-queue-namespace-selector``: every ClusterQueue has a non-empty
  ``spec.namespaceSelector`` (Kueue reads a missing one as "no namespace" and ``{}`` as
  "every namespace"; this program always selects its own label).
- ``quota-within-inventory``: for each flavor and resource, the ClusterQueues' nominal
  quotas add up to at most what the inventory has: per pool, nodes × per-node CPU,
  memory, GPUs and extra resources (headroom is the planner's business, not the limit).
  The inventory is, in this order: the policy's config ``inventory`` (the same mapping as
  ``aiperf-kueue:inventory``, set with ``--policy-pack-config``: the cluster as its owners
  describe it), else the stack's own ``aiperf-kueue:inventory``, read from
  ``stacks/Pulumi.<stack>.yaml`` beside this pack (the stack named by the resources' URNs;
  another directory with the config ``stacksDir``) and validated with the pure
  ``aiperf_kueue`` models. No inventory found is itself a violation.
- ``aiperf-job-queue-resolves``: every AIPerfJob's ``spec.scheduling.queueName`` (else its
  ``kueue.x-k8s.io/queue-name`` label, else Kueue's ``default`` LocalQueue) is a LocalQueue
  this stack declares in the job's namespace.
- ``kubernetes-explicit-name``: every Kubernetes object declares ``metadata.name``
  (no auto-naming with a random suffix, so names stay stable and reviewable).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml
from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyResource,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pydantic import ValidationError

from aiperf_kueue.common import quantity
from aiperf_kueue.common.errors import PROJECT
from aiperf_kueue.config import Inventory
from aiperf_kueue.upstream.kueue import DEFAULT_LOCAL_QUEUE, QUEUE_NAME_LABEL

Report = Callable[..., None]
"""``report_violation(message, urn=None)``."""

#: Where the stack files are, by default: ``stacks/`` beside this policy pack.
DEFAULT_STACKS_DIR = Path(__file__).resolve().parent.parent / "stacks"

#: Kubernetes types that are not objects with a name of their own.
_NOT_OBJECTS = ("kubernetes:helm.sh/", "kubernetes:yaml/", "kubernetes:kustomize/")


def _kind_of(resource_type: str) -> str:
    return resource_type.rsplit(":", 1)[-1]


def _is_a(resource_type: str, kind: str) -> bool:
    return resource_type.startswith("kubernetes:") and _kind_of(resource_type) == kind


def _sub(mapping: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``mapping[key]`` when it is a mapping, else an empty one."""
    value = mapping.get(key)
    return value if isinstance(value, Mapping) else {}


def _meta(props: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = props.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


# --- cluster-queue-namespace-selector ---------------------------------------------------------


def check_namespace_selector(resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """Violations of one resource: a ClusterQueue without a namespaceSelector, or with ``{}``."""
    if not _is_a(resource_type, "ClusterQueue"):
        return []
    name = _meta(props).get("name", "?")
    spec = props.get("spec")
    selector = spec.get("namespaceSelector") if isinstance(spec, Mapping) else None
    if selector is None:
        return [f"ClusterQueue {name} has no spec.namespaceSelector: Kueue admits workloads from no namespace"]
    if not isinstance(selector, Mapping) or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return [
            f"ClusterQueue {name} has an empty spec.namespaceSelector: it would admit workloads from every "
            "namespace; select the benchmark namespaces (matchLabels or matchExpressions)"
        ]
    return []


def _namespace_selector(args: ResourceValidationArgs, report_violation: Report) -> None:
    for message in check_namespace_selector(args.resource_type, args.props):
        report_violation(message)


# --- kubernetes-explicit-name ------------------------------------------------------------------


def check_explicit_name(resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """Violations of one resource: a Kubernetes object without an explicit ``metadata.name``."""
    if not resource_type.startswith("kubernetes:") or resource_type.startswith(_NOT_OBJECTS):
        return []
    name = _meta(props).get("name")
    if isinstance(name, str) and name:
        return []
    return [
        f"{_kind_of(resource_type)} has no explicit metadata.name: Pulumi would auto-name it with a random "
        "suffix; set the name"
    ]


def _explicit_name(args: ResourceValidationArgs, report_violation: Report) -> None:
    for message in check_explicit_name(args.resource_type, args.props):
        report_violation(message)


# --- aiperf-job-queue-resolves -----------------------------------------------------------------


def check_job_queues(resources: Iterable[tuple[str, str, Mapping[str, Any]]]) -> list[tuple[str, str]]:
    """``(message, urn)`` for every AIPerfJob whose queue is not a LocalQueue of its namespace.

    ``resources`` are ``(type, urn, props)``.
    """
    items = list(resources)
    local_queues = {
        (_meta(props).get("namespace", "default"), _meta(props).get("name"))
        for type_, _, props in items
        if _is_a(type_, "LocalQueue")
    }
    out = []
    for type_, urn, props in items:
        if not _is_a(type_, "AIPerfJob"):
            continue
        meta = _meta(props)
        namespace, name = meta.get("namespace", "default"), meta.get("name", "?")
        spec = _sub(props, "spec")
        scheduling = _sub(spec, "scheduling")
        labels = _sub(meta, "labels")
        queue = scheduling.get("queueName") or labels.get(QUEUE_NAME_LABEL)
        if queue:
            if (namespace, queue) not in local_queues:
                out.append((f"AIPerfJob {namespace}/{name}: queue {queue!r} is not a LocalQueue in {namespace}", urn))
        elif (namespace, DEFAULT_LOCAL_QUEUE) not in local_queues:
            out.append(
                (
                    f"AIPerfJob {namespace}/{name} names no queue (spec.scheduling.queueName or label "
                    f"{QUEUE_NAME_LABEL}) and {namespace} has no {DEFAULT_LOCAL_QUEUE!r} LocalQueue",
                    urn,
                )
            )
    return out


def _triples(resources: Iterable[PolicyResource]) -> list[tuple[str, str, Mapping[str, Any]]]:
    return [(r.resource_type, r.urn, r.props) for r in resources]


def _job_queues(args: StackValidationArgs, report_violation: Report) -> None:
    for message, urn in check_job_queues(_triples(args.resources)):
        report_violation(message, urn)


# --- quota-within-inventory --------------------------------------------------------------------


def capacity(inventory: Inventory) -> dict[str, dict[str, Fraction]]:
    """Per pool (flavor), per resource: nodes × per-node allocatable; GPUs as ``gpuResource``."""
    out: dict[str, dict[str, Fraction]] = {}
    for pool in inventory.pools:
        totals = {
            "cpu": pool.nodes * quantity.parse(pool.cpu),
            "memory": pool.nodes * quantity.parse(pool.memory),
        }
        if pool.gpus:
            totals[pool.gpu_resource] = Fraction(pool.nodes * pool.gpus)
        for res, per_node in pool.extra_resources.items():
            totals[res] = pool.nodes * quantity.parse(per_node)
        out[pool.name] = totals
    return out


def handed_out(resources: Iterable[tuple[str, str, Mapping[str, Any]]]) -> dict[tuple[str, str], Fraction]:
    """``(flavor, resource)`` → the ClusterQueues' nominal quotas added up."""
    sums: dict[tuple[str, str], Fraction] = {}
    for type_, _, props in resources:
        if not _is_a(type_, "ClusterQueue"):
            continue
        spec = _sub(props, "spec")
        for group in spec.get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                for res in flavor.get("resources") or []:
                    key = (flavor["name"], res["name"])
                    sums[key] = sums.get(key, Fraction(0)) + quantity.parse(res.get("nominalQuota", 0))
    return sums


def check_quotas(
    resources: Iterable[tuple[str, str, Mapping[str, Any]]], inventory: Inventory, source: str
) -> list[str]:
    """Every flavor × resource whose ClusterQueue quotas add up to more than the inventory has."""
    have = capacity(inventory)
    out = []
    for (flavor, res), total in handed_out(resources).items():
        if flavor not in have:
            message = f"ClusterQueues give quota on flavor {flavor!r}, which is no pool of the inventory ({source})"
            if message not in out:
                out.append(message)
            continue
        limit = have[flavor].get(res, Fraction(0))
        if total > limit:
            out.append(
                f"ClusterQueues hand out {quantity.canonical(res, total)} {res} of flavor {flavor}, but the "
                f"inventory has {quantity.canonical(res, limit)} ({source})"
            )
    return out


def stack_of(urns: Iterable[str]) -> str | None:
    """``urn:pulumi:prod::aiperf-kueue::...`` → ``prod`` (the first URN that parses)."""
    for urn in urns:
        head = urn.split("::", 1)[0]
        if head.startswith("urn:pulumi:"):
            return head.removeprefix("urn:pulumi:")
    return None


def find_inventory(config: Mapping[str, Any], urns: Iterable[str]) -> tuple[Inventory, str]:
    """The inventory to check against, and where it came from; ``ValueError`` when there is none.

    The policy config's ``inventory`` first, else ``aiperf-kueue:inventory`` in
    ``<stacksDir>/Pulumi.<stack>.yaml``.
    """
    if config.get("inventory") is not None:
        return _validated(config["inventory"], "policy config 'inventory'")
    stack = stack_of(urns)
    if stack is None:
        raise ValueError("no inventory: the policy config sets none and no resource names its stack")
    stacks_dir = Path(str(config.get("stacksDir") or DEFAULT_STACKS_DIR))
    path = stacks_dir / f"Pulumi.{stack}.yaml"
    try:
        document = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"no inventory: cannot read {path}: {exc}") from None
    value = (document.get("config") or {}).get(f"{PROJECT}:inventory") if isinstance(document, dict) else None
    if value is None:
        raise ValueError(f"no inventory: {path} sets no {PROJECT}:inventory")
    return _validated(value, f"{PROJECT}:inventory in {path.name}")


def _validated(value: Any, source: str) -> tuple[Inventory, str]:
    try:
        return Inventory.model_validate(value), source
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"invalid inventory in {source}: {where}: {first['msg']}") from None


def _quota_within_inventory(args: StackValidationArgs, report_violation: Report) -> None:
    triples = _triples(args.resources)
    try:
        inventory, source = find_inventory(args.get_config(), (urn for _, urn, _ in triples))
    except ValueError as exc:
        report_violation(str(exc))
        return
    for message in check_quotas(triples, inventory, source):
        report_violation(message)


# --- the policy objects ------------------------------------------------------------------------

NAMESPACE_SELECTOR = ResourceValidationPolicy(
    name="cluster-queue-namespace-selector",
    description="Every ClusterQueue selects its namespaces: a non-empty spec.namespaceSelector.",
    validate=_namespace_selector,
    enforcement_level=EnforcementLevel.MANDATORY,
)

EXPLICIT_NAME = ResourceValidationPolicy(
    name="kubernetes-explicit-name",
    description="Every Kubernetes object carries an explicit metadata.name (no auto-naming).",
    validate=_explicit_name,
    enforcement_level=EnforcementLevel.MANDATORY,
)

JOB_QUEUES = StackValidationPolicy(
    name="aiperf-job-queue-resolves",
    description="Every AIPerfJob's queue is a LocalQueue this stack declares in the job's namespace.",
    validate=_job_queues,
    enforcement_level=EnforcementLevel.MANDATORY,
)

QUOTA_WITHIN_INVENTORY = StackValidationPolicy(
    name="quota-within-inventory",
    description="Per flavor and resource, the ClusterQueues' nominal quotas add up to at most the inventory.",
    validate=_quota_within_inventory,
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(
        properties={
            "inventory": {
                "type": "object",
                "description": "The cluster's inventory, shaped like aiperf-kueue:inventory (default: the stack's).",
            },
            "stacksDir": {
                "type": "string",
                "description": "Where Pulumi.<stack>.yaml files are (default: stacks/ beside the policy pack).",
            },
        }
    ),
)

POLICIES = [NAMESPACE_SELECTOR, EXPLICIT_NAME, JOB_QUEUES, QUOTA_WITHIN_INVENTORY]
