"""The real Pulumi engine: the CLI and the Kubernetes provider built from source, the program run as users run it.

The CLI is ``pulumi`` v3.274.0 (``e2e/tools/pulumi``) and the provider ``pulumi-resource-kubernetes`` 4.25.0
(``e2e/tools/provider``), installed into a private ``PULUMI_HOME`` with ``pulumi plugin install --file``. The state
backend is a local directory and secrets use the passphrase provider. Nothing is downloaded: the update check and
automatic plugin acquisition are off.

The program runs through the Automation API as an inline program that executes the repository's ``__main__.py``: the
CLI's ``pulumi up``/``preview``/``destroy`` drive the engine, and the engine talks to the program over gRPC (the
Python language-host binary is not served by the Go module proxy; the inline form needs none). The project directory
handed to the CLI holds ``Pulumi.yaml`` and ``stacks/``, as the repository does.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import runpy
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pulumi import automation as auto

from tests.e2e.charts import ChartControllers
from tests.e2e.cluster import LocalCluster, module_dir
from tests.e2e.living import controller_namespaces, pin_controller_namespaces, sync_fleet
from tests.e2e.nodes import create_nodes, declared_pools, node_objects
from tests.e2e.stackrun import Plan, plan_stack

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "out" / "e2e"
PROJECT = "aiperf-kueue"
PASSPHRASE = "aiperf-kueue-e2e"
#: The one context of a local cluster's kubeconfig (tests/e2e/cluster.py).
CONTEXT = "e2e"


def program_in(work: Path) -> Callable[[], None]:
    """The repository's ``__main__.py``, run from the project directory ``work`` as the language host runs it
    (an inline program gets no root directory from the engine: the program finds ``Pulumi.yaml`` in its
    working directory)."""

    def program() -> None:
        os.chdir(work)
        runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")

    return program


class Engine:
    """A private Pulumi home and state backend with the built CLI and provider."""

    def __init__(
        self,
        binaries: Mapping[str, str],
        workdir: Path,
        kubeconfig: Path,
        provider_version: str,
        *,
        backend_query: str = "",
        env: Mapping[str, str] | None = None,
        checkpoints: bool = True,
    ) -> None:
        """``backend_query``: a query for the file backend's URL (gocloud's ``fileblob`` options, such as
        ``metadata=skip``); ``env``: more environment for the CLI and the plugins it starts (``GOGC``, ...). Both for
        ``make bench-engine``'s settings. ``checkpoints=False``: every command of this engine runs with
        ``PULUMI_SKIP_CHECKPOINTS=true`` (the note above :func:`skip_checkpoints` says where, and why)."""
        self.pulumi = Path(binaries["pulumi"])
        self.provider = Path(binaries["pulumi-resource-kubernetes"])
        self.dir = workdir
        self.home = workdir / "pulumi-home"
        self.state = workdir / "state"
        self.kubeconfig = kubeconfig
        # Every run starts from an empty state: the cluster is new too.
        shutil.rmtree(workdir, ignore_errors=True)
        self.home.mkdir(parents=True, exist_ok=True)
        self.state.mkdir(parents=True, exist_ok=True)
        self.env = {
            "PULUMI_HOME": str(self.home),
            "PULUMI_BACKEND_URL": f"file://{self.state}" + (f"?{backend_query}" if backend_query else ""),
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK": "false",
            "KUBECONFIG": str(kubeconfig),
            # The dynamic provider (the readiness gate) runs with this interpreter, which has the project installed.
            "PULUMI_PYTHON_CMD": sys.executable,
            # The CLI's directory, and the dynamic provider's launcher's (the same, unless the bench's --pulumi-cli
            # measures another CLI).
            "PATH": ":".join(
                dict.fromkeys(
                    [
                        str(self.pulumi.parent),
                        str(Path(binaries.get("pulumi-resource-pulumi-python", self.pulumi)).parent),
                        str(Path(sys.executable).parent),
                        os.environ.get("PATH", ""),
                    ]
                )
            ),
            **({} if checkpoints else {"PULUMI_SKIP_CHECKPOINTS": "true"}),
            **(env or {}),
        }
        self.cli("plugin", "install", "resource", "kubernetes", provider_version, "--file", str(self.provider))

    def cli(self, *args: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run the built ``pulumi`` with this engine's environment."""
        result = subprocess.run(
            [str(self.pulumi), *args, "--non-interactive"],
            capture_output=True,
            text=True,
            env={**os.environ, **self.env},
            cwd=cwd or self.dir,
            timeout=900,
        )
        if check and result.returncode != 0:
            raise RuntimeError(f"pulumi {' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
        return result

    def project_dir(self, stack: str, config: Mapping[str, Any]) -> Path:
        """A project directory with the repository's ``Pulumi.yaml`` and ``stacks/Pulumi.<stack>.yaml`` = ``config``."""
        work = self.dir / "projects" / stack
        (work / "stacks").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / "Pulumi.yaml", work / "Pulumi.yaml")
        # Pulumi.yaml names ./venv (runtime options): the CLI's own commands (destroy, the dynamic provider's
        # launcher) look for it in the project directory, where `pulumi install` puts it for users.
        if not (work / "venv").exists():
            (work / "venv").symlink_to(ROOT / "venv")
        stack_file = work / "stacks" / f"Pulumi.{stack}.yaml"
        existing = yaml.safe_load(stack_file.read_text()) if stack_file.exists() else {}
        document = {**(existing or {}), "config": dict(config)}
        stack_file.write_text(yaml.safe_dump(document, sort_keys=False))
        return work

    def stack(self, stack: str, work: Path) -> auto.Stack:
        """Create or select ``stack`` in ``work`` (the passphrase provider writes its salt into the stack file)."""
        return self._stack(stack, PROJECT, program_in(work), work)

    def small_stack(self, project: str, program: Callable[[], None]) -> auto.Stack:
        """A stack ``move`` of a project of its own (no default-provider setting) running ``program``: a small
        program of the shape an earlier version of this one registered, for day-two moves."""
        work = self.dir / "project"
        work.mkdir(parents=True)
        (work / "Pulumi.yaml").write_text(f"name: {project}\nruntime: python\n")
        return self._stack("move", project, program, work)

    def _stack(self, stack: str, project: str, program: Callable[[], None], work: Path) -> auto.Stack:
        return auto.create_or_select_stack(
            stack_name=stack,
            project_name=project,
            program=program,
            opts=auto.LocalWorkspaceOptions(
                work_dir=str(work),
                pulumi_home=str(self.home),
                env_vars=self.env,
                secrets_provider="passphrase",
                pulumi_command=auto.PulumiCommand(root=str(self.pulumi.parent.parent)),
            ),
        )

    def export(self, stack: auto.Stack) -> dict[str, Any]:
        """``pulumi stack export`` (secrets stay encrypted)."""
        deployment: dict[str, Any] = json.loads(json.dumps(stack.export_stack().deployment))
        return deployment


