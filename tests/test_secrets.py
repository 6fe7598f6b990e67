"""``secure:`` values beyond the endpoint: found, allowed only in job specs, kept secret leaf by leaf."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiperf_kueue.cli.cli import main
from aiperf_kueue.cli.engine import run_program
from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.stackfile import secrets
from aiperf_kueue.stackfile.loader import read_stack_file
from components import stack_config
from tests.support import ROOT, SECRET_SIG

SECRET_MARK = "1b47061264138c4ac30d75fd1eb44270"
ENV_CIPHER = "v1:ZW52LXZhbHVlLWNpcGhlcnRleHQ="
SWEEP_CIPHER = "v1:c3dlZXAtaGVhZGVyLWNpcGhlcnRleHQ="


def secret(value: Any) -> dict[str, Any]:
    return {SECRET_SIG: SECRET_MARK, "value": value}


def prod_document() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((ROOT / "stacks" / "Pulumi.prod.yaml").read_text())
    return document


def with_secure_env_and_header(document: dict[str, Any], env: Any, header: Any) -> dict[str, Any]:
    """prod, its job with a second env var and its sweep with a header, both given as ``env``/``header``."""
    config = document["config"]
    config["aiperf-kueue:jobs"][0]["spec"]["podTemplate"]["env"].append({"name": "HF_TOKEN", "value": env})
    config["aiperf-kueue:sweeps"][0]["spec"]["benchmark"]["endpoint"]["headers"] = {"X-Key": header}
    return document


def write(tmp_path: Path, name: str, document: dict[str, Any]) -> Path:
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def jobs_of(run: Any) -> dict[str, dict[str, Any]]:
    return {
        r["name"]: r["inputs"] for r in run.resources if r["type"] == "kubernetes:aiperf.nvidia.com/v1alpha1:AIPerfJob"
    }


# --------------------------------------------------------------------------- pure


def test_secure_paths_in_a_stack_file(tmp_path: Path) -> None:
    document = with_secure_env_and_header(prod_document(), {"secure": ENV_CIPHER}, {"secure": SWEEP_CIPHER})
    document["config"]["kubernetes:kubeconfig"] = {"secure": "v1:a3ViZQ=="}  # another project's key
    assert secrets.secure_paths_in_file(write(tmp_path, "s", document)) == [
        ("jobs", 0, "spec", "podTemplate", "env", 1, "value"),
        ("sweeps", 0, "spec", "benchmark", "endpoint", "headers", "X-Key"),
    ]
    assert secrets.secure_paths_in_file(tmp_path / "Pulumi.missing.yaml") == []


def test_placeholders_mark_the_same_paths_offline(tmp_path: Path) -> None:
    document = with_secure_env_and_header(prod_document(), {"secure": ENV_CIPHER}, {"secure": SWEEP_CIPHER})
    values, keys = read_stack_file(write(tmp_path, "s", document))
    assert keys == {"jobs", "sweeps"}
    paths = secrets.placeholder_paths(values)
    assert paths == secrets.secure_paths_in_file(tmp_path / "Pulumi.s.yaml")
    assert secrets.secret_strings(values, paths) == frozenset({"[encrypted 5f956caa]", "[encrypted 30c669c1]"})


def test_secure_values_outside_a_job_spec_are_config_errors() -> None:
    paths: list[secrets.KeyPath] = [
        ("queues", "cohort"),
        ("operator", "values", "imagePullSecret"),
        ("jobs", 0, "name"),
        ("jobs", 0, "spec", "benchmark", "endpoint", "apiKey"),  # allowed
        ("sweeps", 1, "spec"),  # the config model's to reject: a mapping is expected there
    ]
    with pytest.raises(ConfigError) as raised:
        secrets.check(paths, "Pulumi.s.yaml")
    assert raised.value.lines() == [f"Pulumi.s.yaml: aiperf-kueue:{p}: {secrets.NOT_HERE}" for p in (
        "queues.cohort", "operator.values.imagePullSecret", "jobs[0].name"
    )]  # fmt: skip
    assert secrets.NOT_HERE == (
        "is a secure value, but secure values are supported only inside an AIPerfJob spec (jobs[i].spec or "
        "sweeps[i].spec, e.g. a header value, an env value), where the program keeps each one "
        "a Pulumi secret; here it would reach the cluster and Pulumi state in plaintext"
    )
    secrets.check([("jobs", 3, "spec", "podTemplate", "env", 0, "value")], "Pulumi.s.yaml")


def test_without_the_stack_file_every_string_of_a_secret_keys_specs_is_secret() -> None:
    values = {
        "jobs": [{"name": "a", "spec": {"x": "one", "y": [{"z": "two"}], "n": 3, "empty": ""}}],
        "sweeps": [{"name": "b", "spec": {"x": "three"}}],
    }
    assert secrets.spec_strings(values, {"jobs"}) == frozenset({"one", "two"})
    assert secrets.spec_strings(values, {"jobs", "sweeps"}) == frozenset({"one", "two", "three"})
    assert secrets.spec_strings(values, {"queues"}) == frozenset()


# --------------------------------------------------------------------------- the program


def test_offline_every_secure_leaf_is_registered_as_a_secret(tmp_path: Path) -> None:
    document = with_secure_env_and_header(prod_document(), {"secure": ENV_CIPHER}, {"secure": SWEEP_CIPHER})
    values, keys = read_stack_file(write(tmp_path, "s", document))
    jobs = jobs_of(run_program("s", values, keys))
    assert jobs["jobs-bench-team-a-llama-latency"]["spec"]["podTemplate"]["env"][1] == {
        "name": "HF_TOKEN",
        "value": secret("[encrypted 5f956caa]"),
    }
    sweep_points = [n for n in jobs if n.startswith("jobs-bench-research-llama-sweep-")]
    assert len(sweep_points) == 5
    for name in sweep_points:
        assert jobs[name]["spec"]["benchmark"]["endpoint"]["headers"] == {"X-Key": secret("[encrypted 30c669c1]")}
    # The rest of the spec stays in clear, reviewable.
    assert jobs["jobs-bench-team-a-llama-latency"]["spec"]["podTemplate"]["env"][0]["name"] == "AIPERF_INJECTED_API_KEY"


def test_under_pulumi_up_the_decrypted_values_are_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As the engine hands them over: decrypted, only the whole key flagged secret; the stack
    file under the project's stacks/ says which leaves were secure."""
    document = with_secure_env_and_header(prod_document(), {"secure": ENV_CIPHER}, {"secure": SWEEP_CIPHER})
    (tmp_path / "stacks").mkdir()
    write(tmp_path / "stacks", "up", document)
    monkeypatch.setattr(stack_config, "PROJECT_DIR", tmp_path)
    plain = with_secure_env_and_header(prod_document(), "hf_0123456789abcdef", "sweep-key-0123")
    values = {k.partition(":")[2]: v for k, v in plain["config"].items()}
    run = run_program("up", values, {"jobs", "sweeps"})
    jobs = jobs_of(run)
    assert jobs["jobs-bench-team-a-llama-latency"]["spec"]["podTemplate"]["env"][1] == {
        "name": "HF_TOKEN",
        "value": secret("hf_0123456789abcdef"),
    }
    assert jobs["jobs-bench-research-llama-sweep-c8"]["spec"]["benchmark"]["endpoint"]["headers"] == {
        "X-Key": secret("sweep-key-0123")
    }
    # Nowhere else in clear: not in another input, an output or a warning.
    without_secrets = json.dumps(
        [[{k: v for k, v in r.items() if k != "inputs"} for r in run.resources], run.outputs, run.warnings]
    )
    assert "hf_0123456789abcdef" not in without_secrets
    assert run.warnings == []


