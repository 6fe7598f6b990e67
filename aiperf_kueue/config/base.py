"""Shared pieces of the config models: the base class, constrained strings and strict numbers."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, Strict
from pydantic.alias_generators import to_camel

from aiperf_kueue import quantity

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
        raise ValueError(f"must be at most 63 characters, got {len(value)} ({value!r})")
    if not _DNS_LABEL.fullmatch(value):
        raise ValueError(
            f"must be a DNS-1123 label (lower-case letters, digits and '-', starting and "
            f"ending with a letter or digit), got {value!r}"
        )
    return value


def qualified_name(value: str) -> str:
    """A Kubernetes qualified name (label key, resource name): ``[prefix/]name``."""
    prefix, slash, name = value.rpartition("/")
    if slash and (len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        raise ValueError(f"prefix must be a DNS subdomain, got {value!r}")
    if not name or len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        raise ValueError(
            f"must be a qualified name ([prefix/]name, name at most 63 characters of [A-Za-z0-9-_.]), got {value!r}"
        )
    return value


def label_value(value: str) -> str:
    """A Kubernetes label value: at most 63 characters of ``[A-Za-z0-9-_.]``."""
    if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        raise ValueError(f"must be a label value (at most 63 characters of [A-Za-z0-9-_.]), got {value!r}")
    return value


def _quantity_text(value: Any) -> Any:
    expected = f'must be a Kubernetes quantity such as "16", "1500m" or "64Gi", got {value!r}'
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
        raise ValueError(f"must be >= 0, got {value!r}")
    return value


DnsLabel = Annotated[str, AfterValidator(dns_label)]
QualifiedName = Annotated[str, AfterValidator(qualified_name)]
LabelValue = Annotated[str, AfterValidator(label_value)]
#: A Kubernetes quantity (``"16"``, ``"1500m"``, ``"64Gi"``), never negative.
Quantity = Annotated[str, BeforeValidator(_quantity_text), AfterValidator(_non_negative)]
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
#: A CRD ``format: int64`` field.
Int64 = Annotated[int, Strict(), Field(ge=-(2**63), le=2**63 - 1)]
