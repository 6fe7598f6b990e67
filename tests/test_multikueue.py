"""A MultiKueue fleet as stacks of this project: config, plan, manifests, secrets and review (offline)."""

from __future__ import annotations

import asyncio
import base64
import gc
import json
import shutil
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from aiperf_kueue.cli import cli
from aiperf_kueue.cli.engine import run_program
from aiperf_kueue.common import limits
from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.config.multikueue import MultiKueue
from aiperf_kueue.installs.releases import kueue_manager_config
from aiperf_kueue.plan import multikueue_manifests as mk
from aiperf_kueue.plan.stack_plan import StackPlan, plan_values
from aiperf_kueue.review.destructive import LOSSES
from aiperf_kueue.review.diff import Plan, compare
from aiperf_kueue.stackfile.loader import read_stack, secret_placeholder
from aiperf_kueue.upstream.kueue import KueueTarget
from aiperf_kueue.upstream.kueue_kubeconfig import kubeconfig_problems
from components import stack_config
from components.multikueue import (
    MINTED_PLACEHOLDER,
    MintedToken,
    MultiKueueManager,
    MultiKueueManagerArgs,
    MultiKueueWorker,
    MultiKueueWorkerArgs,
    WorkerCluster,
)
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
    assert west.fleet_table() == {"role": "worker", "manager": "fleet", "kubeconfig": "minted"}


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


#: What a worker receives of an AIPerfJob (the JobSet only), said once for the manager's jobs.
DISPATCHED = (
    "jobs ({names}): AIPerf 0.13.0 cannot run them through MultiKueue: its operator's preflight checks the "
    "manager's own nodes and fails an AIPerfJob unless one of them fits its largest pod (Per-Node "
    "Schedulability), and MultiKueue dispatches only the JobSet, without the ConfigMap <jobset>-config its "
    "pods mount, so on a real worker they wait in ContainerCreating; submit what must run across the fleet as "
    "plain JobSets, or run the AIPerfJobs from a stack of the cluster that runs them (not a MultiKueue worker: "
    "its stack takes no jobs)"
)


def test_the_managers_jobs_are_warned_that_a_worker_gets_their_jobset_only(fleet: Path) -> None:
    assert planned(FLEET, "fleet").warnings == (DISPATCHED.format(names="smoke"),)
    jobs = yaml.safe_load((FLEET / "Pulumi.fleet.yaml").read_text())["config"]["aiperf-kueue:jobs"]
    edit(fleet, "fleet", "jobs", [{**jobs[0], "name": f"smoke-{n}"} for n in range(6)])
    assert planned(fleet, "fleet").warnings == (DISPATCHED.format(names="smoke-0, smoke-1, smoke-2 … and 3 more"),)
    edit(fleet, "fleet", "jobs", None)
    assert planned(fleet, "fleet").warnings == ()
    assert planned(FLEET, "gpu-east").warnings == ()


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


# --- a worker kubeconfig Kueue would refuse (reason InsecureKubeConfig) ----------------------------------------

#: A kubeconfig Kueue 0.19.2 takes: an https server by IP, the CA embedded, a ServiceAccount token.
GOOD_KUBECONFIG: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "w", "cluster": {"server": "https://10.0.0.1:6443", "certificate-authority-data": "Q0E="}}],
    "users": [{"name": "u", "user": {"token": "tok-SECRET-1"}}],
    "contexts": [{"name": "c", "context": {"cluster": "w", "user": "u"}}],
    "current-context": "c",
}
#: Every value a test puts in a kubeconfig carries this: no problem line may show it.
MARK = "SECRET"


def kubeconfig(cluster: dict[str, Any] | None = None, user: dict[str, Any] | None = None, **top: Any) -> Any:
    """:data:`GOOD_KUBECONFIG` with its cluster's and user's fields updated (a None value removes the field)."""
    doc = json.loads(json.dumps(GOOD_KUBECONFIG))
    for entry, changes in ((doc["clusters"][0]["cluster"], cluster), (doc["users"][0]["user"], user)):
        for key, value in (changes or {}).items():
            if value is None:
                entry.pop(key, None)
            else:
                entry[key] = value
    for key, value in top.items():
        if value is None:
            doc.pop(key.replace("_", "-"), None)
        else:
            doc[key.replace("_", "-")] = value
    return doc


