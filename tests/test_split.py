"""``aiperf-kueue split``: the ``pulumi state move`` that turns a live single stack into a platform and a fleet stack
without an API call (the real engine runs it in ``tests/e2e/test_engine_split.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiperf_kueue.cli import cli
from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.review.split import LiveResource, live_resources, split_moves, urn_tail
from tests.support import stack_values

LIVE = "urn:pulumi:dev::aiperf-kueue::"
CHART = f"{LIVE}aiperf-kueue:index:KueueInstall$kubernetes:helm.sh/v4:Chart::kueue-chart"
#: Two objects the Kueue chart renders, and one of theirs: no offline plan lists them, the state does.
CHART_CHILDREN = [
    {
        "urn": f"{LIVE}aiperf-kueue:index:KueueInstall$kubernetes:helm.sh/v4:Chart"
        "$kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition::clusterqueues.kueue.x-k8s.io",
        "type": "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition",
        "parent": CHART,
    },
    {
        "urn": f"{LIVE}aiperf-kueue:index:KueueInstall$kubernetes:helm.sh/v4:Chart"
        "$kubernetes:apps/v1:Deployment::kueue-system/kueue-controller-manager",
        "type": "kubernetes:apps/v1:Deployment",
        "parent": CHART,
    },
]


def _write(path: Path, values: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({"config": {f"aiperf-kueue:{k}": v for k, v in values.items()}}, sort_keys=False))
    return path


def _platform(tmp_path: Path) -> Path:
    """dev's installs only: the new platform stack ``dev-platform``."""
    values, _ = stack_values("dev")
    kept = {k: v for k, v in values.items() if k not in ("queues", "jobs", "sweeps", "priorityClasses")}
    kept["operator"] = {k: v for k, v in kept.get("operator", {}).items() if k != "defaultPriorityClass"}
    return _write(tmp_path / "Pulumi.dev-platform.yaml", kept)


def _fleet(tmp_path: Path, name: str = "dev", **changes: Any) -> Path:
    """dev's stack file edited to install nothing (as stack ``name``): the live stack, which becomes the fleet
    stack."""
    values, _ = stack_values("dev")
    for key in ("kueue", "jobset", "operator"):
        values[key] = {**values.get(key, {}), "install": False}
    values.update(changes)
    (tmp_path / "fleet").mkdir(exist_ok=True)
    return _write(tmp_path / "fleet" / f"Pulumi.{name}.yaml", values)


def _live_export(tmp_path: Path) -> Path:
    """``pulumi stack export`` of dev as one stack: what its plan registers, the chart's objects, the root stack."""
    records = cli.compute_plan(Path("stacks/Pulumi.dev.yaml")).records
    resources = [{"urn": f"{LIVE}pulumi:pulumi:Stack::aiperf-kueue-dev", "type": "pulumi:pulumi:Stack"}]
    resources += [{"urn": r["urn"], "type": r["type"], "parent": r["parent"]} for r in records]
    resources += CHART_CHILDREN
    path = tmp_path / "dev-export.json"
    path.write_text(json.dumps({"version": 3, "deployment": {"resources": resources}}))
    return path


def _split(tmp_path: Path, fleet: Path | None = None) -> Any:
    export = _live_export(tmp_path)
    platform, fleet = _platform(tmp_path), fleet or _fleet(tmp_path)
    return split_moves(
        live_resources(json.loads(export.read_text()), "export"),
        (str(platform), cli.compute_plan(platform).records),
        (str(fleet), cli.compute_plan(fleet).records),
        "export",
    )


