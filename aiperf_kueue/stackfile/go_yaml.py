"""How ``gopkg.in/yaml.v3`` v3.0.1 resolves a scalar, ported: the library the Pulumi CLI reads
stack files with (``sdk/go/common/encoding/marshal.go``; see docs/yaml.md).

Upstream: yaml.v3 v3.0.1 resolve.go; pulumi v3.274.0 sdk/go/common/encoding/marshal.go

YAML 1.1 loaders (PyYAML) and yaml.v3 disagree on plain scalars: ``yes``, ``on`` and ``1:40``
are a bool and the number 100 to PyYAML, text to yaml.v3; ``017`` is 15 to both, ``08`` is 8 to
yaml.v3 and text to PyYAML. This module gives yaml.v3's answer, from the same steps in the same
order as ``resolve()`` in its ``resolve.go`` and Go's ``strconv``.
"""

from __future__ import annotations

import math
import re
from typing import Any

NULL, BOOL, STR, INT, FLOAT, TIMESTAMP, BINARY, MERGE = (
    "!!null",
    "!!bool",
    "!!str",
    "!!int",
    "!!float",
    "!!timestamp",
    "!!binary",
    "!!merge",
)
_LONG_PREFIX = "tag:yaml.org,2002:"
#: Tags ``resolve()`` resolves; any other tag leaves the text as it is.
_RESOLVABLE = frozenset(("", STR, BOOL, INT, FLOAT, NULL, TIMESTAMP))

_MAP: dict[str, tuple[str, Any]] = {}
for _words, _item in (
    (("true", "True", "TRUE"), (BOOL, True)),
    (("false", "False", "FALSE"), (BOOL, False)),
    (("", "~", "null", "Null", "NULL"), (NULL, None)),
    ((".nan", ".NaN", ".NAN"), (FLOAT, math.nan)),
    ((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), (FLOAT, math.inf)),
    (("-.inf", "-.Inf", "-.INF"), (FLOAT, -math.inf)),
    (("<<",), (MERGE, "<<")),
):
    for _word in _words:
        _MAP[_word] = _item

#: The first character's class in ``resolve()``'s table: Sign, Digit, In map, or '.'.
_HINT = {**dict.fromkeys("+-", "S"), **dict.fromkeys("0123456789", "D"), **dict.fromkeys("yYnNtTfFoO~", "M")}
_HINT["."] = "."

_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
#: What Go's ``strconv.ParseFloat`` accepts of a text starting with '.'.
_DOT_FLOAT = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?")
_DIGITS = {2: re.compile("[01]+"), 8: re.compile("[0-7]+"), 10: re.compile("[0-9]+"), 16: re.compile("[0-9a-fA-F]+")}
_INT64_MAX, _UINT64_MAX = 2**63 - 1, 2**64 - 1

#: The timestamp layouts yaml.v3 tries (``allowedTimestampFormats``), as one pattern; the
#: ranges Go's ``time.Parse`` checks are checked after the match.
_TIMESTAMP = re.compile(
    r"(?P<y>[0-9]{4})-(?P<mo>[0-9]{1,2})-(?P<d>[0-9]{1,2})"
    r"(?:(?:[Tt](?P<h1>[0-9]{1,2}):(?P<mi1>[0-9]{1,2}):(?P<s1>[0-9]{1,2})(?:[.,][0-9]+)?"
    r"(?:Z|[+-](?P<zh>[0-9]{2}):(?P<zm>[0-9]{2})))"
    r"|(?: (?P<h2>[0-9]{1,2}):(?P<mi2>[0-9]{1,2}):(?P<s2>[0-9]{1,2})(?:[.,][0-9]+)?))?"
)
_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class ResolveError(ValueError):
    """yaml.v3 refuses the scalar (``cannot decode !!str `yes` as a !!bool``)."""


def short_tag(tag: str) -> str:
    """``tag:yaml.org,2002:int`` → ``!!int``; other tags unchanged (yaml.v3's ``shortTag``)."""
    return "!!" + tag[len(_LONG_PREFIX) :] if tag.startswith(_LONG_PREFIX) else tag