def step_recorder(steps: list[tuple[str, str]], *, providers: bool = True) -> Callable[[auto.EngineEvent], None]:
    """An ``on_event`` callback that appends each step's ``(op, resource name)`` to ``steps``, in the engine's order.
    ``providers=False`` leaves out the providers' own steps (the dynamic providers' default one is updated on every
    ``up``)."""

    def record(event: auto.EngineEvent) -> None:
        if event.resource_pre_event:
            meta = event.resource_pre_event.metadata
            if providers or not meta.type.startswith("pulumi:providers:"):
                steps.append((str(meta.op.value), meta.urn.rsplit("::", 1)[1]))

    return record


def cluster_config(cluster: LocalCluster) -> dict[str, str]:
    """``aiperf-kueue:cluster`` for the local cluster: its admin kubeconfig and its one context."""
    return {"kubeconfig": str(cluster.kubeconfig), "context": CONTEXT}


def e2e_config(stack_file: Path, kueue_module: str, jobset_module: str) -> dict[str, Any]:
    """The stack's config with the e2e's changes: local chart paths (same versions), no operator chart (no
    package ships it; the admission e2e runs the released operator as a process instead)."""
    config: dict[str, Any] = copy.deepcopy((yaml.safe_load(stack_file.read_text()) or {})["config"])
    config.pop(f"{PROJECT}:cluster", None)  # engine_run names the local cluster
    kueue = dict(config.get(f"{PROJECT}:kueue") or {})
    kueue["chart"] = str(module_dir(kueue_module) / "charts" / "kueue")
    config[f"{PROJECT}:kueue"] = kueue
    jobset = dict(config.get(f"{PROJECT}:jobset") or {})
    jobset["chart"] = str(module_dir(jobset_module) / "charts" / "jobset")
    config[f"{PROJECT}:jobset"] = jobset
    operator = dict(config.get(f"{PROJECT}:operator") or {})
    operator["install"] = False
    config[f"{PROJECT}:operator"] = operator
    return config


