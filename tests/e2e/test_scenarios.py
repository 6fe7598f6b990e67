"""Scenarios on the living cluster: each a timeline of stack revisions, each revision applied by the real engine.

``make e2e`` runs the project's own scenarios (``tests/e2e/scenarios/``) and asserts what each must show;
``make e2e SCENARIOS="dir ..."`` runs other scenarios (checked by :mod:`tests.e2e.scenario` before any cluster
starts) and writes their records, asserting only that every step settled. Records:
``out/e2e/scenarios/<scenario>/<NN>.json``; the summary table prints them per step.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from aiperf_kueue.installs.cluster import NO_CLUSTER_WARNING
from tests.e2e.conftest import BUILD, JOBSET_MODULE, KUEUE_MODULE, OUT, ROOT, Report
from tests.e2e.predict import prediction_differences
from tests.e2e.scenario import load_scenario, run_keys
from tests.e2e.scenario_run import OPERATOR_LOOK_SECONDS, ScenarioResult, run_scenario, unexpected_phases
from tests.e2e.stackrun import load_plan

OWN = ROOT / "tests" / "e2e" / "scenarios"


def scenario_dirs() -> list[Path]:
    """``SCENARIOS`` from ``make e2e`` (directories, relative to the repository), else the project's own."""
    given = os.environ.get("AIPERF_KUEUE_E2E_SCENARIOS", "").split()
    if given:
        return [(ROOT / g).resolve() for g in given]
    found = sorted(p for p in OWN.iterdir() if (p / "scenario.yaml").is_file())
    assert found, f"no scenario in {OWN}"
    return found


#: Resolved once, at collection: ``pulumi up`` runs the program in-process, and the program changes directory.
SCENARIO_DIRS = scenario_dirs()


def outcome(record: dict[str, Any]) -> tuple[Any, ...]:
    """What a scenario asserts of a job: admitted, ClusterQueue, preemptions and by whom, eviction reasons,
    finished, pods Running and Succeeded."""
    return (
        record["admitted"], record["clusterQueue"], record["preemptedCount"], record["preemptionReason"],
        tuple(record["evictionReasons"]),
        record["finished"], record["podsRunning"], record["podsSucceeded"],
    )


