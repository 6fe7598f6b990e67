"""The Cohort tree of a stack: who is whose parent, checked before any quota is computed.

Upstream: kueue v0.19.2 apis/kueue/v1beta2/cohort_types.go, pkg/webhooks/cohort_webhook.go,
pkg/cache/hierarchy (cycles).

A stack declares either one flat ``queues.cohort`` (every ClusterQueue joins it), or a tree in
``queues.cohorts`` (each Cohort names its ``parentName``, each ClusterQueue its ``cohortName``), or
both (``queues.cohort`` is then the default for ClusterQueues that name none). Kueue accepts a parent
that does not exist (it acts as an empty Cohort) and disables a whole tree with a cycle; both are
errors here, since neither is ever what a platform team meant.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiperf_kueue.common.errors import key_path
from aiperf_kueue.config import StackConfig
from aiperf_kueue.queues.queue_checks import Checks


@dataclass(frozen=True)
class CohortTree:
    """The checked tree: every Cohort's and ClusterQueue's parent, and every Cohort's name."""

    parents: dict[str, str]
    cohorts: tuple[str, ...]


def check_cohort_tree(checks: Checks, config: StackConfig) -> CohortTree:
    """Check ``queues.cohorts`` and every ``cohortName``; the parents of the valid part of the tree."""
    queues = config.queues
    target = config.kueue.target()
    declared = [c.name for c in queues.cohorts]
    if queues.cohorts and target.api != "v1beta2":
        checks.error(
            key_path("queues", "cohorts"),
            f"a Cohort tree needs Kueue's v1beta2 Cohort API (parentName, resourceGroups, fairSharing), and this "
            f"stack writes Kueue {target.version_text}'s {target.api} objects (Cohort {target.cohort.split('/')[1]}); "
            "fix: kueue.version 0.15.0 or newer with kueue.apiVersion v1beta2 (auto picks it from 0.16.0), or "
            "one flat queues.cohort",
        )
    cq_names = {cq.name for cq in queues.cluster_queues}
    first: dict[str, int] = {}
    for j, cohort in enumerate(queues.cohorts):
        here = ("queues", "cohorts", j)
        if cohort.name in first:
            checks.error(
                key_path(*here, "name"),
                f"duplicate Cohort name {cohort.name!r} (also at {key_path('queues', 'cohorts', first[cohort.name])})",
            )
            continue
        first[cohort.name] = j
        if cohort.name in cq_names:
            # Kueue would accept it (different kinds), but plan's tables and the tree key both by name.
            checks.error(
                key_path(*here, "name"),
                f"Cohort {cohort.name!r} has the name of a ClusterQueue of this stack; give one of them another name",
            )
        if cohort.parent_name is None:
            for alias, given in (("borrowingLimit", cohort.borrowing_limit), ("lendingLimit", cohort.lending_limit)):
                if given is not None:
                    checks.error(
                        key_path(*here, alias),
                        f"{alias} needs parentName: Kueue rejects it on a root Cohort, which has no parent to "
                        "borrow from or lend to",
                    )
        elif cohort.parent_name not in declared and cohort.parent_name != queues.cohort:
            checks.error(
                key_path(*here, "parentName"),
                f"unknown Cohort {cohort.parent_name!r}; Cohorts: {', '.join(declared)} (Kueue would treat it "
                "as an empty Cohort and cut this subtree off the rest of the tree)",
            )
    parents: dict[str, str] = {}
    for cohort in queues.cohorts:
        if cohort.parent_name is not None and first.get(cohort.name) is not None:
            parents.setdefault(cohort.name, cohort.parent_name)
    for j, cohort in enumerate(queues.cohorts):
        if first.get(cohort.name) != j or cohort.name not in parents:
            continue
        walk, name = [cohort.name], cohort.name
        while name in parents:
            name = parents[name]
            if name == cohort.name:
                checks.error(
                    key_path("queues", "cohorts", j, "parentName"),
                    f"Cohort {cohort.name!r} is its own ancestor ({' -> '.join([*walk, name])}); Kueue stops "
                    "admitting in every ClusterQueue of a tree with a cycle",
                )
                break
            if name in walk:  # a cycle further up, reported at its own Cohort
                break
            walk.append(name)
    known = set(declared) | ({queues.cohort} if queues.cohort else set())
    for i, cq in enumerate(queues.cluster_queues):
        if cq.cohort_name is not None and cq.cohort_name not in known:
            names = ", ".join(sorted(known)) or "none"
            checks.error(
                key_path("queues", "clusterQueues", i, "cohortName"),
                f"unknown Cohort {cq.cohort_name!r}; Cohorts: {names} (declare it in queues.cohorts)",
            )
        joins = queues.cohort_of(cq)
        if joins is not None:
            parents[cq.name] = joins
    cohorts = tuple(dict.fromkeys([*declared, *([queues.cohort] if queues.cohort else [])]))
    return CohortTree(parents, cohorts)
