"""``python -m tests.bench``: the program at fleet size next to the SDK's own floor, side by side.

For each size (about 100, 1,000 and 10,000 registered resources by default) it measures,
each in a fresh process so peak RSS is per measurement:

- ``program``: ``aiperf-kueue plan`` on a generated fleet (see :mod:`tests.bench.child`);
- ``floor``: as many bare ``CustomResource`` registrations, no logic, under the same engine;
- ``replay``: the program's own resources (types, names, inputs, parents, dependencies,
  options) re-registered under the same engine by a program with no logic: what the SDK
  alone costs for this resource graph, so ``program - replay`` is what the program does
  beyond the SDK.

Prints a table and writes JSON (``tests/bench/results.json`` unless ``--json FILE``), keeping the
``realEngine`` section that the second half of ``make bench`` (``tests/e2e/bench_engine.py``) writes there.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]  # the repository: Pulumi.yaml, __main__.py, stacks/
DEFAULT_JSON = Path(__file__).resolve().parent / "results.json"
DEFAULT_SIZES = (100, 1000, 10000)
KINDS = ("program", "floor", "replay")


def _child(kind: str, count: int, records: Path | None = None) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter; its last stdout line is the JSON result."""
    argv = [sys.executable, "-m", "tests.bench.child", kind, str(count)]
    if records is not None:
        argv.append(str(records))
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[2:])} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def machine() -> dict[str, Any]:
    """Where the numbers come from."""
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import yaml

    return {
        "cores": os.cpu_count(),
        "cpu": cpu,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "pulumi": metadata.version("pulumi"),
        "pulumi-kubernetes": metadata.version("pulumi-kubernetes"),
        "pyyamlLibyaml": bool(getattr(yaml, "__with_libyaml__", False)),
    }


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(r[key] for r in runs))


def summarise(target: int, runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """One size: medians per kind, and the program's ratios to the floor and to the replay."""
    out: dict[str, Any] = {"target": target, "resources": runs["program"][0]["resources"]}
    for kind, measured in runs.items():
        wall = _median(measured, "wall")
        out[kind] = {
            "resources": measured[0]["resources"],
            "wall": wall,
            "cpu": _median(measured, "cpu"),
            "resourcesPerSecond": measured[0]["resources"] / wall,
            "peakRssMiB": _median(measured, "peakRssMiB"),
            "runs": len(measured),
        }
    program, floor = out["program"], out["floor"]
    out["programOverFloor"] = {
        "wall": program["wall"] / floor["wall"],
        "cpu": program["cpu"] / floor["cpu"],
        "peakRss": program["peakRssMiB"] / floor["peakRssMiB"],
    }
    if "replay" in out:
        out["programOverReplay"] = {
            "wall": program["wall"] / out["replay"]["wall"],
            "cpu": program["cpu"] / out["replay"]["cpu"],
        }
    return out


def growth(sizes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Between consecutive sizes: how much more wall time each kind takes, per resource too."""
    rows = []
    for small, large in itertools.pairwise(sizes):
        row: dict[str, Any] = {"from": small["target"], "to": large["target"]}
        scale = large["resources"] / small["resources"]
        row["resources"] = scale
        for kind in KINDS:
            if kind in small and kind in large:
                factor = large[kind]["wall"] / small[kind]["wall"]
                row[kind] = {"wall": factor, "perResource": factor / scale}
        rows.append(row)
    return rows


def table(report: dict[str, Any]) -> list[str]:
    """The console table."""
    header = [
        "target",
        "resources",
        "program s",
        "res/s",
        "RSS MiB",
        "floor s",
        "res/s",
        "RSS MiB",
        "replay s",
        "program/floor",
        "RSS prog/floor",
        "program/replay",
    ]
    rows = [header]
    for size in report["sizes"]:
        program, floor, replay = size["program"], size["floor"], size.get("replay")
        rows.append(
            [
                str(size["target"]),
                str(size["resources"]),
                f"{program['wall']:.2f}",
                f"{program['resourcesPerSecond']:.0f}",
                f"{program['peakRssMiB']:.0f}",
                f"{floor['wall']:.2f}",
                f"{floor['resourcesPerSecond']:.0f}",
                f"{floor['peakRssMiB']:.0f}",
                f"{replay['wall']:.2f}" if replay else "-",
                f"{size['programOverFloor']['wall']:.2f}",
                f"{size['programOverFloor']['peakRss']:.2f}",
                f"{size['programOverReplay']['wall']:.2f}" if replay else "-",
            ]
        )
    lines = _columns(rows)
    if report["growth"]:
        lines.append("")
        grow = [["growth", "resources x", "program x", "floor x", "replay x"]]
        for row in report["growth"]:
            grow.append(
                [
                    f"{row['from']} -> {row['to']}",
                    f"{row['resources']:.2f}",
                    *[f"{row[k]['wall']:.2f}" if k in row else "-" for k in KINDS],
                ]
            )
        lines += _columns(grow)
    return lines


def _columns(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def run(sizes: list[int], repeat: int, replay: bool, echo: bool = True) -> dict[str, Any]:
    """Measure every size ``repeat`` times (program, floor and replay alternating); the report."""
    summaries = []
    with tempfile.TemporaryDirectory(prefix="aiperf-kueue-bench-") as tmp:
        for target in sizes:
            runs: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS if replay or k != "replay"}
            records = Path(tmp) / f"resources-{target}.json"
            for _ in range(repeat):
                program = _child("program", target, records)
                runs["program"].append(program)
                runs["floor"].append(_child("floor", program["resources"]))
                if replay:
                    runs["replay"].append(_child("replay", program["resources"], records))
                if echo:
                    print(
                        f"  {target}: " + ", ".join(f"{k} {v[-1]['wall']:.2f}s" for k, v in runs.items()),
                        file=sys.stderr,
                    )
            summary = summarise(target, runs)
            summary["fleet"] = runs["program"][0]["fleet"]
            summary["expectedResources"] = runs["program"][0]["expected"]
            summary["measurements"] = runs
            summaries.append(summary)
    return {"machine": machine(), "repeat": repeat, "sizes": summaries, "growth": growth(summaries)}


def main(argv: list[str] | None = None) -> int:
    """Console entry point."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.bench", description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument(
        "--sizes",
        default=",".join(str(s) for s in DEFAULT_SIZES),
        help="comma-separated resource counts to aim for (default: 100,1000,10000)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="measurements per size and kind; medians are reported")
    parser.add_argument("--no-replay", action="store_true", help="skip the replay measurement")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help=f"where to write JSON (default {DEFAULT_JSON})")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    report = run(sizes, max(1, args.repeat), not args.no_replay)
    machine_info = report["machine"]
    print(
        f"aiperf-kueue bench: {machine_info['cores']} cores ({machine_info['cpu'] or 'unknown CPU'}), "
        f"Python {machine_info['python']}, pulumi {machine_info['pulumi']}, "
        f"pulumi-kubernetes {machine_info['pulumi-kubernetes']}; median of {report['repeat']} run(s)"
    )
    for line in table(report):
        print(line)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    # The real-engine half of `make bench` (tests/e2e/bench_engine.py) owns this section of the same file.
    if args.json.is_file() and "realEngine" in (earlier := json.loads(args.json.read_text())):
        report["realEngine"] = earlier["realEngine"]
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nWrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
