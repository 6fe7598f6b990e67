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

import offline.cli
from aiperf_kueue.loader import parse_config, read_stack_file
from aiperf_kueue.stack_plan import plan_stack
from offline import engine
from offline.cli import main

ROOT = Path(__file__).resolve().parents[1]
BAD_JOBS = Path(__file__).resolve().parent / "bad_jobs"

#: Stack file → its problem lines, after ``<stack file>: ``, exactly.
EXPECTED: dict[str, tuple[str, ...]] = {
    "bad-resource-mode": (
        "aiperf-kueue:jobs[0].spec.resourceMode: llama-latency: must be one of 'guaranteed', 'burstable' "
        "or 'none', got 'fast'",
    ),
    "duplicate-job-names": (
        "aiperf-kueue:jobs[1].name: AIPerfJob bench-team-a/llama-latency is already declared by jobs[0]",
    ),
    "endpoint-path-without-slash": (
        "aiperf-kueue:jobs[0].spec.benchmark.endpoint: llama-latency: endpoint.path must start with '/' "
        "(e.g. '/v1/chat/completions', not 'v1/chat/completions')",
    ),
    "extra-pod-spec-security-context": (
        "aiperf-kueue:jobs[0].spec.podTemplate.extraPodSpec: llama-latency: may not set securityContext "
        "(security-critical or operator-owned PodSpec keys; the operator rejects them)",
    ),
    "job-name-36-chars": (
        "aiperf-kueue:jobs[0].name: must be at most 35 characters (AIPerf job-id limit), got 36 "
        "('llama-latency-xxxxxxxxxxxxxxxxxxxxxx')",
    ),
    "job-name-not-dns": (
        "aiperf-kueue:jobs[0].name: must be a DNS-1123 label (lower-case letters, digits and '-', "
        "starting and ending with a letter or digit), got 'Llama_Latency'",
    ),
    "job-too-big": (
        "aiperf-kueue:jobs[0]: llama-latency: needs cpu 15450m, memory 411392Mi; "
        "ClusterQueue team-a can reach at most cpu 14400m, memory 58982Mi in flavor cpu; cpu 28800m, "
        "memory 235930Mi in flavor gpu (nominal, no cohort); podSet controller gets flavor cpu, then podSet "
        "workers (cpu 15, memory 400Gi) fits no flavor; Kueue would keep it pending with \"couldn't assign "
        "flavors to pod set workers: insufficient quota for cpu in flavor cpu, previously considered podsets "
        "requests (450m) + current podset request (15) > maximum capacity (14400m), insufficient quota for "
        "memory in flavor cpu, previously considered podsets requests (1792Mi) + current podset request (400Gi) "
        "> maximum capacity (58982Mi), insufficient quota for memory in flavor gpu, previously considered "
        'podsets requests (0) + current podset request (400Gi) > maximum capacity (235930Mi)"',
    ),
    "job-without-spec": ("aiperf-kueue:jobs[0].spec: llama-latency: required, but not set",),
    "missing-endpoint-urls": (
        "aiperf-kueue:jobs[0].spec.benchmark.endpoint.urls: llama-latency: required, but not set",
    ),
    "multi-run-three-runs": (
        "aiperf-kueue:jobs[0].spec: llama-latency: AIPerfJob.spec.multiRun must describe one run without "
        "convergence (numRuns <= 1, no convergence); use kind AIPerfSweep for multi-run orchestration",
    ),
    "node-affinity-gt-not-integer": (
        "aiperf-kueue:jobs[0].spec.podTemplate.extraPodSpec.affinity.nodeAffinity."
        "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: "
        "llama-latency: must be one integer (as a string) with operator Gt, got ['many']",
    ),
    "node-affinity-matches-no-flavor": (
        "aiperf-kueue:jobs[0]: llama-latency: its pods' nodeSelector, affinity and tolerations "
        "(spec.podTemplate) match no flavor of ClusterQueue team-a (the pools' nodeLabels and nodeTaints); "
        "Kueue would keep it pending with \"couldn't assign flavors to pod set controller: flavor cpu doesn't "
        "match node affinity, flavor gpu doesn't match node affinity\"",
    ),
    "node-selector-matches-no-flavor": (
        "aiperf-kueue:jobs[0]: llama-latency: its pods' nodeSelector, affinity and tolerations "
        "(spec.podTemplate) match no flavor of ClusterQueue team-a (the pools' nodeLabels and nodeTaints); "
        "Kueue would keep it pending with \"couldn't assign flavors to pod set controller: flavor cpu doesn't "
        "match node affinity, flavor gpu doesn't match node affinity\"",
    ),
    "operator-default-queue-missing": (
        "aiperf-kueue:operator.defaultQueue: LocalQueue 'default' must exist in every benchmark "
        "namespace, or the operator stamps a queue label Kueue can never resolve there; missing in: "
        "bench-team-b (set their localQueue to it, or defaultQueue: true for 'default')",
    ),
    "phase-concurrency-zero": (
        "aiperf-kueue:jobs[0].spec.benchmark.phases[1].concurrency: llama-latency: must be >= 1, got 0",
    ),
    "pods-quota-too-small": (
        "aiperf-kueue:jobs[0]: llama-latency: needs cpu 750m, memory 9984Mi, pods 3; ClusterQueue team-a can "
        "reach at most cpu 14400m, memory 58982Mi, pods 2 in flavor cpu; cpu 28800m, memory 235930Mi, pods 0 "
        "in flavor gpu (nominal, no cohort); podSet controller gets flavor cpu, then podSet workers (cpu 300m, "
        "memory 8Gi, pods 2) fits no flavor; Kueue would keep it pending with \"couldn't assign flavors to pod "
        "set workers: insufficient quota for pods in flavor cpu, previously considered podsets requests (1) + "
        "current podset request (2) > maximum capacity (2), insufficient quota for pods in flavor gpu, "
        'previously considered podsets requests (0) + current podset request (2) > maximum capacity (0)"',
    ),
    "profiling-shorthand-in-sweep": (
        "aiperf-kueue:sweeps[0].spec.benchmark.profiling: llama-sweep: the operator sizes workers from "
        "benchmark.phases only, so a profiling shorthand would get one worker whatever its concurrency; "
        "write it as a phases entry: phases: [{name: profiling, ...}]",
    ),
    "pulumi-name-collision": (
        "aiperf-kueue:jobs[1].name: AIPerfJob bench-team-a-llama/latency and bench-team-a/llama-latency "
        "(jobs[0]) would share the Pulumi resource name 'bench-team-a-llama-latency' (namespace and name "
        "joined by '-'); rename one",
    ),
    "queue-missing-in-namespace": (
        "aiperf-kueue:jobs[0].queue: llama-latency: AIPerf's preflight would fail the AIPerfJob (phase "
        "Failed, \"Pre-flight failed: Kueue Queue: Kueue LocalQueue 'fast-lane' not found. Create it or "
        'remove scheduling.queueName from spec."); name a LocalQueue of namespace bench-team-a '
        "(aiperf-queue, default), or create 'fast-lane' there (a namespace's localQueue, or "
        "defaultQueue: true for 'default')",
    ),
    "retain-on-delete-string": (
        "aiperf-kueue:jobs[0].retainOnDelete: llama-latency: must be true or false, got 'yes' (YAML 1.2, "
        "which Pulumi reads, has only true and false)",
    ),
    "scheduling-set-by-hand": (
        "aiperf-kueue:jobs[0].spec.scheduling: llama-latency: is set by aiperf-kueue from the job's "
        "queue and priorityClass; use `queue` / `priorityClass` on the job instead of spec.scheduling",
    ),
    "snake-case-key": (
        "aiperf-kueue:jobs[0].spec: llama-latency: unknown key 'resource_mode': the AIPerfJob CRD uses "
        "camelCase, write 'resourceMode'",
    ),
    "spec-sweep-set": (
        "aiperf-kueue:jobs[0].spec.sweep: llama-latency: AIPerfJob.spec.sweep must be null/omitted; "
        "declare a concurrency sweep in aiperf-kueue:sweeps",
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
        "'llama-3-1-8b-instruct-sweep-xy-c1024' (36 characters); AIPerf job names are at most 35 "
        "characters: shorten the sweep name to at most 29 characters",
    ),
    "sweep-phase-missing": (
        "aiperf-kueue:sweeps[0]: sweep 'llama-sweep': spec.benchmark.phases has no phase named 'steady' "
        "(phases: profiling)",
    ),
    "sweep-point-duplicates-job": (
        "aiperf-kueue:sweeps[0]: AIPerfJob bench-team-b/llama-sweep-c8 (sweep 'llama-sweep') is already "
        "declared by jobs[0]",
    ),
    "sweep-point-too-big": (
        "aiperf-kueue:sweeps[0]: llama-sweep-c100000: needs cpu 15450m, memory 411392Mi; "
        "ClusterQueue team-b can reach at most cpu 14400m, memory 58982Mi in flavor cpu; cpu 28800m, "
        "memory 235929Mi in flavor gpu (nominal, no cohort); podSet controller gets flavor cpu, then podSet "
        "workers (cpu 15, memory 400Gi) fits no flavor; Kueue would keep it pending with \"couldn't assign "
        "flavors to pod set workers: insufficient quota for cpu in flavor cpu, previously considered podsets "
        "requests (450m) + current podset request (15) > maximum capacity (14400m), insufficient quota for "
        "memory in flavor cpu, previously considered podsets requests (1792Mi) + current podset request (400Gi) "
        "> maximum capacity (58982Mi), insufficient quota for memory in flavor gpu, previously considered "
        'podsets requests (0) + current podset request (400Gi) > maximum capacity (235929Mi)"',
    ),
    "sweep-queue-missing-in-namespace": (
        "aiperf-kueue:sweeps[0].queue: llama-sweep: AIPerf's preflight would fail every AIPerfJob of the "
        "sweep (phase Failed, \"Pre-flight failed: Kueue Queue: Kueue LocalQueue 'default' not found. "
        'Create it or remove scheduling.queueName from spec."); name a LocalQueue of namespace '
        "bench-team-b (aiperf-queue), or create 'default' there (a namespace's localQueue, or "
        "defaultQueue: true for 'default')",
    ),
    "sweep-requests-per-concurrency-string": (
        "aiperf-kueue:sweeps[0].requestsPerConcurrency: llama-sweep: must be a whole number (e.g. "
        "requestsPerConcurrency: 8), got '10', text because of its quotes",
    ),
    "sweep-undefined-priority-class": (
        "aiperf-kueue:sweeps[0].priorityClass: llama-sweep: unknown WorkloadPriorityClass "
        "'benchmark-urgent'; declared: benchmark-high, benchmark-low (aiperf-kueue:priorityClasses)",
    ),
    "sweep-unknown-namespace": (
        "aiperf-kueue:sweeps[0].namespace: llama-sweep: namespace 'bench-nowhere' belongs to no ClusterQueue, so "
        "no LocalQueue exists there and the job would stay Queued forever; list it in a ClusterQueue's namespaces",
    ),
    "template-type-without-template": (
        "aiperf-kueue:jobs[0].spec.benchmark.endpoint: llama-latency: endpoint.template is required when "
        "endpoint.type='template'",
    ),
    "toleration-without-key-equal": (
        "aiperf-kueue:jobs[0].spec.podTemplate.tolerations[0]: llama-latency: a toleration without key must use "
        "operator Exists (it then tolerates every taint)",
    ),
    "two-datasets": ("aiperf-kueue:jobs[0].spec.benchmark.datasets: llama-latency: must have at most 1 items, got 2",),
    "uncovered-init-container-resource": (
        "aiperf-kueue:jobs[0]: llama-latency: requests ephemeral-storage 20Gi, which ClusterQueue team-a "
        "does not cover: it would wait forever with 'resource ephemeral-storage unavailable in "
        "ClusterQueue'; add ephemeral-storage to queues.coveredResources (with the pools' "
        "extraResources) or drop the request",
    ),
    "undefined-priority-class": (
        "aiperf-kueue:jobs[0].priorityClass: llama-latency: unknown WorkloadPriorityClass "
        "'benchmark-urgent'; declared: benchmark-high, benchmark-low (aiperf-kueue:priorityClasses)",
    ),
    "unknown-endpoint-key": (
        "aiperf-kueue:jobs[0].spec.benchmark.endpoint.url: llama-latency: unknown key 'url' (did you mean "
        "'urls'?); allowed: "
        "urls, urlStrategy, type, path, apiKey, timeout, streaming, transport, awsRegion, awsProfile, "
        "authType, awsService, connectionReuse, useLegacyMaxTokens, useServerTokenCount, perChunkUsage, "
        "template, headers, extra, downloadVideoContent, requestContentType, sessionHeader, "
        "uuidAndStrip, waitForModelTimeout, waitForModelInterval, waitForModelMode, resetKvCache, "
        "serverProfiler",
    ),
    "untolerated-taint-and-node-selector": (
        "aiperf-kueue:jobs[0]: llama-latency: its pods' nodeSelector, affinity and tolerations "
        "(spec.podTemplate) match no flavor of ClusterQueue team-a (the pools' nodeLabels and nodeTaints); "
        "Kueue would keep it pending with \"couldn't assign flavors to pod set controller: flavor gpu doesn't "
        'match node affinity, untolerated taint {dedicated bench NoSchedule <nil>} in flavor cpu"',
    ),
    "unknown-namespace": (
        "aiperf-kueue:jobs[0].namespace: llama-latency: namespace 'bench-nowhere' belongs to no "
        "ClusterQueue, so no LocalQueue exists there and the job would stay Queued forever; list it in a "
        "ClusterQueue's namespaces",
    ),
    "warmup-shorthand": (
        "aiperf-kueue:jobs[0].spec.benchmark.warmup: llama-latency: the operator sizes workers from "
        "benchmark.phases only, so a warmup shorthand would get one worker whatever its concurrency; "
        "write it as a phases entry: phases: [{name: warmup, ...}]",
    ),
    "workers-not-divisible": (
        "aiperf-kueue:jobs[0].spec.benchmark.runtime.workers: llama-latency: 15 workers is not a "
        "multiple of workersPerPod 10, and a JobSet cannot express a partial final pod (the operator "
        "fails the AIPerfJob): use 10 or 20, or set runtime.workersPerPod to a divisor of 15",
    ),
}

#: Files whose problem is outside jobs/sweeps, and the config key their line names.
NOT_IN_JOBS = {"operator-default-queue-missing": "operator"}
#: Files that change a key besides jobs and sweeps to set their problem up.
SETUP_KEYS = {
    "operator-default-queue-missing": {"operator"},
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

    monkeypatch.setattr(offline.cli, "run_program", no_program)
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
