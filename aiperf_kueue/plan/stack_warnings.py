"""Warnings about a valid stack that would still surprise its users, each with its fix.

- Benchmark pods on GPU nodes: AIPerf's controller and worker pods request no GPU, and Kueue
  gives a podSet the first flavor with room for it, GPU or not. A ClusterQueue whose CPU and
  memory exist only in GPU flavors puts every benchmark client next to the model under test.
- Borrowing without reclaim: in a cohort where no member may reclaim
  (``preemption.reclaimWithinCohort`` Never or unset everywhere), what a member lends is held by
  the borrower's jobs until they finish, so no member's nominal quota is guaranteed.
- An AIPerf image without a pinned tag: pod sizing is baked into the image and differs between
  releases, so ``:latest`` (or no tag) makes the admission proof a guess.

Pure: reads the config, the quota plan and the jobs' flavor assignments.
"""

from __future__ import annotations

from aiperf_kueue.common.errors import key_path
from aiperf_kueue.config import StackConfig
from aiperf_kueue.config.installs import UNKNOWN
from aiperf_kueue.queues.queue_plan import QueuePlan
from aiperf_kueue.upstream.aiperf_release import DEFAULT_VERSION
from aiperf_kueue.workload.admission import JobsReport
from aiperf_kueue.workload.flavor_assigner import Flavors
from aiperf_kueue.workload.placement import Placement

#: Preemption policies under which a ClusterQueue takes lent quota back.
RECLAIMING = ("LowerPriority", "Any")


def stack_warnings(config: StackConfig, queues: QueuePlan, jobs: JobsReport) -> list[str]:
    """Every warning of this module, in config order: ClusterQueues, then jobs, then images."""
    gpu_only = _queues_on_gpu_flavors_only(config, queues)
    return [
        *gpu_only.values(),
        *_jobs_on_gpu_flavors(config, queues, jobs, set(gpu_only)),
        *_cohort_without_reclaim(config, queues),
        *_unpinned_images(config, jobs),
    ]


def _gpu_pools(config: StackConfig) -> set[str]:
    return {p.name for p in config.inventory.pools if p.gpus}


def _cpu_memory_flavors(config: StackConfig, queues: QueuePlan, cq: str) -> list[str]:
    """Flavors where ``cq`` can hold cpu and memory (own or borrowed) and a pod without
    tolerations or node selectors may go (an AIPerf pod as the operator makes it by default)."""
    skipped = Flavors.of(config, queues.target).skipped(Placement())
    return [
        pool.name
        for pool in queues.pools
        if pool.name not in skipped and all(queues.max_capacity(cq, pool.name, r) > 0 for r in ("cpu", "memory"))
    ]


def _fix_for_cpu_pods(config: StackConfig, cq: str) -> str:
    cpu_pools = [p.name for p in config.inventory.pools if not p.gpus]
    if cpu_pools:
        return (
            f"give ClusterQueue {cq!r} a share (or nominalQuota) of CPU-only pool "
            f"{' or '.join(repr(p) for p in cpu_pools)}"
        )
    return f"add a CPU-only pool to inventory.pools (first in the list) and give ClusterQueue {cq!r} a share of it"


def _queues_on_gpu_flavors_only(config: StackConfig, queues: QueuePlan) -> dict[str, str]:
    """ClusterQueue name → warning, for those serving namespaces whose CPU-only pods fit only GPU flavors."""
    gpu = _gpu_pools(config)
    out: dict[str, str] = {}
    for i, cq in enumerate(config.queues.cluster_queues):
        if not cq.namespaces:
            continue  # nothing is submitted to it (warned elsewhere)
        flavors = _cpu_memory_flavors(config, queues, cq.name)
        if flavors and all(f in gpu for f in flavors):
            out[cq.name] = (
                f"{key_path('queues', 'clusterQueues', i)}: ClusterQueue {cq.name!r} can place CPU-only pods (every "
                f"AIPerf controller and worker) only on GPU flavor{'s' if len(flavors) > 1 else ''} "
                f"{', '.join(flavors)}, next to the models under test; fix: {_fix_for_cpu_pods(config, cq.name)}, "
                "and keep GPU pools' CPU and memory for the queues that run GPU work there with the pool's "
                "cpuAndMemoryFor: gpuQueues"
            )
    return out


def _jobs_on_gpu_flavors(config: StackConfig, queues: QueuePlan, jobs: JobsReport, warned: set[str]) -> list[str]:
    """Declared jobs that request no GPU but land on a GPU flavor (their ClusterQueue not already warned): because
    the CPU-only flavors listed before it are too small for the job, or because the GPU pool is listed before a
    CPU-only pool that could hold it (Kueue takes the first flavor that fits)."""
    gpu = _gpu_pools(config)
    gpu_resources = {p.gpu_resource for p in config.inventory.pools if p.gpus}
    out = []
    for admission in jobs.admissions:
        placed = admission.assignment
        if admission.cluster_queue in warned or not placed.fits or gpu_resources & set(placed.requests):
            continue
        on_gpu = [f for f in placed.flavors if f in gpu]
        if not on_gpu:
            continue
        entry = admission.entry
        cq = admission.cluster_queue
        names = [p.name for p in config.inventory.pools]
        first_gpu = min(names.index(f) for f in on_gpu)
        later = [
            name
            for name in names[first_gpu + 1 :]
            if name not in gpu
            and all(queues.max_capacity(cq, name, r) >= a for r, a in placed.requests.items() if a)
        ]
        if later:
            out.append(
                f"{key_path(*entry.origin)}: {entry.name}: requests no GPU but lands on GPU flavor "
                f"{', '.join(on_gpu)} (ClusterQueue {cq!r} has room for it on CPU-only flavor {later[0]}, but Kueue "
                f"tries flavors in pool order and takes the first that fits), next to the models under test; fix: "
                f"list CPU-only pools first in inventory.pools"
            )
            continue
        out.append(
            f"{key_path(*entry.origin)}: {entry.name}: requests no GPU but lands on GPU flavor "
            f"{', '.join(on_gpu)} (ClusterQueue {cq!r} has no room for it on any CPU-only "
            f"flavor), next to the models under test; fix: "
            f"{_fix_for_cpu_pods(config, cq)} large enough for the job"
        )
    return out


