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
from google.protobuf.internal import well_known_types
from pulumi.runtime import _depends_on, mocks, rpc, settings
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
    _open_loop()
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
        with _young_collections_only(), _no_stack_traces(), _sdk_fast_paths():
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


# --------------------------------------------------------------------------- SDK fast paths
#
# Per registration, the SDK walks every input value several times in Python: it serialises the
# inputs (an awaited call per node), deserialises the engine's answer, and checks every Output's
# value for unknowns, each a few microseconds per node. For JSON-like data, which is nearly all
# a Kubernetes manifest is, the functions below give the SDK's own result in one synchronous
# pass; anything else (an Output, a resource, an asset, an unknown, a typed or translated
# input) goes to the SDK's function, for that value only. Each is tested against the SDK's own
# (tests/test_engine_sdk_fast_paths.py). They are installed only while this engine runs a
# program, and only over the SDK functions they were written against.

_SDK_SERIALIZE_PROPERTIES = rpc.serialize_properties
_SDK_SERIALIZE_PROPERTY = rpc.serialize_property
_SDK_DESERIALIZE_PROPERTIES = rpc.deserialize_properties
_SDK_DESERIALIZE_PROPERTY = rpc.deserialize_property
_SDK_CONTAINS_UNKNOWNS = rpc.contains_unknowns
_SDK_TRANSLATE_OUTPUT_PROPERTIES = rpc.translate_output_properties
_SDK_RESOLVE_DEPENDS_ON_URNS = runtime_resource._resolve_depends_on_urns
_SDK_CREATE_URN = runtime_resource.create_urn
_DEFAULT_TRANSLATE = pulumi.Resource.translate_input_property
_DEFAULT_TRANSLATE_OUTPUT = pulumi.Resource.translate_output_property
_SCALARS = (str, int, float, bool)
_SET_STRUCT_VALUE = well_known_types._SetStructValue


def _json_like(value: Any) -> bool:
    """Only ``dict`` (string keys), ``list``, ``str``, ``int``, ``float``, ``bool`` and ``None``, by exact type:
    the values the SDK's serialiser passes through unchanged (it copies containers, Struct stores the same)."""
    kind = type(value)
    if kind is dict:
        return all(type(key) is str and _json_like(value[key]) for key in value)
    if kind is list:
        return all(_json_like(item) for item in value)
    return value is None or kind in _SCALARS


def _untranslated(input_transformer: Any) -> bool:
    """No key translation: none, or ``Resource.translate_input_property`` itself (the identity)."""
    return input_transformer is None or getattr(input_transformer, "__func__", None) is _DEFAULT_TRANSLATE


async def _serialize_properties(
    inputs: Any,
    property_deps: dict[str, list[Any]],
    resource_obj: Any = None,
    input_transformer: Any = None,
    typ: Any = None,
    keep_output_values: bool = False,
    exclude_resource_refs_from_deps: bool = False,
) -> struct_pb2.Struct:
    """``rpc.serialize_properties``: JSON-like values stored as they are, the rest serialised by the SDK."""
    if typ is not None or type(inputs) is not dict or not _untranslated(input_transformer):
        return await _SDK_SERIALIZE_PROPERTIES(
            inputs, property_deps, resource_obj, input_transformer, typ, keep_output_values,
            exclude_resource_refs_from_deps,
        )  # fmt: skip
    struct = struct_pb2.Struct()
    for key in inputs:
        value = inputs[key]
        deps: list[Any] = []
        if not _json_like(value):
            try:
                value = await _serialize_value(
                    value, deps, key, resource_obj, input_transformer, keep_output_values,
                    exclude_resource_refs_from_deps,
                )  # fmt: skip
            except ValueError as e:  # the SDK's messages, word for word
                raise ValueError(
                    f"While processing input: {key!r}, type {type(key)}, value {value!r}\n"
                    + f"ValueError has risen: {e}"
                ) from e
            except AssertionError as e:
                raise AssertionError(
                    f"While processing input: {key!r}, type {type(key)}, value {value!r}\n"
                    + f"AssertionError has risen: {e}"
                ) from e
        if value is not None:
            _set_value(struct.fields[key], value)
            property_deps[key] = deps
    return struct


