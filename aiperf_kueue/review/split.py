"""Splitting a live single stack into two stacks of one cluster: what ``pulumi state move`` takes to the platform.

A big fleet runs its cluster as two stacks (docs/operations.md, "Two stacks for one cluster"): a *platform* stack
with the installs only and a *fleet* stack with the queues, namespaces and jobs. A cluster already deployed as one
stack gets there without an API call: the live stack becomes the fleet stack (its stack file edited to install
nothing), and ``pulumi state move`` carries to a new platform stack the state of everything the platform stack
declares, with every resource below it (a chart's rendered objects, which no offline plan lists). Then neither
stack's ``pulumi up`` deletes or replaces an object.

This module works that set out from the live stack's ``pulumi stack export`` and the two stacks' offline plans,
matching resources by their URN below the stack and project (``urn:pulumi:<stack>::<project>::<types>::<name>``),
which ``pulumi state move`` keeps. Every URN is named on the command line, children included: the CLI's own walk
to a moved resource's children adds to a Go map while ranging over it, which may skip grandchildren
(pulumi v3.274.0 ``pkg/cmd/pulumi/state/state_move.go``).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiperf_kueue.common.display import cut, escape
from aiperf_kueue.common.errors import PROJECT, ConfigError, Problem

#: Types ``pulumi state move`` refuses to move (it copies the providers a moved resource uses) or never moves.
PROVIDER_PREFIX = "pulumi:providers:"
ROOT_STACK = "pulumi:pulumi:Stack"
#: Types whose children no offline plan lists (what a chart renders, or a YAML file holds).
_RENDERS = ("kubernetes:helm.sh/", "kubernetes:yaml")
#: Resources both stacks may declare: they hold no Kubernetes object (this program's components, and the readiness
#: gate, a dynamic resource that only waits for Kueue).
_NO_OBJECT_PREFIXES = (f"{PROJECT}:index:", "pulumi-python:dynamic/")


@dataclass(frozen=True)
class LiveResource:
    """One resource of the live stack's state, as the split reads it."""

    urn: str
    type: str
    parent: str | None

    @property
    def tail(self) -> str:
        """The URN below the stack and project: the same in every stack of the project."""
        return urn_tail(self.urn)

    @property
    def name(self) -> str:
        """The resource's name (the URN's last part)."""
        return self.urn.rsplit("::", 1)[-1]


@dataclass(frozen=True)
class SplitMoves:
    """What splitting the live stack moves, and what each stack's next ``pulumi up`` then does."""

    source: str
    """The live stack, which becomes the fleet stack."""
    dest: str
    """The new platform stack."""
    moves: tuple[str, ...]
    """URNs of the live stack to move, in the export's order (``pulumi state move`` keeps the state's own)."""
    recreated: tuple[str, ...]
    """Names of moved resources the fleet stack declares too: its next ``up`` creates them again (no object)."""
    dropped: tuple[LiveResource, ...]
    """Live resources neither stack declares: the fleet stack's next ``up`` deletes them."""
    created: tuple[str, ...]
    """Names the platform stack declares that the live stack does not hold: its first ``up`` creates them."""

    def command(self) -> str:
        """The ``pulumi state move`` command line, one URN per line (shell-quoted: URNs hold ``$``)."""
        head = f"pulumi state move --source {shlex.quote(self.source)} --dest {shlex.quote(self.dest)} --yes"
        return " \\\n  ".join([head, *(shlex.quote(urn) for urn in self.moves)])

    def destructive(self) -> list[str]:
        """One line per Kubernetes object the fleet stack's next ``up`` deletes."""
        return [
            f"the fleet stack {self.source} no longer declares {r.type.rsplit(':', 1)[-1]} {r.name}: its next "
            "pulumi up deletes it"
            for r in self.dropped
            if r.type.startswith("kubernetes:")
        ]


def urn_tail(urn: str) -> str:
    """``urn:pulumi:dev::aiperf-kueue::a$b::name`` → ``a$b::name`` (an URN without both ``::`` is its own tail)."""
    parts = urn.split("::", 2)
    return parts[2] if len(parts) == 3 else urn