#: Per scenario, per step, per job: outcome() as the step's record must show it:
#: (admitted, clusterQueue, preemptedCount, preemptionReason, evictionReasons, finished, podsRunning, podsSucceeded).
EXPECTED: dict[str, dict[str, dict[str, tuple[Any, ...]]]] = {
    # The one node holds one benchmark. `second` waits for quota while `first` runs; `first` completes after its
    # 30 s (its JobSet succeeds when the controller's Job does, JobSet then removes the worker's pod), Kueue marks
    # its Workload Finished and releases the quota, and `second` is admitted and runs.
    "completion-frees-quota": {
        "01-first": {"first": (True, "benchmarks", 0, None, (), False, 2, 0)},
        "02-second": {
            "first": (True, "benchmarks", 0, None, (), True, 0, 1),
            "second": (True, "benchmarks", 0, None, (), False, 2, 0),
        },
    },
    # withinClusterQueue: LowerPriority: `high` preempts `low`, which is requeued and waits (no pods left).
    "priority-preemption": {
        "01-low": {"low": (True, "benchmarks", 0, None, (), False, 2, 0)},
        "02-high": {
            "high": (True, "benchmarks", 0, None, (), False, 2, 0),
            "low": (False, None, 1, "InClusterQueue", ("Preempted",), False, 0, 0),
        },
    },
    # `a2` borrows team-b's idle half; when team-b's `b1` arrives, reclaimWithinCohort: Any preempts the borrower
    # (not `a1`, which runs on team-a's own quota), and `b1` runs on team-b's.
    "cohort-reclaim": {
        "01-a1": {"a1": (True, "team-a", 0, None, (), False, 2, 0)},
        "02-a2": {
            "a1": (True, "team-a", 0, None, (), False, 2, 0),
            "a2": (True, "team-a", 0, None, (), False, 2, 0),
        },
        "03-b1": {
            "a1": (True, "team-a", 0, None, (), False, 2, 0),
            "a2": (False, None, 1, "InCohortReclamation", ("Preempted",), False, 0, 0),
            "b1": (True, "team-b", 0, None, (), False, 2, 0),
        },
    },
    # The same reclaim through a three-level Cohort tree (org -> dept-x, dept-y -> team-a, team-c): `a2` borrows
    # team-c's idle half, lent up dept-y to org and down dept-x; team-c's `c1` reclaims it across the departments.
    "cohort-tree-reclaim": {
        "01-a1": {"a1": (True, "team-a", 0, None, (), False, 2, 0)},
        "02-a2": {
            "a1": (True, "team-a", 0, None, (), False, 2, 0),
            "a2": (True, "team-a", 0, None, (), False, 2, 0),
        },
        "03-c1": {
            "a1": (True, "team-a", 0, None, (), False, 2, 0),
            "a2": (False, None, 1, "InCohortReclamation", ("Preempted",), False, 0, 0),
            "c1": (True, "team-c", 0, None, (), False, 2, 0),
        },
    },
    # Five warnings of the plan, come true (PLAN_WARNINGS): nothing reclaims the quarter `a2` borrowed from team-b,
    # so team-b's `b1` waits and `a2` keeps running; `s2` (p-y) neither preempts nor passes `s1` (p-x, same value);
    # `held` (stopPolicy Hold) admits nothing; `n1` (resourceMode none) is admitted at once in a team-b whose quota
    # is all lent, and its pods run; `g1`, CPU-only, runs on the GPU flavor, the only one gpu-team has.
    "warnings-come-true": {
        "01-fill": {
            "a1": (True, "team-a", 0, None, (), False, 2, 0),
            "a2": (True, "team-a", 0, None, (), False, 2, 0),
            "g1": (True, "gpu-team", 0, None, (), False, 2, 0),
            "h1": (False, None, 0, None, (), False, 0, 0),
            "s1": (True, "solo", 0, None, (), False, 2, 0),
        },
        "02-more": {
            "a1": (True, "team-a", 0, None, (), False, 2, 0),
            "a2": (True, "team-a", 0, None, (), False, 2, 0),
            "b1": (False, None, 0, None, (), False, 0, 0),
            "g1": (True, "gpu-team", 0, None, (), False, 2, 0),
            "h1": (False, None, 0, None, (), False, 0, 0),
            "n1": (True, "team-b", 0, None, (), False, 2, 0),
            "s1": (True, "solo", 0, None, (), False, 2, 0),
            "s2": (False, None, 0, None, (), False, 0, 0),
        },
    },
    # A GPU pool listed first: `o1` lands on it though its ClusterQueue has room on the CPU pool (Kueue takes the first
    # flavor that fits), `s1` because its ClusterQueue's CPU share is too small; both run on the tainted GPU node.
    "gpu-placement": {
        "01-place": {
            "o1": (True, "order", 0, None, (), False, 2, 0),
            "s1": (True, "small", 0, None, (), False, 2, 0),
        },
    },
    # pods is covered and pool no-pods has no pods quota: `p2` waits beside `p1` though no-pods is idle.
    "pods-quota": {
        "01-first": {"p1": (True, "team", 0, None, (), False, 2, 0)},
        "02-second": {
            "p1": (True, "team", 0, None, (), False, 2, 0),
            "p2": (False, None, 0, None, (), False, 0, 0),
        },
    },
    # Quota (11 CPU) admits `frag` (10475m), the nodes cannot place its third worker pod. Its other pods run until
    # waitForPodsReady's 20 s pass; then Kueue evicts the whole workload (PodsReadyTimeout, WaitForStart) and
    # requeues it with backoff: no pod keeps running. The plan printed no warning for it.
    "gang-fragmentation": {
        "01-gang": {"frag": (False, None, 0, None, ("PodsReadyTimeout/WaitForStart",), False, 0, 0)},
    },
    # `j2` waits while the one node is full; the pool grows to two nodes, the ClusterQueue's quota follows, and `j2`
    # is admitted and both its pods run on the new node (the stacks size the controller, 3392Mi, so that neither of
    # `j2`'s pods fits beside `j1`: where they land does not depend on the scheduler's order). The pool shrinks back to
    # one node while `j2` runs and `j1` is given its end: the new node goes, pod GC deletes `j2`'s pods there (40 s
    # later), AIPerf 0.13.0's controller Job (backoffLimit 0) fails, so its JobSet (no failurePolicy) fails and Kueue
    # finishes the Workload: `j2` is lost with its node. Kueue evicts nothing when quota falls; the plan's diff warns
    # of exactly this (a pool whose total falls).
    "capacity-grows": {
        "01-j1": {"j1": (True, "benchmarks", 0, None, (), False, 2, 0)},
        "02-j2": {
            "j1": (True, "benchmarks", 0, None, (), False, 2, 0),
            "j2": (False, None, 0, None, (), False, 0, 0),
        },
        "03-grow": {
            "j1": (True, "benchmarks", 0, None, (), False, 2, 0),
            "j2": (True, "benchmarks", 0, None, (), False, 2, 0),
        },
        "04-shrink": {
            "j1": (True, "benchmarks", 0, None, (), True, 0, 1),
            "j2": (True, "benchmarks", 0, None, (), True, 0, 0),
        },
    },
    # team-b owns no quota and runs `b-low` and `b-mid` on the two slots `lender` lends. `a-top` must borrow:
    # borrowWithinCohort (LowerPriority, maxPriorityThreshold 100) preempts `b-low` (priority 100,
    # InCohortReclaimWhileBorrowing), and `b-low` waits though the node has a free slot (lender's lendingLimit keeps
    # it). `a-high` must borrow too, but the only borrower left, `b-mid` (500), is above the threshold: it waits,
    # nothing is preempted.
    "borrow-within-cohort": {
        "01-fill": {
            "a1": (True, "team-a", 0, None, (), False, 2, 0),
            "b-low": (True, "team-b", 0, None, (), False, 2, 0),
            "b-mid": (True, "team-b", 0, None, (), False, 2, 0),
        },
        "02-top": {
            "a-top": (True, "team-a", 0, None, (), False, 2, 0),
            "a1": (True, "team-a", 0, None, (), False, 2, 0),
            "b-low": (False, None, 1, "InCohortReclaimWhileBorrowing", ("Preempted",), False, 0, 0),
            "b-mid": (True, "team-b", 0, None, (), False, 2, 0),
        },
        "03-high": {
            "a-high": (False, None, 0, None, (), False, 0, 0),
            "a-top": (True, "team-a", 0, None, (), False, 2, 0),
            "a1": (True, "team-a", 0, None, (), False, 2, 0),
            "b-low": (False, None, 1, "InCohortReclaimWhileBorrowing", ("Preempted",), False, 0, 0),
            "b-mid": (True, "team-b", 0, None, (), False, 2, 0),
        },
    },
    # `s-big` and `e-big` (two slots, priority 1000) find one slot free in their queue and may not borrow spare's
    # idle one (borrowingLimit 0): they wait, and preempt nothing (no preemption configured). Behind them, StrictFIFO
    # keeps `s-small` waiting though a slot is free; BestEffortFIFO admits `e-small` past `e-big`.
    "fifo-strict-vs-besteffort": {
        "01-run": {
            "e-run": (True, "besteffort", 0, None, (), False, 2, 0),
            "s-run": (True, "strict", 0, None, (), False, 2, 0),
        },
        "02-big": {
            "e-big": (False, None, 0, None, (), False, 0, 0),
            "e-run": (True, "besteffort", 0, None, (), False, 2, 0),
            "s-big": (False, None, 0, None, (), False, 0, 0),
            "s-run": (True, "strict", 0, None, (), False, 2, 0),
        },
        "03-small": {
            "e-big": (False, None, 0, None, (), False, 0, 0),
            "e-run": (True, "besteffort", 0, None, (), False, 2, 0),
            "e-small": (True, "besteffort", 0, None, (), False, 2, 0),
            "s-big": (False, None, 0, None, (), False, 0, 0),
            "s-run": (True, "strict", 0, None, (), False, 2, 0),
            "s-small": (False, None, 0, None, (), False, 0, 0),
        },
    },
    # `latency` is edited while it runs: `pulumi up` creates the new run under its new digest name (`latency#2`)
    # and keeps the old one (retainOnDelete), which keeps running on its quota; the new run waits for it. When the
    # pool grows, the new run is admitted and runs beside the old one.
    "edit-while-running": {
        "01-v1": {"latency": (True, "benchmarks", 0, None, (), False, 2, 0)},
        "02-v2": {
            "latency": (True, "benchmarks", 0, None, (), False, 2, 0),
            "latency#2": (False, None, 0, None, (), False, 0, 0),
        },
        "03-grow": {
            "latency": (True, "benchmarks", 0, None, (), False, 2, 0),
            "latency#2": (True, "benchmarks", 0, None, (), False, 2, 0),
        },
    },
}


