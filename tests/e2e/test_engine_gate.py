"""The readiness gate on the real engine: it waits for Kueue's webhook, waits again when Kueue is reconfigured, and
state written by the provider class's old module path still deletes.

The harness reports Kueue's pod Ready at once, so the chart's Deployment is Ready (and pulumi-kubernetes' await of it
ends), but holds Kueue's controller back until the engine has started creating the gate: the webhook refuses
connections, as a just-started Kueue's does. The gate's create must last until Kueue serves, and everything that
depends on it (the queues) must come after.
"""

from __future__ import annotations

import base64
import copy
import json
import pickletools
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import BUILD, JOBSET_MODULE, KUEUE_MODULE, ROOT, ClusterFactory, Report
from tests.e2e.engine import PROJECT, EngineRun, e2e_config, engine_run

STACK = ROOT / "stacks" / "Pulumi.dev.yaml"
GATE_TYPE = "pulumi-python:dynamic/aiperf-kueue:KueueReadinessGate"
#: A gate's pickled provider as the program wrote it before the class moved to aiperf_kueue.providers.readiness
#: (tests/test_provider_state.py pins the same bytes).
OLD_STATE_PROVIDER = "gASVNgAAAAAAAACMFGNvbXBvbmVudHMucmVhZGluZXNzlIwWS3VldWVSZWFkaW5lc3NQcm92aWRlcpSTlCmBlC4="


@pytest.fixture(scope="module")
def gated(new_cluster: ClusterFactory, binaries: dict[str, str], report: Report) -> Iterator[EngineRun]:
    """dev deployed from empty, Kueue's controller started only once the gate's create has begun."""
    cluster = new_cluster("engine-gate", controllers=False)
    config = e2e_config(STACK, KUEUE_MODULE, JOBSET_MODULE)
    hold = threading.Event()
    provider = BUILD.PULUMI_KUBERNETES
    held = {"delay_start": {"kueue": hold}, "ready_early": frozenset({"kueue"})}
    with engine_run("gate", STACK, cluster, binaries, provider, config, **held) as run:  # type: ignore[arg-type]

        def release(event: dict[str, Any]) -> None:
            if event["type"] == GATE_TYPE and event["op"] == "create":
                hold.set()

        run.on_event = release
        assert run.up().summary.result == "succeeded"
        run.on_event = None
        yield run
        assert run.controllers.errors == []


def _at(run: EngineRun, op: str, urn_part: str) -> float:
    return float(min(e["at"] for e in run.events if e["op"] == op and urn_part in e["urn"]))


def test_the_gate_is_created_only_after_kueue_serves(gated: EngineRun, report: Report) -> None:
    kueue = gated.controllers.by_name("kueue")
    gate_started = _at(gated, "create", "KueueReadinessGate::kueue-ready")
    gate_done = _at(gated, "outputs", "KueueReadinessGate::kueue-ready")
    first_queue = _at(gated, "create", ":ClusterQueue::")
    assert kueue.started_at is not None and kueue.serving_at is not None
    # The watcher notices the webhook serving up to a pass late, so the gate may finish before serving_at. What
    # it saw before is exact: a probe that found the port closed began at refused_at, after Kueue's start.
    not_serving = kueue.refused_at if kueue.refused_at is not None else kueue.started_at
    assert gate_started < kueue.started_at <= not_serving < gate_done < first_queue
    report.checks["gate waits"] = (
        f"gate create began, Kueue started {kueue.started_at - gate_started:.1f} s later, its webhook still "
        f"refused {not_serving - kueue.started_at:.1f} s after that; gate done {gate_done - not_serving:.1f} s "
        "later; queues only then"
    )


def _reconfigure(run: EngineRun, manage: bool) -> dict[str, list[str]]:
    config = copy.deepcopy(run.config)
    config[f"{PROJECT}:kueue"] = {**config[f"{PROJECT}:kueue"], "manageJobsWithoutQueueName": manage}
    run.set_config(config)
    assert run.up().summary.result == "succeeded"
    return run.changes()


def test_a_reconfigured_kueue_is_waited_for_again(gated: EngineRun, report: Report) -> None:
    kueue = gated.controllers.by_name("kueue")
    starts = kueue.starts
    changes = _reconfigure(gated, True)
    assert [u.rsplit("::", 1)[1] for u in changes.get("replace", []) if GATE_TYPE in u] == ["kueue-ready"]
    # Kueue runs the new configuration: restarted (its pod rolled, or its config changed under it).
    assert kueue.starts > starts
    assert "manageJobsWithoutQueueName: true" in (kueue.config_text or "")
    assert set(gated.preview(expect_no_changes=True).change_summary) == {"same"}
    report.checks["gate replaced"] = "manageJobsWithoutQueueName changed: gate replaced, Kueue restarted, waited again"


def _provider_blobs(run: EngineRun) -> list[str]:
    gate = next(r for r in run.state() if r["type"] == GATE_TYPE)
    return [gate[side]["__provider"] for side in ("inputs", "outputs") if "__provider" in (gate.get(side) or {})]


def test_a_gate_written_by_the_old_module_path_still_deletes(gated: EngineRun, report: Report) -> None:
    deployment = gated.engine.export(gated.stack)
    for resource in deployment["resources"]:
        if resource["type"] == GATE_TYPE:
            for side in ("inputs", "outputs"):
                if "__provider" in (resource.get(side) or {}):
                    resource[side]["__provider"] = OLD_STATE_PROVIDER
    state_file = gated.engine.dir / "old-provider-state.json"
    state_file.write_text(json.dumps({"version": 3, "deployment": deployment}))
    gated.engine.cli("stack", "import", "--file", str(state_file), "--stack", "gate", cwd=gated.work)
    assert set(_provider_blobs(gated)) == {OLD_STATE_PROVIDER}
    # Replacing the gate deletes the old one through the provider unpickled from state (the old path).
    changes = _reconfigure(gated, False)
    assert [u.rsplit("::", 1)[1] for u in changes.get("replace", []) if GATE_TYPE in u] == ["kueue-ready"]
    names = {
        str(arg)
        for blob in _provider_blobs(gated)
        for op, arg, _ in pickletools.genops(base64.b64decode(blob))
        if op.name == "SHORT_BINUNICODE"
    }
    assert "aiperf_kueue.providers.readiness" in names
    report.checks["old provider path"] = "gate pickled as components.readiness replaced and deleted by the engine"
