"""``aiperf-kueue``: the offline plan of a stack, without the Pulumi CLI or a cluster.

Exit codes: 0 planned; 2 invalid config (one line per problem, nothing written);
1 anything else.
"""

from __future__ import annotations

import argparse
import atexit
import sys
from pathlib import Path
from typing import Any

from aiperf_kueue.errors import ConfigError
from aiperf_kueue.loader import parse_config, read_stack_file, stack_file_for, stack_name_of
from aiperf_kueue.stack_plan import plan_stack
from offline import report, submissions
from offline.engine import ROOT, close_worker_loops, run_program

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2


def _stacks_dir() -> Path:
    local = Path("stacks")
    return local if local.is_dir() else ROOT / "stacks"


def plan(stack: str, out: Path | None) -> int:
    """Validate, run the program under the recording engine, print and write the plan."""
    path = stack_file_for(stack, _stacks_dir())
    source = str(path)
    try:
        values, secret_keys = read_stack_file(path)
        config = parse_config(values, source)
        plan_stack(config, source, ROOT)  # the program checks again; this keeps a bad stack from registering anything
    except ConfigError as exc:
        for line in exc.lines():
            print(line, file=sys.stderr)
        return EXIT_INVALID
    name = stack_name_of(path)
    run = run_program(name, values, secret_keys)
    records = report.resource_records(run.resources)
    outputs = report.clean(run.outputs)
    plan_data: dict[str, Any] = {
        "stack": name,
        "kueue": outputs.get("kueue"),
        "quotas": outputs.get("quotas", {}),
        "pools": outputs.get("pools", {}),
        "localQueues": outputs.get("localQueues", {}),
        "jobs": outputs.get("jobs", []),
        "preflight": outputs.get("preflight", []),
        "aiperfCli": outputs.get("aiperfCli", {}),
        "warnings": run.warnings,
    }
    files = {
        "manifests.yaml": report.manifests_yaml(records),
        "resources.json": report.to_json(records),
        "plan.json": report.to_json(plan_data),
        "charts.yaml": report.charts_yaml(outputs.get("charts", {})),
    }
    target = out if out is not None else Path("out") / name
    target.mkdir(parents=True, exist_ok=True)
    for file_name, text in files.items():
        (target / file_name).write_text(text)

    kueue = plan_data["kueue"] or {}
    print(f"Stack {name} ({source}): Kueue {kueue.get('version')}, {kueue.get('apiVersion')}")
    print(f"\nResources ({len(records)}):")
    for line in report.tree(records):
        print(f"  {line}")
    print("\nQuotas (nominalQuota per ClusterQueue and flavor):")
    for line in report.quota_table(plan_data["quotas"], plan_data["pools"]):
        print(f"  {line}")
    jobs = plan_data["jobs"]
    print(
        f"\nAIPerfJobs ({len(jobs)}), each proven to fit its ClusterQueue on an empty cluster:"
        if jobs
        else "\nAIPerfJobs: none"
    )
    for line in report.jobs_table(jobs):
        print(f"  {line}")
    print("\nCharts:" if outputs.get("charts") else "\nCharts: none (every controller is managed elsewhere)")
    for key, chart in (outputs.get("charts") or {}).items():
        version = f" {chart['version']}" if chart.get("version") else ""
        print(f"  {key}: {chart['chart']}{version} as release {chart['release']} in {chart['namespace']}")
    print(f"\n{submissions.kueue_install_line(kueue, outputs.get('charts') or {})}")
    preflight = plan_data["preflight"]
    print(f'\nAIPerf preflight "Kueue Queue" ({len(preflight)} submissions into this stack\'s cluster):')
    for line in submissions.preflight_lines(preflight):
        print(f"  {line}")
    print("\nSubmit from the CLI (append the benchmark's flags: --url, --model, ...):")
    for line in submissions.cli_lines(plan_data["aiperfCli"]):
        print(f"  {line}")
    print(f"\nWarnings ({len(run.warnings)}):" if run.warnings else "\nWarnings: none")
    for warning in run.warnings:
        print(f"  - {warning}")
    print(f"\nWrote {', '.join(files)} to {target}/")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """Console entry point."""
    parser = argparse.ArgumentParser(prog="aiperf-kueue", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    plan_parser = sub.add_parser(
        "plan", help="plan a stack offline and write manifests.yaml, resources.json, plan.json"
    )
    plan_parser.add_argument("stack", help="a stack name under stacks/ (dev, prod) or a path to a stack file")
    plan_parser.add_argument("--out", type=Path, default=None, help="output directory (default: out/STACK)")
    args = parser.parse_args(argv)
    # At exit, not now: later runs in the same process reuse the worker threads' loops.
    atexit.register(close_worker_loops)
    try:
        return plan(args.stack, args.out)
    except Exception as exc:
        print(f"aiperf-kueue: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
