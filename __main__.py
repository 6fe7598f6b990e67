"""aiperf-kueue: Kueue queues sized from the GPU inventory, one LocalQueue per benchmark namespace.

Load config, build components, export. Logic lives in ``aiperf_kueue`` (pure)
and ``components`` (thin Pulumi wrappers). Order on ``pulumi up``: Kueue chart →
readiness gate → ResourceFlavors → Cohort → ClusterQueues → LocalQueues and
WorkloadPriorityClasses; JobSet chart and the gate → AIPerf operator chart → its env
patch; LocalQueue, priority class, the gate, JobSet, the operator and its env → each AIPerfJob.
"""

import pulumi

from aiperf_kueue import installs, manifests, operator_objects, submit
from aiperf_kueue.admission import JobAdmission
from aiperf_kueue.stack_plan import job_commands
from components.installs import (
    AIPerfOperator,
    AIPerfOperatorArgs,
    JobSetInstall,
    JobSetInstallArgs,
    KueueInstall,
    KueueInstallArgs,
)
from components.jobs import AIPerfJobs, AIPerfJobsArgs, JobResource
from components.namespace import BenchmarkNamespace, BenchmarkNamespaceArgs
from components.priorities import PriorityClasses, PriorityClassesArgs
from components.queues import KueueQueues, KueueQueuesArgs
from components.readiness import KueueReadinessGateArgs
from components.stack_config import load

loaded = load()
stack = loaded.plan
config, plan, target = stack.config, stack.queues, stack.queues.target
for warning in stack.warnings:
    pulumi.log.warn(warning)

kueue_install = installs.kueue_install(config, target)  # helm, manifests, or external
kueue = KueueInstall(
    "kueue",
    KueueInstallArgs(
        release=installs.kueue_release(config, target) if kueue_install["source"] == "helm" else None,
        gate=KueueReadinessGateArgs(**installs.readiness_gate(config, target)),
        protect=config.kueue.protect,
        manifests=kueue_install.get("manifests"),
    ),
)
gate: list[pulumi.Resource] = [kueue.gate]
default_queue = submit.default_queue(config)  # the operator's env default; annotations follow it

queues = KueueQueues(
    "queues",
    KueueQueuesArgs(
        flavors=[manifests.resource_flavor(p, target) for p in config.inventory.pools],
        cohort=manifests.cohort(config.queues.cohort, target) if config.queues.cohort else None,
        cluster_queues=[manifests.cluster_queue(cq, plan, config.queues.cohort) for cq in config.queues.cluster_queues],
        after=gate,
    ),
)

namespaces: dict[str, BenchmarkNamespace] = {}
operator_fullname = installs.operator_fullname(config.operator)
service_accounts = operator_objects.benchmark_service_accounts(a.entry for a in stack.jobs.admissions)
for cq in config.queues.cluster_queues:
    for ns in cq.namespaces:
        namespaces[ns.name] = BenchmarkNamespace(
            f"ns-{ns.name}",
            BenchmarkNamespaceArgs(
                namespace=manifests.namespace(ns, cq.name, submit.namespace_annotations(ns, default_queue)),
                local_queues=[
                    manifests.local_queue(n, ns.name, cq.name, target) for n in manifests.local_queue_names(ns)
                ],
                cluster_queue=queues.cluster_queues[cq.name],
                create=ns.create,
                retain_on_delete=ns.retain_on_delete,
                rbac=operator_objects.benchmark_rbac(ns.name, operator_fullname, service_accounts.get(ns.name, ())),
                after=gate,
            ),
        )

priority_classes = (
    PriorityClasses(
        "priorities",
        PriorityClassesArgs(
            classes=[manifests.workload_priority_class(pc, target) for pc in config.priority_classes],
            after=[*gate, *queues.cluster_queues.values()],
        ),
    ).classes
    if config.priority_classes
    else {}
)

charts = {}
if kueue_install["source"] == "helm":
    charts["kueue"] = installs.kueue_release(config, target).as_dict()
