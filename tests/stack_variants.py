"""Stacks a user might add to ``stacks/``, generated from the committed examples.

Users keep one stack per cluster in ``stacks/``; every test parametrized over that directory must
hold for any valid stack they add, not only for the two shipped examples. These variants change
what a copy of ``dev`` or ``prod`` for another cluster most often changes: an operator managed
elsewhere (its env declared, or unknown), other operator settings (no env default queue, a default
priority class), another Kueue version, several GPU pools, a single team, a stack with queues and
no jobs yet. Each is a valid stack that plans; so are the two lab stacks (:data:`LABS`) a team might
write from scratch. The suite's stack checks run on all of them beside the committed stacks
(:data:`tests.support.CHECKED_STACKS`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

#: The config namespace of every key.
NS = "aiperf-kueue:"

Config = dict[str, Any]


def _document(stacks: Path, stack: str) -> dict[str, Any]:
    document = yaml.safe_load((stacks / f"Pulumi.{stack}.yaml").read_text())
    assert isinstance(document, dict) and isinstance(document.get("config"), dict), stack
    return document


def _operator_elsewhere(config: Config) -> None:
    # A copy of prod for a cluster whose operator another team runs: its env as `kubectl set env --list`
    # prints it (the sizes the shipped stack sets, and the default queue every namespace has).
    operator = config[NS + "operator"]
    operator.pop("sizing", None)
    operator.pop("chart", None)
    operator["install"] = False
    operator["env"] = {
        "AIPERF_K8S_JOBSET_KUEUE_DEFAULT_QUEUE_NAME": "aiperf-queue",
        "AIPERF_K8S_JOBSET_KUEUE_DEFAULT_PRIORITY_CLASS": operator.get("defaultPriorityClass", ""),
        "AIPERF_K8S_RECORDS_MANAGER_MEMORY": "512Mi",
    }


def _operator_unknown(config: Config) -> None:
    # Managed elsewhere, and nobody knows its env.
    operator = config[NS + "operator"]
    operator.pop("chart", None)
    operator["install"] = False
    operator["env"] = "unknown"


def _no_default_queue(config: Config) -> None:
    # The operator stamps no queue: jobs must name theirs (and annotated namespaces warn).
    config[NS + "operator"]["defaultQueue"] = ""


def _default_priority(config: Config) -> None:
    # A default priority class and another release name for the operator.
    config[NS + "priorityClasses"] = [{"name": "benchmark-default", "value": 10, "description": "Default"}]
    operator = config[NS + "operator"]
    operator["defaultPriorityClass"] = "benchmark-default"
    operator["releaseName"] = "bench-operator"
    operator["namespace"] = "bench-operators"


def _kueue_0_10(config: Config) -> None:
    config[NS + "kueue"] = {**config.get(NS + "kueue", {}), "version": "0.10.1", "apiVersion": "auto"}


def _gpu_pools(config: Config) -> None:
    # dev's CPU pool for the clients, then three GPU pools the one ClusterQueue shares.
    pools = config[NS + "inventory"]["pools"]
    for name, gpus in (("gpu-l40s", 4), ("gpu-h100", 8), ("gpu-a10", 1)):
        pools.append(
            {
                "name": name,
                "nodes": 2,
                "cpu": "32",
                "memory": "128Gi",
                "gpus": gpus,
                "nodeLabels": {"node-pool": name},
                "nodeTaints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            }
        )


def _one_team(config: Config) -> None:
    # prod cut to a single team: one ClusterQueue, no cohort, one namespace, the jobs moved there.
    queues = config[NS + "queues"]
    team = queues["clusterQueues"][0]
    queues.pop("cohort", None)
    for key in ("lendingLimit", "borrowingLimit"):
        team.pop(key, None)
    team["share"] = 100
    team["preemption"] = {"withinClusterQueue": "LowerPriority"}
    team["namespaces"] = [{"name": "bench-team", "defaultQueue": True}]
    queues["clusterQueues"] = [team]
    for key in ("jobs", "sweeps"):
        for entry in config.get(NS + key, []):
            entry["namespace"] = "bench-team"


def _org_tree(config: Config) -> None:
    # prod's three teams in a three-level Cohort tree: org -> product (team-a, team-b) and labs (research).
    # labs holds a tenth of the CPU pool itself (taken from research's share), may borrow at most 8 GPUs of
    # the A100 pool from the rest of org, and product weighs twice labs in fair sharing.
    queues = config[NS + "queues"]
    queues.pop("cohort", None)
    queues["cohorts"] = [
        {"name": "org"},
        {"name": "product", "parentName": "org", "fairSharing": {"weight": 2}},
        {
            "name": "labs",
            "parentName": "org",
            "share": {"cpu": 10},
            "borrowingLimit": {"gpu-a100": {"nvidia.com/gpu": 8}},
        },
    ]
    for team in queues["clusterQueues"]:
        team["cohortName"] = "labs" if team["name"] == "research" else "product"
        if team["name"] == "research":
            team["share"] = {**team["share"], "cpu": 10}
            team.pop("borrowingLimit", None)


def _queues_only(config: Config) -> None:
    # A small one-team stack that only sets up the queues: no jobs, no sweeps yet.
    config.pop(NS + "jobs", None)
    config.pop(NS + "sweeps", None)


#: name -> (the committed stack it starts from, the change).
VARIANTS: dict[str, tuple[str, Callable[[Config], None]]] = {
    "prod-operator-elsewhere": ("prod", _operator_elsewhere),
    "prod-operator-unknown": ("prod", _operator_unknown),
    "prod-no-default-queue": ("prod", _no_default_queue),
    "dev-default-priority": ("dev", _default_priority),
    "dev-kueue-0-10": ("dev", _kueue_0_10),
    "dev-gpu-pools": ("dev", _gpu_pools),
    "prod-one-team": ("prod", _one_team),
    "dev-queues-only": ("dev", _queues_only),
    "prod-org-tree": ("prod", _org_tree),
}


def variant_text(stacks: Path, name: str) -> str:
    """The stack file of variant ``name``, generated from the committed stack in ``stacks``."""
    base, change = VARIANTS[name]
    document = copy.deepcopy(_document(stacks, base))
    change(document["config"])
    header = f"# Generated by tests/stack_variants.py: {name}, from Pulumi.{base}.yaml.\n"
    return header + yaml.safe_dump(document, sort_keys=False)


def write_variants(stacks: Path, into: Path) -> list[str]:
    """Write every variant into ``into`` (a copy of stacks/), returning their names."""
    for name in VARIANTS:
        (into / f"Pulumi.{name}.yaml").write_text(variant_text(stacks, name))
    return list(VARIANTS)


#: What both lab stacks end with: one ClusterQueue, the operator's records manager sized, one smoke job.
_LAB_QUEUE_AND_JOB = """\
  aiperf-kueue:queues:
    clusterQueues:
      - name: lab
        namespaces:
          - name: bench-lab
  aiperf-kueue:operator:
    sizing:
      controller:
        # 0.13.0's 256Mi is under twice the records manager's floor: its preflight would warn.
        RECORDS_MANAGER:
          memory: 512Mi
  aiperf-kueue:jobs:
    - name: smoke
      namespace: bench-lab
      spec:
        benchmark:
          models: [mock-model]
          endpoint:
            urls: [http://mock-llm.bench-lab.svc:8000]
            type: chat
          # A mock server has no metrics to scrape.
          serverMetrics: {enabled: false}
          datasets:
            - name: main
              type: synthetic
          phases:
            - name: profiling
              type: concurrency
              concurrency: 4
              requests: 100
"""

#: A lab with only GPU nodes and one ClusterQueue that takes everything (no share needed).
LAB_GPU = (
    """\
# One GPU pool, one team: the ClusterQueue takes the whole inventory.
config:
  aiperf-kueue:cluster:
    context: kind-lab
  aiperf-kueue:inventory:
    pools:
      - name: l40s
        nodes: 2
        cpu: "64"
        memory: 256Gi
        gpus: 4
"""
    + _LAB_QUEUE_AND_JOB
)

#: The same lab with a CPU pool for the benchmark clients, opted in to "no warnings".
LAB_STRICT = (
    """\
# Warnings fail the plan here: this team keeps its stack warning-free.
config:
  aiperf-kueue:warnings: error
  aiperf-kueue:cluster:
    context: kind-lab
  aiperf-kueue:inventory:
    headroom: 5
    pools:
      - name: cpu
        nodes: 2
        cpu: "16"
        memory: 64Gi
      - name: l40s
        nodes: 2
        cpu: "64"
        memory: 256Gi
        gpus: 4
        cpuAndMemoryFor: gpuQueues
"""
    + _LAB_QUEUE_AND_JOB
)

#: Stacks a team writes for its own cluster: name -> stack file.
LABS = {"lab-gpu": LAB_GPU, "lab-strict": LAB_STRICT}


def write_added(stacks: Path, into: Path) -> list[str]:
    """Write the lab stacks and every variant of the committed stacks in ``stacks`` into ``into``,
    returning their names: the stacks the suite's stack checks run on beside the committed ones."""
    for name, text in LABS.items():
        (into / f"Pulumi.{name}.yaml").write_text(text)
    return [*LABS, *write_variants(stacks, into)]

