"""AIPerf's preflight checks of a job itself, decided from the stack: the operator's own
verdicts on its image, its nodes and its memory, with its messages.

Upstream: aiperf 0.13.0 aiperf/operator/preflight/_common.py, aiperf/kubernetes/memory_estimator.py

The operator runs 19 checks before it creates anything (``operator/preflight/``); a FAIL fails
the AIPerfJob (``status.error "Pre-flight failed: <check>: <message>"``), a WARN is recorded on
it. The stack decides these, and the plan predicts them: "Image Reference" (WARN), "Node
Selector Match" and "Per-Node Schedulability" against the pools' nodes (FAIL), and the
"Memory Estimation" WARNs that are certain. "Kueue Queue" is :mod:`aiperf_kueue.plan.preflight`'s;
"Dry Run" fails where the JobSet cannot be built (:mod:`aiperf_kueue.workload.job_shape`). The others
read the live cluster (free capacity, quotas, secrets, RBAC, DNS, PSA) and are not predicted.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from aiperf_kueue.common import quantity
from aiperf_kueue.common.errors import Problem, key_path
from aiperf_kueue.config import Pool, StackConfig
from aiperf_kueue.config.aiperf_benchmark import telemetry_enabled
from aiperf_kueue.config.aiperf_spec import AIPerfJobSpec
from aiperf_kueue.plan.preflight import Outcome
from aiperf_kueue.workload.admission import JobAdmission, quoted
from aiperf_kueue.workload.sizing import Sizing

#: Registries the operator's "Image Reference" check treats as public (``operator/preflight/_common.py``).
PUBLIC_REGISTRIES = frozenset({"docker.io", "registry-1.docker.io", "ghcr.io", "quay.io", "nvcr.io", "registry.k8s.io"})


def image_reference(image: str, has_pull_secrets: bool) -> Outcome:
    """The operator's "Image Reference" check: WARN for an implicit ``latest`` tag, or a registry
    outside :data:`PUBLIC_REGISTRIES` without ``imagePullSecrets``."""
    rest, _, digest = image.rpartition("@") if "@" in image else (image, "", "")
    tag = ""
    if ":" in rest.split("/")[-1]:
        rest, tag = rest.rsplit(":", 1)
    parts = rest.split("/")
    registry = "docker.io" if len(parts) == 1 or ("." not in parts[0] and ":" not in parts[0]) else parts[0]
    problems = []
    if not tag and not digest:
        problems.append("Image uses implicit 'latest' tag which may cause inconsistent deployments")
    if registry not in PUBLIC_REGISTRIES and not has_pull_secrets:
        problems.append(f"Registry '{registry}' may require authentication but no imagePullSecrets configured")
    if problems:
        return Outcome(
            "WARN",
            f"Image '{image}': {'; '.join(problems)}",
            "pin a tag or digest, and give podTemplate.imagePullSecrets for a private registry",
        )
    return Outcome("PASS", f"Image '{image}' reference is valid")


def _cores(text: str) -> float:
    # kubernetes/utils.py parse_cpu, as the check reads node allocatable and the sizing env.
    if not text or text == "0":
        return 0.0
    scale = {"n": 1e-9, "u": 1e-6, "m": 1e-3}.get(text[-1])
    return float(text[:-1]) * scale if scale is not None else float(text)


def _gib(text: str) -> float:
    return parse_memory_mib_float(text) / 1024


def parse_memory_mib_float(text: str) -> float:
    """Memory text → MiB as a float, as ``parse_memory_bytes`` reads it."""
    value = text.strip()
    if not value or value == "0":
        return 0.0
    for suffix, multiplier in (
        ("Ki", 1024), ("Mi", 1024**2), ("Gi", 1024**3), ("Ti", 1024**4), ("Pi", 1024**5), ("Ei", 1024**6),
        ("k", 1000), ("K", 1000), ("M", 1000**2), ("G", 1000**3), ("T", 1000**4), ("P", 1000**5), ("E", 1000**6),
    ):  # fmt: skip
        if value.endswith(suffix):
            return float(value[: -len(suffix)]) * multiplier / 1024**2
    return float(value) / 1024**2


def _cpu_text(cores: float) -> str:
    return f"{int(cores * 1000)}m" if cores < 1 else f"{cores:.1f}"


def _memory_text(gib: float) -> str:
    return f"{int(gib * 1024)}Mi" if gib < 1 else f"{gib:.1f}Gi"


def per_node_schedulability(spec: AIPerfJobSpec, sizing: Sizing, pools: Sequence[Pool]) -> Outcome:
    """The operator's "Per-Node Schedulability" check against the stack's nodes (the pools, each
    node empty): FAIL when no node the pod template may use (its nodeSelector, its tolerations of
    NoSchedule/NoExecute taints) has the allocatable of the larger of the controller pod (all its
    possible containers) and the worker pod, as the operator's env sizes them."""
    if (spec.resource_mode or sizing.release.resource_mode) == "none":
        return Outcome("SKIP", "Skipped because spec.resourceMode=none omits controller/worker CPU and memory")
    ctrl_cpu = sum(_cores(s.cpu) for s in sizing.controller.values())
    ctrl_mem = sum(_gib(s.memory) for s in sizing.controller.values())
    need_cpu = max(ctrl_cpu, _cores(sizing.worker_pod.cpu))
    need_mem = max(ctrl_mem, _gib(sizing.worker_pod.memory))
    template = spec.pod_template
    selector = (template.node_selector if template else None) or {}
    tolerations = (template.tolerations if template else None) or []
    usable = [
        pool
        for pool in pools
        if all(pool.node_labels.get(k) == v for k, v in selector.items())
        and all(_tolerated(t.key, t.effect, tolerations) for t in pool.node_taints if t.effect != "PreferNoSchedule")
    ]
    # A node's allocatable as the API server hands it over (canonical: "8", "7500m", "1k"), read
    # exactly: the operator's float parse covers the forms its own env takes, not every quantity.
    if any(
        float(quantity.parse(p.cpu)) >= need_cpu and float(quantity.parse(p.memory)) / 2**30 >= need_mem for p in usable
    ):
        return Outcome("PASS", "At least one node can fit the largest pod")
    fix = (
        "give the pools bigger nodes (inventory.pools[].cpu/memory), or shrink operator.sizing.workerPod and the "
        "controller containers"
        if usable
        else "every pool's nodes are excluded by a NoSchedule/NoExecute taint the pod template does not tolerate "
        "or by its nodeSelector; the operator checks spec.podTemplate's own tolerations, not the ones Kueue adds "
        "for a flavor, so add the pool's tolerations to spec.podTemplate.tolerations"
    )
    return Outcome(
        "FAIL",
        f"No single node can fit the largest pod ({_cpu_text(need_cpu)} CPU, {_memory_text(need_mem)} mem). "
        "Add larger nodes or reduce pod resource requirements.",
        fix,
    )


