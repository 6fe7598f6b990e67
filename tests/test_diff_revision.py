"""``diff REV:STACK``: the base planned by the program code at REV, in a temporary git repository."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from aiperf_kueue.cli import cli, sources
from tests.support import ROOT

PLANNER = "aiperf_kueue/queues/planner.py"
#: The base revision's planner keeps twice the headroom: dev's 10% becomes 20%.
HEADROOM = "keep = 1 - Fraction(headroom) / 100"
DOUBLED = "keep = 1 - Fraction(headroom) / 50"


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def _commit(repo: Path, tag: str) -> None:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", tag)
    _git(repo, "tag", tag)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's tracked files (as in this working tree) committed four times:

    - ``doubled``: the planner keeps twice the headroom (a program code change);
    - ``current``: this working tree;
    - ``invalid``: dev's stack file invalid (``nodes: 0``);
    - ``broken``: the planner raises on import, so that revision's ``plan`` exits 1.
    """
    root = tmp_path_factory.mktemp("rev") / "repo"
    tracked = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z"], check=True, capture_output=True, text=True
    ).stdout.split("\0")
    for name in filter(None, tracked):
        source = ROOT / name
        if source.is_file():  # tracked but deleted in this working tree: not part of it
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    _git(root, "init", "-q")
    planner = root / PLANNER
    current = planner.read_text()
    assert current.count(HEADROOM) == 1, f"{PLANNER} no longer computes the headroom as this test patches it"
    planner.write_text(current.replace(HEADROOM, DOUBLED))
    _commit(root, "doubled")
    planner.write_text(current)
    _commit(root, "current")
    dev = root / "stacks" / "Pulumi.dev.yaml"
    valid = dev.read_text()
    assert valid.count("nodes: 1\n") == 1
    dev.write_text(valid.replace("nodes: 1\n", "nodes: 0\n"))
    _commit(root, "invalid")
    dev.write_text(valid)
    planner.write_text(current + '\nraise RuntimeError("broken at this revision")\n')
    _commit(root, "broken")
    return root


def test_the_base_is_planned_by_the_program_code_at_its_revision(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    assert cli.diff_command("doubled:dev", "dev", None, exit_code=True, repo_root=repo) == 3
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[3:8] == [
        "0 to create, 1 to update, 0 to replace, 0 to delete",
        "",
        "- **base:** `doubled:dev` (`stacks/Pulumi.dev.yaml` at `doubled`, planned with the program code at `doubled`)",
        "- **head:** `dev` (`stacks/Pulumi.dev.yaml`, planned with this checkout's program code)",
        "",
    ]
    start = lines.index("### Quotas")
    assert lines[start : start + 6] == [
        "### Quotas",
        "",
        "| ClusterQueue / flavor / resource | quota | base | head | delta | share of pool |",
        "|---|---|---|---|---|---|",
        "| benchmarks / default / cpu | nominalQuota | 6400m | 7200m | +800m | 100% |",
        "| benchmarks / default / memory | nominalQuota | 13107Mi | 14745Mi | +1638Mi | 100% |",
    ]
    assert "| update | `queues-cq-benchmarks` | ClusterQueue benchmarks |" in out


def test_a_revision_whose_own_code_finds_its_config_invalid_is_exit_2_named_after_the_revision(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.diff_command("invalid:dev", "dev", None, exit_code=False, repo_root=repo) == 2
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err.splitlines() == [
        "invalid:stacks/Pulumi.dev.yaml: aiperf-kueue:inventory.pools[0].nodes: must be >= 1, got 0"
    ]


def test_a_revision_whose_code_fails_is_planned_with_this_checkout_and_says_so(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    assert cli.diff_command("broken:dev", "dev", None, exit_code=True, repo_root=repo) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[3:9] == [
        "No changes.",
        "",
        "- **base:** `broken:dev` (`stacks/Pulumi.dev.yaml` at `broken`, planned with this checkout's program code)",
        "- **head:** `dev` (`stacks/Pulumi.dev.yaml`, planned with this checkout's program code)",
        "- The program code at `broken` could not plan `dev` (its `plan` exited 1: RuntimeError: broken at this "
        "revision), so this checkout's code planned `broken:dev`: what the program's code changed since `broken` "
        "does not show here.",
        "",
    ]


def test_the_revisions_code_runs_with_none_of_this_checkouts_packages(tmp_path: Path) -> None:
    # A tree whose aiperf_kueue lacks the planner: the editable install of this checkout
    # (``-e .``) must not fill the gap, nor shadow the tree's own packages.
    (tmp_path / "aiperf_kueue").mkdir()
    (tmp_path / "aiperf_kueue" / "__init__.py").write_text("")
    (tmp_path / "offline").mkdir()
    (tmp_path / "offline" / "__init__.py").write_text("")
    (tmp_path / "offline" / "cli.py").write_text(
        "import importlib.util, sys\n"
        "import aiperf_kueue\n\n"
        "def main():\n"
        "    print(aiperf_kueue.__file__)\n"
        "    print(importlib.util.find_spec('aiperf_kueue.queues'))\n"
        "    print(sys.argv[1:])\n"
        "    return 0\n"
    )
    command, env = sources.own_code_command(tmp_path, ["plan", "dev"])
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [str(tmp_path / "aiperf_kueue" / "__init__.py"), "None", "['plan', 'dev']"]
