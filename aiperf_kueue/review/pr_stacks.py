"""Which stacks a pull request affects: ``python -m aiperf_kueue.review.pr_stacks origin/main`` prints a JSON list.

A stack is affected when its ``stacks/Pulumi.<stack>.yaml`` changed; every stack is when
program code changed (what ``pulumi up`` runs, or what plans it offline): ``diff
origin/<base>:<stack> <stack>`` plans the base with the base's own code, so its report shows
what the code change does to each stack (or "No changes." where it does nothing). Stacks
whose file the pull request deletes are left out: there is nothing to preview.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

#: Paths (from the repository root) whose change can change any stack's plan.
PROGRAM_CODE = re.compile(
    r"^(__main__\.py|Pulumi\.yaml|pyproject\.toml|requirements[^/]*\.txt|(aiperf_kueue|components|offline)/.+)$"
)
_STACK_FILE = re.compile(r"^stacks/Pulumi\.(?P<stack>[^/]+)\.yaml$")


def affected_stacks(changed_files: Iterable[str], present_stacks: Iterable[str]) -> list[str]:
    """The present stacks to diff, sorted: all when program code changed, else those whose file changed."""
    changed = list(changed_files)
    present = sorted(set(present_stacks))
    if any(PROGRAM_CODE.fullmatch(f) for f in changed):
        return present
    touched = {m["stack"] for f in changed if (m := _STACK_FILE.fullmatch(f))}
    return [s for s in present if s in touched]


def present_stacks(root: Path) -> list[str]:
    """Stack names with a file under ``root/stacks``."""
    return sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (root / "stacks").glob("Pulumi.*.yaml"))


def changed_files(base: str, root: Path) -> list[str]:
    """Files changed between the merge base of ``base`` and ``HEAD`` and ``HEAD``."""
    done = subprocess.run(
        ["git", "-C", str(root), "diff", "--name-only", f"{base}...HEAD"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


def main(argv: list[str] | None = None) -> int:
    """Print the affected stacks as a JSON list (for a workflow matrix)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m aiperf_kueue.review.pr_stacks BASE_REV", file=sys.stderr)
        return 2
    root = Path.cwd()
    print(json.dumps(affected_stacks(changed_files(args[0], root), present_stacks(root))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
