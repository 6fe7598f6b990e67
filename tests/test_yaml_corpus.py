"""Stack file spellings read as the Pulumi CLI reads them: ``tests/yaml_corpus`` against what the real CLI read.

``expected.json`` holds, per corpus file, what ``pulumi config --json`` (Pulumi CLI v3.274.0) printed for it
(``tests/e2e/test_yaml_corpus_pulumi.py`` checks that against the CLI itself under ``make e2e``) and what the
loader does with it: accept with exactly Pulumi's values, or refuse with the line given. Every file Pulumi
refuses, the loader refuses too; the files only the loader refuses are the spellings Pulumi would silently
turn into something else (docs/yaml.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.stackfile import yaml_input

CORPUS = Path(__file__).resolve().parent / "yaml_corpus"
EXPECTED: dict[str, dict[str, Any]] = json.loads((CORPUS / "expected.json").read_text())


def _read(name: str) -> dict[str, Any]:
    """What the loader makes of a corpus file: Pulumi's form of each value, or the first problem line."""
    path = CORPUS / f"Pulumi.{name}.yaml"
    try:
        config = yaml_input.read_stack_document(path).config
    except ConfigError as exc:
        return {"refuses": exc.lines()[0].removeprefix(f"{path}: ")}
    values = {}
    for key, value in sorted(config.items()):
        secret = isinstance(value, yaml_input.Secure) or _holds_secret(value)
        values[key] = {"secret": secret, "value": None if secret else yaml_input.engine_text(value)[0]}
    return {"config": values}


def _holds_secret(value: Any) -> bool:
    if isinstance(value, yaml_input.Secure):
        return True
    if isinstance(value, dict):
        return any(_holds_secret(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_secret(v) for v in value)
    return False


def test_every_corpus_file_has_an_expectation() -> None:
    assert {p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in CORPUS.glob("Pulumi.*.yaml")} == set(EXPECTED)
    assert len(EXPECTED) >= 40


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_loader_reads_each_spelling_as_pulumi_does_or_refuses_it(name: str) -> None:
    expected = EXPECTED[name]
    got = _read(name)
    if expected["plan"] == "accepts":
        assert got == expected["pulumi"]
    else:
        assert got == expected["plan"]


@pytest.mark.parametrize("name", sorted(n for n, e in EXPECTED.items() if "error" in e["pulumi"]))
def test_what_pulumi_refuses_the_loader_refuses(name: str) -> None:
    assert "refuses" in _read(name)


def test_the_spellings_that_differ_from_pyyaml() -> None:
    """The reason this loader exists: PyYAML (YAML 1.1) reads these differently from Pulumi's yaml.v3."""
    assert json.loads(EXPECTED["bool-yaml11"]["pulumi"]["config"]["aiperf-kueue:corpus"]["value"]) == {
        "a": "yes",
        "b": "no",
        "c": "on",
        "d": "off",
        "e": "y",
        "f": "n",
        "g": True,
        "h": True,
        "i": False,
        "j": "Yes",
    }
    assert json.loads(EXPECTED["base-60"]["pulumi"]["config"]["aiperf-kueue:corpus"]["value"]) == {
        "a": "1:40",
        "b": "190:20:30",
        "c": "-1:30",
    }
    assert _read("base-60") == EXPECTED["base-60"]["pulumi"]