def kubeconfig_lines(doc: Any) -> list[str]:
    lines = [str(p) for p in kubeconfig_problems(doc)]
    assert MARK not in "".join(lines)
    return lines


TOKEN_FILE = (
    "users[0].user.tokenFile: Kueue refuses a token file (tokenFile is not allowed); put the token itself in token"
)
UNTRUSTED = (
    "clusters[0].cluster.server: Kueue refuses the server (untrusted server endpoint): its host is neither an IP "
    "address nor a DNS name, or the URL has no scheme"
)


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        pytest.param(kubeconfig(user={"tokenFile": "/var/run/SECRET"}), [TOKEN_FILE], id="tokenFile"),
        pytest.param(
            kubeconfig(user={"token": None, "tokenFile": "/SECRET"}), [TOKEN_FILE], id="tokenFile-without-token"
        ),
        pytest.param(
            kubeconfig(cluster={"insecure-skip-tls-verify": True}),
            [
                "clusters[0].cluster.insecure-skip-tls-verify: Kueue refuses to skip TLS verification; set "
                "certificate-authority-data"
            ],
            id="insecure-skip-tls-verify",
        ),
        pytest.param(
            kubeconfig(cluster={"certificate-authority": "/etc/SECRET/ca.crt", "certificate-authority-data": None}),
            [
                "clusters[0].cluster.certificate-authority: Kueue refuses a CA file path; embed the CA as "
                "certificate-authority-data"
            ],
            id="certificate-authority-path",
        ),
        pytest.param(
            kubeconfig(cluster={"server": None}),
            ["clusters[0].cluster.server: Kueue requires a server URL for every cluster"],
            id="no-server",
        ),
        pytest.param(
            {**GOOD_KUBECONFIG, "clusters": [*GOOD_KUBECONFIG["clusters"], {"name": "other", "cluster": {}}]},
            ["clusters[1].cluster.server: Kueue requires a server URL for every cluster"],
            id="no-server-on-a-cluster-not-in-use",
        ),
        pytest.param(kubeconfig(cluster={"server": "https://SECRET_host:6443"}), [UNTRUSTED], id="host-underscore"),
        pytest.param(kubeconfig(cluster={"server": "10.0.0.1:6443"}), [UNTRUSTED], id="ip-port-without-scheme"),
        pytest.param(kubeconfig(cluster={"server": "api.example.com:6443"}), [UNTRUSTED], id="host-without-scheme"),
        pytest.param(kubeconfig(cluster={"server": "https://api.example.com:SECRET"}), [UNTRUSTED], id="bad-port"),
        pytest.param(kubeconfig(cluster={"server": "https://[fd00::1]"}), [UNTRUSTED], id="ipv6-brackets-no-port"),
        # Go 1.26 (Kueue 0.19.2's): an https host's port follows its first colon; only IPv6 goes in brackets.
        pytest.param(kubeconfig(cluster={"server": "https://fd00::1:6443"}), [UNTRUSTED], id="ipv6-no-brackets"),
        pytest.param(kubeconfig(cluster={"server": "https://[api.example.com]:1"}), [UNTRUSTED], id="name-brackets"),
        pytest.param(
            kubeconfig(user={"token": None, "username": "admin-SECRET", "password": "SECRET"}),
            ["users[0].user.username: Kueue refuses basic auth (username and password); use a ServiceAccount token"],
            id="basic-auth",
        ),
        pytest.param(
            kubeconfig(user={"token": None, "password": "SECRET"}),
            ["users[0].user.password: Kueue refuses basic auth (username and password); use a ServiceAccount token"],
            id="password-only",
        ),
        pytest.param(
            kubeconfig(
                user={
                    "token": None,
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "gke-gcloud-auth-plugin-SECRET",
                    },
                }
            ),
            ["users[0].user.exec: Kueue refuses exec plugins (GKE and EKS kubeconfigs use one); use a token"],
            id="exec-gke",
        ),
        pytest.param(
            kubeconfig(user={"token": None, "auth-provider": {"name": "oidc", "config": {"id-token": "SECRET"}}}),
            ["users[0].user.auth-provider: Kueue refuses auth providers; use a ServiceAccount token"],
            id="auth-provider",
        ),
        pytest.param(
            kubeconfig(current_context="SECRET-context"),
            ["current-context: names no entry of contexts"],
            id="current-context-missing",
        ),
        pytest.param(
            kubeconfig(current_context=None),
            ["current-context: is not set: Kueue connects through the current context"],
            id="no-current-context",
        ),
        pytest.param(
            {**GOOD_KUBECONFIG, "contexts": [{"name": "c", "context": {"cluster": "SECRET", "user": "u"}}]},
            ["contexts[0].context.cluster: names no cluster with settings: Kueue has no server to connect to"],
            id="context-cluster-missing",
        ),
        pytest.param(
            kubeconfig(user={"token": None, "client-certificate": "/SECRET.crt", "client-key": "/SECRET.key"}),
            [
                "users[0].user.client-certificate: a file path Kueue's pod cannot read; embed client-certificate-data",
                "users[0].user.client-key: a file path Kueue's pod cannot read; embed client-key-data",
            ],
            id="client-certificate-paths",
        ),
        pytest.param(
            kubeconfig(user={"token": None, "client-certificate-data": "U0VDUkVU"}),
            ["users[0].user.client-certificate-data: a client certificate without client-key-data"],
            id="client-certificate-without-key",
        ),
        pytest.param(
            kubeconfig(user={"as-groups": ["SECRET"]}),
            ["users[0].user.as: is required with as-uid, as-groups or as-user-extra"],
            id="impersonation-without-user",
        ),
        pytest.param(
            {**GOOD_KUBECONFIG, "users": [*GOOD_KUBECONFIG["users"], {"name": "u", "user": {}}]},
            ["users[1].name: repeats the name of users[0]"],
            id="duplicate-name",
        ),
    ],
)
def test_each_kubeconfig_kueue_refuses_is_named_by_its_place_never_its_value(doc: Any, expected: list[str]) -> None:
    assert kubeconfig_lines(doc) == expected


