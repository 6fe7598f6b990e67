"""Config problems, each tied to a stack file and a config key path."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from aiperf_kueue.common.display import cut, line

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
        elif _PLAIN_KEY.fullmatch(part) and len(part) <= _LONG_KEY:
            out += f".{part}" if out else part
        else:
            # JSON-quoted so a key holding a newline or quote still fits on one line; a long
            # key is cut, with its length.
            out += f"[{cut(json.dumps(part, ensure_ascii=False), _LONG_KEY)}]"
    return out


#: Characters of a key shown in a key path before it is cut.
_LONG_KEY = 80


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the config: where, and what."""

    path: str
    """Key path below ``aiperf-kueue:``, e.g. ``inventory.pools[1].gpus``."""

    message: str
    """What was given and what is allowed."""

    in_config: bool = True
    """Whether ``path`` is below ``aiperf-kueue:`` (else it is a path in the file itself, such as
    a stack file's top-level key)."""

    def line(self, source: str) -> str:
        """The user-facing line, printable and on one line: ``<stack file>: aiperf-kueue:<path>:
        <message>``; ``<source>: <path>: <message>`` outside the config; ``<source>: <message>``
        for the file as a whole."""
        if not self.path:
            return line(f"{source}: {self.message}")
        where = f"{PROJECT}:{self.path}" if self.in_config else self.path
        return line(f"{source}: {where}: {self.message}")


#: Problem lines printed at most; the rest are counted in one more line.
MAX_LINES = 100


class ConfigError(Exception):
    """The stack config is invalid; nothing may be registered or written."""

    def __init__(self, source: str, problems: list[Problem]) -> None:
        self.source = source
        self.problems = problems
        super().__init__("\n".join(self.lines()))

    def lines(self) -> list[str]:
        """One line per problem, in config order, each once (two checks may find the same thing); past
        :data:`MAX_LINES`, one last line says how many more there are (a fleet of 5,000 namespaces copied twice
        would otherwise print 5,000 lines that say the same thing)."""
        unique = list(dict.fromkeys(p.line(self.source) for p in self.problems))
        if len(unique) <= MAX_LINES:
            return unique
        rest = len(unique) - MAX_LINES
        return [*unique[:MAX_LINES], line(f"{self.source}: … and {rest:,} more problems like these")]