def _set_value(target: struct_pb2.Value, value: Any) -> None:
    """``Struct.__setitem__``'s conversion of one value (protobuf's ``_SetStructValue``), by exact
    type for JSON-like data; anything else (a subclass, a value the SDK serialised) by protobuf."""
    kind = type(value)
    if kind is str:
        target.string_value = value
    elif kind is dict:
        struct = target.struct_value
        struct.SetInParent()  # an empty dict is still a struct_value, as Clear() leaves it
        fields = struct.fields
        for key, item in value.items():
            _set_value(fields[key], item)
    elif kind is list:
        items = target.list_value
        items.SetInParent()
        values = items.values
        for item in value:
            _set_value(values.add(), item)
    elif kind is bool:
        target.bool_value = value
    elif kind is float or kind is int:
        target.number_value = value
    elif value is None:
        target.null_value = struct_pb2.NULL_VALUE
    else:
        _SET_STRUCT_VALUE(target, value)


async def _serialize_value(
    value: Any,
    deps: list[Any],
    key: str | None,
    resource_obj: Any,
    input_transformer: Any,
    keep_output_values: bool,
    exclude_resource_refs_from_deps: bool,
) -> Any:
    """``rpc.serialize_property`` without type information: down plain dicts and lists here (keys as they
    are, as the identity translation leaves them), every other value by the SDK."""
    kind = type(value)
    if kind is dict:
        out = {}
        for k in value:
            item = value[k]
            out[k] = (
                item
                if _json_like(item)
                else await _serialize_value(
                    item,
                    deps,
                    k,
                    resource_obj,
                    input_transformer,
                    keep_output_values,
                    exclude_resource_refs_from_deps,
                )
            )
        return out
    if kind is list:
        return [
            item
            if _json_like(item)
            else await _serialize_value(
                item, deps, key, resource_obj, input_transformer, keep_output_values, exclude_resource_refs_from_deps
            )
            for item in value
        ]
    return await _SDK_SERIALIZE_PROPERTY(
        value, deps, key, resource_obj, input_transformer, None, keep_output_values, exclude_resource_refs_from_deps
    )


class _AskTheSdkError(Exception):
    """A value :func:`_deserialize_properties` leaves to the SDK's deserialiser."""


def _deserialize_properties(
    props_struct: Any, keep_unknowns: bool | None = None, keep_internal: bool | None = True
) -> Any:
    """``rpc.deserialize_properties``, reading the protobuf values directly; secrets pushed up to their
    parent as the SDK does; a special object (asset, resource reference, output value) or an unknown
    anywhere, and the whole struct goes to the SDK."""
    if type(props_struct) is struct_pb2.Struct:
        try:
            return _struct(props_struct, keep_internal)
        except _AskTheSdkError:
            pass
    return _SDK_DESERIALIZE_PROPERTIES(props_struct, keep_unknowns, keep_internal)


def _struct(struct: struct_pb2.Struct, keep_internal: bool | None) -> Any:
    fields = struct.fields
    if SECRET_SIG in fields:
        if fields[SECRET_SIG].string_value != _SECRET:
            raise _AskTheSdkError
        if "value" not in fields:
            raise _AskTheSdkError
        # As rpc.deserialize_properties: wrap_rpc_secret(deserialize_property(struct["value"])), the
        # value deserialised with the defaults (internal properties kept).
        return rpc.wrap_rpc_secret(_pushed_up(fields["value"], True))
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if keep_internal is False and key.startswith("__") and key != "__provider":
            continue
        item = _pushed_up(value, keep_internal)
        if item is not None:
            out[key] = item
    return out


def _pushed_up(value: struct_pb2.Value, keep_internal: bool | None) -> Any:
    """``rpc.deserialize_property`` of one protobuf value."""
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        text = value.string_value
        if text == rpc.UNKNOWN:
            raise _AskTheSdkError
        return text
    if kind == "number_value":
        return value.number_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "null_value":
        return None
    if kind == "struct_value":
        props = _struct(value.struct_value, keep_internal)
        if type(props) is dict and any(rpc.is_rpc_secret(v) for v in props.values()):
            return rpc.wrap_rpc_secret({k: rpc.unwrap_rpc_secret(v) for k, v in props.items()})
        return props
    if kind == "list_value":
        items = [_pushed_up(v, keep_internal) for v in value.list_value.values]
        if any(rpc.is_rpc_secret(v) for v in items):
            return rpc.wrap_rpc_secret([rpc.unwrap_rpc_secret(v) for v in items])
        return items
    raise _AskTheSdkError  # not set: the SDK raises its own error


