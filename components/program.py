"""The Pulumi program: load the stack's config, build the components, export what reviewers read.

``__main__.py`` calls :func:`main`; the apply order it builds is in ``docs/operations.md``.
"""

from __future__ import annotations

import asyncio

import pulumi

from aiperf_kueue.common.errors import PROJECT
from aiperf_kueue.installs import operator_objects
from aiperf_kueue.installs import releases as installs
from aiperf_kueue.plan import manifests, submit
from aiperf_kueue.plan import multikueue_manifests as mk_manifests
from aiperf_kueue.plan.stack_plan import job_commands
from aiperf_kueue.workload.admission import JobAdmission
from components.access import BenchmarkAccess, BenchmarkAccessArgs
from components.cluster import cluster_provider
from components.installs import (
    AIPerfOperator,
    AIPerfOperatorArgs,
    JobSetInstall,
    JobSetInstallArgs,
    KueueInstall,
    KueueInstallArgs,
    with_provider_cluster,
)
from components.jobs import AIPerfJobs, AIPerfJobsArgs, JobResource
from components.multikueue import (
    KUBECONFIG_OUTPUT,
    MintedToken,
    MultiKueueManager,
    MultiKueueManagerArgs,
    MultiKueueWorker,
    MultiKueueWorkerArgs,
    WorkerCluster,
    checked_kubeconfig,
    worker_kubeconfig,
)
from components.namespace import (
    BenchmarkNamespaceArgs,
    BenchmarkNamespaces,
    BenchmarkNamespacesArgs,
    NamespaceResources,
)
from components.priorities import PriorityClasses, PriorityClassesArgs
from components.queues import KueueQueues, KueueQueuesArgs
from components.readiness import KueueReadinessGateArgs
from components.stack_config import EngineConfig, load

#: Namespaces registered before the program lets the SDK's event loop catch up (see :func:`main`).
NAMESPACE_BATCH = 100


