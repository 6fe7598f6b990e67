"""A MultiKueue fleet as stacks of this project: config, plan, manifests, secrets and review (offline)."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from aiperf_kueue.cli import cli
from aiperf_kueue.cli.engine import run_program
from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.config.multikueue import MultiKueue
from aiperf_kueue.installs.releases import kueue_manager_config
from aiperf_kueue.plan import multikueue_manifests as mk
from aiperf_kueue.plan.stack_plan import StackPlan, plan_values
from aiperf_kueue.review.destructive import LOSSES
from aiperf_kueue.review.diff import Plan, compare
from aiperf_kueue.stackfile.loader import read_stack, secret_placeholder
from aiperf_kueue.upstream.kueue import KueueTarget
from tests.support import ROOT

FLEET = ROOT / "tests" / "fleet_stacks"
V1BETA2 = KueueTarget.resolve("0.19.2", "auto")
V1BETA1 = KueueTarget.resolve("0.19.2", "v1beta1")
#: A ``secure:`` value as ``pulumi config set --secret`` writes it (never decrypted offline).
CIPHERTEXT = "v1:Zm9vYmFyYmF6:c2VjcmV0LWt1YmVjb25maWctdGV4dA=="


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    """A copy of the committed fleet (manager ``fleet``, workers ``gpu-east`` and ``gpu-west``) to edit."""
    for path in FLEET.glob("Pulumi.*.yaml"):
        shutil.copy(path, tmp_path / path.name)
    return tmp_path


def edit(directory: Path, stack: str, key: str, value: Any) -> None:
    """Set ``aiperf-kueue:<key>`` of a stack file (``None`` removes it)."""
    path = directory / f"Pulumi.{stack}.yaml"
    doc = yaml.safe_load(path.read_text())
    if value is None:
        doc["config"].pop(f"aiperf-kueue:{key}", None)
    else:
        doc["config"][f"aiperf-kueue:{key}"] = value
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def planned(directory: Path, stack: str) -> StackPlan:
    path = directory / f"Pulumi.{stack}.yaml"
    stack_file = read_stack(path)
    return plan_values(stack_file.values, str(path), None, provider=stack_file.provider)


def problem_lines(directory: Path, stack: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        planned(directory, stack)
    return caught.value.lines()


# --- what each stack gets from the others -----------------------------------------------------------------


def test_the_managers_quotas_are_its_workers_pools_summed_by_name() -> None:
    plan = planned(FLEET, "fleet")
    assert [p.model_dump(include={"name", "nodes"}) for p in plan.config.inventory.pools] == [
        {"name": "cpu", "nodes": 3},
        {"name": "cpu-large", "nodes": 1},
    ]
    assert plan.queues.quota_table() == {
        "benchmarks": {
            "cpu": {"cpu": "43200m", "memory": "176947Mi"},
            "cpu-large": {"cpu": "57600m", "memory": "235929Mi"},
        }
    }


def test_each_worker_gets_the_managers_queues_with_quotas_from_its_own_pools() -> None:
    east, west = planned(FLEET, "gpu-east"), planned(FLEET, "gpu-west")
    assert [(cq.name, [ns.name for ns in cq.namespaces]) for cq in east.config.queues.cluster_queues] == [
        ("benchmarks", ["aiperf-benchmarks"])
    ]
    assert east.queues.quota_table() == {"benchmarks": {"cpu": {"cpu": "28800m", "memory": "117964Mi"}}}
    assert west.queues.quota_table() == {
        "benchmarks": {
            "cpu": {"cpu": "14400m", "memory": "58982Mi"},
            "cpu-large": {"cpu": "57600m", "memory": "235929Mi"},
        }
    }
    assert west.fleet_table() == {"role": "worker", "manager": "fleet"}


def test_plan_shows_per_job_which_workers_could_run_it_and_on_which_flavor() -> None:
    table = planned(FLEET, "fleet").fleet_table()
    assert table is not None
    assert table["jobs"] == {"aiperf-benchmarks/smoke": {"east": {"flavor": ["cpu"]}, "west": {"flavor": ["cpu"]}}}
    assert {name: worker["quotas"] for name, worker in table["workers"].items()} == {
        "east": {"benchmarks": {"cpu": {"cpu": "28800m", "memory": "117964Mi"}}},
        "west": {
            "benchmarks": {
                "cpu": {"cpu": "14400m", "memory": "58982Mi"},
                "cpu-large": {"cpu": "57600m", "memory": "235929Mi"},
            }
        },
    }


def test_a_share_map_keeps_only_the_pools_a_worker_has(fleet: Path) -> None:
    queues = {
        "clusterQueues": [
            {
                "name": "benchmarks",
                "share": {"cpu": 50, "cpu-large": 100},
                "namespaces": [{"name": "aiperf-benchmarks"}],
            }
        ]
    }
    edit(fleet, "fleet", "queues", queues)
    assert planned(fleet, "gpu-east").queues.quota_table() == {
        "benchmarks": {"cpu": {"cpu": "14400m", "memory": "58982Mi"}}
    }


# --- the plan's text ----------------------------------------------------------------------------------------


def test_plan_prints_the_fleet_per_worker_and_where_each_job_can_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["plan", str(FLEET / "Pulumi.fleet.yaml"), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    fleet = out[out.index("MultiKueue manager") : out.index("AIPerfJobs (1)")].rstrip().splitlines()
    assert fleet == [
        "MultiKueue manager of 2 workers (the quotas above are the fleet's total: the workers' pools summed by name):",
        "  worker east (stack gpu-east):",
        "    ClusterQueue  flavor  cpu     memory",
        "    benchmarks    cpu     28800m  117964Mi",
        "    (pool total)  cpu     28800m  117964Mi",
        "  worker west (stack gpu-west):",
        "    ClusterQueue  flavor     cpu     memory",
        "    benchmarks    cpu        14400m  58982Mi",
        "    benchmarks    cpu-large  57600m  235929Mi",
        "    (pool total)  cpu        14400m  58982Mi",
        "    (pool total)  cpu-large  57600m  235929Mi",
        "  Where each job can run (per worker: the flavor its Kueue would admit it on, or never):",
        "    job                      east  west",
        "    aiperf-benchmarks/smoke  cpu   cpu",
    ]


# --- manifests ----------------------------------------------------------------------------------------------

MANAGER = MultiKueue.model_validate(
    {"role": "manager", "workers": [{"name": "east", "stack": "gpu-east"}, {"name": "west", "stack": "gpu-west"}]}
)
LABELS = {"app.kubernetes.io/part-of": "aiperf-kueue"}
ANNOTATIONS = {"pulumi.com/patchForce": "true"}


def test_the_admission_check_is_multikueues_and_names_its_config() -> None:
    assert mk.admission_check(MANAGER, V1BETA2) == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "AdmissionCheck",
        "metadata": {"name": "multikueue", "labels": LABELS, "annotations": ANNOTATIONS},
        "spec": {
            "controllerName": "kueue.x-k8s.io/multikueue",
            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "aiperf-fleet"},
        },
    }
    assert mk.multikueue_config(MANAGER, V1BETA2)["spec"] == {"clusters": ["east", "west"]}


def test_a_multikueue_cluster_reads_its_kubeconfig_from_a_secret_in_each_api_version() -> None:
    east = MANAGER.workers[0]
    assert mk.multikueue_cluster(east, V1BETA2)["spec"] == {
        "clusterSource": {"kubeConfig": {"location": "multikueue-east", "locationType": "Secret"}}
    }
    assert mk.multikueue_cluster(east, V1BETA1)["spec"] == {
        "kubeConfig": {"location": "multikueue-east", "locationType": "Secret"}
    }
    assert mk.kubeconfig_secret(east, "kueue-system") == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "multikueue-east",
            "namespace": "kueue-system",
            "labels": LABELS,
            "annotations": ANNOTATIONS,
        },
        "type": "Opaque",
    }


def test_the_managers_cluster_queues_carry_the_admission_check() -> None:
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {}, "spec": {"a": 1}}
    assert mk.with_admission_check(cq, "multikueue", V1BETA2)["spec"] == {
        "a": 1,
        "admissionChecksStrategy": {"admissionChecks": [{"name": "multikueue"}]},
    }
    assert mk.with_admission_check(cq, "multikueue", V1BETA1)["spec"] == {"a": 1, "admissionChecks": ["multikueue"]}
    resources = json.loads(cli.compute_plan(FLEET / "Pulumi.fleet.yaml").files["resources.json"])
    queue = next(r for r in resources if r["name"] == "queues-cq-benchmarks")
    assert queue["inputs"]["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "multikueue"}]}


def test_a_worker_gives_its_manager_a_service_account_bound_to_what_multikueue_does_there() -> None:
    sa, role, binding = mk.worker_access("kueue-system")
    assert (sa["kind"], sa["metadata"]["name"], sa["metadata"]["namespace"]) == (
        "ServiceAccount",
        "multikueue",
        "kueue-system",
    )
    assert [(r["apiGroups"][0], r["resources"][0]) for r in role["rules"]] == [
        ("kueue.x-k8s.io", "workloads"),
        ("kueue.x-k8s.io", "workloads/status"),
        ("jobset.x-k8s.io", "jobsets"),
        ("jobset.x-k8s.io", "jobsets/status"),
        ("batch", "jobs"),
        ("batch", "jobs/status"),
    ]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "multikueue", "namespace": "kueue-system"}]


# --- secrets ------------------------------------------------------------------------------------------------


def test_a_secure_kubeconfig_stays_a_pulumi_secret_in_the_plan(fleet: Path) -> None:
    edit(
        fleet,
        "fleet",
        "multikueue",
        {
            "role": "manager",
            "workers": [
                {"name": "east", "stack": "gpu-east", "kubeconfig": {"secure": CIPHERTEXT}},
                {"name": "west", "stack": "gpu-west"},
            ],
        },
    )
    result = cli.compute_plan(fleet / "Pulumi.fleet.yaml")
    resources = json.loads(result.files["resources.json"])
    secrets = {r["name"]: r["inputs"]["stringData"] for r in resources if r["type"] == "kubernetes:core/v1:Secret"}
    assert sorted(secrets) == ["multikueue-secret-east", "multikueue-secret-west"]
    assert all(isinstance(v, str) and v.startswith("[secret ") for v in secrets.values()), secrets
    for text in result.files.values():
        assert CIPHERTEXT not in text
        assert "c2VjcmV0LWt1YmVjb25maWctdGV4dA" not in text


def test_a_kubeconfig_in_clear_is_refused_without_showing_it(fleet: Path) -> None:
    edit(
        fleet,
        "fleet",
        "multikueue",
        {"role": "manager", "workers": [{"name": "east", "stack": "gpu-east", "kubeconfig": "token: hunter2"}]},
    )
    lines = problem_lines(fleet, "fleet")
    assert lines == [
        f"{fleet}/Pulumi.fleet.yaml: aiperf-kueue:multikueue.workers[0].kubeconfig: is given in clear, but it holds "
        "the credentials of a worker cluster and would reach Pulumi state and plan output: set it as a secure value "
        "(pulumi config set --secret --path 'aiperf-kueue:multikueue.workers[0].kubeconfig' \"$(cat "
        "worker.kubeconfig)\"), or leave it out to read the worker stack's multikueueKubeconfig output"
    ]
    assert "hunter2" not in "".join(lines)


# --- config errors: one line each, naming the stack file and key -------------------------------------------


def small_workers_big_job(fleet: Path) -> None:
    """Workers of 4 cores each (3.6 after headroom), a job of 7.125: the fleet's 7.2 hold it, no worker does."""
    for stack in ("gpu-east", "gpu-west"):
        pools = [{"name": "cpu", "nodes": 1, "cpu": "4", "memory": "64Gi"}]
        edit(fleet, stack, "inventory", {"headroom": 10, "pools": pools})
    doc = yaml.safe_load((fleet / "Pulumi.fleet.yaml").read_text())
    doc["config"]["aiperf-kueue:jobs"][0]["spec"]["benchmark"]["phases"][0]["concurrency"] = 1500
    (fleet / "Pulumi.fleet.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))


def test_a_job_no_worker_could_ever_hold_is_a_config_error_though_the_fleet_holds_it(fleet: Path) -> None:
    small_workers_big_job(fleet)
    why = (
        "needs cpu 7125m, memory 14144Mi; ClusterQueue benchmarks can reach at most cpu 3600m, memory 58982Mi "
        "(nominal, no cohort); podSet controller gets flavor cpu, then podSet workers (cpu 6700m, memory 12Gi) fits "
        "no flavor; Kueue would keep it pending with \"couldn't assign flavors to pod set workers: insufficient "
        "quota for cpu in flavor cpu, previously considered podsets requests (425m) + current podset request (6700m) "
        '> maximum capacity (3600m)"'
    )
    assert problem_lines(fleet, "fleet") == [
        f"{fleet}/Pulumi.fleet.yaml: aiperf-kueue:jobs[0]: smoke: no worker of the fleet could ever hold it "
        f"(east (gpu-east): {why}; west (gpu-west): {why}); fix: make it smaller, or give a worker a pool it fits in"
    ]


def test_plan_exits_2_with_one_line_for_a_job_no_worker_holds(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    small_workers_big_job(fleet)
    assert cli.main(["plan", str(fleet / "Pulumi.fleet.yaml"), "--out", str(fleet / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(
        f"{fleet}/Pulumi.fleet.yaml: aiperf-kueue:jobs[0]: smoke: no worker of the fleet could ever hold it (east "
    )
    assert err[0].endswith("; fix: make it smaller, or give a worker a pool it fits in")
    assert not (fleet / "out").exists()


@pytest.mark.parametrize(
    ("stack", "key", "value", "expected"),
    [
        (
            "fleet",
            "inventory",
            {"pools": [{"name": "cpu", "nodes": 1, "cpu": "4", "memory": "4Gi"}]},
            "aiperf-kueue:inventory: is set on a MultiKueue manager, whose inventory is its workers' (plan sums their "
            "pools by name): remove inventory",
        ),
        (
            "gpu-east",
            "queues",
            {"clusterQueues": [{"name": "x"}]},
            "aiperf-kueue:queues: is set on a MultiKueue worker; a worker's queues and priority classes are its "
            "manager's (stack 'fleet') and jobs are submitted on the manager: remove queues",
        ),
        (
            "fleet",
            "queues",
            {"clusterQueues": [{"name": "b", "nominalQuota": {"cpu": {"cpu": "1"}}, "namespaces": [{"name": "a"}]}]},
            "aiperf-kueue:queues.clusterQueues[0].nominalQuota: is an amount of one cluster; on a MultiKueue manager "
            "a ClusterQueue takes share (a percent of each worker's pools, and so of the fleet on the manager): "
            "replace nominalQuota with share",
        ),
        (
            "gpu-west",
            "multikueue",
            {"role": "worker", "manager": "other"},
            "aiperf-kueue:multikueue.manager: names stack 'other', but there is no {dir}/Pulumi.other.yaml: create "
            "that stack or fix the name",
        ),
    ],
)
def test_fleet_config_errors_name_the_key_and_the_fix(
    fleet: Path, stack: str, key: str, value: Any, expected: str
) -> None:
    edit(fleet, stack, key, value)
    assert problem_lines(fleet, stack) == [f"{fleet}/Pulumi.{stack}.yaml: {expected.format(dir=fleet)}"]


def test_a_worker_that_does_not_name_this_manager_is_refused(fleet: Path) -> None:
    shutil.copy(fleet / "Pulumi.fleet.yaml", fleet / "Pulumi.other.yaml")
    edit(fleet, "gpu-west", "multikueue", {"role": "worker", "manager": "other"})
    assert problem_lines(fleet, "fleet") == [
        f"{fleet}/Pulumi.fleet.yaml: aiperf-kueue:multikueue.workers[1].stack: stack 'gpu-west' is not a worker of "
        "this manager: its aiperf-kueue:multikueue must be {role: worker, manager: fleet}; set it there"
    ]


def test_one_pool_name_must_have_one_shape_across_the_fleet(fleet: Path) -> None:
    edit(
        fleet,
        "gpu-west",
        "inventory",
        {"headroom": 10, "pools": [{"name": "cpu", "nodes": 1, "cpu": "8", "memory": "64Gi"}]},
    )
    assert problem_lines(fleet, "fleet") == [
        f"{fleet}/Pulumi.fleet.yaml: aiperf-kueue:multikueue.workers[1].stack: names a worker whose pool 'cpu' "
        "differs from the one of multikueue.workers[0].stack in cpu: one pool name is one ResourceFlavor in the "
        "fleet; give them one shape or different names"
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"role": "manager"}, "role manager needs 1 to 20 workers (Kueue's MultiKueueConfig limit), got 0"),
        (
            {"role": "manager", "workers": [{"name": "a", "stack": "x"}, {"name": "a", "stack": "y"}]},
            "workers' names must be unique, 'a' repeats",
        ),
        ({"role": "worker"}, "role worker needs manager: the manager's stack name, whose queues this worker gets"),
        (
            {"role": "worker", "manager": "m", "workers": [{"name": "a", "stack": "x"}]},
            "role worker takes a manager; workers are a manager's",
        ),
    ],
)
def test_the_multikueue_model_says_what_each_role_takes(value: dict[str, Any], expected: str) -> None:
    with pytest.raises(ValueError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        MultiKueue.model_validate(value)


# --- review ---------------------------------------------------------------------------------------------------


def test_removing_a_worker_is_destructive_in_review(fleet: Path) -> None:
    base = cli.compute_plan(fleet / "Pulumi.fleet.yaml")
    edit(fleet, "fleet", "multikueue", {"role": "manager", "workers": [{"name": "east", "stack": "gpu-east"}]})
    head = cli.compute_plan(fleet / "Pulumi.fleet.yaml")

    def as_plan(result: cli.PlanResult) -> Plan:
        return Plan("fleet", json.loads(result.files["resources.json"]), json.loads(result.files["plan.json"]))

    diff = compare(as_plan(base), as_plan(head))
    assert [(d.action, d.name, d.kind, d.loses) for d in diff.destructive] == [
        ("delete", "multikueue-cluster-west", "MultiKueueCluster west", LOSSES["MultiKueueCluster"]),
        # Only west had the pool cpu-large: the fleet loses it, and the manager its ResourceFlavor.
        ("delete", "queues-flavor-cpu-large", "ResourceFlavor cpu-large", LOSSES["ResourceFlavor"]),
    ]


def test_a_worker_exports_its_secure_kubeconfig_as_a_secret_output(fleet: Path) -> None:
    edit(fleet, "gpu-east", "multikueue", {"role": "worker", "manager": "fleet", "kubeconfig": {"secure": CIPHERTEXT}})
    stack = read_stack(fleet / "Pulumi.gpu-east.yaml")
    # As plan does: the program is told where the copy's stack files are.
    run = run_program("gpu-east", stack.values, stack.secret_keys, provider=stack.provider, stack_dir=fleet)
    assert run.outputs["multikueueKubeconfig"] == secret_placeholder(CIPHERTEXT)  # offline: never decrypted
    exported = pulumi.runtime.get_root_resource().outputs["multikueueKubeconfig"]  # type: ignore[union-attr]
    assert asyncio.get_event_loop().run_until_complete(exported.is_secret()) is True


def test_a_managers_kueue_enables_only_the_frameworks_its_workers_can_be_watched_for() -> None:
    # Kueue 0.19.2's MultiKueue watches every enabled integration's kind on each worker before it connects.
    charts = {name: planned(FLEET, name) for name in ("fleet", "gpu-east")}
    frameworks = {
        name: kueue_manager_config(plan.config, plan.queues.target)["integrations"]["frameworks"]
        for name, plan in charts.items()
    }
    assert frameworks["fleet"] == ["batch/job", "jobset.x-k8s.io/jobset"]
    assert "kubeflow.org/mpijob" in frameworks["gpu-east"]  # a worker keeps the chart's list


def test_the_managers_kueue_gets_the_worker_lost_timeout(fleet: Path) -> None:
    workers = [{"name": "east", "stack": "gpu-east"}, {"name": "west", "stack": "gpu-west"}]
    edit(fleet, "fleet", "multikueue", {"role": "manager", "workers": workers, "workerLostTimeout": "30s"})
    plan = planned(fleet, "fleet")
    assert kueue_manager_config(plan.config, plan.queues.target)["multiKueue"] == {"workerLostTimeout": "30s"}
    with pytest.raises(ValueError, match='must be a Go duration such as "5m" or "30s", got \'soon\''):
        MultiKueue.model_validate({"role": "manager", "workers": workers, "workerLostTimeout": "soon"})
