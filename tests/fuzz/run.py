"""Run fuzz cases against the CLI and check the contract for each.

The contract, for every case: exit 0 or 2 only (``diff`` may also exit 4: destructive changes);
no traceback; on exit 2, nothing on stdout,
every stderr line one printable problem line starting with the input it is about, no Python
repr (``None``, ``True``, ``datetime.``...) and no pydantic wording, and nothing written; on exit 0,
a plan whose JSON is strict JSON. A case marked ``must_reject`` that exits 0 is a suspicious
accept. Each case runs in a worker process under a time and memory bound (a guard against
hangs, not a timing assert); a sample of cases also runs as a fresh ``python -m aiperf_kueue.cli.cli``.
"""

from __future__ import annotations

import collections
import contextlib
import io
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fuzz.cases import ROOT, Case, corrupt, generate

#: Seconds one case may take before the worker is killed and the case counts as a hang.
CASE_SECONDS = 120.0
#: Resident memory a worker may reach while running one case.
CASE_BYTES = 3 * 2**30
#: Every this many cases also run as a fresh ``python -m aiperf_kueue.cli.cli`` process.
SUBPROCESS_EVERY = 50

#: Python reprs and library wording that must never reach a user (outside quoted values).
_LEAKS = re.compile(
    r"\bNone\b|\bTrue\b|\bFalse\b|(?<![.\w])nan\b|(?<![.\w-])inf\b|datetime\.|\bb'|Decimal\(|Fraction\(|Input should|"
    r"Value error,|validation error|<class |object at 0x|Traceback|\bType[A-Z]\w*Error\b|"
    # A list or mapping shown as a repr ("got ['name', 'nodes', …]"), not in words.
    r"\bgot \[|\bgot \{"
)
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`")


@dataclass
class Result:
    """What one case did, and what was wrong with it."""

    case: Case
    code: int | None
    out: str
    err: str
    seconds: float
    problems: list[str] = field(default_factory=list)
    how: str = "in-process"

    @property
    def outcome(self) -> str:
        if self.problems:
            return f"FAIL {self.problems[0].split(':')[0]}"
        return {
            0: "planned (exit 0)",
            2: "rejected (exit 2)",
            3: "compared, changes (exit 3)",
            4: "compared, destructive (exit 4)",
        }.get(
            self.code or 0, f"exit {self.code}"
        )


def materialise(case: Case, where: Path) -> list[str]:
    """Write the case's files under ``where`` and return its argv."""
    for name, data in case.files.items():
        if name.startswith("corrupt/"):
            continue
        target = where / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    if case.plan_first:
        from aiperf_kueue.cli.cli import main

        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            main(["plan", case.plan_first, "--out", str(where / "plan")])
        for name, data in case.files.items():
            if name.startswith("corrupt/") and data.decode() != "none":
                corrupt(where / "plan" / name.removeprefix("corrupt/"), data.decode())
    return [arg.replace("{dir}", str(where)) for arg in case.argv]


def run_in_process(argv: list[str]) -> tuple[int, str, str]:
    """``aiperf-kueue ARGV`` in this process: exit code, stdout, stderr."""
    from aiperf_kueue.cli.cli import main

    out, err = io.StringIO(), io.StringIO()
    code: int
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
            code = 1
    return code, out.getvalue(), err.getvalue()


def check(result: Result, where: Path) -> None:
    """Append to ``result.problems`` every way the case broke the contract."""
    case, code, out, err = result.case, result.code, result.out, result.err
    problems = result.problems
    if code is None:
        return
    # diff exits 4 for a change that loses live state (its Destructive section): a verdict, not a failure.
    if code not in (0, 2) and not (code == 4 and case.argv[0] == "diff"):
        problems.append(f"exit {code}: {err.strip().splitlines()[-1] if err.strip() else ''}")
    if "Traceback" in err or "Traceback" in out:
        problems.append("traceback")
    if code == 0 and case.must_reject:
        problems.append("suspicious accept: " + ",".join(case.mutations))
    if code == 2:
        if out:
            problems.append("stdout on exit 2")
        prefixes = [str(where / case.stack_file)] if case.stack_file else []
        prefixes += [s.replace("{dir}", str(where)) for s in case.sources]
        prefixes += [a.replace("{dir}", str(where)) for a in case.argv]
        prefixes += ["stacks/", str(ROOT), str(where), "aiperf-kueue"]
        lines = err.split("\n")
        if lines[-1] == "":
            lines.pop()
        if not lines:
            problems.append("exit 2 without a problem line")
        repeated = sorted({line for line in lines if lines.count(line) > 1})
        if repeated:
            problems.append(f"line printed twice: {repeated[0][:160]}")
        for line in lines:
            if not line.isprintable():
                problems.append(f"unprintable line: {line[:120]!r}")
            elif not any(line.startswith(_shown(p)) for p in prefixes):
                problems.append(f"line not about an input: {line[:160]}")
            elif _LEAKS.search(_QUOTED.sub("''", line)):
                problems.append(f"python repr or library wording: {line[:200]}")
            elif len(line) > 2000:
                problems.append(f"line of {len(line)} characters")
        for name in case.must_not_write:
            if (where / name).exists():
                problems.append(f"wrote {name} on exit 2")
    if code == 0 and case.argv[0] == "plan":
        try:
            json.loads((where / "out" / "plan.json").read_text(), parse_constant=_refuse)
            json.loads((where / "out" / "resources.json").read_text(), parse_constant=_refuse)
        except (OSError, ValueError) as exc:
            problems.append(f"plan written is not strict JSON: {exc}")


def _shown(prefix: str) -> str:
    from aiperf_kueue.common.display import cut, escape

    return cut(escape(prefix)) if len(prefix) > 80 else escape(prefix)


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} in a plan file")


# --- the worker: runs cases in-process, one JSON line in and out per case


def worker() -> None:
    """Serve cases from stdin: ``{"index", "seed", "dir"}`` → ``{"code", "out", "err", "seconds"}``."""
    for line in sys.stdin:
        request = json.loads(line)
        case = generate(request["index"], request["seed"])
        where = Path(request["dir"])
        started = time.monotonic()
        try:
            argv = materialise(case, where)
            code, out, err = run_in_process(argv)
        except BaseException:
            code, out, err = 99, "", "fuzzer could not set up the case:\n" + traceback.format_exc()
        reply = {"code": code, "out": out[-20000:], "err": err[-200000:], "seconds": time.monotonic() - started}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


class Worker:
    """A worker process, restarted after a hang or a blown memory bound."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> subprocess.Popen[str]:
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.fuzz", "--worker"],
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                env={**os.environ, "PYTHONHASHSEED": "0"},
            )
        return self.process

    def run(self, index: int, seed: int, where: Path) -> tuple[int | None, str, str, float, str]:
        process = self.start()
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps({"index": index, "seed": seed, "dir": str(where)}) + "\n")
        process.stdin.flush()
        deadline = time.monotonic() + CASE_SECONDS
        started = time.monotonic()
        while True:
            ready, _, _ = select.select([process.stdout], [], [], 0.2)
            if ready:
                line = process.stdout.readline()
                if not line:
                    self.stop()
                    return None, "", "", time.monotonic() - started, "worker died"
                reply = json.loads(line)
                return reply["code"], reply["out"], reply["err"], reply["seconds"], ""
            if time.monotonic() > deadline:
                self.stop()
                return None, "", "", time.monotonic() - started, f"hang: no answer in {CASE_SECONDS:.0f} s"
            if _rss(process.pid) > CASE_BYTES:
                self.stop()
                return None, "", "", time.monotonic() - started, f"memory: over {CASE_BYTES // 2**20} MiB"

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


def run_subprocess(case: Case, where: Path) -> tuple[int | None, str, str, float, str]:
    """The case as a fresh ``python -m aiperf_kueue.cli.cli`` process."""
    argv = materialise(case, where)
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "aiperf_kueue.cli.cli", *argv],
            cwd=ROOT,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=CASE_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, "", "", time.monotonic() - started, f"hang: no exit in {CASE_SECONDS:.0f} s"
    return done.returncode, done.stdout, done.stderr, time.monotonic() - started, ""


def run(cases: int, seed: int = 0, start: int = 0, progress: bool = False) -> list[Result]:
    """Run cases ``start .. start+cases`` of ``seed``; every result, failures first in the summary."""
    results: list[Result] = []
    worker_process = Worker()
    try:
        for index in range(start, start + cases):
            case = generate(index, seed)
            with tempfile.TemporaryDirectory(prefix="aiperf-kueue-fuzz-") as tmp:
                where = Path(tmp)
                if SUBPROCESS_EVERY and index % SUBPROCESS_EVERY == SUBPROCESS_EVERY - 1:
                    code, out, err, seconds, broke = run_subprocess(case, where)
                    how = "subprocess"
                else:
                    code, out, err, seconds, broke = worker_process.run(index, seed, where)
                    how = "in-process"
                result = Result(case, code, out, err, seconds, how=how)
                if broke:
                    result.problems.append(broke)
                check(result, where)
                results.append(result)
                shutil.rmtree(where, ignore_errors=True)
            if progress and (index + 1) % 500 == 0:
                print(f"  {index + 1 - start} cases, {sum(1 for r in results if r.problems)} failing", file=sys.stderr)
    finally:
        worker_process.stop()
    return results


def summary(results: list[Result]) -> str:
    """Counts by outcome, by kind of mutation, and the failing cases."""
    outcomes = collections.Counter(r.outcome for r in results)
    by_mutation: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for r in results:
        for m in {m.split(":")[-1] for m in r.case.mutations}:
            by_mutation[m][r.outcome] += 1
    hows = collections.Counter(r.how for r in results)
    slowest = max(results, key=lambda r: r.seconds) if results else None
    lines = [f"{len(results)} cases ({', '.join(f'{n} {h}' for h, n in sorted(hows.items()))})", "outcomes:"]
    lines += [f"  {n:6d}  {o}" for o, n in outcomes.most_common()]
    lines.append("by mutation (planned / rejected / failing):")
    for name, counter in sorted(by_mutation.items()):
        fails = sum(n for o, n in counter.items() if o.startswith("FAIL"))
        lines.append(f"  {name:24s} {counter['planned (exit 0)']:6d} {counter['rejected (exit 2)']:6d} {fails:6d}")
    if slowest is not None:
        lines.append(
            f"slowest case: #{slowest.case.index} {slowest.seconds:.1f} s ({', '.join(slowest.case.mutations)})"
        )
    failing = [r for r in results if r.problems]
    for r in failing[:40]:
        lines.append(f"FAIL #{r.case.index} [{', '.join(r.case.mutations)}] {r.how}: {'; '.join(r.problems)[:400]}")
    return "\n".join(lines)
