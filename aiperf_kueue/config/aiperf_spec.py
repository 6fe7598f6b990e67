"""The AIPerfJob ``spec`` (``aiperf.nvidia.com/v1alpha1``) as AIPerf 0.13.0 accepts it.

Upstream: aiperf 0.13.0 aiperf/config/deployment.py, aiperf/kubernetes/crd_models.py

:class:`AIPerfJobSpec` mirrors ``aiperf.kubernetes.crd_models.AIPerfJobSpec`` of the released
operator (the CRD is generated from the same models): every field it has, the same required
fields, enums, bounds and cross-field rules, with a message naming the key. The benchmark
section is :mod:`aiperf_kueue.config.aiperf_benchmark`. ``tests/test_aiperf_oracle*.py`` check
the field sets against the release and compare acceptance with its own validation.

- Objects the release closes reject unknown keys; camelCase only, as the CRD (a snake_case key
  the API server would prune names its camelCase spelling instead).
- Where the release keeps a value free-form (``variables``, plot preset bodies, ``extraPodSpec``,
  ...) it is kept as given. Dataset entries are checked for their ``name``, ``type`` and keys per
  type only, their values (and those of a few other key-checked sections) AIPerf validates when the
  job is created.
- A spec passes through to the custom resource unchanged (:meth:`AIPerfJobSpec.manifest`).

On top of the release, ``spec.scheduling`` is this program's (from the job's ``queue`` and
``priorityClass``), and a sweep belongs in ``aiperf-kueue:sweeps``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, PlainValidator, StrictBool, StrictInt, StrictStr, model_validator
from pydantic.alias_generators import to_camel

from aiperf_kueue.common import quantity
from aiperf_kueue.common.display import show
from aiperf_kueue.config.aiperf_base import CrdModel, Number
from aiperf_kueue.config.aiperf_benchmark import Benchmark
from aiperf_kueue.config.aiperf_plot import Plot
from aiperf_kueue.config.base import dns_label
from aiperf_kueue.upstream.aiperf_release import RECORD_PROCESSOR_CPU_ENV

#: AIPerf job ids (= AIPerfJob names) are DNS labels of at most this many characters: the JobSet
#: ``aiperf-<id>`` and its pods' host names ``aiperf-<id>-workers-<i>-<j>`` must fit 63.
JOB_NAME_MAX = 35

#: An AIPerfJob is named ``<config name>-<digest>``: this many hex digits of the SHA-256 of its spec
#: (:func:`aiperf_kueue.plan.manifests.spec_digest`), so that a changed benchmark is a new run.
SPEC_DIGEST_LENGTH = 6

#: The longest config name (a job's, or a sweep point's ``<sweep>-c<N>``) whose AIPerfJob name,
#: with ``-`` and the digest, stays within :data:`JOB_NAME_MAX`: 28.
CONFIG_NAME_MAX = JOB_NAME_MAX - 1 - SPEC_DIGEST_LENGTH

#: Why :data:`CONFIG_NAME_MAX`, in every message about a name too long.
NAME_ROOM = (
    f"the AIPerfJob's name adds '-' and a {SPEC_DIGEST_LENGTH}-digit digest of its spec, within AIPerf's "
    f"{JOB_NAME_MAX}-character job-id limit"
)

#: PodSpec keys ``podTemplate.extraPodSpec`` may not set (``config/deployment.py``
#: ``DENIED_EXTRA_POD_SPEC_KEYS``).
FORBIDDEN_EXTRA_POD_SPEC_KEYS = ("containers", "hostIPC", "hostNetwork", "hostPID", "hostUsers", "securityContext")

#: securityContext values no override may set (``deployment.py`` ``_FORBIDDEN_SECURITY_CONTEXT_VALUES``).
_ESCALATING: tuple[tuple[str, Any], ...] = (
    ("privileged", True),
    ("allowPrivilegeEscalation", True),
    ("runAsNonRoot", False),
    ("runAsUser", 0),
    ("runAsGroup", 0),
)


def job_name(value: str) -> str:
    """A job's config name: a DNS-1123 label of at most :data:`CONFIG_NAME_MAX` characters."""
    dns_label(value)
    over = len(value) - CONFIG_NAME_MAX
    if over > 0:
        raise ValueError(
            f"must be at most {CONFIG_NAME_MAX} characters, got {len(value)} ({show(value)}): {NAME_ROOM}; "
            f"shorten it by {over} character{'s' if over > 1 else ''}"
        )
    return value


