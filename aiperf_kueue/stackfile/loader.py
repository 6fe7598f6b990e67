"""Read stack config (from a stack file or the Pulumi engine) into ``StackConfig``.

Both entry points, ``aiperf-kueue plan`` and ``__main__.py`` under ``pulumi up``,
go through :func:`parse_config`, so they accept and reject exactly the same config.
"""

from __future__ import annotations

import hashlib
import json
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from aiperf_kueue.common import limits
from aiperf_kueue.common.display import show
from aiperf_kueue.common.errors import ConfigError, Problem, key_path
from aiperf_kueue.common.suggest import did_you_mean
from aiperf_kueue.config import KEYS, PROJECT, StackConfig
from aiperf_kueue.stackfile import yaml_input
from aiperf_kueue.stackfile.bounds import bounds_problems

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


def read_stack(path: Path, source: str | None = None) -> StackFile:
    """Parse a stack file as the Pulumi CLI reads it (:mod:`aiperf_kueue.stackfile.yaml_input`), with the
    values the program would receive under ``pulumi up``; :class:`ConfigError` (problems named
    after ``source``, default the path) if it is not one."""
    config = yaml_input.read_stack_document(path, source).config
    values: dict[str, Any] = {}
    secret_keys: set[str] = set()
    provider: dict[str, Any] = {}
    for full_key, value in config.items():
        namespace, _, key = full_key.partition(":")
        if namespace == "kubernetes":
            provider[full_key] = yaml_input.engine_text(value)[0]
        if namespace != PROJECT:
            continue
        redacted, had_secret = _redact(value)
        # A whole key made secure, or a text, reaches the program as text it decodes
        # (decode_engine_config); an object reaches it as the JSON of ``redacted``.
        values[key] = (
            redacted
            if had_secret or isinstance(redacted, (dict, list))
            else decode_engine_value(yaml_input.engine_text(redacted)[0])
        )
        if had_secret:
            secret_keys.add(key)
    return StackFile(values, secret_keys, provider)


def _redact(value: Any) -> tuple[Any, bool]:
    if isinstance(value, yaml_input.Secure):
        return secret_placeholder(value.ciphertext), True
    if isinstance(value, dict):
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
        values[key] = decode_engine_value(value) if isinstance(value, str) else value
    return values


def decode_engine_value(text: str) -> Any:
    """One config value as the engine hands it over: JSON text → value; other text as is (also
    JSON nested past any sensible depth or holding a number Python refuses to read)."""
    if len(text) > limits.MAX_FILE_BYTES:
        return text
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def parse_config(values: Mapping[str, Any], source: str) -> StackConfig:
    """Validate config values (key without project prefix → value) into ``StackConfig``.

    Raises :class:`ConfigError` with every problem found, each naming its key path.
    """
    problems = [
        Problem(key, f"unknown config key{did_you_mean(key, KEYS)}; allowed keys: {', '.join(KEYS)}")
        for key in values
        if key not in KEYS
    ]
    known = {k: v for k, v in values.items() if k in KEYS}
    bounds = bounds_problems(known)
    if bounds:
        raise ConfigError(source, problems + bounds)
    try:
        config = StackConfig.model_validate(known)
    except ValidationError as exc:
        problems += [_named(_problem(err), tuple(err["loc"]), known) for err in exc.errors()]
        raise ConfigError(source, problems) from None
    problems += installs_only_problems(config)
    if problems:
        raise ConfigError(source, problems)
    return config


