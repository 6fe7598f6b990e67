"""Read this stack's config from the Pulumi engine and plan it, or stop cleanly."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config

from aiperf_kueue import secrets
from aiperf_kueue.errors import PROJECT, ConfigError
from aiperf_kueue.installs import SERVER_SIDE_APPLY_KEY
from aiperf_kueue.loader import decode_engine_config, read_stack
from aiperf_kueue.stack_plan import StackPlan, plan_values

#: Where Pulumi.yaml is: relative chart paths start here, under ``pulumi up`` and ``plan`` alike.
PROJECT_DIR = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class LoadedStack:
    """The stack's plan, and the strings every AIPerfJob must carry as Pulumi secrets."""

    plan: StackPlan
    secret_strings: frozenset[str]
    secret_placeholders: Mapping[str, str] = field(default_factory=dict)
    """Each decrypted ``secure:`` value → the placeholder ``plan`` shows for it: every AIPerfJob's
    name digests its spec with these in place (``aiperf_kueue.manifests.spec_digest``), so
    ``plan`` and ``pulumi up`` name it alike and no name depends on a secret's plaintext."""


def load() -> LoadedStack:
    """Validate and plan; a config problem ends the run with one line per problem.

    ``pulumi.RunError`` makes the engine print the message without a traceback.
    """
    source = f"stacks/Pulumi.{pulumi.get_stack()}.yaml"
    raw = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    values = decode_engine_config(raw)
    try:
        # What plan refuses in the stack file (a date Pulumi would hand over as Go's text, a tag it
        # ignores...) stops pulumi up too: both accept and refuse the same files.
        if (PROJECT_DIR / source).is_file():
            read_stack(PROJECT_DIR / source, source)
    except ConfigError as exc:
        raise pulumi.RunError("invalid stack config:\n" + "\n".join(exc.lines())) from None
    paths, fallback = _secure_paths(values, PROJECT_DIR / source)
    try:
        provider = {SERVER_SIDE_APPLY_KEY: runtime_config.get_config(SERVER_SIDE_APPLY_KEY)}
        plan = plan_values(values, source, PROJECT_DIR, paths, provider)
    except ConfigError as exc:
        raise pulumi.RunError("invalid stack config:\n" + "\n".join(exc.lines())) from None
    strings = secrets.secret_strings(values, paths)
    if fallback:
        pulumi.log.warn(
            f"{source} not found: cannot tell which values of the secret keys {', '.join(sorted(fallback))} "
            "were secure, so every string in their job specs is kept secret"
        )
        strings |= secrets.spec_strings(values, fallback)
    return LoadedStack(plan, strings)


def _secure_paths(values: dict[str, Any], stack_file: Path) -> tuple[list[secrets.KeyPath], set[str]]:
    """Where the ``secure:`` values are, and the secret keys for which that is unknown.

    Offline the values carry the loader's placeholders. Under ``pulumi up`` they arrive
    decrypted, and only the whole key is flagged secret, so read the stack file.
    """
    found = secrets.placeholder_paths(values)
    if found:
        return found, set()
    from_env = set(runtime_config.get_config_secret_keys_env())
    secret_keys = {
        k for k in values if f"{PROJECT}:{k}" in from_env or runtime_config.is_config_secret(f"{PROJECT}:{k}")
    }
    if not secret_keys:
        return [], set()
    if stack_file.is_file():
        return secrets.secure_paths_in_file(stack_file), set()
    return [], secret_keys & set(secrets.SPEC_KEYS)