def test_under_pulumi_up_without_the_stack_file_every_spec_string_is_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stack_config, "PROJECT_DIR", tmp_path)
    plain = with_secure_env_and_header(prod_document(), "hf_0123456789abcdef", "sweep-key-0123")
    values = {k.partition(":")[2]: v for k, v in plain["config"].items()}
    run = run_program("gone", values, {"jobs"})
    env = jobs_of(run)["jobs-bench-team-a-llama-latency"]["spec"]["podTemplate"]["env"]
    assert env[1] == {"name": secret("HF_TOKEN"), "value": secret("hf_0123456789abcdef")}
    assert run.warnings == [
        "the secret keys jobs have no secure: value in stacks/Pulumi.gone.yaml (set with --config-file, from an "
        "environment, or as one secure value): every string in their job specs is kept secret"
    ]


def test_plan_rejects_a_secure_value_outside_a_job_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = prod_document()
    document["config"]["aiperf-kueue:queues"]["cohort"] = {"secure": "v1:Y29ob3J0"}
    path = write(tmp_path, "bad", document)
    assert main(["plan", str(path), "--out", str(tmp_path / "out")]) == 2
    printed = capsys.readouterr()
    assert printed.err == f"{path}: aiperf-kueue:queues.cohort: {secrets.NOT_HERE}\n"
    assert printed.out == ""
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- a whole key secret, under pulumi up

JOBS_CIPHER = "v1:d2hvbGUtam9icy1rZXk="


