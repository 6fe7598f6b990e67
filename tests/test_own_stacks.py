"""A team adds its own cluster's stack beside the shipped examples, and the suite stays green.

The suite's stack checks (every test parametrized over :data:`tests.support.CHECKED_STACKS`) run,
in the suite itself, on the committed stacks and on stacks added beside them
(:mod:`tests.stack_variants`): one that plans with a warning (allowed: it did not opt in), one that
opts in to ``aiperf-kueue:warnings: error`` (held to "no warnings", as the shipped examples are),
and the variants of the shipped examples (an operator managed elsewhere, with its env declared or
unknown; no env default queue; a default priority class and another operator release; Kueue
0.10.1; several GPU pools; one team; queues and no jobs). This module checks that they are among
the parametrizations, and what the two lab stacks plan to.
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aiperf_kueue.cli import cli
from tests.stack_variants import LAB_STRICT, VARIANTS
from tests.support import ADDED_STACKS, CHECKED_STACKS, COMMITTED_STACKS, WARNING_FREE_STACKS, gc_paused, stack_file

GPU_ONLY_WARNING = (
    "queues.clusterQueues[0]: ClusterQueue 'lab' can place CPU-only pods (every AIPerf controller and worker) only "
    "on GPU flavor l40s, next to the models under test; fix: add a CPU-only pool to inventory.pools (first in the "
    "list) and give ClusterQueue 'lab' a share of it, and keep GPU pools' CPU and memory for the queues that run "
    "GPU work there with the pool's cpuAndMemoryFor: gpuQueues"
)

#: Stack checks that must be parametrized over the added stacks (the suite runs them, as every test).
EXPECTED = {
    "tests/test_stacks.py::test_committed_stack_plans[lab-gpu]",
    "tests/test_stacks.py::test_committed_stack_plans[lab-strict]",
    "tests/test_stacks.py::test_shipped_and_opted_in_stacks_plan_without_warnings[lab-strict]",
    "tests/test_priority_checks.py::test_warning_free_stacks_have_no_priority_warnings[lab-strict]",
    "tests/test_conformance.py::test_builder_output_conforms[lab-gpu-committed]",
    "tests/test_conformance.py::test_program_run_registers_conforming_objects[lab-gpu-0.10.1-auto]",
    "tests/test_conformance.py::test_program_run_registers_conforming_objects[lab-strict-0.19.2-v1beta1]",
    "tests/test_aiperf_conformance.py::test_builder_jobs_conform[lab-gpu]",
    "tests/test_aiperf_conformance.py::test_program_registers_conforming_jobs[lab-strict]",
    "tests/test_aiperf_oracle.py::test_every_job_of_a_committed_stack_is_created_as_planned[lab-gpu]",
    "tests/test_aiperf_oracle.py::test_every_job_of_a_committed_stack_is_created_as_planned[lab-strict]",
    "tests/test_export.py::test_export_applies_in_order_to_a_cluster_with_only_the_prerequisites[lab-gpu]",
    "tests/test_export.py::test_export_applies_in_order_to_a_cluster_with_only_the_prerequisites[lab-strict]",
    "tests/test_byte_stable.py::test_plans_are_byte_identical_across_processes[lab-strict]",
}
#: The same checks on every generated variant: the ones a new stack broke before (issue 32) among them.
VARIANT_CHECKS = (
    "tests/test_stacks.py::test_committed_stack_plans[{}]",
    "tests/test_installs.py::test_install_graph[{}]",
    "tests/test_installs.py::test_kueue_values_use_only_keys_the_chart_knows[{}-0.19.2]",
    "tests/test_preflight.py::test_by_default_annotation_and_env_default_agree[{}]",
    "tests/test_preflight.py::test_declared_jobs_are_checked_with_the_queue_they_are_applied_with[{}]",
    "tests/test_components.py::test_every_child_has_a_component_parent_and_a_derived_name[{}]",
    "tests/test_blast_radius.py::test_plan_twice_in_one_process_is_byte_identical[{}]",
    "tests/test_conformance.py::test_builder_output_conforms[{}-committed]",
    "tests/test_aiperf_conformance.py::test_builder_jobs_conform[{}]",
    "tests/test_aiperf_oracle.py::test_every_job_of_a_committed_stack_is_created_as_planned[{}]",
    "tests/test_export.py::test_export_applies_in_order_to_a_cluster_with_only_the_prerequisites[{}]",
)
EXPECTED |= {check.format(name) for name in VARIANTS for check in VARIANT_CHECKS}


def _ids(function: Callable[..., Any]) -> set[str]:
    """The test ids pytest gives ``function``'s parametrizations (``[lab-gpu-0.19.2]`` without brackets):
    each ``parametrize`` mark's ids, nearest the function first, joined by ``-``."""
    param_set = type(pytest.param(None))
    per_mark = []
    for mark in getattr(function, "pytestmark", []):
        if mark.name != "parametrize":
            continue
        ids = mark.kwargs.get("ids")
        names: list[str] = []
        for value in mark.args[1]:
            if isinstance(value, param_set) and value.id is not None:
                names.append(str(value.id))
                continue
            value = value.values[0] if isinstance(value, param_set) else value
            names.append(ids(value) if callable(ids) else str(value))
        per_mark.append(names)
    return {"-".join(combo) for combo in itertools.product(*per_mark)}


def test_the_suites_stack_checks_are_parametrized_over_the_added_stacks() -> None:
    assert ["lab-gpu", "lab-strict", *VARIANTS] == ADDED_STACKS
    assert [*COMMITTED_STACKS, *ADDED_STACKS] == CHECKED_STACKS
    missing = []
    for test in sorted(EXPECTED):
        path, _, rest = test.partition("::")
        name, _, param = rest.partition("[")
        with gc_paused():  # the import may run pytest's assertion rewrite
            module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        if param.removesuffix("]") not in _ids(getattr(module, name)):
            missing.append(test)
    assert missing == []
    # Held to "no warnings" only where it opted in (the shipped examples are, too).
    assert "lab-strict" in WARNING_FREE_STACKS
    assert "lab-gpu" not in WARNING_FREE_STACKS


def test_a_stack_that_did_not_opt_in_plans_with_its_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["plan", str(stack_file("lab-gpu")), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert f"Warnings (1):\n  - {GPU_ONLY_WARNING}\n" in out
    # The only ClusterQueue, with neither share nor nominalQuota, takes the whole pool.
    assert "  lab           l40s    128 (100%)  512Gi (100%)  8 (100%)\n" in out


def test_warnings_error_turns_each_warning_into_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    strict = tmp_path / "Pulumi.lab-strict.yaml"
    # Without the CPU pool, the benchmark pods could only go to the GPU nodes.
    cpu_pool = '      - name: cpu\n        nodes: 2\n        cpu: "16"\n        memory: 64Gi\n'
    strict.write_text(LAB_STRICT.replace(cpu_pool, ""))
    assert cli.main(["plan", str(strict), "--out", str(tmp_path / "out")]) == 2
    assert not (tmp_path / "out").exists()
    printed = capsys.readouterr()
    assert (printed.out, printed.err.splitlines()) == (
        "",
        [f"{strict}: aiperf-kueue:warnings: is error, and the plan warns: {GPU_ONLY_WARNING}"],
    )