@pytest.mark.parametrize(
    "server",
    [
        "https://10.0.0.1:6443",
        "https://API.Example.COM:6443/prefix?x=1",  # lower-cased first, as Kueue does
        "https://[fd00::1]:6443",
        "https://kubernetes.default.svc",
        "HTTPS://10.0.0.1",
        "https://010.0.0.1",  # no IP address to Go (a leading zero), but a DNS-1123 subdomain
    ],
)
def test_a_clean_kubeconfig_passes(server: str) -> None:
    assert kubeconfig_lines(kubeconfig(cluster={"server": server})) == []


def test_over_plain_http_client_go_reads_no_credentials_so_kueue_checks_none() -> None:
    # validateRestConfig sees only what ClientConfig read, and it reads the user's credentials over TLS only.
    plugin = {"command": "x-SECRET", "apiVersion": "client.authentication.k8s.io/v1", "interactiveMode": "Never"}
    doc = kubeconfig(cluster={"server": "http://10.0.0.1:8080"}, user={"token": None, "exec": plugin})
    assert kubeconfig_lines(doc) == []
    # client-go's own check of the user still runs: two authentication methods.
    doc = kubeconfig(cluster={"server": "http://10.0.0.1:8080"}, user={"username": "SECRET"})
    assert kubeconfig_lines(doc) == [
        "users[0].user.token: a token and basic auth: client-go takes one authentication method"
    ]


HTTP = {"server": "http://10.0.0.1:8080"}
EXEC = "users[0].user.exec"