#: Per scenario, per step, per run: (operatorPhase, operatorPhases) as AIPerf 0.13.0 reported them. A run admitted
#: before the controller heartbeat expiry never shows Queued (0.13.0 sets Queued only from its heartbeat watchdog, which
#: waits for the controller's heartbeat to expire, counted from the creation: 10 s as the e2e runs the operator, 30 s
#: by default); the controller's pushes (faked, tests/e2e/
#: benchmark_push.py) take it through Initializing to Running.
EXPECTED_PHASES: dict[str, dict[str, dict[str, tuple[str, tuple[str, ...]]]]] = {
    "edit-while-running": {
        "01-v1": {"latency": ("Running", ("Pending", "Initializing", "Running"))},
        "02-v2": {
            "latency": ("Running", ("Pending", "Initializing", "Running")),
            "latency#2": ("Queued", ("Pending", "Queued")),
        },
        "03-grow": {
            "latency": ("Running", ("Pending", "Initializing", "Running")),
            "latency#2": ("Running", ("Pending", "Queued", "Initializing", "Running")),
        },
    },
}


def _dir_of(result: ScenarioResult) -> Path:
    return next(d for d in SCENARIO_DIRS if d.name == result.name)


#: Scenarios whose jobs arrive together with equal priority, so which of them Kueue takes first is the order their
#: Workloads appear in: per step, per namespace, the outcomes of its jobs as a sorted list (``repr`` order).
EXPECTED_PER_NAMESPACE: dict[str, dict[str, dict[str, list[tuple[Any, ...]]]]] = {
    # Kueue's fairSharing on; team-a and team-b own one slot each, `idle` two. team-a's four jobs all run (three
    # borrowed). team-b floods with four: its first takes back its own slot (InCohortReclamation), its second
    # borrows one of idle's by preempting another of team-a's borrowers (InCohortFairSharing: team-b's share after
    # stays at most team-a's); a third would leave team-b above team-a, so two wait. Both teams end at their
    # share: two jobs each. (Classical reclaim would stop at team-b's own slot: 3 to 1.) team-a loses its two
    # priority-100 jobs, `a3` and `a4`.
    "fair-sharing": {
        "01-a-floods": {"team-a": [(True, "team-a", 0, None, (), False, 2, 0)] * 4},
        "02-b-floods": {
            "team-a": [
                (False, None, 1, "InCohortFairSharing", ("Preempted",), False, 0, 0),
                (False, None, 1, "InCohortReclamation", ("Preempted",), False, 0, 0),
                (True, "team-a", 0, None, (), False, 2, 0),
                (True, "team-a", 0, None, (), False, 2, 0),
            ],
            "team-b": [
                (False, None, 0, None, (), False, 0, 0),
                (False, None, 0, None, (), False, 0, 0),
                (True, "team-b", 0, None, (), False, 2, 0),
                (True, "team-b", 0, None, (), False, 2, 0),
            ],
        },
    },
}

