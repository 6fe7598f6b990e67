"""Secrets under the real engine: set with the real CLI, leaf by leaf and as a whole key, never in plaintext.

The secrets are set as users set them, with ``pulumi config set --secret`` (the passphrase secrets provider writes
their ciphertext into the stack file). After ``pulumi up``: the exported state holds no plaintext of them, the
preview output shows none, and the AIPerfJob in the cluster carries the value. A config error under ``pulumi up``
never prints a secret key's values.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from pulumi import automation as auto

from tests.e2e.conftest import BUILD, JOBSET_MODULE, KUEUE_MODULE, ROOT, ClusterFactory, Report
from tests.e2e.engine import EngineRun, e2e_config, engine_run

STACK = ROOT / "stacks" / "Pulumi.dev.yaml"
LEAF = "hf_e2e_leaf_secret_0123456789"
WHOLE = "hf_e2e_whole_secret_9876543210"
BAD = "hf_e2e_bad_secret_5555555555"


@pytest.fixture(scope="module")
def secret_stack(new_cluster: ClusterFactory, binaries: dict[str, str]) -> Iterator[EngineRun]:
    """dev, its job given an env var whose value is set with `pulumi config set --secret --path`."""
    cluster = new_cluster("engine-secrets", controllers=False)
    config = e2e_config(STACK, KUEUE_MODULE, JOBSET_MODULE)
    with engine_run("secrets", STACK, cluster, binaries, BUILD.PULUMI_KUBERNETES, config) as run:
        env = "aiperf-kueue:jobs[0].spec.podTemplate.env[0]"
        run.engine.cli("config", "set", "--stack", "secrets", "--path", f"{env}.name", "HF_TOKEN", cwd=run.work)
        run.engine.cli("config", "set", "--stack", "secrets", "--secret", "--path", f"{env}.value", LEAF, cwd=run.work)
        assert LEAF not in run.stack_file.read_text()
        yield run
        assert run.controllers.errors == []


def _everything_the_engine_keeps(run: EngineRun) -> str:
    state = run.engine.cli("stack", "export", "--stack", run.name, cwd=run.work).stdout
    history = run.engine.cli("stack", "history", "--stack", run.name, "--json", cwd=run.work).stdout
    return state + history + run.stack_file.read_text()


def _job_env(run: EngineRun) -> list[dict[str, str]]:
    jobs = run.cluster.get_json("aiperfjobs", "-n", "aiperf-benchmarks")["items"]
    return [e for j in jobs for e in j["spec"].get("podTemplate", {}).get("env", [])]


def test_a_leaf_secret_reaches_the_cluster_but_not_the_state_or_the_preview(
    secret_stack: EngineRun, report: Report
) -> None:
    up = secret_stack.up()
    assert up.summary.result == "succeeded"
    assert {"name": "HF_TOKEN", "value": LEAF} in _job_env(secret_stack)
    preview = secret_stack.preview(diff=True)
    kept = _everything_the_engine_keeps(secret_stack)
    assert (LEAF in kept, LEAF in preview.stdout + up.stdout) == (False, False)
    report.checks["secret leaf"] = "set with config set --secret --path: in the cluster, not in state or output"


def test_a_whole_secret_jobs_key_stays_secret_too(secret_stack: EngineRun, report: Report) -> None:
    shown = secret_stack.engine.cli(
        "config", "get", "aiperf-kueue:jobs", "--stack", "secrets", "--json", cwd=secret_stack.work
    ).stdout
    jobs = json.loads(json.loads(shown)["value"]) if "value" in json.loads(shown) else json.loads(shown)
    jobs[0]["spec"]["podTemplate"]["env"][0]["value"] = WHOLE
    secret_stack.engine.cli(
        "config", "set", "--stack", "secrets", "--secret", "aiperf-kueue:jobs", json.dumps(jobs), cwd=secret_stack.work
    )
    up = secret_stack.up()
    assert up.summary.result == "succeeded"
    assert {"name": "HF_TOKEN", "value": WHOLE} in _job_env(secret_stack)
    preview = secret_stack.preview(diff=True)
    kept = _everything_the_engine_keeps(secret_stack)
    assert (WHOLE in kept, WHOLE in preview.stdout + up.stdout) == (False, False)
    report.checks["secret whole key"] = "config set --secret on the whole jobs key: not in state or output"


def test_a_config_error_under_up_never_prints_a_secret_value(secret_stack: EngineRun) -> None:
    shown = json.loads(
        secret_stack.engine.cli(
            "config", "get", "aiperf-kueue:jobs", "--stack", "secrets", "--json", cwd=secret_stack.work
        ).stdout
    )
    jobs = json.loads(shown["value"]) if "value" in shown else shown
    jobs[0]["spec"]["benchmark"]["endpoint"]["type"] = BAD  # not an endpoint type: a config error quoting it
    secret_stack.engine.cli(
        "config", "set", "--stack", "secrets", "--secret", "aiperf-kueue:jobs", json.dumps(jobs), cwd=secret_stack.work
    )
    with pytest.raises(auto.CommandError) as failed:
        secret_stack.up()
    output = str(failed.value)
    assert "invalid stack config" in output
    assert BAD not in output