def test_plan_refuses_a_whole_secure_jobs_key_it_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = prod_document()
    document["config"]["aiperf-kueue:jobs"] = {"secure": JOBS_CIPHER}
    path = write(tmp_path, "whole", document)
    assert main(["plan", str(path), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == f"{path}: aiperf-kueue:jobs: {secrets.WHOLE_UNREADABLE.format(key='jobs')}\n"
    assert not (tmp_path / "out").exists()


def test_under_pulumi_up_a_whole_secure_jobs_key_keeps_every_spec_string_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pulumi config set --secret aiperf-kueue:jobs '<json>'`: one secure value in the stack file."""
    document = with_secure_env_and_header(prod_document(), "hf_0123456789abcdef", "sweep-key-0123")
    values = {k.partition(":")[2]: v for k, v in document["config"].items()}
    document["config"]["aiperf-kueue:jobs"] = {"secure": JOBS_CIPHER}
    (tmp_path / "stacks").mkdir()
    write(tmp_path / "stacks", "whole", document)
    monkeypatch.setattr(stack_config, "PROJECT_DIR", tmp_path)
    run = run_program("whole", values, {"jobs"})
    job = jobs_of(run)["jobs-bench-team-a-llama-latency"]
    assert job["spec"]["podTemplate"]["env"][1] == {"name": secret("HF_TOKEN"), "value": secret("hf_0123456789abcdef")}
    # The name stays readable; its digest sees "[secret]" for every spec string (plan cannot read them).
    assert job["metadata"]["name"] == "llama-latency-b1b67c"
    assert "hf_0123456789abcdef" not in json.dumps([run.outputs, run.warnings])
    assert run.warnings == []


def test_under_pulumi_up_a_secret_key_from_elsewhere_keeps_its_spec_strings_secret_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key the engine flags secret that the stack file holds in clear: from an ESC environment or --config-file."""
    document = with_secure_env_and_header(prod_document(), "hf_0123456789abcdef", "sweep-key-0123")
    (tmp_path / "stacks").mkdir()
    write(tmp_path / "stacks", "esc", document)
    monkeypatch.setattr(stack_config, "PROJECT_DIR", tmp_path)
    values = {k.partition(":")[2]: v for k, v in document["config"].items()}
    run = run_program("esc", values, {"sweeps"})
    headers = jobs_of(run)["jobs-bench-research-llama-sweep-c8"]["spec"]["benchmark"]["endpoint"]["headers"]
    assert headers == {"X-Key": secret("sweep-key-0123")}
    assert run.warnings == [
        "the secret keys sweeps have no secure: value in stacks/Pulumi.esc.yaml (set with --config-file, from an "
        "environment, or as one secure value): every string in their job specs is kept secret"
    ]


def test_under_pulumi_up_a_secret_key_outside_the_job_specs_is_refused_without_its_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stack_config, "PROJECT_DIR", tmp_path)
    values = {k.partition(":")[2]: v for k, v in prod_document()["config"].items()}
    import pulumi

    with pytest.raises(pulumi.RunError) as raised:
        run_program("gone", values, {"queues"})
    assert str(raised.value).splitlines() == [
        "invalid stack config:",
        f"stacks/Pulumi.gone.yaml: aiperf-kueue:queues: {secrets.NOT_HERE_WHOLE}",
    ]


def test_under_pulumi_up_a_config_error_never_shows_a_secret_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stack_config, "PROJECT_DIR", tmp_path)
    document = prod_document()
    document["config"]["aiperf-kueue:jobs"][0]["spec"]["benchmark"]["endpoint"]["type"] = "hf_0123456789abcdef"
    values = {k.partition(":")[2]: v for k, v in document["config"].items()}
    import pulumi

    with pytest.raises(pulumi.RunError) as raised:
        run_program("gone", values, {"jobs"})
    message = str(raised.value)
    assert "hf_0123456789abcdef" not in message
    assert "[secret]" in message


def test_placeholders_map_each_decrypted_secret_to_what_plan_shows() -> None:
    decrypted = {"jobs": [{"name": "a", "spec": {"env": [{"name": "K", "value": "hf_secret"}]}}]}
    in_file = {"jobs": [{"name": "a", "spec": {"env": [{"name": "K", "value": "[encrypted 5f956caa]"}]}}]}
    path = ("jobs", 0, "spec", "env", 0, "value")
    assert secrets.placeholders(decrypted, in_file, [path]) == {"hf_secret": "[encrypted 5f956caa]"}
    assert secrets.placeholders(decrypted, {"jobs": "[encrypted 00000000]"}, [("jobs",)]) == {
        "K": "[secret]",
        "hf_secret": "[secret]",
    }
    assert secrets.redact("got 'hf_secret' and 'K'", frozenset({"hf_secret", "K"})) == "got '[secret]' and 'K'"