#: Per scenario of EXPECTED_PER_NAMESPACE, the jobs preempted by its last step: fair sharing takes team-a's
#: priority-100 jobs, not its priority-1000 ones.
PREEMPTED_BY_THE_END = {"fair-sharing": ["a3", "a4"]}


#: Per scenario, step and run: a benchmark whose pods all Succeeded, its operator phase and phases. AIPerf 0.13.0
#: fetches its results from the controller (the one faked piece, tests/e2e/fake_controller.py), stores them, deletes the
#: JobSet and says Completed; the record keeps the Workload and pods as they were before that deletion.
COMPLETED = ("Pending", "Initializing", "Running", "Completed")
EXPECTED_COMPLETED: dict[str, dict[str, dict[str, tuple[str, tuple[str, ...]]]]] = {
    "completion-frees-quota": {"02-second": {"first": ("Completed", COMPLETED)}},
    "capacity-grows": {"04-shrink": {"j1": ("Completed", COMPLETED)}},
}


def _no_namespaces(index: int, name: str) -> str:
    return (
        f"queues.clusterQueues[{index}]: ClusterQueue {name!r} has no namespaces; no job can be submitted to it (it "
        "can still lend its quota in a cohort)"
    )


def _borrows(index: int, job: str, queue: str) -> str:
    return (
        f"jobs[{index}] {job}: needs cpu 3775m, memory 8000Mi, more than ClusterQueue {queue}'s nominal quota in "
        "flavor cpu; it runs only on quota borrowed from cohort 'shared' and waits while the lenders use it"
    )


def _priority_ignored(index: int, queue: str, job_index: int, job: str) -> str:
    return (
        f"queues.clusterQueues[{index}].preemption: ClusterQueue {queue!r} admits jobs with WorkloadPriorityClass "
        f"high (jobs[{job_index}] {job}), but its preemption cannot act on priority (withinClusterQueue and "
        "reclaimWithinCohort are Never or unset): a higher-priority job only moves ahead in the queue and never "
        "preempts an admitted one; set preemption.withinClusterQueue: LowerPriority, and/or "
        "preemption.reclaimWithinCohort: LowerPriority (or Any) to take back lent quota"
    )


def _no_reclaim(index: int, name: str) -> str:
    return (
        f"queues.clusterQueues[{index}]: ClusterQueue {name!r} lends to and borrows from cohort 'shared', but no "
        "member of the cohort can reclaim (preemption.reclaimWithinCohort is Never or unset everywhere): lent quota "
        "stays with the borrower's jobs until they finish, so nominal quota is not guaranteed; fix: set "
        "preemption.reclaimWithinCohort: Any (or LowerPriority) on each member that lends, so it can take its quota "
        "back, or stop the sharing with lendingLimit / borrowingLimit 0"
    )


