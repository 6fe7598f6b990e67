"""The offline engine's stand-ins for SDK functions give exactly what the SDK's own functions give.

Each fast path in :mod:`offline.engine` is compared with the SDK function it replaces, on
generated values that mix the JSON-like data it handles itself with what it must leave to the
SDK (Outputs known and unknown, secret or not, with dependencies; unknowns; secrets nested in
secrets; assets; subclasses; tuples), and on whole program runs with and without them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import pulumi
import pytest
from google.protobuf import struct_pb2
from hypothesis import given, settings
from hypothesis import strategies as st
from pulumi.runtime import mocks, rpc
from pulumi.runtime import resource as runtime_resource

from offline import engine
from tests.support import stack_values

SIG, SECRET, ASSET = rpc._special_sig_key, rpc._special_secret_sig, rpc._special_asset_sig


@pytest.fixture(autouse=True)
def _mock_engine() -> Iterator[None]:
    """The SDK's settings as ``plan`` has them (secrets and resource references supported)."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    recorder = engine._Recorder()
    mocks.set_mocks(recorder, project="p", stack="s", preview=False, monitor=engine._RecordingMonitor(recorder))
    try:
        yield
    finally:
        loop.close()
        asyncio.set_event_loop(None)


def _run(coroutine: Any) -> Any:
    return asyncio.get_event_loop().run_until_complete(coroutine)


class Tagged(dict):  # type: ignore[type-arg]
    """A dict subclass: never JSON-like, always the SDK's."""


keys = st.text(max_size=6)
plain = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**53), 2**53),
        st.floats(allow_nan=False),
        st.text(max_size=8),
        st.just(rpc.UNKNOWN),
    ),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(keys, children, max_size=3)),
    max_leaves=12,
)

# Recipes: what to build inside the event loop (Outputs need one). ("output", value, known, secret, deps).
outputs = st.tuples(st.just("output"), plain, st.booleans(), st.booleans(), st.integers(0, 2))
recipes = st.recursive(
    st.one_of(plain, outputs, plain.map(lambda v: ("tuple", v)), plain.map(lambda v: ("tagged", v))),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(keys, children, max_size=3)),
    max_leaves=16,
)


def _build(recipe: Any, deps: list[pulumi.Resource]) -> Any:
    if type(recipe) is tuple:
        if recipe[0] == "output":
            _, value, known, secret, dep_count = recipe
            return pulumi.Output(
                _done(set(deps[:dep_count])), _done(value), _done(known), _done(secret)
            )  # fmt: skip
        if recipe[0] == "tuple":
            return tuple(recipe[1]) if isinstance(recipe[1], list) else (recipe[1],)
        return Tagged(recipe[1]) if isinstance(recipe[1], dict) else Tagged(v=recipe[1])
    if type(recipe) is dict:
        return {k: _build(v, deps) for k, v in recipe.items()}
    if type(recipe) is list:
        return [_build(v, deps) for v in recipe]
    return recipe


def _done(value: Any) -> asyncio.Future[Any]:
    future: asyncio.Future[Any] = asyncio.get_event_loop().create_future()
    future.set_result(value)
    return future


async def _both_serialise(recipe: dict[str, Any], **options: Any) -> tuple[Any, Any]:
    deps = [pulumi.resource.DependencyResource(f"urn:pulumi:s::p::t::d{i}") for i in range(2)]
    results = []
    for serialise in (engine._serialize_properties, engine._SDK_SERIALIZE_PROPERTIES):
        property_deps: dict[str, list[Any]] = {}
        try:
            struct = await serialise(_build(recipe, deps), property_deps, **options)
        except Exception as exc:
            results.append((type(exc), str(exc)))
        else:
            results.append((struct, {k: [deps.index(d) for d in v] for k, v in property_deps.items()}))
    return results[0], results[1]


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(keys, recipes, max_size=5), st.booleans())
def test_serialize_properties_is_the_sdks(recipe: dict[str, Any], keep_output_values: bool) -> None:
    ours, sdks = _run(
        _both_serialise(
            recipe, keep_output_values=keep_output_values, exclude_resource_refs_from_deps=keep_output_values
        )
    )
    assert ours == sdks


