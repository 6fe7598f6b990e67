"""Synthetic fleets: stack config values, generated in memory, of a chosen size.

A fleet has three pools (one CPU, two GPU), several ClusterQueues in one cohort,
benchmark namespaces spread over them, and AIPerfJobs and concurrency sweeps in
those namespaces. :func:`fleet_for` picks the sizes so the number of resources the
program registers lands near a target; :func:`expected_resources` says how many
that is, exactly, and the benchmark checks it against the recorded count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Resources the program registers whatever the fleet size (prod-like installs):
#: Kueue (component, namespace, chart, readiness gate), JobSet (component, namespace,
#: chart), the operator (component, namespace, chart, Deployment patch), the queues
#: component with its cohort, the priority-classes component with its classes,
#: the AIPerfJobs component, the benchmark-access component with its ClusterRole, the namespaces
#: component, and the stack's Kubernetes provider.
_FIXED = 4 + 3 + 4 + 1 + 1 + 1 + 1 + 2 + 1 + 1
POOLS = 3
PRIORITY_CLASSES = 2
#: Per benchmark namespace: the Namespace, one LocalQueue, the RoleBinding.
PER_NAMESPACE = 3
#: Every fourth namespace also gets Kueue's ``default`` LocalQueue.
DEFAULT_QUEUE_EVERY = 4
SWEEP_POINTS = (1, 8, 32, 128)


@dataclass(frozen=True)
class FleetSize:
    """How many of each: ClusterQueues, benchmark namespaces, jobs per namespace, sweeps."""

    cluster_queues: int
    namespaces: int
    jobs_per_namespace: int
    sweeps: int

    @property
    def jobs(self) -> int:
        """AIPerfJobs declared, sweep points included."""
        return self.namespaces * self.jobs_per_namespace + self.sweeps * len(SWEEP_POINTS)


def expected_resources(size: FleetSize) -> int:
    """Resources the program registers for ``size`` (the Stack itself not counted)."""
    default_queues = len(range(0, size.namespaces, DEFAULT_QUEUE_EVERY))
    return (
        _FIXED
        + POOLS
        + PRIORITY_CLASSES
        + size.cluster_queues
        + size.namespaces * PER_NAMESPACE
        + default_queues
        + size.jobs
    )


def fleet_for(target: int) -> FleetSize:
    """Sizes whose resource count lands near ``target``: about half namespaces, half jobs."""
    cluster_queues = 3 if target < 500 else 6 if target < 5000 else 12
    sweeps = cluster_queues
    fixed = expected_resources(FleetSize(cluster_queues, 0, 0, sweeps))
    per_namespace = PER_NAMESPACE + 1 / DEFAULT_QUEUE_EVERY
    jobs_per_namespace = 2 if target < 500 else 5
    namespaces = max(cluster_queues, round((target - fixed) / (per_namespace + jobs_per_namespace)))
    return FleetSize(cluster_queues, namespaces, jobs_per_namespace, sweeps)


def _job_spec(concurrency: int) -> dict[str, Any]:
    return {
        "resourceMode": "burstable",
        "benchmark": {
            "models": ["meta-llama/Llama-3.1-8B-Instruct"],
            "endpoint": {
                "urls": ["http://llama.inference.svc:8000"],
                "type": "chat",
                "streaming": True,
                "headers": {"X-Team": "perf"},
            },
            "datasets": [{"name": "main", "type": "synthetic"}],
            "phases": [
                {"name": "warmup", "type": "concurrency", "concurrency": 8, "requests": 100},
                {"name": "profiling", "type": "concurrency", "concurrency": concurrency, "requests": 2000},
            ],
        },
        "podTemplate": {
            "env": [
                {
                    "name": "AIPERF_INJECTED_API_KEY",
                    "valueFrom": {"secretKeyRef": {"name": "llama-endpoint", "key": "api-key"}},
                }
            ]
        },
    }


def _gpu_pool(name: str, nodes: int) -> dict[str, Any]:
    taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    return {
        "name": name,
        "nodes": nodes,
        "cpu": "190",
        "memory": "1900Gi",
        "gpus": 8,
        "nodeLabels": {"node-pool": name},
        "nodeTaints": [taint],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    }


def fleet_values(size: FleetSize) -> dict[str, Any]:
    """Stack config values (key without the ``aiperf-kueue:`` prefix → value) of a fleet."""
    cqs: list[dict[str, Any]] = []
    share = 100 // size.cluster_queues
    for c in range(size.cluster_queues):
        cqs.append(
            {
                "name": f"team-{c:02d}",
                "share": share,
                "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
                "namespaces": [],
            }
        )
    jobs: list[dict[str, Any]] = []
    for n in range(size.namespaces):
        ns = f"bench-{n:05d}"
        namespace: dict[str, Any] = {"name": ns}
        if n % DEFAULT_QUEUE_EVERY == 0:
            namespace["defaultQueue"] = True
        cqs[n % size.cluster_queues]["namespaces"].append(namespace)
        for j in range(size.jobs_per_namespace):
            job: dict[str, Any] = {"name": f"run-{j:03d}", "namespace": ns, "spec": _job_spec(8 * (j + 1))}
            if j % 2 == 0:
                job["priorityClass"] = "benchmark-high"
            jobs.append(job)
    sweeps = [
        {
            "name": f"sweep-{s:03d}",
            "namespace": f"bench-{s % max(size.namespaces, 1):05d}",
            "concurrency": list(SWEEP_POINTS),
            "requestsPerConcurrency": 10,
            "spec": _job_spec(1),
        }
        for s in range(size.sweeps)
    ]
    return {
        "kueue": {"version": "0.19.2"},
        "inventory": {
            "headroom": 5,
            "pools": [
                {"name": "cpu", "nodes": 40, "cpu": "63", "memory": "250Gi", "nodeLabels": {"node-pool": "cpu"}},
                _gpu_pool("gpu-h100", 16),
                _gpu_pool("gpu-a100", 8),
            ],
        },
        "queues": {"cohort": "benchmarks", "clusterQueues": cqs},
        "priorityClasses": [
            {"name": "benchmark-high", "value": 1000, "description": "Release-gating benchmark runs"},
            {"name": "benchmark-low", "value": 100, "description": "Exploratory sweeps; preemptible"},
        ],
        "operator": {
            "chart": "oci://ghcr.io/ai-dynamo/aiperf/charts/aiperf-operator",
            "version": "0.13.0",
            "defaultPriorityClass": "benchmark-low",
        },
        "jobs": jobs,
        "sweeps": sweeps,
    }
