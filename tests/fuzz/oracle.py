"""Loader-level differential check: aiperf-kueue's stack file reader against the Pulumi CLI's own.

``tests/fuzz/pulumi_reader`` (Go) reads stack files with the Pulumi SDK's
``workspace.LoadProjectStack`` at the CLI's version and prints the values the engine hands the
program. For every fuzz case with a stack file, both readers read it:

- both accept: every config key and value must be the same ("same");
- Pulumi accepts, aiperf-kueue refuses: a spelling this project refuses on purpose (docs/yaml.md),
  counted by the reason given ("stricter");
- aiperf-kueue accepts, Pulumi refuses, or the values differ: a mismatch, reported.
"""

from __future__ import annotations

import collections
import json
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.stackfile import yaml_input
from tests.fuzz.cases import generate

#: What a refusal is about, by a phrase of its message.
_REASONS = (
    ("date/time", "timestamp"),
    ("mapping key must be text", "non-text key"),
    ("tag ", "tag"),
    ("multi-line", "multi-line text starting blank"),
    ("top-level key", "unknown top-level key"),
    ("namespace", "near-miss namespace"),
    ("second YAML document", "second document"),
    ("again (also as", "key set twice"),
    ("YAML nodes", "node bound"),
    ("nested more than", "depth bound"),
    ("characters, more than", "length bound"),
    ("bytes", "size bound"),
    ("!!binary", "binary not UTF-8"),
    ("not a config key", "bad config key"),
    ("merge key", "merge"),
)


@dataclass
class Report:
    """Counts by outcome, and the mismatches."""

    counts: collections.Counter[str] = field(default_factory=collections.Counter)
    mismatches: list[str] = field(default_factory=list)

    def text(self) -> str:
        lines = [f"{sum(self.counts.values())} stack files read by both:"]
        lines += [f"  {n:6d}  {what}" for what, n in sorted(self.counts.items())]
        lines += [f"MISMATCH {m}" for m in self.mismatches[:40]]
        return "\n".join(lines)


def compare(binary: Path, cases: int, seed: int = 0, start: int = 0) -> Report:
    """Read every case's stack file with both readers."""
    report = Report()
    with tempfile.TemporaryDirectory(prefix="aiperf-kueue-oracle-") as tmp:
        paths: list[tuple[int, Path]] = []
        for index in range(start, start + cases):
            case = generate(index, seed)
            if not case.stack_file or case.stack_file not in case.files:
                continue
            path = Path(tmp) / f"{index}.yaml"
            path.write_bytes(case.files[case.stack_file])
            paths.append((index, path))
        for chunk in range(0, len(paths), 500):
            batch = paths[chunk : chunk + 500]
            pulumi = _pulumi(binary, [p for _, p in batch])
            for (index, path), theirs in zip(batch, pulumi, strict=True):
                _compare_one(index, path, theirs, report)
    return report


def _pulumi(binary: Path, paths: list[Path]) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(binary)],
        input=("\n".join(str(p) for p in paths) + "\n").encode(),
        capture_output=True,
        check=True,
        timeout=3600,
    )
    lines = [line for line in done.stdout.decode("utf-8", "replace").split("\n") if line]
    assert len(lines) == len(paths), done.stderr.decode(errors="replace")[-2000:]
    return [json.loads(line) for line in lines]


def _compare_one(index: int, path: Path, theirs: dict[str, Any], report: Report) -> None:
    try:
        ours = yaml_input.read_stack_document(path).config
    except ConfigError as exc:
        if theirs["ok"]:
            report.counts[f"stricter: {_reason(exc.lines()[0])}"] += 1
        else:
            report.counts["both refuse"] += 1
        return
    if not theirs["ok"]:
        report.counts["MISMATCH: only Pulumi refuses"] += 1
        report.mismatches.append(f"#{index}: Pulumi refuses ({theirs['error'][:200]}), aiperf-kueue accepts")
        return
    expected = {k: (v["value"], v["object"]) for k, v in (theirs.get("config") or {}).items()}
    got = {k: yaml_input.engine_text(_blinded(v)) for k, v in ours.items()}
    if set(expected) != set(got):
        report.counts["MISMATCH: keys"] += 1
        report.mismatches.append(f"#{index}: keys {sorted(set(expected) ^ set(got))}")
        return
    for key, (text, is_object) in expected.items():
        mine, _ = got[key]
        if not _same(text, mine, is_object):
            report.counts["MISMATCH: values"] += 1
            report.mismatches.append(f"#{index}: {key}: Pulumi {text[:200]!r}, aiperf-kueue {mine[:200]!r}")
            return
    report.counts["same"] += 1


def _blinded(value: Any) -> Any:
    """Secrets as ``pulumi config --json`` shows them without ``--show-secrets``."""
    if isinstance(value, yaml_input.Secure):
        return "[secret]"
    if isinstance(value, dict):
        return {k: _blinded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_blinded(v) for v in value]
    return value


def _same(theirs: str, mine: str, is_object: bool) -> bool:
    if theirs == mine:
        return True
    if not is_object:
        return False
    try:
        return bool(_typed(theirs) == _typed(mine))
    except ValueError:
        return False


def _typed(text: str) -> Any:
    """JSON with every number tagged int or float: 1 and 1.0 are different values to the program."""
    return json.loads(text, parse_int=lambda n: ("int", int(n)), parse_float=lambda n: ("float", float(n)))


def _reason(line: str) -> str:
    return next((reason for phrase, reason in _REASONS if phrase in line), "other: " + line.split(": ", 1)[-1][:60])
