"""What ``simulate`` prints and writes: the timeline, makespan, usage over time, a Mermaid Gantt chart,
JSON, the per-step records in the e2e's shape, and :func:`compare` against what a cluster recorded."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aiperf_kueue.common.render import json_text, markdown_table
from aiperf_kueue.simulate.engine import Outcome
from aiperf_kueue.simulate.world import SimJob, unmilli

#: The fields of a workload record the simulator predicts (the e2e records more).
PREDICTED_FIELDS = ("admitted", "clusterQueue", "flavors", "preemptedCount", "finished")
#: A field whose value depends on timing in Kueue (jobs created at the same moment, in any order).
EITHER = "either"


def seconds(value: float | None) -> str:
    """``12s``, ``1.5s``; ``-`` for none."""
    if value is None:
        return "-"
    return f"{value:g}s"


def makespan(outcome: Outcome) -> float | None:
    """When the last job finished; ``None`` when some job never finishes in the simulation."""
    live = [j for j in outcome.jobs.values() if j.state != "deleted"]
    if not live or any(j.state != "finished" for j in live):
        return None
    return max(e.time for e in outcome.events if e.kind == "finished")


def _run_text(job: SimJob) -> str:
    if job.run_seconds is None:
        return "until the end" if not job.estimated else "unknown (no estimate)"
    return f"{job.run_seconds:g}s" + (" (estimate)" if job.estimated else "")


def timeline_rows(outcome: Outcome) -> list[dict[str, Any]]:
    """One row per job: when it was created, admitted, preempted or evicted, finished, and where it ran."""
    by_job: dict[tuple[str, str], dict[str, list[float]]] = {}
    for e in outcome.events:
        by_job.setdefault(e.job, {}).setdefault(e.kind, []).append(e.time)
    rows = []
    for key, job in outcome.jobs.items():
        times = by_job.get(key, {})
        rows.append(
            {
                "namespace": job.namespace,
                "job": job.name,
                "clusterQueue": job.cluster_queue,
                "priority": job.priority,
                "run": _run_text(job),
                "created": times.get("created", []),
                "admitted": times.get("admitted", []),
                "preempted": times.get("preempted", []) + times.get("evicted", []),
                "finished": times["finished"][0] if times.get("finished") else None,
                "flavors": dict(job.flavors),
                "state": job.state,
            }
        )
    return rows


def timeline_table(outcome: Outcome) -> list[str]:
    """The timeline as a Markdown table."""
    header = ["job", "ClusterQueue", "priority", "run", "admitted", "preempted / evicted", "finished", "flavors"]
    rows = [
        [
            f"{row['namespace']}/{row['job']}",
            row["clusterQueue"],
            str(row["priority"]),
            row["run"],
            ", ".join(seconds(t) for t in row["admitted"]) or "never",
            ", ".join(seconds(t) for t in row["preempted"]) or "-",
            seconds(row["finished"]) if row["finished"] is not None else "-",
            ", ".join(f"{r}: {f}" for r, f in row["flavors"].items()) or "-",
        ]
        for row in timeline_rows(outcome)
    ]
    return markdown_table(header, rows)


def usage_lines(outcome: Outcome) -> list[str]:
    """Each ClusterQueue's usage whenever it changed, per flavor and resource."""
    lines = []
    for cq, series in outcome.usage.items():
        lines.append(f"{cq}:")
        for t, used in series:
            text = ", ".join(f"{f}/{r} {unmilli(r, v)}" for (f, r), v in sorted(used.items())) or "nothing"
            lines.append(f"  {seconds(t)}: {text}")
    return lines


