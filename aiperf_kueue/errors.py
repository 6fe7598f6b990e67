"""Config problems, each tied to a stack file and a config key path."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

#: The Pulumi project name: the namespace of every config key.
PROJECT = "aiperf-kueue"

#: Matched in full: a key ending in a newline is not plain and must show quoted.
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def key_path(*parts: str | int) -> str:
    """``("queues", "clusterQueues", 0, "name")`` → ``queues.clusterQueues[0].name``.

    Keys that are not plain words (``nvidia.com/gpu``) are quoted the way
    ``pulumi config set --path`` expects: ``quotas["nvidia.com/gpu"]``.
    """
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            out += f".{part}" if out else part
        else:
            # JSON-quoted so a key holding a newline or quote still fits on one line.
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the config: where, and what."""

    path: str
    """Key path below ``aiperf-kueue:``, e.g. ``inventory.pools[1].gpus``."""

    message: str
    """What was given and what is allowed."""

    def line(self, source: str) -> str:
        """The user-facing line: ``<stack file>: aiperf-kueue:<path>: <message>``."""
        return f"{source}: {PROJECT}:{self.path}: {self.message}"


class ConfigError(Exception):
    """The stack config is invalid; nothing may be registered or written."""

    def __init__(self, source: str, problems: list[Problem]) -> None:
        self.source = source
        self.problems = problems
        super().__init__("\n".join(self.lines()))

    def lines(self) -> list[str]:
        """One line per problem, in config order."""
        return [p.line(self.source) for p in self.problems]