controllers: list[pulumi.Resource] = [*gate]
if config.jobset.install:
    jobset_release = installs.jobset_release(config)
    jobset = JobSetInstall("jobset", JobSetInstallArgs(release=jobset_release, protect_crds=config.jobset.protect_crds))
    controllers.append(jobset.chart)
    charts["jobset"] = jobset_release.as_dict()
if config.operator.install:
    operator_release = installs.operator_release(config, list(namespaces))
    env = operator_objects.operator_env(config.operator, default_queue, operator_objects.sizing_env(config))
    operator = AIPerfOperator(
        "operator",
        AIPerfOperatorArgs(
            release=operator_release,
            env_patch=operator_objects.operator_env_patch(config.operator, env),
            after=controllers,
            protect_crds=config.operator.protect_crds,
        ),
    )
    controllers += [operator.chart, operator.env_patch]  # the env patch pins what admission assumed
    charts["operator"] = operator_release.as_dict()

image = installs.operator_image(config.operator)
# Each named <name>-<digest of its spec>, secure values hashed as plan shows them (docs/operations.md).
job_manifests = stack.aiperf_jobs(loaded.secret_placeholders)


def job_resource(admission: JobAdmission, manifest: manifests.Manifest) -> JobResource:
    """The job, after its LocalQueue, its priority class, and the controllers that run it."""
    priority = manifest["spec"]["scheduling"].get("priorityClass")
    return JobResource(
        manifest=manifest,
        after=[
            namespaces[admission.entry.namespace].local_queues[admission.local_queue],
            *([priority_classes[priority]] if priority else []),
            *controllers,
        ],
        retain_on_delete=admission.entry.retain_on_delete,
    )


if stack.jobs.admissions:
    AIPerfJobs(
        "jobs",
        AIPerfJobsArgs(
            jobs=[job_resource(a, m) for a, m in zip(stack.jobs.admissions, job_manifests, strict=True)],
            secret_strings=loaded.secret_strings,
        ),
    )

pulumi.export("kueue", {"version": target.version_text, "apiVersion": target.api, **kueue_install})
pulumi.export("charts", charts)
pulumi.export("localQueues", {name: ns.local_queue_names for name, ns in namespaces.items()})
pulumi.export("quotas", plan.quota_table())
pulumi.export("pools", plan.pool_table())
pulumi.export("shares", plan.share_table())  # percent of each pool, for reviewers
for limits_key, limits in plan.limit_tables().items():
    pulumi.export(limits_key, limits)
pulumi.export("jobs", stack.jobs_table(job_manifests))
pulumi.export("preflight", stack.preflight_table(job_manifests))
# `aiperf kube profile` arguments that submit into each namespace as the declared jobs do.
pulumi.export(
    "aiperfCli",
    {
        ns.name: submit.profile_command(ns, config.operator, image, default_queue)
        for _, _, ns in submit.benchmark_namespaces(config)
    },
)
pulumi.export(
    "kubectl",
    {
        "clusterQueues": {cq: f"kubectl describe clusterqueue {cq}" for cq in queues.cluster_queue_names},
        "workloads": {ns: f"kubectl get workloads -n {ns}" for ns in namespaces},
        "localQueues": {ns: f"kubectl get localqueues -n {ns}" for ns in namespaces},
        # docs/troubleshooting.md: why a job is Queued, Failed in preflight, or never preempts.
        "describeWorkloads": {ns: f"kubectl describe workloads -n {ns}" for ns in namespaces},
        "aiperfJobs": {ns: f"kubectl get aiperfjobs -n {ns}" for ns in namespaces},
        **job_commands(job_manifests),  # per job: its AIPerfJob, and every run of it
        "namespaceAnnotations": {ns: submit.annotation_command(ns) for ns in namespaces},
        "preemption": {
            cq: f"kubectl get clusterqueue {cq} -o jsonpath='{{.spec.preemption}}'" for cq in queues.cluster_queue_names
        },
        "priorityClasses": "kubectl get workloadpriorityclasses",
        "kueueReady": (
            f"kubectl wait deploy/{installs.readiness_gate(config, target)['deployment']} "
            f"-n {config.kueue.namespace} --for=condition=available"
        ),
    },
)
