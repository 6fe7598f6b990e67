"""The e2e cluster runs the versions the program pins for users: Kueue, JobSet, the AIPerf release, the provider.

If one side moves and the other does not, `make e2e` proves something about a version users do not get.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from aiperf_kueue.config.installs import JobSetConfig
from aiperf_kueue.upstream.aiperf_release import DEFAULT_VERSION as AIPERF_DEFAULT
from aiperf_kueue.upstream.kueue import DEFAULT_VERSION as KUEUE_DEFAULT
from aiperf_kueue.upstream.kueue import KueueTarget
from tests.support import ROOT


def _build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("aiperf_kueue_e2e_build_pins", ROOT / "e2e" / "build.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


BUILD = _build()


def _pinned(requirements: Path, package: str) -> str:
    match = re.search(rf"^{re.escape(package)}==(\S+)$", requirements.read_text(), re.M)
    assert match, f"{package} is not pinned in {requirements.name}"
    return match.group(1)


def _go_require(wrapper: str, module: str) -> str:
    go_mod = (ROOT / "e2e/tools" / wrapper / "go.mod").read_text()
    match = re.search(rf"^(?:require)?\s*{re.escape(module)} (v\S+)", go_mod, re.M)
    assert match, f"{module} is not required in e2e/tools/{wrapper}/go.mod"
    return match.group(1)


def test_e2e_versions_are_the_program_defaults() -> None:
    jobset_default = JobSetConfig().version
    assert {
        "kueue": BUILD.KUEUE,
        "jobset": BUILD.JOBSET,
        "aiperf": _pinned(ROOT / "requirements-aiperf.txt", "aiperf"),
    } == {
        "kueue": f"v{KUEUE_DEFAULT}",
        "jobset": f"v{jobset_default}",
        "aiperf": AIPERF_DEFAULT,
    } == {"kueue": "v0.19.2", "jobset": "v0.12.0", "aiperf": "0.13.0"}


def test_e2e_wrappers_pin_what_the_build_says() -> None:
    assert {
        "kueue": _go_require("cluster", "sigs.k8s.io/kueue"),
        "kueue-old": _go_require("kueue-0.15", "sigs.k8s.io/kueue"),
        "jobset": _go_require("cluster", "sigs.k8s.io/jobset"),
        "jobset-old": _go_require("jobset-0.11", "sigs.k8s.io/jobset"),
        "kubernetes": _go_require("cluster", "k8s.io/kubernetes"),
        "etcd": _go_require("etcd", "go.etcd.io/etcd/server/v3"),
        "pulumi": _go_require("pulumi", "github.com/pulumi/pulumi/pkg/v3"),
        "provider": _go_require("provider", "github.com/pulumi/pulumi-kubernetes/provider/v4"),
    } == {
        "kueue": BUILD.KUEUE,
        "kueue-old": BUILD.KUEUE_OLD,
        "jobset": BUILD.JOBSET,
        "jobset-old": BUILD.JOBSET_OLD,
        "kubernetes": BUILD.KUBERNETES,
        "etcd": BUILD.ETCD,
        "pulumi": BUILD.PULUMI_CLI,
        "provider": BUILD.PULUMI_KUBERNETES_PSEUDO,
    }


def test_the_upgrade_e2e_starts_below_v1beta2() -> None:
    # The upgrade e2e moves a stack across Kueue's v1beta1 -> v1beta2 default (0.16): its older Kueue is below it.
    assert BUILD.KUEUE_OLD == "v0.15.0"
    assert KueueTarget.resolve(BUILD.KUEUE_OLD.lstrip("v"), "auto").api == "v1beta1"
    assert KueueTarget.resolve(BUILD.KUEUE.lstrip("v"), "auto").api == "v1beta2"


def test_the_jobset_upgrade_e2e_starts_one_minor_below_the_default() -> None:
    # The JobSet upgrade e2e moves a stack from the newest 0.11 release the proxy serves to the program's default.
    assert (BUILD.JOBSET_OLD, BUILD.JOBSET, JobSetConfig().version) == ("v0.11.1", "v0.12.0", "0.12.0")


def test_users_run_the_provider_the_e2e_builds() -> None:
    assert _pinned(ROOT / "requirements.txt", "pulumi-kubernetes") == BUILD.PULUMI_KUBERNETES == "4.25.0"