def node_selector_match(spec: AIPerfJobSpec, pools: Sequence[Pool]) -> Outcome:
    """The operator's "Node Selector Match" check: FAIL when ``podTemplate.nodeSelector`` matches
    no node of the pools (by labels alone)."""
    selector = (spec.pod_template.node_selector if spec.pod_template else None) or {}
    if not selector:
        return Outcome("SKIP", "No nodeSelector specified")
    if any(all(pool.node_labels.get(k) == v for k, v in selector.items()) for pool in pools):
        return Outcome("PASS", "node(s) match nodeSelector")
    text = ", ".join(f"{k}={v}" for k, v in selector.items())
    return Outcome(
        "FAIL",
        f"No node matches nodeSelector {{{text}}}. Label nodes with: kubectl label node <name> {text}",
        "select labels of a pool (inventory.pools[].nodeLabels), or drop the nodeSelector",
    )


def _tolerated(key: str, effect: str, tolerations: Sequence[Any]) -> bool:
    # The check's loose matching (_toleration_matches_taint): key and effect, never the value.
    for t in tolerations:
        if not isinstance(t, dict):
            continue
        op, t_key, t_effect = t.get("operator") or "Equal", t.get("key") or "", t.get("effect") or ""
        if ((op == "Exists" and not t_key) or t_key == key) and (not t_effect or t_effect == effect):
            return True
    return False


