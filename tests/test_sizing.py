"""The operator settings a stack pins: the release's defaults, ``operator.sizing``, an external
operator's declared env, and the env patch that makes the operator use them.

The figures are AIPerf 0.13.0's (``aiperf/kubernetes/environment.py`` of the wheel); the oracle
tests run that release with exactly this env.
"""

from __future__ import annotations

from typing import Any

import pytest

from aiperf_kueue.config.installs import OperatorConfig
from aiperf_kueue.config.sizing import OperatorSizing
from aiperf_kueue.upstream.aiperf_release import CONTROLLER_KEYS, DEFAULT_VERSION, RELEASES, release
from aiperf_kueue.workload.sizing import (
    ContainerSize,
    operator_env,
    parse_cpu_millis,
    parse_memory_mib,
    release_sizing,
    sizing_from_config,
)

#: The env the program sets for AIPerf 0.13.0's defaults: every setting that shapes a benchmark's pods.
DEFAULT_ENV = {
    "AIPERF_K8S_WORKER_POD_CPU": "3350m",
    "AIPERF_K8S_WORKER_POD_MEMORY": "6Gi",
    "AIPERF_K8S_EVENT_BUS_PROXY_CPU": "50m",
    "AIPERF_K8S_EVENT_BUS_PROXY_MEMORY": "64Mi",
    "AIPERF_K8S_SYSTEM_CONTROLLER_CPU": "75m",
    "AIPERF_K8S_SYSTEM_CONTROLLER_MEMORY": "192Mi",
    "AIPERF_K8S_DATASET_MANAGER_CPU": "50m",
    "AIPERF_K8S_DATASET_MANAGER_MEMORY": "256Mi",
    "AIPERF_K8S_TIMING_MANAGER_CPU": "50m",
    "AIPERF_K8S_TIMING_MANAGER_MEMORY": "192Mi",
    "AIPERF_K8S_RECORDS_MANAGER_CPU": "75m",
    "AIPERF_K8S_RECORDS_MANAGER_MEMORY": "256Mi",
    "AIPERF_K8S_API_CPU": "75m",
    "AIPERF_K8S_API_MEMORY": "256Mi",
    "AIPERF_K8S_GPU_TELEMETRY_MANAGER_CPU": "25m",
    "AIPERF_K8S_GPU_TELEMETRY_MANAGER_MEMORY": "192Mi",
    "AIPERF_K8S_SERVER_METRICS_MANAGER_CPU": "25m",
    "AIPERF_K8S_SERVER_METRICS_MANAGER_MEMORY": "192Mi",
    "AIPERF_K8S_RESULTS_SIDECAR_CPU": "25m",
    "AIPERF_K8S_RESULTS_SIDECAR_MEMORY": "192Mi",
    "AIPERF_K8S_SWEEP_CONTROLLER_CPU": "75m",
    "AIPERF_K8S_SWEEP_CONTROLLER_MEMORY": "512Mi",
    "AIPERF_K8S_EVENT_BUS_SIDECAR_ENABLED": "true",
    "AIPERF_K8S_RECORD_PROCESSOR_SCALE_FACTOR": "1",
    "AIPERF_WORKER_DEFAULT_WORKERS_PER_POD": "10",
    "AIPERF_K8S_JOBSET_TTL_SECONDS_AFTER_FINISHED": "300",
    "AIPERF_K8S_SHARE_PROCESS_NAMESPACE": "false",
}


def test_releases_are_released_versions() -> None:
    assert (list(RELEASES), DEFAULT_VERSION) == (["0.13.0"], "0.13.0")
    rel = release("0.13.0")
    assert (rel.image, rel.chart_ref, rel.worker_pod, rel.sweep_controller) == (
        "nvcr.io/nvidia/aiperf:0.13.0",
        "v0.13.0",
        ("3350m", "6Gi"),
        ("75m", "512Mi"),
    )
    assert tuple(rel.controller) == CONTROLLER_KEYS
    with pytest.raises(KeyError, match=r"AIPerf '0\.12\.0' is not a release this program models; releases: 0\.13\.0"):
        release("0.12.0")


def test_default_env_pins_every_setting() -> None:
    assert operator_env(release_sizing()) == DEFAULT_ENV


