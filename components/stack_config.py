"""Read this stack's config from the Pulumi engine once (:meth:`EngineConfig.read`), then plan it
(:func:`load`, which is handed that config and reads nothing else of the engine's), or stop cleanly."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.runtime import config as runtime_config
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.settings import get_monitor

from aiperf_kueue.common.errors import PROJECT, ConfigError
from aiperf_kueue.installs.cluster import KUBECONFIG_KEY, PROVIDER_SETTINGS
from aiperf_kueue.plan.stack_plan import StackPlan, plan_values
from aiperf_kueue.stackfile import secrets
from aiperf_kueue.stackfile.loader import StackFile, decode_engine_config, read_stack

#: The repository, where Pulumi.yaml is when the engine does not say (the offline plan's mock engine).
PROJECT_DIR = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class EngineConfig:
    """What the engine hands the program about its stack: the one place the program reads it."""

    stack: str
    """The stack's name (``pulumi.get_stack()``)."""
    root: Path
    """Where ``Pulumi.yaml`` and the stack file are (:func:`project_dir`)."""
    values: Mapping[str, Any]
    """Every config value as the engine hands it over (``aiperf-kueue:jobs`` → its JSON text): the
    ``PULUMI_CONFIG`` environment ``pulumi up`` sets, and what the SDK was given in-process (an
    Automation API inline program, the offline engine), which wins. The SDK has no public call that lists
    the keys, and every key must be seen (a key the model does not know is refused, not ignored)."""
    secret_keys: frozenset[str]
    """The keys the engine hands over as secrets (stack file, environment or ``--config-file``)."""
    provider: Mapping[str, Any]
    """The Kubernetes provider's settings the stack's cluster is built from: ``kubernetes:<key>`` → value."""
    kubeconfig_secret: bool = False
    """Whether the SDK was handed ``kubernetes:kubeconfig`` as a secret: the cluster's provider and the
    readiness gate then keep it one."""
    offline: bool = False
    """Whether the offline plan's mock engine runs the program (it deploys nothing), not ``pulumi up``."""

    @classmethod
    def read(cls) -> EngineConfig:
        """The engine's config for this run of the program."""
        stack = pulumi.get_stack()
        values = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
        secret = set(runtime_config.get_config_secret_keys_env())
        secret |= {k for k in values if runtime_config.is_config_secret(k)}
        settings = (*PROVIDER_SETTINGS, "context", "kubeconfig")
        provider = {f"kubernetes:{key}": runtime_config.get_config(f"kubernetes:{key}") for key in settings}
        secret_kubeconfig = runtime_config.is_config_secret(KUBECONFIG_KEY)
        offline = isinstance(get_monitor(), MockMonitor)
        return cls(stack, project_dir(stack), values, frozenset(secret), provider, secret_kubeconfig, offline)


@dataclass(frozen=True)
class LoadedStack:
    """The stack's plan, and the strings every AIPerfJob must carry as Pulumi secrets."""

    plan: StackPlan
    secret_strings: frozenset[str]
    secret_placeholders: Mapping[str, str] = field(default_factory=dict)
    """Each decrypted secret string → what ``plan`` shows for it, so what is derived from a spec (a job's
    name digest) is the same offline and under ``pulumi up`` (:func:`aiperf_kueue.stackfile.secrets.placeholders`)."""
    source: str = ""
    """The stack file, as messages name it (``stacks/Pulumi.prod.yaml``)."""


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
        # No project file: a directory of stack files the offline plan was pointed at (a fleet's stacks kept
        # together outside the project), else this project's layout.
        settings = {"stackConfigDir": "." if (root / f"Pulumi.{stack}.yaml").is_file() else "stacks"}
    directory = settings.get("stackConfigDir") if isinstance(settings, dict) else None
    return str(Path(directory if isinstance(directory, str) else ".") / f"Pulumi.{stack}.yaml")


def load(engine: EngineConfig) -> LoadedStack:
    """Validate and plan the stack ``engine`` describes; a config problem ends the run with one line per problem.

    ``pulumi.RunError`` makes the engine print the message without a traceback. Under ``pulumi up`` the
    values arrive decrypted: a message never shows a secret key's values (they become ``[secret]``).
    """
    root = engine.root
    source = stack_file_source(root, engine.stack)
    values = decode_engine_config(engine.values)
    secret_keys = {k for k in values if f"{PROJECT}:{k}" in engine.secret_keys}
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
        # The stack's kubernetes:* settings: the explicit provider is built from them and aiperf-kueue:cluster.
        # (The stack file's own keys too, so one the program does not hand over is named, not ignored.)
        provider = {**(in_file.provider if in_file else {}), **engine.provider}
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
        source,
    )


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
    kept secret, and a secret key outside ``jobs``/``sweeps`` is refused
    (:func:`aiperf_kueue.stackfile.secrets.check`)."""
    paths = secrets.placeholder_paths(in_file.values) if in_file else []
    uncovered = {k for k in secret_keys if not any(p[0] == k for p in paths)}
    return [*paths, *((k,) for k in sorted(uncovered))], uncovered