def test_every_install_and_each_object_below_it_moves_and_nothing_else(tmp_path: Path) -> None:
    result = _split(tmp_path)
    assert (result.source, result.dest) == ("dev", "dev-platform")
    assert sorted(urn_tail(u) for u in result.moves) == [
        "aiperf-kueue:index:AIPerfOperator$kubernetes:apps/v1:DeploymentPatch::operator-env",
        "aiperf-kueue:index:AIPerfOperator$kubernetes:core/v1:Namespace::operator-ns",
        "aiperf-kueue:index:AIPerfOperator$kubernetes:helm.sh/v4:Chart::operator-chart",
        "aiperf-kueue:index:AIPerfOperator::operator",
        "aiperf-kueue:index:JobSetInstall$kubernetes:core/v1:Namespace::jobset-ns",
        "aiperf-kueue:index:JobSetInstall$kubernetes:helm.sh/v4:Chart::jobset-chart",
        "aiperf-kueue:index:JobSetInstall::jobset",
        "aiperf-kueue:index:KueueInstall$kubernetes:core/v1:Namespace::kueue-ns",
        "aiperf-kueue:index:KueueInstall$kubernetes:helm.sh/v4:Chart"
        "$kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition::clusterqueues.kueue.x-k8s.io",
        "aiperf-kueue:index:KueueInstall$kubernetes:helm.sh/v4:Chart"
        "$kubernetes:apps/v1:Deployment::kueue-system/kueue-controller-manager",
        "aiperf-kueue:index:KueueInstall$kubernetes:helm.sh/v4:Chart::kueue-chart",
        "aiperf-kueue:index:KueueInstall$pulumi-python:dynamic/aiperf-kueue:KueueReadinessGate::kueue-ready",
        "aiperf-kueue:index:KueueInstall::kueue",
    ]
    # The fleet stack declares the Kueue component and its gate too: created again, and neither holds an object.
    assert (result.recreated, result.dropped, result.created) == (("kueue", "kueue-ready"), (), ())
    assert result.destructive() == []


def test_the_command_quotes_each_urn_for_the_shell(tmp_path: Path) -> None:
    lines = _split(tmp_path).command().splitlines()
    assert lines[0] == "pulumi state move --source dev --dest dev-platform --yes \\"
    assert "  urn:pulumi:dev::aiperf-kueue::aiperf-kueue:index:KueueInstall::kueue \\" in lines
    assert (
        "  'urn:pulumi:dev::aiperf-kueue::aiperf-kueue:index:KueueInstall$kubernetes:helm.sh/v4:Chart::kueue-chart' \\"
        in lines
    )
    assert len(lines) == 1 + 13 and not lines[-1].endswith("\\")


def test_a_fleet_stack_that_drops_a_namespace_is_destructive(tmp_path: Path) -> None:
    values, _ = stack_values("dev")
    queues = values["queues"]
    cq = queues["clusterQueues"][0]
    fleet = _fleet(
        tmp_path,
        queues={**queues, "clusterQueues": [{**cq, "namespaces": [{"name": "other-benchmarks"}]}]},
        jobs=[],
    )
    assert _split(tmp_path, fleet).destructive() == [
        "the fleet stack dev no longer declares AIPerfJob jobs-aiperf-benchmarks-smoke: its next pulumi up deletes it",
        "the fleet stack dev no longer declares Namespace ns-aiperf-benchmarks-ns: its next pulumi up deletes it",
        "the fleet stack dev no longer declares LocalQueue ns-aiperf-benchmarks-lq-aiperf-queue: its next pulumi up "
        "deletes it",
        "the fleet stack dev no longer declares RoleBinding ns-aiperf-benchmarks-rolebinding: its next pulumi up "
        "deletes it",
    ]


def test_an_earlier_type_of_a_fleet_resource_is_kept_by_its_alias() -> None:
    earlier = LiveResource(
        f"{LIVE}aiperf-kueue:index:KueueQueues$kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue::q", "x", None
    )
    fleet = [
        {
            "urn": "urn:pulumi:dev::aiperf-kueue::aiperf-kueue:index:KueueQueues$kubernetes:kueue.x-k8s.io/v1beta2:"
            "ClusterQueue::q",
            "type": "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue",
            "aliases": [{"type": "kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue"}],
        }
    ]
    chart = LiveResource(f"{LIVE}aiperf-kueue:index:KueueInstall::kueue", "aiperf-kueue:index:KueueInstall", None)
    platform = [
        {
            "urn": "urn:pulumi:p::aiperf-kueue::aiperf-kueue:index:KueueInstall::kueue",
            "type": "aiperf-kueue:index:KueueInstall",
        }
    ]
    result = split_moves([chart, earlier], ("p.yaml", platform), ("dev.yaml", fleet), "export")
    assert (result.moves, result.dropped) == ((chart.urn,), ())


def test_a_fleet_stack_that_still_installs_is_refused(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, jobset={"install": True})
    with pytest.raises(
        ConfigError,
        match=r"declares jobset-ns, jobset-chart, which .*Pulumi.dev-platform.yaml "
        r"declares too: the fleet stack installs nothing",
    ):
        _split(tmp_path, fleet)