def job_problems_and_warnings(
    admissions: Sequence[JobAdmission],
    config: StackConfig,
    sizing: Sizing,
    default_image: str,
    *,
    node_checks: bool = True,
) -> tuple[list[Problem], list[str]]:
    """The operator's checks of each job against the stack's nodes and image: a FAIL is a
    problem at the job's key carrying the operator's ``status.error``, a WARN a plan warning.
    ``node_checks`` False: on a MultiKueue manager the operator checks the manager's own nodes, which its
    inventory (its workers' pools) does not describe; :func:`aiperf_kueue.plan.fleet.dispatched_job_warning`
    says so instead."""
    problems: list[Problem] = []
    warnings: list[str] = []
    for a in admissions:
        entry, spec = a.entry, a.entry.spec
        label = f"{key_path(*entry.origin)} {entry.name}"
        # Neither check reads the concurrency: a sweep's points fail alike, said once for the sweep.
        what = "every AIPerfJob of the sweep" if entry.sweep else "the AIPerfJob"
        failed = [
            (check, outcome)
            for check, outcome in (
                ("Node Selector Match", node_selector_match(spec, config.inventory.pools)),
                ("Per-Node Schedulability", per_node_schedulability(spec, sizing, config.inventory.pools)),
            )
            if node_checks and outcome.status == "FAIL"
        ]
        if failed:
            # The operator joins its failed checks with "; " in the order they finish, which varies.
            error = "Pre-flight failed: " + "; ".join(f"{check}: {outcome.message}" for check, outcome in failed)
            fixes = "; ".join(str(outcome.fix) for _, outcome in failed)
            problems.append(
                Problem(
                    key_path(*entry.origin),
                    f"{entry.sweep or entry.name}: AIPerf {sizing.version} would fail {what} (status.error "
                    f"{quoted(error)}); {fixes}",
                )
            )
        pull = bool(spec.pod_template and spec.pod_template.image_pull_secrets)
        image = image_reference(spec.image or default_image, pull)
        if image.status == "WARN":
            warnings.append(f'{label}: AIPerf preflight WARN "Image Reference": "{image.message}" Fix: {image.fix}')
    return list(dict.fromkeys(problems)), list(dict.fromkeys(warnings))


#: The records manager's memory before it stores a single request (``_memory_estimator``:
#: Python subprocess 150 MiB + service 40 MiB), and the share of its limit above which the
#: operator's "Memory Estimation" check WARNs.
RECORDS_MANAGER_FLOOR_MIB = 190
RECORDS_MANAGER_WARN_SHARE = Fraction(1, 2)


def _discovery_on(server_metrics: Any) -> bool:
    """Whether AIPerf's server-metrics Kubernetes discovery is on (enabled, discovery mode not ``disabled``)."""
    if not telemetry_enabled(server_metrics):
        return False
    discovery = server_metrics.get("discovery") if isinstance(server_metrics, dict) else None
    return not (isinstance(discovery, dict) and discovery.get("mode") == "disabled")


def memory_estimation_warnings(admissions: Sequence[JobAdmission], sizing: Sizing) -> list[str]:
    """The operator's "Memory Estimation" WARN where it is certain, for the jobs that request
    resources (it skips the others): server-metrics discovery left on, which its estimate
    cannot bound, and a records manager whose floor alone is over half its
    ``AIPERF_K8S_RECORDS_MANAGER_MEMORY``. The estimate also grows with requests and tokens;
    those warnings need AIPerf's own estimator and are not predicted."""
    sized = [a.entry for a in admissions if a.shape.resource_mode != "none"]
    out = []
    discovering = list(
        dict.fromkeys(
            f"{key_path(*e.origin)} {e.sweep or e.name}"
            for e in sized
            if _discovery_on(e.spec.benchmark.server_metrics)
        )
    )
    if discovering:
        out.append(
            f'{", ".join(discovering)}: AIPerf {sizing.version}\'s preflight WARNs "Memory Estimation" ("OOM risk '
            'detected: Server metrics Kubernetes discovery may add endpoints beyond this estimate. ..."): '
            "server-metrics discovery is on (AIPerf's default). Fix: list the endpoints in "
            "benchmark.serverMetrics.urls with discovery: {mode: disabled}, or serverMetrics: {enabled: false}"
        )
    memory = sizing.controller["RECORDS_MANAGER"].memory
    limit = parse_memory_mib_float(memory)
    if sized and limit > 0 and RECORDS_MANAGER_WARN_SHARE * Fraction(limit) < RECORDS_MANAGER_FLOOR_MIB:
        out.append(
            f"operator.sizing.controller.RECORDS_MANAGER: AIPerf {sizing.version}'s preflight WARNs \"Memory "
            f'Estimation" ("OOM risk detected: RecordsManager uses ... of its container limit") for every job: '
            f"the records manager needs at least {RECORDS_MANAGER_FLOOR_MIB}Mi before it stores a request, over half "
            f"of its {memory}. Fix: set operator.sizing.controller.RECORDS_MANAGER.memory to "
            f"{2 * RECORDS_MANAGER_FLOOR_MIB}Mi or more (the controller pod, and what Kueue charges, grow with it)"
        )
    return out
