"""The released AIPerf operators this program models, as data: one entry per PyPI release.

Everything the program predicts about an AIPerfJob (its worker count, the JobSet the operator
builds, every container's requests, what the operator's preflight answers) depends on defaults
baked into the operator image and on rules in its code. They change between releases, so they
are declared here once per release, keyed by version, and every other module reads them from
:data:`RELEASES`: the default image, the chart to check out, the sizing defaults
(``operator.sizing``), the split rules of a worker pod.

Only released code counts: ``aiperf==0.13.0`` on PyPI is the first release with the operator
(0.12.0 and older ship no ``aiperf.kubernetes``). Each figure names the module of that wheel it
comes from; ``tests/test_aiperf_oracle*.py`` run the real release against these numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, get_args

#: The operator's controller-pod containers by their ``AIPERF_K8S_<KEY>_CPU``/``_MEMORY``
#: settings key, in the order the operator puts them in the pod (``jobset.py``
#: ``create_controller_containers``: the event-bus proxy first, the results sidecar last).
ControllerKey = Literal[
    "EVENT_BUS_PROXY",
    "SYSTEM_CONTROLLER",
    "DATASET_MANAGER",
    "TIMING_MANAGER",
    "RECORDS_MANAGER",
    "API",
    "GPU_TELEMETRY_MANAGER",
    "SERVER_METRICS_MANAGER",
    "RESULTS_SIDECAR",
]
CONTROLLER_KEYS: tuple[ControllerKey, ...] = get_args(ControllerKey)

#: Container name of each controller key (``kubernetes/constants.py`` ``Containers``).
CONTROLLER_CONTAINER_NAMES: Mapping[ControllerKey, str] = MappingProxyType(
    {
        "EVENT_BUS_PROXY": "event-bus-proxy",
        "SYSTEM_CONTROLLER": "control-plane",
        "DATASET_MANAGER": "dataset-manager",
        "TIMING_MANAGER": "timing-manager",
        "RECORDS_MANAGER": "records-manager",
        "API": "api",
        "GPU_TELEMETRY_MANAGER": "gpu-telemetry-manager",
        "SERVER_METRICS_MANAGER": "server-metrics-manager",
        "RESULTS_SIDECAR": "results-sidecar",
    }
)

#: The ``podTemplate.env`` variable the operator reads per job (``jobset.py``
#: ``_split_worker_pod_resources``); every other sizing setting comes from its own env only.
RECORD_PROCESSOR_CPU_ENV = "AIPERF_K8S_RECORD_PROCESSOR_CPU_REQUEST"


@dataclass(frozen=True)
class AIPerfRelease:
    """One AIPerf release: its image and chart, and the defaults and rules its operator applies."""

    version: str
    """The PyPI release, e.g. ``0.13.0``."""

    image: str
    """The image the release pins itself (``cli_commands/kube/_kube_common.py``
    ``pin_default_direct_image``: ``nvcr.io/nvidia/aiperf:<version>``)."""

    chart_ref: str
    """The git tag of ``ai-dynamo/aiperf`` whose ``deploy/helm/aiperf-operator`` chart ships it."""

    worker_pod: tuple[str, str]
    """``AIPERF_K8S_WORKER_POD_CPU``/``_MEMORY`` defaults (``kubernetes/environment.py``)."""

    controller: Mapping[ControllerKey, tuple[str, str]]
    """``AIPERF_K8S_<KEY>_CPU``/``_MEMORY`` defaults per controller container."""

    sweep_controller: tuple[str, str]
    """``AIPERF_K8S_SWEEP_CONTROLLER_CPU``/``_MEMORY`` defaults: the AIPerfSweep controller pod."""

    record_processor_scale_factor: int = 1
    """``AIPERF_K8S_RECORD_PROCESSOR_SCALE_FACTOR`` default: workers per record processor."""

    event_bus_sidecar_enabled: bool = True
    """``AIPERF_K8S_EVENT_BUS_SIDECAR_ENABLED`` default."""

    default_workers_per_pod: int = 10
    """``AIPERF_WORKER_DEFAULT_WORKERS_PER_POD`` default (``common/environment.py``)."""

    jobset_ttl_seconds_after_finished: int = 300
    """``AIPERF_K8S_JOBSET_TTL_SECONDS_AFTER_FINISHED`` default."""

    share_process_namespace: bool = False
    """``AIPERF_K8S_SHARE_PROCESS_NAMESPACE`` default."""

    min_container_cpu_millis: int = 1
    """Every operator-sized container reserves at least this (``constants.py`` ``MIN_CONTAINER_CPU_MCPU``)."""

    min_container_memory_mib: int = 1
    """... and this (``MIN_CONTAINER_MEMORY_MIB``)."""

    worker_memory_floor_mib: int = 162
    """A worker container below this fails the JobSet build (``WORKER_IMPORT_MEMORY_FLOOR_MIB``)."""

    cpu_weights: tuple[int, int, int] = (100, 131, 389)
    """Worker-pod CPU split weights: worker-group-manager, each worker, each record processor."""

    memory_weights: tuple[int, int, int] = (128, 128, 256)
    """Worker-pod memory split weights, in the same order."""

    connections_per_worker: int = 100
    """``spec.connectionsPerWorker`` default (``config/deployment.py``)."""

    resource_mode: str = "burstable"
    """``spec.resourceMode`` default."""

    kueue_api_version: str = "v1beta1"
    """The ``kueue.x-k8s.io`` version the operator reads LocalQueues through: its preflight's
    ``_verify_kueue_local_queue`` and ``_is_kueue_installed`` (``operator/preflight/_infra.py``)
    use ``KUEUE_VERSION`` of ``kubernetes/cr_refs.py``. A Kueue that does not serve it looks
    "not installed" to the operator (:mod:`aiperf_kueue.upstream.compat`)."""

    chart_queues_api_version: str = "v1beta1"
    """The ``kueue.x-k8s.io`` version the operator chart's ``kueue.createQueues`` template checks
    with ``.Capabilities.APIVersions.Has`` (``templates/kueue-queues.yaml``): without it the
    chart renders no queues, silently."""

    notes: tuple[str, ...] = field(default=())
    """What differs from what its documentation says, for the docs table."""


#: Every release the program models, by version.
RELEASES: Mapping[str, AIPerfRelease] = MappingProxyType(
    {
        "0.13.0": AIPerfRelease(
            version="0.13.0",
            image="nvcr.io/nvidia/aiperf:0.13.0",
            chart_ref="v0.13.0",
            worker_pod=("3350m", "6Gi"),
            controller=MappingProxyType(
                {
                    "EVENT_BUS_PROXY": ("50m", "64Mi"),
                    "SYSTEM_CONTROLLER": ("75m", "192Mi"),
                    "DATASET_MANAGER": ("50m", "256Mi"),
                    "TIMING_MANAGER": ("50m", "192Mi"),
                    "RECORDS_MANAGER": ("75m", "256Mi"),
                    "API": ("75m", "256Mi"),
                    "GPU_TELEMETRY_MANAGER": ("25m", "192Mi"),
                    "SERVER_METRICS_MANAGER": ("25m", "192Mi"),
                    "RESULTS_SIDECAR": ("25m", "192Mi"),
                }
            ),
            sweep_controller=("75m", "512Mi"),
            notes=(
                "benchmark.models given as one string fails the AIPerfJob after preflight "
                "(operator/runs_index.py reads it as a mapping); write a list or the model shorthand",
            ),
        ),
    }
)

#: The release a stack targets when it names none.
DEFAULT_VERSION = "0.13.0"


def release(version: str) -> AIPerfRelease:
    """The release ``version``; ``KeyError`` naming the known ones otherwise."""
    found = RELEASES.get(version)
    if found is None:
        raise KeyError(f"AIPerf {version!r} is not a release this program models; releases: {', '.join(RELEASES)}")
    return found
