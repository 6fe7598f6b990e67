"""Every stack file in tests/bad_jobs/ is rejected cleanly, naming the job or sweep at fault.

Each file is a complete stack that is valid except for one problem in ``aiperf-kueue:jobs`` or
``aiperf-kueue:sweeps`` (or, for ``operator-default-queue-missing``, the operator default every
job would get). ``aiperf-kueue plan`` must exit 2 with exactly the lines below, each
``<stack file>: aiperf-kueue:<key path>: <message>`` with the job (or sweep) named in the message,
print no traceback, write nothing and never run the program; under Pulumi the program stops with
``pulumi.RunError`` before registering anything.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pulumi
import pytest

import aiperf_kueue.cli.cli
from aiperf_kueue.cli import engine
from aiperf_kueue.cli.cli import main
from aiperf_kueue.plan.stack_plan import plan_stack
from aiperf_kueue.stackfile.loader import parse_config, read_stack_file

ROOT = Path(__file__).resolve().parents[1]
BAD_JOBS = Path(__file__).resolve().parent / "bad_jobs"

#: Stack file → its problem lines, after ``<stack file>: ``, exactly.
EXPECTED: dict[str, tuple[str, ...]] = {
    "api-key-in-spec": (
        "aiperf-kueue:jobs[0].spec.benchmark.endpoint.apiKey: llama-latency: a key here is stored in the "
        "AIPerfJob for anyone who can read it (and a ${VAR} is resolved in the operator's process, not the "
        "pod's): remove apiKey and give the pods the key from a Secret, podTemplate.env: [{name: "
        "AIPERF_INJECTED_API_KEY, valueFrom: {secretKeyRef: {name: <secret>, key: <key>}}}]",
    ),
    "bad-resource-mode": (
        "aiperf-kueue:jobs[0].spec.resourceMode: llama-latency: must be one of 'guaranteed', 'burstable' or "
        "'none', got 'fast'",
    ),
    "credential-header-without-secret": (
        "aiperf-kueue:jobs[0].spec.benchmark.endpoint.headers.Authorization: llama-latency: AIPerf 0.13.0 "
        'would fail the AIPerfJob (status.error "Kubernetes endpoint credentials must come from Secret-backed '
        'pod environment variables. Configure --env-from-secrets for: AIPERF_INJECTED_HEADERS"); credential '
        "header(s) Authorization must reach the pods from a Secret: add AIPERF_INJECTED_HEADERS (a JSON "
        "object of header → value) with valueFrom.secretKeyRef to podTemplate.env",
    ),
    "duplicate-job-names": (
        "aiperf-kueue:jobs[1].name: AIPerfJob bench-team-a/llama-latency is already declared by jobs[0]",
    ),
    "endpoint-path-without-slash": (
        "aiperf-kueue:jobs[0].spec.benchmark.endpoint: llama-latency: endpoint.path must start with '/' (e.g. "
        "'/v1/chat/completions')",
    ),
    "extra-pod-spec-security-context": (
        "aiperf-kueue:jobs[0].spec.podTemplate: llama-latency: extraPodSpec may not override "
        "security-critical PodSpec keys: securityContext. Use the typed podTemplate fields instead.",
    ),
    "job-name-29-chars": (
        "aiperf-kueue:jobs[0].name: must be at most 28 characters, got 29 ('llama-latency-xxxxxxxxxxxxxxx'): the "
        "AIPerfJob's name adds '-' and a 6-digit digest of its spec, within AIPerf's 35-character job-id limit; "
        "shorten it by 1 character",
    ),
    "job-name-not-dns": (
        "aiperf-kueue:jobs[0].name: must be a DNS-1123 label (lower-case letters, digits and '-', starting "
        "and ending with a letter or digit), got 'Llama_Latency'",
    ),
    # 100 worker pods of 3350m / 6Gi after a 450m / 1792Mi controller. Room: flavor cpu (14400m - 450m) / 3350m
    # = 4 pods; flavor gpu 28800m / 3350m = 8 pods (memory 235930Mi / 6144Mi = 38) → 8 pods = 80 workers.
    # Flavor cpu short: 335450m - 14400m = 321050m; 616192Mi - 58982Mi = 557210Mi.
    "job-too-big": (
        "aiperf-kueue:jobs[0]: llama-latency: fix: run at most 80 workers (8 of its 100 worker pods, 10 workers "
        "each): lower the concurrency, or give ClusterQueue team-a cpu +321050m, memory +557210Mi in flavor cpu "
        "(nominalQuota); needs cpu 335450m, memory 616192Mi; ClusterQueue team-a can "
        "reach at most cpu 14400m, memory 58982Mi in flavor cpu; cpu 28800m, memory 235930Mi in flavor gpu "
        "(nominal, no cohort); podSet controller gets flavor cpu, then podSet workers (cpu 335, memory 600Gi) "
        "fits no flavor; Kueue would keep it pending with \"couldn't assign flavors to pod set workers: "
        "insufficient quota for cpu in flavor cpu, previously considered podsets requests (450m) + current "
        "podset request (335) > maximum capacity (14400m), insufficient quota for cpu in flavor gpu, "
        "previously considered podsets requests (0) + current podset request (335) > maximum capacity "
        "(28800m), insufficient quota for memory in flavor cpu, previously considered podsets requests "
        "(1792Mi) + current podset request (600Gi) > maximum capacity (58982Mi), insufficient quota for "
        "memory in flavor gpu, previously considered podsets requests (0) + current podset request (600Gi) > "
        'maximum capacity (235930Mi)"',
    ),
    "job-without-spec": ("aiperf-kueue:jobs[0].spec: llama-latency: required, but not set",),
    "missing-endpoint-urls": (
        "aiperf-kueue:jobs[0].spec.benchmark.endpoint.urls: llama-latency: required, but not set",
    ),
    "models-one-string": (
        "aiperf-kueue:jobs[0].spec.benchmark.models: llama-latency: must be a list of model names or a "
        "mapping with items, got the string 'meta-llama/Llama-3.1-8B-Instruct': AIPerf 0.13.0 fails such a "
        "job after its preflight (\"'str' object has no attribute 'get'\"); write models: "
        "[meta-llama/Llama-3.1-8B-Instruct] or the shorthand model: meta-llama/Llama-3.1-8B-Instruct",
    ),
    "multi-run-three-runs": (
        "aiperf-kueue:jobs[0].spec: llama-latency: AIPerfJob.spec.multiRun must describe one run without "
        "convergence (numRuns <= 1, no convergence); use AIPerfSweep for multi-run orchestration",
    ),
    "node-affinity-gt-not-integer": (
        "aiperf-kueue:jobs[0].spec.podTemplate.extraPodSpec.affinity.nodeAffinity."
        "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: "
        "llama-latency: must be one integer (as a string) with operator Gt, got a list of 1 item ('many')",
    ),
    "node-affinity-matches-no-flavor": (
        "aiperf-kueue:jobs[0]: llama-latency: its pods' nodeSelector, affinity and tolerations "
        "(spec.podTemplate) match no flavor of ClusterQueue team-a (the pools' nodeLabels and nodeTaints); "
        "Kueue would keep it pending with \"couldn't assign flavors to pod set controller: flavor cpu doesn't "
        "match node affinity, flavor gpu doesn't match node affinity\"",
    ),
    "node-selector-matches-no-flavor": (
        "aiperf-kueue:jobs[0]: llama-latency: AIPerf 0.13.0 would fail the AIPerfJob (status.error "
        '"Pre-flight failed: Node Selector Match: No node matches nodeSelector {node-pool=gpu-h100}. Label '
        "nodes with: kubectl label node <name> node-pool=gpu-h100; Per-Node Schedulability: No single node "
        "can fit the largest pod (3.4 CPU, 6.0Gi mem). Add larger nodes or reduce pod resource "
        'requirements."); select labels of a pool (inventory.pools[].nodeLabels), or drop the nodeSelector; '
        "every pool's nodes are excluded by a NoSchedule/NoExecute taint the pod template does not tolerate "
        "or by its nodeSelector; the operator checks spec.podTemplate's own tolerations, not the ones Kueue "
        "adds for a flavor, so add the pool's tolerations to spec.podTemplate.tolerations",
    ),
    "operator-default-queue-missing": (
        "aiperf-kueue:operator.defaultQueue: LocalQueue 'default' must exist in every benchmark namespace, or "
        "the operator stamps a queue label Kueue can never resolve there; missing in: bench-team-b (set their "
        "localQueue to it, or defaultQueue: true for 'default')",
    ),
    "phase-concurrency-zero": (
        "aiperf-kueue:jobs[0].spec.benchmark.phases[1].concurrency: llama-latency: must be >= 1, got 0",
    ),
    "phase-without-type": ("aiperf-kueue:jobs[0].spec.benchmark.phases[1].type: llama-latency: required, but not set",),
    # pods 2 in flavor cpu: the controller takes 1, so 1 of the 2 worker pods fits (10 workers); 1 + 2 - 2 = +1.
    "pods-quota-too-small": (
        "aiperf-kueue:jobs[0]: llama-latency: fix: run at most 10 workers (1 of its 2 worker pods, 10 workers "
        "each): lower the concurrency, or give ClusterQueue team-a pods +1 in flavor cpu (nominalQuota); needs "
        "cpu 7150m, memory 14080Mi, pods 3; ClusterQueue team-a "
        "can reach at most cpu 14400m, memory 58982Mi, pods 2 in flavor cpu; cpu 28800m, memory 235930Mi, "
        "pods 0 in flavor gpu (nominal, no cohort); podSet controller gets flavor cpu, then podSet workers "
        "(cpu 6700m, memory 12Gi, pods 2) fits no flavor; Kueue would keep it pending with \"couldn't assign "
        "flavors to pod set workers: insufficient quota for pods in flavor cpu, previously considered podsets "
        "requests (1) + current podset request (2) > maximum capacity (2), insufficient quota for pods in "
        "flavor gpu, previously considered podsets requests (0) + current podset request (2) > maximum "
        'capacity (0)"',
    ),
    "profiling-shorthand-in-sweep": (
        "aiperf-kueue:sweeps[0].spec.benchmark: llama-sweep: set phases or its shorthand profiling, not both",
    ),
    "pulumi-name-collision": (
        "aiperf-kueue:jobs[1].name: AIPerfJob bench-team-a-llama/latency and bench-team-a/llama-latency "
        "(jobs[0]) would share the Pulumi resource name 'bench-team-a-llama-latency' (namespace and name "
        "joined by '-'); rename one",
    ),
    "queue-missing-in-namespace": (
        "aiperf-kueue:jobs[0].queue: llama-latency: AIPerf's preflight would fail the AIPerfJob (phase "
        "Failed, \"Pre-flight failed: Kueue Queue: Kueue LocalQueue 'fast-lane' not found. Create it or remove "
        'scheduling.queueName from spec."); name a LocalQueue of namespace bench-team-a (aiperf-queue, '
        "default), or create 'fast-lane' there (a namespace's localQueue, or defaultQueue: true for "
        "'default')",
    ),
    "retain-on-delete-string": (
        "aiperf-kueue:jobs[0].retainOnDelete: llama-latency: must be true or false, got 'yes' (YAML 1.2, "
        "which Pulumi reads, has only true and false)",
    ),
    "scheduling-set-by-hand": (
        "aiperf-kueue:jobs[0].spec.scheduling: llama-latency: is set by aiperf-kueue from the job's queue and "
        "priorityClass; use `queue` / `priorityClass` on the job instead of spec.scheduling",
    ),
    "snake-case-key": (
        "aiperf-kueue:jobs[0].spec: llama-latency: unknown key 'resource_mode': the AIPerfJob CRD uses "
        "camelCase, write 'resourceMode'",
    ),
    "spec-sweep-set": (
        "aiperf-kueue:jobs[0].spec.sweep: llama-latency: AIPerfJob.spec.sweep must be omitted; declare a "
        "concurrency sweep in aiperf-kueue:sweeps",
    ),
    "sweep-concurrency-bool": (
        "aiperf-kueue:sweeps[0].concurrency[0]: llama-sweep: must be a whole number (e.g. concurrency: 8), got true",
    ),
    "sweep-concurrency-float": (
        "aiperf-kueue:sweeps[0].concurrency[0]: llama-sweep: must be a whole number (e.g. concurrency: 8), got 8.5",
    ),
    "sweep-concurrency-string": (
        "aiperf-kueue:sweeps[0].concurrency[0]: llama-sweep: must be a whole number (e.g. concurrency: 8), "
        "got '8', text because of its quotes",
    ),
    "sweep-concurrency-zero": ("aiperf-kueue:sweeps[0].concurrency[0]: llama-sweep: must be >= 1, got 0",),
    "sweep-duplicate-concurrency": (
        "aiperf-kueue:sweeps[0].concurrency: llama-sweep: concurrency values must be unique, 8 repeats",
    ),
    "sweep-name-overflow": (
        "aiperf-kueue:sweeps[0]: sweep 'llama-3-1-8b-instruct-sweep-xy' generates job name "
        "'llama-3-1-8b-instruct-sweep-xy-c1024' (36 characters), and job names are at most 28 (the AIPerfJob's name "
        "adds '-' and a 6-digit digest of its spec, within AIPerf's 35-character job-id limit): shorten the sweep "
        "name to at most 22 characters",
    ),
    "sweep-phase-missing": (
        "aiperf-kueue:sweeps[0]: sweep 'llama-sweep': spec.benchmark.phases has no phase named 'steady' "
        "(phases: profiling)",
    ),
    "sweep-point-duplicates-job": (
        "aiperf-kueue:sweeps[0]: AIPerfJob bench-team-b/llama-sweep-c8 (sweep 'llama-sweep') is already "
        "declared by jobs[0]",
    ),
    # As job-too-big (flavor gpu memory 235929Mi / 6144Mi = 38 pods; cpu still limits it to 8).
    "sweep-point-too-big": (
        "aiperf-kueue:sweeps[0]: llama-sweep-c100000: fix: run at most 80 workers (8 of its 100 worker pods, 10 "
        "workers each): lower the concurrency, or give ClusterQueue team-b cpu +321050m, memory +557210Mi in "
        "flavor cpu (nominalQuota); needs cpu 335450m, memory 616192Mi; ClusterQueue team-b "
        "can reach at most cpu 14400m, memory 58982Mi in flavor cpu; cpu 28800m, memory 235929Mi in flavor "
        "gpu (nominal, no cohort); podSet controller gets flavor cpu, then podSet workers (cpu 335, memory "
        "600Gi) fits no flavor; Kueue would keep it pending with \"couldn't assign flavors to pod set workers: "
        "insufficient quota for cpu in flavor cpu, previously considered podsets requests (450m) + current "
        "podset request (335) > maximum capacity (14400m), insufficient quota for cpu in flavor gpu, "
        "previously considered podsets requests (0) + current podset request (335) > maximum capacity "
        "(28800m), insufficient quota for memory in flavor cpu, previously considered podsets requests "
        "(1792Mi) + current podset request (600Gi) > maximum capacity (58982Mi), insufficient quota for "
        "memory in flavor gpu, previously considered podsets requests (0) + current podset request (600Gi) > "
        'maximum capacity (235929Mi)"',
    ),
    "sweep-queue-missing-in-namespace": (
        "aiperf-kueue:sweeps[0].queue: llama-sweep: AIPerf's preflight would fail every AIPerfJob of the "
        "sweep (phase Failed, \"Pre-flight failed: Kueue Queue: Kueue LocalQueue 'default' not found. Create "
        'it or remove scheduling.queueName from spec."); name a LocalQueue of namespace bench-team-b '
        "(aiperf-queue), or create 'default' there (a namespace's localQueue, or defaultQueue: true for "
        "'default')",
    ),
    "sweep-requests-per-concurrency-string": (
        "aiperf-kueue:sweeps[0].requestsPerConcurrency: llama-sweep: must be a whole number (e.g. "
        "requestsPerConcurrency: 8), got '10', text because of its quotes",
    ),
    "sweep-undefined-priority-class": (
        "aiperf-kueue:sweeps[0].priorityClass: llama-sweep: unknown WorkloadPriorityClass 'benchmark-urgent'; "
        "declared: benchmark-high, benchmark-low (aiperf-kueue:priorityClasses)",
    ),
    "sweep-unknown-namespace": (
        "aiperf-kueue:sweeps[0].namespace: llama-sweep: namespace 'bench-nowhere' belongs to no ClusterQueue, "
        "so no LocalQueue exists there and the job would stay Queued forever; list it in a ClusterQueue's "
        "namespaces",
    ),
    "template-type-without-template": (
        "aiperf-kueue:jobs[0].spec.benchmark.endpoint: llama-latency: endpoint.template is required when "
        "endpoint.type is 'template'",
    ),
    "toleration-without-key-equal": (
        "aiperf-kueue:jobs[0].spec.podTemplate.tolerations[0]: llama-latency: a toleration without key must "
        "use operator Exists (it then tolerates every taint)",
    ),
    "two-datasets": ("aiperf-kueue:jobs[0].spec.benchmark.datasets: llama-latency: must have at most 1 items, got 2",),
    "uncovered-init-container-resource": (
        "aiperf-kueue:jobs[0]: llama-latency: requests ephemeral-storage 20Gi, which ClusterQueue team-a does "
        "not cover: it would wait forever with 'resource ephemeral-storage unavailable in ClusterQueue'; add "
        "ephemeral-storage to queues.coveredResources (with the pools' extraResources) or drop the request",
    ),
    "undefined-priority-class": (
        "aiperf-kueue:jobs[0].priorityClass: llama-latency: unknown WorkloadPriorityClass 'benchmark-urgent'; "
        "declared: benchmark-high, benchmark-low (aiperf-kueue:priorityClasses)",
    ),
    "unknown-endpoint-key": (
        "aiperf-kueue:jobs[0].spec.benchmark.endpoint.url: llama-latency: unknown key 'url' (did you mean "
        "'urls'?); allowed: urls, urlStrategy, type, path, apiKey, timeout, streaming, transport, "
        "connectionReuse, useLegacyMaxTokens, useServerTokenCount, perChunkUsage, template, headers, extra, "
        "downloadVideoContent, requestContentType, sessionHeader, uuidAndStrip, waitForModelTimeout, "
        "waitForModelInterval, waitForModelMode, resetKvCache, serverProfiler",
    ),
    "unknown-namespace": (
        "aiperf-kueue:jobs[0].namespace: llama-latency: namespace 'bench-nowhere' belongs to no ClusterQueue, "
        "so no LocalQueue exists there and the job would stay Queued forever; list it in a ClusterQueue's "
        "namespaces",
    ),
    "untolerated-taint-and-node-selector": (
        "aiperf-kueue:jobs[0]: llama-latency: AIPerf 0.13.0 would fail the AIPerfJob (status.error "
        '"Pre-flight failed: Per-Node Schedulability: No single node can fit the largest pod (3.4 CPU, 6.0Gi '
        "mem). Add larger nodes or reduce pod resource requirements.\"); every pool's nodes are excluded by a "
        "NoSchedule/NoExecute taint the pod template does not tolerate or by its nodeSelector; the operator "
        "checks spec.podTemplate's own tolerations, not the ones Kueue adds for a flavor, so add the pool's "
        "tolerations to spec.podTemplate.tolerations",
        "aiperf-kueue:sweeps[0]: llama-sweep: AIPerf 0.13.0 would fail every AIPerfJob of the sweep "
        '(status.error "Pre-flight failed: Per-Node Schedulability: No single node can fit the largest pod '
        "(3.4 CPU, 6.0Gi mem). Add larger nodes or reduce pod resource requirements.\"); every pool's nodes "
        "are excluded by a NoSchedule/NoExecute taint the pod template does not tolerate or by its "
        "nodeSelector; the operator checks spec.podTemplate's own tolerations, not the ones Kueue adds for a "
        "flavor, so add the pool's tolerations to spec.podTemplate.tolerations",
    ),
    "wait-for-model-mode-without-timeout": (
        "aiperf-kueue:jobs[0].spec.benchmark.endpoint: llama-latency: waitForModelMode has no effect unless "
        "waitForModelTimeout is positive; set waitForModelTimeout to enable the readiness probe",
    ),
    "warmup-shorthand": (
        "aiperf-kueue:jobs[0].spec.benchmark: llama-latency: set phases or its shorthand warmup, not both",
    ),
    "workers-below-memory-floor": (
        "aiperf-kueue:jobs[0].spec.benchmark.runtime.workersPerPod: llama-latency: AIPerf 0.13.0 would fail "
        'the AIPerfJob (status.error "Pre-flight failed: Dry Run: Check failed with error: WORKER_POD memory '
        "budget (4096Mi) leaves worker containers below the 162Mi worker import-memory floor. Increase "
        'AIPERF_K8S_WORKER_POD_MEMORY or reduce --workers-per-pod / --record-processors-per-pod."); a worker '
        "pod's 4096Mi split over 1 worker-pod-manager + 9 worker(s) + 9 record processor(s) leaves each "
        "worker 146Mi, below the 162Mi a worker needs: raise operator.sizing.workerPod or lower "
        "runtime.workersPerPod / recordProcessorsPerPod (19 containers per worker pod)",
    ),
    "workers-not-divisible": (
        "aiperf-kueue:jobs[0].spec.benchmark.runtime.workers: llama-latency: AIPerf 0.13.0 would fail the "
        'AIPerfJob (status.error "total_workers=15 is not a multiple of workers_per_pod=10, and a JobSet '
        "replicated job cannot express a partial final pod. Use a multiple of 10 (e.g. 10 or 20), or set "
        'runtime.workers_per_pod to a value that divides 15."); 15 workers is not a multiple of workersPerPod '
        "10, and a JobSet cannot express a partial final pod: use 10 or 20, or set runtime.workersPerPod to a "
        "divisor of 15",
    ),
}

#: Files whose problem is outside jobs/sweeps, and the config key their line names.
NOT_IN_JOBS = {"operator-default-queue-missing": "operator"}
#: Files that change a key besides jobs and sweeps to set their problem up.
SETUP_KEYS = {
    "operator-default-queue-missing": {"operator"},
    "workers-below-memory-floor": {"operator"},
    "pulumi-name-collision": {"queues"},
    "pods-quota-too-small": {"inventory", "queues"},
    "untolerated-taint-and-node-selector": {"inventory"},
}
_ENTRY = re.compile(r"^aiperf-kueue:(jobs|sweeps)\[(\d+)\][^:]*: (.*)$")


def base_values() -> dict[str, Any]:
    """The stack every bad file starts from: duplicate-job-names without its second job."""
    values, _ = read_stack_file(BAD_JOBS / "duplicate-job-names.yaml")
    values = copy.deepcopy(values)
    del values["jobs"][1]
    return values


def test_every_bad_job_stack_has_an_expectation() -> None:
    assert {p.stem for p in BAD_JOBS.glob("*.yaml")} == set(EXPECTED)
    assert len(EXPECTED) >= 20
    assert not [p.name for p in BAD_JOBS.iterdir() if p.suffix != ".yaml"]


def test_the_shared_base_is_valid() -> None:
    values = base_values()
    plan = plan_stack(parse_config(values, "base.yaml"), "base.yaml", ROOT)
    assert [a.entry.name for a in plan.jobs.admissions] == [
        "llama-latency",
        "llama-sweep-c1",
        "llama-sweep-c8",
        "llama-sweep-c32",
    ]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_job_stack_differs_from_the_base_only_where_expected(name: str) -> None:
    values, _ = read_stack_file(BAD_JOBS / f"{name}.yaml")
    base = base_values()
    changed = {k for k in set(values) | set(base) if values.get(k) != base.get(k)}
    assert changed - {"jobs", "sweeps"} == SETUP_KEYS.get(name, set())
    assert changed, name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_line_names_the_job_or_sweep(name: str) -> None:
    values, _ = read_stack_file(BAD_JOBS / f"{name}.yaml")
    for line in EXPECTED[name]:
        if name in NOT_IN_JOBS:
            assert line.startswith(f"aiperf-kueue:{NOT_IN_JOBS[name]}."), line
            continue
        match = _ENTRY.match(line)
        assert match is not None, line
        key, index, message = match.groups()
        assert values[key][int(index)]["name"] in message, line


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_plan_rejects_bad_job_stack(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_program(*args: object, **kwargs: object) -> None:
        pytest.fail(f"run_program was called for invalid stack {name}")

    monkeypatch.setattr(aiperf_kueue.cli.cli, "run_program", no_program)
    path = BAD_JOBS / f"{name}.yaml"
    out = tmp_path / "out"

    code = main(["plan", str(path), "--out", str(out)])

    captured = capsys.readouterr()
    assert (code, captured.out) == (2, "")
    assert "Traceback" not in captured.err
    assert captured.err.splitlines() == [f"{path}: {line}" for line in EXPECTED[name]]
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def registrations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The type of every resource the program asks the mock engine to register."""
    seen: list[str] = []
    original = engine._RecordingMonitor.RegisterResource

    def spy(self: engine._RecordingMonitor, request: Any) -> Any:
        if request.type != "pulumi:pulumi:Stack":
            seen.append(request.type)
        return original(self, request)

    monkeypatch.setattr(engine._RecordingMonitor, "RegisterResource", spy)
    return seen


def test_registration_spy_sees_the_valid_base(registrations: list[str]) -> None:
    run = engine.run_program("base", base_values(), set())
    assert registrations.count("kubernetes:aiperf.nvidia.com/v1alpha1:AIPerfJob") == 4
    assert len(registrations) == len(run.resources)


@pytest.mark.parametrize("name", ["missing-endpoint-urls", "job-too-big", "duplicate-job-names"])
def test_program_under_pulumi_stops_before_registering(name: str, registrations: list[str]) -> None:
    values, secret_keys = read_stack_file(BAD_JOBS / f"{name}.yaml")
    source = f"stacks/Pulumi.{name}.yaml"  # how components.stack_config names the stack under Pulumi

    with pytest.raises(pulumi.RunError) as raised:
        engine.run_program(name, values, secret_keys)

    assert str(raised.value).splitlines() == [
        "invalid stack config:",
        *[f"{source}: {line}" for line in EXPECTED[name]],
    ]
    assert registrations == []