def exec_over_http(plugin: dict[str, Any]) -> Any:
    """:func:`kubeconfig` over a plain ``http://`` server, its user an exec ``plugin`` and no token."""
    return kubeconfig(cluster=HTTP, user={"token": None, "exec": plugin})


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        pytest.param(
            exec_over_http({"command": "x-SECRET"}),
            [
                f"{EXEC}.apiVersion: is required for an exec plugin (e.g. client.authentication.k8s.io/v1)",
                f"{EXEC}.interactiveMode: is required: one of Never, IfAvailable, Always",
            ],
            id="exec-command-only",
        ),
        pytest.param(
            # v1beta1 defaults interactiveMode to IfAvailable; an env entry without a name is refused.
            exec_over_http(
                {
                    "apiVersion": "client.authentication.k8s.io/v1beta1",
                    "env": [{"name": "A", "value": "SECRET"}, {"value": "SECRET"}],
                }
            ),
            [
                f"{EXEC}.command: is required: client-go runs no exec plugin without a command",
                f"{EXEC}.env[1].name: is required for each exec env entry",
            ],
            id="exec-v1beta1-no-command",
        ),
        pytest.param(
            exec_over_http(
                {
                    "command": "x",
                    "apiVersion": "client.authentication.k8s.io/v1",
                    "interactiveMode": "Sometimes-SECRET",
                }
            ),
            [f"{EXEC}.interactiveMode: must be one of Never, IfAvailable, Always"],
            id="exec-bad-mode",
        ),
        pytest.param(
            exec_over_http(
                {
                    "command": ["SECRET"],
                    "args": "SECRET",
                    "env": {"A": "SECRET"},
                    "provideClusterInfo": "yes",
                    "apiVersion": "client.authentication.k8s.io/v1beta1",
                }
            ),
            [
                f"{EXEC}.command: is not a string",
                f"{EXEC}.provideClusterInfo: is not true or false",
                f"{EXEC}.args: is not a list of strings",
                f"{EXEC}.env: is not a list",
                f"{EXEC}.command: is required: client-go runs no exec plugin without a command",
            ],
            id="exec-field-types",
        ),
        pytest.param(
            kubeconfig(cluster={"proxy-url": "proxy-SECRET.corp:3128"}),
            ["clusters[0].cluster.proxy-url: is not a URL with the scheme http, https or socks5"],
            id="proxy-without-scheme",
        ),
        pytest.param(
            kubeconfig(cluster={"proxy-url": "ftp://proxy-SECRET.corp"}),
            ["clusters[0].cluster.proxy-url: is not a URL with the scheme http, https or socks5"],
            id="proxy-ftp",
        ),
        pytest.param(
            kubeconfig(cluster={"proxy-url": "http://[SECRET"}),
            ["clusters[0].cluster.proxy-url: is not a URL with the scheme http, https or socks5"],
            id="proxy-unparsable",
        ),
    ],
)
def test_client_gos_checks_of_exec_and_proxy_url_run_over_any_transport(doc: Any, expected: list[str]) -> None:
    assert kubeconfig_lines(doc) == expected


