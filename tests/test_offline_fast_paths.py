"""The offline engine's and report's fast paths give exactly what the slow ones give."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pulumi.runtime import mocks, rpc
from pulumi.runtime.proto import resource_pb2

from offline import engine, yaml_text

SECRET = {engine.SECRET_SIG: rpc._special_secret_sig}

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
keys = st.text(min_size=1, max_size=8).filter(lambda k: k != engine.SECRET_SIG)


def _with_secrets(leaf: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(leaf, leaf.map(lambda v: {**SECRET, "value": v}))


values = st.recursive(
    _with_secrets(scalars),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=4)),
    max_leaves=20,
)
inputs = st.dictionaries(keys, values, max_size=5)


def _serialize(props: dict[str, Any]) -> Any:
    return asyncio.new_event_loop().run_until_complete(rpc.serialize_properties(props, {}))


def _expected(value: Any) -> Any:
    """What the engine records: the value as given, ``null`` members dropped, numbers as floats."""
    if rpc.is_rpc_secret(value):
        return {**SECRET, "value": _expected(value["value"])}
    if isinstance(value, dict):
        return {k: _expected(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_expected(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _push_up(value: Any, top: bool = True) -> Any:
    """The SDK's deserialiser moves a nested secret up to the top-level property that holds it."""
    if isinstance(value, dict):
        if rpc.is_rpc_secret(value):
            return value
        out = {k: _push_up(v, False) for k, v in value.items()}
        if not top and any(rpc.is_rpc_secret(v) for v in out.values()):
            return rpc.wrap_rpc_secret({k: rpc.unwrap_rpc_secret(v) for k, v in out.items()})
        return out
    if isinstance(value, list):
        items = [_push_up(v, False) for v in value]
        if any(rpc.is_rpc_secret(v) for v in items):
            return rpc.wrap_rpc_secret([rpc.unwrap_rpc_secret(v) for v in items])
        return items
    return value


@settings(max_examples=200, deadline=None)
@given(inputs)
def test_recorded_inputs_are_the_registered_values_with_secrets_in_place(props: dict[str, Any]) -> None:
    struct = _serialize(props)
    recorded = engine._properties(struct)
    assert recorded == _expected(props)
    # Everything else as the SDK's own deserialiser has it.
    assert _push_up(recorded) == rpc.deserialize_properties(struct, keep_unknowns=True)


def _request(obj: Any, name: str = "r") -> Any:
    return resource_pb2.RegisterResourceRequest(type="test:index:Thing", name=name, custom=True, object=obj)


def _monitors() -> tuple[engine._RecordingMonitor, mocks.MockMonitor]:
    recorder = engine._Recorder()
    ours = engine._RecordingMonitor(recorder)
    mocks.set_mocks(recorder, project="p", stack="s", preview=False, monitor=ours)
    return ours, mocks.MockMonitor(engine._Recorder())


def test_the_answer_is_the_sdk_mock_monitors_answer() -> None:
    ours, sdk = _monitors()
    struct = _serialize({"spec": {"a": 1, "b": [True, None, "x"], "c": None}, "kind": "Thing"})
    mine, theirs = ours.RegisterResource(_request(struct)), sdk.RegisterResource(_request(struct))
    assert (mine.urn, mine.id) == (theirs.urn, theirs.id)
    # Null members are dropped on the client's side either way.
    assert rpc.deserialize_properties(mine.object) == rpc.deserialize_properties(theirs.object)
    assert ours.recorder.resources[0]["inputs"] == {"spec": {"a": 1.0, "b": [True, None, "x"]}, "kind": "Thing"}


def test_an_unknown_input_takes_the_sdks_own_path() -> None:
    ours, sdk = _monitors()
    struct = _serialize({"spec": {"a": "x"}})
    struct["spec"]["b"] = rpc.UNKNOWN
    mine, theirs = ours.RegisterResource(_request(struct)), sdk.RegisterResource(_request(struct))
    assert mine.object == theirs.object
    assert "b" not in rpc.deserialize_properties(mine.object)["spec"]
    # Recorded in place, the unknown as the SDK deserialises it.
    spec = ours.recorder.resources[0]["inputs"]["spec"]
    assert spec["a"] == "x" and type(spec["b"]).__name__ == "Unknown"
    engine.close_worker_loops()


