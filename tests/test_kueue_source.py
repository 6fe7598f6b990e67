"""``kueue.source: manifests``: Kueue from the release's manifests.yaml instead of the Helm chart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from aiperf_kueue.cli.cli import main
from aiperf_kueue.cli.engine import run_program
from aiperf_kueue.cli.report import clean
from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.installs import install_checks
from aiperf_kueue.installs import releases as installs
from aiperf_kueue.plan.stack_plan import plan_stack
from aiperf_kueue.stackfile.loader import parse_config
from tests.support import by_name, committed_run, plan_values, stack_values

URL_0_19_2 = "https://github.com/kubernetes-sigs/kueue/releases/download/v0.19.2/manifests.yaml"
GATE = "kueue-ready"


def _manifests_values(stack: str = "prod", **kueue: Any) -> tuple[dict[str, Any], set[str]]:
    values, secrets = stack_values(stack)
    values["kueue"] = {**values.get("kueue", {}), "source": "manifests", **kueue}
    return values, secrets


@pytest.fixture(scope="module")
def manifests_run() -> dict[str, dict[str, Any]]:
    values, secrets = _manifests_values()
    return by_name(run_program("prod", values, secrets))


def test_the_manifests_are_one_config_file_with_the_pinned_release(manifests_run: dict[str, dict[str, Any]]) -> None:
    record = manifests_run["kueue-manifests"]
    assert record["type"] == "kubernetes:yaml/v2:ConfigFile"
    assert record["custom"] is False  # a remote component: nothing is fetched or rendered under mocks
    assert clean(record["inputs"]) == {"file": URL_0_19_2}
    assert record["parent"] == manifests_run["kueue"]["urn"]
    assert (record["protect"], record["protectsCrds"]) == (False, True)  # its CRDs, as the chart's
    assert record["dependsOn"] == []


def test_the_gate_waits_for_the_manifests_and_guards_every_kueue_object(
    manifests_run: dict[str, dict[str, Any]],
) -> None:
    gate = manifests_run[GATE]
    assert gate["dependsOn"] == [manifests_run["kueue-manifests"]["urn"]]
    kueue_objects = [r for r in manifests_run.values() if r["type"].startswith("kubernetes:kueue.x-k8s.io/")]
    assert len(kueue_objects) == 14
    for r in kueue_objects:
        assert gate["urn"] in r["dependsOn"], r["name"]
    assert gate["urn"] in manifests_run["operator-chart"]["dependsOn"]


def _comparable(resources: dict[str, dict[str, Any]], rename: dict[str, str]) -> dict[str, Any]:
    return {
        name: {
            "type": r["type"],
            "inputs": clean(r["inputs"]) if "__provider" not in r["inputs"] else "(dynamic)",
            "dependsOn": sorted(rename.get(d, d) for d in r["dependsOn"]),
            "parent": r["parent"],
            "protect": r["protect"],
        }
        for name, r in resources.items()
    }


def test_switching_source_replaces_the_chart_by_the_config_file_and_nothing_else(
    manifests_run: dict[str, dict[str, Any]],
) -> None:
    helm = by_name(committed_run("prod"))
    assert sorted(set(helm) - set(manifests_run)) == ["kueue-chart", "kueue-ns"]  # the manifests carry kueue-system
    assert sorted(set(manifests_run) - set(helm)) == ["kueue-manifests"]
    assert (helm["kueue-chart"]["type"], manifests_run["kueue-manifests"]["type"]) == (
        "kubernetes:helm.sh/v4:Chart",
        "kubernetes:yaml/v2:ConfigFile",
    )
    same = set(helm) & set(manifests_run)
    chart_to_file = {helm["kueue-chart"]["urn"]: manifests_run["kueue-manifests"]["urn"]}
    before = _comparable({n: helm[n] for n in same}, chart_to_file)
    after = _comparable({n: manifests_run[n] for n in same}, {})
    assert after == before


def test_the_stack_output_and_charts_say_which_source(manifests_run: dict[str, dict[str, Any]]) -> None:
    values, secrets = _manifests_values()
    run = run_program("prod", values, secrets)
    assert run.outputs["kueue"] == {
        "version": "0.19.2",
        "apiVersion": "v1beta2",
        "source": "manifests",
        "manifests": URL_0_19_2,
    }
    assert sorted(run.outputs["charts"]) == ["jobset", "operator"]
    assert run.warnings == []
    assert committed_run("prod").outputs["kueue"] == {"version": "0.19.2", "apiVersion": "v1beta2", "source": "helm"}


def test_kueue_installed_elsewhere_is_external() -> None:
    values, _ = stack_values("dev")
    values["kueue"] = {"install": False, "source": "manifests"}
    config, plan = plan_values(values)
    assert installs.kueue_install(config, plan.target) == {"source": "external"}


def test_the_url_follows_the_pinned_version() -> None:
    values, _ = _manifests_values("dev", version="0.10.1")
    config, plan = plan_values(values)
    assert installs.kueue_install(config, plan.target) == {
        "source": "manifests",
        "manifests": "https://github.com/kubernetes-sigs/kueue/releases/download/v0.10.1/manifests.yaml",
    }


def test_plan_prints_the_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    values, _ = _manifests_values("dev")
    stack_file = tmp_path / "Pulumi.manifests.yaml"
    stack_file.write_text(yaml.safe_dump({"config": {f"aiperf-kueue:{k}": v for k, v in values.items()}}))
    assert main(["plan", str(stack_file), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert f"\nKueue install: release manifests {URL_0_19_2} (applied server-side)\n" in out
    assert "\n  ├─ kueue-manifests  [ConfigFile]  (CRDs protected)\n  └─ kueue-ready  [" in out
    assert json.loads((tmp_path / "out" / "plan.json").read_text())["kueue"] == {
        "version": "0.19.2",
        "apiVersion": "v1beta2",
        "source": "manifests",
        "manifests": URL_0_19_2,
    }
    assert "kueue" not in yaml.safe_load((tmp_path / "out" / "charts.yaml").read_text())


def test_helm_plan_prints_the_chart_as_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "dev", "--out", str(tmp_path)]) == 0
    assert "\nKueue install: Helm chart oci://registry.k8s.io/kueue/charts/kueue 0.19.2\n" in capsys.readouterr().out


IGNORED = (
    "is ignored with kueue.source: manifests (the release manifests ship Kueue's default manager configuration, "
    "which this program can only generate for the Helm chart); remove it or use source: helm"
)


def test_settings_the_manifests_cannot_honour_are_rejected() -> None:
    values, _ = _manifests_values(
        "prod",
        chart="oci://example.invalid/kueue",
        values={"controllerManager": {"replicas": 2}},
        frameworks=["jobset.x-k8s.io/jobset"],
        manageJobsWithoutQueueName=True,
        fairSharing={},
        waitForPodsReady={},
        namespace="queueing",
        releaseName="kq",
    )
    with pytest.raises(ConfigError) as err:
        plan_stack(parse_config(values, "test.yaml"), "test.yaml")
    assert err.value.lines() == [
        f"test.yaml: aiperf-kueue:kueue.chart: {IGNORED}",
        f"test.yaml: aiperf-kueue:kueue.values: {IGNORED}",
        f"test.yaml: aiperf-kueue:kueue.frameworks: {IGNORED}",
        f"test.yaml: aiperf-kueue:kueue.manageJobsWithoutQueueName: {IGNORED}",
        f"test.yaml: aiperf-kueue:kueue.fairSharing: {IGNORED}",
        f"test.yaml: aiperf-kueue:kueue.waitForPodsReady: {IGNORED}",
        "test.yaml: aiperf-kueue:kueue.namespace: the release manifests install Kueue into kueue-system, got "
        "'queueing'; remove it or use source: helm",
        "test.yaml: aiperf-kueue:kueue.releaseName: the release manifests name Kueue's objects kueue-* (no Helm "
        "release), got 'kq'; remove it or use source: helm",
    ]


def test_the_manifests_defaults_are_accepted_when_spelled_out() -> None:
    values, _ = _manifests_values(
        "prod", manageJobsWithoutQueueName=False, namespace="kueue-system", releaseName="kueue"
    )
    assert plan_stack(parse_config(values, "test.yaml"), "test.yaml").warnings == ()


def test_source_problems_come_with_the_queue_problems() -> None:
    values, _ = _manifests_values("dev", frameworks=["jobset.x-k8s.io/jobset"])
    values["queues"]["clusterQueues"].append({"name": "more", "share": 50})  # 150% of the pool
    with pytest.raises(ConfigError) as err:
        plan_stack(parse_config(values, "test.yaml"), "test.yaml")
    assert [line.split(": ")[1] for line in err.value.lines()] == [
        "aiperf-kueue:kueue.frameworks",
        "aiperf-kueue:queues.clusterQueues[1].share",
    ]


SSA_OFF = "needs server-side apply, but the stack sets kubernetes:enableServerSideApply: false"
KUEUE_NEEDS_SSA = (
    f"{SSA_OFF} (Kueue's workloads CRD exceeds the 256 KiB annotation a client-side apply writes); remove that "
    "setting, or set kueue.install: false where Kueue is managed elsewhere"
)
OPERATOR_NEEDS_SSA = (
    f"{SSA_OFF} (the operator's AIPERF_K8S_* env is set with a DeploymentPatch, which pulumi-kubernetes applies "
    "only server-side); remove that setting, or set operator.install: false"
)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            {"kueue": {"source": "manifests"}},
            [f"kueue.source: {KUEUE_NEEDS_SSA}", f"operator.install: {OPERATOR_NEEDS_SSA}"],
        ),
        ({}, [f"kueue.install: {KUEUE_NEEDS_SSA}", f"operator.install: {OPERATOR_NEEDS_SSA}"]),
        ({"operator": {"install": False}}, [f"kueue.install: {KUEUE_NEEDS_SSA}"]),
        ({"kueue": {"install": False}, "operator": {"install": False}}, []),
    ],
)
def test_client_side_apply_is_refused_at_plan_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: dict[str, Any], expected: list[str]
) -> None:
    document = yaml.safe_load((Path(__file__).parents[1] / "stacks" / "Pulumi.dev.yaml").read_text())
    document["config"]["kubernetes:enableServerSideApply"] = False
    for key, value in config.items():
        document["config"][f"aiperf-kueue:{key}"] = {**(document["config"].get(f"aiperf-kueue:{key}") or {}), **value}
    path = tmp_path / "Pulumi.csa.yaml"
    path.write_text(yaml.safe_dump(document))
    code = main(["plan", str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    if expected:
        assert (code, err) == (2, "".join(f"{path}: aiperf-kueue:{line}\n" for line in expected))
        assert not (tmp_path / "out").exists()
    else:
        assert code == 0


def test_the_provider_setting_is_read_as_the_engine_gives_it() -> None:
    values, _ = stack_values("dev")
    config, _ = plan_values(values)
    assert install_checks.provider_problems(config, {"kubernetes:enableServerSideApply": "true"}) == []
    assert install_checks.provider_problems(config, {}) == []
    assert [
        p.path for p in install_checks.provider_problems(config, {"kubernetes:enableServerSideApply": "false"})
    ] == [
        "kueue.install",
        "operator.install",
    ]


def test_under_pulumi_the_provider_setting_stops_the_program_before_it_registers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The engine passes ``kubernetes:enableServerSideApply`` as the provider's config; the
    program reads it the way the SDK does (here, from the environment) and stops at load."""
    monkeypatch.setenv("PULUMI_CONFIG_KUBERNETES_ENABLESERVERSIDEAPPLY", "false")
    values, secrets = stack_values("dev")
    with pytest.raises(pulumi.RunError) as raised:
        run_program("dev", values, secrets)
    assert str(raised.value) == (
        "invalid stack config:\n"
        f"stacks/Pulumi.dev.yaml: aiperf-kueue:kueue.install: {KUEUE_NEEDS_SSA}\n"
        f"stacks/Pulumi.dev.yaml: aiperf-kueue:operator.install: {OPERATOR_NEEDS_SSA}"
    )
