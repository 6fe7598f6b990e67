"""Read stack config (from a stack file or the Pulumi engine) into ``StackConfig``.

Both entry points, ``aiperf-kueue plan`` and ``__main__.py`` under ``pulumi up``,
go through :func:`parse_config`, so they accept and reject exactly the same config.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from aiperf_kueue.config import KEYS, PROJECT, StackConfig
from aiperf_kueue.errors import ConfigError, Problem, key_path

#: What ``plan`` shows instead of a ``secure:`` value it cannot (and must not) decrypt: a
#: fingerprint of the ciphertext, so that a changed secret shows in ``diff``. Re-encrypting the
#: same value (a new stack key, ``pulumi config set --secret`` again) changes it too.
SECRET_PLACEHOLDER = "[encrypted {fingerprint}]"
#: Matches what :func:`secret_placeholder` returns.
SECRET_PLACEHOLDER_PATTERN = re.compile(r"\[encrypted [0-9a-f]{8}\]")


def fingerprint(text: str) -> str:
    """The first 8 hex digits of ``text``'s SHA-256: enough to see a change, too short to matter."""
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def secret_placeholder(ciphertext: str) -> str:
    """``secure: v1:...`` → ``[encrypted 1a2b3c4d]``."""
    return SECRET_PLACEHOLDER.format(fingerprint=fingerprint(ciphertext))


def stack_file_for(stack: str, stacks_dir: Path) -> Path:
    """A stack name (``prod``) or a path to a stack file → the stack file path."""
    candidate = Path(stack)
    if candidate.suffix in (".yaml", ".yml") or candidate.exists():
        return candidate
    return stacks_dir / f"Pulumi.{stack}.yaml"


def stack_name_of(path: Path) -> str:
    """``stacks/Pulumi.prod.yaml`` → ``prod``."""
    name = path.name
    for suffix in (".yaml", ".yml"):
        name = name.removesuffix(suffix)
    return name.removeprefix("Pulumi.")


def read_stack_file(path: Path) -> tuple[dict[str, Any], set[str]]:
    """The project's config values in a stack file, and the keys that hold secrets."""
    stack = read_stack(path)
    return stack.values, stack.secret_keys


@dataclass(frozen=True)
class StackFile:
    """What a stack file says, read once."""

    values: dict[str, Any]
    """The project's config values (key without ``aiperf-kueue:``); ``secure:`` values (whole
    keys or nested) as :func:`secret_placeholder` of their ciphertext."""
    secret_keys: set[str]
    """The project keys that hold ``secure:`` values."""
    provider: dict[str, Any]
    """The Kubernetes provider's settings (``kubernetes:*`` keys, full key → value)."""


def read_stack(path: Path) -> StackFile:
    """Parse a stack file; :class:`ConfigError` if it is not one."""
    source = str(path)
    try:
        document = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError(source, [Problem("", f"cannot read stack file: {exc.strerror}")]) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(source, [Problem("", f"not UTF-8 text: {exc.reason} at byte {exc.start}")]) from None
    except yaml.YAMLError as exc:
        raise ConfigError(source, [Problem("", f"not valid YAML: {exc}")]) from None
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise ConfigError(source, [Problem("", "a stack file must be a mapping with a 'config' key")])
    config = document.get("config") or {}
    if not isinstance(config, dict):
        raise ConfigError(source, [Problem("", "'config' must be a mapping of key to value")])
    values: dict[str, Any] = {}
    secret_keys: set[str] = set()
    for full_key, value in config.items():
        namespace, _, key = str(full_key).partition(":")
        if namespace != PROJECT:
            continue
        redacted, had_secret = _redact(value)
        values[key] = redacted
        if had_secret:
            secret_keys.add(key)
    provider = {str(k): v for k, v in config.items() if str(k).startswith("kubernetes:")}
    return StackFile(values, secret_keys, provider)


def _redact(value: Any) -> tuple[Any, bool]:
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            return secret_placeholder(str(value["secure"])), True
        pairs = {k: _redact(v) for k, v in value.items()}
        return {k: v for k, (v, _) in pairs.items()}, any(s for _, s in pairs.values())
    if isinstance(value, list):
        items = [_redact(v) for v in value]
        return [v for v, _ in items], any(s for _, s in items)
    return value, False


