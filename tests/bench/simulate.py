"""``python -m tests.bench.simulate``: simulate 1,000 jobs over 50 ClusterQueues and time it.

A generated stack (one cohort, 50 ClusterQueues of one namespace each, 20 jobs per queue with run
times from 10 to 600 s and three priorities, reclaimWithinCohort on every other queue; with ``--tree``, the
same queues in a three-level Cohort tree: an org, 5 departments of 10 teams, each department with quota of its
own and every other one a borrowingLimit) is planned once, then the simulation alone is timed, wall clock and
this process's CPU time (the machine is shared: the wall clock counts other processes' turns): the budget is
2 s on the project's 2-core machine. A benchmark, not a test: nothing asserts the time.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from aiperf_kueue.simulate.engine import Revision, Simulation
from aiperf_kueue.simulate.report import makespan
from aiperf_kueue.simulate.run import plan_file
from aiperf_kueue.simulate.world import build_world


def stack_text(queues: int, jobs_per_queue: int, tree: bool = False) -> str:
    """The generated stack file."""
    lines = [
        "config:",
        "  aiperf-kueue:cluster:",
        "    context: kind-aiperf",
        "  aiperf-kueue:inventory:",
        "    headroom: 0",
        "    pools:",
        "      - name: default",
        f"        nodes: {queues * 2 + (queues // 10 + 1) * 2}",
        '        cpu: "8"',
        "        memory: 16Gi",
        "  aiperf-kueue:priorityClasses:",
        *[f"    - {{name: p{v}, value: {v}}}" for v in (1, 2, 3)],
        "  aiperf-kueue:queues:",
    ]
    departments = max(1, queues // 10)
    if tree:
        lines += ["    cohorts:", "      - name: org"]
        for d in range(departments):
            lines += [
                f"      - name: dept-{d}",
                "        parentName: org",
                '        nominalQuota: {default: {cpu: "8", memory: 16000Mi}}',
            ]
            if d % 2:
                lines.append('        borrowingLimit: {default: {cpu: "16", memory: 32000Mi}}')
    else:
        lines.append("    cohort: org")
    lines.append("    clusterQueues:")
    for q in range(queues):
        lines += [
            f"      - name: team-{q}",
            f'        nominalQuota: {{default: {{cpu: "{4 * (1 + q % 3)}", memory: {8000 * (1 + q % 3)}Mi}}}}',
        ]
        if tree:
            lines.append(f"        cohortName: dept-{q % departments}")
        if q % 2:
            lines.append("        preemption: {reclaimWithinCohort: Any, withinClusterQueue: LowerPriority}")
        lines += ["        namespaces:", f"          - name: team-{q}"]
    lines += [
        "  aiperf-kueue:operator:",
        "    sizing:",
        "      controller:",
        "        RECORDS_MANAGER:",
        "          memory: 512Mi",
        "  aiperf-kueue:jobs:",
    ]
    for q in range(queues):
        for j in range(jobs_per_queue):
            n = q * jobs_per_queue + j
            requests = 40 + (n * 37) % 2360
            lines += [
                f"    - name: j{n}",
                f"      namespace: team-{q}",
                f"      priorityClass: p{1 + n % 3}",
                "      spec:",
                "        resourceMode: burstable",
                "        benchmark:",
                "          models: [mock-model]",
                "          endpoint: {urls: ['http://mock:8000'], type: chat}",
                "          serverMetrics: {enabled: false}",
                "          datasets: [{name: main, type: synthetic}]",
                "          phases:",
                f"            - {{name: profiling, type: concurrency, concurrency: 4, requests: {requests}}}",
            ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Plan the generated stack, then time the simulation (best of ``--repeat``)."""
    parser = argparse.ArgumentParser(prog="python -m tests.bench.simulate")
    parser.add_argument("--queues", type=int, default=50)
    parser.add_argument("--jobs-per-queue", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tree", action="store_true", help="a three-level Cohort tree instead of one cohort")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "Pulumi.bench.yaml"
        path.write_text(stack_text(args.queues, args.jobs_per_queue, args.tree))
        started = time.perf_counter()
        plan = plan_file(path)
        planned = time.perf_counter() - started
    best = cpu = float("inf")
    for _ in range(args.repeat):
        world = build_world(plan)
        started, cpu_started = time.perf_counter(), time.process_time()
        outcome = Simulation([Revision("bench", 0.0, world)]).run()
        best = min(best, time.perf_counter() - started)
        cpu = min(cpu, time.process_time() - cpu_started)
    jobs = len(outcome.jobs)
    preempted = sum(1 for e in outcome.events if e.kind == "preempted")
    print(
        f"simulate: {jobs} jobs over {args.queues} ClusterQueues{' in a three-level tree' if args.tree else ''}, "
        f"makespan {makespan(outcome)} s, "
        f"{preempted} preemptions: {best:.2f} s (CPU {cpu:.2f} s; best of {args.repeat}; planning the stack took "
        f"{planned:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
