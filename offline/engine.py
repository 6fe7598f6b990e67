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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from google.protobuf import struct_pb2
from pulumi.runtime import mocks, rpc, settings
from pulumi.runtime.config import set_all_config
from pulumi.runtime.proto import resource_pb2

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
        return self.id_of(args.name), dict(args.inputs)

    def id_of(self, name: str) -> str:
        """The ID a created resource gets."""
        return f"{name}-id"

    def call(self, args: mocks.MockCallArgs) -> dict[str, Any]:
        return {}


class _RecordingMonitor(mocks.MockMonitor):
    """Keeps the whole registration request: parent, dependencies and options too.

    Leaner than the SDK's ``MockMonitor`` on the common path, with the same answers:
    the SDK deserialises the inputs, asks :class:`_Recorder` (outputs = inputs) and
    serialises them back, i.e. answers with the request's own ``object``; here the
    inputs are deserialised once (for the record) and the request's ``object`` is the
    answer. Inputs holding an unknown take the SDK's own path, which drops them.
    """

    def __init__(self, recorder: _Recorder) -> None:
        super().__init__(recorder)
        self.recorder = recorder

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        if request.type == "pulumi:pulumi:Stack":
            return super().RegisterResource(request)
        try:
            inputs = _properties(request.object)
        except _NotPlain:
            _worker_loop()  # the SDK deserialises resource references on this thread's loop
            response = super().RegisterResource(request)
            inputs = rpc.deserialize_properties(request.object, keep_unknowns=True)
        else:
            urn = self.make_urn(request.parent, request.type, request.name)
            id_ = self.recorder.id_of(request.name)
            self.resources[urn] = mocks.MockMonitor.ResourceRegistration(urn, id_, inputs)
            response = resource_pb2.RegisterResourceResponse(urn=urn, id=id_, object=request.object)
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
        return response

    def ReadResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        _worker_loop()
        return super().ReadResource(request)

    def Invoke(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        _worker_loop()
        return super().Invoke(request)


class _NotPlain(Exception):
    """A value :func:`_properties` leaves to the SDK: an unknown, an asset, a resource reference."""


def _properties(struct: struct_pb2.Struct) -> dict[str, Any]:
    """``rpc.deserialize_properties(struct, keep_unknowns=True)`` for plain data and secrets, in one pass.

    Same result, value for value: ``null`` members dropped, numbers as floats, a secret
    nested anywhere pushed up to the top-level property that holds it. Raises
    :class:`_NotPlain` for anything else.
    """
    fields = struct.fields
    if SECRET_SIG in fields:
        raise _NotPlain  # a top-level special object (never the inputs of a resource)
    out: dict[str, Any] = {}
    for key, value in fields.items():
        item = _value(value)
        if item is not None:
            out[key] = item
    return out


def _value(value: struct_pb2.Value) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        text = value.string_value
        if text == rpc.UNKNOWN:
            raise _NotPlain
        return text
    if kind == "number_value":
        return value.number_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "struct_value":
        fields = value.struct_value.fields
        if SECRET_SIG in fields:
            if fields[SECRET_SIG].string_value != _SECRET or len(fields) != 2 or "value" not in fields:
                raise _NotPlain
            return _secret(_value(fields["value"]))
        out: dict[str, Any] = {}
        secret = False
        for key, member in fields.items():
            item = _value(member)
            if item is not None:
                out[key] = item
                secret = secret or _is_secret(item)
        return _secret({k: _unwrap(v) for k, v in out.items()}) if secret else out
    if kind == "list_value":
        items = [_value(v) for v in value.list_value.values]
        if any(_is_secret(v) for v in items):
            return _secret([_unwrap(v) for v in items])
        return items
    if kind == "null_value":
        return None
    raise _NotPlain  # unset: the SDK raises, let it


_SECRET = rpc._special_secret_sig


def _is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get(SECRET_SIG) == _SECRET


def _secret(value: Any) -> Any:
    return value if _is_secret(value) else {SECRET_SIG: _SECRET, "value": value}


def _unwrap(value: Any) -> Any:
    return value["value"] if _is_secret(value) else value


#: Event loops of the monitor's worker threads, closed by :func:`close_worker_loops`.
_WORKER_LOOPS: list[asyncio.AbstractEventLoop] = []
_WORKER_LOOPS_LOCK = threading.Lock()


def _worker_loop() -> None:
    """This worker thread's event loop, created (and remembered) if it has none."""
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
        keys = list(exported)
        return pulumi.Output.all(*[exported[k] for k in keys]).apply(
            lambda values: outputs.update(zip(keys, values, strict=True))
        )

    try:
        _run()
    finally:
        logger.removeHandler(handler)
    with recorder.lock:
        resources = sorted(recorder.resources, key=lambda r: r["urn"])
    return ProgramRun(resources=resources, outputs=outputs, warnings=handler.messages)


def close_worker_loops() -> None:
    """Close the event loops the mock monitor's worker threads leave open, or the interpreter
    may print ``Invalid file descriptor`` noise at exit (pulumi NOTES §14). Call once, at the
    end of the process: the worker threads reuse their loops for the next program run."""
    try:
        main_loop = asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:
        main_loop = None
    for obj in gc.get_objects():
        if obj is main_loop:
            continue  # the SDK runs the next program on it
        if isinstance(obj, asyncio.AbstractEventLoop) and not obj.is_running() and not obj.is_closed():
            with contextlib.suppress(Exception):  # best effort at shutdown
                obj.close()
