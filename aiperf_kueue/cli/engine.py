"""Run ``__main__.py`` exactly as ``pulumi up`` would, but against a recording mock engine.

No CLI, no provider plugin, no cluster: every registration the program makes is
recorded with its options, and nothing else differs from a real run. Only the SDK's
public mocking API is used (``pulumi.runtime.set_mocks``, ``Mocks``, ``MockMonitor``,
``test``): the SDK serialises, answers and deserialises every registration itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import inspect
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
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockMonitor

ROOT = Path(__file__).resolve().parents[2]  # the repository: Pulumi.yaml, __main__.py, stacks/
PROGRAM = ROOT / "__main__.py"
PROJECT = "aiperf-kueue"
STACK_TYPE = "pulumi:pulumi:Stack"
STACK_REFERENCE_TYPE = "pulumi:pulumi:StackReference"
#: What ``plan`` shows for another stack's output (a MultiKueue worker's kubeconfig): never read offline.
STACK_OUTPUT = "[output of another stack]"
#: The outputs the program reads from other stacks: a MultiKueue worker's (``components/multikueue.py``).
STACK_OUTPUTS = ("multikueueKubeconfig",)
#: Resources whose children may include CustomResourceDefinitions: a chart, a manifests file.
#: The cyclic GC's thresholds while the program runs (see :func:`run_program`).
RUN_GC_THRESHOLDS = (50_000, 20, 100)
CRD_CARRIERS = ("kubernetes:helm.sh/v4:Chart", "kubernetes:yaml/v2:ConfigFile")
CRD_TYPE = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"


class _Recorder(pulumi.runtime.Mocks):
    """Answers every registration with its inputs as outputs, as a provider would on create, and
    hands the registration's transforms to the monitor (the SDK gives them to ``new_resource`` only,
    on the thread that registers)."""

    def __init__(self) -> None:
        self.registering = threading.local()

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.registering.transforms = list(args.transforms)
        if args.typ == STACK_REFERENCE_TYPE:
            # Offline there is no other stack to read: every output it is asked for is a secret placeholder.
            outputs = {name: STACK_OUTPUT for name in STACK_OUTPUTS}
            return f"{args.name}-id", {**args.inputs, "outputs": outputs, "secretOutputNames": list(STACK_OUTPUTS)}
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, None


class _RecordingMonitor(MockMonitor):
    """The SDK's mock monitor, keeping the whole registration request: parent, dependencies,
    options, and the inputs as they travelled (a nested secret stays where it is, as the engine
    keeps it; the SDK's deserialiser would push it up and mask a whole ``spec`` for one ``apiKey``)."""

    def __init__(self, recorder: _Recorder) -> None:
        super().__init__(recorder)
        self.recorder = recorder
        self.records: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        _worker_loop()
        self.recorder.registering.transforms = []
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]  # the SDK leaves it unannotated
        if request.type == STACK_TYPE:
            return response
        transforms: list[pulumi.ResourceTransform] = self.recorder.registering.transforms
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
            "aliases": _aliases(request),
            "inputs": _wire_value(json_format.MessageToDict(request.object)),
        }
        if request.type in CRD_CARRIERS and protects_crds(transforms):
            # What the real engine's transforms do to the CRDs this resource renders (no child is
            # rendered under mocks, and no transform runs: they are asked here, about a CRD).
            record["protectsCrds"] = True
        with self.lock:
            self.records.append(record)
        return response

    def RegisterResourceOutputs(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        _worker_loop()
        return super().RegisterResourceOutputs(request)  # type: ignore[no-untyped-call]

    def ReadResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        _worker_loop()
        return super().ReadResource(request)  # type: ignore[no-untyped-call]

    def Invoke(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        _worker_loop()
        return super().Invoke(request)  # type: ignore[no-untyped-call]


def protects_crds(transforms: list[pulumi.ResourceTransform]) -> bool:
    """Whether ``transforms``, applied in order as the engine applies a resource's transforms to
    each of its children, leave a CustomResourceDefinition child protected. An asynchronous
    transform is not awaited (none of the program's is): it counts as leaving the options as they were."""
    args = pulumi.ResourceTransformArgs(True, CRD_TYPE, "crd", {}, pulumi.ResourceOptions())
    for transform in transforms:
        result = transform(args)
        if inspect.isawaitable(result):
            close = getattr(result, "close", None)
            if callable(close):
                close()  # never awaited: no "coroutine was never awaited" warning
            continue
        if isinstance(result, pulumi.ResourceTransformResult):
            args = pulumi.ResourceTransformArgs(args.custom, args.type_, args.name, result.props, result.opts)
    return bool(args.opts.protect)


def _aliases(request: Any) -> list[dict[str, str]]:
    """The registration's ``aliases`` as the engine matches them: each a former ``type`` and/or ``name``
    of this resource (under the same parent). The program only aliases types (a Kueue kind across
    apiVersions, a Namespace and its patch); an alias sent as a whole URN is kept as ``urn``."""
    out: list[dict[str, str]] = []
    for alias in request.aliases:
        if alias.HasField("spec"):
            spec = {k: v for k, v in (("type", alias.spec.type), ("name", alias.spec.name)) if v}
            if spec:
                out.append(spec)
        elif alias.urn:
            out.append({"urn": engine_urn(alias.urn)})
    return out


def engine_urn(urn: str) -> str:
    """The URN the Pulumi engine gives a resource: the root Stack's type is not part of its children's type
    chain (``...::aiperf-kueue:index:AIPerfJobs::jobs``), where the SDK's mock monitor puts it in
    (``...::pulumi:pulumi:Stack$aiperf-kueue:index:AIPerfJobs::jobs``). The Stack's own URN is unchanged."""
    return urn.replace(f"::{STACK_TYPE}$", "::", 1)


def _wire_value(value: Any) -> Any:
    """A registration's inputs as JSON: ``null`` members dropped (the SDK drops them too), an
    unknown as ``None``, secrets left in place. Pulumi's property-value wire format (the resource
    monitor protocol) is the SDK's to know: a secret is what ``rpc.is_rpc_secret`` says is one, a
    value not known yet is ``rpc.UNKNOWN``."""
    if isinstance(value, dict):
        if rpc.is_rpc_secret(value):  # a secret of null is still a secret
            return {k: _wire_value(v) for k, v in value.items()}
        return {k: _wire_value(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_wire_value(v) for v in value]
    return None if value == rpc.UNKNOWN else value


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
    order: list[str] = field(default_factory=list)
    """Every resource's URN in the order the engine received its registration (``resources`` is sorted by URN)."""


def run_program(
    stack: str,
    config: dict[str, Any],
    secret_keys: set[str] | None = None,
    program: Path = PROGRAM,
    provider: Mapping[str, Any] | None = None,
    stack_dir: Path | None = None,
) -> ProgramRun:
    """Run ``program`` for ``stack`` with ``config`` (key without prefix → value) and the Kubernetes
    provider's settings (``kubernetes:context`` → value, as the stack file has them): under ``pulumi up``
    the program reads those too (the readiness gate waits on the provider's cluster).

    Values are handed over as the engine does: strings, objects as JSON. ``stack_dir``: where the stack file is,
    when not in the project's own stack directory; the program gets it as its root directory, and finds the
    stack's file and its fleet's other stack files there.
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
    pulumi.runtime.reset_options(
        project=PROJECT, stack=stack, preview=False, root_directory=str(stack_dir) if stack_dir else None
    )
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
    # The SDK makes several Outputs, futures and tasks per input value of every resource, alive until its
    # registration drains (the program registers namespaces a batch at a time: components/program.py): tens of
    # thousands of container objects at a few thousand namespaces. With CPython's default thresholds (700, 10, 10)
    # the cyclic GC traverses that heap thousands of times and finds little to free. Fewer, later collections:
    # `plan` of 5,000 namespaces takes 50 s instead of 82 s on the 2-core machine, at the same peak memory
    # (docs/scale.md).
    thresholds = gc.get_threshold()
    gc.set_threshold(*RUN_GC_THRESHOLDS)
    try:
        run()
    finally:
        gc.set_threshold(*thresholds)
        logger.removeHandler(handler)
    with monitor.lock:
        order = [r["urn"] for r in monitor.records]
    resources = sorted(monitor.records, key=lambda r: r["urn"])
    return ProgramRun(resources=resources, outputs=outputs, warnings=handler.messages, order=order)


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