HOLD_H1 = (
    "jobs[3] h1: ClusterQueue held has stopPolicy Hold: it admits nothing new while stopPolicy is Hold, so the job "
    "stays pending until the stopPolicy is None again"
)
SAME_VALUE = (
    "priorityClasses[1].value: WorkloadPriorityClasses 'p-x' (priorityClasses[0]) and 'p-y' share value 500: Kueue "
    "compares values only, so neither is ordered ahead of nor preempts the other; give them distinct values"
)
GPU_ONLY = (
    "queues.clusterQueues[4]: ClusterQueue 'gpu-team' can place CPU-only pods (every AIPerf controller and worker) "
    "only on GPU flavor gpu, next to the models under test; fix: give ClusterQueue 'gpu-team' a share (or "
    "nominalQuota) of CPU-only pool 'cpu', and keep GPU pools' CPU and memory for the queues that run GPU work there "
    "with the pool's cpuAndMemoryFor: gpuQueues"
)
ON_GPU = {"g1": {"admitted": True, "flavors": {"cpu": "gpu", "memory": "gpu"}, "podsRunning": 2}}
NO_REQUESTS_N1 = (
    "jobs[7] n1: resourceMode none: its pods request nothing, so Kueue admits it at once whenever ClusterQueue "
    "team-b is active, reserves no quota for it and assigns it no flavor (no pool's nodeSelector or tolerations are "
    "added to its pods); it bypasses the quota: nothing guarantees its pods room next to what others run"
)

NO_QUOTA_TEAM_B = (
    "queues.clusterQueues[1]: ClusterQueue 'team-b' has no nominal quota; its jobs run only on quota borrowed from "
    "cohort 'shared' and can be preempted by its owners"
)

#: Item 5 of issue 23, "the plan meets reality". Per scenario and step: every warning the offline ``plan`` of the
#: step's revision prints (the e2e names the cluster, so the warning about naming none is left out), each with the
#: record fields of the step's jobs that show its claim come true on the living cluster. A step not listed prints
#: no warning. gang-fragmentation's is a claim too: the plan printed nothing for a job the nodes cannot hold.
PLAN_WARNINGS: dict[str, dict[str, dict[str, dict[str, dict[str, Any]]]]] = {
    "borrow-within-cohort": {
        step: {
            # It lends: team-b, which owns nothing, runs on the slots lender lends.
            _no_namespaces(2, "lender"): {"b-mid": {"admitted": True, "clusterQueue": "team-b"}},
            # Runs only on borrowed quota, and is preempted (here by a borrower: borrowWithinCohort).
            NO_QUOTA_TEAM_B: {
                "b-mid": {"admitted": True, "clusterQueue": "team-b"},
                **({} if step == "01-fill" else {"b-low": {"admitted": False, "preemptedCount": 1}}),
            },
            _borrows(1, "b-low", "team-b"): (
                {"b-low": {"admitted": True, "clusterQueue": "team-b"}}
                if step == "01-fill"
                # ... and waits while the lendable quota is in use (the node's free slot is lender's own).
                else {"b-low": {"admitted": False, "podsRunning": 0}}
            ),
            _borrows(2, "b-mid", "team-b"): {"b-mid": {"admitted": True, "clusterQueue": "team-b"}},
        }
        for step in ("01-fill", "02-top", "03-high")
    },
    "warnings-come-true": {
        "01-fill": {
            HOLD_H1: {"h1": {"admitted": False, "podsRunning": 0}},
            GPU_ONLY: ON_GPU,
            # team-a borrows team-b's idle quarter: `a2` is admitted beyond team-a's own quarter.
            _no_reclaim(0, "team-a"): {"a2": {"admitted": True, "clusterQueue": "team-a"}},
            _no_reclaim(1, "team-b"): {"a2": {"admitted": True, "clusterQueue": "team-a"}},
            SAME_VALUE: {"s1": {"admitted": True}},
        },
        "02-more": {
            HOLD_H1: {"h1": {"admitted": False, "podsRunning": 0}},
            NO_REQUESTS_N1: {"n1": {"admitted": True, "clusterQueue": "team-b", "flavors": {}, "podsRunning": 2}},
            GPU_ONLY: ON_GPU,
            # team-b's own quarter stays with team-a's borrower: `b1` waits, `a2` is not preempted.
            _no_reclaim(0, "team-a"): {"a2": {"admitted": True, "preemptedCount": 0, "podsRunning": 2}},
            _no_reclaim(1, "team-b"): {"b1": {"admitted": False, "podsRunning": 0}},
            SAME_VALUE: {
                "s1": {"admitted": True, "preemptedCount": 0, "podsRunning": 2},
                "s2": {"admitted": False, "podsRunning": 0},
            },
        },
    },
    "gpu-placement": {
        "01-place": {
            (
                "inventory.pools: GPU pool 'gpu' is listed before CPU-only pool 'cpu'; AIPerf pods request no GPU and "
                "Kueue takes the first flavor that fits, so benchmark clients would land on GPU nodes. List CPU-only "
                "pools first."
            ): {"o1": {"admitted": True, "flavors": {"cpu": "gpu", "memory": "gpu"}}},
            (
                "jobs[0]: o1: requests no GPU but lands on GPU flavor gpu (ClusterQueue 'order' has room for it on "
                "CPU-only flavor cpu, but Kueue tries flavors in pool order and takes the first that fits), next to "
                "the models under test; fix: list CPU-only pools first in inventory.pools"
            ): {"o1": {"admitted": True, "flavors": {"cpu": "gpu", "memory": "gpu"}, "podsRunning": 2}},
            (
                "jobs[1]: s1: requests no GPU but lands on GPU flavor gpu (ClusterQueue 'small' has no room for it on "
                "any CPU-only flavor), next to the models under test; fix: give ClusterQueue 'small' a share (or "
                "nominalQuota) of CPU-only pool 'cpu' large enough for the job"
            ): {"s1": {"admitted": True, "flavors": {"cpu": "gpu", "memory": "gpu"}, "podsRunning": 2}},
        },
    },
    "pods-quota": {
        step: {
            "inventory.pools[1]: pool 'no-pods' has no extraResources.pods while pods is covered; Kueue admits nothing "
            "on it": {"p1": {"admitted": True, "flavors": {"cpu": "cpu", "memory": "cpu", "pods": "cpu"}}}
            if step == "01-first"
            # The ClusterQueue holds all of no-pods' cpu and memory, yet p2 is not admitted there.
            else {"p2": {"admitted": False, "podsRunning": 0}}
        }
        for step in ("01-first", "02-second")
    },
    # idle's quota is lent: team-a runs four jobs on one slot of its own.
    "fair-sharing": {
        "01-a-floods": {_no_namespaces(2, "idle"): {"a4": {"admitted": True, "clusterQueue": "team-a"}}},
        "02-b-floods": {_no_namespaces(2, "idle"): {"a1": {"admitted": True}, "a2": {"admitted": True}}},
    },
    "fifo-strict-vs-besteffort": {
        "01-run": {_no_namespaces(2, "spare"): {}},  # nothing borrows: borrowingLimit 0 everywhere
        **{
            step: {
                _no_namespaces(2, "spare"): {},
                # Priority 1000 moves `s-big` ahead (of `s-small`, under StrictFIFO) but preempts nothing.
                _priority_ignored(0, "strict", 2, "s-big"): {
                    "s-big": {"admitted": False, "preemptedCount": 0},
                    "s-run": {"admitted": True, "preemptedCount": 0, "podsRunning": 2},
                    **({"s-small": {"admitted": False}} if step == "03-small" else {}),
                },
                _priority_ignored(1, "besteffort", 3, "e-big"): {
                    "e-big": {"admitted": False, "preemptedCount": 0},
                    "e-run": {"admitted": True, "preemptedCount": 0, "podsRunning": 2},
                },
            }
            for step in ("02-big", "03-small")
        },
    },
}


