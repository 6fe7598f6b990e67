"""The same stack planned in two processes gives the same bytes in every file ``plan`` writes.

The two processes differ in ``PYTHONHASHSEED`` (set and dict-of-set orders), and the second one
also runs protobuf's pure-Python runtime instead of upb: resource inputs reach the engine as
protobuf Structs, whose map order is the runtime's, and used to leak into the files.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import CHECKED_STACKS, ROOT, stack_file

FILES = ("manifests.yaml", "resources.json", "plan.json", "charts.yaml")


def plan_in_subprocess(stack: str, out: Path, **env: str) -> dict[str, bytes]:
    done = subprocess.run(
        [
            sys.executable, "-m", "aiperf_kueue.cli.cli", "plan", str(stack_file(stack)),
            "--out", str(out),
        ],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return {name: (out / name).read_bytes() for name in FILES}


@pytest.mark.parametrize("stack", CHECKED_STACKS)
def test_plans_are_byte_identical_across_processes(stack: str, tmp_path: Path) -> None:
    first = plan_in_subprocess(stack, tmp_path / "a", PYTHONHASHSEED="1")
    second = plan_in_subprocess(
        stack, tmp_path / "b", PYTHONHASHSEED="2024", PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION="python"
    )
    assert [name for name in FILES if first[name] != second[name]] == []
    assert all(first[name] for name in FILES)
