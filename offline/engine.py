"""Run ``__main__.py`` exactly as ``pulumi up`` would, but against a recording mock engine.

No CLI, no provider plugin, no cluster: every registration the program makes is
recorded with its options, and nothing else differs from a real run.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import runpy
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from google.protobuf import struct_pb2
from pulumi.runtime import mocks, rpc, settings
from pulumi.runtime import resource as runtime_resource
from pulumi.runtime.config import set_all_config
from pulumi.runtime.proto import resource_pb2, source_pb2

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "__main__.py"
PROJECT = "aiperf-kueue"
SECRET_SIG = rpc._special_sig_key


class _Recorder(mocks.Mocks):
    """Answers every registration with its inputs as outputs, as a provider would on create."""

    def __init__(self) -> None:
        self.resources: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def new_resource(self, args: mocks.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: mocks.MockCallArgs) -> dict[str, Any]:
        return {}


class _RecordingMonitor(mocks.MockMonitor):
    """Keeps the whole registration request: parent, dependencies and options too.

    Leaner than the SDK's ``MockMonitor`` on the common path, with the same answers:
    the SDK deserialises the inputs, asks the mocks (:class:`_Recorder`: outputs = inputs)
    and serialises the outputs back, i.e. answers with the request's own ``object``; here
    the inputs are deserialised once (for the record and the mocks) and, when the mocks
    answer with the inputs, the request's ``object`` is the answer. Inputs holding an
    unknown take the SDK's own path, which drops them.
    """

    def __init__(self, recorder: _Recorder) -> None:
        super().__init__(recorder)
        self.recorder = recorder

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        if request.type == "pulumi:pulumi:Stack":
            return super().RegisterResource(request)
        try:
            inputs = _properties(request.object)
        except _NotPlainError:
            _worker_loop()  # the SDK deserialises resource references on this thread's loop
            response = super().RegisterResource(request)
            inputs = _properties(request.object, lenient=True)
        else:
            urn = self.make_urn(request.parent, request.type, request.name)
            id_, state = self.mocks.new_resource(
                mocks.MockResourceArgs(
                    typ=request.type,
                    name=request.name,
                    inputs=inputs,
                    provider=request.provider,
                    resource_id=request.importId,
                    custom=request.custom or False,
                    transforms=mocks._resolve_callbacks(request.transforms),
                )
            )
            if state == inputs:
                outputs = request.object  # already serialised
            else:
                _worker_loop()
                outputs = mocks._sync_await(rpc.serialize_properties(state, {}))
            self.resources[urn] = mocks.MockMonitor.ResourceRegistration(urn, id_, state)
            response = resource_pb2.RegisterResourceResponse(urn=urn, id=id_, object=outputs)
        record = {
            "type": request.type,
            "name": request.name,
            "urn": response.urn,
            "custom": request.custom,
            "parent": request.parent,
            "dependsOn": sorted(request.dependencies),
            "protect": bool(request.protect),
            "retainOnDelete": bool(request.retainOnDelete),
            "deleteBeforeReplace": bool(request.deleteBeforeReplace),
            "replaceOnChanges": list(request.replaceOnChanges),
            "inputs": inputs,
        }
        with self.recorder.lock:
            self.recorder.resources.append(record)
            first = len(self.recorder.resources) == 1
        if first:
            gc.collect()  # see _young_collections_only
        return response

    def ReadResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        _worker_loop()
        return super().ReadResource(request)

    def Invoke(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        _worker_loop()
        return super().Invoke(request)


class _NotPlainError(Exception):
    """A value :func:`_properties` leaves to the SDK: an unknown, an asset, a resource reference."""


def _properties(struct: struct_pb2.Struct, lenient: bool = False) -> Any:
    """``rpc.deserialize_properties(struct, keep_unknowns=True)`` for plain data and secrets, in one pass.

    Same result, value for value (``null`` members dropped, numbers as floats), except that a
    nested secret stays where it is, as the engine keeps it: the SDK pushes it up to the
    top-level property, which would mask a whole ``spec`` for one ``apiKey``. Raises
    :class:`_NotPlainError` for anything else (an unknown, an asset, a resource reference),
    unless ``lenient``: then the SDK deserialises that value, in place.
    """
    fields = struct.fields
    if SECRET_SIG in fields:
        if lenient:  # a top-level special object (never the inputs of a resource)
            return rpc.deserialize_properties(struct, keep_unknowns=True)
        raise _NotPlainError
    out: dict[str, Any] = {}
    for key, value in fields.items():
        item = _value(value, lenient)
        if item is not None:
            out[key] = item
    return out


def _value(value: struct_pb2.Value, lenient: bool = False) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        text = value.string_value
        if text == rpc.UNKNOWN:
            if lenient:
                return rpc.deserialize_property(text, keep_unknowns=True)
            raise _NotPlainError
        return text
    if kind == "number_value":
        return value.number_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "struct_value":
        fields = value.struct_value.fields
        if SECRET_SIG in fields:
            if fields[SECRET_SIG].string_value == _SECRET and len(fields) == 2 and "value" in fields:
                return _secret(_value(fields["value"], lenient))
            if lenient:
                return rpc.deserialize_properties(value.struct_value, keep_unknowns=True)
            raise _NotPlainError
        out: dict[str, Any] = {}
        for key, member in fields.items():
            item = _value(member, lenient)
            if item is not None:
                out[key] = item
        return out
    if kind == "list_value":
        return [_value(v, lenient) for v in value.list_value.values]
    if kind == "null_value":
        return None
    if lenient:
        raise ValueError("Value not set")  # as the SDK's Struct access does
    raise _NotPlainError


_SECRET = rpc._special_secret_sig


def _is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get(SECRET_SIG) == _SECRET


def _secret(value: Any) -> Any:
    return value if _is_secret(value) else {SECRET_SIG: _SECRET, "value": value}


#: Event loops of the monitor's worker threads, closed by :func:`close_worker_loops`.
_WORKER_LOOPS: list[asyncio.AbstractEventLoop] = []
_WORKER_LOOPS_LOCK = threading.Lock()


def _worker_loop() -> None:
    """Give the calling worker thread an event loop (remembered for closing) if it has none."""
    try:
        asyncio.get_event_loop()
    except RuntimeError:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        with _WORKER_LOOPS_LOCK:
            _WORKER_LOOPS.append(loop)


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
) -> ProgramRun:
    """Run ``program`` for ``stack`` with ``config`` (key without prefix → value).

    Values are handed over as the engine does: strings, objects as JSON.
    """
    import json

    engine_config = {f"{PROJECT}:{k}": v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}
    recorder = _Recorder()
    handler = _Warnings()
    logger = logging.getLogger(f"aiperf-kueue.offline.{id(handler)}")
    logger.propagate = False
    logger.addHandler(handler)
    settings.ROOT.set(None)
    set_all_config(engine_config, [f"{PROJECT}:{k}" for k in secret_keys or ()])
    mocks.set_mocks(
        recorder, project=PROJECT, stack=stack, preview=False, logger=logger, monitor=_RecordingMonitor(recorder)
    )
    outputs: dict[str, Any] = {}
    root = str(program.parent)
    if root not in sys.path:
        sys.path.insert(0, root)

    @mocks.test
    def _run() -> Any:
        runpy.run_path(str(program), run_name="__main__")
        stack_resource = settings.get_root_resource()
        exported = getattr(stack_resource, "outputs", {})
        # Plain data resolves to itself: only values holding Outputs go through Output.all,
        # which would otherwise lift every nested element of a large table into an Output.
        pending = [k for k, v in exported.items() if not _plain(v)]

        def resolved(values: list[Any]) -> None:
            late = dict(zip(pending, values, strict=True))
            outputs.update({k: late.get(k, v) for k, v in exported.items()})

        return pulumi.Output.all(*[exported[k] for k in pending]).apply(resolved)

    try:
        with _young_collections_only(), _no_stack_traces():
            _run()
    finally:
        logger.removeHandler(handler)
    with recorder.lock:
        resources = sorted(recorder.resources, key=lambda r: r["urn"])
    return ProgramRun(resources=resources, outputs=outputs, warnings=handler.messages)


@contextlib.contextmanager
def _young_collections_only() -> Iterator[None]:
    """Full garbage collections only at the program's first registration and when it ends.

    Everything the SDK allocates per resource stays alive until the run ends, so CPython's
    full collections (one per 25% growth of the long-lived heap) rescan an ever larger heap
    and find little: at 10,000 resources they were more than half the run's time (even one
    per doubling of the registrations added a quarter). The young generations still collect
    short-lived cycles as usual. The collection at the first registration
    (:meth:`_RecordingMonitor.RegisterResource`), which the SDK makes once the program's body
    has run, frees what the body left behind (its module namespace is a cycle), so it does
    not stay resident through the run. What existed before the run (modules, the caller's
    config) is frozen meanwhile, so neither collection rescans it.
    """
    thresholds = gc.get_threshold()
    # What exists already (modules, the caller's config) is not the run's: no collection rescans it.
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.collect()
        gc.freeze()
    gc.set_threshold(thresholds[0], thresholds[1], 1 << 30)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.collect()
        if freeze:
            gc.unfreeze()


@contextlib.contextmanager
def _no_stack_traces() -> Iterator[None]:
    """No stack trace and source position on registrations while the program runs.

    The SDK walks and converts every frame of the caller's stack for each registration, for
    the engine to show where a resource was declared. This engine records neither, and the
    walk costs more the deeper the program declares (``plan``, then components): about a tenth
    of a 10,000-resource run. The program cannot observe the difference.
    """
    original = getattr(runtime_resource, "_get_stack_trace", None)
    if original is None:  # another SDK version: leave it be
        yield
        return
    runtime_resource._get_stack_trace = source_pb2.StackTrace
    try:
        yield
    finally:
        runtime_resource._get_stack_trace = original


def _plain(value: Any) -> bool:
    """JSON-like data only (no Output, awaitable, resource or input type anywhere inside)."""
    if type(value) is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if type(value) is list:
        return all(_plain(v) for v in value)
    return value is None or type(value) in (str, int, float, bool)


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