def escalating_keys(context: dict[str, Any]) -> list[str]:
    """The securityContext keys set to a privilege-escalating value, sorted (``privilege_escalating_keys``)."""
    found = []
    for key, forbidden in _ESCALATING:
        if key not in context:
            continue
        value = context[key]
        if isinstance(forbidden, bool):
            hit = isinstance(value, (bool, int)) and bool(value) == forbidden
        else:
            hit = not isinstance(value, bool) and value == forbidden
        if hit:
            found.append(key)
    return sorted(found)


class PodTemplate(CrdModel):
    """``spec.podTemplate``: copied into the controller and worker pods. There is no
    per-container ``resources``: pod sizes come from the operator (see ``operator.sizing``)."""

    env: list[dict[str, Any]] | None = None
    """Container environment, Kubernetes EnvVar entries. Of the operator's sizing variables
    only ``AIPERF_K8S_RECORD_PROCESSOR_CPU_REQUEST`` has an effect here. An endpoint key comes
    from a Secret here: ``AIPERF_INJECTED_API_KEY`` with ``valueFrom.secretKeyRef`` (default none)."""

    volumes: list[dict[str, Any]] | None = None
    """Extra pod volumes, Kubernetes Volume entries (default none)."""

    volume_mounts: list[dict[str, Any]] | None = None
    """Extra volume mounts of every container (default none)."""

    node_selector: dict[str, StrictStr] | None = None
    """Node selector; Kueue adds the flavor's node labels on admission (default none)."""

    tolerations: list[dict[str, Any]] | None = None
    """Pod tolerations; Kueue adds the flavor's tolerations on admission (default none)."""

    affinity: dict[str, Any] | None = None
    """Kubernetes Affinity (default none)."""

    annotations: dict[str, StrictStr] | None = None
    """Extra pod annotations (default none)."""

    labels: dict[str, StrictStr] | None = None
    """Extra pod labels (default none)."""

    image_pull_secrets: list[dict[str, Any]] | None = None
    """``[{name: secret}]`` (default none)."""

    service_account_name: StrictStr | None = None
    """Pod service account; must exist in the namespace (default: the namespace's ``default``)."""

    container_security_context: dict[str, Any] | None = None
    """securityContext merged into every container; privilege-escalating values are rejected
    (default none)."""

    share_process_namespace: StrictBool | None = None
    """One PID namespace per pod (default false; the program pins the operator's default off)."""

    priority_class_name: StrictStr | None = None
    """Kubernetes PriorityClass of the pods, not Kueue's (that is the job's ``priorityClass``)."""

    runtime_class_name: StrictStr | None = None
    """RuntimeClass; its pod overhead counts towards the quota Kueue charges (default none)."""

    scheduler_name: StrictStr | None = None
    """Scheduler for the pods (default: the cluster's)."""

    topology_spread_constraints: list[dict[str, Any]] | None = None
    """Kubernetes TopologySpreadConstraints (default none)."""

    host_aliases: list[dict[str, Any]] | None = None
    """Extra /etc/hosts entries (default none)."""

    dns_policy: Literal["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"] | None = None
    """Pod DNS policy (default ``ClusterFirst``)."""

    dns_config: dict[str, Any] | None = None
    """Pod DNS config (default none)."""

    termination_grace_period_seconds: StrictInt | None = Field(None, ge=0)
    """Grace period before SIGKILL, seconds >= 0 (default: Kubernetes' 30)."""

    pod_security_context: dict[str, Any] | None = None
    """Pod securityContext additions; privilege-escalating values are rejected (default: the
    operator's hardened one)."""

    init_containers: list[dict[str, Any]] | None = None
    """Init containers of both pods; their requests count towards the quota Kueue charges."""

    extra_pod_spec: dict[str, Any] | None = None
    """Raw PodSpec keys merged last; may not set securityContext, containers, hostNetwork,
    hostPID, hostIPC or hostUsers (default none)."""

    @model_validator(mode="after")
    def _operator_rules(self) -> PodTemplate:
        for i, item in enumerate(self.env or []):
            if not isinstance(item.get("name"), str) or not item["name"]:
                raise ValueError(f"env[{i}] needs a name")
            if item["name"] == RECORD_PROCESSOR_CPU_ENV and isinstance(item.get("value"), str) and item["value"]:
                try:
                    quantity.parse(item["value"])
                except ValueError:
                    raise ValueError(
                        f"env[{i}] {RECORD_PROCESSOR_CPU_ENV} must be a CPU quantity, got {show(item['value'])}"
                    ) from None
        bad = [k for k in FORBIDDEN_EXTRA_POD_SPEC_KEYS if k in (self.extra_pod_spec or {})]
        if bad:
            raise ValueError(
                f"extraPodSpec may not override security-critical PodSpec keys: {', '.join(bad)}. "
                "Use the typed podTemplate fields instead."
            )
        for name, context in (
            ("podSecurityContext", self.pod_security_context),
            ("containerSecurityContext", self.container_security_context),
        ):
            offenders = escalating_keys(context or {})
            if offenders:
                raise ValueError(
                    f"{name} may not set {', '.join(offenders)} to a privilege-escalating value: it would weaken "
                    "the hardened securityContext AIPerf applies to every benchmark pod"
                )
        return self

    def env_value(self, name: str) -> str | None:
        """The first ``env`` entry ``name`` with a string ``value``, as the operator reads it."""
        for item in self.env or []:
            if item.get("name") == name and isinstance(item.get("value"), str):
                return str(item["value"])
        return None

    def secret_env_names(self) -> set[str]:
        """Names of the ``env`` entries whose value comes from a Secret (``valueFrom.secretKeyRef``)."""
        return {
            str(item.get("name"))
            for item in self.env or []
            if isinstance(item.get("valueFrom"), dict) and isinstance(item["valueFrom"].get("secretKeyRef"), dict)
        }