def installed_elsewhere(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with Kueue and JobSet installed by another stack (``install: false``, no chart): the fleet half of
    the two-stack layout (docs/scale.md)."""
    out = dict(config)
    for key in ("kueue", "jobset"):
        section = {k: v for k, v in (out.get(f"{PROJECT}:{key}") or {}).items() if k != "chart"}
        out[f"{PROJECT}:{key}"] = {**section, "install": False}
    return out


def installs_only(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with ``queues``, ``jobs``, ``sweeps`` and ``priorityClasses`` left out: the platform half of the
    two-stack layout. The operator's default priority class goes too: the classes are the fleet's."""
    left_out = {f"{PROJECT}:{k}" for k in ("queues", "jobs", "sweeps", "priorityClasses")}
    out = {k: v for k, v in config.items() if k not in left_out}
    operator = out.get(f"{PROJECT}:operator") or {}
    out[f"{PROJECT}:operator"] = {k: v for k, v in operator.items() if k != "defaultPriorityClass"}
    return out


#: Engine step ops, as the offline diff names them.
OPS = {
    "create": "create",
    "update": "update",
    "delete": "delete",
    "replace": "replace",
    "create-replacement": "replace",
    "delete-replaced": "replace",
}


@dataclass
class EngineRun:
    """One stack under the real engine on its own cluster, and what the engine said."""

    name: str
    cluster: LocalCluster
    engine: Engine
    work: Path
    stack: auto.Stack
    controllers: ChartControllers
    plan: Plan
    config: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    on_event: Callable[[dict[str, Any]], None] | None = None
    """Called with each recorded event, as it arrives (from the Automation API's event thread)."""

    def preview(self, **kwargs: Any) -> auto.PreviewResult:
        """``pulumi preview`` with engine events recorded."""
        self.events = []
        return self.stack.preview(on_event=self._event, color="never", **kwargs)

    def up(self, **kwargs: Any) -> auto.UpResult:
        """``pulumi up`` with engine events recorded; a failed one raises with what the chart watcher saw last
        (the end of a CI log is often all there is to read)."""
        self.events = []
        try:
            return self.stack.up(on_event=self._event, color="never", **kwargs)
        except auto.CommandError as exc:
            exc.args = (f"{exc}\n--- the harness at the failure ---\n{self.controllers.describe()}",)
            raise

    def _event(self, event: auto.EngineEvent) -> None:
        record = None
        if event.resource_pre_event:
            meta = event.resource_pre_event.metadata
            record = {"op": str(meta.op.value), "urn": meta.urn, "type": meta.type, "at": time.monotonic()}
        if event.res_outputs_event:
            meta = event.res_outputs_event.metadata
            record = {"op": "outputs", "urn": meta.urn, "type": meta.type, "at": time.monotonic()}
        if record is not None:
            self.events.append(record)
            if self.on_event is not None:
                self.on_event(record)

    def set_config(self, config: dict[str, Any]) -> Path:
        """Rewrite the stack file's config (the passphrase salt kept), as a user editing it would."""
        self.config = config
        self.engine.project_dir(self.name, config)
        return self.stack_file

    @property
    def stack_file(self) -> Path:
        """``stacks/Pulumi.<stack>.yaml`` in the project directory the CLI runs in."""
        return self.work / "stacks" / f"Pulumi.{self.name}.yaml"

    def changes(self) -> dict[str, list[str]]:
        """``{action: sorted URNs}`` the last preview or up announced, in the offline diff's terms."""
        out: dict[str, set[str]] = {}
        for e in self.events:
            # Default providers are the engine's own; the change summary does not count them either.
            if e["op"] in OPS and not e["type"].startswith("pulumi:providers:"):
                out.setdefault(OPS[e["op"]], set()).add(e["urn"])
        return {k: sorted(v) for k, v in sorted(out.items())}

    def state(self) -> list[dict[str, Any]]:
        """The resources of ``pulumi stack export``."""
        return list(self.engine.export(self.stack).get("resources", []))

    @property
    def state_file(self) -> Path:
        """The stack's state file in the local backend (what each checkpoint writes in full)."""
        return self.engine.state / ".pulumi" / "stacks" / PROJECT / f"{self.name}.json"

    def state_bytes(self) -> int:
        """Size of the stack's state file."""
        return self.state_file.stat().st_size


# Where the e2e's engines write a checkpoint after every step. ``PULUMI_SKIP_CHECKPOINTS=true`` makes the engine
# write the state once, at the end of a command, instead of after each step: the same final state, the same plan,
# preview and events, only fewer writes of the whole state file (4-6 MB with the charts' CRDs, so about a third of
# an ``up`` from empty on 2 cores, docs/scale.md). The engine's defaults, checkpoints on, are proven by
# ``tests/e2e/test_engine.py`` (every committed stack's ``up`` from empty, its no-change preview, protection and
# destroy) and measured by ``make bench-engine``; every other engine test (day two, edits, upgrades, the gate,
# secrets, the two-stack split, MultiKueue) and the scenarios run without them.

@contextlib.contextmanager
def skip_checkpoints(run: EngineRun) -> Iterator[None]:
    """The engine writes only the final state, not a checkpoint per step (``PULUMI_SKIP_CHECKPOINTS``)."""
    workspace = run.stack.workspace
    before = dict(workspace.env_vars)
    workspace.env_vars = {**before, "PULUMI_SKIP_CHECKPOINTS": "true"}
    try:
        yield
    finally:
        workspace.env_vars = before


@contextlib.contextmanager
def engine_run(
    name: str,
    stack_file: Path,
    cluster: LocalCluster,
    binaries: Mapping[str, str],
    provider_version: str,
    config: dict[str, Any],
    *,
    delay_start: Mapping[str, threading.Event] | None = None,
    ready_early: frozenset[str] = frozenset(),
    living: bool = False,
    checkpoints: bool = False,
) -> Iterator[EngineRun]:
    """The stack's nodes on ``cluster``, its offline plan, and its stack with the charts' controllers running;
    nothing is deployed yet. On the way out, pass or fail, the controllers and then the cluster are stopped (a
    cluster left running beside the next one only slows it down).

    ``living``: ``cluster`` is a living one (``new_cluster(..., living=True)``: kube-scheduler and kwok run): the
    nodes are the stack's kwok fleet (:func:`tests.e2e.living.sync_fleet`), and the controller namespaces are created
    pinned to the control-plane node first (:func:`tests.e2e.living.pin_controller_namespaces`), so that the
    scheduler places only the benchmark pods, on the fleet, and kwok runs them.

    The stack deploys to ``cluster`` by name: ``aiperf-kueue:cluster`` is set to its kubeconfig and context
    (unless ``config`` says otherwise, as a test of that key does), as a user's stack names its own.

    ``checkpoints``: the engine's per-step checkpoints, off unless asked (the note above :func:`skip_checkpoints`)."""
    config = {f"{PROJECT}:cluster": cluster_config(cluster), **config}
    try:
        if living:
            pin_controller_namespaces(cluster, controller_namespaces(stack_file))
            sync_fleet(cluster, stack_file)
        else:
            create_nodes(cluster, node_objects(declared_pools(stack_file)))
        # Named after the cluster, which is unique across the suite, not after the stack: several test files deploy a
        # stack called dev, and make e2e's two workers may run two of them at once.
        engine = Engine(
            binaries, OUT / "engine" / cluster.dir.name, cluster.kubeconfig, provider_version, checkpoints=checkpoints
        )
        work = engine.project_dir(name, config)
        plan = plan_stack(work / "stacks" / f"Pulumi.{name}.yaml", OUT / "engine-plans" / cluster.dir.name)
        stack = engine.stack(name, work)
        with ChartControllers(cluster, delay_start=delay_start, ready_early=ready_early) as controllers:
            yield EngineRun(name, cluster, engine, work, stack, controllers, plan, config)
    finally:
        cluster.stop()
