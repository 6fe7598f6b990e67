"""``aiperf-kueue simulate``: Kueue 0.19.2's admission replayed over time for a stack's queues and jobs.

A pure, deterministic discrete-event simulation (docs/simulate.md):

- :mod:`~aiperf_kueue.simulate.scenario`: a scenario directory (ordered stack revisions and
  ``scenario.yaml``), read and checked;
- :mod:`~aiperf_kueue.simulate.world`: the ClusterQueues and Workloads a planned stack becomes,
  and the quota arithmetic of Kueue's cache on them;
- :mod:`~aiperf_kueue.simulate.assign`: Kueue's flavor assigner with its preemption modes;
- :mod:`~aiperf_kueue.simulate.preempt`: Kueue's classical and fair-sharing preemption;
- :mod:`~aiperf_kueue.simulate.engine`: the scheduler's cycles and the event loop over time;
- :mod:`~aiperf_kueue.simulate.report`: timeline, usage, Mermaid Gantt, JSON, per-step records
  in the e2e's shape, and :func:`~aiperf_kueue.simulate.report.compare`.
"""