class Convergence(CrdModel):
    """``spec.multiRun.convergence``: adaptive trial stopping (AIPerfSweep only)."""

    metric: StrictStr
    """Metric tag, e.g. ``ttft`` (required)."""

    stat: Literal["avg", "p50", "p90", "p95", "p99", "min", "max"] | None = None
    """Statistic inspected (default ``avg``)."""

    mode: Literal["ci_width", "cv", "distribution"] | None = None
    """Criterion (default ``ci_width``)."""

    threshold: Number | None = Field(None, gt=0, lt=1)
    """Criterion threshold, strictly between 0 and 1."""

    min_runs: StrictInt | None = Field(None, ge=2)
    """Trials before checking, >= 2 (default 2)."""


class MultiRun(CrdModel):
    """``spec.multiRun``: on an AIPerfJob at most one run and no convergence."""

    num_runs: StrictInt | None = Field(None, ge=1, le=10)
    """Trials, 1-10; an AIPerfJob allows only 1 (default 1)."""

    cooldown_seconds: Number | None = Field(None, ge=0, le=86400)
    """Cooldown between trials, 0-86400 seconds (default 0)."""

    confidence_level: Number | None = Field(None, gt=0, lt=1)
    """Confidence level of aggregate statistics, strictly between 0 and 1 (default 0.95)."""

    set_consistent_seed: StrictBool | None = None
    """Set a seed when none is given (default true)."""

    vary_seed_per_trial: StrictBool | None = None
    """Distinct seed per trial (default false)."""

    disable_warmup_after_first: StrictBool | None = None
    """Skip warmup after the first trial (default true)."""

    convergence: Convergence | None = None
    """Adaptive stopping; not allowed on an AIPerfJob."""


class FailurePolicy(CrdModel):
    """``spec.failurePolicy``."""

    on_child_failure: Literal["continue", "abort"] | None = None
    """``continue`` or ``abort`` after a failed child (default ``continue``)."""

    max_failures: StrictInt | None = Field(None, ge=0)
    """Failure budget, >= 0 (default 0)."""


def _rejected(message: str) -> Any:
    def reject(value: Any) -> Any:
        raise ValueError(message)

    return PlainValidator(reject)


