"""A stack's offline plan, turned into what the e2e cluster applies and what it must answer.

The plan comes from the real CLI (``aiperf-kueue plan STACK --out DIR``). ``resources.json`` lists every resource the
program registers, with its type, inputs and dependencies: the harness applies its Kubernetes objects server-side in
that dependency order. The installs are the exception: the Helm charts are replaced by the harness's own Kueue and
JobSet processes (configured with the chart's manager configuration) and the operator's env ``DeploymentPatch`` by the
env of the harness's own operator process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("aiperf-kueue")

#: Resource types the harness replaces with its own processes, or that are not Kubernetes objects.
NOT_APPLIED_PREFIXES = ("aiperf-kueue:index:", "pulumi-python:dynamic/", "kubernetes:helm.sh/", "pulumi:")
OPERATOR_ENV_PATCH = "kubernetes:apps/v1:DeploymentPatch"
#: Kinds first when dependencies leave a choice: what others live in or refer to by name.
KIND_RANK = {
    "Namespace": 0,
    "ResourceFlavor": 1,
    "Cohort": 2,
    "ClusterQueue": 3,
    "WorkloadPriorityClass": 4,
    "ServiceAccount": 5,
    "ClusterRole": 5,
    "Role": 5,
    "RoleBinding": 6,
    "LocalQueue": 7,
    "AIPerfJob": 9,
}


@dataclass(frozen=True)
class Plan:
    """The four files of ``plan --out``, parsed."""

    stack: str
    dir: Path
    data: dict[str, Any]
    resources: list[dict[str, Any]]
    charts: dict[str, Any]


def plan_stack(stack_file: Path, out: Path) -> Plan:
    """Plan ``stack_file`` with the real CLI into ``out``; fail with its output if it does not plan."""
    result = subprocess.run(
        [str(CLI), "plan", str(stack_file), "--out", str(out)], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    if result.returncode != 0:
        raise AssertionError(f"plan {stack_file} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return load_plan(out)


def plan_error(stack_file: Path, out: Path) -> tuple[int, str]:
    """Exit code and output of a plan expected to fail."""
    result = subprocess.run(
        [str(CLI), "plan", str(stack_file), "--out", str(out)], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    return result.returncode, result.stdout + result.stderr


def load_plan(out: Path) -> Plan:
    """Read a ``plan --out`` directory."""
    data = json.loads((out / "plan.json").read_text())
    return Plan(
        stack=data["stack"],
        dir=out,
        data=data,
        resources=json.loads((out / "resources.json").read_text()),
        charts=yaml.safe_load((out / "charts.yaml").read_text()) or {},
    )


def is_applied(resource: Mapping[str, Any]) -> bool:
    """Whether the harness applies this resource as a Kubernetes object."""
    kind = resource["type"]
    return kind.startswith("kubernetes:") and kind != OPERATOR_ENV_PATCH and not kind.startswith(NOT_APPLIED_PREFIXES)


def apply_order(resources: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The applied resources in dependency order (``dependsOn``; namespaces before what lives in them), ties
    broken by :data:`KIND_RANK` then name, so the order is the same every run."""
    applied = {r["urn"]: r for r in resources if is_applied(r)}
    namespace_urn = {
        r["inputs"]["metadata"]["name"]: urn for urn, r in applied.items() if r["inputs"].get("kind") == "Namespace"
    }

    def deps(resource: Mapping[str, Any]) -> set[str]:
        found = {d for d in resource.get("dependsOn", []) if d in applied}
        ns = resource["inputs"].get("metadata", {}).get("namespace")
        if ns in namespace_urn:
            found.add(namespace_urn[ns])
        return found

    remaining = dict(applied)
    done: set[str] = set()
    order: list[Mapping[str, Any]] = []
    while remaining:
        ready = [r for urn, r in remaining.items() if deps(r) <= done]
        if not ready:
            raise AssertionError(f"dependency cycle among {sorted(remaining)}")
        ready.sort(key=lambda r: (KIND_RANK.get(r["inputs"].get("kind", ""), 8), r["name"]))
        first = ready[0]
        order.append(first)
        done.add(first["urn"])
        del remaining[first["urn"]]
    return order


def kueue_manager_config(plan: Plan) -> dict[str, Any] | None:
    """The Kueue manager configuration the program's chart values give (None: the program sets none)."""
    values = (plan.charts.get("kueue") or {}).get("values") or {}
    text = (values.get("managerConfig") or {}).get("controllerManagerConfigYaml")
    return yaml.safe_load(text) if text else None


def operator_env(plan: Plan) -> dict[str, str]:
    """The env the program's ``DeploymentPatch`` sets on the operator (plain values only)."""
    env: dict[str, str] = {}
    for resource in plan.resources:
        if resource["type"] != OPERATOR_ENV_PATCH:
            continue
        for container in resource["inputs"]["spec"]["template"]["spec"]["containers"]:
            for item in container.get("env", []):
                if "value" in item:
                    env[item["name"]] = str(item["value"])
    return env


def object_of(resource: Mapping[str, Any]) -> dict[str, Any]:
    """The Kubernetes object a resource's inputs describe (Pulumi-only annotations kept: the API ignores them)."""
    obj: dict[str, Any] = json.loads(json.dumps(resource["inputs"]))
    if resource["type"].endswith("Patch"):
        obj["kind"] = resource["type"].rsplit(":", 1)[1].removesuffix("Patch")
    return obj


def ref(obj: Mapping[str, Any]) -> str:
    """``Kind/namespace/name`` of an object, for reports."""
    meta = obj.get("metadata", {})
    parts = [obj.get("kind", "?"), meta.get("namespace"), meta.get("name", "?")]
    return "/".join(p for p in parts if p)
