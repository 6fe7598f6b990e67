"""The two forms of a kubeconfig setting: a path, or the file's contents (YAML or JSON).

Import-light on purpose: the program reads ``kubernetes:kubeconfig`` with it on every run,
and only the readiness provider, on ``pulumi up``, loads the Kubernetes client.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

#: How errors name a kubeconfig given as contents: never the contents, which hold credentials.
INLINE_KUBECONFIG = "<inline kubeconfig>"


class KubeconfigError(Exception):
    """The API server connection settings (kubeconfig or in-cluster) can't be used."""


def is_kubeconfig_contents(value: str | os.PathLike[str]) -> bool:
    """Whether a kubeconfig setting holds the file's contents rather than its path.

    ``kubernetes:kubeconfig`` takes either (the provider reads an existing file, else parses the
    value). An existing file wins; otherwise a value with a line break (YAML) or starting with
    ``{`` (JSON, or flow YAML) is contents, and anything else a path (so a mistyped path is
    reported as a missing file, by its name).
    """
    if not isinstance(value, str):
        return False
    if "\n" not in value:
        try:
            if Path(value).expanduser().is_file():
                return False
        except (OSError, ValueError):  # too long, or a NUL: not a usable path
            pass
    return "\n" in value or value.lstrip().startswith("{")


def parse_kubeconfig_contents(text: str) -> dict[str, Any]:
    """Parse inline contents; an error says where, never what (a snippet could be a token)."""
    if text.lstrip().startswith("{"):
        with contextlib.suppress(json.JSONDecodeError):  # flow-style YAML is not always JSON
            return _mapping(json.loads(text))
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "an unknown position"
        raise KubeconfigError(
            f"{INLINE_KUBECONFIG}: kubernetes:kubeconfig is neither an existing file nor a YAML or JSON "
            f"kubeconfig (parse error at {where})"
        ) from None
    return _mapping(doc)


def _mapping(doc: Any) -> dict[str, Any]:
    if doc is None:
        return {}
    if not isinstance(doc, Mapping):
        raise KubeconfigError(f"{INLINE_KUBECONFIG}: not a kubeconfig (top level is not a mapping)")
    return dict(doc)