def test_the_fleet_stack_must_be_the_live_one(tmp_path: Path) -> None:
    message = r"Pulumi.staging.yaml: is stack staging, but the export is of stack dev: the fleet stack is the live"
    with pytest.raises(ConfigError, match=message):
        _split(tmp_path, _fleet(tmp_path, "staging"))


def test_a_stack_already_split_has_nothing_to_move(tmp_path: Path) -> None:
    platform, fleet = _platform(tmp_path), _fleet(tmp_path)
    only_queues = [
        LiveResource(f"{LIVE}aiperf-kueue:index:KueueQueues::queues", "aiperf-kueue:index:KueueQueues", None)
    ]
    with pytest.raises(
        ConfigError,
        match=r"^export: stack dev holds nothing .*Pulumi.dev-platform.yaml declares: "
        r"nothing to move \(already split",
    ):
        split_moves(
            only_queues,
            (str(platform), cli.compute_plan(platform).records),
            (str(fleet), cli.compute_plan(fleet).records),
            "export",
        )


@pytest.mark.parametrize(
    ("export", "message"),
    [
        (
            {"version": 3},
            "export: not a stack export: no deployment.resources list; write one with `pulumi stack export",
        ),
        ([], "export: not a stack export: no deployment.resources list"),
        ({"deployment": {"resources": ["x"]}}, "export: deployment.resources[0]: not a resource"),
        (
            {"resources": [{"urn": "arn:aws:x", "type": "t"}]},
            "export: deployment.resources[0].urn: arn:aws:x is not a Pulumi URN",
        ),
        (
            {"resources": [{"urn": f"{LIVE}t::n", "type": 3}]},
            "export: deployment.resources[0].type: missing or not a string",
        ),
        (
            {"resources": [{"urn": f"{LIVE}t::n", "type": "t", "parent": 1}]},
            "export: deployment.resources[0].parent: not a string",
        ),
    ],
)
def test_a_malformed_export_is_one_line(export: Any, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        live_resources(export, "export")
    assert raised.value.lines()[0].startswith(message)


def test_an_export_of_two_stacks_or_another_project_is_refused() -> None:
    two = [LiveResource(f"{LIVE}t::a", "t", None), LiveResource("urn:pulumi:prod::aiperf-kueue::t::b", "t", None)]
    with pytest.raises(ConfigError, match="the export must be of one stack; its URNs name: dev, prod"):
        split_moves(two, ("p", []), ("f", []), "export")
    other = [LiveResource("urn:pulumi:dev::other::t::a", "t", None)]
    with pytest.raises(ConfigError, match="a stack of project other, not of aiperf-kueue"):
        split_moves(other, ("p", []), ("f", []), "export")


def test_a_parent_cycle_in_a_hand_edited_export_ends() -> None:
    a, b = f"{LIVE}t::a", f"{LIVE}t::b"
    cycle = [LiveResource(a, "t", b), LiveResource(b, "t", a)]
    with pytest.raises(ConfigError, match="holds nothing p declares"):
        split_moves(cycle, ("p", [{"urn": "urn:pulumi:p::aiperf-kueue::t::c", "type": "t"}]), ("f", []), "export")


def test_the_command_line_prints_the_move_and_says_what_each_up_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export, platform, fleet = _live_export(tmp_path), _platform(tmp_path), _fleet(tmp_path)
    assert cli.main(["split", str(platform), str(fleet), "--state", str(export)]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[:2] == [
        "# aiperf-kueue split: 13 resources of stack dev to stack dev-platform, state only (no API call)",
        "pulumi state move --source dev --dest dev-platform --yes \\",
    ]
    assert err.splitlines() == [
        "Then: pulumi up --stack dev-platform (nothing to change), then pulumi up --stack dev.",
        "dev's next up creates again kueue, kueue-ready: moved, and declared by both stacks; no Kubernetes object "
        "(components and the readiness gate)",
    ]


def test_bad_input_to_the_command_line_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "export.json"
    bad.write_text("{not json")
    assert cli.main(["split", str(_platform(tmp_path)), str(_fleet(tmp_path)), "--state", str(bad)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"--state {bad}: not JSON: Expecting property name enclosed in double quotes at line 1, column 2\n"
    assert cli.main(["split", "no-such-stack", "dev", "--state", str(bad)]) == 2
    assert (
        capsys.readouterr().err
        == "stacks/Pulumi.no-such-stack.yaml: no stack 'no-such-stack'; stacks in stacks/: dev, prod\n"
    )