@pytest.mark.parametrize(
    "proxy", ["http://proxy.corp:3128", "HTTPS://proxy.corp", "socks5://10.0.0.9:1080", "http://u:p%40ss@proxy:1"]
)
def test_a_proxy_url_client_go_takes_passes(proxy: str) -> None:
    assert kubeconfig_lines(kubeconfig(cluster={"proxy-url": proxy})) == []


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        pytest.param(["SECRET"], ["kubeconfig: is not a kubeconfig: the document is not a mapping"], id="list"),
        pytest.param("SECRET", ["kubeconfig: is not a kubeconfig: the document is not a mapping"], id="string"),
        pytest.param(None, ["kubeconfig: is not a kubeconfig: the document is not a mapping"], id="empty"),
        pytest.param(
            {**GOOD_KUBECONFIG, "clusters": "SECRET"},
            [
                "clusters: is not a list",
                "contexts[0].context.cluster: names no cluster with settings: Kueue has no server to connect to",
            ],
            id="clusters-not-a-list",
        ),
        pytest.param(
            {**GOOD_KUBECONFIG, "users": ["SECRET", {"name": 7, "user": {}}, {"name": "x", "user": "SECRET"}]},
            ["users[0]: is not a mapping", "users[1].name: is not a string", "users[2].user: is not a mapping"],
            id="users-wrong-types",
        ),
        pytest.param(
            kubeconfig(cluster={"server": 6443, "insecure-skip-tls-verify": "yes", "certificate-authority-data": "*"}),
            [
                "clusters[0].cluster.server: is not a string",
                "clusters[0].cluster.insecure-skip-tls-verify: is not true or false",
                "clusters[0].cluster.certificate-authority-data: is not base64 text",
                "clusters[0].cluster.server: Kueue requires a server URL for every cluster",
            ],
            id="cluster-field-types",
        ),
        pytest.param(
            kubeconfig(apiVersion="v2", kind="SECRET"),
            ["apiVersion: must be v1 (or left out)", "kind: must be Config (or left out)"],
            id="apiVersion-kind",
        ),
    ],
)
def test_a_kubeconfig_of_the_wrong_shape_is_a_problem_not_a_crash(doc: Any, expected: list[str]) -> None:
    assert kubeconfig_lines(doc) == expected


def test_many_problems_stop_at_the_limit() -> None:
    clusters = [{"name": f"c{i}", "cluster": {"insecure-skip-tls-verify": True}} for i in range(200)]
    problems = kubeconfig_problems({**GOOD_KUBECONFIG, "clusters": clusters})
    assert len(problems) == limits.MAX_PROBLEMS
    assert str(problems[0]) == (
        "clusters[0].cluster.insecure-skip-tls-verify: Kueue refuses to skip TLS verification; set "
        "certificate-authority-data"
    )


NOT_READ = "kubeconfig: is not YAML or JSON read within bounds (syntax, nesting, aliases)"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("clusters: [SECRET", [NOT_READ], id="syntax"),
        pytest.param(
            "a: &a [SECRET, SECRET]\n"
            + "".join(f"a{i}: &a{i} [*a{i - 1 if i else ''}, *a{i - 1 if i else ''}]\n" for i in range(40)),
            [NOT_READ],
            id="billion-laughs",
        ),
        pytest.param("[" * 10_000 + "]" * 10_000, [NOT_READ], id="deep"),
        pytest.param(
            "token: " + "S" * (limits.MAX_FILE_BYTES + 1),
            [f"kubeconfig: is more than {limits.MAX_FILE_BYTES:,} bytes"],
            id="huge",
        ),
        pytest.param(b"SECRET", ["kubeconfig: is not text"], id="bytes"),
        pytest.param("", ["kubeconfig: is not a kubeconfig: the document is not a mapping"], id="empty"),
    ],
)
def test_hostile_kubeconfig_text_is_a_problem_not_a_crash_or_a_hang(text: Any, expected: list[str]) -> None:
    problems = [str(p) for p in mk.kubeconfig_text_problems(text)]
    assert problems == expected
    assert MARK not in "".join(problems)


def test_json_kubeconfig_text_is_read_like_yaml() -> None:
    assert mk.kubeconfig_text_problems(json.dumps(GOOD_KUBECONFIG)) == []
    assert [str(p) for p in mk.kubeconfig_text_problems(json.dumps(kubeconfig(user={"tokenFile": "/x"})))] == [
        TOKEN_FILE
    ]


REFUSAL = (
    "invalid stack config:\n{where}: Kueue would mark this worker's MultiKueueCluster inactive (reason "
    "InsecureKubeConfig) and dispatch nothing to it: {problems}"
)
BAD_TEXT = yaml.safe_dump(
    kubeconfig(user={"tokenFile": "/var/run/SECRET-token"}, cluster={"insecure-skip-tls-verify": True})
)
BAD_PROBLEMS = (
    f"{TOKEN_FILE}; clusters[0].cluster.insecure-skip-tls-verify: Kueue refuses to skip TLS verification; set "
    "certificate-authority-data"
)


class _Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        return f"{args.name}-id", args.inputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, None


