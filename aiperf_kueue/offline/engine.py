"""Run ``__main__.py`` exactly as ``pulumi up`` would, but against a recording mock engine.

No CLI, no provider plugin, no cluster: every registration the program makes is
recorded with its options, and nothing else differs from a real run. Only the SDK's
public mocking API is used (``pulumi.runtime.set_mocks``, ``Mocks``, ``MockMonitor``,
``test``): the SDK serialises, answers and deserialises every registration itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import runpy
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import pulumi.runtime
from google.protobuf import json_format
from pulumi.runtime.mocks import MockMonitor

ROOT = Path(__file__).resolve().parents[2]  # the repository: Pulumi.yaml, __main__.py, stacks/
PROGRAM = ROOT / "__main__.py"
PROJECT = "aiperf-kueue"
#: Pulumi's property-value wire format (the resource monitor protocol): a secret travels as
#: ``{SECRET_SIG: SECRET_MARK, "value": ...}``, a value not known yet as the string ``UNKNOWN``.
SECRET_SIG = "4dabf18193072939515e22adb298388d"
SECRET_MARK = "1b47061264138c4ac30d75fd1eb44270"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
STACK_TYPE = "pulumi:pulumi:Stack"
#: Resources whose children may include CustomResourceDefinitions: a chart, a manifests file.
CRD_CARRIERS = ("kubernetes:helm.sh/v4:Chart", "kubernetes:yaml/v2:ConfigFile")


class _Recorder(pulumi.runtime.Mocks):
    """Answers every registration with its inputs as outputs, as a provider would on create."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, None


