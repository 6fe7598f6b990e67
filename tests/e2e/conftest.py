"""Fixtures of the e2e suite: the built binaries, local clusters, the AIPerf operator, and the run's report.

Collected only by ``make e2e`` (``AIPERF_KUEUE_E2E=1``, inside ``e2e/sandbox.sh``). A missing input (binaries,
the AIPerf virtualenv, the AIPerf CRDs) is a failure here, never a skip: the suite exists to run the real thing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.e2e.cluster import LocalCluster, install_trap
from tests.e2e.living import APISERVER_ARGS, start_living
from tests.e2e.operator import install_aiperf_crds

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "out" / "e2e"
DEFAULT_AIPERF_VENV = Path.home() / ".cache" / "aiperf-kueue" / "venvs" / "aiperf-0.13.0"


def build_module() -> ModuleType:
    """``e2e/build.py``: the one place the e2e versions are pinned."""
    spec = importlib.util.spec_from_file_location("aiperf_kueue_e2e_build", ROOT / "e2e" / "build.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


BUILD = build_module()
KUEUE_MODULE = f"sigs.k8s.io/kueue@{BUILD.KUEUE}"
JOBSET_MODULE = f"sigs.k8s.io/jobset@{BUILD.JOBSET}"


@dataclass
class Report:
    """What ``make e2e`` writes to ``out/e2e/report.json`` and summarises at the end."""

    versions: dict[str, str] = field(default_factory=dict)
    stacks: dict[str, dict[str, Any]] = field(default_factory=dict)
    checks: dict[str, Any] = field(default_factory=dict)
    scenarios: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"versions": self.versions, "stacks": self.stacks, "checks": self.checks, "scenarios": self.scenarios}

    def add_missing(self, part: dict[str, Any]) -> None:
        """Take the stacks, checks and scenarios of another run's report (:meth:`as_dict`) that this one lacks: a
        pytest-xdist worker's."""
        for key in ("stacks", "checks", "scenarios"):
            mine = getattr(self, key)
            mine.update({k: v for k, v in part.get(key, {}).items() if k not in mine})


#: Where a pytest-xdist worker puts its part of the report for the controller (``workeroutput``).
REPORT_KEY = "aiperf_kueue_report"

REPORT = Report(
    versions={
        "kubernetes": BUILD.KUBERNETES,
        "etcd": BUILD.ETCD,
        "kueue": BUILD.KUEUE,
        "jobset": BUILD.JOBSET,
        "pulumi": BUILD.PULUMI_CLI,
        "pulumi-kubernetes": BUILD.PULUMI_KUBERNETES,
        "kwok": BUILD.KWOK,
    }
)


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``e2e`` marker; install the trap that ends every cluster's processes on SIGTERM/SIGHUP."""
    config.addinivalue_line("markers", "e2e: runs against the local real cluster (make e2e)")
    install_trap()


#: Test files run first, longest first (their whole-file times in the fresh-clone CI runs of 2026-12-07): ``make e2e``'s
#: two workers (``--dist loadscope --no-loadscope-reorder``) take whole files in this order, so no long file is left
#: for the end; the files not named come next, in name order. The scenarios come last (:data:`LAST`): one class, one
#: living cluster, about one to three minutes each, so they fill both workers to the end. The smoke benchmark runs
#: only in ``make e2e-nightly``.
FIRST = (
    "test_bench_smoke.py",
    "test_engine.py",
    "test_engine_day_two.py",
    "test_multikueue_e2e.py",
    "test_engine_edits.py",
    "test_engine_split.py",
    "test_stacks.py",
    "test_engine_upgrade.py",
    "test_engine_jobset_upgrade.py",
)
LAST = ("test_scenarios.py",)


def _order(item: pytest.Item) -> int:
    name = item.path.name
    if name in FIRST:
        return FIRST.index(name)
    return len(FIRST) + 1 if name in LAST else len(FIRST)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/e2e is an e2e test; the files of :data:`FIRST` go first and :data:`LAST` last (a stable
    sort: each file's tests, and each scenario's class, stay together and in order)."""
    for item in items:
        if "/e2e/" in str(item.path):
            item.add_marker(pytest.mark.e2e)
    items.sort(key=_order)


@pytest.fixture(scope="session")
def report() -> Report:
    """The run's report, filled by the tests."""
    return REPORT


@pytest.fixture(scope="session")
def binaries() -> dict[str, str]:
    """Binary name → path, from the manifest ``e2e/build.py`` wrote."""
    path = Path(os.environ.get("AIPERF_KUEUE_E2E_BINARIES") or OUT / "binaries.json")
    if not path.is_file():
        pytest.fail(f"{path} not found: build the binaries with `make e2e` (python3 e2e/build.py --manifest {path})")
    manifest = json.loads(path.read_text())
    found: dict[str, str] = manifest["binaries"]
    wanted = (
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kubectl",
        "kueue",
        "jobset",
        "kube-scheduler",
        "kwok",
    )
    for name in wanted:
        if not Path(found.get(name, "")).is_file():
            pytest.fail(f"binary {name} missing from {path}")
    return found


@pytest.fixture(scope="session")
def aiperf_venv() -> Path:
    """The virtualenv with the released AIPerf operator."""
    venv = Path(os.environ.get("AIPERF_VENV") or DEFAULT_AIPERF_VENV)
    if not (venv / "bin" / "kopf").is_file():
        pytest.fail(f"no AIPerf operator virtualenv at {venv}: run `make oracle`")
    return venv


ClusterFactory = Callable[..., LocalCluster]