def test_full_collections_are_held_back_only_while_the_program_runs() -> None:
    before = gc.get_threshold()
    with engine._young_collections_only():
        assert gc.get_threshold()[:2] == before[:2]
        assert gc.get_threshold()[2] > 10**6
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_plain_exports_are_recognised() -> None:
    assert engine._plain({"a": [1, 2.5, "x", None, True, {"b": []}]})
    assert not engine._plain({"a": (1, 2)})
    assert not engine._plain({1: "x"})
    assert not engine._plain([object()])


# --------------------------------------------------------------------------- YAML

printable = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=100)
tricky = st.sampled_from(
    ["", "-", "- x", "? x", ": x", "#x", "x #y", "x: y", "'", '"', "it's", "true", "yes", "No", "on", "null", "~",
     "1.0", "1e3", "0x1F", "012", "1_000", "2001-12-14", "=", "<<", "*a", "&a", "!t", "%x", "@x", "`x", "[a]",
     "{a}", "a,b", " lead", "trail ", "a  b", "|", ">", "\\", "x\\y", "a" * 130, "word " * 20]
)  # fmt: skip
texts = st.one_of(printable, tricky, st.text(max_size=20))
yaml_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), texts),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(texts, children, max_size=4)),
    max_leaves=30,
)


def _safe_dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


@settings(max_examples=1000, deadline=None)
@given(st.dictionaries(texts, yaml_values, max_size=6))
def test_block_yaml_is_safe_dump_byte_for_byte(doc: dict[str, Any]) -> None:
    assert yaml_text.block_yaml(doc) == _safe_dump(doc)


def test_block_yaml_around_the_folding_column() -> None:
    for depth in range(6):
        for length in range(50, 100):
            text = ("word " * 20)[:length]
            doc: Any = {"key": text, "k": ["x", text, [text]], "n": {"deeper": text, text[:40]: 1}}
            for _ in range(depth):
                doc = {"a": [doc], "b": [[doc]]}
            assert yaml_text.block_yaml(doc) == _safe_dump(doc)


def test_block_yaml_shares_styled_scalars_between_documents() -> None:
    scalars: yaml_text.Scalars = {}
    docs = [{"metadata": {"name": f"q-{i}", "labels": {"app": "yes"}}, "spec": {"n": i, "x": 0.5}} for i in range(3)]
    assert [yaml_text.block_yaml(d, scalars) for d in docs] == [_safe_dump(d) for d in docs]
    assert scalars[(str, "yes")] == "'yes'" and scalars[(str, "q-2")] == "q-2"


def test_block_yaml_leaves_aliases_and_odd_documents_to_pyyaml() -> None:
    shared = {"a": 1}
    for doc in ({"x": shared, "y": shared}, {}, [1, 2], {1: "x"}, {"a": (1, 2)}, {"a": "caf\u00e9", "b": "x\ny"}):
        assert yaml_text.block_yaml(doc) == _safe_dump(doc)


# --------------------------------------------------------------------------- validation, once


def test_the_programs_validation_reuses_plans_once() -> None:
    from aiperf_kueue import stack_plan
    from tests.support import stack_values

    values, _ = stack_values("dev")
    first = stack_plan.plan_values(values, "a.yaml")
    # The program validates the same values (decoded from the engine's JSON) again: same plan, once.
    again, _ = stack_values("dev")
    assert stack_plan.plan_values(again, "b.yaml") is first
    assert stack_plan.plan_values(again, "b.yaml") is not first
    # Different values (here: a type) are planned on their own.
    again["inventory"]["headroom"] = f"{again['inventory']['headroom']}%"
    assert stack_plan.plan_values(again, "c.yaml") is not first
