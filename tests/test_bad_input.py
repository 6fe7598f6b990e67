"""Every stack file in tests/bad_stacks/ is rejected cleanly.

Each file is a complete stack that is valid except for one problem. ``aiperf-kueue plan``
must exit 2 with one ``<stack file>: aiperf-kueue:<key path>: <message>`` line per
problem, write nothing and register nothing; under Pulumi the program must stop with
``pulumi.RunError`` before registering any resource.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pulumi
import pytest

import aiperf_kueue.cli.cli
from aiperf_kueue.cli import engine
from aiperf_kueue.cli.cli import main
from aiperf_kueue.stackfile.loader import read_stack_file

ROOT = Path(__file__).resolve().parents[1]
BAD_STACKS = Path(__file__).resolve().parent / "bad_stacks"

DNS_LABEL = "must be a DNS-1123 label (lower-case letters, digits and '-', starting and ending with a letter or digit)"
OLDER = (
    "is older than this program models: before 0.10.0 Kueue has no managedJobsNamespaceSelector and other rules "
    "the program relies on (supported >=0.10.0, <0.22.0; tested: 0.10.1, 0.19.2); pin a supported release"
)
NEWER = (
    "is newer than this program models: it knows Kueue's API rules, manager configuration and chart up to 0.21.x "
    "(supported >=0.10.0, <0.22.0; tested: 0.10.1, 0.19.2); pin a supported release"
)
#: Why AIPerf 0.13.0's operator sees no Kueue 0.20.7 (aiperf_kueue.upstream.compat.api_gap).
GAP_0_20_7 = (
    "AIPerf 0.13.0's operator reads LocalQueues only through kueue.x-k8s.io/v1beta1 (aiperf/kubernetes/cr_refs.py), "
    "which Kueue 0.20.7 no longer serves (v1beta2 only), so its preflight takes Kueue for not installed"
)

#: A problem line after ``<stack file>: ``: the exact text, or (key path, message substring)
#: where the message lists long generated text.
Expected = str | tuple[str, str]

EXPECTED: dict[str, tuple[Expected, ...]] = {
    # --- numbers and quantities
    "pool-gpus-negative": ("aiperf-kueue:inventory.pools[1].gpus: must be >= 0, got -8",),
    "pool-nodes-zero": ("aiperf-kueue:inventory.pools[0].nodes: must be >= 1, got 0",),
    "pool-nodes-not-a-number": (
        "aiperf-kueue:inventory.pools[0].nodes: must be a whole number (e.g. nodes: 8), got 'four'",
    ),
    "pool-cpu-not-a-quantity": (
        "aiperf-kueue:inventory.pools[0].cpu: "
        'must be a Kubernetes quantity such as "16", "1500m" or "64Gi", got \'lots\'',
    ),
    "pool-memory-negative": ("aiperf-kueue:inventory.pools[1].memory: must be >= 0, got '-256Gi'",),
    "pool-cpu-gone-after-headroom": (
        "aiperf-kueue:inventory.pools[0]: pool 'cpu' has no CPU or memory left after headroom",
    ),
    "headroom-100": ("aiperf-kueue:inventory.headroom: must be < 100, got 100",),
    "headroom-negative": (
        'aiperf-kueue:inventory.headroom: must be a percentage from 0 to 100, such as 25, 12.5 or "12.5%", got -1',
    ),
    "priority-value-out-of-int32": ("aiperf-kueue:priorityClasses[0].value: must be <= 2147483647, got 2147483648",),
    "max-priority-threshold-out-of-int32": (
        "aiperf-kueue:queues.clusterQueues[0].preemption.borrowWithinCohort.maxPriorityThreshold: "
        "must be <= 2147483647, got 2147483648",
    ),
    "toleration-seconds-out-of-int64": (
        "aiperf-kueue:inventory.pools[1].tolerations[0].tolerationSeconds: "
        "must be <= 9223372036854775807, got 9223372036854776000 "
        "(past int64 Pulumi reads an integer as a float, so its last digits may differ)",
    ),
    "fair-sharing-weight-with-spaces": (
        "aiperf-kueue:queues.clusterQueues[0].fairSharing.weight: "
        'must be a Kubernetes quantity such as "16", "1500m" or "64Gi", got \' 2 \'',
    ),
    # --- unknown keys
    "unknown-config-key-typo": (
        # The allowed keys are generated from StackConfig and grow with it.
        (
            "inventroy",
            "unknown config key (did you mean 'inventory'?); allowed keys: cluster, kueue, inventory, queues, ",
        ),
        "aiperf-kueue:inventory: required, but not set",
    ),
    "unknown-pool-field": (
        "aiperf-kueue:inventory.pools[1].gpu: unknown key 'gpu' (did you mean 'gpus'?); allowed: name, nodes, "
        "cpu, memory, gpus, gpuResource, extraResources, nodeLabels, tolerations, nodeTaints, cpuAndMemoryFor",
    ),
    "unknown-cluster-queue-field": (
        "aiperf-kueue:queues.clusterQueues[0].borrowLimit: unknown key 'borrowLimit' (did you mean "
        "'borrowingLimit'?); allowed: name, share, "
        "nominalQuota, borrowingLimit, lendingLimit, preemption, queueingStrategy, flavorFungibility, "
        "fairSharing, stopPolicy, cohortName, namespaces",
    ),
    # --- missing required keys
    "missing-pools": ("aiperf-kueue:inventory.pools: required, but not set",),
    "missing-pool-cpu": ("aiperf-kueue:inventory.pools[0].cpu: required, but not set",),
    "missing-cluster-queues": ("aiperf-kueue:queues.clusterQueues: required, but not set",),
    "missing-cluster-queue-name": ("aiperf-kueue:queues.clusterQueues[1].name: required, but not set",),
    "taint-missing-effect": ("aiperf-kueue:inventory.pools[1].nodeTaints[0].effect: required, but not set",),
    # --- wrong types
    "pools-as-mapping": (
        "aiperf-kueue:inventory.pools: must be a list, got a mapping of 1 key (cpu: a mapping of 3 keys)",
    ),
    "namespace-create-not-bool": (
        "aiperf-kueue:queues.clusterQueues[0].namespaces[0].create: must be true or false, got 'maybe'",
    ),
    "share-not-a-number": (
        "aiperf-kueue:queues.clusterQueues[0].share: must be a percentage from 0 to 100, such as 25, 12.5 or "
        "\"12.5%\", got 'half'",
    ),
    # Strict: a bool is not a number, a string is not a bool.
    "pool-gpus-true": ("aiperf-kueue:inventory.pools[1].gpus: must be a whole number (e.g. gpus: 8), got true",),
    "pool-nodes-true": ("aiperf-kueue:inventory.pools[0].nodes: must be a whole number (e.g. nodes: 8), got true",),
    "priority-value-true": ("aiperf-kueue:priorityClasses[0].value: must be a whole number (e.g. value: 8), got true",),
    "namespace-create-string-no": (
        "aiperf-kueue:queues.clusterQueues[0].namespaces[0].create: must be true or false, got 'no' (YAML "
        "1.2, which Pulumi reads, has only true and false)",
    ),
    # --- names
    "pool-name-uppercase": (f"aiperf-kueue:inventory.pools[1].name: {DNS_LABEL}, got 'GPU-H100'",),
    "cluster-queue-name-underscore": (f"aiperf-kueue:queues.clusterQueues[0].name: {DNS_LABEL}, got 'team_a'",),
    "namespace-name-64-chars": (
        "aiperf-kueue:queues.clusterQueues[0].namespaces[0].name: must be at most 63 characters, got 64 "
        "('bench-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa')",
    ),
    "local-queue-name-uppercase": (
        f"aiperf-kueue:queues.clusterQueues[0].namespaces[0].localQueue: {DNS_LABEL}, got 'AIPerf-Queue'",
    ),
    "priority-class-name-underscore": (f"aiperf-kueue:priorityClasses[0].name: {DNS_LABEL}, got 'benchmark_high'",),
    "cohort-name-uppercase": (f"aiperf-kueue:queues.cohort: {DNS_LABEL}, got 'Benchmarks'",),
    "namespace-name-trailing-newline": (
        f'aiperf-kueue:queues.clusterQueues[1].namespaces[0].name: {DNS_LABEL}, got "aiperf-benchmarks\\n"',
    ),
    "node-label-value-invalid": (
        "aiperf-kueue:inventory.pools[0].nodeLabels.node-pool: "
        "must be a label value (at most 63 characters of [A-Za-z0-9-_.]), got 'cpu pool'",
    ),
    # --- share and nominalQuota
    "share-and-nominal-quota-both": (
        "aiperf-kueue:queues.clusterQueues[1]: set exactly one of share and nominalQuota; both are set",
    ),
    "share-and-nominal-quota-neither": (
        "aiperf-kueue:queues.clusterQueues[1]: set exactly one of share and nominalQuota; neither is set",
    ),
    "share-120": (
        "aiperf-kueue:queues.clusterQueues[0].share: must be a percentage from 0 to 100, such as 25, 12.5 or "
        '"12.5%", got 120',
    ),
    "share-unknown-pool": (
        "aiperf-kueue:queues.clusterQueues[1].share.gpu-h200: unknown pool 'gpu-h200'; pools: cpu, gpu",
    ),
    "shares-over-100": (
        "aiperf-kueue:queues.clusterQueues[1].share: "
        "shares of pool 'gpu' add up to 110%, more than 100% (team-a 50, team-b 60)",
    ),
    "shares-over-100-by-a-little": (
        "aiperf-kueue:queues.clusterQueues[1].share: "
        "shares of pool 'cpu' add up to 100.0000001%, more than 100% (team-a 50, team-b 50.0000001)",
        "aiperf-kueue:queues.clusterQueues[1].share: "
        "shares of pool 'gpu' add up to 100.0000001%, more than 100% (team-a 50, team-b 50.0000001)",
    ),
    "nominal-quota-over-pool-total": (
        "aiperf-kueue:queues.clusterQueues[1].nominalQuota: "
        "quotas for nvidia.com/gpu in pool 'gpu' add up to 17, more than the pool's 16",
    ),
    "nominal-quota-unknown-pool": (
        "aiperf-kueue:queues.clusterQueues[1].nominalQuota.gpu-h200: unknown pool 'gpu-h200'; pools: cpu, gpu",
    ),
    "nominal-quota-unknown-resource": (
        "aiperf-kueue:queues.clusterQueues[1].nominalQuota.gpu.ephemeral-storage: "
        "'ephemeral-storage' is not a covered resource; covered: cpu, memory, nvidia.com/gpu",
    ),
    "nominal-quota-fractional-gpu": (
        'aiperf-kueue:queues.clusterQueues[1].nominalQuota.gpu["nvidia.com/gpu"]: '
        "must be a whole number, got '1500m'",
    ),
    "nominal-quota-sub-millicore-cpu": (
        "aiperf-kueue:queues.clusterQueues[1].nominalQuota.cpu.cpu: must be a whole number of millicores, got '0.0005'",
    ),
    "unreachable-cluster-queue": (
        "aiperf-kueue:queues.clusterQueues[1]: ClusterQueue 'team-b' has no quota and no cohort to borrow from: "
        "nothing queued there could ever be admitted",
    ),
    # --- borrowing and lending limits
    "borrowing-limit-without-cohort": (
        "aiperf-kueue:queues.clusterQueues[0].borrowingLimit: "
        "borrowingLimit needs a cohort (queues.cohort, or this queue's cohortName): Kueue accepts it only for a "
        "ClusterQueue in a cohort",
    ),
    "lending-limit-without-cohort": (
        "aiperf-kueue:queues.clusterQueues[0].lendingLimit: "
        "lendingLimit needs a cohort (queues.cohort, or this queue's cohortName): Kueue accepts it only for a "
        "ClusterQueue in a cohort",
    ),
    "lending-limit-over-nominal": (
        'aiperf-kueue:queues.clusterQueues[0].lendingLimit.gpu["nvidia.com/gpu"]: '
        "must be less than or equal to the nominalQuota: 9 > 8",
    ),
    "borrowing-limit-unknown-pool": (
        "aiperf-kueue:queues.clusterQueues[0].borrowingLimit.gpu-h200: unknown pool 'gpu-h200'; pools: cpu, gpu",
    ),
    "lending-limit-unknown-resource": (
        "aiperf-kueue:queues.clusterQueues[0].lendingLimit.cpu.pods: "
        "'pods' is not a covered resource; covered: cpu, memory, nvidia.com/gpu",
    ),
    # --- preemption, flavor fungibility, fair sharing
    "borrow-within-cohort-without-reclaim": (
        "aiperf-kueue:queues.clusterQueues[0].preemption.borrowWithinCohort.policy: "
        "Kueue rejects borrowWithinCohort.policy other than Never while reclaimWithinCohort is Never; "
        "set reclaimWithinCohort to LowerPriority or Any",
    ),
    "preemption-policy-unknown": (
        "aiperf-kueue:queues.clusterQueues[0].preemption.withinClusterQueue: "
        "must be one of 'Never', 'LowerPriority' or 'LowerOrNewerEqualPriority', got 'Always'",
    ),
    "flavor-fungibility-preference-old-kueue": (
        "aiperf-kueue:queues.clusterQueues[0].flavorFungibility.preference: "
        "flavorFungibility.preference needs Kueue >= 0.15, target is 0.14.0",
    ),
    "flavor-fungibility-preference-without-try-next": (
        "aiperf-kueue:queues.clusterQueues[0].flavorFungibility.preference: "
        "preference may only be set when whenCanBorrow and whenCanPreempt are both TryNextFlavor",
    ),
    "fair-sharing-weight-1n": (
        "aiperf-kueue:queues.clusterQueues[0].fairSharing.weight: a positive weight must be larger than 1n, got '1n'",
    ),
    # --- namespaces
    "namespace-claimed-twice": (
        "aiperf-kueue:queues.clusterQueues[1].namespaces[0].name: namespace 'bench-team-a' is already claimed by "
        "ClusterQueue 'team-a' (queues.clusterQueues[0].namespaces[0]); a namespace belongs to one ClusterQueue",
    ),
    "namespace-kube-system": (
        "aiperf-kueue:queues.clusterQueues[1].namespaces[0].name: Kueue's job webhooks ignore namespace "
        "'kube-system', so jobs there are never queued; use a dedicated benchmark namespace",
    ),
    "namespace-kueue-system": (
        "aiperf-kueue:queues.clusterQueues[1].namespaces[0].name: Kueue's job webhooks ignore namespace "
        "'kueue-system', so jobs there are never queued; use a dedicated benchmark namespace",
    ),
    "namespace-jobset-system": (
        "aiperf-kueue:queues.clusterQueues[1].namespaces[0].name: Kueue's job webhooks ignore namespace "
        "'jobset-system', so jobs there are never queued; use a dedicated benchmark namespace",
    ),
    "namespace-default-created": (
        "aiperf-kueue:queues.clusterQueues[1].namespaces[0].create: namespace 'default' exists in every cluster, "
        "so creating it fails with AlreadyExists; set create: false to only label it",
    ),
    "default-queue-named-default": (
        "aiperf-kueue:queues.clusterQueues[0].namespaces[0].defaultQueue: "
        "localQueue is already named 'default'; defaultQueue would create it twice",
    ),
    # --- duplicates
    "duplicate-pool-name": (
        "aiperf-kueue:inventory.pools[1].name: duplicate pool name 'cpu' (also at inventory.pools[0].name)",
    ),
    "duplicate-cluster-queue-name": (
        "aiperf-kueue:queues.clusterQueues[1].name: "
        "duplicate ClusterQueue name 'team-a' (also at queues.clusterQueues[0].name)",
    ),
    "duplicate-priority-class-name": (
        "aiperf-kueue:priorityClasses[1].name: "
        "duplicate priority class name 'benchmark-high' (also at priorityClasses[0].name)",
    ),
    # --- tolerations, taints, labels, extra resources
    "toleration-without-key-equal": (
        "aiperf-kueue:inventory.pools[1].tolerations[0]: a toleration without key must use operator Exists",
    ),
    "toleration-exists-with-value": (
        "aiperf-kueue:inventory.pools[1].tolerations[0]: a toleration with operator Exists must not have a value",
    ),
    "toleration-exists-with-empty-value": (
        "aiperf-kueue:inventory.pools[1].tolerations[0]: a toleration with operator Exists must not have a value",
    ),
    "toleration-seconds-without-no-execute": (
        "aiperf-kueue:inventory.pools[1].tolerations[0]: tolerationSeconds needs effect NoExecute",
    ),
    "taint-duplicate-key-effect": (
        "aiperf-kueue:inventory.pools[1].nodeTaints: "
        "taints must be unique by key and effect pair, nvidia.com/gpu:NoSchedule repeats",
    ),
    "taint-effect-unknown": (
        "aiperf-kueue:inventory.pools[1].nodeTaints[0].effect: "
        "must be one of 'NoSchedule', 'PreferNoSchedule' or 'NoExecute', got 'NoEvict'",
    ),
    "node-labels-more-than-8": ("aiperf-kueue:inventory.pools[0].nodeLabels: must have at most 8 items, got 9",),
    "extra-resources-not-covered": (
        "aiperf-kueue:inventory.pools[0].extraResources.ephemeral-storage: "
        "'ephemeral-storage' is not one of queues.coveredResources; list it there to give it a quota",
    ),
    "extra-resources-cpu": (
        "aiperf-kueue:inventory.pools[0].extraResources.cpu: cpu comes from the pool's cpu field, not extraResources",
    ),
    "gpu-resource-memory": (
        "aiperf-kueue:inventory.pools[1].gpuResource: must be the extended resource the GPUs are requested by "
        "(such as nvidia.com/gpu), got the standard resource 'memory'",
    ),
    "gpu-resource-also-covered": (
        "aiperf-kueue:queues.coveredResources[0]: 'example.com/gpu' is already covered as the gpuResource of pool "
        "'gpu' (the pools' GPU resources always are); remove it here, or give that pool a different gpuResource",
    ),
    "covered-pods-without-pool-pods": (
        "aiperf-kueue:queues.coveredResources[0]: 'pods' is covered but no pool has any: Kueue charges every "
        "workload one pods unit per pod, so nothing could ever be admitted; set the pools' extraResources.pods "
        "(e.g. 110, the kubelet's default maxPods)",
    ),
    "covered-resource-already-covered": (
        "aiperf-kueue:queues.coveredResources[0]: "
        "'cpu' is already covered (cpu, memory and the pools' GPU resources always are)",
    ),
    # --- Kueue version, apiVersion and per-version limits
    "kueue-version-0.9.0": (f"aiperf-kueue:kueue.version: Kueue 0.9.0 {OLDER}",),
    "kueue-version-0.22.0": (f"aiperf-kueue:kueue.version: Kueue 0.22.0 {NEWER}",),
    "kueue-v1beta1-on-0.20.7": (
        "aiperf-kueue:kueue: apiVersion v1beta1 is not served by Kueue 0.20.7: Kueue 0.20.0 stopped serving "
        "kueue.x-k8s.io/v1beta1 (every read and write of it is a 404); use apiVersion v1beta2 (or auto)",
    ),
    "kueue-0.20-job-names-its-queue": (
        f"aiperf-kueue:jobs[0].queue: smoke: {GAP_0_20_7}: a job with spec.scheduling.queueName fails it (\"Kueue "
        "is not installed, but LocalQueue '<q>' was explicitly requested\"). Fix: leave the queue to "
        "operator.defaultQueue (remove queue here, or --queue-name from aiperf kube profile): the operator labels the "
        "JobSet with its default queue and Kueue admits it through v1beta2",
    ),
    "kueue-0.20-no-default-queue": (
        f"aiperf-kueue:operator.defaultQueue: {GAP_0_20_7}; the operator's default queue is thus the only route into "
        "Kueue, and this stack has none: smoke would run without quota or gang admission. Fix: set "
        "operator.defaultQueue to auto (give every benchmark namespace the same localQueue) or to a LocalQueue each "
        "of them has",
    ),
    "kueue-0.20-chart-creates-queues": (
        "aiperf-kueue:operator.values.kueue.createQueues: the AIPerf 0.13.0 chart renders its queues only where "
        "kueue.x-k8s.io/v1beta1 is served (templates/kueue-queues.yaml checks .Capabilities.APIVersions), which Kueue "
        "0.20.7 no longer serves: it would silently create none; remove it (this program declares every queue)",
    ),
    "kueue-version-not-semver": ("aiperf-kueue:kueue.version: not a Kueue release version (x.y.z): 'latest'",),
    "kueue-v1beta2-on-0.10.1": (
        "aiperf-kueue:kueue: apiVersion v1beta2 is served only from Kueue 0.15; Kueue 0.10.1 needs v1beta1 (or auto)",
    ),
    "too-many-flavors-kueue-0.13": (
        "aiperf-kueue:inventory.pools: Kueue 0.13.0 allows at most 16 flavors per ClusterQueue resource group, "
        "got 17 pools",
    ),
    "too-many-flavors-kueue-0.19": (
        "aiperf-kueue:inventory.pools: Kueue 0.19.2 allows at most 64 flavors per ClusterQueue resource group, "
        "got 65 pools",
    ),
    "too-many-covered-resources-kueue-0.13": (
        (
            "queues.coveredResources",
            "Kueue 0.13.0 allows at most 16 covered resources, got 17 (cpu, memory, nvidia.com/gpu, "
            "example.com/device-01, ",
        ),
    ),
    "too-many-quotas-per-group-kueue-0.19": (
        "aiperf-kueue:inventory.pools: Kueue 0.19.2 allows at most 512 resource quotas per ClusterQueue resource "
        "group (flavors × covered resources), got 57 pools × 9 covered resources = 513; use fewer pools or fewer "
        "queues.coveredResources",
    ),
    "priority-description-too-long-v1beta2": (
        "aiperf-kueue:priorityClasses[0].description: must be at most 2048 characters in v1beta2, got 2049",
    ),
}


def _key_path(expected: Expected) -> str:
    if isinstance(expected, tuple):
        return expected[0]
    head = expected.removeprefix("aiperf-kueue:")
    # The key path ends at the first ": " (key paths themselves never contain one).
    return head.split(": ", 1)[0]


def _assert_lines(lines: list[str], source: str, expected: tuple[Expected, ...]) -> None:
    assert len(lines) == len(expected), lines
    for line, want in zip(lines, expected, strict=True):
        assert line.startswith(f"{source}: aiperf-kueue:"), line
        assert f"aiperf-kueue:{_key_path(want)}: " in line, line
        if isinstance(want, tuple):
            key, fragment = want
            assert line.startswith(f"{source}: aiperf-kueue:{key}: "), line
            assert fragment in line, line
        else:
            assert line == f"{source}: {want}"


def test_every_bad_stack_has_an_expectation() -> None:
    assert {p.stem for p in BAD_STACKS.glob("*.yaml")} == set(EXPECTED)
    assert len(EXPECTED) >= 35
    assert not [p.name for p in BAD_STACKS.iterdir() if p.suffix != ".yaml"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_plan_rejects_bad_stack(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_program(*args: object, **kwargs: object) -> None:
        pytest.fail(f"run_program was called for invalid stack {name}")

    monkeypatch.setattr(aiperf_kueue.cli.cli, "run_program", no_program)
    path = BAD_STACKS / f"{name}.yaml"
    out = tmp_path / "out"

    code = main(["plan", str(path), "--out", str(out)])

    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert "Traceback" not in captured.err
    _assert_lines(captured.err.splitlines(), str(path), EXPECTED[name])
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_plan_rejects_bad_stack_in_a_subprocess() -> None:
    path = BAD_STACKS / "pool-gpus-negative.yaml"
    result = subprocess.run(
        [sys.executable, "-m", "aiperf_kueue.cli.cli", "plan", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [f"{path}: aiperf-kueue:inventory.pools[1].gpus: must be >= 0, got -8"]
    assert not (ROOT / "out" / "pool-gpus-negative").exists()


@pytest.fixture
def registrations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The type of every resource the mock engine is asked to create."""
    seen: list[str] = []
    original = engine._Recorder.new_resource

    def spy(self: engine._Recorder, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, object]]:
        seen.append(args.typ)
        return original(self, args)

    monkeypatch.setattr(engine._Recorder, "new_resource", spy)
    return seen


def test_registration_spy_sees_a_valid_stack(registrations: list[str]) -> None:
    values, secret_keys = read_stack_file(ROOT / "stacks" / "Pulumi.dev.yaml")
    run = engine.run_program("dev", values, secret_keys)
    assert "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue" in registrations
    assert len(run.resources) == len(registrations)


@pytest.mark.parametrize("name", ["pool-gpus-negative", "shares-over-100", "unknown-config-key-typo"])
def test_program_under_pulumi_stops_before_registering(name: str, registrations: list[str]) -> None:
    values, secret_keys = read_stack_file(BAD_STACKS / f"{name}.yaml")
    source = f"stacks/Pulumi.{name}.yaml"  # how components.stack_config names the stack under Pulumi

    with pytest.raises(pulumi.RunError) as raised:
        engine.run_program(name, values, secret_keys)

    text = str(raised.value)
    assert "Traceback" not in text
    head, *lines = text.splitlines()
    assert head == "invalid stack config:"
    _assert_lines(lines, source, EXPECTED[name])
    assert registrations == []
