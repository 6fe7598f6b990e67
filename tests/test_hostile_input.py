"""Hostile and odd input: each way it once crashed, hung or printed garbage now ends in one clean line (exit 2).

Each test writes a stack file (or a ``plan --out`` directory, or an argument) and asserts the exact lines
``aiperf-kueue`` prints, that nothing is written, and that the program under Pulumi stops the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pulumi
import pytest

import components.stack_config
from aiperf_kueue.cli import engine
from aiperf_kueue.cli.cli import main
from aiperf_kueue.common import display
from aiperf_kueue.common.errors import Problem, key_path
from aiperf_kueue.stackfile.loader import decode_engine_config
from tests.support import COMMITTED_STACKS, ROOT

DEV = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text()


def _plan(tmp_path: Path, text: str | bytes, capsys: pytest.CaptureFixture[str], name: str = "x") -> list[str]:
    """``plan`` of a stack file holding ``text``: its stderr lines (exit 2, nothing written)."""
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    assert main(["plan", str(path), "--out", str(tmp_path / "out")]) == 2
    printed = capsys.readouterr()
    assert printed.out == ""
    assert not (tmp_path / "out").exists()
    return [line.removeprefix(f"{display.escape(str(path))}: ") for line in printed.err.splitlines()]


def _dev_with(old: str, new: str) -> str:
    assert DEV.count(old) == 1, old
    return DEV.replace(old, new)


# --- crashes that were


def test_a_self_referencing_alias(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = _dev_with("    headroom: 10\n", "    headroom: 10\n    extra: &loop [*loop]\n")
    assert _plan(tmp_path, text, capsys) == [
        "aiperf-kueue:inventory.extra[0][0]: anchor 'loop' contains an alias to itself"
    ]


def test_deep_nesting_in_chart_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = "[" * 5000 + "]" * 5000
    text = _dev_with("    version: 0.19.2\n", f"    version: 0.19.2\n    values: {{a: {deep}}}\n")
    [line] = _plan(tmp_path, text, capsys)
    assert line.startswith("aiperf-kueue:kueue.values.a")
    assert line.endswith(": nested more than 64 levels deep")


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("~", "a mapping key must be text; YAML reads ~ as null (Pulumi would make it '<nil>'); quote it: \"~\""),
        (
            "true",
            "a mapping key must be text; YAML reads true as true (Pulumi would make it 'true'); quote it: \"true\"",
        ),
        ("1", "a mapping key must be text; YAML reads 1 as 1 (Pulumi would make it '1'); quote it: \"1\""),
        (
            "2020-01-01",
            "2020-01-01 is a date/time to YAML, and Pulumi hands the program Go's text for it "
            '("2020-01-01 00:00:00 +0000 UTC" for a date); quote it to mean the text: "2020-01-01"',
        ),
    ],
)
def test_mapping_keys_that_are_not_text(
    key: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = _dev_with("    version: 0.19.2\n", f"    version: 0.19.2\n    values: {{{key}: {{secure: v1:abc}}}}\n")
    [line] = _plan(tmp_path, text, capsys)
    assert line == f"aiperf-kueue:{key_path('kueue', 'values', key)}: line 5: {message}"


def test_a_tag_pulumi_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    namespace = "          - name: aiperf-benchmarks\n"
    text = _dev_with(namespace, f"{namespace}            create: !!bool maybe\n")
    assert _plan(tmp_path, text, capsys) == [
        "aiperf-kueue:queues.clusterQueues[0].namespaces[0].create: line 19: cannot decode !!str `maybe` as a "
        "!!bool (Pulumi refuses it too)"
    ]


def test_an_integer_of_thousands_of_digits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    digits = "9" * 4000
    # Past every float, yaml.v3 leaves the digits as text.
    assert _plan(tmp_path, _dev_with("        nodes: 1\n", f"        nodes: {digits}\n"), capsys) == [
        f"aiperf-kueue:inventory.pools[0].nodes: must be a whole number (e.g. nodes: 8), got '{'9' * 80}'… "
        "(4000 characters)"
    ]


def test_arguments_longer_than_the_file_system_allows(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "s" * 300]) == 2
    assert main(["diff", "HEAD:" + "s" * 300, "dev"]) == 2
    printed = capsys.readouterr()
    assert printed.err.splitlines() == [
        f"{'s' * 80}… (300 characters): a path component of 300 bytes, more than the 255 a file name may have",
        f"HEAD:{'s' * 75}… (305 characters): a path component of 305 bytes, more than the 255 a file name may have",
    ]


# --- hangs that were


def test_an_alias_bomb(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bomb = "l0: &l0 [lol]\n" + "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 10))
    [line] = _plan(tmp_path, bomb + _dev_with("    headroom: 10\n", "    headroom: 10\n    x: *l9\n"), capsys)
    assert line.endswith(": aliases expand to most of the document (Pulumi refuses it too: excessive aliasing)")


def test_a_percentage_no_arithmetic_could_finish(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _plan(tmp_path, _dev_with("    headroom: 10\n", '    headroom: "1e-999999999%"\n'), capsys) == [
        "aiperf-kueue:inventory.headroom: must be a percentage with at most 40 significant digits and 40 decimal "
        "places, got '1e-999999999%'"
    ]


# --- messages that were not one clean line


def test_a_syntax_error_names_line_column_and_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = _dev_with("      - name: benchmarks\n", "      - name benchmarks\n        share: 1\n")
    assert _plan(tmp_path, text, capsys) == [
        "aiperf-kueue:queues.clusterQueues[0]: not valid YAML at line 16, column 14: mapping values are not allowed "
        "in this context"
    ]


def test_control_and_bidi_characters_are_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = _dev_with("          - name: aiperf-benchmarks\n", '          - name: "bench\\u202e\\e[31m"\n')
    assert _plan(tmp_path, text, capsys) == [
        'aiperf-kueue:queues.clusterQueues[0].namespaces[0].name: "bench\\u202e\\x1b[31m" holds the invisible '
        "control character \\u202e (a terminal escape or a bidi control); no config value needs one: remove it"
    ]


def test_a_huge_value_is_cut(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = _dev_with('        cpu: "8"\n', f"        cpu: {'x' * 200_000}\n")
    assert _plan(tmp_path, text, capsys) == [
        f'aiperf-kueue:inventory.pools[0].cpu: must be a Kubernetes quantity such as "16", "1500m" or "64Gi", '
        f"got '{'x' * 80}'… (200000 characters)"
    ]


def test_a_file_past_the_size_bound(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _plan(tmp_path, DEV + "# " + "x" * (4 * 2**20) + "\n", capsys) == [
        "a stack file of more than 4,194,304 bytes; that is the limit"
    ]


def test_values_are_shown_in_yaml_terms() -> None:
    assert [display.show(v) for v in (None, True, float("nan"), float("-inf"), b"\x00", 2**300)] == [
        "null",
        "true",
        ".nan",
        "-.inf",
        "!!binary (1 bytes)",
        "a number with 91 digits",
    ]
    # Lists and mappings in words, never a repr: their size, the first few items, how many more.
    assert (
        display.show({"a b": [1, None], "c": "it's"}) == "a mapping of 2 keys ('a b': a list of 2 items, c: \"it's\")"
    )
    assert display.show(["name", "nodes", "cpu"]) == "a list of 3 items ('name', 'nodes', 'cpu')"
    assert display.show(list(range(998))) == "a list of 998 items (0, 1, 2 … and 995 more)"
    assert (display.show([]), display.show({})) == ("an empty list", "an empty mapping")
    assert Problem("", "bad\u202e\n").line("f.yaml") == "f.yaml: bad\\u202e\\n"


# --- accepted, and should not have been


def test_a_misspelt_namespace_gets_a_suggestion(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _plan(tmp_path, _dev_with("  aiperf-kueue:jobs:\n", "  aiperf_kueue:jobs:\n"), capsys) == [
        "config[\"aiperf_kueue:jobs\"]: namespace 'aiperf_kueue' is not this project's, so Pulumi hands the value "
        "to nothing; did you mean 'aiperf-kueue:jobs'?"
    ]


def test_a_misspelt_top_level_key_gets_a_suggestion(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _plan(tmp_path, DEV.replace("config:\n", "confg:\n", 1), capsys) == [
        "confg: unknown top-level key in a stack file (did you mean 'config'?): Pulumi ignores it, and the file has "
        "no 'config'; the keys Pulumi reads: secretsprovider, encryptedkey, encryptionsalt, config, environment"
    ]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("a::b", "'a::b' is not a Pulumi stack name: it may only contain letters, digits, '-', '_' and '.', not ':'"),
        ("x" * 101, "the stack name is 101 characters; Pulumi allows at most 100"),
        ("tab\there", "\"tab\\there\" is not a Pulumi stack name: it may only contain letters, digits, '-', '_' and "
         "'.', not \"\\t\""),
    ],
)  # fmt: skip
def test_a_stack_file_name_that_is_no_stack_name(
    name: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _plan(tmp_path, DEV, capsys, name=name) == [display.escape(message)]


def test_nan_in_chart_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = _dev_with("    version: 0.19.2\n", "    version: 0.19.2\n    values: {weight: .nan}\n")
    assert _plan(tmp_path, text, capsys) == [
        "aiperf-kueue:kueue.values.weight: .nan is not a number JSON can hold; Pulumi refuses it "
        "('json: unsupported value')"
    ]


# --- the same under pulumi up


def test_the_program_refuses_what_plan_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "stacks").mkdir()
    namespace = "          - name: aiperf-benchmarks\n"
    text = _dev_with(namespace, f"{namespace}            labels: {{since: 2024-05-01}}\n")
    (tmp_path / "stacks" / "Pulumi.dated.yaml").write_text(text)
    monkeypatch.setattr(components.stack_config, "PROJECT_DIR", tmp_path)
    # What the engine hands the program: the date as Go's text.
    values = json.loads(json.dumps(_engine_values(text)))
    with pytest.raises(pulumi.RunError) as raised:
        engine.run_program("dated", values, set())
    assert str(raised.value).splitlines() == [
        "invalid stack config:",
        "stacks/Pulumi.dated.yaml: aiperf-kueue:queues.clusterQueues[0].namespaces[0].labels.since: line 19: "
        "2024-05-01 is a date/time to YAML, and Pulumi hands the program Go's text for it "
        '("2024-05-01 00:00:00 +0000 UTC" for a date); quote it to mean the text: "2024-05-01"',
    ]


def _engine_values(text: str) -> dict[str, Any]:
    import yaml

    config = yaml.safe_load(text)["config"]
    values = {k.partition(":")[2]: v for k, v in config.items()}
    labels = values["queues"]["clusterQueues"][0]["namespaces"][0]["labels"]
    labels["since"] = "2024-05-01 00:00:00 +0000 UTC"
    return values


def test_engine_values_that_are_not_sensible_json_stay_text() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert decode_engine_config({"aiperf-kueue:a": deep, "aiperf-kueue:b": "9" * 5000, "x:c": "1"}) == {
        "a": deep,
        "b": "9" * 5000,
    }


# --- diff inputs


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"stack": ' + "[" * 100_000 + "]" * 100_000 + "}", "cannot read: nested more than 128 levels deep"),
        ('{"stack": NaN}', "cannot read: not JSON that plan writes: NaN is not a JSON number"),
        (b"\xff{}", "cannot read: not UTF-8 text: invalid start byte at byte 0"),
        ("[" + "9" * 5000 + "]", "cannot read: not JSON that plan writes: Exceeds the limit (4300 digits) for "
         "integer string conversion: value has 5000 digits; use sys.set_int_max_str_digits() to increase the limit"),
    ],
)  # fmt: skip
def test_a_broken_plan_directory(
    content: str | bytes, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", "dev", "--out", str(tmp_path / "plan")]) == 0
    target = tmp_path / "plan" / "plan.json"
    target.write_bytes(content.encode() if isinstance(content, str) else content)
    capsys.readouterr()
    assert main(["diff", str(tmp_path / "plan"), "dev", "--out", str(tmp_path / "report.md")]) == 2
    assert capsys.readouterr().err.splitlines() == [f"{target}: {message}"]
    assert not (tmp_path / "report.md").exists()


# --- small things users asked for (issue 14)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == "aiperf-kueue 0.1.0\n"


def test_an_unknown_stack_lists_the_stacks(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "dve"]) == 2
    assert capsys.readouterr().err == (
        f"stacks/Pulumi.dve.yaml: no stack 'dve' (did you mean 'dev'?); stacks in stacks/: "
        f"{', '.join(COMMITTED_STACKS)}\n"
    )
