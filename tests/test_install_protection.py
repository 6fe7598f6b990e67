"""Nothing lost: the JobSet and operator charts keep their CRDs and the results PVC.

helm.v4.Chart registers its rendered objects as its own children, which no mock renders, and
the mock monitor runs no transform (pulumi NOTES §2, §3). So the transforms are tested as the
plain functions they are, and the program is checked to hand them to the chart registrations.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from aiperf_kueue.cli import engine
from aiperf_kueue.cli.engine import run_program
from components.installs import (
    CRD_TYPE,
    PVC_TYPE,
    SECRET_TYPE,
    SERVICE_TYPE,
    ChartTransform,
    chart_transforms,
    leave_cert_data,
    protect_crds,
    retain_volumes,
    skip_service_await,
)
from tests.support import by_name, committed_run, stack_values

DEPLOYMENT_TYPE = "kubernetes:apps/v1:Deployment"


def _args(type_: str, **opts: Any) -> pulumi.ResourceTransformArgs:
    props = {"metadata": {"name": "aiperfjobs.aiperf.nvidia.com"}}
    return pulumi.ResourceTransformArgs(True, type_, "operator-chart:aiperfjobs", props, pulumi.ResourceOptions(**opts))


def test_crds_are_protected_and_keep_their_other_options() -> None:
    args = _args(CRD_TYPE, ignore_changes=["spec.conversion"])
    result = protect_crds(args)
    assert result is not None
    assert result.props is args.props
    assert (result.opts.protect, result.opts.retain_on_delete, result.opts.ignore_changes) == (
        True,
        None,
        ["spec.conversion"],
    )


def test_pvcs_are_retained_not_protected() -> None:
    result = retain_volumes(_args(PVC_TYPE))
    assert result is not None
    assert (result.opts.retain_on_delete, result.opts.protect) == (True, None)


def test_webhook_cert_secrets_leave_their_data_to_the_controller() -> None:
    secret = pulumi.ResourceTransformArgs(
        True, SECRET_TYPE, "jobset-chart:jobset-system/jobset-webhook-server-cert", {}, pulumi.ResourceOptions()
    )
    result = leave_cert_data(secret)
    assert result is not None
    assert (result.opts.ignore_changes, result.opts.protect) == (["data"], None)
    other = pulumi.ResourceTransformArgs(
        True, SECRET_TYPE, "operator-chart:aiperf-system/creds", {}, pulumi.ResourceOptions()
    )
    assert leave_cert_data(other) is None
    assert leave_cert_data(_args(CRD_TYPE)) is None


def test_chart_services_are_not_awaited_and_keep_their_annotations_and_options() -> None:
    props: dict[str, Any] = {
        "metadata": {"name": "kueue-webhook-service", "annotations": {"a": "b"}}, "spec": {"ports": []}
    }
    opts = pulumi.ResourceOptions(ignore_changes=["spec.clusterIP"])
    name = "kueue-chart:kueue-system/kueue-webhook-service"
    args = pulumi.ResourceTransformArgs(True, SERVICE_TYPE, name, props, opts)
    result = skip_service_await(args)
    assert result is not None
    assert result.props == {
        "metadata": {
            "name": "kueue-webhook-service",
            "annotations": {"a": "b", "pulumi.com/skipAwait": "true"},
        },
        "spec": {"ports": []},
    }
    assert result.opts is opts
    # The chart's own props are not changed in place.
    assert props["metadata"]["annotations"] == {"a": "b"}
    bare = pulumi.ResourceTransformArgs(
        True, SERVICE_TYPE, "jobset-chart:x", {"metadata": {"name": "x"}}, pulumi.ResourceOptions()
    )
    result = skip_service_await(bare)
    assert result is not None
    assert result.props["metadata"] == {"name": "x", "annotations": {"pulumi.com/skipAwait": "true"}}
    assert skip_service_await(_args(DEPLOYMENT_TYPE)) is None
    assert skip_service_await(_args(CRD_TYPE)) is None


@pytest.mark.parametrize("type_", [DEPLOYMENT_TYPE, "kubernetes:core/v1:Service", "kubernetes:core/v1:Namespace"])
def test_other_children_are_left_alone(type_: str) -> None:
    assert protect_crds(_args(type_)) is None
    assert retain_volumes(_args(type_)) is None
    # Each transform minds its own kind only.
    assert protect_crds(_args(PVC_TYPE)) is None
    assert retain_volumes(_args(CRD_TYPE)) is None


def _transforms(monkeypatch: pytest.MonkeyPatch, values: dict[str, Any], secrets: set[str]) -> dict[str, list[Any]]:
    """The transforms each registration carries (``request.transforms``, resolved to the functions)."""
    seen: dict[str, list[Any]] = {}
    new_resource = engine._Recorder.new_resource

    def recording(self: Any, args: Any) -> Any:
        # Each chart carries one ChartTransform; its steps are the transforms it applies, in order.
        seen[args.name] = [step for t in args.transforms for step in getattr(t, "steps", (t,))]
        return new_resource(self, args)

    monkeypatch.setattr(engine._Recorder, "new_resource", recording)
    run_program("prod", values, secrets)
    return seen


def test_every_chart_carries_the_transforms(monkeypatch: pytest.MonkeyPatch) -> None:
    values, secrets = stack_values("prod")
    seen = _transforms(monkeypatch, values, secrets)
    assert seen["operator-chart"] == [retain_volumes, leave_cert_data, skip_service_await, protect_crds]
    assert seen["jobset-chart"] == [retain_volumes, leave_cert_data, skip_service_await, protect_crds]
    # Kueue's too: its CRDs protected, not the whole chart (protect would reach every object it renders, and a
    # changed manager config replaces the chart's ConfigMap: `pulumi up` would refuse).
    assert seen["kueue-chart"] == [retain_volumes, leave_cert_data, skip_service_await, protect_crds]


def test_protect_crds_false_keeps_only_the_volumes(monkeypatch: pytest.MonkeyPatch) -> None:
    values, secrets = stack_values("prod")
    values["operator"] = {**values["operator"], "protectCrds": False}
    values["jobset"] = {"protectCrds": False}
    seen = _transforms(monkeypatch, values, secrets)
    assert seen["operator-chart"] == [retain_volumes, leave_cert_data, skip_service_await]
    assert seen["jobset-chart"] == [retain_volumes, leave_cert_data, skip_service_await]


def test_the_operator_namespace_that_holds_the_results_pvc_is_retained() -> None:
    resources = by_name(committed_run("prod"))
    assert (resources["operator-ns"]["retainOnDelete"], resources["operator-ns"]["protect"]) == (True, False)
    assert resources["jobset-ns"]["retainOnDelete"] is False


def test_the_offline_engine_asks_a_charts_transforms_whether_its_crds_are_protected() -> None:
    # No component says so in its outputs: the engine applies the chart's own transforms to a CRD.
    assert engine.protects_crds([retain_volumes, protect_crds, leave_cert_data]) is True
    assert engine.protects_crds([retain_volumes, leave_cert_data]) is False
    assert engine.protects_crds([]) is False
    values, secrets = stack_values("prod")
    values["jobset"] = {"protectCrds": False}
    charts = {
        r["name"]: r.get("protectsCrds", False)
        for r in run_program("prod", values, secrets).resources
        if r["type"] == "kubernetes:helm.sh/v4:Chart"
    }
    assert charts == {"kueue-chart": True, "jobset-chart": False, "operator-chart": True}


def test_a_chart_carries_one_transform_that_applies_each_in_order() -> None:
    # One callback per child instead of four: the engine hands each transform the child's whole inputs.
    (keep_and_protect,) = chart_transforms(True)
    (keep,) = chart_transforms(False)
    assert isinstance(keep_and_protect, ChartTransform)
    assert isinstance(keep, ChartTransform)
    crd = keep_and_protect(_args(CRD_TYPE, ignore_changes=["spec.conversion"]))
    assert crd is not None
    assert (crd.opts.protect, crd.opts.ignore_changes) == (True, ["spec.conversion"])
    assert keep(_args(CRD_TYPE)) is None
    volume = keep(_args(PVC_TYPE))
    assert volume is not None
    assert (volume.opts.retain_on_delete, volume.opts.protect) == (True, None)
    service = keep_and_protect(_args(SERVICE_TYPE))
    assert service is not None
    metadata = service.props["metadata"]
    assert isinstance(metadata, dict)
    assert metadata["annotations"] == {"pulumi.com/skipAwait": "true"}
    assert keep_and_protect(_args(DEPLOYMENT_TYPE)) is None
    # The same two instances for every chart: a stack registers at most two transform callbacks.
    assert chart_transforms(True) == [keep_and_protect]
    assert chart_transforms(True)[0] is keep_and_protect