def _operator(**fields: Any) -> OperatorConfig:
    return OperatorConfig.model_validate(fields)


def test_sizing_overrides_are_written_canonically() -> None:
    op = _operator(
        sizing={
            "workerPod": {"memory": "8192Mi"},
            "controller": {"API": {"cpu": "1000m", "memory": "1Gi"}},
            "sweepController": {"memory": "1Gi"},
            "eventBusSidecarEnabled": False,
            "recordProcessorCpuRequest": "0.25",
            "recordProcessorScaleFactor": 4,
        }
    )
    sizing = sizing_from_config(op)
    assert (sizing.worker_pod, sizing.controller["API"]) == (ContainerSize("3350m", "8Gi"), ContainerSize("1", "1Gi"))
    assert operator_env(sizing) == {
        **DEFAULT_ENV,
        "AIPERF_K8S_WORKER_POD_MEMORY": "8Gi",
        "AIPERF_K8S_API_CPU": "1",
        "AIPERF_K8S_API_MEMORY": "1Gi",
        "AIPERF_K8S_SWEEP_CONTROLLER_MEMORY": "1Gi",
        "AIPERF_K8S_EVENT_BUS_SIDECAR_ENABLED": "false",
        "AIPERF_K8S_RECORD_PROCESSOR_SCALE_FACTOR": "4",
        "AIPERF_K8S_RECORD_PROCESSOR_CPU_REQUEST": "250m",
    }


def test_external_operator_env() -> None:
    declared = _operator(
        install=False,
        env={"AIPERF_K8S_WORKER_POD_CPU": "2", "AIPERF_K8S_EVENT_BUS_SIDECAR_ENABLED": "False", "OTHER": "x"},
    )
    sizing = sizing_from_config(declared)
    assert (sizing.known, sizing.worker_pod, sizing.event_bus_sidecar_enabled) == (
        True,
        ContainerSize("2", "6Gi"),
        False,
    )
    unknown = sizing_from_config(_operator(install=False))
    assert (unknown.known, unknown.worker_pod) == (False, ContainerSize("3350m", "6Gi"))
    assert sizing_from_config(_operator(install=False, aiperfVersion="unknown", env={})).known is False
    # Without an env, sizing declares the external operator's pod sizes.
    by_sizing = sizing_from_config(_operator(install=False, sizing={"workerPod": {"cpu": "2"}}))
    assert (by_sizing.known, by_sizing.worker_pod) == (True, ContainerSize("2", "6Gi"))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"aiperfVersion": "0.12.0"}, "must be an AIPerf release this program models (0.13.0) or 'unknown'"),
        ({"aiperfVersion": "unknown"}, "'unknown' is only for an external operator (install: false)"),
        ({"env": {"A": "b"}}, "env: only with install: false"),
        ({"install": False, "sizing": {}, "env": {}}, "sizing and env: with install: false the declared env is"),
        ({"install": False, "env": "later"}, "must be a mapping of variable to value, or 'unknown'"),
    ],
)
def test_operator_config_errors(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _operator(**fields)


def test_operator_sizing_errors() -> None:
    with pytest.raises(ValueError, match="whole number of MiB"):
        OperatorSizing.model_validate({"workerPod": {"memory": "4G"}})
    with pytest.raises(ValueError, match="WORKER_MANAGER"):
        OperatorSizing.model_validate({"controller": {"WORKER_MANAGER": {"cpu": "1"}}})
    with pytest.raises(ValueError, match="whole number of millicores"):
        OperatorSizing.model_validate({"controller": {"API": {"cpu": "0.0005"}}})
    with pytest.raises(ValueError, match="preset"):
        OperatorSizing.model_validate({"preset": "newest"})


def test_operator_parsing_of_quantities() -> None:
    # As the operator reads its env: floats, rounded (CPU) or floored (MiB).
    assert [parse_cpu_millis(t) for t in ("3350m", "2", "0.5", "1500000u", "0")] == [3350, 2000, 500, 1500, 0]
    assert [parse_memory_mib(t) for t in ("6Gi", "6442450944", "8G", "1Ki", "0")] == [6144, 6144, 7629, 1, 0]
