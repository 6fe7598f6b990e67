"""Where a stack's ``secure:`` values are, and which strings the program must keep secret.

Pulumi hands the program a config key holding a ``secure:`` value decrypted, as plain JSON,
with only the whole key flagged secret. The program builds manifests from parts of that JSON,
so the flag would not follow the value: a ``secure:`` env value in a job spec would land in
state and previews as plaintext. So the program finds the ``secure:`` values itself (in the
stack file under ``pulumi up``; offline, by their ``[encrypted ...]`` placeholders), allows them
only where it can keep them secret, and wraps every manifest string equal to one of them in a
Pulumi secret (``components/jobs.py``).

Allowed: string values inside an AIPerfJob spec, ``jobs[i].spec`` and ``sweeps[i].spec``. Every
string there is copied into the AIPerfJob's ``spec`` (sweeps change only ``phases``
concurrency), and the whole AIPerfJob is built here. And a MultiKueue kubeconfig, which must be one
(:func:`check_kubeconfigs`): the program hands it on whole, as a Pulumi secret. Elsewhere (chart values,
quotas, names) a secret would reach an object this program cannot mask leaf by leaf, so it is a config error.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from aiperf_kueue.common.errors import ConfigError, Problem, key_path
from aiperf_kueue.stackfile.loader import SECRET_PLACEHOLDER_PATTERN, read_stack_file

KeyPath = tuple[str | int, ...]
#: The config keys whose entries' ``spec`` may hold ``secure:`` string values.
SPEC_KEYS = ("jobs", "sweeps")

NOT_HERE = (
    "is a secure value, but secure values are supported only inside an AIPerfJob spec (jobs[i].spec or "
    "sweeps[i].spec, e.g. a header value, an env value), where the program keeps each one "
    "a Pulumi secret; here it would reach the cluster and Pulumi state in plaintext"
)


def secure_paths_in_file(path: Path) -> list[KeyPath]:
    """The key paths (below ``aiperf-kueue:``) of every ``secure:`` value in a stack file (the
    loader's placeholders mark them); none if it cannot be read."""
    try:
        values, _ = read_stack_file(path)
    except ConfigError:
        return []
    return placeholder_paths(values)


def placeholder_paths(values: Mapping[str, Any]) -> list[KeyPath]:
    """The key paths of every ``[encrypted ...]`` placeholder: where an offline stack file had
    ``secure:`` values (the loader replaced each with its placeholder)."""
    # One pass in C first: a fleet's config has a hundred thousand leaves and usually no secret.
    if "[encrypted " not in json.dumps(values, default=str, ensure_ascii=False):
        return []
    return [path for path, leaf in _leaves(values) if _is_placeholder(leaf)]


def _is_placeholder(value: Any) -> bool:
    return isinstance(value, str) and SECRET_PLACEHOLDER_PATTERN.fullmatch(value) is not None


def _leaves(value: Any, path: KeyPath = ()) -> Iterator[tuple[KeyPath, Any]]:
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, (*path, i))
    else:
        yield path, value


def in_a_spec(path: KeyPath) -> bool:
    """Whether ``path`` is ``jobs[i].spec`` or ``sweeps[i].spec`` or lies inside one (a secure
    whole spec is the config model's to reject: it expects a mapping there)."""
    return len(path) >= 3 and path[0] in SPEC_KEYS and isinstance(path[1], int) and path[2] == "spec"


def is_kubeconfig(path: KeyPath) -> bool:
    """Whether ``path`` is a MultiKueue kubeconfig, a manager's ``multikueue.workers[i].kubeconfig`` or a worker's
    ``multikueue.kubeconfig``: the program hands it on only as a Pulumi secret (``components/multikueue.py``)."""
    return path in KUBECONFIG_PATHS or (
        len(path) == 4 and path[0] == "multikueue" and path[1] == "workers" and path[3] == "kubeconfig"
    )


KUBECONFIG_PATHS = (("multikueue", "kubeconfig"),)


#: A MultiKueue kubeconfig given in clear.
KUBECONFIG_IN_CLEAR = (
    "is given in clear, but it holds the credentials of a worker cluster and would reach Pulumi state and plan "
    "output: set it as a secure value (pulumi config set --secret --path '{key}' \"$(cat worker.kubeconfig)\"), "
    "or leave it out to read the worker stack's multikueueKubeconfig output"
)


def check_kubeconfigs(values: Mapping[str, Any], paths: list[KeyPath], source: str) -> None:
    """:class:`ConfigError` for every MultiKueue kubeconfig that is not a ``secure:`` value (never showing it)."""
    secure = set(paths)
    workers = value_at(values, ("multikueue", "workers"))
    given: list[KeyPath] = [("multikueue", "kubeconfig")] if value_at(values, ("multikueue", "kubeconfig")) else []
    if isinstance(workers, list):
        given += [
            ("multikueue", "workers", i, "kubeconfig")
            for i, worker in enumerate(workers)
            if isinstance(worker, Mapping) and worker.get("kubeconfig") is not None
        ]
    problems = [
        Problem(key_path(*p), KUBECONFIG_IN_CLEAR.format(key=f"aiperf-kueue:{key_path(*p)}"))
        for p in given
        if p not in secure
    ]
    if problems:
        raise ConfigError(source, problems)


