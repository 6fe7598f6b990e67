"""The readiness provider as stack state: where its pickle points, and that old and new pickles load.

Pulumi stores the dynamic provider, pickled by dill, in the state of every stack (the gate's
``__provider`` input) and unpickles it in a separate provider process on every later ``up``,
``refresh`` and ``destroy``. The pickle refers to the class by module and name, so those are a
contract with every existing stack (see :mod:`aiperf_kueue.providers.readiness`).
"""

from __future__ import annotations

import base64
import json
import pickletools
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pulumi.dynamic.dynamic import serialize_provider

import components.readiness
from aiperf_kueue.cli import engine
from aiperf_kueue.providers import readiness
from tests.support import stack_values

#: The ``__provider`` of a gate created before the class moved (``components.readiness``): what
#: the state of such a stack holds, byte for byte (pulumi 3.272.0, dill 0.4).
OLD_STATE_PROVIDER = "gASVNgAAAAAAAACMFGNvbXBvbmVudHMucmVhZGluZXNzlIwWS3VldWVSZWFkaW5lc3NQcm92aWRlcpSTlCmBlC4="

#: Loads a pickled provider as the provider process does (a fresh interpreter, not in the
#: repository), and asks it for a diff: what ``pulumi up`` does with a stack's gate first.
LOAD = """
import base64, json, sys
import dill
provider = dill.loads(base64.b64decode(sys.argv[1]))
diff = provider.diff("id", {"kueueVersion": "0.19.2"}, {"kueueVersion": "0.19.3"})
print(json.dumps([type(provider).__module__, type(provider).__qualname__, diff.replaces]))
"""


def globals_named(blob: str) -> list[str]:
    """The strings a pickle names (module and class of what it refers to)."""
    return [str(arg) for op, arg, _ in pickletools.genops(base64.b64decode(blob)) if op.name == "SHORT_BINUNICODE"]


def load_in_a_fresh_interpreter(blob: str, cwd: Path) -> Any:
    done = subprocess.run(
        [sys.executable, "-c", LOAD, blob], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    assert (done.returncode, done.stderr) == (0, "")
    return json.loads(done.stdout)


def test_the_provider_class_is_pinned() -> None:
    assert (readiness.KueueReadinessProvider.__module__, readiness.KueueReadinessProvider.__qualname__) == (
        "aiperf_kueue.providers.readiness",
        "KueueReadinessProvider",
    )


def test_the_program_pickles_the_provider_by_that_name() -> None:
    values, secret_keys = stack_values("dev")
    run = engine.run_program("dev", values, secret_keys)
    (gate,) = [r for r in run.resources if r["type"] == "pulumi-python:dynamic/aiperf-kueue:KueueReadinessGate"]
    assert globals_named(gate["inputs"]["__provider"]) == ["aiperf_kueue.providers.readiness", "KueueReadinessProvider"]


def test_a_new_pickle_loads_in_a_fresh_interpreter(tmp_path: Path) -> None:
    blob = serialize_provider(readiness.KueueReadinessProvider())
    assert load_in_a_fresh_interpreter(blob, tmp_path) == [
        "aiperf_kueue.providers.readiness",
        "KueueReadinessProvider",
        ["kueueVersion"],
    ]


def test_a_pickle_from_before_the_move_still_loads(tmp_path: Path) -> None:
    assert globals_named(OLD_STATE_PROVIDER) == ["components.readiness", "KueueReadinessProvider"]
    assert components.readiness.KueueReadinessProvider is readiness.KueueReadinessProvider
    assert load_in_a_fresh_interpreter(OLD_STATE_PROVIDER, tmp_path) == [
        "aiperf_kueue.providers.readiness",
        "KueueReadinessProvider",
        ["kueueVersion"],
    ]


@pytest.mark.parametrize("blob", [OLD_STATE_PROVIDER])
def test_the_old_pickle_is_what_serialising_at_the_old_path_gives(blob: str) -> None:
    # The literal above is no guess: serialising a class published under the old module name
    # gives exactly it.
    class Provider(readiness.KueueReadinessProvider):
        pass

    Provider.__module__, Provider.__qualname__ = "components.readiness", "KueueReadinessProvider"
    saved = components.readiness.KueueReadinessProvider
    components.readiness.KueueReadinessProvider = Provider  # type: ignore[misc]
    try:
        assert serialize_provider(Provider()) == blob
    finally:
        components.readiness.KueueReadinessProvider = saved  # type: ignore[misc]