def test_serialize_properties_of_a_manifest_with_a_secret() -> None:
    async def serialise() -> tuple[Any, Any]:
        secret = pulumi.Output.secret("sk-1")
        manifest = {"kind": "AIPerfJob", "spec": {"endpoint": {"apiKey": secret, "urls": ["u"]}, "n": 8}, "x": None}
        return await _both_serialise_built(manifest)

    ours, sdks = _run(serialise())
    assert ours == sdks
    struct, deps = ours
    assert deps == {"kind": [], "spec": []}
    assert rpc.deserialize_properties(struct) == {
        "kind": "AIPerfJob",
        "spec": {SIG: SECRET, "value": {"endpoint": {"apiKey": "sk-1", "urls": ["u"]}, "n": 8.0}},
    }


async def _both_serialise_built(inputs: dict[str, Any]) -> tuple[Any, Any]:
    results = []
    for serialise in (engine._serialize_properties, engine._SDK_SERIALIZE_PROPERTIES):
        property_deps: dict[str, list[Any]] = {}
        results.append((await serialise(inputs, property_deps), property_deps))
    return results[0], results[1]


def test_serialize_properties_errors_are_the_sdks() -> None:
    async def serialise() -> tuple[Any, Any]:
        return await _both_serialise({"spec": {"a": [("tuple", [1]), {"b": ("tagged", {"c": 1})}]}})

    assert _run(serialise())[0] == _run(serialise())[1]

    async def bad() -> list[str]:
        messages = []
        for serialise in (engine._serialize_properties, engine._SDK_SERIALIZE_PROPERTIES):
            with pytest.raises(ValueError) as caught:
                await serialise({"spec": {"a": [1, object()]}}, {})
            messages.append(str(caught.value).split(" at 0x")[0])
        return messages

    ours, sdks = _run(bad())
    assert ours == sdks
    assert ours.startswith("While processing input: 'spec', type <class 'str'>, value {'a': [1, <object object")


def test_typed_or_translated_inputs_are_left_to_the_sdk() -> None:
    class Renamed(pulumi.CustomResource):
        def translate_input_property(self, prop: str) -> str:
            return prop.upper()

    calls: list[Any] = []

    async def sdk(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return struct_pb2.Struct()

    resource = Renamed.__new__(Renamed)
    original = engine._SDK_SERIALIZE_PROPERTIES
    engine._SDK_SERIALIZE_PROPERTIES = sdk
    try:
        _run(engine._serialize_properties({"a": 1}, {}, resource, resource.translate_input_property))
        _run(engine._serialize_properties({"a": 1}, {}, None, None, dict))
        _run(engine._serialize_properties(Tagged(a=1), {}))
        plain_resource = pulumi.CustomResource.__new__(pulumi.CustomResource)
        _run(engine._serialize_properties({"a": 1}, {}, plain_resource, plain_resource.translate_input_property))
    finally:
        engine._SDK_SERIALIZE_PROPERTIES = original
    assert len(calls) == 3


# --------------------------------------------------------------------------- deserialising

# Raw structs, special objects included: secrets (nested, in secrets, without a value),
# assets, unknowns, internal keys.
special = st.one_of(
    st.builds(lambda v: {SIG: SECRET, "value": v}, plain),
    st.just({SIG: SECRET}),
    st.builds(lambda t: {SIG: ASSET, "text": t}, st.text(max_size=4)),
    st.just({SIG: "not-a-signature"}),
)
raw = st.recursive(
    st.one_of(plain, special),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.one_of(keys, st.sampled_from(["__internal", "__provider", SIG])), children, max_size=3),
        st.builds(lambda v: {SIG: SECRET, "value": v}, children),
    ),
    max_leaves=14,
)


