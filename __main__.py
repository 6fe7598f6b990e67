"""aiperf-kueue: Kueue queues sized from the GPU inventory, one LocalQueue per benchmark namespace.

Load config, build components, export. Logic lives in ``aiperf_kueue`` (pure)
and ``components`` (thin Pulumi wrappers).
"""

import pulumi

from aiperf_kueue import manifests
from components.namespace import BenchmarkNamespace, BenchmarkNamespaceArgs
from components.priorities import PriorityClasses, PriorityClassesArgs
from components.queues import KueueQueues, KueueQueuesArgs
from components.stack_config import load

config, plan = load()
for warning in plan.warnings:
    pulumi.log.warn(warning)

target = plan.target
queues = KueueQueues(
    "queues",
    KueueQueuesArgs(
        flavors=[manifests.resource_flavor(p, target) for p in config.inventory.pools],
        cohort=manifests.cohort(config.queues.cohort, target) if config.queues.cohort else None,
        cluster_queues=[manifests.cluster_queue(cq, plan, config.queues.cohort) for cq in config.queues.cluster_queues],
    ),
)

local_queues: dict[str, list[str]] = {}
for cq in config.queues.cluster_queues:
    for ns in cq.namespaces:
        component = BenchmarkNamespace(
            f"ns-{ns.name}",
            BenchmarkNamespaceArgs(
                namespace=manifests.namespace(ns, cq.name),
                local_queues=[
                    manifests.local_queue(n, ns.name, cq.name, target) for n in manifests.local_queue_names(ns)
                ],
                cluster_queue=queues.cluster_queues[cq.name],
                create=ns.create,
                retain_on_delete=ns.retain_on_delete,
            ),
        )
        local_queues[ns.name] = component.local_queue_names

if config.priority_classes:
    PriorityClasses(
        "priorities",
        PriorityClassesArgs([manifests.workload_priority_class(pc, target) for pc in config.priority_classes]),
    )

pulumi.export("kueue", {"version": target.version_text, "apiVersion": target.api})
pulumi.export("localQueues", local_queues)
pulumi.export("quotas", plan.quota_table())
pulumi.export("pools", plan.pool_table())
pulumi.export(
    "kubectl",
    {
        "clusterQueues": {cq: f"kubectl describe clusterqueue {cq}" for cq in queues.cluster_queue_names},
        "workloads": {ns: f"kubectl get workloads -n {ns}" for ns in local_queues},
        "localQueues": {ns: f"kubectl get localqueues -n {ns}" for ns in local_queues},
    },
)