class _RecordingMonitor(MockMonitor):
    """The SDK's mock monitor, keeping the whole registration request: parent, dependencies,
    options, and the inputs as they travelled (a nested secret stays where it is, as the engine
    keeps it; the SDK's deserialiser would push it up and mask a whole ``spec`` for one ``apiKey``)."""

    def __init__(self, recorder: _Recorder) -> None:
        super().__init__(recorder)
        self.records: list[dict[str, Any]] = []
        self.component_outputs: dict[str, Any] = {}
        self.lock = threading.Lock()

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        _worker_loop()
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]  # the SDK leaves it unannotated
        if request.type == STACK_TYPE:
            return response
        record = {
            "type": request.type,
            "name": request.name,
            "urn": engine_urn(response.urn),
            "custom": request.custom,
            "parent": engine_urn(request.parent),
            "dependsOn": sorted(engine_urn(d) for d in request.dependencies),
            "protect": bool(request.protect),
            "retainOnDelete": bool(request.retainOnDelete),
            "deleteBeforeReplace": bool(request.deleteBeforeReplace),
            "replaceOnChanges": list(request.replaceOnChanges),
            "inputs": _wire_value(json_format.MessageToDict(request.object)),
        }
        with self.lock:
            self.records.append(record)
        return response

    def RegisterResourceOutputs(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        """A component's outputs (``register_outputs``): kept, by URN, for what they declare about its children."""
        _worker_loop()
        outputs = _wire_value(json_format.MessageToDict(request.outputs))
        with self.lock:
            self.component_outputs[engine_urn(request.urn)] = outputs
        return super().RegisterResourceOutputs(request)  # type: ignore[no-untyped-call]

    def ReadResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        _worker_loop()
        return super().ReadResource(request)  # type: ignore[no-untyped-call]

    def Invoke(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        _worker_loop()
        return super().Invoke(request)  # type: ignore[no-untyped-call]


def engine_urn(urn: str) -> str:
    """The URN the Pulumi engine gives a resource: the root Stack's type is not part of its children's type
    chain (``...::aiperf-kueue:index:AIPerfJobs::jobs``), where the SDK's mock monitor puts it in
    (``...::pulumi:pulumi:Stack$aiperf-kueue:index:AIPerfJobs::jobs``). The Stack's own URN is unchanged."""
    return urn.replace(f"::{STACK_TYPE}$", "::", 1)


def _wire_value(value: Any) -> Any:
    """A registration's inputs as JSON: ``null`` members dropped (the SDK drops them too), an
    unknown as ``None``, secrets left in place."""
    if isinstance(value, dict):
        if value.get(SECRET_SIG) == SECRET_MARK:  # a secret of null is still a secret
            return {k: _wire_value(v) for k, v in value.items()}
        return {k: _wire_value(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_wire_value(v) for v in value]
    return None if value == UNKNOWN else value


#: Event loops of the monitor's worker threads, closed by :func:`close_worker_loops`.
_WORKER_LOOPS: list[asyncio.AbstractEventLoop] = []
_WORKER_LOOPS_LOCK = threading.Lock()


def _worker_loop() -> None:
    """Give the calling worker thread an event loop (remembered for closing) if it has none: the
    SDK's monitor would otherwise make one that nothing closes. The main thread's loop is the
    program's (:func:`_open_loop`), not the monitor's to close."""
    if threading.current_thread() is threading.main_thread():
        return
    try:
        asyncio.get_event_loop()
    except RuntimeError:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        with _WORKER_LOOPS_LOCK:
            _WORKER_LOOPS.append(loop)


def _open_loop() -> None:
    """Give the calling thread an open event loop: the SDK's ``Stack()`` asks for the current
    one, and a caller (a test, an earlier ``asyncio.run``) may have closed or unset it."""
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_event_loop()
    except RuntimeError:
        loop = None
    if loop is None or loop.is_closed():
        asyncio.set_event_loop(asyncio.new_event_loop())


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@dataclass
class ProgramRun:
    """What one run of the program registered, exported and warned about."""

    resources: list[dict[str, Any]]
    outputs: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def run_program(
    stack: str,
    config: dict[str, Any],
    secret_keys: set[str] | None = None,
    program: Path = PROGRAM,
    provider: Mapping[str, Any] | None = None,
) -> ProgramRun:
    """Run ``program`` for ``stack`` with ``config`` (key without prefix → value) and the Kubernetes
    provider's settings (``kubernetes:context`` → value, as the stack file has them): under ``pulumi up``
    the program reads those too (the readiness gate waits on the provider's cluster).

    Values are handed over as the engine does: strings, objects as JSON.
    """
    engine_config = {f"{PROJECT}:{k}": v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}
    engine_config.update({k: v if isinstance(v, str) else json.dumps(v) for k, v in (provider or {}).items()})
    monitor = _RecordingMonitor(_Recorder())
    handler = _Warnings()
    logger = logging.getLogger(f"aiperf-kueue.offline.{id(handler)}")
    logger.propagate = False
    logger.addHandler(handler)
    _open_loop()
    # A fresh root stack for every run (another run in this process left its own).
    pulumi.runtime.reset_options(project=PROJECT, stack=stack, preview=False)
    pulumi.runtime.set_all_config(engine_config, [f"{PROJECT}:{k}" for k in secret_keys or ()])
    pulumi.runtime.set_mocks(monitor.mocks, project=PROJECT, stack=stack, preview=False, logger=logger, monitor=monitor)
    outputs: dict[str, Any] = {}
    root = str(program.parent)
    if root not in sys.path:
        sys.path.insert(0, root)

    def _run() -> Any:
        runpy.run_path(str(program), run_name="__main__")
        stack_resource = pulumi.runtime.get_root_resource()
        exported: dict[str, Any] = getattr(stack_resource, "outputs", {})
        keys = list(exported)
        return pulumi.Output.all(*[exported[k] for k in keys]).apply(
            lambda values: outputs.update(zip(keys, values, strict=True))
        )

    run: Callable[[], None] = pulumi.runtime.test(_run)  # awaits what _run returns
    try:
        run()
    finally:
        logger.removeHandler(handler)
    with monitor.lock:
        resources = sorted(monitor.records, key=lambda r: r["urn"])
        for record in resources:
            # Options the engine cannot show under mocks: a component protects its chart's CRDs by a
            # transform, which runs only in the real engine; the component says so in its outputs.
            declared = monitor.component_outputs.get(record["parent"] or "") or {}
            if declared.get("protectedCrds") is True and record["type"] in CRD_CARRIERS:
                record["protectsCrds"] = True
    return ProgramRun(resources=resources, outputs=outputs, warnings=handler.messages)


def close_worker_loops() -> None:
    """Close the event loops the mock monitor's worker threads leave open, or the interpreter
    may print ``Invalid file descriptor`` noise at exit (pulumi NOTES §14). Call once, at the
    end of the process: the worker threads reuse their loops for the next program run.

    Only the monitor creates loops on those threads (:func:`_worker_loop`), so it knows them
    all: no scan of every object on the heap."""
    with _WORKER_LOOPS_LOCK:
        loops = list(_WORKER_LOOPS)
        _WORKER_LOOPS.clear()
    for loop in loops:
        if not loop.is_running() and not loop.is_closed():
            with contextlib.suppress(Exception):  # best effort at shutdown
                loop.close()
