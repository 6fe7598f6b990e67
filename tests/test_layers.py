"""The import-linter contracts in pyproject.toml name every module of the project.

A module the layers contract does not name is not checked at all, so a new one must be given
its layer (and, if Pulumi-free, a place in the pure core's forbidden contract).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
CONTRACTS = {c["type"]: c for c in CONFIG["contracts"]}
#: Pulumi-facing: they may import Pulumi, the Kubernetes client and each other by layer.
ADAPTERS = {
    "aiperf_kueue.cli",
    "components",
    "aiperf_kueue.providers",
    "aiperf_kueue.policies",
}


def layered() -> list[str]:
    return [m.strip() for layer in CONTRACTS["layers"]["layers"] for m in layer.split("|")]


def project_modules() -> set[str]:
    """Every module and subpackage directly in the project's packages."""
    found = {"components"}
    for entry in (ROOT / "aiperf_kueue").iterdir():
        if entry.name.startswith("_") or entry.name == "__pycache__":
            continue
        if entry.suffix == ".py" or (entry / "__init__.py").is_file():
            found.add(f"aiperf_kueue.{entry.stem}")
    return found


def test_every_module_has_a_layer() -> None:
    assert sorted(project_modules()) == sorted(layered())


def test_every_layer_below_the_adapters_is_pure() -> None:
    assert sorted(CONTRACTS["forbidden"]["source_modules"]) == sorted(set(layered()) - ADAPTERS)
    assert CONTRACTS["forbidden"]["forbidden_modules"] == [
        "pulumi",
        "pulumi_kubernetes",
        "pulumi_policy",
        "kubernetes",
        "google",
        "dill",
    ]


def test_the_layers_read_config_to_components() -> None:
    layers = layered()
    order = ["aiperf_kueue.config", "aiperf_kueue.queues", "aiperf_kueue.workload", "aiperf_kueue.plan"]
    assert [layers.index(m) for m in order] == sorted((layers.index(m) for m in order), reverse=True)
    assert layers.index("components") < layers.index("aiperf_kueue.plan")
    assert layers.index("aiperf_kueue.cli") < layers.index("aiperf_kueue.plan")


def test_the_layers_are_packages_named_by_domain() -> None:
    # A newcomer finds the quota planner, a job's pod sizing and the diff's rendering by folder.
    assert (ROOT / "aiperf_kueue" / "queues" / "planner.py").is_file()
    assert (ROOT / "aiperf_kueue" / "workload" / "sizing.py").is_file()
    assert (ROOT / "aiperf_kueue" / "review" / "markdown.py").is_file()
    assert [m for m in layered() if m != "components" and not (ROOT / m.replace(".", "/")).is_dir()] == [
        "aiperf_kueue.policies"
    ]
