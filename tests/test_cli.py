"""``aiperf-kueue plan``: console output, files, determinism, secrets, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from aiperf_kueue.cli import cli
from aiperf_kueue.cli.cli import main
from aiperf_kueue.stackfile import secrets
from tests.support import COMMITTED_STACKS, OPERATOR_CHART_NOTE, ROOT

DEV_PLAN = {
    "stack": "dev",
    "kueueBoundary": [],
    "cluster": {
        "context": "kind-aiperf",
        "kubeconfig": None,
        "currentContext": False,
        "namedBy": "aiperf-kueue:cluster",
        "target": "context kind-aiperf in $KUBECONFIG (else ~/.kube/config)",
    },
    "kueue": {"version": "0.19.2", "apiVersion": "v1beta2", "source": "helm"},
    "quotas": {"benchmarks": {"default": {"cpu": "7200m", "memory": "14745Mi"}}},
    "pools": {"default": {"cpu": "7200m", "memory": "14745Mi"}},
    "shares": {"benchmarks": {"default": {"cpu": 100, "memory": 100}}},
    "borrowingLimits": {},
    "lendingLimits": {},
    "localQueues": {"aiperf-benchmarks": ["aiperf-queue"]},
    "jobs": [
        {
            "name": "smoke",
            "objectName": "smoke-42740b",
            "namespace": "aiperf-benchmarks",
            "queue": "aiperf-queue",
            "clusterQueue": "benchmarks",
            "priorityClass": None,
            "pods": 2,
            "workers": 1,
            "requests": {"cpu": "3775m", "memory": "8000Mi"},
            "flavor": ["default"],
            "fits": True,
            "borrowing": False,
            "fitOnNominal": 1,
        }
    ],
    "preflight": [
        {
            "check": "Kueue Queue",
            "subject": "AIPerfJob aiperf-benchmarks/smoke-42740b",
            "kind": "AIPerfJob",
            "job": "smoke",
            "objectName": "smoke-42740b",
            "namespace": "aiperf-benchmarks",
            "queueName": "aiperf-queue",
            "status": "PASS",
            "message": "Kueue LocalQueue 'aiperf-queue' exists",
            "fix": None,
            "then": "JobSet labelled kueue.x-k8s.io/queue-name=aiperf-queue and created suspended; Kueue admits it "
            "through LocalQueue aiperf-queue (ClusterQueue benchmarks)",
        },
        {
            "check": "Kueue Queue",
            "subject": "aiperf kube profile -n aiperf-benchmarks --queue-name aiperf-queue",
            "kind": "aiperf kube profile",
            "job": None,
            "objectName": None,
            "namespace": "aiperf-benchmarks",
            "queueName": "aiperf-queue",
            "status": "PASS",
            "message": "Kueue LocalQueue 'aiperf-queue' exists",
            "fix": None,
            "then": "JobSet labelled kueue.x-k8s.io/queue-name=aiperf-queue and created suspended; Kueue admits it "
            "through LocalQueue aiperf-queue (ClusterQueue benchmarks)",
        },
        {
            "check": "Kueue Queue",
            "subject": "aiperf kube profile -n aiperf-benchmarks (no --queue-name)",
            "kind": "aiperf kube profile without --queue-name",
            "job": None,
            "objectName": None,
            "namespace": "aiperf-benchmarks",
            "queueName": None,
            "status": "PASS",
            "message": "No explicit queue specified but namespace has kueue.x-k8s.io/default-queue-name annotation",
            "fix": None,
            "then": "the operator labels the JobSet kueue.x-k8s.io/queue-name=aiperf-queue (operator.defaultQueue: "
            "auto, the LocalQueue every benchmark namespace has) and creates it suspended; Kueue admits it through "
            "LocalQueue aiperf-queue (ClusterQueue benchmarks)",
        },
    ],
    "aiperfCli": {
        "aiperf-benchmarks": "aiperf kube profile --namespace aiperf-benchmarks --image nvcr.io/nvidia/aiperf:0.13.0 "
        "--queue-name aiperf-queue"
    },
    "warnings": [],
    "provider": {},
}


def test_plan_dev_prints_tree_quotas_and_writes_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "dev", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert (
        "  └─ ns-aiperf-benchmarks-lq-aiperf-queue  [LocalQueue aiperf-benchmarks/aiperf-queue]"
        "  (replace on spec.clusterQueue; delete before replace)\n" in out
    )
    assert "  ├─ kueue-chart  [helm oci://registry.k8s.io/kueue/charts/kueue 0.19.2]  (CRDs protected)\n" in out
    assert "  benchmarks    default  7200m (100%)  14745Mi (100%)" in out
    assert "Warnings: none" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "charts.yaml",
        "manifests.yaml",
        "plan.json",
        "resources.json",
    ]
    assert json.loads((tmp_path / "plan.json").read_text()) == DEV_PLAN
    docs = list(yaml.safe_load_all((tmp_path / "manifests.yaml").read_text()))
    assert sorted((d["kind"], d["metadata"]["name"]) for d in docs) == [
        ("AIPerfJob", "smoke-42740b"),
        ("ClusterQueue", "benchmarks"),
        ("ClusterRole", "aiperf-operator-benchmark"),
        ("Deployment", "aiperf-operator"),
        ("LocalQueue", "aiperf-queue"),
        ("Namespace", "aiperf-benchmarks"),
        ("Namespace", "aiperf-system"),
        ("Namespace", "jobset-system"),
        ("Namespace", "kueue-system"),
        ("ResourceFlavor", "default"),
        ("RoleBinding", "aiperf-operator-benchmark-access"),
    ]
    resources = json.loads((tmp_path / "resources.json").read_text())
    assert set(resources[0]) == {
        "type",
        "name",
        "urn",
        "parent",
        "dependsOn",
        "protect",
        "retainOnDelete",
        "deleteBeforeReplace",
        "replaceOnChanges",
        "inputs",
    }
    assert len(resources) == 23  # the provider for the stack's cluster, then 22 of the program's


def test_plan_is_byte_identical_when_run_twice(tmp_path: Path) -> None:
    assert main(["plan", "prod", "--out", str(tmp_path / "a")]) == 0
    assert main(["plan", "prod", "--out", str(tmp_path / "b")]) == 0
    for name in ("manifests.yaml", "resources.json", "plan.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_plan_takes_a_stack_file_path_and_defaults_out_to_out_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack_file = tmp_path / "Pulumi.mine.yaml"
    stack_file.write_text((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    assert main(["plan", str(stack_file)]) == 0
    assert json.loads((tmp_path / "out" / "mine" / "plan.json").read_text())["stack"] == "mine"


def test_secure_values_never_reach_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (
        (ROOT / "stacks" / "Pulumi.prod.yaml")
        .read_text()
        .replace(
            "description: Release-gating benchmark runs",
            "description:\n        secure: v1:c2VjcmV0LWNpcGhlcnRleHQ=",
        )
    )
    stack_file = tmp_path / "Pulumi.secret.yaml"
    stack_file.write_text(text)
    # Outside an AIPerfJob spec nothing can keep it secret on the cluster: refused, and not echoed.
    assert main(["plan", str(stack_file), "--out", str(tmp_path / "out")]) == 2
    printed = capsys.readouterr()
    assert printed.err == f"{stack_file}: aiperf-kueue:priorityClasses[0].description: {secrets.NOT_HERE}\n"
    assert not (tmp_path / "out").exists()


def test_missing_stack_is_exit_2_without_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "nope", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err == f"stacks/Pulumi.nope.yaml: no stack 'nope'; stacks in stacks/: {', '.join(COMMITTED_STACKS)}\n"
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_console_script_runs_as_a_process(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "aiperf_kueue.cli.cli", "plan", "dev", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == OPERATOR_CHART_NOTE
    assert "Wrote manifests.yaml, resources.json, plan.json, charts.yaml to" in done.stdout


def test_plan_out_must_not_be_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    taken = tmp_path / "taken"
    taken.write_text("")
    assert main(["plan", "dev", "--out", str(taken)]) == 2
    printed = capsys.readouterr()
    assert (printed.out, printed.err) == (
        "",
        f"{taken}: --out is a file: plan writes a directory of files\n",
    )
    assert taken.read_text() == ""


def test_a_stack_file_that_is_not_utf8_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stack_file = tmp_path / "Pulumi.latin1.yaml"
    stack_file.write_bytes(b"config:\n  aiperf-kueue:kueue: {version: caf\xe9}\n")
    assert main(["plan", str(stack_file), "--out", str(tmp_path / "out")]) == 2
    printed = capsys.readouterr()
    assert printed.err == f"{stack_file}: not UTF-8 text: invalid continuation byte at byte 43\n"
    assert not (tmp_path / "out").exists()


def test_a_local_operator_chart_not_checked_out_is_a_note_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())
    stack["config"]["aiperf-kueue:operator"]["chart"] = "charts/not-checked-out"
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump(stack))
    assert main(["plan", str(path), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr()
    assert printed.err == (
        "note: operator.chart: local chart 'charts/not-checked-out' not found (resolved to "
        f"{ROOT / 'charts' / 'not-checked-out'}): the merged values were not validated against its "
        "values.schema.json, and pulumi up cannot render it; check out ai-dynamo/aiperf at tag v0.13.0 "
        "there, or point operator.chart at the checkout\n"
    )
    # The files are the same wherever the plan is made: the note is not in them.
    assert "not-checked-out" not in (tmp_path / "out" / "plan.json").read_text()
    assert "Warnings: none" in printed.out


def test_the_provider_settings_reach_the_program_offline_as_under_pulumi_up(tmp_path: Path) -> None:
    """The readiness gate waits on the provider's cluster: offline, the plan shows which, as the engine will.
    A stack that names its cluster the provider's way (``kubernetes:context``) keeps that meaning."""
    text = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text().replace(
        "  aiperf-kueue:cluster:\n    context: kind-aiperf\n", "  kubernetes:context: lab-cluster\n", 1
    )
    (tmp_path / "Pulumi.lab.yaml").write_text(text)
    result = cli.compute_plan(tmp_path / "Pulumi.lab.yaml")
    gate = next(r for r in result.records if r["name"] == "kueue-ready")
    assert (gate["inputs"]["context"], result.plan_data["provider"]) == (
        "lab-cluster",
        {"kubernetes:context": "lab-cluster"},
    )
    provider = next(r for r in result.records if r["type"] == "pulumi:providers:kubernetes")
    assert provider["inputs"]["context"] == "lab-cluster"
    assert result.plan_data["cluster"]["namedBy"] == "kubernetes:context"