def _stack_and_project(urn: str) -> tuple[str, str]:
    """``urn:pulumi:dev::aiperf-kueue::...`` → ``("dev", "aiperf-kueue")``."""
    stack, _, rest = urn.removeprefix("urn:pulumi:").partition("::")
    return stack, rest.partition("::")[0]


def live_resources(export: Any, source: str) -> list[LiveResource]:
    """The resources of a ``pulumi stack export`` (the whole file, or its ``deployment``); :class:`ConfigError` naming
    ``source`` and the key for anything else."""
    deployment = export.get("deployment", export) if isinstance(export, dict) else None
    resources = deployment.get("resources") if isinstance(deployment, dict) else None
    if not isinstance(resources, list):
        raise ConfigError(
            source,
            [
                Problem(
                    "",
                    "not a stack export: no deployment.resources list; write one with "
                    "`pulumi stack export --stack <live stack> --file FILE`",
                )
            ],
        )
    out: list[LiveResource] = []
    for index, resource in enumerate(resources):
        where = f"deployment.resources[{index}]"
        if not isinstance(resource, dict):
            raise ConfigError(source, [Problem(where, "not a resource (a mapping with urn and type)", in_config=False)])
        urn, kind, parent = resource.get("urn"), resource.get("type"), resource.get("parent")
        if not isinstance(urn, str) or not urn.startswith("urn:pulumi:") or urn.count("::") < 3:
            raise ConfigError(
                source, [Problem(f"{where}.urn", f"{cut(escape(str(urn)))} is not a Pulumi URN", in_config=False)]
            )
        if not isinstance(kind, str):
            raise ConfigError(source, [Problem(f"{where}.type", "missing or not a string", in_config=False)])
        if parent is not None and not isinstance(parent, str):
            raise ConfigError(source, [Problem(f"{where}.parent", "not a string", in_config=False)])
        out.append(LiveResource(urn, kind, parent or None))
    return out


def _stack_of(resources: Sequence[LiveResource], source: str) -> str:
    """The one stack of the export's URNs, of this project; :class:`ConfigError` otherwise."""
    stacks: set[str] = set()
    for r in resources:
        stack, project = _stack_and_project(r.urn)
        if project != PROJECT:
            raise ConfigError(
                source,
                [Problem("", f"a stack of project {cut(escape(project))}, not of {PROJECT}: {cut(escape(r.urn))}")],
            )
        stacks.add(stack)
    if len(stacks) != 1:
        shown = ", ".join(sorted(cut(escape(s), 40) for s in stacks)) or "none"
        raise ConfigError(source, [Problem("", f"the export must be of one stack; its URNs name: {shown}")])
    return stacks.pop()


def _below(resources: Sequence[LiveResource], roots: set[str], through: tuple[str, ...] | None = None) -> set[str]:
    """URNs of the resources whose tail is in ``roots`` or that have an ancestor (by ``parent``) whose tail is, and
    whose type starts with one of ``through`` (any type when ``None``)."""
    by_urn = {r.urn: r for r in resources}
    out: set[str] = set()
    for r in resources:
        if r.tail in roots:
            out.add(r.urn)
            continue
        seen = {r.urn}
        parent = by_urn.get(r.parent or "")
        # Bounded by the resources' number: a parent cycle in a hand-edited export ends the walk.
        while parent is not None and parent.urn not in seen:
            seen.add(parent.urn)
            if parent.tail in roots and (through is None or parent.type.startswith(through)):
                out.add(r.urn)
                break
            parent = by_urn.get(parent.parent or "")
    return out


def _tails(record: Mapping[str, Any]) -> list[str]:
    """A plan row's URN tail, then the tails of its ``aliases`` (a former type, name or whole URN), which its stack's
    engine matches a live resource by."""
    tail = urn_tail(str(record["urn"]))
    types, _, name = tail.rpartition("::")
    chain = types.rpartition("$")[0]  # the parents' types
    out = [tail]
    for alias in record.get("aliases") or ():
        if "urn" in alias:
            out.append(urn_tail(str(alias["urn"])))
        else:
            former = f"{alias.get('type') or record['type']}::{alias.get('name') or name}"
            out.append(f"{chain}${former}" if chain else former)
    return out


