"""The offline engine: what it records of a registration, and that it stays on the SDK's public API."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

import pulumi.runtime
from hypothesis import given, settings
from hypothesis import strategies as st
from pulumi.runtime import rpc
from pulumi.runtime.proto import resource_pb2

from aiperf_kueue.cli import engine
from tests.support import SECRET_MARK, SECRET_SIG, gc_paused

ROOT = Path(__file__).resolve().parent.parent
SECRET = {SECRET_SIG: SECRET_MARK}

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
keys = st.text(min_size=1, max_size=8).filter(lambda k: k != SECRET_SIG)


def _with_secrets(leaf: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(leaf, leaf.map(lambda v: {**SECRET, "value": v}))


values = st.recursive(
    _with_secrets(scalars),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=4)),
    max_leaves=20,
)
inputs = st.dictionaries(keys, values, max_size=5)


def _serialize(props: dict[str, Any]) -> Any:
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(rpc.serialize_properties(props, {}))
    finally:
        loop.close()


def _expected(value: Any) -> Any:
    """What the engine records: the value as given, ``null`` members dropped, numbers as floats."""
    if isinstance(value, dict) and value.get(SECRET_SIG) == SECRET_MARK:
        return {**SECRET, "value": _expected(value["value"])}
    if isinstance(value, dict):
        return {k: _expected(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_expected(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _monitor() -> engine._RecordingMonitor:
    monitor = engine._RecordingMonitor(engine._Recorder())
    pulumi.runtime.set_mocks(monitor.mocks, project="p", stack="s", preview=False, monitor=monitor)
    return monitor


def _request(obj: Any, name: str = "r") -> Any:
    return resource_pb2.RegisterResourceRequest(type="test:index:Thing", name=name, custom=True, object=obj)


@settings(max_examples=100, deadline=None)
@given(inputs)
def test_recorded_inputs_are_the_registered_values_with_secrets_in_place(props: dict[str, Any]) -> None:
    monitor = _monitor()
    monitor.RegisterResource(_request(_serialize(props)))
    assert monitor.records[-1]["inputs"] == _expected(props)


def test_a_registration_is_recorded_with_its_options_and_answered_by_the_sdk() -> None:
    monitor = _monitor()
    request = resource_pb2.RegisterResourceRequest(
        type="kubernetes:core/v1:Namespace",
        name="ns",
        custom=True,
        parent="urn:pulumi:s::p::aiperf-kueue:index:Thing::t",
        object=_serialize({"metadata": {"name": "bench", "labels": None}, "spec": {"n": 1, "b": [True, None]}}),
        dependencies=["urn:b", "urn:a"],
        protect=True,
        replaceOnChanges=["spec.n"],
    )
    answer = monitor.RegisterResource(request)
    urn = "urn:pulumi:s::p::aiperf-kueue:index:Thing$kubernetes:core/v1:Namespace::ns"
    assert (answer.urn, answer.id) == (urn, "ns-id")
    assert monitor.records == [
        {
            "type": "kubernetes:core/v1:Namespace",
            "name": "ns",
            "urn": answer.urn,
            "custom": True,
            "parent": "urn:pulumi:s::p::aiperf-kueue:index:Thing::t",
            "dependsOn": ["urn:a", "urn:b"],
            "protect": True,
            "retainOnDelete": False,
            "deleteBeforeReplace": False,
            "replaceOnChanges": ["spec.n"],
            "aliases": [],
            "inputs": {"metadata": {"name": "bench"}, "spec": {"n": 1.0, "b": [True, None]}},
        }
    ]


def test_an_unknown_input_is_recorded_as_null() -> None:
    monitor = _monitor()
    struct = _serialize({"spec": {"a": "x"}})
    struct["spec"]["b"] = rpc.UNKNOWN
    monitor.RegisterResource(_request(struct))
    assert monitor.records[-1]["inputs"] == {"spec": {"a": "x", "b": None}}


def test_planning_remembers_nothing_between_calls() -> None:
    from aiperf_kueue.plan import stack_plan
    from tests.support import stack_values

    values, _ = stack_values("dev")
    first = stack_plan.plan_values(values, "a.yaml")
    # The program validates the same values again: planned anew, to an equal plan.
    again, _ = stack_values("dev")
    second = stack_plan.plan_values(again, "a.yaml")
    assert second is not first
    assert second == first


# --------------------------------------------------------------------------- no private names

#: Distributions whose private names product code must not use (``_x``, but not ``__x__``).
GUARDED = ("pulumi", "pulumi_kubernetes", "pulumi_policy", "google", "dill", "kubernetes")


def _product_files() -> list[Path]:
    files = [ROOT / "__main__.py", *sorted((ROOT / "components").glob("*.py"))]
    files += sorted((ROOT / "aiperf_kueue").rglob("*.py"))
    return [f for f in files if "venv" not in f.parts]


def _private(name: str) -> bool:
    return any(part.startswith("_") and not (part.startswith("__") and part.endswith("__")) for part in name.split("."))


def private_names(path: Path) -> list[str]:
    """``module.name`` of every private name of a guarded distribution ``path`` imports or reads."""
    with gc_paused():
        tree = ast.parse(path.read_text(), str(path))
    guarded_aliases: set[str] = set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in GUARDED:
                    guarded_aliases.add(alias.asname or alias.name.split(".")[0])
                    if _private(alias.name):
                        found.append(alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in GUARDED:
            for alias in node.names:
                guarded_aliases.add(alias.asname or alias.name)
                if _private(node.module) or _private(alias.name):
                    found.append(f"{node.module}.{alias.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in guarded_aliases:
                found.append(f"{ast.unparse(node)}")
    return found


def test_no_product_module_uses_a_private_name_of_a_dependency() -> None:
    assert {str(f.relative_to(ROOT)): private_names(f) for f in _product_files() if private_names(f)} == {}


#: The Kubernetes client's public packages: what ``kubernetes.config`` and ``kubernetes.client`` export.
KUBERNETES_PUBLIC = ("kubernetes", "kubernetes.client", "kubernetes.config")


def test_product_code_reaches_the_kubernetes_client_only_through_its_public_packages() -> None:
    # Its loader's modules (kube_config, incluster_config) have no underscore, and are internals still.
    found: dict[str, list[str]] = {}
    for path in _product_files():
        with gc_paused():
            tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            modules += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            inner = [m for m in modules if m.startswith("kubernetes.") and m not in KUBERNETES_PUBLIC]
            if inner:
                found.setdefault(str(path.relative_to(ROOT)), []).extend(inner)
    assert found == {}


def test_the_private_name_check_finds_them(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from pulumi.runtime import rpc, _depends_on\n"
        "from pulumi_kubernetes import _utilities\n"
        "from google.protobuf.internal import well_known_types as wkt\n"
        "import pulumi.runtime.settings as s\n"
        "x = rpc._special_sig_key\n"
        "y = wkt._SetStructValue\n"
        "z = s.ROOT\n"
        "ok = rpc.__name__\n"
    )
    assert private_names(sample) == [
        "pulumi.runtime._depends_on",
        "pulumi_kubernetes._utilities",
        "rpc._special_sig_key",
        "wkt._SetStructValue",
    ]
