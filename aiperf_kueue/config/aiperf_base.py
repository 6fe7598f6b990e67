"""The base of the AIPerfJob spec models: closed objects, key-checked objects, JSON numbers.

Upstream: aiperf 0.13.0 aiperf/config/base.py

AIPerf 0.13.0's own models close every object (``extra="forbid"``); the CRD generated from them
makes the API server prune unknown keys. So an unknown key here is an error naming the
camelCase key (a snake_case spelling would be pruned, not read).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import ConfigDict, PlainValidator, model_validator
from pydantic.alias_generators import to_camel

from aiperf_kueue.common.display import show
from aiperf_kueue.common.suggest import did_you_mean
from aiperf_kueue.config.base import Model


def _number(value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"must be a number, got {show(value)}")
    return value


#: A JSON number (integer or decimal, never a bool), kept as given.
Number = Annotated[int | float, PlainValidator(_number)]


class CrdModel(Model):
    """A closed object of the AIPerfJob spec: camelCase keys only, unknown keys rejected."""

    model_config = ConfigDict(populate_by_name=False)

    @model_validator(mode="before")
    @classmethod
    def _camel_case_hint(cls, data: Any) -> Any:
        # The API server drops unknown keys of closed objects, snake_case spellings included
        # (the operator would never see them): name the camelCase key instead.
        if isinstance(data, dict) and cls.model_config.get("extra") != "allow":
            aliases = {f.alias or n for n, f in cls.model_fields.items()}
            for key in data:
                if isinstance(key, str) and key not in aliases and to_camel(key) in aliases:
                    raise ValueError(
                        f"unknown key {show(key)}: the AIPerfJob CRD uses camelCase, write {show(to_camel(key))}"
                    )
        return data


class NearMiss(CrdModel):
    """A closed object whose unknown key is named with the key meant (``did you mean``) and the
    keys allowed. ``KEYS`` lists keys taken besides the fields (camelCase)."""

    KEYS: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError(f"must be a mapping, got {show(data)}")
        allowed = cls.KEYS | {f.alias or n for n, f in cls.model_fields.items()}
        for key in data:
            if key in allowed:
                continue
            if isinstance(key, str) and to_camel(key) in allowed:
                raise ValueError(
                    f"unknown key {show(key)}: the AIPerfJob CRD uses camelCase, write {show(to_camel(key))}"
                )
            raise ValueError(
                f"unknown key {show(key)}{did_you_mean(str(key), allowed)}; allowed: {', '.join(sorted(allowed))}"
            )
        return data


class KeysOnly(NearMiss):
    """A release object whose values AIPerf validates: only its keys are checked here, the
    values are kept as given. ``KEYS`` lists them (camelCase)."""

    model_config = ConfigDict(extra="allow")
