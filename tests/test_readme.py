"""README.md says what the code does: generated sections are current, CI runs its test command."""

from __future__ import annotations

from aiperf_kueue.offline import docs
from tests.support import ROOT

README = (ROOT / "README.md").read_text()


def test_config_reference_is_generated_from_the_models() -> None:
    start = README.index(docs.BEGIN)
    end = README.index(docs.END) + len(docs.END) + 1
    assert README[start:end] == docs.config_reference(), "run: python -m aiperf_kueue.offline.docs --write README.md"


def test_plan_example_is_the_real_output() -> None:
    start = README.index(docs.PLAN_BEGIN)
    end = README.index(docs.PLAN_END) + len(docs.PLAN_END) + 1
    assert README[start:end] == docs.plan_dev_example(), "run: python -m aiperf_kueue.offline.docs --write README.md"


def test_ci_runs_exactly_the_readme_test_command() -> None:
    assert "make test   # the same setup" in README
    assert (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1] == "make test"


def test_every_config_key_is_documented() -> None:
    from aiperf_kueue.config import KEYS

    for key in KEYS:
        assert f"### `aiperf-kueue:{key}`" in README
