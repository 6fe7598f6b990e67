"""Every hand port of upstream code names the project, version and files it follows, and a version bump shows.

Each port's module docstring has a line ``Upstream: <project> <version> <files>`` (docs/upstream.md lists
them with the bump checklist). The versions must be the ones the project pins: when a pin moves and a port's
header still names the old version, this fails and names the port to re-read.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

from aiperf_kueue.upstream import aiperf_release, kueue

ROOT = Path(__file__).resolve().parent.parent
HEADER = re.compile(r"^Upstream: (.+)$", re.M)
#: Every project a port follows, by the name its header uses.
PROJECTS = ("kueue", "aiperf", "pulumi", "yaml.v3", "kubernetes")

#: The ports: module → the projects its header names. A new port is added here and in docs/upstream.md.
PORTS = {
    "aiperf_kueue/common/quantity.py": ["kubernetes"],
    "aiperf_kueue/stackfile/yaml_input.py": ["pulumi", "yaml.v3"],
    "aiperf_kueue/stackfile/go_yaml.py": ["yaml.v3", "pulumi"],
    "aiperf_kueue/config/aiperf_base.py": ["aiperf"],
    "aiperf_kueue/config/aiperf_spec.py": ["aiperf"],
    "aiperf_kueue/config/aiperf_benchmark.py": ["aiperf"],
    "aiperf_kueue/config/aiperf_endpoint.py": ["aiperf"],
    "aiperf_kueue/config/aiperf_phases.py": ["aiperf"],
    "aiperf_kueue/config/aiperf_comm.py": ["aiperf"],
    "aiperf_kueue/config/aiperf_plot.py": ["aiperf"],
    "aiperf_kueue/config/aiperf_sections.py": ["aiperf"],
    "aiperf_kueue/config/aiperf_dataset.py": ["aiperf"],
    "aiperf_kueue/config/aiperf_content.py": ["aiperf"],
    "aiperf_kueue/config/aiperf_outputs.py": ["aiperf"],
    "aiperf_kueue/queues/queue_checks.py": ["kueue"],
    "aiperf_kueue/queues/queue_plan.py": ["kueue"],
    "aiperf_kueue/queues/cohort_tree.py": ["kueue"],
    "aiperf_kueue/workload/job_shape.py": ["aiperf"],
    "aiperf_kueue/workload/sizing.py": ["aiperf"],
    "aiperf_kueue/workload/credentials.py": ["aiperf"],
    "aiperf_kueue/workload/placement.py": ["aiperf"],
    "aiperf_kueue/workload/requests.py": ["kueue"],
    "aiperf_kueue/workload/flavor_assigner.py": ["kueue"],
    "aiperf_kueue/workload/never_fits.py": ["kueue"],
    "aiperf_kueue/installs/releases.py": ["kueue"],
    "aiperf_kueue/plan/preflight.py": ["aiperf"],
    "aiperf_kueue/plan/operator_checks.py": ["aiperf"],
    "aiperf_kueue/simulate/assign.py": ["kueue"],
    "aiperf_kueue/simulate/preempt.py": ["kueue"],
    "aiperf_kueue/simulate/engine.py": ["kueue"],
    "aiperf_kueue/simulate/world.py": ["kueue"],
    "aiperf_kueue/simulate/quota.py": ["kueue"],
    "aiperf_kueue/simulate/explain.py": ["kueue"],
    "aiperf_kueue/upstream/kueue_kubeconfig.py": ["kueue", "kubernetes"],
}


def _build() -> Any:
    spec = importlib.util.spec_from_file_location("aiperf_kueue_e2e_build_pins", ROOT / "e2e" / "build.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def pins() -> dict[str, str]:
    """The version each project is pinned to, where the project pins it."""
    build = _build()
    yaml_v3 = re.search(r"gopkg\.in/yaml\.v3 (v[\d.]+)", (ROOT / "e2e" / "tools" / "pulumi" / "go.mod").read_text())
    assert yaml_v3 is not None
    return {
        "kueue": f"v{kueue.DEFAULT_VERSION}",
        "aiperf": aiperf_release.DEFAULT_VERSION,
        "pulumi": str(build.PULUMI_CLI),
        "yaml.v3": yaml_v3.group(1),
        "kubernetes": str(build.KUBERNETES),
    }


def headers(path: str) -> list[tuple[str, str]]:
    """``(project, version)`` of every ``project version`` pair an ``Upstream:`` line names."""
    text = (ROOT / path).read_text()
    found = []
    for line in HEADER.findall(text):
        found += re.findall(r"\b(" + "|".join(re.escape(p) for p in PROJECTS) + r") (v?\d+\.\d+\.\d+)\b", line)
    return found


def test_the_pins_are_the_ones_the_project_builds_and_models() -> None:
    assert pins() == {
        "kueue": "v0.19.2",
        "aiperf": "0.13.0",
        "pulumi": "v3.274.0",
        "yaml.v3": "v3.0.1",
        "kubernetes": "v1.36.3",
    }


def stale_ports(pinned: dict[str, str]) -> dict[str, list[str]]:
    """Each port whose header names another version than ``pinned``: ``{path: ["kueue v0.18.0 (pinned v0.19.2)"]}``."""
    out = {}
    for path in PORTS:
        stale = [f"{p} {v} (pinned {pinned[p]})" for p, v in headers(path) if v != pinned[p]]
        if stale:
            out[path] = stale
    return out


def test_every_port_opens_with_its_upstream_at_the_pinned_version() -> None:
    for path, projects in PORTS.items():
        assert [p for p, _ in headers(path)] == projects, path
        # The header is in the module's opening docstring, not buried in the code.
        assert (ROOT / path).read_text().index("Upstream: ") < 1000, path
    assert stale_ports(pins()) == {}


def test_no_module_claims_a_port_it_is_not_listed_as() -> None:
    claimed = sorted(
        str(p.relative_to(ROOT)) for p in (ROOT / "aiperf_kueue").rglob("*.py") if HEADER.search(p.read_text())
    )
    assert claimed == sorted(PORTS)
    assert len(claimed) == 34


def test_docs_list_every_port() -> None:
    text = (ROOT / "docs" / "upstream.md").read_text()
    assert [path for path in PORTS if f"`{path}`" not in text] == []


def test_a_bumped_pin_names_the_ports_to_reread() -> None:
    """Bumping Kueue's pin without re-reading its ports names each of them, with both versions."""
    stale = stale_ports({**pins(), "kueue": "v0.20.7"})
    assert sorted(stale) == sorted(path for path, projects in PORTS.items() if "kueue" in projects)
    assert len(stale) == 14
    assert stale["aiperf_kueue/workload/flavor_assigner.py"] == ["kueue v0.19.2 (pinned v0.20.7)"]
