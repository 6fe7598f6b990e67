"""JSON files read within bounds: ``plan.json`` and ``resources.json`` handed to ``diff``.

A ``plan --out`` directory may come from anywhere (an artifact, a colleague's branch), so its
files get the same treatment as a stack file: a size bound, strict UTF-8, no ``NaN`` or
``Infinity`` (not JSON, and ``plan`` never writes them), and a nesting bound.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aiperf_kueue.common import limits

#: Levels of nesting in a plan file: the config's bound, plus the levels ``plan`` adds around it.
MAX_PLAN_DEPTH = 2 * limits.MAX_DEPTH


class JsonInputError(ValueError):
    """The file is not JSON that ``plan`` could have written; the message says why."""


def read_json_file(path: Path) -> Any:
    """The JSON value in ``path``; :class:`JsonInputError` or ``OSError`` if it cannot be read."""
    with path.open("rb") as handle:
        data = handle.read(limits.MAX_PLAN_FILE_BYTES + 1)
    if len(data) > limits.MAX_PLAN_FILE_BYTES:
        raise JsonInputError(f"more than {limits.MAX_PLAN_FILE_BYTES:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonInputError(f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise JsonInputError(f"not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    except RecursionError:
        raise JsonInputError(f"nested more than {MAX_PLAN_DEPTH} levels deep") from None
    except ValueError as exc:  # an integer Python refuses to read, or a constant
        raise JsonInputError(f"not JSON that plan writes: {str(exc).splitlines()[0]}") from None
    if _depth_over(value, MAX_PLAN_DEPTH):
        raise JsonInputError(f"nested more than {MAX_PLAN_DEPTH} levels deep")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _depth_over(value: Any, limit: int) -> bool:
    """Whether ``value`` nests deeper than ``limit`` (iteratively: no recursion to run out of)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