#: Where the simulator cannot agree with the living cluster: per scenario, the exact disagreements and why
#: (docs/simulate.md, "Checked against the living cluster"). Every other field of every step must agree.
KNOWN_DIFFERENCES: dict[str, list[str]] = {
    # The simulator models quota, not nodes: it cannot know that `j2`'s pods were on the node the shrink removed.
    "capacity-grows": ["04-shrink bench/j2 finished: predicted False, observed True"],
    # The simulator admits on quota only; it does not model nodes. Kueue admits `frag` too, but one of its pods
    # finds no node, waitForPodsReady evicts it after 20 s and it waits in backoff: not admitted when observed.
    "gang-fragmentation": [
        "01-gang bench/frag admitted: predicted True, observed False",
        "01-gang bench/frag clusterQueue: predicted 'benchmarks', observed None",
        "01-gang bench/frag flavors: predicted {'cpu': 'small', 'memory': 'small'}, observed {}",
    ],
}

class ScenarioChecks:
    """What every scenario is checked for. Not collected itself: :func:`_one_class_per_scenario` makes a ``Test…``
    subclass per scenario directory, so that ``make e2e``'s pytest-xdist workers (``--dist loadscope``, which gives a
    worker a whole class at a time) run each scenario, its one living cluster and all its checks, on one worker,
    and two scenarios at a time on two."""

    #: The scenario's directory (set on each generated subclass).
    directory: ClassVar[Path]

    @pytest.fixture(scope="class")
    @classmethod
    def scenario(
        cls, binaries: dict[str, str], aiperf_venv: Path, report: Report
    ) -> Iterator[ScenarioResult]:
        """The scenario, run on its own fresh living cluster; its records go to the report whatever happens."""
        directory = cls.directory
        loaded = load_scenario(directory)
        # The project's scenarios that assert no operator phases do not wait the ~20 s 0.13.0 takes to say Queued.
        look = 0.0 if directory.parent == OWN and loaded.name not in EXPECTED_PHASES else OPERATOR_LOOK_SECONDS
        result = run_scenario(
            loaded, binaries, aiperf_venv, kueue_module=KUEUE_MODULE, jobset_module=JOBSET_MODULE,
            provider_version=BUILD.PULUMI_KUBERNETES, out=OUT, operator_look_seconds=look,
        )
        report.scenarios[loaded.name] = {
            "seconds": result.seconds,
            "out": str(result.out),
            "steps": [
                {"step": s.step, "upSeconds": s.up_seconds, "settleSeconds": s.settle_seconds, "counts": s.counts(),
                 "fleet": s.fleet, "workloads": s.records}
                for s in result.steps
            ],
        }
        if result.failure:
            pytest.fail(f"scenario {loaded.name}: {result.failure}", pytrace=False)
        yield result

    def test_every_step_settled_with_a_record(self, scenario: ScenarioResult) -> None:
        loaded = load_scenario(_dir_of(scenario))
        assert [s.step for s in scenario.steps] == [s.name for s in loaded.steps]
        assert sorted(p.name for p in scenario.out.glob("*.json")) == [f"{s.number}.json" for s in loaded.steps]
        assert scenario.errors == []

    def test_outcome_as_expected(self, scenario: ScenarioResult) -> None:
        if scenario.name in EXPECTED_PER_NAMESPACE:
            by_namespace: dict[str, dict[str, list[tuple[Any, ...]]]] = {}
            for s in scenario.steps:
                step = by_namespace.setdefault(s.step, {})
                for r in s.records:
                    step.setdefault(r["namespace"], []).append(outcome(r))
                for outcomes in step.values():
                    outcomes.sort(key=repr)
            assert by_namespace == EXPECTED_PER_NAMESPACE[scenario.name]
            preempted = sorted(r["job"] for r in scenario.steps[-1].records if r["preemptedCount"])
            assert preempted == PREEMPTED_BY_THE_END[scenario.name]
            return
        expected = EXPECTED.get(scenario.name)
        if expected is None:
            assert _dir_of(scenario).parent != OWN, f"the project's scenario {scenario.name} has no expected outcome"
            pytest.skip(f"{scenario.name}: a scenario from SCENARIOS, records only")
        keyed = run_keys(scenario.steps)
        got = {
            s.step: {key: outcome(r) for key, r in runs.items()}
            for s, runs in zip(scenario.steps, keyed, strict=True)
        }
        assert got == expected

    def test_operator_phases(self, scenario: ScenarioResult) -> None:
        """Every AIPerfJob has the phases 0.13.0 wrote, the last one its record's ``operatorPhase``; where a scenario
        names them, exactly those."""
        records = [r for s in scenario.steps for r in s.records]
        assert records, f"{scenario.name}: no record"
        for r in records:
            assert r["operatorPhases"], f"{r['namespace']}/{r['object']}: the watch saw no phase"
            assert r["operatorPhases"][-1] == r["operatorPhase"], r
        expected = EXPECTED_PHASES.get(scenario.name)
        if expected is not None:
            got = {
                s.step: {key: (r["operatorPhase"], tuple(r["operatorPhases"])) for key, r in runs.items()}
                for s, runs in zip(scenario.steps, run_keys(scenario.steps), strict=True)
            }
            # Exactly the expected phases, or, for a run expected Running, those followed by 0.13.0's known rollback to
            # Initializing (scenario_run.rolled_back, docs/e2e.md): the one difference its race can make, and no other.
            assert unexpected_phases(got, expected) == {}

    def test_finished_benchmarks_complete(self, scenario: ScenarioResult) -> None:
        """A run whose pods all Succeeded ends ``Completed``, after the operator fetched its results: the metrics, the
        list, and each file, from its own controller's name; its JobSet is gone, its record kept. No other run does."""
        if _dir_of(scenario).parent != OWN:
            pytest.skip(f"{scenario.name}: a scenario from SCENARIOS, records only")
        expected = EXPECTED_COMPLETED.get(scenario.name, {})
        keyed = {s.step: runs for s, runs in zip(scenario.steps, run_keys(scenario.steps), strict=True)}
        got = {
            step: {
                key: (r["operatorPhase"], tuple(r["operatorPhases"]))
                for key, r in runs.items()
                if r["operatorPhase"] == "Completed"
            }
            for step, runs in keyed.items()
        }
        assert {step: runs for step, runs in got.items() if runs} == expected
        served = (scenario.out / "results-served.txt").read_text().splitlines()
        for step, runs in expected.items():
            for key in runs:
                record = keyed[step][key]
                # 0.13.0 names the JobSet aiperf-<AIPerfJob>; its controller pod's name under the JobSet's service.
                jobset = f"aiperf-{record['object']}"
                host = f"{jobset}-controller-0-0.{jobset}.{record['namespace']}.svc.cluster.local"
                ok = {line.split(" ")[1] for line in served if line.startswith(f"{host} ") and line.endswith(" 200")}
                # The list and both exports (0.13.0 reads the metrics from the JSON export; it may ask
                # /api/metrics too).
                assert ok - {"/api/metrics"} == {
                    "/api/results/files/profile_export_aiperf.csv",
                    "/api/results/files/profile_export_aiperf.json",
                    "/api/results/list",
                }, served
                # Retained in the operator's results directory (<namespace>/<job>/<epoch>/), as fetched.
                kept = sorted(
                    (OUT / "clusters" / f"scenario-{scenario.name}" / "operator-results" / record["namespace"])
                    .glob(f"{record['object']}/*/profile_export_aiperf.json")
                )
                assert len(kept) == 1, kept
                assert json.loads(kept[0].read_text())["metrics"] == {
                    "request_count": {"tag": "request_count", "unit": "requests", "avg": 0}
                }

    def test_each_run_is_one_object(self, scenario: ScenarioResult) -> None:
        """Each run keeps one AIPerfJob name, ``<job>-<6 hex>`` (the spec digest), for the whole scenario, and an edited
        job's new run is another object beside the old one."""
        objects: dict[str, set[str]] = {}
        for runs in run_keys(scenario.steps):
            for key, r in runs.items():
                assert re.fullmatch(rf"{re.escape(r['job'])}-[0-9a-f]{{6}}", r["object"]), r["object"]
                objects.setdefault(key, set()).add(r["object"])
        assert objects, f"{scenario.name}: no record"
        assert {k: len(v) for k, v in objects.items()} == dict.fromkeys(objects, 1)
        if scenario.name == "edit-while-running":
            assert sorted(objects) == ["latency", "latency#2"]

    def test_plan_warnings_come_true(self, scenario: ScenarioResult) -> None:
        """Each step's plan warnings are the listed ones, and the records show each one's claim."""
        if _dir_of(scenario).parent != OWN:
            pytest.skip(f"{scenario.name}: a scenario from SCENARIOS, records only")
        expected = PLAN_WARNINGS.get(scenario.name, {})
        plans = OUT / "scenario-plans" / scenario.name
        for step in scenario.steps:
            printed = [w for w in load_plan(plans / step.step).data["warnings"] if w != NO_CLUSTER_WARNING]
            claims = expected.get(step.step, {})
            assert printed == list(claims), step.step
            records = {r["job"]: r for r in step.records}
            for warning, shows in claims.items():
                for job, fields in shows.items():
                    assert {k: records[job][k] for k in fields} == fields, (step.step, job, warning)

    def test_the_simulator_predicts_the_records(self, scenario: ScenarioResult) -> None:
        """``aiperf-kueue simulate --scenario`` on the same scenario predicts each step's records (offline, after the
        scenario's run wrote them): admitted, clusterQueue, flavors, preemptedCount and finished of every job."""
        assert sorted(p.name for p in scenario.out.glob("*.json")), f"no records in {scenario.out}"
        # Where Kueue picks among equal jobs by arrival order (EXPECTED_PER_NAMESPACE), per namespace as a set.
        interchangeable = scenario.name in EXPECTED_PER_NAMESPACE
        differences = prediction_differences(_dir_of(scenario), scenario.out, interchangeable=interchangeable)
        assert differences == KNOWN_DIFFERENCES.get(scenario.name, [])

    def test_explain_names_every_waiting_job(self, scenario: ScenarioResult) -> None:
        """At every step, ``aiperf-kueue explain``'s reading of the living cluster's objects (the ones the records were
        made from) gives one line for each job the records show waiting (not admitted, not finished), none for the
        others, each with a reason."""
        for step in scenario.steps:
            waiting = sorted(
                f"{r['namespace']}/{r['job']}" for r in step.records if not r["admitted"] and not r["finished"]
            )
            assert sorted(line.split(":", 1)[0] for line in step.explain) == waiting, step.explain
            assert all(len(line.split(": ", 2)) == 3 and line.split(": ", 2)[2] for line in step.explain), step.explain


def _one_class_per_scenario() -> dict[str, type[ScenarioChecks]]:
    """``TestScenario_<name>`` per scenario directory (its name's other characters as ``_``), in SCENARIO_DIRS' order.
    A class, not a parameter, per scenario: pytest-xdist's ``loadscope`` keeps a class on one worker, while its
    ``loadgroup`` (the groups of one module's parameters) groups nothing under pytest 9.2 (docs/e2e.md)."""
    classes: dict[str, type[ScenarioChecks]] = {}
    for directory in SCENARIO_DIRS:
        name = "TestScenario_" + re.sub(r"\W", "_", directory.name)
        if name in classes:  # two directories whose names differ only in punctuation
            name += f"_{len(classes)}"
        classes[name] = type(name, (ScenarioChecks,), {"directory": directory, "__doc__": f"Scenario {directory}."})
    return classes


globals().update(_one_class_per_scenario())