def _cohort_without_reclaim(config: StackConfig, queues: QueuePlan) -> list[str]:
    """Cohort members that lend or borrow while no member of their cohort tree can reclaim lent quota."""
    # Reclaim works across a whole tree (Kueue preempts borrowers anywhere under the root), so the
    # question is asked per tree: one flat cohort is a tree of one.
    trees: dict[str, list[int]] = {}
    for i, cq in enumerate(config.queues.cluster_queues):
        if queues.in_cohort(cq.name):
            trees.setdefault(queues.root(cq.name), []).append(i)
    out = []
    for root, members in trees.items():
        out += _tree_without_reclaim(config, queues, root, members)
    return out


def _tree_without_reclaim(config: StackConfig, queues: QueuePlan, root: str, members: list[int]) -> list[str]:
    all_cqs = config.queues.cluster_queues
    cqs = [all_cqs[i] for i in members]
    if len(cqs) < 2:
        return []
    if any(cq.preemption is not None and cq.preemption.reclaim_within_cohort in RECLAIMING for cq in cqs):
        return []
    cells = [(p.name, r) for p in queues.pools for r in queues.covered_resources]

    submitting = {cq.name for cq in cqs if cq.namespaces}  # a queue without namespaces never borrows

    def borrows(name: str, cell: tuple[str, str]) -> bool:
        own = queues.nominal.get(name, {}).get(cell[0], {}).get(cell[1], 0)
        return name in submitting and queues.max_capacity(name, *cell) > own

    def lends(name: str, cell: tuple[str, str]) -> bool:
        own = queues.nominal.get(name, {}).get(cell[0], {}).get(cell[1], 0)
        limit = queues.lending.get(name, {}).get(cell[0], {}).get(cell[1], own)
        return min(own, limit) > 0 and any(borrows(o.name, cell) for o in cqs if o.name != name)

    out = []
    for i, cq in zip(members, cqs, strict=True):
        cohort = queues.parents[cq.name]
        tree = "" if cohort == root else f" (in the tree of {root!r})"
        does = [
            verb
            for verb, test in (("lends to", lends), ("borrows from", borrows))
            if any(test(cq.name, cell) for cell in cells)
        ]
        if not does:
            continue
        whose = "the cohort tree" if tree else "the cohort"
        out.append(
            f"{key_path('queues', 'clusterQueues', i)}: ClusterQueue {cq.name!r} {' and '.join(does)} cohort "
            f"{cohort!r}{tree}, but no member of {whose} can reclaim (preemption.reclaimWithinCohort is Never or "
            "unset everywhere): lent quota stays with the borrower's jobs until they finish, so nominal quota is not "
            "guaranteed; fix: set preemption.reclaimWithinCohort: Any (or LowerPriority) on each member that lends, "
            "so it can take its quota back, or stop the sharing with lendingLimit / borrowingLimit 0"
        )
    return out


def unpinned(image: str) -> bool:
    """Whether ``image`` has no tag and no digest, or the tag ``latest``."""
    if "@" in image:
        return False
    name = image.rsplit("/", 1)[-1]
    tag = name.partition(":")[2]
    return tag in ("", "latest")


def _unpinned_images(config: StackConfig, jobs: JobsReport) -> list[str]:
    """The operator's image, and each job's ``spec.image``, when ``:latest`` or untagged."""
    why = (
        "pod sizing is baked into the AIPerf image and differs between releases, so the admission proof and the "
        "operator's AIPERF_K8S_* sizing assume a release this tag does not pin"
    )
    out = []
    op = config.operator
    # A known aiperfVersion already warns of any other tag, latest included (stack_plan), so only an
    # operator of unknown release is checked here.
    if op.aiperf_version == UNKNOWN and unpinned(f"{op.image.repository}:{op.image_tag}"):
        out.append(
            f"operator.image.tag: {op.image_tag or '(empty)'!s} does not pin an AIPerf release: {why}; fix: set the "
            f"tag of the release the operator runs (such as {DEFAULT_VERSION}) and declare it in operator.aiperfVersion"
        )
    seen: set[tuple[str | int, ...]] = set()  # a sweep's points share its spec: one warning
    for admission in jobs.admissions:
        entry = admission.entry
        given = entry.spec.image
        if given is not None and unpinned(given) and entry.origin not in seen:
            seen.add(entry.origin)
            name = entry.sweep or entry.name
            out.append(
                f"{key_path(*entry.origin, 'spec', 'image')}: {name}: {given!r} does not pin an AIPerf "
                f"release: {why}; fix: name a release tag (or leave spec.image out to use operator.image)"
            )
    return out
