"""Everyday edits to ``prod``, previewed by the real engine exactly as the offline ``diff`` says, then applied.

For each edit: the stack file is changed as a user would change it; ``aiperf-kueue plan`` of the old and the new file,
compared by the offline diff, says which resources are created, updated, replaced and deleted; ``pulumi preview`` must
announce exactly those; ``pulumi up`` applies them; the preview after it is clean again.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from aiperf_kueue.review.resource_diff import resource_changes
from tests.e2e.conftest import BUILD, JOBSET_MODULE, KUEUE_MODULE, OUT, ROOT, ClusterFactory, Report
from tests.e2e.engine import PROJECT, EngineRun, e2e_config, engine_run
from tests.e2e.stackrun import Plan, plan_stack

STACK = ROOT / "stacks" / "Pulumi.prod.yaml"


@pytest.fixture(scope="module")
def prod(new_cluster: ClusterFactory, binaries: dict[str, str]) -> Iterator[EngineRun]:
    """prod, deployed from empty."""
    cluster = new_cluster("engine-edits", controllers=False)
    config = e2e_config(STACK, KUEUE_MODULE, JOBSET_MODULE)
    with engine_run("prod", STACK, cluster, binaries, BUILD.PULUMI_KUBERNETES, config) as run:
        assert run.up().summary.result == "succeeded"
        yield run
        assert run.controllers.errors == []


def _offline(base: Plan, head: Plan) -> dict[str, list[str]]:
    out: dict[str, set[str]] = {}
    for change in resource_changes(base.resources, head.resources):
        out.setdefault(change.action, set()).add(change.urn)
    return {k: sorted(v) for k, v in sorted(out.items())}


def _edit(run: EngineRun, name: str, change: Callable[[dict[str, Any]], None], report: Report) -> dict[str, Any]:
    base = plan_stack(run.stack_file, OUT / "edits" / f"{name}-base")
    config = copy.deepcopy(run.config)
    change(config)
    head = plan_stack(run.set_config(config), OUT / "edits" / f"{name}-head")
    expected = _offline(base, head)
    preview = run.preview()
    previewed = run.changes()
    started = time.monotonic()
    up = run.up()
    applied = run.changes()
    clean = run.preview(expect_no_changes=True)
    report.checks[f"edit {name}"] = (
        f"offline diff {({k: len(v) for k, v in expected.items()})}, preview {preview.change_summary}, "
        f"up {up.summary.resource_changes} in {time.monotonic() - started:.1f} s, then {clean.change_summary}"
    )
    return {"expected": expected, "previewed": previewed, "applied": applied, "up": up.summary.result}


def test_one_more_node_updates_the_cluster_queues_only(prod: EngineRun, report: Report) -> None:
    def grow(config: dict[str, Any]) -> None:
        pools = config[f"{PROJECT}:inventory"]["pools"]
        pools[1]["nodes"] += 1  # the H100 pool grew

    result = _edit(prod, "one-more-node", grow, report)
    cluster_queues = sorted(u for u in result["expected"].get("update", []) if u.endswith(
        tuple(f"ClusterQueue::queues-cq-{cq}" for cq in ("team-a", "team-b", "research"))
    ))
    assert result["expected"] == {"update": cluster_queues}
    assert len(cluster_queues) == 3
    expected = result["expected"]
    assert (result["previewed"], result["applied"], result["up"]) == (expected, expected, "succeeded")


def test_a_namespace_moved_to_another_team_replaces_its_local_queue(prod: EngineRun, report: Report) -> None:
    def move(config: dict[str, Any]) -> None:
        queues = config[f"{PROJECT}:queues"]["clusterQueues"]
        team_b = next(cq for cq in queues if cq["name"] == "team-b")
        research = next(cq for cq in queues if cq["name"] == "research")
        research["namespaces"].append(team_b["namespaces"].pop())

    result = _edit(prod, "namespace-moved", move, report)
    replaced = result["expected"].get("replace", [])
    assert [u.rsplit("::", 1)[1] for u in replaced if ":LocalQueue::" in u] == ["ns-ml-team-b-lq-aiperf-queue"]
    expected = result["expected"]
    assert (result["previewed"], result["applied"], result["up"]) == (expected, expected, "succeeded")


def test_a_changed_benchmark_is_a_new_run_and_the_earlier_one_stays(prod: EngineRun, report: Report) -> None:
    def names() -> set[str]:
        return {j["metadata"]["name"] for j in prod.cluster.get_json("aiperfjobs", "-n", "bench-team-a")["items"]}

    before = names()

    def change(config: dict[str, Any]) -> None:
        config[f"{PROJECT}:jobs"][0]["spec"]["benchmark"]["phases"][0]["requests"] += 1

    result = _edit(prod, "changed-benchmark", change, report)
    assert [u.rsplit("::", 1)[1] for u in result["expected"].get("replace", [])] == ["jobs-bench-team-a-llama-latency"]
    expected = result["expected"]
    assert (result["previewed"], result["applied"], result["up"]) == (expected, expected, "succeeded")
    after = names()
    assert before < after and len(after - before) == 1  # the earlier run is still there, beside the new one
