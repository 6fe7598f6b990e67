"""The real Pulumi CLI reads every ``tests/yaml_corpus`` stack file as ``expected.json`` says (``make e2e``).

``tests/test_yaml_corpus.py`` (every ``make test``) holds the loader to ``expected.json``; this test holds
``expected.json`` to the Pulumi CLI the e2e suite builds (v3.274.0): together, ``plan`` and ``pulumi preview``
accept and refuse the same corpus files and see the same values, except the spellings the loader refuses on
purpose. ``pulumi config --json`` reads the stack file as ``preview`` does and prints the values the engine
hands the program; no cluster is needed.

Collected only under ``make e2e`` (``AIPERF_KUEUE_E2E=1``): there a missing CLI is a failure, not a skip.
The CLI is the one the e2e suite builds (``e2e/build.py``, the ``binaries`` fixture).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.pulumi_config import PulumiConfig

pytestmark = pytest.mark.e2e

CORPUS = Path(__file__).resolve().parents[1] / "yaml_corpus"
EXPECTED: dict[str, dict[str, Any]] = json.loads((CORPUS / "expected.json").read_text())
CLI_VERSION = "v3.274.0"
ONE_OF = "one of (Go's map order decides)"


@pytest.fixture(scope="module")
def pulumi(binaries: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> PulumiConfig:
    return PulumiConfig(Path(binaries["pulumi"]), tmp_path_factory.mktemp("pulumi-config"))


def test_the_cli_is_the_version_the_corpus_was_read_with(pulumi: PulumiConfig) -> None:
    assert pulumi.version() == CLI_VERSION


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_pulumi_reads_each_corpus_file_as_recorded(pulumi: PulumiConfig, name: str) -> None:
    expected = EXPECTED[name]["pulumi"]
    # A key given twice: which spelling Pulumi keeps depends on Go's (random) map order.
    choices = expected.get(ONE_OF, [expected])
    assert pulumi.read(CORPUS / f"Pulumi.{name}.yaml") in choices
