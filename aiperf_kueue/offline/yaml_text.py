"""``yaml.safe_dump(data, sort_keys=False, default_flow_style=False)``, byte for byte, for many documents.

PyYAML spends most of a dump in its Python representer and emitter, per node. The manifests
``plan`` writes are simple: mappings and lists of short printable-ASCII strings, numbers,
booleans and nulls, none of which the emitter folds at column 80. Such a document is written
here directly, block layout as PyYAML's (2-space indent, sequences in a mapping not indented),
each distinct scalar styled once by PyYAML's own resolver and scalar analysis (plain, else
single-quoted). Anything else, or anything in doubt, goes to :func:`yaml.safe_dump`.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.emitter import Emitter
from yaml.nodes import ScalarNode

#: The emitter folds a scalar at a space past this column.
WIDTH = 80
#: Longer keys are written as complex keys (``? key``).
SIMPLE_KEY_MAX = 128

_RESOLVER = yaml.SafeDumper(None)  # type: ignore[no-untyped-call]
_ANALYSER = Emitter(None)  # type: ignore[no-untyped-call]
_TAG = "tag:yaml.org,2002:"

Scalars = dict[tuple[type, Any], str | None]


class _Fallback(Exception):  # noqa: N818 - control flow, not an error
    """The document needs PyYAML itself."""


def block_yaml(data: Any, scalars: Scalars | None = None) -> str:
    """``yaml.safe_dump(data, sort_keys=False, default_flow_style=False)``.

    ``scalars``: styled scalars to share between documents (a new cache otherwise).
    """
    if type(data) is dict and data:
        lines: list[str] = []
        try:
            _mapping(data, 0, None, lines, scalars if scalars is not None else {}, set())
        except _Fallback:
            pass
        else:
            return "\n".join(lines) + "\n"
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def _mapping(
    data: dict[Any, Any], indent: int, first: str | None, lines: list[str], scalars: Scalars, seen: set[int]
) -> None:
    """A non-empty mapping at ``indent``; ``first``: the ``- `` its first key follows on the same line."""
    _once(data, seen)
    pad = " " * indent
    for key, value in data.items():
        if type(key) is not str or not key or len(key) > SIMPLE_KEY_MAX:
            raise _Fallback
        start = first if first is not None else pad
        lead = start + _text(key, len(start), scalars) + ":"
        first = None
        if type(value) is dict and value:
            lines.append(lead)
            _mapping(value, indent + 2, None, lines, scalars, seen)
        elif type(value) is list and value:
            lines.append(lead)
            _sequence(value, indent, None, lines, scalars, seen)
        else:
            lines.append(lead + " " + _scalar(value, len(lead) + 1, scalars, seen))


def _sequence(
    items: list[Any], indent: int, first: str | None, lines: list[str], scalars: Scalars, seen: set[int]
) -> None:
    """A non-empty sequence whose ``- `` sit at ``indent``; ``first`` as in :func:`_mapping`."""
    _once(items, seen)
    pad = " " * indent
    for item in items:
        lead = (first if first is not None else pad) + "- "
        first = None
        if type(item) is dict and item:
            _mapping(item, indent + 2, lead, lines, scalars, seen)
        elif type(item) is list and item:
            _sequence(item, indent + 2, lead, lines, scalars, seen)
        else:
            lines.append(lead + _scalar(item, len(lead), scalars, seen))


def _once(container: Any, seen: set[int]) -> None:
    # PyYAML writes an object met twice as an anchor and an alias.
    if id(container) in seen:
        raise _Fallback
    seen.add(id(container))


def _scalar(value: Any, column: int, scalars: Scalars, seen: set[int]) -> str:
    """A scalar value (or an empty collection) starting at ``column``."""
    kind = type(value)
    if kind is str:
        return _text(value, column, scalars)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    if kind is float:
        return _float(value, scalars)
    if kind is dict and not value:
        _once(value, seen)
        return "{}"
    if kind is list and not value:
        _once(value, seen)
        return "[]"
    raise _Fallback


def _text(value: str, column: int, scalars: Scalars) -> str:
    """A string starting at ``column``, plain or single-quoted as PyYAML would write it;
    :class:`_Fallback` when PyYAML would fold it (a space, and it would pass column 80)."""
    key = (str, value)
    styled = scalars.get(key, "")
    if styled == "":
        styled = scalars[key] = _style(value)
    if styled is None or (column + len(styled) > WIDTH and " " in value):
        raise _Fallback
    return styled


def _style(value: str) -> str | None:
    """Plain when PyYAML's resolver reads the plain text back as a string and its analysis allows a
    block plain scalar, else single-quoted; ``None`` for anything it would double-quote or escape."""
    if not value or not value.isascii() or not value.isprintable():
        return None if value else "''"
    analysis = _ANALYSER.analyze_scalar(value)
    if analysis.multiline or not analysis.allow_single_quoted:
        return None
    if analysis.allow_block_plain and _RESOLVER.resolve(ScalarNode, value, (True, False)) == _TAG + "str":
        return value
    return "'" + value.replace("'", "''") + "'"


def _float(value: float, scalars: Scalars) -> str:
    key = (float, repr(value))
    styled = scalars.get(key, "")
    if styled == "":
        node = _RESOLVER.represent_float(value)
        styled = node.value if _RESOLVER.resolve(ScalarNode, node.value, (True, False)) == node.tag else None
        scalars[key] = styled
    if styled is None:
        raise _Fallback
    return styled