@pytest.fixture(scope="module")
def new_cluster(binaries: dict[str, str]) -> Iterator[ClusterFactory]:
    """Start fresh clusters (own etcd data, certificates and ports) under ``out/e2e/clusters/<name>``, where their
    logs stay for reading after the run; every one is stopped at module end.

    ``living=True`` makes a living cluster (:mod:`tests.e2e.living`): the API server with the ``PodNodeSelector``
    admission plugin, kube-scheduler and kwok; the fleet's nodes come from a stack (``engine_run(..., living=True)``
    or :func:`tests.e2e.living.sync_fleet`)."""
    started: list[LocalCluster] = []

    def start(
        name: str,
        kueue_manager_config: dict[str, Any] | None = None,
        *,
        aiperf: bool = True,
        controllers: bool = True,
        living: bool = False,
    ) -> LocalCluster:
        workdir = OUT / "clusters" / name
        shutil.rmtree(workdir, ignore_errors=True)
        cluster = LocalCluster(
            binaries,
            workdir,
            kueue_module=KUEUE_MODULE,
            jobset_module=JOBSET_MODULE,
        )
        started.append(cluster)
        if living:
            cluster.apiserver_args = list(APISERVER_ARGS)
        cluster.start(kueue_manager_config, controllers=controllers)
        if living:
            start_living(cluster)
        if aiperf:
            install_aiperf_crds(cluster)
        return cluster

    yield start
    for cluster in started:
        cluster.stop()


@dataclass
class ClusterHandle:
    """A running cluster for tests that only need an API server with Kueue: kubeconfig, kubectl, apply."""

    cluster: LocalCluster

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig."""
        return self.cluster.kubeconfig

    def kubectl(self, *args: str) -> str:
        """kubectl's stdout; raises on a non-zero exit."""
        return self.cluster.kubectl(*args).stdout

    def apply(self, manifests: list[dict[str, Any]]) -> str:
        """Server-side apply, in order."""
        return self.cluster.apply(manifests).stdout


@pytest.fixture(scope="module")
def e2e_cluster(request: pytest.FixtureRequest, new_cluster: ClusterFactory) -> ClusterHandle:
    """One running cluster shared by a module's tests, named after the module (two modules may run at once)."""
    return ClusterHandle(new_cluster(f"shared-{request.module.__name__.rsplit('.', 1)[-1]}"))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Write out/e2e/report.json; a pytest-xdist worker hands its part of the report to the controller instead."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[REPORT_KEY] = json.dumps(REPORT.as_dict())
        return
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "report.json"
    path.write_text(json.dumps(REPORT.as_dict(), indent=2, sort_keys=True) + "\n")


def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist, on the controller: merge a finished worker's part of the report (each stack, check and
    scenario is run by one worker only)."""
    REPORT.add_missing(json.loads(getattr(node, "workeroutput", {}).get(REPORT_KEY, "{}")))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """A readable table: per stack, objects applied and rejected, per job admitted/flavors/pods vs the plan."""
    write = terminalreporter.write_line
    write("")
    write("e2e summary (" + ", ".join(f"{k} {v}" for k, v in REPORT.versions.items()) + ")")
    header = f"{'stack':<18} {'job':<35} {'admitted':<9} {'plan fits':<9} {'flavors':<24} {'pods':>5} {'s':>4}  match"
    for stack, record in sorted(REPORT.stacks.items()):
        write(
            f"{stack}: {record.get('applied', 0)} objects applied, {len(record.get('rejections', []))} rejected"
            + (f", {record['note']}" if record.get("note") else "")
        )
        if not record.get("jobs"):
            continue
        write("  " + header)
        for job in record["jobs"]:
            real, plan = job.get("cluster", {}), job.get("plan", {})
            flavors = ",".join(sorted(set((real.get("flavors") or {}).values()))) or "-"
            seconds = real.get("secondsToAdmission")
            write(
                f"  {stack:<18} {job['name']:<35} {real.get('admitted')!s:<9} {plan.get('fits')!s:<9} "
                f"{flavors:<24} {real.get('pods', '-')!s:>5} {seconds if seconds is not None else '-'!s:>4}  "
                f"{'yes' if job.get('match') else 'NO: ' + '; '.join(job.get('differences', []))}"
            )
    for name, scenario in sorted(REPORT.scenarios.items()):
        write(f"scenario {name}: {scenario['seconds']} s, records in {scenario['out']}")
        for step in scenario["steps"]:
            c = step["counts"]
            write(
                f"  {step['step']:<24} up {step['upSeconds']:>5} s, settled {step['settleSeconds']:>5} s: "
                f"admitted {c['admitted']}, pending {c['pending']}, preempted {c['preempted']}, "
                f"finished {c['finished']}"
            )
            for r in step["workloads"]:
                # The run's object (an edited job has several), and every phase 0.13.0 wrote to it so far.
                phases = " -> ".join(r.get("operatorPhases") or [str(r["operatorPhase"])])
                write(
                    f"    {r['namespace'] + '/' + r['object']:<36} admitted {r['admitted']!s:<5} "
                    f"cq {r['clusterQueue'] or '-':<12} preempted {r['preemptedCount']} finished {r['finished']!s:<5} "
                    f"pods {r['podsRunning']} running/{r['podsSucceeded']} done, operator {phases}; "
                    f"s to admission {r['secondsToAdmission'] if r['secondsToAdmission'] is not None else '-'}, "
                    f"to Running {r['secondsToRunning'] if r['secondsToRunning'] is not None else '-'}"
                )
    for name, value in sorted(REPORT.checks.items()):
        write(f"check {name}: {value}")
    write(f"report: {OUT / 'report.json'}")