def main() -> None:
    """Register every resource of the stack and its outputs (under ``pulumi up``, or the offline plan's mock engine)."""
    engine = EngineConfig.read()  # the only read of the engine's config: everything below is handed it
    loaded = load(engine)
    stack = loaded.plan
    config, plan, target = stack.config, stack.queues, stack.queues.target
    for warning in stack.warnings:
        pulumi.log.warn(warning)
    # One explicit provider for the stack's cluster; Pulumi.yaml disables the default one (docs/operations.md).
    cluster = cluster_provider(
        stack.cluster, loaded.source, kubeconfig_secret=engine.kubeconfig_secret, offline=engine.offline
    )
    on_cluster = pulumi.ResourceOptions(providers={"kubernetes": cluster})

    kueue_install = installs.kueue_install(config, target)  # helm, manifests, or external
    kueue = KueueInstall(
        "kueue",
        KueueInstallArgs(
            release=installs.kueue_release(config, target) if kueue_install["source"] == "helm" else None,
            gate=with_provider_cluster(
                KueueReadinessGateArgs(
                    **installs.readiness_gate(config, target), **installs.gate_cluster(stack.cluster)
                ),
                engine.provider,
                kubeconfig_secret=engine.kubeconfig_secret,
            ),
            protect=config.kueue.protect,
            manifests=kueue_install.get("manifests"),
        ),
        on_cluster,
    )
    gate: list[pulumi.Resource] = [kueue.gate]
    default_queue = submit.default_queue(config)  # the operator's env default; annotations follow it

    cluster_queues = [
        manifests.cluster_queue(cq, plan, config.queues.cohort_of(cq)) for cq in config.queues.cluster_queues
    ]
    queues_after = list(gate)
    fleet = config.multikueue
    if fleet is not None and fleet.role == "manager":
        # Every ClusterQueue dispatches through MultiKueue: each waits for the AdmissionCheck it carries.
        dispatch = MultiKueueManager(
            "multikueue",
            MultiKueueManagerArgs(
                workers=[
                    WorkerCluster(
                        cluster=mk_manifests.multikueue_cluster(w, target),
                        secret=mk_manifests.kubeconfig_secret(w, config.kueue.namespace),
                        kubeconfig=w.kubeconfig
                        if w.kubeconfig is not None
                        else worker_kubeconfig(w.name, w.stack, w.stack_reference),
                        where=f"{loaded.source}: {PROJECT}:multikueue.workers[{i}].kubeconfig"
                        if w.kubeconfig is not None
                        else f"{loaded.source}: {PROJECT}:multikueue.workers[{i}]: stack {w.stack}'s output "
                        f"{KUBECONFIG_OUTPUT}",
                    )
                    for i, w in enumerate(fleet.workers)
                ],
                multikueue_config=mk_manifests.multikueue_config(fleet, target),
                admission_check=mk_manifests.admission_check(fleet, target),
                after=gate,
                # The offline plan's values are placeholders, never decrypted: nothing to check there.
                check_kubeconfigs=not engine.offline,
            ),
            on_cluster,
        )
        cluster_queues = [mk_manifests.with_admission_check(m, fleet.admission_check, target) for m in cluster_queues]
        queues_after.append(dispatch.admission_check)
    elif fleet is not None:
        minted = (
            MintedToken(
                secret=mk_manifests.worker_token_secret(config.kueue.namespace),
                server=fleet.server,
                where=f"{loaded.source}: {PROJECT}:multikueue.server",
                offline=engine.offline,
            )
            if fleet.server is not None
            else None
        )
        worker = MultiKueueWorker(
            "multikueue",
            MultiKueueWorkerArgs(access=mk_manifests.worker_access(config.kueue.namespace), after=gate, token=minted),
            on_cluster,
        )
        if worker.kubeconfig is not None:
            pulumi.export(KUBECONFIG_OUTPUT, worker.kubeconfig)
        elif fleet.kubeconfig is not None:
            # A worker whose kubeconfig its manager's Kueue would refuse stops here, before the manager reads it.
            exported = (
                pulumi.Output.secret(fleet.kubeconfig)
                if engine.offline
                else checked_kubeconfig(fleet.kubeconfig, f"{loaded.source}: {PROJECT}:multikueue.kubeconfig")
            )
            pulumi.export(KUBECONFIG_OUTPUT, exported)

    # An installs-only stack (no `queues`) declares no flavor either: the fleet stack of the same cluster does.
    queues = (
        None
        if config.installs_only
        else KueueQueues(
            "queues",
            KueueQueuesArgs(
                flavors=[manifests.resource_flavor(p, target) for p in config.inventory.pools],
                cohorts=[manifests.cohort(name, plan, config.queues) for name in plan.cohorts],
                cluster_queues=cluster_queues,
                after=queues_after,
            ),
            on_cluster,
        )
    )
    cluster_queue_names = [cq.name for cq in config.queues.cluster_queues]

    namespace_names = [ns.name for cq in config.queues.cluster_queues for ns in cq.namespaces]
    priority_classes = (
        PriorityClasses(
            "priorities",
            PriorityClassesArgs(
                classes=[manifests.workload_priority_class(pc, target) for pc in config.priority_classes],
                after=[*gate, *(queues.cluster_queues.values() if queues else ())],
            ),
            on_cluster,
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
        jobset = JobSetInstall(
            "jobset", JobSetInstallArgs(release=jobset_release, protect_crds=config.jobset.protect_crds), on_cluster
        )
        controllers.append(jobset.chart)
        charts["jobset"] = jobset_release.as_dict()
    if config.operator.install:
        operator_release = installs.operator_release(config, namespace_names)
        env = operator_objects.operator_env(config.operator, default_queue, operator_objects.sizing_env(config))
        operator = AIPerfOperator(
            "operator",
            AIPerfOperatorArgs(
                release=operator_release,
                env_patch=operator_objects.operator_env_patch(config.operator, env),
                after=controllers,
                protect_crds=config.operator.protect_crds,
            ),
            on_cluster,
        )
        controllers += [operator.chart, operator.env_patch]  # the env patch pins what admission assumed
        charts["operator"] = operator_release.as_dict()

    # The namespaces that hold jobs, then the jobs, then every other namespace, in batches: registered from a
    # coroutine the SDK awaits before the program ends (an Output's awaitable is waited for like any registration).
    # Declared all at once, 5,000 namespaces held every registration's futures, tasks and inputs alive together
    # until the event loop drained them: `plan` peaked at 1.32 GiB. Awaiting each batch's last Namespace lets the
    # loop finish the batch first (docs/scale.md). Under `pulumi up` that waits for the Namespace's create, which
    # waits for nothing but its own API call. The program does wait for the jobs: the SDK sends a job's registration
    # only once its LocalQueue exists, and the engine works through registrations in the order they come, so jobs
    # declared after a fleet's namespaces start last. Registered first and awaited (a resource's URN resolves once
    # the engine has applied it), the first benchmark starts early in a big update (docs/scale.md).
    namespaces: dict[str, NamespaceResources] = {}
    operator_fullname = installs.operator_fullname(config.operator)
    service_accounts = operator_objects.benchmark_service_accounts(a.entry for a in stack.jobs.admissions)
    job_manifests = stack.aiperf_jobs(loaded.secret_placeholders)
    # The benchmark pods' ClusterRole goes with the namespaces that bind it: in the fleet stack, not an installs-only
    # one.
    namespace_group: BenchmarkNamespaces | None = None
    if not config.installs_only:
        access = BenchmarkAccess(
            "benchmark-access",
            BenchmarkAccessArgs(cluster_role=operator_objects.benchmark_cluster_role(operator_fullname)),
            on_cluster,
        )
        # Named "ns": its children keep the names each namespace's own component gave them before (docs/operations.md).
        namespace_group = BenchmarkNamespaces(
            "ns", BenchmarkNamespacesArgs(access=access.cluster_role, after=gate), on_cluster
        )

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

    async def register_namespaces(names: set[str]) -> None:
        """Register the benchmark namespaces in ``names``, in config order, a batch at a time."""
        if not names:
            return
        # Only a stack with queues has namespaces, and it declares both of these.
        assert queues is not None and namespace_group is not None
        for cq in config.queues.cluster_queues:
            for ns in cq.namespaces:
                if ns.name not in names:
                    continue
                namespaces[ns.name] = namespace_group.add(
                    BenchmarkNamespaceArgs(
                        namespace=manifests.namespace(ns, cq.name, submit.namespace_annotations(ns, default_queue)),
                        local_queues=[
                            manifests.local_queue(n, ns.name, cq.name, target) for n in manifests.local_queue_names(ns)
                        ],
                        cluster_queue=queues.cluster_queues[cq.name],
                        create=ns.create,
                        retain_on_delete=ns.retain_on_delete,
                        binding=operator_objects.benchmark_binding(
                            ns.name, operator_fullname, service_accounts.get(ns.name, ())
                        ),
                    ),
                )
                if len(namespaces) % NAMESPACE_BATCH == 0:
                    await namespaces[ns.name].namespace.urn.future()

    async def namespaces_and_jobs() -> int:
        """Register the namespaces with jobs, their jobs, then the other namespaces; the number of namespaces."""
        with_jobs = {a.entry.namespace for a in stack.jobs.admissions}
        await register_namespaces(with_jobs)
        if stack.jobs.admissions:
            jobs = AIPerfJobs(
                "jobs",
                AIPerfJobsArgs(
                    jobs=[job_resource(a, m) for a, m in zip(stack.jobs.admissions, job_manifests, strict=True)],
                    secret_strings=loaded.secret_strings,
                ),
                on_cluster,
            )
            # A job that fails to apply fails the update by itself (the SDK reports it); the other namespaces are
            # registered all the same, so the failure is taken as a value here.
            await asyncio.gather(*(run.urn.future() for run in jobs.runs), return_exceptions=True)
        await register_namespaces(set(namespace_names) - with_jobs)
        return len(namespaces)

    registered: pulumi.Input[int] = namespaces_and_jobs()
    pulumi.Output.from_input(registered)

    pulumi.export("cluster", stack.cluster.as_dict() if stack.cluster else None)
    pulumi.export("kueue", {"version": target.version_text, "apiVersion": target.api, **kueue_install})
    pulumi.export("charts", charts)
    pulumi.export(
        "localQueues",
        {ns.name: manifests.local_queue_names(ns) for cq in config.queues.cluster_queues for ns in cq.namespaces},
    )
    pulumi.export("quotas", plan.quota_table())
    pulumi.export("fleet", stack.fleet_table())  # a MultiKueue fleet's workers, quotas and placements; else None
    pulumi.export("pools", plan.pool_table())
    pulumi.export("shares", plan.share_table())  # percent of each pool, for reviewers
    if config.queues.cohorts:  # a Cohort tree: each level's quota, computed down from the inventory
        pulumi.export("cohorts", plan.cohort_table())
    for limits_key, limits in plan.limit_tables().items():
        pulumi.export(limits_key, limits)
    pulumi.export("jobs", stack.jobs_table(job_manifests))
    # `aiperf kube profile` arguments that submit into each namespace as the declared jobs do.
    pulumi.export("aiperfCli", stack.cli_commands())
    pulumi.export(
        "kubectl",
        {
            "clusterQueues": {cq: f"kubectl describe clusterqueue {cq}" for cq in cluster_queue_names},
            **job_commands(job_manifests),  # per job: its AIPerfJob, and every run of it
            **submit.namespace_commands(),  # one command each over every benchmark namespace
            "preemption": {
                cq: f"kubectl get clusterqueue {cq} -o jsonpath='{{.spec.preemption}}'" for cq in cluster_queue_names
            },
            "priorityClasses": "kubectl get workloadpriorityclasses",
            "kueueReady": (
                f"kubectl wait deploy/{installs.readiness_gate(config, target)['deployment']} "
                f"-n {config.kueue.namespace} --for=condition=available"
            ),
        },
    )
