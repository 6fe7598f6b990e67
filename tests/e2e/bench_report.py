"""What :mod:`tests.e2e.bench_engine` makes of its measurements: the engine's step statistics from its events, the
extrapolation of an update stopped at its time cap, the targets of issue 12 next to the figures, the console table
and the ``realEngine`` section of ``results.json``. Nothing here runs anything or asserts a time."""

from __future__ import annotations

import itertools
import json
import statistics
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

#: The targets of issue 12, reported against the measured figures (never asserted).
TARGETS = {
    "upOverKubectlAt1000": 1.5,
    "prodNoChangePreviewSeconds": 10.0,
    "previewOverPlan": 10.0,
}
#: Window, in seconds, over which the start and the end of an update's throughput are measured.
WINDOW = 60.0


def op_counts(changes: Mapping[Any, int] | None) -> dict[str, int]:
    """An Automation API change summary with plain string keys (its type says OpType; the JSON gives strings)."""
    return {str(getattr(op, "value", op)): int(n) for op, n in (changes or {}).items()}


def step_stats(events: Iterable[Mapping[str, Any]], *, same: bool = False) -> dict[str, Any]:
    """What the engine did, from its events: steps per operation, and per resource type of the steps that did
    something (not ``same``, unless ``same``: a no-change preview has no other): how many, and the median, 90th
    percentile and longest time from the step's start (its pre-event) to its outputs; the engine's throughput over
    the span from the first such start to the last outputs, and over the first and the last :data:`WINDOW` seconds
    of that span (a falling rate is a per-step cost that grows with the stack)."""
    starts: dict[str, tuple[str, str, float]] = {}
    ends: dict[str, float] = {}
    ops: dict[str, int] = {}
    for e in events:
        if e["op"] == "outputs":
            ends[e["urn"]] = e["at"]
        else:
            starts.setdefault(e["urn"], (e["op"], e["type"], e["at"]))
            ops[e["op"]] = ops.get(e["op"], 0) + 1
    durations: dict[str, list[float]] = {}
    done: list[float] = []
    first = None
    for urn, (op, kind, at) in starts.items():
        # Default providers are the engine's own; the change summary does not count them either.
        if (op == "same" and not same) or urn not in ends or kind.startswith("pulumi:providers:"):
            continue
        durations.setdefault(kind.rsplit(":", 1)[-1], []).append(ends[urn] - at)
        done.append(ends[urn])
        first = at if first is None else min(first, at)
    by_type = {}
    for kind, values in sorted(durations.items()):
        ordered = sorted(values)
        by_type[kind] = {
            "steps": len(ordered),
            "median": statistics.median(ordered),
            "p90": ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))],
            "max": ordered[-1],
        }
    span = (max(done) - first) if first is not None and done else 0.0

    def rate(lo: float, hi: float) -> float | None:
        if first is None or hi - lo <= 0:
            return None
        return sum(1 for t in done if first + lo <= t < first + hi) / (hi - lo)

    return {
        "ops": dict(sorted(ops.items())),
        "firstStepAt": first,
        "lastOutputsAt": max(done) if done else None,
        "steps": len(done),
        "span": span,
        "stepsPerSecond": len(done) / span if span else None,
        "firstWindowStepsPerSecond": rate(0, min(WINDOW, span)),
        "lastWindowStepsPerSecond": rate(max(0.0, span - WINDOW), span + 1e-9),
        "byType": by_type,
    }


def phases(stats: Mapping[str, Any], started: float, ended: float) -> dict[str, float] | None:
    """A command's seconds before the engine's first step (CLI and plugin start-up, the program's first
    registrations, reading the state), from it to the last step's outputs, and after (the last checkpoint, the
    program's exit, the CLI's summary); ``started``/``ended`` on the clock of the events."""
    first, last = stats["firstStepAt"], stats["lastOutputsAt"]
    if first is None or last is None:
        return None
    return {"beforeFirstStep": first - started, "steps": last - first, "afterLastStep": ended - last}


