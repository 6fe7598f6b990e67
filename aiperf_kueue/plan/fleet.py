"""A MultiKueue fleet planned offline: what a manager's and a worker's config take from the other stacks,
and which workers could run each job, on which flavor.

Kueue's MultiKueue (Kueue 0.19.2, ``site/content/en/docs/concepts/multikueue.md``) wants the manager's
quota to equal the workers' total, and every worker to mirror the manager's namespaces and LocalQueues.
So, before the config model sees a stack's values (:func:`fleet_values`):

- a **manager**'s ``inventory`` is its workers' pools summed by name (one pool name is one ResourceFlavor
  across the fleet, so pools of one name must have one shape); its queues' ``share`` then hands out the
  fleet, and its own ClusterQueues carry the MultiKueue admission check;
- a **worker**'s ``queues`` and ``priorityClasses`` are its manager's (its ``share`` of each of the
  worker's own pools; a share map keeps the pools the worker has), so every namespace, LocalQueue and
  ClusterQueue a dispatched job needs exists there, with quotas from the worker's own inventory.

Then :func:`place_jobs` sizes every manager job against each worker's own queues, as the worker's Kueue
will: a job that no worker could ever hold is a config error, though the fleet's sum might hold it; and
:func:`dispatched_job_warning` says what a worker receives of an AIPerfJob: its JobSet only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from aiperf_kueue.common.display import listed, quoted
from aiperf_kueue.common.errors import ConfigError, Problem, key_path
from aiperf_kueue.config import StackConfig
from aiperf_kueue.config.expansion import JobEntry
from aiperf_kueue.config.multikueue import MultiKueue
from aiperf_kueue.installs.install_checks import install_problems
from aiperf_kueue.queues.planner import plan_queues
from aiperf_kueue.queues.queue_plan import QueuePlan
from aiperf_kueue.stackfile.loader import parse_config, read_stack, stack_name_of
from aiperf_kueue.workload.admission import check_jobs
from aiperf_kueue.workload.sizing import Sizing

#: The keys a worker takes from its manager.
FROM_MANAGER = ("queues", "priorityClasses")
#: Keys of a ClusterQueue that are amounts of one cluster, not a share of each worker's.
_AMOUNTS = ("nominalQuota", "borrowingLimit", "lendingLimit")


@dataclass(frozen=True)
class FleetWorker:
    """One worker as the manager's plan sees it: its stack, its config (with the manager's queues), its quotas."""

    name: str
    """The MultiKueueCluster's name."""
    stack: str
    """The worker's stack name."""
    source: str
    """The worker's stack file, as messages name it."""
    config: StackConfig
    queues: QueuePlan


