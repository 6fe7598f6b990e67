"""One measurement in a fresh process: ``python -m tests.bench.child KIND RESOURCES [RECORDS]``.

``KIND`` is ``program``, ``floor`` or ``replay``.

Prints one JSON object on stdout: wall and CPU seconds of the measured work, resources
registered, and the process's peak RSS (``VmHWM``), which is therefore per measurement.

``program``: ``aiperf-kueue plan`` on a generated fleet, exactly as the console command
runs it (validation, the program under the offline engine, report and files written to a
temporary directory, console text to ``/dev/null``); only reading the stack file is
replaced by the fleet's values, generated in memory beforehand.

``floor``: the same number of bare ``CustomResource`` registrations under the same engine.

``replay``: the resources a ``program`` measurement recorded (its ``resources.json``, saved
to RECORDS), registered again under the same engine with no logic (:mod:`tests.bench.replay`).
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.bench import fleet

FLOOR_PROGRAM = Path(__file__).resolve().parent / "floor_program.py"
REPLAY_PROGRAM = Path(__file__).resolve().parent / "replay_program.py"


def peak_rss_mib() -> float:
    """Peak resident set size of the current process (``VmHWM``), MiB."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure_program(target: int, records: Path | None = None) -> dict[str, Any]:
    """Plan a fleet of about ``target`` resources; time everything ``plan`` does after reading the stack.

    ``records``: where to keep the plan's ``resources.json`` (for a replay).
    """
    from aiperf_kueue.cli import cli, engine
    from aiperf_kueue.stackfile.loader import StackFile

    size = fleet.fleet_for(target)
    values = fleet.fleet_values(size)
    name = f"fleet-{target}"
    with tempfile.TemporaryDirectory(prefix="aiperf-kueue-bench-") as tmp:
        out = Path(tmp) / "out"
        # The stack "file" is the generated fleet, already in memory.
        def generated(path: Path, source: str | None = None) -> StackFile:
            return StackFile(values, set(), {})

        cli.read_stack = generated  # type: ignore[attr-defined]  # the name the CLI calls
        with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):
            cpu, start = _cpu(), time.perf_counter()
            status = cli.main(["plan", f"{name}.yaml", "--out", str(out)])
            engine.close_worker_loops()  # what atexit would do, inside the measurement
            wall, cpu = time.perf_counter() - start, _cpu() - cpu
        if status != 0:
            raise SystemExit(f"plan exited {status}")
        text = (out / "resources.json").read_text()
        if records is not None:
            records.write_text(text)
        registered = json.loads(text)
        files = {p.name: p.stat().st_size for p in sorted(out.iterdir())}
    return {
        "kind": "program",
        "target": target,
        "fleet": {**size.__dict__, "jobs": size.jobs},
        "expected": fleet.expected_resources(size),
        "resources": len(registered),
        "files": files,
        "wall": wall,
        "cpu": cpu,
        "peakRssMiB": peak_rss_mib(),
    }


def measure_floor(count: int) -> dict[str, Any]:
    """Register ``count`` bare CustomResources under the offline engine."""
    from aiperf_kueue.cli import engine

    cpu, start = _cpu(), time.perf_counter()
    run = engine.run_program("floor", {"count": str(count)}, set(), program=FLOOR_PROGRAM)
    engine.close_worker_loops()
    wall, cpu = time.perf_counter() - start, _cpu() - cpu
    return {
        "kind": "floor",
        "target": count,
        "expected": count,
        "resources": len(run.resources),
        "wall": wall,
        "cpu": cpu,
        "peakRssMiB": peak_rss_mib(),
    }


def measure_replay(records: Path) -> dict[str, Any]:
    """Register the resources of ``records`` (a ``resources.json``) again, with no logic."""
    from aiperf_kueue.cli import engine
    from tests.bench import replay

    replay.RECORDS[:] = json.loads(records.read_text())
    cpu, start = _cpu(), time.perf_counter()
    run = engine.run_program("replay", {}, set(), program=REPLAY_PROGRAM)
    engine.close_worker_loops()
    wall, cpu = time.perf_counter() - start, _cpu() - cpu
    return {
        "kind": "replay",
        "target": len(replay.RECORDS),
        "expected": len(replay.RECORDS),
        "resources": len(run.resources),
        "wall": wall,
        "cpu": cpu,
        "peakRssMiB": peak_rss_mib(),
    }


def main(argv: list[str]) -> int:
    """``{program|floor|replay} RESOURCES [RECORDS]`` → one JSON line."""
    kind, count = argv[0], int(argv[1])
    records = Path(argv[2]) if len(argv) > 2 else None
    if kind == "program":
        result = measure_program(count, records)
    elif kind == "floor":
        result = measure_floor(count)
    elif kind == "replay" and records is not None:
        result = measure_replay(records)
    else:
        raise SystemExit(
            f"usage: python -m tests.bench.child {{program|floor|replay}} RESOURCES [RECORDS]; got {argv}"
        )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
