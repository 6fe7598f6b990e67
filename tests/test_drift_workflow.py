"""``.github/workflows/drift.yml``: the scheduled drift check, actionlint-clean, doing what docs/inventory.md says."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.support import ROOT
from tests.test_workflow import actionlint

WORKFLOW = ROOT / ".github" / "workflows" / "drift.yml"


def load() -> dict[str, Any]:
    data: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text())
    data["on"] = data.pop(True)  # YAML 1.1 reads the key `on` as true
    return data


def steps(job: str) -> list[dict[str, Any]]:
    return load()["jobs"][job]["steps"]  # type: ignore[no-any-return]


def test_drift_workflow_passes_actionlint() -> None:
    done = actionlint(WORKFLOW)
    assert (done.returncode, done.stdout) == (0, ""), done.stdout + done.stderr


def test_scheduled_with_the_least_permissions() -> None:
    data = load()
    assert data["on"] == {"schedule": [{"cron": "17 6 * * 1-5"}], "workflow_dispatch": None}
    assert data["permissions"] == {"contents": "read", "issues": "write"}
    assert data["env"] == {"DRIFT_STACKS": ""}


def test_every_action_is_pinned() -> None:
    uses = [s["uses"] for job in load()["jobs"].values() for s in job["steps"] if "uses" in s]
    assert uses == [
        "actions/checkout@v4.2.2",
        "actions/checkout@v4.2.2",
        "actions/setup-python@v5.3.0",
        "actions/github-script@v7.0.1",
    ]


def test_drift_runs_per_stack_with_exit_code_and_only_with_the_kubeconfig() -> None:
    drift = load()["jobs"]["drift"]
    assert drift["needs"] == "stacks"
    assert drift["strategy"]["matrix"] == {"stack": "${{ fromJSON(needs.stacks.outputs.stacks) }}"}
    assert drift["env"]["HAS_KUBECONFIG"] == "${{ secrets.KUBECONFIG != '' }}"
    step = next(s for s in drift["steps"] if s.get("id") == "drift")
    assert step["if"] == "env.HAS_KUBECONFIG == 'true'"
    assert (
        'venv/bin/aiperf-kueue drift "${STACK}" --kubeconfig "${RUNNER_TEMP}/kubeconfig" --out "drift-${STACK}.json" '
        '--exit-code > "drift-${STACK}.txt" 2> drift.err' in step["run"]
    )
    issue = next(s for s in drift["steps"] if s.get("uses", "").startswith("actions/github-script@"))
    assert issue["if"] == "steps.drift.outputs.rc == '0' || steps.drift.outputs.rc == '3'"
    assert issue["env"]["DRIFTED"] == "${{ steps.drift.outputs.rc == '3' }}"
    assert "<!-- aiperf-kueue-drift stack=${stack} -->" in issue["with"]["script"]
    fail = drift["steps"][-1]
    assert (
        fail["if"] == "steps.drift.outputs.rc != '' && steps.drift.outputs.rc != '0' && steps.drift.outputs.rc != '3'"
    )


def test_the_stacks_step_lists_the_committed_stacks(tmp_path: Path) -> None:
    script = next(s for s in steps("stacks") if s.get("id") == "stacks")["run"]
    (tmp_path / "stacks").mkdir()
    for name in ("prod", "dev", "staging-eu"):
        (tmp_path / "stacks" / f"Pulumi.{name}.yaml").write_text("config: {}\n")
    output = tmp_path / "output"

    def listed(drift_stacks: str) -> list[str]:
        output.write_text("")
        env = {"PATH": "/usr/bin:/bin", "GITHUB_OUTPUT": str(output), "DRIFT_STACKS": drift_stacks}
        subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, env=env, check=True, capture_output=True)
        key, _, value = output.read_text().strip().partition("=")
        assert key == "stacks"
        return json.loads(value)  # type: ignore[no-any-return]

    assert listed("") == ["dev", "prod", "staging-eu"]
    assert listed('["prod"]') == ["prod"]
