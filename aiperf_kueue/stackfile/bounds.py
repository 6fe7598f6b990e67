"""Bounds on config values, checked before they are validated or planned.

The same check runs on values read from a stack file (``plan``) and on the values the Pulumi
engine hands the program (``pulumi up``): nesting, string and key length, integer range, finite
numbers, and the size of each entry that becomes one Kubernetes object. See
:mod:`aiperf_kueue.common.limits` for each limit and why.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

from aiperf_kueue.common import limits, quantity
from aiperf_kueue.common.display import escape, show
from aiperf_kueue.common.errors import Problem, key_path

Path = tuple[str | int, ...]

#: Config entries that each become one Kubernetes object (or one Helm release's values).
_OBJECTS: tuple[tuple[str, ...], ...] = (
    ("jobs", "*"),
    ("sweeps", "*"),
    ("kueue", "values"),
    ("jobset", "values"),
    ("operator", "values"),
)


def bounds_problems(values: Mapping[str, Any]) -> list[Problem]:
    """One problem per value past a bound (at most ``limits.MAX_PROBLEMS``)."""
    problems: list[Problem] = []
    for path, message in _walk(values, (), 0):
        problems.append(Problem(key_path(*path), message))
        if len(problems) >= limits.MAX_PROBLEMS:
            return problems
    if problems:
        return problems
    problems += _pool_totals(values)
    for path, entry in _objects(values):
        size = len(json.dumps(entry, ensure_ascii=False, default=str).encode())
        if size > limits.MAX_OBJECT_BYTES:
            problems.append(
                Problem(
                    key_path(*path),
                    f"{size:,} bytes of JSON, more than the {limits.MAX_OBJECT_BYTES:,} one object may take "
                    "(etcd refuses objects over 1.5 MiB)",
                )
            )
    return problems


def _walk(value: Any, path: Path, depth: int) -> Iterator[tuple[Path, str]]:
    if depth > limits.MAX_DEPTH:
        yield path, f"nested more than {limits.MAX_DEPTH} levels deep"
        return
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int):
        # Worded as an int64 field's own bound: beyond it, no Kubernetes field can store the number.
        past = " (past int64 Pulumi reads an integer as a float, so its last digits may differ)"
        if value > limits.INT64_MAX:
            yield path, f"must be <= {limits.INT64_MAX}, got {show(value)}{past}"
        elif value < limits.INT64_MIN:
            yield path, f"must be >= {limits.INT64_MIN}, got {show(value)}{past}"
    elif isinstance(value, float):
        if not math.isfinite(value):
            yield path, f"{show(value)} is not a number JSON (and so Kubernetes) can hold"
    elif isinstance(value, str):
        if len(value) > limits.MAX_STRING:
            yield path, f"a string of {len(value):,} characters, more than the {limits.MAX_STRING:,} allowed"
        elif _HIDDEN.search(value):
            yield path, _hidden_problem(value)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                yield (*path, str(k)), f"a mapping key must be text, got {show(k)}"
            elif len(k) > limits.MAX_KEY:
                yield (*path, k), f"a mapping key of {len(k):,} characters, more than the {limits.MAX_KEY:,} allowed"
            elif _HIDDEN.search(k):
                yield (*path, k), _hidden_problem(k)
            else:
                yield from _walk(v, (*path, k), depth + 1)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _walk(v, (*path, i), depth + 1)


#: Control characters other than tab and line breaks, and the bidi controls: a terminal escape
#: in a URL or a name, or text that reads differently from what it is ("Trojan Source").
#: Also NUL, NEL, the line and paragraph separators and the zero-width and other format characters
#: (a URL with a zero-width space in its host reads as the right one and is another).
_HIDDEN = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064"
    "\u2066-\u206f\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]"
)


def _hidden_problem(text: str) -> str:
    found = _HIDDEN.search(text)
    assert found is not None
    return (
        f"{show(text)} holds the invisible control character {escape(found.group())} (a terminal escape or a bidi "
        "control); no config value needs one: remove it"
    )


def _pool_totals(values: Mapping[str, Any]) -> list[Problem]:
    """A pool whose total (nodes × per node) no int64 can count: Kueue and the API server count
    CPU in millicores and everything else in units, as int64."""
    inventory = values.get("inventory")
    pools = inventory.get("pools") if isinstance(inventory, Mapping) else None
    problems: list[Problem] = []
    for i, pool in enumerate(pools if isinstance(pools, list) else []):
        if not isinstance(pool, Mapping) or not isinstance(pool.get("nodes"), int) or isinstance(pool["nodes"], bool):
            continue
        extra = pool.get("extraResources")
        amounts = {"cpu": pool.get("cpu"), "memory": pool.get("memory"), "gpus": pool.get("gpus")}
        amounts |= {f"extraResources.{k}": v for k, v in extra.items()} if isinstance(extra, Mapping) else {}
        for name, amount in amounts.items():
            try:
                per_node = quantity.parse(amount) if amount is not None and not isinstance(amount, bool) else None
            except (ValueError, ArithmeticError):
                continue
            if per_node is None:
                continue
            total = per_node * pool["nodes"] * (1000 if name == "cpu" else 1)
            if total > limits.INT64_MAX:
                problems.append(
                    Problem(
                        key_path("inventory", "pools", i, *name.split(".", 1)),
                        f"{pool['nodes']} nodes × {show(amount)} is more than Kubernetes can count (an int64 of "
                        f"{'millicores' if name == 'cpu' else 'units'}); check the figures",
                    )
                )
    return problems


def _objects(values: Mapping[str, Any]) -> Iterator[tuple[Path, Any]]:
    for pattern in _OBJECTS:
        found: list[tuple[Path, Any]] = [((), values)]
        for part in pattern:
            step: list[tuple[Path, Any]] = []
            for path, node in found:
                if part == "*" and isinstance(node, list):
                    step += [((*path, i), v) for i, v in enumerate(node)]
                elif isinstance(node, Mapping) and part in node:
                    step.append(((*path, part), node[part]))
            found = step
        yield from found


def argument_problem(value: str) -> str | None:
    """What keeps a command-line argument (a stack name, a path, ``REV:STACK``) from being used:
    too long for the file system, or holding a NUL or a control character; ``None`` if fine."""
    if len(value) > limits.MAX_ARGUMENT:
        return f"an argument of {len(value):,} characters, more than the {limits.MAX_ARGUMENT:,} allowed"
    if any(ch in value for ch in "\x00\n\r"):
        return "an argument must not hold a NUL or line break"
    for part in value.split("/"):
        size = len(part.encode("utf-8", "surrogateescape"))
        if size > limits.MAX_PATH_COMPONENT:
            return f"a path component of {size:,} bytes, more than the {limits.MAX_PATH_COMPONENT} a file name may have"
    return None
