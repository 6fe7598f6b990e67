"""Read this stack's config from the Pulumi engine and plan it, or stop cleanly."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.runtime import config as runtime_config

from aiperf_kueue import secrets
from aiperf_kueue.errors import PROJECT, ConfigError
from aiperf_kueue.install_checks import SERVER_SIDE_APPLY_KEY
from aiperf_kueue.loader import StackFile, decode_engine_config, read_stack
from aiperf_kueue.stack_plan import StackPlan, plan_values

#: The repository, where Pulumi.yaml is when the engine does not say (the offline plan's mock engine).
PROJECT_DIR = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class LoadedStack:
    """The stack's plan, and the strings every AIPerfJob must carry as Pulumi secrets."""

    plan: StackPlan
    secret_strings: frozenset[str]
    secret_placeholders: Mapping[str, str] = field(default_factory=dict)
    """Each decrypted secret string → what ``plan`` shows for it, so what is derived from a spec (a job's
    name digest) is the same offline and under ``pulumi up`` (:func:`aiperf_kueue.secrets.placeholders`)."""


def project_dir(stack: str) -> Path:
    """Where ``Pulumi.yaml`` is, and relative chart paths and the stack file are found from: the engine's root
    directory (the project, under ``pulumi up``), else the working directory or the repository, whichever holds
    this stack's file (an Automation API inline program gets no root directory; its host may run it from the
    project directory), else the repository."""
    roots = [Path(r) for r in (pulumi.get_root_directory(), os.getcwd()) if r] + [PROJECT_DIR]
    for root in roots:
        if (root / stack_file_source(root, stack)).is_file():
            return root
    return next((r for r in roots if (r / "Pulumi.yaml").is_file()), PROJECT_DIR)


def stack_file_source(root: Path, stack: str) -> str:
    """``stacks/Pulumi.<stack>.yaml``, relative to ``root``, as ``Pulumi.yaml``'s ``stackConfigDir`` says."""
    try:
        settings = yaml.safe_load((root / "Pulumi.yaml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        settings = {"stackConfigDir": "stacks"}  # this project's layout
    directory = settings.get("stackConfigDir") if isinstance(settings, dict) else None
    return str(Path(directory if isinstance(directory, str) else ".") / f"Pulumi.{stack}.yaml")


def load() -> LoadedStack:
    """Validate and plan; a config problem ends the run with one line per problem.

    ``pulumi.RunError`` makes the engine print the message without a traceback. Under ``pulumi up`` the
    values arrive decrypted: a message never shows a secret key's values (they become ``[secret]``).
    """
    root = project_dir(pulumi.get_stack())
    source = stack_file_source(root, pulumi.get_stack())
    raw = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    values = decode_engine_config(raw)
    secret_keys = _secret_keys(values)
    hide = _all_strings(values, secret_keys)
    try:
        # What plan refuses in the stack file (a date Pulumi would hand over as Go's text, a tag it
        # ignores...) stops pulumi up too: both accept and refuse the same files.
        in_file = read_stack(root / source, source) if (root / source).is_file() else None
    except ConfigError as exc:
        raise pulumi.RunError("invalid stack config:\n" + "\n".join(exc.lines())) from None
    offline = secrets.placeholder_paths(values)
    paths, uncovered = (offline, set()) if offline else _secure_paths(secret_keys, in_file)
    try:
        provider = {SERVER_SIDE_APPLY_KEY: runtime_config.get_config(SERVER_SIDE_APPLY_KEY)}
        plan = plan_values(values, source, root, paths, provider, decrypted=not offline)
    except ConfigError as exc:
        lines = [secrets.redact(line, hide) for line in exc.lines()]
        raise pulumi.RunError("invalid stack config:\n" + "\n".join(lines)) from None
    if uncovered & set(secrets.SPEC_KEYS):
        pulumi.log.warn(
            f"the secret keys {', '.join(sorted(uncovered))} have no secure: value in {source} (set with "
            "--config-file, from an environment, or as one secure value): every string in their job specs "
            "is kept secret"
        )
    return LoadedStack(
        plan,
        secrets.secret_strings(values, paths),
        # Offline the values already are the placeholders.
        {} if offline else secrets.placeholders(values, in_file.values if in_file else {}, paths),
    )


def _secret_keys(values: Mapping[str, Any]) -> set[str]:
    """The project keys the engine hands over as secrets (stack file, environment or --config-file)."""
    from_env = set(runtime_config.get_config_secret_keys_env())
    return {k for k in values if f"{PROJECT}:{k}" in from_env or runtime_config.is_config_secret(f"{PROJECT}:{k}")}


def _all_strings(values: Mapping[str, Any], keys: set[str]) -> frozenset[str]:
    """Every string under ``keys``: what an error message must not show."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, str):
            found.add(node)
        elif isinstance(node, Mapping):
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for key in keys:
        walk(values.get(key))
    return frozenset(found)


def _secure_paths(secret_keys: set[str], in_file: StackFile | None) -> tuple[list[secrets.KeyPath], set[str]]:
    """Where the ``secure:`` values are (the stack file's placeholders mark them), plus each secret key with
    none there (an ESC environment, ``--config-file``, no stack file) as a whole: its specs' strings are all
    kept secret, and a secret key outside ``jobs``/``sweeps`` is refused (:func:`aiperf_kueue.secrets.check`)."""
    paths = secrets.placeholder_paths(in_file.values) if in_file else []
    uncovered = {k for k in secret_keys if not any(p[0] == k for p in paths)}
    return [*paths, *((k,) for k in sorted(uncovered))], uncovered