def _struct(value: dict[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(value)
    return struct


def _outcome(deserialise: Any, struct: struct_pb2.Struct, *args: Any) -> Any:
    try:
        return _comparable(deserialise(struct, *args))
    except Exception as exc:
        return (type(exc), str(exc))


def _comparable(value: Any) -> Any:
    """Unknowns and assets compare by what they are."""
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    if isinstance(value, pulumi.output.Unknown):
        return "<unknown>"
    if isinstance(value, pulumi.Asset):
        return (type(value), vars(value))
    return value


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.dictionaries(keys, raw, max_size=4), special), st.sampled_from([None, True, False]), st.booleans())
def test_deserialize_properties_is_the_sdks(value: Any, keep_unknowns: bool | None, keep_internal: bool) -> None:
    struct = _struct(value)
    assert _outcome(engine._deserialize_properties, struct, keep_unknowns, keep_internal) == _outcome(
        engine._SDK_DESERIALIZE_PROPERTIES, struct, keep_unknowns, keep_internal
    )


def test_deserialize_pushes_a_nested_secret_up_as_the_sdk_does() -> None:
    struct = _struct({"spec": {"endpoint": {"apiKey": {SIG: SECRET, "value": "k"}}, "n": 1}, "kind": "Job"})
    expected = {"spec": {SIG: SECRET, "value": {"endpoint": {"apiKey": "k"}, "n": 1.0}}, "kind": "Job"}
    assert engine._deserialize_properties(struct) == expected
    assert engine._SDK_DESERIALIZE_PROPERTIES(struct) == expected


def test_deserialize_an_unset_value_fails_as_the_sdk_does() -> None:
    struct = struct_pb2.Struct()
    struct.fields["x"]
    ours = _outcome(engine._deserialize_properties, struct)
    assert ours == _outcome(engine._SDK_DESERIALIZE_PROPERTIES, struct)
    assert ours == (ValueError, "Value not set")


# --------------------------------------------------------------------------- unknowns, output translation


def _with_objects(value: Any, draw: st.DrawFn) -> Any:
    if isinstance(value, dict):
        built = {k: _with_objects(v, draw) for k, v in value.items()}
        return Tagged(built) if draw(st.booleans()) and not built else built
    if isinstance(value, list):
        return [_with_objects(v, draw) for v in value]
    if value == rpc.UNKNOWN:
        return pulumi.output.Unknown()
    return value


@st.composite
def values_with_unknowns(draw: st.DrawFn) -> Any:
    value = _with_objects(draw(raw), draw)
    if draw(st.booleans()) and isinstance(value, (list, dict)):
        # Shared and cyclic references: the SDK's walk visits each container once.
        shared = [value]
        value = [shared, shared, {"self": shared}]
        shared.append(value)
    return value


@settings(max_examples=300, deadline=None)
@given(values_with_unknowns())
def test_contains_unknowns_is_the_sdks(value: Any) -> None:
    assert engine._contains_unknowns(value) is engine._SDK_CONTAINS_UNKNOWNS(value)


def test_contains_unknowns_looks_inside_subclasses_and_not_inside_outputs() -> None:
    assert engine._contains_unknowns([{"a": Tagged(b=[pulumi.output.Unknown()])}]) is True
    assert engine._contains_unknowns({"a": [1, "x", None, {"b": 2.5}]}) is False
    assert engine._contains_unknowns(pulumi.output.Unknown()) is True


@st.composite
def acyclic_values(draw: st.DrawFn) -> Any:
    return _with_objects(draw(raw), draw)


@settings(max_examples=300, deadline=None)
@given(acyclic_values())
def test_translate_output_properties_is_the_sdks(value: Any) -> None:
    resource = pulumi.CustomResource.__new__(pulumi.CustomResource)
    translate = resource.translate_output_property
    ours = _outcome(lambda v: engine._translate_output_properties(v, translate), value)
    assert ours == _outcome(lambda v: engine._SDK_TRANSLATE_OUTPUT_PROPERTIES(v, translate), value)