def mermaid(outcome: Outcome, title: str) -> str:
    """A Mermaid Gantt chart (renders in a pull request): one bar per admission, per ClusterQueue."""
    end = outcome.end
    lines = ["```mermaid", "gantt", f"  title {title}", "  dateFormat X", "  axisFormat %s"]
    sections: dict[str, list[str]] = {}
    open_: dict[tuple[str, str], float] = {}
    for e in outcome.events:
        job = outcome.jobs[e.job]
        label = f"{job.namespace}/{job.name}".replace(":", " ")
        if e.kind == "admitted":
            open_[e.job] = e.time
        elif e.kind in ("finished", "preempted", "evicted", "deleted") and e.job in open_:
            start = open_.pop(e.job)
            tag = "done" if e.kind == "finished" else "crit"
            sections.setdefault(job.cluster_queue, []).append(
                f"  {label} ({e.kind}) :{tag}, {start:g}, {max(e.time, start + 1):g}"
            )
    for key, start in open_.items():
        job = outcome.jobs[key]
        label = f"{job.namespace}/{job.name}".replace(":", " ")
        sections.setdefault(job.cluster_queue, []).append(
            f"  {label} (running) :active, {start:g}, {max(end, start + 1):g}"
        )
    for cq, bars in sections.items():
        lines.append(f"  section {cq}")
        lines += bars
    lines.append("```")
    return "\n".join(lines) + "\n"


def to_json(outcome: Outcome, stack: str, steps: Sequence[tuple[str, list[dict[str, Any]]]]) -> str:
    """Everything as JSON: jobs with their events, makespan, usage over time, per-step predictions."""
    events = [
        {"time": e.time, "namespace": e.job[0], "job": e.job[1], "kind": e.kind, "detail": e.detail}
        for e in outcome.events
    ]
    jobs = [
        {**row, "events": [e for e in events if (e["namespace"], e["job"]) == (row["namespace"], row["job"])]}
        for row in timeline_rows(outcome)
    ]
    data: dict[str, Any] = {
        "stack": stack,
        "kueue": "0.19.2",
        "makespanSeconds": makespan(outcome),
        "endSeconds": outcome.end,
        "jobs": jobs,
        "usage": {
            cq: [
                {"time": t, "usage": {f"{f}/{r}": unmilli(r, v) for (f, r), v in sorted(used.items())}}
                for t, used in series
            ]
            for cq, series in outcome.usage.items()
        },
        "steps": [{"step": label, "workloads": records} for label, records in steps],
    }
    return json_text(data)


def merge_either(
    first: Sequence[tuple[str, list[dict[str, Any]]]], second: Sequence[tuple[str, list[dict[str, Any]]]]
) -> list[tuple[str, list[dict[str, Any]]]]:
    """Per step and job, a field on which two runs (same-moment jobs in opposite orders) disagree is ``either``."""
    out = []
    for (label, records), (_, others) in zip(first, second, strict=True):
        other_by = {(r["namespace"], r["job"]): r for r in others}
        merged = []
        for record in records:
            other = other_by.get((record["namespace"], record["job"]), record)
            merged.append(
                {k: (v if k not in PREDICTED_FIELDS or other.get(k) == v else EITHER) for k, v in record.items()}
            )
        out.append((label, merged))
    return out


def compare(predicted: Mapping[str, Any], observed: Mapping[str, Any]) -> list[str]:
    """Disagreements between a predicted step record and the e2e's observed one (``{"step", "workloads"}``),
    one line each; ``either`` accepts any observed value. Empty: they agree."""
    out: list[str] = []
    step = predicted.get("step")
    if observed.get("step") != step:
        out.append(f"step: predicted {step!r}, observed {observed.get('step')!r}")
    seen = {(w.get("namespace"), w.get("job")): w for w in observed.get("workloads", [])}
    for want in predicted.get("workloads", []):
        key = (want["namespace"], want["job"])
        got = seen.pop(key, None)
        name = f"{key[0]}/{key[1]}"
        if got is None:
            out.append(f"{step} {name}: predicted, but the cluster recorded no such job")
            continue
        for field in PREDICTED_FIELDS:
            if field not in want or want[field] == EITHER:
                continue
            if got.get(field) != want[field]:
                out.append(f"{step} {name} {field}: predicted {want[field]!r}, observed {got.get(field)!r}")
    for ns, job in seen:
        out.append(f"{step} {ns}/{job}: recorded by the cluster, but not predicted")
    return out
