"""Kubernetes resource quantities: exact parsing and canonical formatting.

Upstream: kubernetes v1.36.3 staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go

The API server normalises quantities it stores (``2048Mi`` becomes ``2Gi``,
``12000m`` becomes ``12``, ``1000`` becomes ``1k``). A Pulumi input that differs
from the stored form shows as a permanent diff, so every quantity this program
emits is already in the form the server would write back: a string that
``resource.Quantity.String()`` maps to itself.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?P<num>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<dec>[numkMGTPE])|[eE](?P<exp>[+-]?[0-9]+))?"
)
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
#: Decimal exponent → SI suffix, as ``resource.Quantity`` prints them.
_SI_SUFFIX = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
#: No real quantity has a larger exponent; bounding it keeps ``10 ** exponent`` cheap.
_MAX_EXPONENT = 100
#: Characters of a quantity: ``resource.Quantity`` keeps at most 18 significant digits, and
#: 64 characters leave room for every real spelling while keeping exact arithmetic cheap.
MAX_TEXT = 64
MIB = 2**20
NANO = Fraction(1, 10**9)

#: Resources whose quantities count bytes, formatted with binary suffixes.
BYTE_RESOURCES = frozenset({"memory", "ephemeral-storage"})


def parse(value: str | int | float) -> Fraction:
    """Return the exact value of a Kubernetes quantity, or raise ``ValueError``.

    The whole string must match, as ``resource.ParseQuantity`` requires: no surrounding
    whitespace, no trailing newline.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"not a Kubernetes quantity: {value!r}")
        return Fraction(str(value))
    if isinstance(value, str) and len(value) > MAX_TEXT:
        raise ValueError(f"not a Kubernetes quantity: {len(value)} characters")
    match = _QUANTITY.fullmatch(value) if isinstance(value, str) else None
    if match is None or (match["exp"] and abs(int(match["exp"])) > _MAX_EXPONENT):
        raise ValueError(f"not a Kubernetes quantity: {value!r}")
    number = Fraction(match["num"])
    if match["bin"]:
        number *= _BINARY[match["bin"]]
    elif match["dec"]:
        number *= _DECIMAL[match["dec"]]
    elif match["exp"]:
        number *= Fraction(10) ** int(match["exp"])
    return -number if match["sign"] == "-" else number


def is_byte_resource(resource: str) -> bool:
    """Whether ``resource`` counts bytes (memory, storage, huge pages)."""
    return resource in BYTE_RESOURCES or resource.startswith("hugepages-")


def format_decimal(amount: Fraction) -> str:
    """``resource.Quantity.String()`` of a DecimalSI value: the largest SI suffix whose
    mantissa is a whole number, exponent a multiple of 3 (``"1k"``, ``"1500"``, ``"1500m"``, ``"2"``).

    Like the API server, precision below 1n is rounded up (away from zero) to the next nano.
    """
    nanos = math.ceil(abs(amount) / NANO)
    if nanos == 0:
        return "0"
    exponent = -9
    while nanos % 10 == 0:
        nanos //= 10
        exponent += 1
    extra = exponent % 3  # Python's % is never negative: step down to a multiple of 3
    nanos *= 10**extra
    exponent -= extra
    suffix = _SI_SUFFIX.get(exponent, f"e{exponent}")
    return f"{'-' if amount < 0 else ''}{nanos}{suffix}"


def format_bytes(count: int) -> str:
    """A byte count as the API server stores it: the largest binary suffix that divides
    exactly (``"1900Gi"``, ``"1536Mi"``), or, when not even 1Ki divides it, the DecimalSI
    form (``"1G"``): a bare ``"1000000000"`` would be read back as DecimalSI and stored as ``"1G"``."""
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        if count and count % _BINARY[suffix] == 0:
            return f"{count // _BINARY[suffix]}{suffix}"
    return format_decimal(Fraction(count))


def manifest_quantity(resource: str, amount: Fraction) -> str:
    """:func:`canonical` as a Kubernetes object carries it: always a string.

    The API server hands every quantity back as a string (``16`` is stored and read as ``"16"``), and
    pulumi-kubernetes compares what it sends with what it read: an integer would show as a change
    (``"16" => 16``) on every preview, found by ``pulumi preview --expect-no-changes`` on a real cluster."""
    return str(canonical(resource, amount))


def canonical(resource: str, amount: Fraction) -> str | int:
    """Canonical form of ``amount`` of ``resource`` as the API server stores it.

    CPU is always a string; byte resources use :func:`format_bytes`; other amounts
    :func:`format_decimal`. A count whose canonical form is bare digits (GPUs and pods below
    1000, or 1500) is a plain integer here, for the plan's tables; objects take
    :func:`manifest_quantity`, always a string. Counts that gain a suffix (``1000`` → ``"1k"``)
    or a fraction (``"500m"``) are strings either way.
    """
    if resource == "cpu":
        return format_decimal(amount)
    if is_byte_resource(resource) and amount.denominator == 1:
        return format_bytes(int(amount))
    text = format_decimal(amount)
    return int(text) if text.lstrip("-").isdigit() else text