@dataclass(frozen=True)
class _Declared:
    """One resource of a plan, by the tails a live resource matches it by."""

    type: str
    tails: list[str]
    """Its URN tail, then its aliases' tails."""


def _declared(records: Iterable[Mapping[str, Any]]) -> list[_Declared]:
    """A plan's resources.json rows, providers left out."""
    return [
        _Declared(str(r["type"]), _tails(r))
        for r in records
        if not str(r["type"]).startswith(PROVIDER_PREFIX) and r["type"] != ROOT_STACK
    ]


def split_moves(
    resources: Sequence[LiveResource],
    platform: tuple[str, Sequence[Mapping[str, Any]]],
    fleet: tuple[str, Sequence[Mapping[str, Any]]],
    source: str,
) -> SplitMoves:
    """What ``pulumi state move`` must move from the live stack (``resources``, read from ``source``) to the platform
    stack; ``platform`` and ``fleet`` are each ``(stack file, resources.json rows)``. :class:`ConfigError` when the two
    stacks would both own a Kubernetes object, when the fleet stack is not the live one, or when nothing is to move."""
    (platform_file, platform_records), (fleet_file, fleet_records) = platform, fleet
    live = _stack_of(resources, source)
    platform_declared, fleet_declared = _declared(platform_records), _declared(fleet_records)
    fleet_own = {d.tails[0] for d in fleet_declared}
    both = sorted(
        d.tails[0] for d in platform_declared if d.tails[0] in fleet_own and not d.type.startswith(_NO_OBJECT_PREFIXES)
    )
    if both:
        names = ", ".join(t.rsplit("::", 1)[-1] for t in both[:5]) + (
            f" and {len(both) - 5} more" if len(both) > 5 else ""
        )
        raise ConfigError(
            fleet_file,
            [
                Problem(
                    "",
                    f"declares {names}, which {platform_file} declares too: the fleet stack installs nothing "
                    "(set kueue.install, jobset.install and operator.install to false) and the platform stack "
                    "leaves out queues, jobs, sweeps and priorityClasses",
                )
            ],
        )
    fleet_stack = _stack_name(fleet_records)
    if fleet_stack is not None and fleet_stack != live:
        raise ConfigError(
            fleet_file,
            [
                Problem(
                    "",
                    f"is stack {cut(escape(fleet_stack), 40)}, but the export is of stack {cut(escape(live), 40)}: "
                    "the fleet stack is the live stack, its file edited to install nothing",
                )
            ],
        )
    dest = _stack_name(platform_records) or ""
    if dest == live:
        raise ConfigError(
            platform_file,
            [Problem("", f"is the live stack {cut(escape(live), 40)}: give the new platform stack a name of its own")],
        )
    movable = [r for r in resources if not r.type.startswith(PROVIDER_PREFIX) and r.type != ROOT_STACK]
    platform_tails = {t for d in platform_declared for t in d.tails}
    fleet_tails = {t for d in fleet_declared for t in d.tails}
    moved = _below(movable, platform_tails)
    moves = tuple(r.urn for r in movable if r.urn in moved)
    if not moves:
        raise ConfigError(
            source,
            [
                Problem(
                    "",
                    f"stack {cut(escape(live), 40)} holds nothing {platform_file} declares: nothing to move "
                    "(already split, or not the stack that installed Kueue and JobSet)",
                )
            ],
        )
    # A fleet resource's children are in its plan, except what a chart renders.
    kept = _below([r for r in movable if r.urn not in moved], fleet_tails, through=_RENDERS)
    live_tails = {r.tail for r in movable}
    return SplitMoves(
        source=live,
        dest=dest,
        moves=moves,
        recreated=tuple(sorted(r.name for r in movable if r.urn in moved and r.tail in fleet_tails)),
        dropped=tuple(r for r in movable if r.urn not in moved and r.urn not in kept),
        created=tuple(
            sorted(d.tails[0].rsplit("::", 1)[-1] for d in platform_declared if live_tails.isdisjoint(d.tails))
        ),
    )


def _stack_name(records: Sequence[Mapping[str, Any]]) -> str | None:
    """The stack a plan's URNs name (``urn:pulumi:<stack>::``), if it has any resource."""
    for r in records:
        return _stack_and_project(str(r["urn"]))[0]
    return None