def test_typed_or_translated_outputs_are_left_to_the_sdk() -> None:
    assert engine._translate_output_properties({"a": 1.0}, lambda k: k.upper()) == {"A": 1.0}
    assert engine._translate_output_properties(2.0, None, int) == 2


# --------------------------------------------------------------------------- URNs, dependencies


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=8), st.text(max_size=8), st.one_of(st.text(max_size=20), st.just("urn:pulumi:s::p::a$b::c")))
def test_create_urn_is_the_sdks(name: str, type_: str, parent: str) -> None:
    async def both() -> list[Any]:
        results = []
        for create in (engine._create_urn, engine._SDK_CREATE_URN):
            output = create(name, type_, parent)
            results.append(
                (await output.future(), await output.is_known(), await output.is_secret(), await output.resources())
            )
        return results

    ours, sdks = _run(both())
    assert ours == sdks
    assert ours[0] == parent[: parent.rfind("::")] + "$" + type_ + "::" + name


def test_create_urn_without_a_parent_is_the_sdks() -> None:
    assert _run(engine._create_urn("n", "t:m:T").future()) == "urn:pulumi:s::p::t:m:T::n"


@pytest.mark.parametrize("with_from", [False, True])
def test_resolve_depends_on_urns_is_the_sdks(with_from: bool) -> None:
    class Thing(pulumi.CustomResource):
        def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None) -> None:
            super().__init__("test:index:Thing", name, {}, opts)

    class Group(pulumi.ComponentResource):
        def __init__(self, name: str) -> None:
            super().__init__("test:index:Group", name, None, None)
            self.children = [Thing(f"{name}-{i}", pulumi.ResourceOptions(parent=self)) for i in range(3)]
            self.register_outputs({})

    seen: list[tuple[set[str], set[str]]] = []

    @pulumi.runtime.test
    def program() -> Any:
        group, single = Group("g"), Thing("single")

        async def check() -> None:
            for depends_on in ([], [single], [group], [single, group, single], pulumi.Output.from_input([single])):
                froms = [Thing(f"from-{len(seen)}-{i}") for i in range(2)] if with_from else [None, None]
                ours = await engine._resolve_depends_on_urns(depends_on, froms[0])
                sdks = await engine._SDK_RESOLVE_DEPENDS_ON_URNS(depends_on, froms[1])
                seen.append((ours, sdks))

        return check()

    program()
    for ours, sdks in seen:
        assert ours == sdks
    assert [sorted(u.rsplit("::", 1)[1] for u in ours) for ours, _ in seen] == [
        [],
        ["single"],
        ["g-0", "g-1", "g-2"],
        ["g-0", "g-1", "g-2", "single"],
        ["single"],
    ]


# --------------------------------------------------------------------------- whole runs


@contextlib.contextmanager
def _sdk_only() -> Iterator[None]:
    yield


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_a_program_run_records_the_same_with_and_without_the_fast_paths(
    stack: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    values, secret_keys = stack_values(stack)
    fast = engine.run_program(stack, values, secret_keys)
    monkeypatch.setattr(engine, "_sdk_fast_paths", _sdk_only)
    slow = engine.run_program(stack, values, secret_keys)
    assert fast.resources == slow.resources
    assert fast.outputs == slow.outputs
    assert fast.warnings == slow.warnings


def test_the_sdks_functions_are_back_after_a_run() -> None:
    values, secret_keys = stack_values("dev")
    engine.run_program("dev", values, secret_keys)
    assert rpc.serialize_properties is engine._SDK_SERIALIZE_PROPERTIES
    assert rpc.deserialize_properties is engine._SDK_DESERIALIZE_PROPERTIES
    assert rpc.contains_unknowns is engine._SDK_CONTAINS_UNKNOWNS
    assert rpc.translate_output_properties is engine._SDK_TRANSLATE_OUTPUT_PROPERTIES
    assert runtime_resource._resolve_depends_on_urns is engine._SDK_RESOLVE_DEPENDS_ON_URNS
    assert runtime_resource.create_urn is engine._SDK_CREATE_URN