def decode_engine_config(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Config as the Pulumi engine hands it over (``project:key`` → JSON text) → values."""
    values: dict[str, Any] = {}
    for full_key, value in raw.items():
        namespace, _, key = full_key.partition(":")
        if namespace != PROJECT:
            continue
        if isinstance(value, str):
            with contextlib.suppress(json.JSONDecodeError):
                value = json.loads(value)
        values[key] = value
    return values


def parse_config(values: Mapping[str, Any], source: str) -> StackConfig:
    """Validate config values (key without project prefix → value) into ``StackConfig``.

    Raises :class:`ConfigError` with every problem found, each naming its key path.
    """
    problems = [
        Problem(key, f"unknown config key; allowed keys: {', '.join(KEYS)}") for key in values if key not in KEYS
    ]
    known = {k: v for k, v in values.items() if k in KEYS}
    try:
        config = StackConfig.model_validate(known)
    except ValidationError as exc:
        problems += [_named(_problem(err), tuple(err["loc"]), known) for err in exc.errors()]
        raise ConfigError(source, problems) from None
    if problems:
        raise ConfigError(source, problems)
    return config


def _named(problem: Problem, loc: tuple[Any, ...], values: Mapping[str, Any]) -> Problem:
    """A problem inside ``jobs[i]`` or ``sweeps[i]`` names that job or sweep (``<name>: ...``),
    as the admission checks do, unless the message already shows the name."""
    if len(loc) < 2 or loc[0] not in ("jobs", "sweeps") or not isinstance(loc[1], int) or loc[2:3] == ("name",):
        return problem
    items = values.get(loc[0])
    item = items[loc[1]] if isinstance(items, list) and loc[1] < len(items) else None
    name = item.get("name") if isinstance(item, dict) else None
    if not isinstance(name, str) or repr(name) in problem.message:
        return problem
    return Problem(problem.path, f"{name}: {problem.message}")


#: The shape pydantic expected, by its error type, in words.
_SHAPES = {
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "list_type": "a list",
}


def _problem(err: Any) -> Problem:
    # pydantic marks a mapping's bad key with a trailing "[key]"; the path to the key says it already.
    loc = tuple(err["loc"])
    loc = loc[:-1] if len(loc) > 1 and loc[-1] == "[key]" else loc
    given = err.get("input")
    kind = err["type"]
    ctx = err.get("ctx") or {}
    if isinstance(given, str) and SECRET_PLACEHOLDER_PATTERN.fullmatch(given) and kind in _SHAPES:
        # A whole list or mapping made secure: its placeholder is a string, so say what went wrong.
        message = (
            "is a secure value, but secure values are supported only as single string values (e.g. one header "
            f"value, an env value); write {_SHAPES[kind]} here and make only its string values secure"
        )
    elif kind == "missing":
        message = "required, but not set"
    elif kind == "extra_forbidden":
        allowed = _allowed_keys(loc[:-1])
        message = f"unknown key {loc[-1]!r}" + (f"; allowed: {', '.join(allowed)}" if allowed else "")
    elif kind in ("greater_than_equal", "greater_than", "less_than", "less_than_equal"):
        op = {"greater_than_equal": ">=", "greater_than": ">", "less_than": "<", "less_than_equal": "<="}[kind]
        bound = next(iter(ctx.values()))
        message = f"must be {op} {bound}, got {given}"
    elif kind == "too_short":
        message = f"must have at least {ctx.get('min_length')} item(s), got {_length(ctx, given)}"
    elif kind == "too_long":
        message = f"must have at most {ctx.get('max_length')} items, got {_length(ctx, given)}"
    elif kind == "literal_error":
        message = f"must be one of {ctx.get('expected')}, got {given!r}"
    elif kind in ("int_type", "int_parsing", "int_from_float"):
        message = f"must be a whole number, got {given!r}"
    elif kind in ("bool_type", "bool_parsing"):
        message = f"must be true or false, got {given!r}"
    elif kind in ("string_type",):
        message = f"must be a string, got {given!r}"
    elif kind in ("dict_type", "model_type", "model_attributes_type"):
        message = f"must be a mapping, got {given!r}"
    elif kind in ("list_type",):
        message = f"must be a list, got {given!r}"
    elif kind.startswith("decimal") or kind.startswith("float"):
        message = f"must be a number, got {given!r}"
    elif kind in ("value_error", "assertion_error"):
        message = str(ctx.get("error", err["msg"]))
    else:
        message = f"{err['msg']}, got {given!r}"
    return Problem(key_path(*loc), message)


def _length(ctx: dict[str, Any], given: Any) -> Any:
    """The length pydantic reports; for mappings it reports ``None``, so count the input."""
    actual = ctx.get("actual_length")
    if actual is None and hasattr(given, "__len__"):
        actual = len(given)
    return actual


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    """The keys the model at ``loc`` accepts, found by walking StackConfig's fields."""
    annotation: Any = StackConfig
    for part in loc:
        annotation = _unwrap(annotation)
        if isinstance(part, int) or not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            args = typing.get_args(annotation)
            annotation = args[-1] if args else annotation
            continue
        fields = {f.alias or n: f for n, f in annotation.model_fields.items()}
        if part not in fields:
            return []
        annotation = fields[part].annotation
    annotation = _unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [f.alias or n for n, f in annotation.model_fields.items()]
    return []


def _unwrap(annotation: Any) -> Any:
    """``Model | None`` → ``Model``; ``list[Model]`` → ``Model``; others unchanged."""
    while True:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        origin = typing.get_origin(annotation)
        if origin in (list, typing.Union) or (origin is not None and str(origin) == "<class 'types.UnionType'>"):
            if len(args) == 1:
                annotation = args[0]
                continue
            models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
            if len(models) == 1 and origin is not list:
                annotation = models[0]
                continue
        return annotation
