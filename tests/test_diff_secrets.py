"""Secrets in plans and diffs: fingerprints, never values, and a changed secret shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aiperf_kueue.cli import cli
from aiperf_kueue.cli.report import clean
from aiperf_kueue.review import markdown
from aiperf_kueue.review.diff import Plan, compare
from aiperf_kueue.review.resource_diff import FieldChange
from aiperf_kueue.stackfile.loader import read_stack_file
from tests.support import ROOT, SECRET_SIG
from tests.test_diff import prod

PROD_TEXT = (ROOT / "stacks" / "Pulumi.prod.yaml").read_text()
#: llama-latency's header in prod: header values are always kept secret, so prod carries one.
HEADER = "              X-Team: team-a\n"
LATENCY = "jobs-bench-team-a-llama-latency"
HEADER_PATH = "spec.benchmark.endpoint.headers.X-Team"
SECRET_MARK = "1b47061264138c4ac30d75fd1eb44270"


def stack(tmp_path: Path, name: str, value: str) -> Path:
    """prod, with llama-latency's X-Team header value replaced by ``value`` (YAML below ``X-Team:``)."""
    assert PROD_TEXT.count(HEADER) == 1
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(PROD_TEXT.replace(HEADER, f"              X-Team:{value}\n"))
    return path


def planned(path: Path) -> Plan:
    result = cli.compute_plan(path)
    return Plan(path.name, json.loads(result.files["resources.json"]), json.loads(result.files["plan.json"]))


def endpoint(plan: Plan) -> dict[str, Any]:
    record = next(r for r in plan.resources if r["name"] == LATENCY)
    value: dict[str, Any] = record["inputs"]["spec"]["benchmark"]["endpoint"]
    return value


def test_a_secure_value_becomes_a_fingerprint_of_its_ciphertext(tmp_path: Path) -> None:
    values, secret_keys = read_stack_file(stack(tmp_path, "s", "\n                secure: v1:c2VjcmV0LWNpcGhlcnRleHQ="))
    assert secret_keys == {"jobs"}
    assert values["jobs"][0]["spec"]["benchmark"]["endpoint"]["headers"]["X-Team"] == "[encrypted 206a222c]"


def test_a_registered_secret_becomes_a_fingerprint_of_its_plaintext() -> None:
    def secret(value: Any) -> dict[str, Any]:
        return {SECRET_SIG: SECRET_MARK, "value": value}

    assert clean(
        {
            "plain": secret("sk-plain-0123456789"),
            "secure": secret("[encrypted 206a222c]"),
            "mapping": secret({"b": 1, "a": 2.0}),
        }
    ) == {
        "plain": "[secret 1ee963da]",
        # Already a fingerprint (of the ciphertext): kept, so the report can say what it is.
        "secure": "[encrypted 206a222c]",
        # Of the canonical JSON, {"a":2,"b":1}.
        "mapping": "[secret d3626ac3]",
    }


def test_plan_output_holds_the_fingerprint_never_the_plaintext(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert cli.main(["plan", str(stack(tmp_path, "plain", " sk-plain-0123456789")), "--out", str(out)]) == 0
    files = {p.name: p.read_text() for p in out.iterdir()}
    assert not any("sk-plain-0123456789" in text for text in files.values())
    assert "[secret 1ee963da]" in files["manifests.yaml"]
    records = {r["name"]: r for r in json.loads(files["resources.json"])}
    assert records[LATENCY]["inputs"]["spec"]["benchmark"]["endpoint"]["headers"]["X-Team"] == "[secret 1ee963da]"


def test_a_changed_plain_secret_replaces_the_job(tmp_path: Path) -> None:
    head = planned(stack(tmp_path, "plain", " sk-plain-0123456789"))
    diff = compare(prod(), head)
    assert [(c.action, c.name, c.replace_because, c.fields) for c in diff.changes] == [
        (
            "replace",
            LATENCY,
            ("spec.benchmark", "metadata.name"),
            (
                FieldChange("metadata.name", "llama-latency-7b5e06", "llama-latency-965355"),
                FieldChange(HEADER_PATH, "[secret 96c2886c]", "[secret 1ee963da]"),
            ),
        )
    ]
    row = markdown.resources_table(diff)[2]
    assert f"**`{HEADER_PATH}`**: `[secret 96c2886c]` → `[secret 1ee963da]` (secret changed) |" in row


def test_a_changed_ciphertext_shows_and_may_be_a_re_encryption(tmp_path: Path) -> None:
    base = planned(stack(tmp_path, "a", "\n                secure: v1:AAABAGxsYW1hLWFwaS1rZXktY2lwaGVydGV4dA=="))
    head = planned(stack(tmp_path, "b", "\n                secure: v1:c2VjcmV0LWNpcGhlcnRleHQ="))
    assert endpoint(base)["headers"]["X-Team"] == "[encrypted 86488c8a]"
    diff = compare(base, head)
    assert [(c.action, c.name, c.fields) for c in diff.changes] == [
        (
            "replace",
            LATENCY,
            (
                # The name digests the placeholder, never the plaintext: a re-encryption renames the run too.
                FieldChange("metadata.name", "llama-latency-0944e2", "llama-latency-b636df"),
                FieldChange(HEADER_PATH, "[encrypted 86488c8a]", "[encrypted 206a222c]"),
            ),
        )
    ]
    row = markdown.resources_table(diff)[2]
    assert (
        f"**`{HEADER_PATH}`**: `[encrypted 86488c8a]` → `[encrypted 206a222c]` "
        "(secret changed; may be a re-encryption of the same value) |"
    ) in row


def _legacy(plan: Plan) -> Plan:
    """The plan as code from before fingerprints wrote it: every secret ``[secret]``."""
    text = json.dumps(plan.resources).replace('"[secret 96c2886c]"', '"[secret]"')
    return Plan("legacy", json.loads(text), plan.data)


@pytest.mark.parametrize("legacy_side", ["base", "head"])
def test_a_plan_without_fingerprints_compares_secrets_as_equal_and_says_so(legacy_side: str) -> None:
    old, new = (_legacy(prod()), prod()) if legacy_side == "base" else (prod(), _legacy(prod()))
    diff = compare(old, new)
    assert diff.summary() == "No changes."
    assert diff.notes == (
        f"The {legacy_side} plan shows every secret as `[secret]` (planned by code from before secrets had "
        "fingerprints): secrets compare as equal here; `pulumi preview` shows a change inside one.",
    )
