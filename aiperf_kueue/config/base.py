"""Shared pieces of the config models: the base class, constrained strings and strict numbers."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, Strict
from pydantic.alias_generators import to_camel

from aiperf_kueue.common import limits, quantity
from aiperf_kueue.common.display import quoted, show

# Always used with fullmatch: Go's regexp (and so the API server) has no "$ before a trailing
# newline" exception, and a name ending in "\n" must not pass here and fail there.
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


class Model(BaseModel):
    """Base of every config model: immutable, camelCase keys, unknown keys rejected."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        use_attribute_docstrings=True,
        validate_default=False,
    )


def dns_label(value: str) -> str:
    """A DNS-1123 label: what Kueue object names must be to serve as label values."""
    if len(value) > 63:
        raise ValueError(f"must be at most 63 characters, got {len(value)} ({quoted(value)})")
    if not _DNS_LABEL.fullmatch(value):
        raise ValueError(
            f"must be a DNS-1123 label (lower-case letters, digits and '-', starting and "
            f"ending with a letter or digit), got {quoted(value)}"
        )
    return value


def qualified_name(value: str) -> str:
    """A Kubernetes qualified name (label key, resource name): ``[prefix/]name``."""
    prefix, slash, name = value.rpartition("/")
    if slash and (len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        raise ValueError(f"prefix must be a DNS subdomain, got {quoted(value)}")
    if not name or len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        raise ValueError(
            f"must be a qualified name ([prefix/]name, name at most 63 characters of [A-Za-z0-9-_.]), "
            f"got {quoted(value)}"
        )
    return value


def label_value(value: str) -> str:
    """A Kubernetes label value: at most 63 characters of ``[A-Za-z0-9-_.]``."""
    if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        raise ValueError(f"must be a label value (at most 63 characters of [A-Za-z0-9-_.]), got {quoted(value)}")
    return value


def _quantity_text(value: Any) -> Any:
    expected = f'must be a Kubernetes quantity such as "16", "1500m" or "64Gi", got {show(value)}'
    if isinstance(value, bool):
        raise ValueError(expected)
    if isinstance(value, (int, float)):
        value = str(value)
    if not isinstance(value, str):
        raise ValueError(expected)
    try:
        quantity.parse(value)
    except ValueError:
        raise ValueError(expected) from None
    return value


def _non_negative(value: str) -> str:
    if quantity.parse(value) < 0:
        raise ValueError(f"must be >= 0, got {quoted(value)}")
    return value


_BINARY_SUFFIXES = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def resource_quantity(resource: str, value: str) -> str:
    """``value`` if its unit makes sense for ``resource``: CPU counts cores, so a binary suffix
    (``Gi``, for bytes) is refused; bytes (memory, storage, huge pages) and every other resource
    (GPUs, pods, extended resources) are whole units: Kubernetes rounds a fraction of a byte up,
    and refuses a fractional extended resource."""
    if resource == "cpu":
        suffix = next((s for s in _BINARY_SUFFIXES if value.endswith(s)), None)
        if suffix is not None:
            raise ValueError(
                f'must be CPU cores such as "16", "1500m" or "0.5", got {quoted(value)}: {suffix} is a binary '
                "suffix, for bytes (memory), not cores"
            )
        return value
    unit = "bytes" if quantity.is_byte_resource(resource) else "units"
    example = '"64Gi" or "500M"' if unit == "bytes" else '"8"'
    if value[-1:] in ("m", "u", "n"):
        raise ValueError(
            f"must be a whole number of {unit} such as {example}, got {quoted(value)}: {value[-1]} counts "
            f"fractions (milli, micro, nano), which {resource} has none of"
        )
    if quantity.parse(value).denominator != 1:
        raise ValueError(f"must be a whole number of {unit} such as {example}, got {quoted(value)}")
    return value


def _cpu(value: str) -> str:
    return resource_quantity("cpu", value)


def _bytes(value: str) -> str:
    return resource_quantity("memory", value)


DnsLabel = Annotated[str, AfterValidator(dns_label)]
QualifiedName = Annotated[str, AfterValidator(qualified_name)]
LabelValue = Annotated[str, AfterValidator(label_value)]
#: A Kubernetes quantity (``"16"``, ``"1500m"``, ``"64Gi"``), never negative.
Quantity = Annotated[str, BeforeValidator(_quantity_text), AfterValidator(_non_negative)]
#: A quantity of CPU cores (``"16"``, ``"1500m"``): no binary suffix.
CpuQuantity = Annotated[str, BeforeValidator(_quantity_text), AfterValidator(_non_negative), AfterValidator(_cpu)]
#: A quantity of bytes (``"64Gi"``, ``"500M"``): a whole number of them.
ByteQuantity = Annotated[str, BeforeValidator(_quantity_text), AfterValidator(_non_negative), AfterValidator(_bytes)]


def percent(value: Any) -> Decimal:
    """A percentage written ``25``, ``12.5`` or ``"12.5%"`` (a YAML number, or text ending in ``%``),
    from 0 to 100, with at most ``limits.MAX_DIGITS`` significant digits and a decimal exponent
    within ``limits.MIN_EXPONENT..MAX_EXPONENT``: exact arithmetic on ``1e-999999999`` would
    never end."""
    expected = f'must be a percentage from 0 to 100, such as 25, 12.5 or "12.5%", got {show(value)}'
    if isinstance(value, bool) or not isinstance(value, (int, float, str, Decimal)):
        raise ValueError(expected)
    if isinstance(value, str):
        # Text only with its unit: a quoted "60" is text like a quoted count "8", refused alike.
        text = value.removesuffix("%")
        if len(text) > limits.MAX_DIGITS + 10 or not _PERCENT_TEXT.fullmatch(text):
            raise ValueError(expected)
        if text == value:
            # `pulumi config set --path KEY 12.5` writes this: only integers become YAML numbers.
            raise ValueError(
                f'{expected}, text because of its quotes: write {text} or "{text}%" '
                f"(pulumi config set --path stores {text} as text, {text}% as a percentage)"
            )
    else:
        text = str(value)
    try:
        number = Decimal(text)
    except ArithmeticError:
        raise ValueError(expected) from None
    if not number.is_finite() or not 0 <= number <= 100:
        raise ValueError(expected)
    digits, exponent = number.as_tuple()[1:]
    assert isinstance(exponent, int)
    if number and (len(digits) > limits.MAX_DIGITS or not limits.MIN_EXPONENT <= exponent <= limits.MAX_EXPONENT):
        raise ValueError(
            f"must be a percentage with at most {limits.MAX_DIGITS} significant digits and "
            f"{-limits.MIN_EXPONENT} decimal places, got {show(value)}"
        )
    return number


_PERCENT_TEXT = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")

#: Per pool, per resource quantities: ``{pool: {resource: quantity}}``.
PoolQuantities = dict[str, dict[str, Quantity]]

# Strict: YAML ``true`` is not the number 1 and ``"no"`` is not false. pydantic's lax mode
# would coerce both silently; strict errors read "must be a whole number, got True" /
# "must be true or false, got 'no'" (loader._problem).
#: A whole number given as one (not a bool, string or float).
WholeNumber = Annotated[int, Strict()]
#: ``true`` or ``false``, nothing else.
Flag = Annotated[bool, Strict()]
#: A number given as one: whole or decimal, not a bool or a string.
Number = Annotated[float, Strict()]
#: A CRD ``format: int32`` field.
Int32 = Annotated[int, Strict(), Field(ge=-(2**31), le=2**31 - 1)]
#: A percentage: ``25``, ``12.5`` or ``"12.5%"`` (see :func:`percent`).
Percent = Annotated[Decimal, BeforeValidator(percent)]
#: A CRD ``format: int64`` field.
Int64 = Annotated[int, Strict(), Field(ge=-(2**63), le=2**63 - 1)]