def _manager(kubeconfig_text: pulumi.Input[str], check: bool) -> None:
    """Build the manager's component alone under Pulumi's mocks, as ``pulumi up`` runs it (``check``) or plan."""
    fleet_config = MultiKueue.model_validate(
        {"role": "manager", "workers": [{"name": "east", "stack": "gpu-east", "kubeconfig": "x"}]}
    )
    worker = fleet_config.workers[0]
    pulumi.runtime.set_mocks(_Mocks(), project="aiperf-kueue", stack="fleet", preview=False)

    def program() -> Any:
        manager = MultiKueueManager(
            "multikueue",
            MultiKueueManagerArgs(
                workers=[
                    WorkerCluster(
                        cluster=mk.multikueue_cluster(worker, V1BETA2),
                        secret=mk.kubeconfig_secret(worker, "kueue-system"),
                        kubeconfig=kubeconfig_text,
                        where="stacks/Pulumi.fleet.yaml: aiperf-kueue:multikueue.workers[0].kubeconfig",
                    )
                ],
                multikueue_config=mk.multikueue_config(fleet_config, V1BETA2),
                admission_check=mk.admission_check(fleet_config, V1BETA2),
                check_kubeconfigs=check,
            ),
        )
        return manager.admission_check.id

    try:
        pulumi.runtime.test(program)()
    finally:
        # A refused run leaves futures whose RunError nobody retrieved; collect them here, so asyncio's
        # log of them lands in this test and not in a later one's (see tests.support.gc_paused).
        gc.collect()


def test_pulumi_up_stops_at_a_kubeconfig_kueue_would_refuse_without_showing_it() -> None:
    with pytest.raises(pulumi.RunError) as caught:
        _manager(BAD_TEXT, check=True)
    where = "stacks/Pulumi.fleet.yaml: aiperf-kueue:multikueue.workers[0].kubeconfig"
    assert str(caught.value) == REFUSAL.format(where=where, problems=BAD_PROBLEMS)
    assert MARK not in str(caught.value)
    # A stack reference's output arrives as an Output: checked all the same, once known.
    with pytest.raises(pulumi.RunError) as caught:
        _manager(pulumi.Output.secret(BAD_TEXT), check=True)
    assert str(caught.value) == REFUSAL.format(where=where, problems=BAD_PROBLEMS)


def test_a_kubeconfig_kueue_takes_passes_and_plan_checks_nothing() -> None:
    _manager(yaml.safe_dump(GOOD_KUBECONFIG), check=True)
    _manager(BAD_TEXT, check=False)  # offline: the value is a placeholder, never decrypted