def _translate_output_properties(
    output: Any,
    output_transformer: Any,
    typ: Any = None,
    transform_using_type_metadata: bool = False,
    path: Any = None,
    return_none_on_dict_type_mismatch: bool = False,
) -> Any:
    """``rpc.translate_output_properties`` without type information and with the identity
    translation (``Resource.translate_output_property``): a copy, secrets unwrapped and wrapped again."""
    if typ is not None or getattr(output_transformer, "__func__", None) is not _DEFAULT_TRANSLATE_OUTPUT:
        return _SDK_TRANSLATE_OUTPUT_PROPERTIES(
            output, output_transformer, typ, transform_using_type_metadata, path, return_none_on_dict_type_mismatch
        )
    return _copied(output, output_transformer, transform_using_type_metadata)


def _copied(output: Any, output_transformer: Any, transform_using_type_metadata: bool) -> Any:
    kind = type(output)
    if output is None or kind in _SCALARS:
        return output
    if kind is dict:
        if SECRET_SIG in output and output[SECRET_SIG] == _SECRET:
            return rpc.wrap_rpc_secret(_copied(output["value"], output_transformer, transform_using_type_metadata))
        return {k: _copied(v, output_transformer, transform_using_type_metadata) for k, v in output.items()}
    if kind is list:
        return [_copied(v, output_transformer, transform_using_type_metadata) for v in output]
    return _SDK_TRANSLATE_OUTPUT_PROPERTIES(output, output_transformer, None, transform_using_type_metadata)


def _contains_unknowns(value: Any) -> bool:
    """``rpc.contains_unknowns``: whether an ``Unknown`` is reachable through dicts and lists."""
    stack = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        kind = type(item)
        if item is None or kind in _SCALARS:
            continue
        if kind is dict or kind is list:
            if id(item) not in seen:
                seen.add(id(item))
                stack.extend(item.values() if kind is dict else item)
        elif _SDK_CONTAINS_UNKNOWNS(item):  # an Unknown, or a dict or list subclass: the SDK's walk
            return True
    return False


async def _resolve_depends_on_urns(depends_on: Any, from_resource: Any = None) -> set[str]:
    """``_resolve_depends_on_urns`` of a plain list of resources: each resource is its own dependency,
    as the SDK's lifting of each into an Output finds, expanded by the SDK's own expansion."""
    if type(depends_on) is not list or not all(isinstance(d, pulumi.Resource) for d in depends_on):
        return await _SDK_RESOLVE_DEPENDS_ON_URNS(depends_on, from_resource)
    if not depends_on:
        return set()
    resources: set[Any] = set()
    for resource in depends_on:
        resources.add(resource)
    expanded = await _depends_on._expand_dependencies(resources, from_resource)
    return set(expanded.keys())


def _create_urn(name: Any, type_: Any, parent: Any = None, project: str | None = None, stack: str | None = None) -> Any:
    """``create_urn`` of plain strings: the same URN, already known, without the chain of Outputs."""
    if type(name) is str and type(type_) is str and type(parent) is str:
        return pulumi.Output.from_input(parent[0 : parent.rfind("::")] + "$" + type_ + "::" + name)
    return _SDK_CREATE_URN(name, type_, parent, project, stack)


_FAST_PATHS = (
    (rpc, "serialize_properties", _SDK_SERIALIZE_PROPERTIES, _serialize_properties),
    (rpc, "deserialize_properties", _SDK_DESERIALIZE_PROPERTIES, _deserialize_properties),
    (rpc, "contains_unknowns", _SDK_CONTAINS_UNKNOWNS, _contains_unknowns),
    (rpc, "translate_output_properties", _SDK_TRANSLATE_OUTPUT_PROPERTIES, _translate_output_properties),
    (runtime_resource, "_resolve_depends_on_urns", _SDK_RESOLVE_DEPENDS_ON_URNS, _resolve_depends_on_urns),
    (runtime_resource, "create_urn", _SDK_CREATE_URN, _create_urn),
)


@contextlib.contextmanager
def _sdk_fast_paths() -> Iterator[None]:
    """The fast paths above in place of the SDK's functions while the program runs (not when
    the SDK logs every property, which only its own functions do)."""
    installed = []
    if not settings.excessive_debug_output:
        for module, name, sdk, fast in _FAST_PATHS:
            if getattr(module, name) is sdk:
                setattr(module, name, fast)
                installed.append((module, name, sdk))
    try:
        yield
    finally:
        for module, name, sdk in installed:
            setattr(module, name, sdk)