def resolve(tag: str, text: str) -> tuple[str, Any]:
    """yaml.v3's ``resolve(tag, in)``: the resolved tag and the Go value (``None``, ``bool``,
    ``int`` for int64 and uint64, ``float``, or the text). :class:`ResolveError` where yaml.v3 fails."""
    tag = short_tag(tag)
    if tag not in _RESOLVABLE:
        return tag, text
    rtag, out = _resolve(tag, text)
    if tag in ("", rtag, STR):
        return rtag, out
    if tag == FLOAT and rtag == INT and out <= _INT64_MAX:
        return FLOAT, float(out)
    raise ResolveError(f"cannot decode {rtag} `{text}` as a {tag}")


def _resolve(tag: str, text: str) -> tuple[str, Any]:
    hint = _HINT.get(text[0]) if text else "N"
    if hint is None or tag == STR:
        return STR, text
    if text in _MAP:
        return _MAP[text]
    if hint == "." and _DOT_FLOAT.fullmatch(text):
        number = float(text)
        if math.isfinite(number):
            return FLOAT, number
    elif hint in ("D", "S"):
        if tag in ("", TIMESTAMP) and is_timestamp(text):
            return TIMESTAMP, text
        plain = text.replace("_", "")
        signed = parse_int(plain, 0)
        if signed is not None and -_INT64_MAX - 1 <= signed <= _INT64_MAX:
            return INT, signed
        unsigned = None if plain[:1] in "+-" else parse_int(plain, 0)
        if unsigned is not None and 0 <= unsigned <= _UINT64_MAX:
            return INT, unsigned
        if _YAML_FLOAT.fullmatch(plain):
            number = float(plain)
            if math.isfinite(number):
                return FLOAT, number
        for prefix, base in (("0b", 2), ("0o", 8)):
            if plain.startswith(prefix):
                value = parse_int(plain[2:], base)
                if value is not None and -_INT64_MAX - 1 <= value <= _INT64_MAX:
                    return INT, value
                unsigned = None if plain[2:3] in "+-" else value
                if unsigned is not None and 0 <= unsigned <= _UINT64_MAX:
                    return INT, unsigned
            elif plain.startswith("-" + prefix):
                value = parse_int("-" + plain[3:], base)
                if value is not None and -_INT64_MAX - 1 <= value <= _INT64_MAX:
                    return INT, value
    return STR, text


def parse_int(text: str, base: int) -> int | None:
    """Go's ``strconv.ParseInt(text, base, ...)`` without the range check: the value, or ``None``
    for a syntax error. Base 0 reads the prefix (``0x``, ``0o``, ``0b``, or ``0`` for octal)."""
    sign = 1
    if text[:1] in ("+", "-"):
        sign = -1 if text[0] == "-" else 1
        text = text[1:]
    if not text:
        return None
    if base == 0:
        base = 10
        if text[0] == "0":
            prefix = text[1:2].lower()
            if len(text) >= 3 and prefix in ("b", "o", "x"):
                base, text = {"b": 2, "o": 8, "x": 16}[prefix], text[2:]
            else:
                base, text = 8, text[1:]
                if not text:
                    return 0
    if not _DIGITS[base].fullmatch(text):
        return None
    digits = text.lstrip("0")
    if len(digits) > 64:  # past any 64-bit range, in any base; int() would refuse 4,300 digits
        return sign * (2**65)
    return sign * int(digits or "0", base)


def is_timestamp(text: str) -> bool:
    """Whether yaml.v3 reads ``text`` (plain) as a timestamp: Go's ``time.Parse`` with one of
    its layouts succeeds."""
    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        return False
    year, month, day = int(match["y"]), int(match["mo"]), int(match["d"])
    if not 1 <= month <= 12:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not 1 <= day <= _DAYS[month - 1] + (1 if month == 2 and leap else 0):
        return False
    hour, minute, second = (match["h1"] or match["h2"]), (match["mi1"] or match["mi2"]), (match["s1"] or match["s2"])
    if hour is not None and not (int(hour) < 24 and int(minute) < 60 and int(second) < 60):
        return False
    return not (match["zh"] is not None and (int(match["zh"]) > 24 or int(match["zm"]) > 60))
