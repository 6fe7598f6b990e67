"""README.md and docs/ say what the code does: generated sections are current, every command shown
runs, every link resolves, and the README keeps its order."""

from __future__ import annotations

import argparse
import importlib.util
import re
import shlex

import pytest

from aiperf_kueue.cli import cli, docs
from tests.support import ROOT

README = (ROOT / "README.md").read_text()
REFERENCE = (ROOT / docs.REFERENCE).read_text()
DOCS = {p.relative_to(ROOT).as_posix(): p.read_text() for p in sorted((ROOT / "docs").glob("*.md"))}
PAGES = {"README.md": README, **DOCS}


def test_config_reference_is_generated_from_the_models() -> None:
    start = REFERENCE.index(docs.BEGIN)
    end = REFERENCE.index(docs.END) + len(docs.END) + 1
    assert REFERENCE[start:end] == docs.config_reference(), "run: python -m aiperf_kueue.cli.docs --write README.md"


def test_config_keys_in_the_readme_are_generated_from_the_models() -> None:
    start = README.index(docs.KEYS_BEGIN)
    end = README.index(docs.KEYS_END) + len(docs.KEYS_END) + 1
    assert README[start:end] == docs.config_keys(), "run: python -m aiperf_kueue.cli.docs --write README.md"


def test_plan_example_is_the_real_output() -> None:
    start = README.index(docs.PLAN_BEGIN)
    end = README.index(docs.PLAN_END) + len(docs.PLAN_END) + 1
    assert README[start:end] == docs.plan_dev_example(), "run: python -m aiperf_kueue.cli.docs --write README.md"


def test_ci_runs_exactly_the_readme_test_commands() -> None:
    assert "make test   # the same setup" in README
    assert "make e2e" in README
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.startswith("make ")]
    assert ci == ["make test", "make e2e"]


def test_every_config_key_is_documented() -> None:
    from aiperf_kueue.config import KEYS

    for key in KEYS:
        assert f"### `aiperf-kueue:{key}`" in REFERENCE
        assert f"| [`aiperf-kueue:{key}`](docs/config-reference.md#" in README


def test_the_readme_reads_in_the_promised_order() -> None:
    assert [line for line in README.splitlines() if line.startswith("## ")] == [
        "## The two commands",
        "## What `plan` shows",
        "## The real workflow",
        "## Config reference",
        "## Layout",
    ]


# --------------------------------------------------------------------------- commands that run


def _code_lines(text: str) -> list[str]:
    """Every line of every ``sh``/``text``/``console`` code block, and every inline code span."""
    lines = []
    for block in re.findall(r"```(?:sh|bash|console|text)?\n(.*?)```", text, re.S):
        lines += block.splitlines()
    lines += re.findall(r"`([^`\n]+)`", text)
    return lines


def _commands(prefix: str) -> list[tuple[str, list[str]]]:
    """``(page, argv)`` of every command line starting with ``prefix`` in README.md and docs/."""
    found = []
    for page, text in PAGES.items():
        for line in _code_lines(text):
            line = line.strip().removeprefix("$ ")
            if line.startswith(prefix):
                found.append((page, shlex.split(line.split("  #")[0], comments=True)))
    return found


AIPERF_KUEUE = _commands("aiperf-kueue ") + _commands("venv/bin/aiperf-kueue ")


def test_the_pages_show_aiperf_kueue_commands() -> None:
    assert {page for page, _ in AIPERF_KUEUE} >= {"README.md", "docs/operations.md"}


@pytest.mark.parametrize(("page", "argv"), AIPERF_KUEUE, ids=[" ".join(a) for _, a in AIPERF_KUEUE])
def test_every_aiperf_kueue_command_shown_parses(page: str, argv: list[str]) -> None:
    parser = cli.build_parser()
    args = parser.parse_args(argv[1:])
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert args.command in commands
    # A page may create the stack it then plans (the quickstart copies one first).
    created = set(re.findall(r"^cp \S+ stacks/Pulumi\.([\w.-]+)\.yaml", PAGES[page], re.M))
    if args.command == "plan" and "/" not in args.stack and args.stack not in created:
        assert (ROOT / "stacks" / f"Pulumi.{args.stack}.yaml").is_file(), f"{page}: no stack {args.stack}"


MAKE = _commands("make ")


@pytest.mark.parametrize(("page", "argv"), MAKE, ids=[" ".join(a) for _, a in MAKE])
def test_every_make_target_shown_exists(page: str, argv: list[str]) -> None:
    targets = set(re.findall(r"^([a-z][a-z0-9-]*):", (ROOT / "Makefile").read_text(), re.M))
    wanted = {a for a in argv[1:] if "=" not in a}  # VAR=value arguments set make variables
    assert wanted and wanted <= targets, f"{page}: {' '.join(argv)}"


PYTHON_M = [(p, a) for p, a in _commands("python -m ") + _commands("venv/bin/python -m ")]


@pytest.mark.parametrize(("page", "argv"), PYTHON_M, ids=[" ".join(a) for _, a in PYTHON_M])
def test_every_python_module_shown_exists(page: str, argv: list[str]) -> None:
    module = argv[argv.index("-m") + 1]
    assert importlib.util.find_spec(module) is not None, f"{page}: no module {module}"


def test_every_relative_link_resolves() -> None:
    for page, text in PAGES.items():
        base = (ROOT / page).parent
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
            assert (base / target).exists(), f"{page}: broken link {target}"


def test_every_docs_page_is_linked_from_the_readme() -> None:
    assert {page for page in DOCS} <= {f"docs/{name}" for name in re.findall(r"\]\(docs/([^)#]+)", README)}
