"""An AIPerfJob is named ``<config name>-<digest of its spec>``: a changed benchmark is a new run.

The digest leaves out ``cancel`` and ``timeoutSeconds`` (the two fields the CRD lets change in
place) and hashes each secure value as the placeholder ``plan`` shows for it. The diff side (a
changed benchmark is a replace with a new ``metadata.name``, not an ``AlreadyExists`` caution;
cancel and timeout update in place) is in ``tests/test_diff.py`` and ``tests/test_markdown.py``;
the name-length limits in ``tests/test_job_models.py`` and ``tests/test_bad_jobs.py``; the same
names from two processes in ``tests/test_byte_stable.py``.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiperf_kueue.cli.report import clean
from aiperf_kueue.plan import manifests
from aiperf_kueue.plan.stack_plan import StackPlan, plan_values
from aiperf_kueue.stackfile.loader import read_stack_file
from tests.oracle import Oracle, oracle_fixture, stack_cluster  # noqa: F401 (the session fixture `oracle`)
from tests.support import ROOT, committed_run, stack_values
from tests.test_aiperf_oracle import SECRETS, operator_env

#: The header of a stack's secure value (tests/test_jobs_program.py), decrypted: what `pulumi up` hands over.
CIPHER = "v1:AAABAGJlYXJlci10b2tlbi1jaXBoZXJ0ZXh0"
PLACEHOLDER = "[encrypted a032ea1e]"
PLAINTEXT = "bearer-token-plaintext"


def _plan(values: dict[str, Any], source: str = "test.yaml") -> StackPlan:
    return plan_values(values, source, ROOT)


def test_the_dev_job_is_named_after_its_spec() -> None:
    run = committed_run("dev")
    (job,) = [clean(r["inputs"]) for r in run.resources if r["type"].endswith(":AIPerfJob")]
    assert job["metadata"]["name"] == "smoke-42740b"
    assert job["metadata"]["labels"]["aiperf-kueue/job"] == "smoke"
    # The digest: SHA-256 of the final spec (image and queue filled in) as canonical JSON.
    canonical = json.dumps(job["spec"], sort_keys=True, separators=(",", ":"))
    assert hashlib.sha256(canonical.encode()).hexdigest()[:6] == "42740b"
    assert [(r["name"], r["objectName"]) for r in run.outputs["jobs"]] == [("smoke", "smoke-42740b")]
    assert run.outputs["kubectl"]["aiperfJob"] == {
        "aiperf-benchmarks/smoke": "kubectl describe aiperfjob smoke-42740b -n aiperf-benchmarks"
    }
    assert run.outputs["kubectl"]["jobRuns"] == {
        "aiperf-benchmarks/smoke": "kubectl get aiperfjobs -n aiperf-benchmarks -l aiperf-kueue/job=smoke"
    }


def test_the_same_spec_gives_the_same_name_and_any_other_change_a_new_one() -> None:
    values, _ = stack_values("dev")
    assert [j["metadata"]["name"] for j in _plan(copy.deepcopy(values)).aiperf_jobs()] == ["smoke-42740b"]
    edits: dict[str, Callable[[dict[str, Any]], object]] = {
        "benchmark": lambda spec: spec["benchmark"]["phases"][0].update(concurrency=8),
        "resourceMode": lambda spec: spec.update(resourceMode="guaranteed"),
        "image": lambda spec: spec.update(image="nvcr.io/nvidia/aiperf:0.13.1"),
    }
    names = {}
    for what, edit in edits.items():
        changed = copy.deepcopy(values)
        edit(changed["jobs"][0]["spec"])
        (job,) = _plan(changed).aiperf_jobs()
        names[what] = job["metadata"]["name"]
    assert names == {"benchmark": "smoke-f6f177", "resourceMode": "smoke-c3c625", "image": "smoke-2c1351"}


def test_cancel_and_timeout_keep_the_name() -> None:
    values, _ = stack_values("dev")
    values["jobs"][0]["spec"].update(cancel=True, timeoutSeconds=600)
    (job,) = _plan(values).aiperf_jobs()
    assert (job["metadata"]["name"], job["spec"]["cancel"], job["spec"]["timeoutSeconds"]) == (
        "smoke-42740b",
        True,
        600,
    )


def test_the_digest_of_a_spec() -> None:
    spec = {"b": [1, {"y": "z", "x": 2.5}], "a": "é", "cancel": True, "timeoutSeconds": 60}
    # Sorted keys, compact separators, ASCII escapes; without the two fields that change in place.
    expected = hashlib.sha256(b'{"a":"\\u00e9","b":[1,{"x":2.5,"y":"z"}]}').hexdigest()[:6]
    assert manifests.spec_digest(spec) == expected == "1826fb"
    assert manifests.spec_digest({"a": "é", "b": [1, {"x": 2.5, "y": "z"}]}) == "1826fb"
    assert manifests.job_object_name("run", spec) == "run-1826fb"


def test_the_mask_hashes_each_secret_as_its_placeholder() -> None:
    spec = {"benchmark": {"endpoint": {"headers": {"X-Team": PLAINTEXT, "X-Trace": "perf"}}}, "image": "i"}
    masked = {"benchmark": {"endpoint": {"headers": {"X-Team": PLACEHOLDER, "X-Trace": "perf"}}}, "image": "i"}
    mask = {PLAINTEXT: PLACEHOLDER}
    assert manifests.spec_digest(spec, mask) == manifests.spec_digest(masked) == "d99cd0"
    assert manifests.spec_digest(spec) == "b22e51"  # unmasked, it would depend on the plaintext
    # Whole strings only, wherever they are (list items too); keys and other strings are kept.
    assert manifests.spec_digest({"a": [PLAINTEXT, f"x{PLAINTEXT}"]}, mask) == manifests.spec_digest(
        {"a": [PLACEHOLDER, f"x{PLAINTEXT}"]}
    )


def _secure_stack(tmp_path: Path) -> Path:
    text = (ROOT / "stacks" / "Pulumi.prod.yaml").read_text()
    plain = "              X-Team: team-a\n"
    assert text.count(plain) == 1
    path = tmp_path / "Pulumi.secure.yaml"
    path.write_text(text.replace(plain, f"              X-Team:\n                secure: {CIPHER}\n"))
    return path


def test_plan_and_up_name_a_job_with_a_secure_value_alike(tmp_path: Path) -> None:
    """Offline the spec holds the placeholder; under `pulumi up` the decrypted value, with the
    mask mapping it back (``LoadedStack.secret_placeholders``): the same name either way."""
    offline, _ = read_stack_file(_secure_stack(tmp_path))
    assert offline["jobs"][0]["spec"]["benchmark"]["endpoint"]["headers"] == {"X-Team": PLACEHOLDER}
    planned = _plan(offline, "Pulumi.secure.yaml").aiperf_jobs()
    decrypted = copy.deepcopy(offline)
    decrypted["jobs"][0]["spec"]["benchmark"]["endpoint"]["headers"]["X-Team"] = PLAINTEXT
    applied = _plan(decrypted, "Pulumi.secure.yaml").aiperf_jobs({PLAINTEXT: PLACEHOLDER})
    names = [j["metadata"]["name"] for j in planned]
    assert names[0] == "llama-latency-ba68c0"
    assert [j["metadata"]["name"] for j in applied] == names
    assert applied[0]["spec"]["benchmark"]["endpoint"]["headers"] == {"X-Team": PLAINTEXT}  # only the name is masked
    unmasked = _plan(decrypted, "Pulumi.secure.yaml").aiperf_jobs()
    assert unmasked[0]["metadata"]["name"] != names[0]
    # Tables and preflight rows name the object as the manifests do.
    plan = _plan(decrypted, "Pulumi.secure.yaml")
    assert plan.jobs_table(applied)[0]["objectName"] == "llama-latency-ba68c0"
    assert plan.preflight_table(applied)[0]["subject"] == "AIPerfJob bench-team-a/llama-latency-ba68c0"


def test_the_longest_name_is_an_operator_job_id(oracle: Oracle) -> None:
    """28 characters and the digest make 35, the released operator's job-id limit: it creates the
    JobSet (``aiperf-<name>``) under that name, and refuses one character more."""
    values, _ = stack_values("prod")
    values["jobs"][0]["name"] = "a" * 28
    values["sweeps"] = []
    plan = _plan(values)
    (job,) = plan.aiperf_jobs()
    name = job["metadata"]["name"]
    assert len(name) == 35
    env, cluster = operator_env(plan), stack_cluster(plan.config, SECRETS["prod"])
    result = oracle.create(env, cluster, {"name": name, "namespace": "bench-team-a", "spec": job["spec"]})
    assert (result["outcome"], result["statusError"]) == ("created", None)
    assert result["returned"]["jobSetName"] == f"aiperf-{name}"
    refused = oracle.create(env, cluster, {"name": f"b{name}", "namespace": "bench-team-a", "spec": job["spec"]})
    assert (refused["outcome"], refused["phase"], refused["jobsets"]) == ("failed", "Failed", [])
    assert f"job_id 'b{name}' exceeds maximum length of 35 characters" in refused["statusError"]