@dataclass(frozen=True)
class Fleet:
    """What :func:`fleet_values` learnt: this stack's role, and a manager's workers (planned)."""

    role: str
    """``manager`` or ``worker``."""
    manager: str
    """The manager's stack name (this stack's, on a manager)."""
    workers: tuple[FleetWorker, ...] = ()
    kubeconfig: str | None = None
    """On a worker, the kubeconfig it exports for its manager: ``minted`` (``multikueue.server``: the worker
    mints its token), ``config`` (``multikueue.kubeconfig``), or None (none: the manager sets it)."""

    def table(self, placements: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
        """The ``fleet`` output: role, manager, per worker its stack, quotas and pools, and per job its workers."""
        out: dict[str, Any] = {"role": self.role, "manager": self.manager}
        if self.role == "worker":
            out["kubeconfig"] = self.kubeconfig
        if self.role == "manager":
            out["workers"] = {
                w.name: {"stack": w.stack, "quotas": w.queues.quota_table(), "pools": w.queues.pool_table()}
                for w in self.workers
            }
            out["jobs"] = dict(placements or {})
        return out


def stacks_dir(source: str, project_dir: Path | None) -> Path:
    """The directory of this stack's file, where its fleet's other stack files are."""
    path = Path(source)
    if not path.is_absolute() and project_dir is not None and (project_dir / path).is_file():
        path = project_dir / path
    return path.parent


def _role(values: Mapping[str, Any]) -> MultiKueue | None:
    """The stack's ``multikueue`` key, if it is a valid one (else the config model reports it)."""
    raw = values.get("multikueue")
    if raw is None:
        return None
    try:
        return MultiKueue.model_validate(raw)
    except ValidationError:
        # A worker whose other keys are wrong still takes its manager's queues, so its one problem is the
        # line about those keys, not also "queues: required" (the config model reports the rest).
        if isinstance(raw, Mapping) and raw.get("role") == "worker" and isinstance(raw.get("manager"), str):
            try:
                return MultiKueue.model_validate({"role": "worker", "manager": raw["manager"]})
            except ValidationError:
                return None
        return None


def fleet_values(
    values: Mapping[str, Any], source: str, project_dir: Path | None
) -> tuple[Mapping[str, Any], Fleet | None]:
    """``values`` with what a fleet member takes from the other stacks (module doc), and the fleet; unchanged
    and ``None`` for a stack of its own. :class:`ConfigError` naming the key to fix."""
    role = _role(values)
    if role is None:
        return values, None
    here = stacks_dir(source, project_dir)
    if role.role == "worker":
        assert role.manager is not None  # the model requires it for a worker
        given = [key for key in (*FROM_MANAGER, "jobs", "sweeps") if key in values]
        if given:
            raise ConfigError(
                source,
                [
                    Problem(
                        key,
                        f"is set on a MultiKueue worker; a worker's queues and priority classes are its manager's "
                        f"(stack {quoted(role.manager)}) and jobs are submitted on the manager: remove {key}",
                    )
                    for key in given
                ],
            )
        manager = _read(here, role.manager, "multikueue.manager", source)
        exported = "minted" if role.server is not None else "config" if role.kubeconfig is not None else None
        return {**values, **worker_keys(manager.values, values)}, Fleet("worker", role.manager, kubeconfig=exported)
    problems = (
        [
            Problem(
                "inventory",
                "is set on a MultiKueue manager, whose inventory is its workers' (plan sums their pools by name): "
                "remove inventory",
            )
        ]
        if "inventory" in values
        else []
    )
    problems += _amount_problems(values)
    if problems:
        raise ConfigError(source, problems)
    name = stack_name_of(Path(source))
    workers: list[tuple[int, str, str, Mapping[str, Any]]] = []
    for i, worker in enumerate(role.workers):
        where = key_path("multikueue", "workers", i, "stack")
        stack = _read(here, worker.stack, where, source)
        theirs = _role(stack.values)
        if theirs is None or theirs.role != "worker" or theirs.manager != name:
            raise ConfigError(
                source,
                [
                    Problem(
                        where,
                        f"stack {quoted(worker.stack)} is not a worker of this manager: its aiperf-kueue:multikueue "
                        f"must be {{role: worker, manager: {name}}}; set it there",
                    )
                ],
            )
        workers.append((i, worker.name, worker.stack, stack.values))
    inventory = fleet_inventory([(key_path("multikueue", "workers", i, "stack"), v) for i, _, _, v in workers], source)
    planned = tuple(
        _plan_worker(n, s, str(here / f"Pulumi.{s}.yaml"), {**v, **worker_keys(values, v)}, project_dir)
        for _, n, s, v in workers
    )
    return {**values, "inventory": inventory}, Fleet("manager", name, planned)


def _read(here: Path, stack: str, where: str, source: str) -> Any:
    path = here / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        raise ConfigError(
            source,
            [Problem(where, f"names stack {quoted(stack)}, but there is no {path}: create that stack or fix the name")],
        )
    try:
        return read_stack(path, str(path))
    except ConfigError as exc:
        first = exc.lines()[0] if exc.problems else str(path)
        raise ConfigError(source, [Problem(where, f"names stack {quoted(stack)}, which is invalid: {first}")]) from None


def _amount_problems(values: Mapping[str, Any]) -> list[Problem]:
    queues = values.get("queues")
    cqs = queues.get("clusterQueues") if isinstance(queues, Mapping) else None
    if not isinstance(cqs, list):
        return []
    return [
        Problem(
            key_path("queues", "clusterQueues", i, key),
            f"is an amount of one cluster; on a MultiKueue manager a ClusterQueue takes share (a percent of each "
            f"worker's pools, and so of the fleet on the manager): replace {key} with share",
        )
        for i, cq in enumerate(cqs)
        if isinstance(cq, Mapping)
        for key in _AMOUNTS
        if key in cq
    ]


def worker_keys(manager: Mapping[str, Any], worker: Mapping[str, Any] | None) -> dict[str, Any]:
    """The keys a worker takes from its manager's values: its ``queues`` (a share map keeps only the
    pools the worker has, when ``worker`` gives them) and its ``priorityClasses``."""
    out: dict[str, Any] = {k: manager[k] for k in FROM_MANAGER if k in manager}
    inventory = (worker or {}).get("inventory")
    pools = inventory.get("pools") if isinstance(inventory, Mapping) else None
    names = {p.get("name") for p in pools if isinstance(p, Mapping)} if isinstance(pools, list) else None
    queues = out.get("queues")
    if names is not None and isinstance(queues, Mapping) and isinstance(queues.get("clusterQueues"), list):
        cqs = [
            {**cq, "share": {p: s for p, s in cq["share"].items() if p in names}}
            if isinstance(cq, Mapping) and isinstance(cq.get("share"), Mapping)
            else cq
            for cq in queues["clusterQueues"]
        ]
        out["queues"] = {**queues, "clusterQueues": cqs}
    return out


def fleet_inventory(workers: Sequence[tuple[str, Mapping[str, Any]]], source: str) -> dict[str, Any]:
    """The workers' inventories as one: pools summed by name (``nodes`` added), in first-seen order.

    A pool name is one ResourceFlavor on the manager, so each name must have one shape (everything but
    ``nodes``) and every worker one ``headroom``; anything else is a :class:`ConfigError` at ``workers[i]``."""
    pools: dict[str, dict[str, Any]] = {}
    first: dict[str, str] = {}
    headroom: tuple[str, Any] | None = None
    problems: list[Problem] = []
    for where, values in workers:
        inventory = values.get("inventory")
        if not isinstance(inventory, Mapping) or not isinstance(inventory.get("pools"), list):
            problems.append(
                Problem(where, "names a worker stack without aiperf-kueue:inventory.pools: give it its pools")
            )
            continue
        room = inventory.get("headroom", 0)
        if headroom is None:
            headroom = (where, room)
        elif room != headroom[1]:
            problems.append(
                Problem(
                    where,
                    f"names a worker with inventory.headroom {room}, but {headroom[0]} has {headroom[1]}: the "
                    "manager's flavors hold both, so give every worker one headroom",
                )
            )
        for pool in inventory["pools"]:
            if not isinstance(pool, Mapping) or not isinstance(pool.get("name"), str):
                continue  # the worker's own plan reports it
            name = pool["name"]
            if name not in pools:
                pools[name], first[name] = dict(pool), where
                continue
            shape = {k: v for k, v in pool.items() if k != "nodes"}
            known = {k: v for k, v in pools[name].items() if k != "nodes"}
            if shape != known:
                differs = sorted(k for k in shape.keys() | known.keys() if shape.get(k) != known.get(k))
                problems.append(
                    Problem(
                        where,
                        f"names a worker whose pool {quoted(name)} differs from the one of {first[name]} in "
                        f"{', '.join(differs)}: one pool name is one ResourceFlavor in the fleet; give them one shape "
                        "or different names",
                    )
                )
                continue
            total, more = pools[name].get("nodes"), pool.get("nodes")
            if isinstance(total, int) and isinstance(more, int) and not isinstance(more, bool):
                pools[name]["nodes"] = total + more  # else the worker's own plan names the bad count
    if problems:
        raise ConfigError(source, problems)
    out: dict[str, Any] = {"pools": list(pools.values())}
    if headroom is not None and headroom[1] != 0:
        out["headroom"] = headroom[1]
    return out


def _plan_worker(
    name: str, stack: str, source: str, values: Mapping[str, Any], project_dir: Path | None
) -> FleetWorker:
    """A worker's config and queues, planned as its own ``plan`` would plan them."""
    known = {k: v for k, v in values.items() if k not in ("jobs", "sweeps")}
    try:
        config = parse_config(known, source)
        queues = plan_queues(
            config, source, install_problems=install_problems(config, config.kueue.target(), project_dir or Path.cwd())
        )
    except ConfigError as exc:
        raise ConfigError(exc.source, exc.problems) from None
    return FleetWorker(name, stack, source, config, queues)


def place_jobs(
    entries: Sequence[JobEntry],
    fleet: Fleet,
    sizing: Sizing,
    operator_env: Mapping[str, str] | None,
    source: str,
) -> dict[str, dict[str, Any]]:
    """Per job (``<namespace>/<name>``), per worker: the flavors it would be admitted on there, or why never.
    :class:`ConfigError` for each job no worker could ever hold, with every worker's reason."""
    placements: dict[str, dict[str, Any]] = {}
    reasons: dict[str, list[str]] = {}
    for worker in fleet.workers:
        report = check_jobs(entries, worker.config, worker.queues, sizing, operator_env)
        by_origin = {(*a.entry.origin, a.entry.name): a for a in report.admissions}
        for entry in entries:
            key = f"{entry.namespace}/{entry.name}"
            admission = by_origin.get((*entry.origin, entry.name))
            row = placements.setdefault(key, {})
            if admission is not None and admission.assignment.error is None and admission.assignment.fits:
                row[worker.name] = {"flavor": list(admission.assignment.flavors)}
            else:
                why = admission.assignment.error if admission is not None else None
                why = why or next(
                    (p.message for p in report.problems if p.path.startswith(key_path(*entry.origin))),
                    "it cannot be admitted there",
                )
                if why.startswith("fix: ") and "; " in why:
                    why = why.split("; ", 1)[1]  # the worker's own fix (its quota) is not the fleet's
                row[worker.name] = {"never": why}
                reasons.setdefault(key, []).append(f"{worker.name} ({worker.stack}): {why}")
    problems = [
        Problem(
            key_path(*entry.origin),
            f"{entry.name}: no worker of the fleet could ever hold it ({'; '.join(reasons[key])}); fix: make it "
            "smaller, or give a worker a pool it fits in",
        )
        for entry in entries
        if (key := f"{entry.namespace}/{entry.name}") in placements
        and not any("flavor" in v for v in placements[key].values())
    ]
    if problems:
        raise ConfigError(source, problems)
    return placements


def dispatched_job_warning(entries: Sequence[JobEntry]) -> str | None:
    """Why the manager's AIPerfJobs cannot run through MultiKueue with AIPerf 0.13.0; None without jobs.

    Both seen on the fleet's manager by ``make e2e`` (tests/e2e/test_multikueue_e2e.py):

    - the operator's preflight ("Per-Node Schedulability", ``aiperf/operator/preflight/_resources.py``) reads the
      manager's own nodes, which no inventory describes (a manager's is its workers'), and fails the AIPerfJob
      unless one of them fits its largest pod (``spec.resourceMode: none`` skips the check);
    - beside the JobSet the operator creates a ConfigMap ``<jobset>-config`` that every pod mounts
      (``aiperf/kubernetes/jobset_helpers.py``); Kueue 0.19.2's MultiKueue copies the
      JobSet alone to the worker, so a real kubelet there never finds the ConfigMap."""
    if not entries:
        return None
    names = listed([entry.name for entry in entries])
    return (
        f"jobs ({names}): AIPerf 0.13.0 cannot run them through MultiKueue: its operator's preflight checks the "
        "manager's own nodes and fails an AIPerfJob unless one of them fits its largest pod (Per-Node "
        "Schedulability), and MultiKueue dispatches only the JobSet, without the ConfigMap <jobset>-config its "
        "pods mount, so on a real worker they wait in ContainerCreating; submit what must run across the fleet as "
        "plain JobSets, or run the AIPerfJobs from a stack of the cluster that runs them (not a MultiKueue worker: "
        "its stack takes no jobs)"
    )
