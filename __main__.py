"""aiperf-kueue: Kueue queues sized from the GPU inventory, one LocalQueue per benchmark namespace.

Load config, build components, export. Logic lives in ``aiperf_kueue`` (pure)
and ``components`` (thin Pulumi wrappers). Order on ``pulumi up``: Kueue chart →
readiness gate → ResourceFlavors → Cohort → ClusterQueues → LocalQueues and
WorkloadPriorityClasses; JobSet chart and the gate → AIPerf operator chart → its env
patch; LocalQueue, priority class, the gate, JobSet, the operator and its env → each AIPerfJob.
"""

from components.program import main

main()