class AIPerfJobSpec(CrdModel):
    """The ``spec`` of one AIPerfJob, exactly as the custom resource gets it.

    Everything except ``cancel`` and ``timeoutSeconds`` is immutable once created (CRD CEL
    rules): changing it means replacing the AIPerfJob.
    """

    model_config = ConfigDict(populate_by_name=False)

    image: StrictStr | None = Field(None, min_length=1)
    """AIPerf image of the benchmark pods (default: the pinned release's image, ``operator.image``)."""

    image_pull_policy: Literal["Always", "Never", "IfNotPresent"] | None = None
    """Image pull policy (chart default ``IfNotPresent``)."""

    benchmark: Benchmark
    """The benchmark (required)."""

    resource_mode: Literal["guaranteed", "burstable", "none"] | None = None
    """CPU/memory of the pods (default ``burstable``): ``burstable`` requests only,
    ``guaranteed`` requests = limits, ``none`` no requests (Kueue then reserves nothing)."""

    connections_per_worker: StrictInt | None = Field(None, ge=1)
    """Concurrent connections per worker, >= 1 (default 100); with the largest phase
    concurrency it decides the worker count."""

    timeout_seconds: Number | None = Field(None, ge=0)
    """Job timeout in seconds, 0 = none (default 0). Mutable."""

    ttl_seconds_after_finished: StrictInt | None = Field(None, ge=0)
    """Seconds the JobSet is kept after it finishes (default 300)."""

    results_ttl_days: StrictInt | None = Field(None, ge=1, le=365)
    """Days result files are kept, 1-365 (default: the operator's)."""

    keep_failed_pods: StrictBool | None = None
    """Keep failed pods for debugging (default false)."""

    cancel: StrictBool | None = None
    """Cancel the job (default false). Mutable."""

    pod_template: PodTemplate | None = None
    """Pod settings of the controller and worker pods (default none)."""

    scheduling: Annotated[
        Any,
        _rejected(
            "is set by aiperf-kueue from the job's queue and priorityClass; use `queue` / `priorityClass` on the "
            "job instead of spec.scheduling"
        ),
    ] = None
    """Set by this program from the job's ``queue`` and ``priorityClass``: may not be set."""

    schema_version: Literal["2.0"] | None = None
    """Config schema version (default ``2.0``)."""

    sweep: Annotated[
        Any,
        _rejected("AIPerfJob.spec.sweep must be omitted; declare a concurrency sweep in aiperf-kueue:sweeps"),
    ] = None
    """Must be omitted on an AIPerfJob: use ``aiperf-kueue:sweeps``."""

    multi_run: MultiRun | None = None
    """Multi-run statistics; on an AIPerfJob ``numRuns`` <= 1 and no convergence."""

    plot: Plot | None = None
    """Inline plot configuration (default none: AIPerf's); turns ``artifacts.autoPlot`` on unless set."""

    variables: dict[str, Any] | None = None
    """Values exposed to Jinja2 templates, name → any value (default none); free-form in the release
    too (``AIPerfConfig.variables: dict[str, Any]``), so only its being a mapping is checked."""

    random_seed: StrictInt | None = Field(None, ge=0)
    """Global random seed, >= 0 (default none)."""

    no_sweep_table: StrictBool | None = None
    """Suppress the sweep table (default false)."""

    skip_endpoint_check: StrictBool | None = None
    """Skip the operator's endpoint reachability probe (default false)."""

    failure_policy: FailurePolicy | None = None
    """Failure handling (default: continue)."""

    @model_validator(mode="after")
    def _one_run(self) -> AIPerfJobSpec:
        multi = self.multi_run
        if multi is not None and ((multi.num_runs or 1) > 1 or multi.convergence is not None):
            raise ValueError(
                "AIPerfJob.spec.multiRun must describe one run without convergence (numRuns <= 1, no convergence); "
                "use AIPerfSweep for multi-run orchestration"
            )
        return self

    def manifest(self) -> dict[str, Any]:
        """The spec as given (camelCase, unset keys omitted), without ``scheduling``."""
        return self.model_dump(by_alias=True, exclude_unset=True)

    def record_processor_cpu_request(self) -> str | None:
        """``AIPERF_K8S_RECORD_PROCESSOR_CPU_REQUEST`` from ``podTemplate.env`` as the operator
        reads it: the first entry of that name with a string ``value``; empty means unset."""
        value = self.pod_template.env_value(RECORD_PROCESSOR_CPU_ENV) if self.pod_template else None
        return value or None


#: The spec's top-level keys, as written.
SPEC_KEYS = tuple(to_camel(name) for name in AIPerfJobSpec.model_fields)