def marginal(sizes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Between consecutive fleet sizes, the cost of each added object or create: what a command's fixed cost
    (start-up, the platform's unchanged resources) does not hide. A stopped update gives none."""
    out = []
    for a, b in itertools.pairwise(sorted(sizes, key=lambda s: s["namespaces"])):
        objects = b["manifestObjects"] - a["manifestObjects"]
        creates = b["pulumiUpSkipCheckpoints"]["created"] - a["pulumiUpSkipCheckpoints"]["created"]
        if objects <= 0 or creates <= 0:
            continue
        ckpt = None
        if not (a["pulumiUp"]["stopped"] or b["pulumiUp"]["stopped"]):
            ckpt = 1000 * (b["pulumiUp"]["seconds"] - a["pulumiUp"]["seconds"]) / creates
        out.append({
            "from": a["namespaces"],
            "to": b["namespaces"],
            "kubectlMsPerObject": 1000 * (b["kubectlApply"]["seconds"] - a["kubectlApply"]["seconds"]) / objects,
            "upMsPerCreate": ckpt,
            "upSkipCheckpointsMsPerCreate": 1000
            * (b["pulumiUpSkipCheckpoints"]["seconds"] - a["pulumiUpSkipCheckpoints"]["seconds"])
            / creates,
            "previewMsPerResource": 1000
            * (b["noChangePreview"]["seconds"] - a["noChangePreview"]["seconds"])
            / (b["noChangePreview"]["same"] - a["noChangePreview"]["same"]),
        })
    return out


def extrapolate(
    measured_seconds: float, done: int, expected: int, last_rate: float, state_now: int, state_final: int
) -> dict[str, Any]:
    """The time a ``pulumi up`` stopped after ``measured_seconds`` with ``done`` of ``expected`` creates would have
    taken, from the rate of its last window. The lower bound keeps that rate; the other estimate lets each step's
    cost grow with the state the engine rewrites at each checkpoint (from ``state_now`` bytes to the ``state_final``
    the same update reached without checkpoints), linearly, as the state does."""
    left = max(0, expected - done)
    at_rate = left / last_rate
    growth = (state_now + state_final) / (2 * state_now)
    return {
        "label": "EXTRAPOLATED from a stopped update, not measured",
        "measuredSeconds": measured_seconds,
        "completedCreates": done,
        "expectedCreates": expected,
        "lastWindowStepsPerSecond": last_rate,
        "stateBytesAtStop": state_now,
        "stateBytesFinal": state_final,
        "lowerBoundSeconds": measured_seconds + at_rate,
        "stateProportionalSeconds": measured_seconds + at_rate * growth,
    }


def up_seconds(size: Mapping[str, Any]) -> tuple[float, bool]:
    """The default ``pulumi up``'s seconds at ``size``, and whether that figure is extrapolated (the state-
    proportional estimate of an update stopped at its cap)."""
    up = size["pulumiUp"]
    if up.get("extrapolation"):
        return float(up["extrapolation"]["stateProportionalSeconds"]), True
    return float(up["seconds"]), False


def targets(sizes: list[dict[str, Any]], prod: dict[str, Any] | None) -> dict[str, Any]:
    """Each target of issue 12 next to the measured figure, and whether it is reached."""
    out: dict[str, Any] = {}
    at_1000 = next((s for s in sizes if s["namespaces"] == 1000), None)
    if at_1000 is not None:
        seconds, extrapolated = up_seconds(at_1000)
        ratio = seconds / at_1000["kubectlApply"]["seconds"]
        out["upOverKubectlAt1000"] = {
            "target": f"<= {TARGETS['upOverKubectlAt1000']}",
            "measured": ratio,
            "extrapolated": extrapolated,
            "reached": ratio <= TARGETS["upOverKubectlAt1000"],
            "withoutCheckpoints": at_1000["skipCheckpointsUpOverKubectl"],
        }
    if prod is not None:
        preview = prod["noChangePreview"]["median"]
        out["prodNoChangePreviewSeconds"] = {
            "target": f"< {TARGETS['prodNoChangePreviewSeconds']}",
            "measured": preview,
            "reached": preview < TARGETS["prodNoChangePreviewSeconds"],
        }
        out["previewOverPlan"] = {
            "target": f">= {TARGETS['previewOverPlan']}",
            "measured": prod["previewOverPlan"],
            "reached": prod["previewOverPlan"] >= TARGETS["previewOverPlan"],
        }
    return out


#: Issue 27's table: per figure, what docs/scale.md measured before (the issue's "now") and the goal. Reported next
#: to this run's figures by :func:`goals`, never asserted.
GOALS: tuple[tuple[str, str, str], ...] = (
    ("up100", "60x", "<= 5x"),
    ("up1000", "~128x (extrapolated)", "<= 10x"),
    ("skip1000", "5.0x", "<= 2x"),
    ("prodPreview", "9.3 s", "<= 4 s"),
    ("planVsPreview", "8.1x faster", ">= 10x faster"),
    ("stateBytes", "? / ~2.5 MB", "<= 3 KB / <= 300 KB"),
    ("firstAdmittedShare", "97 %", "<= 10 %"),
    ("oneNamespaceEdit", "?", "<= 3x kubectl apply of that namespace + preview"),
)
GOAL_LABELS = {
    "up100": "pulumi up, 100 namespaces, / kubectl apply",
    "up1000": "pulumi up, 1,000 namespaces, / kubectl apply",
    "skip1000": "same with PULUMI_SKIP_CHECKPOINTS=true",
    "prodPreview": "no-change pulumi preview of prod",
    "planVsPreview": "offline plan vs real pulumi preview, same stack",
    "stateBytes": "state per benchmark namespace / for all charts",
    "firstAdmittedShare": "first job admitted, share of the update's time",
    "oneNamespaceEdit": "one-namespace edit on the largest stack",
}


def chart_state_bytes(state: Mapping[str, Any]) -> dict[str, int]:
    """Bytes of a stack's state (``pulumi stack export`` or the backend's file: ``checkpoint.latest.resources``) that
    the charts hold (every resource under a ``helm.sh`` type, the CRDs among them) and that the CRDs alone hold, each
    resource measured as compact JSON."""
    latest = state.get("checkpoint", state).get("latest") or {}
    charts = crds = 0
    for r in latest.get("resources") or []:
        size = len(json.dumps(r, separators=(",", ":")))
        if "helm.sh" in r.get("urn", ""):
            charts += size
            if r.get("type", "").endswith(":CustomResourceDefinition"):
                crds += size
    return {"charts": charts, "crds": crds}


def state_by_type(state: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """Per resource type (the last part of its token), in a stack's state: how many resources, their bytes as compact
    JSON, and how many of those are their inputs and their outputs. Where the state goes picks what to cut."""
    latest = state.get("checkpoint", state).get("latest") or {}
    out: dict[str, dict[str, int]] = {}
    for r in latest.get("resources") or []:
        row = out.setdefault(r.get("type", "").rsplit(":", 1)[-1], {"count": 0, "bytes": 0, "inputs": 0, "outputs": 0})
        row["count"] += 1
        row["bytes"] += len(json.dumps(r, separators=(",", ":")))
        row["inputs"] += len(json.dumps(r.get("inputs") or {}, separators=(",", ":")))
        row["outputs"] += len(json.dumps(r.get("outputs") or {}, separators=(",", ":")))
    return dict(sorted(out.items(), key=lambda kv: -kv[1]["bytes"]))


def _ratio(value: float | None, goal: float, *, at_most: bool = True) -> tuple[str, bool | None]:
    if value is None:
        return "not measured", None
    return f"{value:.1f}x", (value <= goal if at_most else value >= goal)


def goals(
    sizes: list[dict[str, Any]], prod: dict[str, Any] | None, split: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Issue 27's table: each figure as measured in this run, its earlier value, its goal and whether it is met
    (``None``: not measured in this run, e.g. ``--quick`` has no 1,000 namespaces). With ``split`` (``--split``:
    the same fleets as two stacks, the platform's and the fleet's), each row also says what the fleet stack
    measured (``twoStacks``, ``twoStacksMet``): the layout docs/scale.md recommends for big fleets."""
    single = _measure(sizes, prod)
    two = _measure(split.get("sizes") or [], split.get("prod"), charts_elsewhere=True) if split else None
    rows: list[dict[str, Any]] = []
    for key, before, goal in GOALS:
        row = {"figure": key, "label": GOAL_LABELS[key], "before": before, "measured": single[key][0], "goal": goal,
               "met": single[key][1]}
        if two is not None:
            row["twoStacks"], row["twoStacksMet"] = two[key]
        rows.append(row)
    return rows


def _measure(
    sizes: list[dict[str, Any]], prod: dict[str, Any] | None, *, charts_elsewhere: bool = False
) -> dict[str, tuple[str, bool | None]]:
    """Each goal's figure and whether it is met, from one layout's sizes and prod. ``charts_elsewhere``: the fleet
    stack of two, whose charts are the platform stack's state (counted as such, not as the fleet's zero bytes)."""
    by_size = {s["namespaces"]: s for s in sizes}
    largest = by_size[max(by_size)] if by_size else None
    measured: dict[str, tuple[str, bool | None]] = {}
    s100 = by_size.get(100)
    measured["up100"] = _ratio(s100["upOverKubectl"] if s100 else None, 5)
    s1000 = by_size.get(1000)
    if s1000 and s1000["pulumiUp"]["stopped"]:
        measured["up1000"] = (f"~{s1000['upOverKubectl']:.1f}x (extrapolated: not a measurement)", False)
    else:
        measured["up1000"] = _ratio(s1000["upOverKubectl"] if s1000 else None, 10)
    measured["skip1000"] = _ratio(s1000.get("skipCheckpointsUpOverKubectl") if s1000 else None, 2)
    if prod:
        preview = prod["noChangePreview"]["median"]
        measured["prodPreview"] = (f"{preview:.1f} s", preview <= 4)
        measured["planVsPreview"] = (f"{prod['previewOverPlan']:.1f}x faster", prod["previewOverPlan"] >= 10)
    else:
        measured["prodPreview"] = measured["planVsPreview"] = ("not measured", None)
    if largest is not None and largest.get("stateBytesPerNamespace") is not None:
        per_ns, charts = largest["stateBytesPerNamespace"], largest["chartStateBytes"]["charts"]
        where = ""
        if charts_elsewhere:
            charts, where = largest["platformUp"]["stateBytes"], " in the platform stack"
        measured["stateBytes"] = (
            f"{per_ns / 1e3:.1f} KB / {charts / 1e6:.2f} MB{where} (at {largest['namespaces']})",
            per_ns <= 3000 and charts <= 300_000,
        )
    else:
        measured["stateBytes"] = ("not measured", None)
    if largest is not None and largest["pulumiUp"].get("firstAdmittedShare") is not None:
        share = largest["pulumiUp"]["firstAdmittedShare"]
        measured["firstAdmittedShare"] = (f"{100 * share:.0f} % (at {largest['namespaces']})", share <= 0.10)
    else:
        measured["firstAdmittedShare"] = ("not measured", None)
    edit = largest.get("oneNamespaceEdit") if largest else None
    if edit and largest is not None:
        bound = 3 * edit["kubectlSeconds"] + edit["previewSeconds"]
        measured["oneNamespaceEdit"] = (
            f"up {edit['upSeconds']:.1f} s; kubectl {edit['kubectlSeconds']:.1f} s, preview "
            f"{edit['previewSeconds']:.1f} s (at {largest['namespaces']})",
            edit["upSeconds"] <= bound,
        )
    else:
        measured["oneNamespaceEdit"] = ("not measured", None)
    return measured


def goal_rows(rows: list[dict[str, Any]]) -> list[str]:
    """:func:`goals` as the issue's table, for the console (with the two-stack column when measured)."""
    split = any("twoStacks" in r for r in rows)
    cells = [["figure", "before", "this run", "goal", "met", *(["two stacks", "met"] if split else [])]]

    def met(value: bool | None) -> str:
        return "-" if value is None else ("yes" if value else "NO")

    for r in rows:
        extra = [r.get("twoStacks", "-"), met(r.get("twoStacksMet"))] if split else []
        cells.append([r["label"], r["before"], r["measured"], r["goal"], met(r["met"]), *extra])
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]


def _columns(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _size_rows(sizes: list[dict[str, Any]]) -> list[str]:
    rows = [[
        "namespaces", "resources", "objects", "plan s", "platform up s", "kubectl s", "up s", "up/kubectl",
        "up no-ckpt s", "no-ckpt/kubectl", "preview s", "admitted: kubectl s", "up s", "up no-ckpt s",
    ]]
    for s in sizes:
        seconds, extrapolated = up_seconds(s)
        mark = "~" if extrapolated else ""
        rows.append([
            str(s["namespaces"]), str(s["planResources"]), str(s["manifestObjects"]), _s(s["offlinePlan"]),
            _s(s["platformUp"]["seconds"]), _s(s["kubectlApply"]["seconds"]), mark + _s(seconds),
            f"{mark}{seconds / s['kubectlApply']['seconds']:.1f}", _s(s["pulumiUpSkipCheckpoints"]["seconds"]),
            f"{s['skipCheckpointsUpOverKubectl']:.1f}", _s(s["noChangePreview"]["seconds"]),
            _s(s["kubectlApply"]["firstAdmittedSeconds"]), _s(s["pulumiUp"]["firstAdmittedSeconds"]),
            _s(s["pulumiUpSkipCheckpoints"]["firstAdmittedSeconds"]),
        ])
    return _columns(rows)


def _engine_rows(sizes: list[dict[str, Any]]) -> list[str]:
    rows = [[
        "engine (creates)", "creates", "ms/create", "no-ckpt ms/create", "checkpoint ms/step", "state MB",
        "kubectl ms/object", "steps/s first min", "last min",
    ]]
    for s in sizes:
        up, skip = s["pulumiUp"], s["pulumiUpSkipCheckpoints"]
        rows.append([
            f"{s['namespaces']} namespaces", str(skip["created"]), _s(up["perCreatedResourceMs"]),
            _s(skip["perCreatedResourceMs"]), _s(s["checkpointMsPerStep"]), f"{s['finalStateBytes'] / 1e6:.1f}",
            _s(s["kubectlApply"]["perObjectMs"]), _s(up["engine"]["firstWindowStepsPerSecond"]),
            _s(up["engine"]["lastWindowStepsPerSecond"]),
        ])
    return _columns(rows)


def table(report: Mapping[str, Any]) -> list[str]:
    """The console tables: per size, prod, the engine's per-create cost, the targets. ``~``: extrapolated."""
    lines = _size_rows(report["sizes"]) if report["sizes"] else []
    prod = report.get("prod")
    if prod:
        lines += ["", *_columns([
            ["prod", "resources", "plan s", "up from empty s", "admitted s", "preview s", "preview/plan"],
            [
                "", str(prod["planResources"]), _s(prod["offlinePlan"]["median"]), _s(prod["upFromEmpty"]["seconds"]),
                _s(prod["upFromEmpty"]["firstAdmittedSeconds"]), _s(prod["noChangePreview"]["median"]),
                f"{prod['previewOverPlan']:.1f}",
            ],
        ])]
    if prod and prod["noChangePreview"]["phases"][-1]:
        ph = prod["noChangePreview"]["phases"][-1]
        lines.append(f"prod preview (last run): {ph['beforeFirstStep']:.1f} s before the first step, "
                     f"{ph['steps']:.1f} s of steps, {ph['afterLastStep']:.1f} s after the last")
    if report["sizes"]:
        lines += ["", *_engine_rows(report["sizes"])]
    if report.get("marginal"):
        rows = [["marginal cost", "kubectl ms/object", "up ms/create", "up no-ckpt ms/create", "preview ms/resource"]]
        for m in report["marginal"]:
            rows.append([
                f"{m['from']} -> {m['to']} namespaces", _s(m["kubectlMsPerObject"]), _s(m["upMsPerCreate"]),
                _s(m["upSkipCheckpointsMsPerCreate"]), _s(m["previewMsPerResource"]),
            ])
        lines += ["", *_columns(rows)]
    for s in report["sizes"]:
        x = s["pulumiUp"].get("extrapolation")
        if x:
            lines.append(
                f"{s['namespaces']} namespaces: pulumi up stopped after {x['measuredSeconds']:.0f} s with "
                f"{x['completedCreates']} of {x['expectedCreates']} creates; {x['label']}: at least "
                f"{x['lowerBoundSeconds']:.0f} s, about {x['stateProportionalSeconds']:.0f} s"
            )
    if report.get("goals"):
        lines += ["", "Issue 27 (one run; '-': not measured in this run):", *goal_rows(report["goals"])]
    if report["targets"]:
        lines.append("")
        for key, t in report["targets"].items():
            how = " (extrapolated)" if t.get("extrapolated") else ""
            lines.append(f"target {key}: {t['target']}, measured{how} {t['measured']:.2f}: "
                         + ("reached" if t["reached"] else "NOT reached"))
    return lines


def write_results(path: Path, report: Mapping[str, Any]) -> None:
    """The whole report of one ``make bench-engine`` run at ``path`` (``bench/results.json``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")


def write_section(path: Path, section: Mapping[str, Any]) -> None:
    """Put ``section`` under ``realEngine`` in the JSON at ``path``, keeping everything else in it."""
    report = json.loads(path.read_text()) if path.is_file() else {}
    report["realEngine"] = section
    path.write_text(json.dumps(report, indent=2) + "\n")