def _as_pulumi_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the program believe it runs under ``pulumi up`` (it tells the offline engine by its monitor's class)."""

    class NotTheMockMonitor:
        pass

    monkeypatch.setattr(stack_config, "MockMonitor", NotTheMockMonitor)


def test_the_program_refuses_a_managers_worker_kubeconfig_under_pulumi_up(
    fleet: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    edit(
        fleet,
        "fleet",
        "multikueue",
        {"role": "manager", "workers": [{"name": "east", "stack": "gpu-east", "kubeconfig": {"secure": CIPHERTEXT}}]},
    )
    stack = read_stack(fleet / "Pulumi.fleet.yaml")
    values = dict(stack.values)
    # What pulumi up hands the program: the secure value decrypted.
    values["multikueue"] = {
        **values["multikueue"],
        "workers": [{**values["multikueue"]["workers"][0], "kubeconfig": BAD_TEXT}],
    }
    _as_pulumi_up(monkeypatch)
    with pytest.raises(pulumi.RunError) as caught:
        run_program("fleet", values, stack.secret_keys, provider=stack.provider, stack_dir=fleet)
    where = "Pulumi.fleet.yaml: aiperf-kueue:multikueue.workers[0].kubeconfig"
    assert str(caught.value) == REFUSAL.format(where=where, problems=BAD_PROBLEMS)
    assert MARK not in str(caught.value)


def test_the_program_refuses_a_worker_exporting_a_kubeconfig_kueue_would_refuse(
    fleet: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    edit(fleet, "gpu-east", "multikueue", {"role": "worker", "manager": "fleet", "kubeconfig": {"secure": CIPHERTEXT}})
    stack = read_stack(fleet / "Pulumi.gpu-east.yaml")
    values = {**stack.values, "multikueue": {**stack.values["multikueue"], "kubeconfig": BAD_TEXT}}
    _as_pulumi_up(monkeypatch)
    with pytest.raises(pulumi.RunError) as caught:
        run_program("gpu-east", values, stack.secret_keys, provider=stack.provider, stack_dir=fleet)
    where = "Pulumi.gpu-east.yaml: aiperf-kueue:multikueue.kubeconfig"
    assert str(caught.value) == REFUSAL.format(where=where, problems=BAD_PROBLEMS)
    assert MARK not in str(caught.value)


# --- a worker that mints its manager's token (multikueue.server) --------------------------------------------

SERVER = "https://fleet-east.example.com:6443"
#: What the token controller writes into the token Secret's data (base64, as the API returns it).
TOKEN_DATA = {
    "token": base64.b64encode(b"eyJ-minted-token").decode(),
    "ca.crt": "Q0EtY2VydA==",
    "namespace": base64.b64encode(b"kueue-system").decode(),
}


def test_the_token_secret_is_the_service_accounts_long_lived_token() -> None:
    assert mk.worker_token_secret("kueue-system") == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "multikueue-token",
            "namespace": "kueue-system",
            "labels": {"app.kubernetes.io/part-of": "aiperf-kueue"},
            "annotations": {"pulumi.com/patchForce": "true", "kubernetes.io/service-account.name": "multikueue"},
        },
        "type": "kubernetes.io/service-account-token",
    }


def test_the_minted_kubeconfig_is_the_server_the_ca_and_the_token_and_kueue_takes_it() -> None:
    doc = json.loads(mk.minted_kubeconfig(SERVER, TOKEN_DATA))
    assert doc == {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "worker", "cluster": {"server": SERVER, "certificate-authority-data": "Q0EtY2VydA=="}}],
        "users": [{"name": "multikueue", "user": {"token": "eyJ-minted-token"}}],
        "contexts": [{"name": "worker", "context": {"cluster": "worker", "user": "multikueue"}}],
        "current-context": "worker",
    }
    assert kubeconfig_problems(doc) == []


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (None, "the Secret multikueue-token has no data: the token controller has not filled it"),
        ({"ca.crt": "Q0E="}, "the Secret multikueue-token has no token: the token controller has not filled it"),
        ({"token": "dG9r"}, "the Secret multikueue-token has no ca.crt: the token controller has not filled it"),
        ({"token": "not base64!", "ca.crt": "Q0E="}, "the Secret multikueue-token's token is not base64 of text"),
    ],
)
def test_a_token_secret_not_filled_yet_is_named_never_shown(data: Any, expected: str) -> None:
    with pytest.raises(ValueError) as caught:
        mk.minted_kubeconfig(SERVER, data)
    assert str(caught.value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            {"role": "worker", "manager": "fleet", "server": "http://fleet-east.example.com:6443"},
            "aiperf-kueue:multikueue.server: must be an https:// URL of the worker's API server, got "
            "'http://fleet-east.example.com:6443'",
        ),
        (
            {"role": "worker", "manager": "fleet", "server": "fleet-east:6443"},
            "aiperf-kueue:multikueue.server: must be an https:// URL of the worker's API server, got 'fleet-east:6443'",
        ),
        (
            {"role": "worker", "manager": "fleet", "server": "https://east_1.example.com"},
            "aiperf-kueue:multikueue.server: Kueue refuses it (untrusted server endpoint): its host is neither an IP "
            "address nor a DNS name, got 'https://east_1.example.com'",
        ),
        (
            {"role": "worker", "manager": "fleet", "server": SERVER, "kubeconfig": {"secure": CIPHERTEXT}},
            "aiperf-kueue:multikueue: sets kubeconfig and server; keep one (server: the worker mints its token and "
            "exports the kubeconfig itself)",
        ),
    ],
)
def test_a_workers_server_is_checked_as_kueue_would_use_it(fleet: Path, value: Any, expected: str) -> None:
    edit(fleet, "gpu-east", "multikueue", value)
    assert problem_lines(fleet, "gpu-east") == [f"{fleet}/Pulumi.gpu-east.yaml: {expected}"]


