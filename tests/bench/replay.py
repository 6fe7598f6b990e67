"""The replay: a recorded program's resources registered again, with no logic around them.

Same types, names, inputs, parents, dependencies and options as the program registered
(from its ``resources.json``), in an order where parents and dependencies come first. What
this costs under the offline engine is what the SDK alone costs for the program's resource
graph; the program's time beyond it is its own work.
"""

from __future__ import annotations

from typing import Any

import pulumi

#: The records to replay, set by :mod:`tests.bench.child` before it runs ``replay_program.py``.
RECORDS: list[dict[str, Any]] = []

COMPONENT_PREFIX = "aiperf-kueue:index:"
REMOTE_COMPONENTS = ("kubernetes:helm.sh/v4:Chart",)


class ReplayedResource(pulumi.CustomResource):
    """A custom resource as the program declares one: through a subclass, as ``KubeObject`` and the typed
    Kubernetes classes are (the SDK records a stack trace only for subclasses)."""

    def __init__(self, t: str, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions) -> None:
        super().__init__(t, name, props, opts)


class ReplayedComponent(pulumi.ComponentResource):
    """A component, local or remote, declared through a subclass as the program's are."""

    def __init__(
        self, t: str, name: str, props: dict[str, Any] | None, opts: pulumi.ResourceOptions, remote: bool = False
    ) -> None:
        super().__init__(t, name, props, opts, remote=remote)


def order(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``records`` with every parent and dependency before the resources that name it."""
    by_urn = {r["urn"]: r for r in records}
    done: set[str] = set()
    out: list[dict[str, Any]] = []
    for record in records:
        stack = [(record, False)]
        while stack:
            current, expanded = stack.pop()
            urn = current["urn"]
            if urn in done:
                continue
            if expanded:
                done.add(urn)
                out.append(current)
                continue
            stack.append((current, True))
            for before in [current["parent"], *current["dependsOn"]]:
                if before in by_urn and before not in done:
                    stack.append((by_urn[before], False))
    return out


def register(records: list[dict[str, Any]]) -> int:
    """Register every record; the number registered."""
    made: dict[str, pulumi.Resource] = {}
    components: list[ReplayedComponent] = []
    for r in order(records):
        opts = pulumi.ResourceOptions(
            parent=made.get(r["parent"] or ""),
            depends_on=[made[d] for d in r["dependsOn"] if d in made],
            protect=r["protect"],
            retain_on_delete=r["retainOnDelete"],
            delete_before_replace=r["deleteBeforeReplace"],
            replace_on_changes=r["replaceOnChanges"] or None,
        )
        if r["type"].startswith(COMPONENT_PREFIX):
            component = ReplayedComponent(r["type"], r["name"], None, opts)
            components.append(component)
            made[r["urn"]] = component
        elif r["type"] in REMOTE_COMPONENTS:
            made[r["urn"]] = ReplayedComponent(r["type"], r["name"], dict(r["inputs"]), opts, remote=True)
        else:
            made[r["urn"]] = ReplayedResource(r["type"], r["name"], dict(r["inputs"]), opts)
    for component in components:
        component.register_outputs({})
    return len(made)