def installs_only_problems(config: StackConfig) -> list[Problem]:
    """What an installs-only stack (``queues`` left out) cannot declare: everything that needs a queue."""
    if not config.installs_only:
        return []
    fix = "declare them in the fleet stack of this cluster (kueue.install: false), or set queues here"
    declared: tuple[tuple[str, list[Any]], ...] = (
        ("jobs", config.jobs),
        ("sweeps", config.sweeps),
        ("priorityClasses", config.priority_classes),
    )
    found = [
        Problem(key, f"{len(items)} declared, but this stack sets no queues (installs only); {fix}")
        for key, items in declared
        if items
    ]
    if config.multikueue is not None and config.multikueue.role == "manager":
        found.append(Problem("multikueue", f"a manager queues the fleet's work, but this stack sets no queues; {fix}"))
    return found


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
        message = f"unknown key {show(loc[-1])}{did_you_mean(str(loc[-1]), allowed)}" + (
            f"; allowed: {', '.join(allowed)}" if allowed else ""
        )
    elif kind in ("greater_than_equal", "greater_than", "less_than", "less_than_equal"):
        op = {"greater_than_equal": ">=", "greater_than": ">", "less_than": "<", "less_than_equal": "<="}[kind]
        bound = next(iter(ctx.values()))
        message = f"must be {op} {bound}, got {show(given)}"
    elif kind == "too_short":
        message = f"must have at least {ctx.get('min_length')} item(s), got {_length(ctx, given)}"
    elif kind == "too_long":
        message = f"must have at most {ctx.get('max_length')} items, got {_length(ctx, given)}"
    elif kind == "literal_error":
        message = f"must be one of {ctx.get('expected')}, got {show(given)}"
    elif kind in ("int_type", "int_parsing", "int_from_float"):
        message = f"must be a whole number (e.g. {_example(loc)}: 8), got {show(given)}{_unquote_hint(given)}"
    elif kind in ("bool_type", "bool_parsing"):
        message = f"must be true or false, got {show(given)}{_bool_hint(given)}"
    elif kind in ("string_type",):
        message = f"must be a string, got {show(given)}"
    elif kind in ("dict_type", "model_type", "model_attributes_type"):
        message = f"must be a mapping, got {show(given)}"
    elif kind in ("list_type",):
        message = f"must be a list, got {show(given)}"
    elif kind.startswith("decimal") or kind.startswith("float") or kind == "finite_number":
        message = f"must be a number, got {show(given)}{_unquote_hint(given)}"
    elif kind in ("value_error", "assertion_error"):
        message = str(ctx.get("error", err["msg"]))
    else:
        # pydantic's own wording ("Input should be ...") is not ours to show.
        message = f"is not allowed here ({kind.replace('_', ' ')}), got {show(given)}"
    return Problem(key_path(*loc), message)


def _example(loc: tuple[Any, ...]) -> str:
    """The key to write in an example: the field's own name (``gpus``), else ``count``."""
    named = [part for part in loc if isinstance(part, str)]
    return named[-1] if named else "count"


def _unquote_hint(given: Any) -> str:
    """For a number written in quotes: say that quotes make it text."""
    if isinstance(given, str) and given.strip() and _looks_numeric(given):
        return ", text because of its quotes"
    return ""


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return len(text) < 100


def _bool_hint(given: Any) -> str:
    """YAML 1.1 words that are text to Pulumi's YAML 1.2 reader."""
    if isinstance(given, str) and given.lower() in ("yes", "no", "on", "off", "y", "n"):
        return " (YAML 1.2, which Pulumi reads, has only true and false)"
    if isinstance(given, str) and given in ("true", "false"):
        return ", text because of its quotes"
    return ""


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


#: A Pulumi stack name (``tokens.ParseStackName``): at most 100 of these characters.
_STACK_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")


def stack_name_problem(name: str) -> str | None:
    """Why ``name`` (taken from a stack file's name) is not a Pulumi stack name, or ``None``."""
    if _STACK_NAME.fullmatch(name):
        return None
    if not name:
        return "the stack name (the file name without 'Pulumi.' and '.yaml') is empty"
    if len(name) > 100:
        return f"the stack name is {len(name)} characters; Pulumi allows at most 100"
    bad = next(ch for ch in name if not re.fullmatch(r"[A-Za-z0-9_.-]", ch))
    return (
        f"{show(name)} is not a Pulumi stack name: it may only contain letters, digits, '-', '_' and '.', "
        f"not {show(bad)}"
    )


def missing_stack_problem(stack: str, path: Path, stacks_dir: Path) -> Problem | None:
    """For a stack given by name whose file does not exist: the stacks that do."""
    if path.exists() or Path(stack).suffix in (".yaml", ".yml") or "/" in stack:
        return None
    names = sorted(stack_name_of(p) for p in stacks_dir.glob("Pulumi.*.yaml"))
    there = f"stacks in {stacks_dir}/: {', '.join(names)}" if names else f"no stacks in {stacks_dir}/"
    return Problem("", f"no stack {show(stack)}{did_you_mean(stack, names)}; {there}")
