"""Kubernetes resource quantities: exact parsing and canonical formatting.

The API server normalises quantities it stores (``2048Mi`` becomes ``2Gi``,
``12000m`` becomes ``12``). A Pulumi input that differs from the stored form
shows as a permanent diff, so every quantity this program emits is already in
the form the server would write back.
"""

from __future__ import annotations

import re
from fractions import Fraction

_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<num>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<dec>[numkMGTPE])|[eE](?P<exp>[+-]?[0-9]+))?$"
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
MIB = 2**20

#: Resources whose quantities count bytes, formatted with binary suffixes.
BYTE_RESOURCES = frozenset({"memory", "ephemeral-storage"})


def parse(value: str | int | float) -> Fraction:
    """Return the exact value of a Kubernetes quantity, or raise ``ValueError``."""
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(str(value))
    match = _QUANTITY.match(value.strip()) if isinstance(value, str) else None
    if match is None:
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


def format_cpu(millicores: int) -> str:
    """Whole cores when exact (``"190"``), else millicores (``"1500m"``)."""
    if millicores % 1000 == 0:
        return str(millicores // 1000)
    return f"{millicores}m"


def format_bytes(count: int) -> str:
    """The largest binary unit that divides exactly (``"1900Gi"``, ``"1536Mi"``)."""
    if count == 0:
        return "0"
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        if count % _BINARY[suffix] == 0:
            return f"{count // _BINARY[suffix]}{suffix}"
    return str(count)


def canonical(resource: str, amount: Fraction) -> str | int:
    """Canonical form of ``amount`` of ``resource`` as the API server stores it.

    CPU and fractional amounts use millicores, byte resources binary suffixes,
    and whole counts (GPUs, pods) are plain integers.
    """
    if resource == "cpu":
        return format_cpu(int(amount * 1000))
    if is_byte_resource(resource) and amount.denominator == 1:
        return format_bytes(int(amount))
    if amount.denominator == 1:
        return int(amount)
    return format_cpu(int(amount * 1000))
