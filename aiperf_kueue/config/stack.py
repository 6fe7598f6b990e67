"""The whole stack config: one model per ``aiperf-kueue:<key>``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from aiperf_kueue.config.base import Model
from aiperf_kueue.config.cluster import ClusterConfig
from aiperf_kueue.config.installs import JobSetConfig, OperatorConfig
from aiperf_kueue.config.inventory import Inventory
from aiperf_kueue.config.jobs import Job, Sweep
from aiperf_kueue.config.kueue import KueueConfig
from aiperf_kueue.config.multikueue import MultiKueue
from aiperf_kueue.config.priorities import PriorityClass
from aiperf_kueue.config.queues import Queues


class StackConfig(Model):
    """Every ``aiperf-kueue:*`` config key of one stack."""

    cluster: ClusterConfig | None = None
    """``aiperf-kueue:cluster``: the kubeconfig context this stack deploys to (default: none, which
    ``plan`` warns about and ``pulumi up`` refuses; a stack's ``kubernetes:context`` counts as naming it)."""

    kueue: KueueConfig = Field(default_factory=KueueConfig)
    """``aiperf-kueue:kueue``: the Kueue release targeted (default: 0.19.2, apiVersion auto)."""

    inventory: Inventory
    """``aiperf-kueue:inventory``: node pools (required)."""

    queues: Queues = Field(default_factory=lambda: Queues.model_construct(cluster_queues=[]))
    """``aiperf-kueue:queues``: a cohort or a Cohort tree, and the ClusterQueues. Left out, the stack is
    *installs only*: it installs Kueue, JobSet and the operator and declares no flavor, queue, namespace,
    priority class or job, which a *fleet stack* of the same cluster (``install: false``) declares. Big
    fleets split so: the charts' CRDs then stay out of every checkpoint of the fleet's ``pulumi up``
    (docs/scale.md)."""

    jobset: JobSetConfig = Field(default_factory=JobSetConfig)
    """``aiperf-kueue:jobset``: the JobSet install (default: chart 0.12.0 in ``jobset-system``)."""

    operator: OperatorConfig = Field(default_factory=OperatorConfig)
    """``aiperf-kueue:operator``: the AIPerf operator install and its Kueue defaults."""

    priority_classes: list[PriorityClass] = Field(default_factory=list)
    """``aiperf-kueue:priorityClasses``: WorkloadPriorityClasses (default none)."""

    jobs: list[Job] = Field(default_factory=list)
    """``aiperf-kueue:jobs``: AIPerfJobs, each proven admissible at plan time (default none)."""

    sweeps: list[Sweep] = Field(default_factory=list)
    """``aiperf-kueue:sweeps``: one AIPerfJob per concurrency point (default none)."""

    multikueue: MultiKueue | None = None
    """``aiperf-kueue:multikueue``: this stack's part in a MultiKueue fleet, manager or worker (default none:
    a stack of its own). A manager's ``inventory`` and a worker's ``queues`` come from the other stacks
    (``docs/multikueue.md``)."""

    warnings: Literal["allow", "error"] = "allow"
    """``aiperf-kueue:warnings``: ``allow`` (default) prints the plan's warnings and goes on;
    ``error`` makes each one a config error (``plan`` exits 2, ``pulumi up`` registers nothing),
    for stacks whose pull requests must stay warning-free."""

    @property
    def installs_only(self) -> bool:
        """Whether ``queues`` is left out: the stack installs, and declares nothing that queues work."""
        return "queues" not in self.model_fields_set


#: The config keys, as written in stack files (without the ``aiperf-kueue:`` prefix).
KEYS = tuple(field.alias or name for name, field in StackConfig.model_fields.items())


def unmanaged_namespaces(config: StackConfig) -> list[str]:
    """Namespaces Kueue's job webhooks must leave alone: system, Kueue's, JobSet's, the operator's.

    Kueue's job webhook would otherwise suspend the operator's and JobSet's own Jobs
    (or reject another chart's hook Jobs while Kueue is starting).
    """
    names = ["kube-system", config.kueue.namespace, config.jobset.namespace, config.operator.namespace]
    return list(dict.fromkeys(names))
