r"""Values and text as error messages show them: one printable line, in YAML terms, cut short.

Every config error is one line of a terminal or CI log. A value in it is shown as YAML would
write it (``null``, ``true``, ``.nan``, ``'text'``), never as a Python repr; control, bidi and
other invisible characters are escaped (``\\u202e``), so a value cannot reorder, recolour or
split the line; and a long value is cut, with its length given.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any

#: Characters of a value shown before it is cut.
SHOWN = 80

_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", '"': '\\"'}


def escape(text: str) -> str:
    r"""``text`` with every non-printable character (controls, bidi marks, separators other
    than the space, surrogates) as a ``\\xNN`` / ``\\uNNNN`` / ``\\UNNNNNNNN`` escape."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escape_char(ch) for ch in text)


def _escape_char(ch: str) -> str:
    if ch in "\n\t\r":
        return _NAMED[ch]
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def cut(text: str, limit: int = SHOWN) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was: ``aaaa… (5000 characters)``."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"


def quoted(text: str) -> str:
    """A string as YAML writes it in a message: ``'plain'``, or double-quoted with escapes when
    it holds a quote, a backslash or an invisible character; cut when long."""
    short = text if len(text) <= SHOWN else text[:SHOWN]
    if short.isprintable() and "'" not in short and "\\" not in short:
        body = f"'{short}'"
    else:
        body = '"' + "".join(_NAMED.get(ch) or (ch if ch.isprintable() else _escape_char(ch)) for ch in short) + '"'
    return body if len(text) <= SHOWN else f"{body}… ({len(text)} characters)"


def show(value: Any) -> str:
    """``value`` in YAML terms, on one line, cut short."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return cut(str(value)) if abs(value) < 10**SHOWN else f"a number with {_digits(value)} digits"
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        return repr(value)
    if isinstance(value, (Decimal, Fraction)):
        return cut(str(value))
    if isinstance(value, str):
        return quoted(value)
    if isinstance(value, (bytes, bytearray)):
        return f"!!binary ({len(value)} bytes)"
    if isinstance(value, Mapping):
        return _described("a mapping", "key", [f"{_key(k)}: {_inner(v)}" for k, v in _first(value.items())], len(value))
    if isinstance(value, (list, tuple)):
        return _described("a list", "item", [_inner(v) for v in _first(value)], len(value))
    if isinstance(value, (set, frozenset)):
        return _described("a set", "item", [_inner(v) for v in _first(sorted(value, key=str))], len(value))
    return cut(escape(str(value)))


def _inner(value: Any) -> str:
    """An item of a list or mapping: a nested list or mapping by its size only."""
    if isinstance(value, Mapping):
        return f"a mapping of {_count(len(value), 'key')}"
    if isinstance(value, (list, tuple, set, frozenset)):
        return f"a list of {_count(len(value), 'item')}"
    return show(value)


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def listed(parts: list[str], total: int | None = None, first: int = 3) -> str:
    """Parts joined by commas, the first few only: ``a, b, c … and 995 more``."""
    total = len(parts) if total is None else total
    if total <= first + 1:
        return ", ".join(parts[:total])
    return f"{', '.join(parts[:first])} … and {total - first:,} more"


def _described(kind: str, noun: str, parts: list[str], total: int) -> str:
    """A list or mapping in words, never a Python or YAML repr: ``a list of 3 items ('a', 'b', 'c')``,
    ``a list of 1,000 items ('a', 'b', 'c' … and 997 more)``, ``an empty list``."""
    if total == 0:
        return f"an empty {kind.removeprefix('a ')}"
    return cut(f"{kind} of {_count(total, noun)} ({listed(parts, total)})", 2 * SHOWN)


def _digits(value: int) -> int:
    # Counting digits without str(): Python refuses to print an int of more than 4300 digits.
    return math.floor(math.log10(abs(value))) + 1 if value else 1


def _key(key: Any) -> str:
    if isinstance(key, str) and key and key.isprintable() and all(c.isalnum() or c in "-_./" for c in key):
        return cut(key)
    return show(key)


def _first(items: Any) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if len(out) == 4:  # enough for listed(): three shown, or all four
            break
        out.append(item)
    return out


def line(text: str) -> str:
    """A whole message as one printable line (the last guard before it is printed)."""
    return escape(text)