def test_a_manager_takes_no_server(fleet: Path) -> None:
    with pytest.raises(ValueError, match="role manager takes workers; manager, kubeconfig and server are a worker's"):
        MultiKueue.model_validate({"role": "manager", "workers": [{"name": "a", "stack": "x"}], "server": SERVER})


def test_the_plan_declares_the_token_secret_and_shows_the_minted_kubeconfig_as_a_secret(fleet: Path) -> None:
    stack = read_stack(fleet / "Pulumi.gpu-east.yaml")  # the committed worker sets server
    run = run_program("gpu-east", stack.values, stack.secret_keys, provider=stack.provider, stack_dir=fleet)
    assert run.outputs["multikueueKubeconfig"] == MINTED_PLACEHOLDER
    exported = pulumi.runtime.get_root_resource().outputs["multikueueKubeconfig"]  # type: ignore[union-attr]
    assert asyncio.get_event_loop().run_until_complete(exported.is_secret()) is True
    result = cli.compute_plan(fleet / "Pulumi.gpu-east.yaml")
    resources = json.loads(result.files["resources.json"])
    assert [(r["name"], r["inputs"]["type"]) for r in resources if r["type"] == "kubernetes:core/v1:Secret"] == [
        ("multikueue-secret-multikueue-token", "kubernetes.io/service-account-token")
    ]


class _FillingMocks(_Mocks):
    """The cluster as ``pulumi up`` meets it: the token controller has filled the token Secret (or not)."""

    def __init__(self, data: dict[str, str] | None) -> None:
        self.data = data

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        outputs = dict(args.inputs)
        if args.typ == "kubernetes:core/v1:Secret" and self.data is not None:
            outputs["data"] = self.data
        return f"{args.name}-id", outputs


def _worker_under_up(data: dict[str, str] | None) -> tuple[str, bool]:
    """Build the worker's component alone under Pulumi's mocks, as ``pulumi up`` runs it: the kubeconfig it exports,
    and whether it is a Pulumi secret."""
    pulumi.runtime.set_mocks(_FillingMocks(data), project="aiperf-kueue", stack="gpu-east", preview=False)
    seen: dict[str, Any] = {}

    def program() -> Any:
        worker = MultiKueueWorker(
            "multikueue",
            MultiKueueWorkerArgs(
                access=mk.worker_access("kueue-system"),
                token=MintedToken(
                    secret=mk.worker_token_secret("kueue-system"),
                    server=SERVER,
                    where="stacks/Pulumi.gpu-east.yaml: aiperf-kueue:multikueue.server",
                ),
            ),
        )
        assert worker.kubeconfig is not None
        seen["output"] = worker.kubeconfig
        return worker.kubeconfig.apply(lambda text: seen.setdefault("text", text))

    try:
        pulumi.runtime.test(program)()
    finally:
        gc.collect()
    return seen["text"], asyncio.get_event_loop().run_until_complete(seen["output"].is_secret())


def test_pulumi_up_exports_the_kubeconfig_minted_from_the_filled_token_secret_as_a_secret() -> None:
    text, secret = _worker_under_up(TOKEN_DATA)
    assert (json.loads(text), secret) == (json.loads(mk.minted_kubeconfig(SERVER, TOKEN_DATA)), True)


def test_pulumi_up_stops_naming_the_key_while_the_token_secret_is_empty() -> None:
    with pytest.raises(pulumi.RunError) as caught:
        _worker_under_up(None)
    assert str(caught.value) == (
        "stacks/Pulumi.gpu-east.yaml: aiperf-kueue:multikueue.server: the Secret multikueue-token has no data: the "
        "token controller has not filled it"
    )