#: A whole ``jobs``/``sweeps`` key, or one whole entry, made one secure value.
WHOLE_UNREADABLE = (
    "is one secure value (pulumi config set --secret on the whole key): plan never decrypts, so it can neither "
    "check these entries nor show them (pulumi up keeps every string of their specs secret). To plan it, make "
    "only the secret strings secure: pulumi config set --secret --path 'aiperf-kueue:{key}[0].spec.<path>' VALUE"
)
NOT_HERE_WHOLE = (
    "is secret, but secret values are supported only inside an AIPerfJob spec (jobs[i].spec or sweeps[i].spec); "
    "this key's values would reach the cluster and Pulumi state in plaintext: keep it in clear"
)


def check(paths: list[KeyPath], source: str, *, decrypted: bool = False) -> None:
    """:class:`ConfigError` naming every ``secure:`` value outside an AIPerfJob spec.

    A whole list or mapping made secure inside a spec is left to the config model, whose
    message says to make only its string values secure. A whole ``jobs``/``sweeps`` key (or one
    entry of it) made secure is readable only ``decrypted`` (under ``pulumi up``, which then keeps
    every string of those specs secret: :func:`secret_strings`); offline it is refused with the fix.
    """
    problems = []
    for p in paths:
        if in_a_spec(p) or is_kubeconfig(p):
            continue
        if len(p) > 2 or (len(p) == 2 and p[0] not in SPEC_KEYS):
            problems.append(Problem(key_path(*p), NOT_HERE))
        elif p[0] not in SPEC_KEYS:
            problems.append(Problem(key_path(*p), NOT_HERE_WHOLE))
        elif not decrypted:
            problems.append(Problem(key_path(*p), WHOLE_UNREADABLE.format(key=p[0])))
    if problems:
        raise ConfigError(source, problems)


def value_at(values: Any, path: KeyPath) -> Any:
    """The value at ``path``; None where there is none."""
    node: Any = values
    for part in path:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def secret_strings(values: Mapping[str, Any], paths: list[KeyPath]) -> frozenset[str]:
    """The string values at ``paths``: what every AIPerfJob must carry as Pulumi secrets.

    A path to a whole ``jobs``/``sweeps`` key or entry (made secure as one value, readable under
    ``pulumi up`` only) stands for every string of the specs below it; one inside a spec, for every
    string below it."""
    found: set[str] = set()
    for path in paths:
        node = value_at(values, path)
        if isinstance(node, str):
            if node:
                found.add(node)
        elif path and path[0] in SPEC_KEYS and len(path) <= 2:
            entries = node if isinstance(node, list) else [node]
            for entry in entries:
                spec = entry.get("spec") if isinstance(entry, dict) else None
                found.update(v for _, v in _leaves(spec) if isinstance(v, str) and v)
        elif in_a_spec(path):
            found.update(v for _, v in _leaves(node) if isinstance(v, str) and v)
    return frozenset(found)


def placeholders(decrypted: Mapping[str, Any], in_file: Mapping[str, Any], paths: list[KeyPath]) -> dict[str, str]:
    """Each decrypted secret string → what ``plan`` shows for it (``[encrypted xxxxxxxx]``, from the stack
    file's ciphertext), so that anything derived from a spec (a job's name digest) is the same offline and
    under ``pulumi up``; strings of a whole secure key or entry → ``[secret]``."""
    out: dict[str, str] = {}
    for path in paths:
        plain, shown = value_at(decrypted, path), value_at(in_file, path)
        if isinstance(plain, str) and isinstance(shown, str):
            out[plain] = shown
        else:
            out.update(dict.fromkeys(secret_strings(decrypted, [path]), "[secret]"))
    return out


def redact(line: str, strings: frozenset[str]) -> str:
    """``line`` with every occurrence of a secret string replaced by ``[secret]`` (longest first). Strings
    under 3 characters are left: replacing them would garble the message, and they are no secret."""
    for text in sorted((t for t in strings if len(t) >= 3), key=len, reverse=True):
        line = line.replace(text, "[secret]")
    return line


def spec_strings(values: Mapping[str, Any], keys: set[str]) -> frozenset[str]:
    """Every string inside the specs of the secret ``keys``: the fallback when it is not known
    which of them were ``secure:`` (no stack file to read), so that none leaks."""
    found: set[str] = set()
    for key in SPEC_KEYS:
        if key not in keys or not isinstance(values.get(key), list):
            continue
        for entry in values[key]:
            spec = entry.get("spec") if isinstance(entry, dict) else None
            found.update(v for _, v in _leaves(spec) if isinstance(v, str) and v)
    return frozenset(found)
