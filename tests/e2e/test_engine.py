"""``pulumi up``, ``preview`` and ``destroy`` for real: the built CLI and provider against a local cluster.

Each stack runs on its own fresh control plane. Its stack file is the committed one with the e2e's changes only
(:func:`e2e_config`): Kueue's and JobSet's charts are the ones in their Go module zips (local chart paths, the same
versions the program pins), and the operator chart, which no package ships, is not installed (``operator.install:
false``). ``pulumi up`` installs both charts for real; :class:`~tests.e2e.charts.ChartControllers` runs their
controllers where the chart's pods would run.

What each stack proves:

- ``pulumi up`` from empty succeeds, and ``pulumi preview --expect-no-changes`` right after it passes;
- the engine registered what the offline plan registered: the same resources (type, name, parent), inputs and
  options, compared with ``resources.json`` of ``aiperf-kueue plan`` on the same stack file (the charts' own
  children exist only in the engine: the offline plan never renders a chart);
- each chart renders through the real provider as the plan's ``charts.yaml`` says: its release name and namespace,
  and exactly the CRDs of its Go module's ``config/components/crd``;
- every CRD the charts install is protected in the exported state, and ``pulumi destroy`` is refused while they are;
- with protection lifted, ``pulumi destroy`` completes and leaves no namespace or queue behind.
"""

from __future__ import annotations

import copy
import json
import shlex
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pulumi.automation import OpType

from tests.e2e.cluster import _deadline_loop
from tests.e2e.conftest import BUILD, JOBSET_MODULE, KUEUE_MODULE, OUT, ROOT, ClusterFactory, Report
from tests.e2e.engine import PROJECT, EngineRun, e2e_config, engine_run
from tests.support import SECRET_SIG

ENGINE_STACKS = ("dev", "prod")


@pytest.fixture(scope="module", params=ENGINE_STACKS)
def engine(
    request: pytest.FixtureRequest, new_cluster: ClusterFactory, binaries: dict[str, str], report: Report
) -> Iterator[EngineRun]:
    """A fresh cluster, the stack's nodes, ``pulumi up`` from empty with the charts' controllers running."""
    name: str = request.param
    stack_file = ROOT / "stacks" / f"Pulumi.{name}.yaml"
    cluster = new_cluster(f"engine-{name}", controllers=False)
    config = e2e_config(stack_file, KUEUE_MODULE, JOBSET_MODULE)
    # The engine as users run it: checkpoints on (the other engine tests skip them: tests/e2e/engine.py).
    with engine_run(name, stack_file, cluster, binaries, BUILD.PULUMI_KUBERNETES, config, checkpoints=True) as run:
        started = time.monotonic()
        result = run.up()
        run.timings["up"] = round(time.monotonic() - started, 1)
        assert result.summary.result == "succeeded", result.stderr
        report.checks[f"pulumi up {name}"] = f"{result.summary.resource_changes} in {run.timings['up']} s"
        yield run
        assert run.controllers.errors == []


def test_no_change_preview_after_up(engine: EngineRun, report: Report) -> None:
    started = time.monotonic()
    result = engine.preview(expect_no_changes=True, diff=True)
    seconds = round(time.monotonic() - started, 1)
    assert set(result.change_summary) == {"same"}, result.stdout
    report.checks[f"no-change preview {engine.name}"] = f"{result.change_summary[OpType.SAME]} same in {seconds} s"


def _state_resources(run: EngineRun) -> list[dict[str, Any]]:
    return run.state()


def _chart_children(resources: list[dict[str, Any]]) -> set[str]:
    charts = {r["urn"] for r in resources if r["type"] == "kubernetes:helm.sh/v4:Chart"}
    return {r["urn"] for r in resources if r.get("parent") in charts}


def _comparable(value: Any) -> Any:
    """Inputs with every secret as ``[secret]`` (state holds ciphertext, the plan a fingerprint) and the
    dynamic provider's pickled ``__provider`` left out (the state has the real engine's serialization)."""
    if isinstance(value, dict):
        if SECRET_SIG in value:
            return "[secret]"
        return {k: _comparable(v) for k, v in value.items() if k != "__provider"}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    if isinstance(value, str) and value.startswith(("[secret", "[encrypted")):
        return "[secret]"
    return value


def test_engine_registers_what_the_offline_plan_registers(engine: EngineRun, report: Report) -> None:
    state = _state_resources(engine)
    offline = {r["urn"]: r for r in engine.plan.resources}
    # The engine's default providers (the dynamic provider's, the Stack's) are its own; the stack's Kubernetes
    # provider is the program's, and in both.
    engine_only = _chart_children(state) | {
        r["urn"]
        for r in state
        if (r["type"].startswith("pulumi:providers:") and r["urn"] not in offline) or r["type"] == "pulumi:pulumi:Stack"
    }
    real = {r["urn"]: r for r in state if r["urn"] not in engine_only}
    assert (sorted(set(real) - set(offline)), sorted(set(offline) - set(real))) == ([], [])
    differences = {}
    exceptions: dict[str, list[str]] = {}
    for urn, planned in offline.items():
        got = copy.deepcopy(real[urn])
        if not got.get("custom"):
            # A component (these ComponentResources, and the remote Chart v4) keeps no inputs in state.
            got["inputs"] = planned.get("inputs")
            exceptions.setdefault("component inputs not kept in state", []).append(urn)
        if got["type"] == "pulumi:providers:kubernetes":
            # The engine records the plugin's version and its own bookkeeping in a provider's inputs.
            got["inputs"] = {k: v for k, v in (got.get("inputs") or {}).items() if k not in ("version", "__internal")}
            exceptions.setdefault("the engine adds version and __internal to the provider's inputs", []).append(urn)
        meta = (got.get("inputs") or {}).get("metadata") or {}
        if meta.get("namespace") == "default" and "namespace" not in (planned.get("inputs") or {}).get("metadata", {}):
            # pulumi-kubernetes records namespace "default" on a cluster-scoped custom resource's inputs.
            del meta["namespace"]
            exceptions.setdefault("provider adds metadata.namespace=default to cluster-scoped CRs", []).append(urn)
        options = {
            "parent": (got.get("parent"), planned.get("parent")),
            "protect": (bool(got.get("protect")), bool(planned.get("protect"))),
            "retainOnDelete": (bool(got.get("retainOnDelete")), bool(planned.get("retainOnDelete"))),
            "replaceOnChanges": (
                sorted(got.get("replaceOnChanges") or []),
                sorted(planned.get("replaceOnChanges") or []),
            ),
            "dependencies": (sorted(set(got.get("dependencies") or [])), sorted(set(planned.get("dependsOn") or []))),
            "inputs": (_comparable(got.get("inputs") or {}), _comparable(planned.get("inputs") or {})),
        }
        # deleteBeforeReplace is a step option the engine does not keep in state: the replace tests check it.
        wrong = {k: v for k, v in options.items() if v[0] != v[1]}
        if wrong:
            differences[urn] = wrong
    out = {"differences": differences, "documentedExceptions": exceptions}
    (OUT / f"engine-vs-plan-{engine.name}.json").write_text(json.dumps(out, indent=1, sort_keys=True))
    report.checks[f"engine vs offline plan {engine.name}"] = (
        f"{len(offline)} resources, {len(differences)} differences; exceptions: "
        + "; ".join(f"{k} ({len(v)})" for k, v in sorted(exceptions.items()))
    )
    assert differences == {}


def _commands(value: Any) -> list[str]:
    """Every command of the ``kubectl`` stack output (a string, or a map of them, nested once)."""
    if isinstance(value, dict):
        return [command for v in value.values() for command in _commands(v)]
    return [value]


def test_every_kubectl_output_runs_on_the_cluster(engine: EngineRun, report: Report) -> None:
    """Each command of the ``kubectl`` stack output, run as a user pastes it (the built kubectl against this
    cluster), succeeds; the one that lists the benchmark namespaces shows each with the ClusterQueue and the
    default-queue annotation the plan gives it."""
    kubectl = engine.stack.outputs()["kubectl"].value
    commands = _commands(kubectl)
    failed = {}
    for command in commands:
        program, *args = shlex.split(command)
        assert program == "kubectl", command
        result = engine.cluster.kubectl(*args, check=False)
        if result.returncode != 0:
            failed[command] = result.stderr.strip()
    assert failed == {}
    # The benchmark namespaces (each labelled with its ClusterQueue; one kept elsewhere is patched), not the charts'
    # release namespaces.
    namespaces = [
        r["inputs"]["metadata"]
        for r in engine.plan.resources
        if r["type"] in ("kubernetes:core/v1:Namespace", "kubernetes:core/v1:NamespacePatch")
        and "aiperf-kueue/cluster-queue" in (r["inputs"]["metadata"].get("labels") or {})
    ]
    planned = sorted(
        [
            m["name"],
            m["labels"]["aiperf-kueue/cluster-queue"],
            (m.get("annotations") or {}).get("kueue.x-k8s.io/default-queue-name", "<none>"),
        ]
        for m in namespaces
    )
    listed = engine.cluster.kubectl(*shlex.split(kubectl["namespaceAnnotations"])[1:])
    header, *rows = listed.stdout.splitlines()
    assert header.split() == ["NAMESPACE", "CLUSTERQUEUE", "DEFAULT-QUEUE"]
    assert len(planned) > 0
    assert sorted(row.split() for row in rows) == planned
    report.checks[f"kubectl outputs {engine.name}"] = f"{len(commands)} commands ran; {len(rows)} namespaces listed"


#: Namespaced objects a chart puts outside its release namespace on purpose: Kueue's RoleBinding to
#: ``extension-apiserver-authentication-reader``, which an aggregated API server (its visibility API) needs.
OUTSIDE_RELEASE_NAMESPACE = {("kueue", "RoleBinding", "kube-system")}


def test_charts_render_as_the_plan_says(engine: EngineRun, report: Report) -> None:
    state = _state_resources(engine)
    charts = {r["urn"].rsplit("::", 1)[1]: r["urn"] for r in state if r["type"] == "kubernetes:helm.sh/v4:Chart"}
    assert sorted(charts) == ["jobset-chart", "kueue-chart"]
    # The CRDs the harness itself installs from the same modules (their kustomizations list them).
    module_crds = {"kueue": engine.cluster.kueue_crds(), "jobset": engine.cluster.jobset_crds()}
    seen = {}
    for key, crd_objects in module_crds.items():
        planned = engine.plan.charts[key]
        children = [r for r in state if r.get("parent") == charts[f"{key}-chart"]]
        metadata = [((r.get("outputs") or {}).get("metadata") or {}, r["type"].rsplit(":", 1)[1]) for r in children]
        namespaces = {
            (kind, meta["namespace"])
            for meta, kind in metadata
            if meta.get("namespace") and (key, kind, meta["namespace"]) not in OUTSIDE_RELEASE_NAMESPACE
        }
        instances = {(meta.get("labels") or {}).get("app.kubernetes.io/instance") for meta, _ in metadata}
        crds = {meta["name"] for meta, kind in metadata if kind == "CustomResourceDefinition"}
        seen[key] = {
            "namespaces": {ns for _, ns in namespaces},
            # JobSet's chart ships its CRD from crds/ without the chart's labels.
            "instances": instances - {None},
            "crds": crds,
        }
        assert seen[key] == {
            "namespaces": {planned["namespace"]},
            "instances": {planned["release"]},
            "crds": {crd["metadata"]["name"] for crd in crd_objects},
        }
    report.checks[f"charts render as planned {engine.name}"] = ", ".join(
        f"{key}: release {engine.plan.charts[key]['release']} in {engine.plan.charts[key]['namespace']}, "
        f"{len(v['crds'])} CRDs"
        for key, v in seen.items()
    )


def test_chart_crds_are_protected_in_state(engine: EngineRun, report: Report) -> None:
    state = _state_resources(engine)
    crds = {
        r["urn"].rsplit("::", 1)[1]: bool(r.get("protect"))
        for r in state
        if r["type"] == "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
    }
    assert len(crds) >= 12
    assert {name: protected for name, protected in crds.items() if not protected} == {}
    report.checks[f"protected CRDs {engine.name}"] = f"{len(crds)} CRDs protected in state"


def test_chart_services_are_not_awaited(engine: EngineRun, report: Report) -> None:
    """Every Service the charts render is annotated ``pulumi.com/skipAwait`` on the cluster (the transform reached
    the chart's children): ``pulumi up`` waits for the Deployments and the readiness gate, not for each Service's
    endpoints plus pulumi-kubernetes' 10-s settle."""
    found = {}
    for namespace in ("kueue-system", "jobset-system"):
        for svc in engine.cluster.get_json("services", "-n", namespace)["items"]:
            meta = svc["metadata"]
            found[f"{namespace}/{meta['name']}"] = (meta.get("annotations") or {}).get("pulumi.com/skipAwait")
    assert found == {
        "kueue-system/kueue-controller-manager-metrics-service": "true",
        "kueue-system/kueue-visibility-server": "true",
        "kueue-system/kueue-webhook-service": "true",
        "jobset-system/jobset-metrics-service": "true",
        "jobset-system/jobset-webhook-service": "true",
    }
    report.checks[f"chart Services not awaited {engine.name}"] = f"{len(found)} Services annotated skipAwait"


def test_destroy_is_refused_while_kueue_is_protected(engine: EngineRun, report: Report) -> None:
    # `pulumi destroy --yes` as users run it: its preview meets the protected CRDs and stops before any delete.
    # (The Automation API's destroy adds --skip-preview: then the engine deletes every unprotected resource,
    # the queues among them, before it reaches the protected CRDs. docs/operations.md says so.)
    before = _state_resources(engine)
    result = engine.engine.cli("destroy", "--yes", "--stack", engine.name, cwd=engine.work, check=False)
    assert result.returncode != 0
    assert "protected" in result.stdout + result.stderr
    assert len(_state_resources(engine)) == len(before)
    assert engine.cluster.get_json("clusterqueues")["items"]
    report.checks[f"destroy refused {engine.name}"] = "pulumi destroy --yes stopped at its preview: nothing deleted"


def test_destroy_after_lifting_protection_leaves_nothing(engine: EngineRun, report: Report) -> None:
    config = copy.deepcopy(engine.config)
    config[f"{PROJECT}:kueue"] = {**config[f"{PROJECT}:kueue"], "protect": False}
    config[f"{PROJECT}:jobset"] = {**config[f"{PROJECT}:jobset"], "protectCrds": False}
    engine.set_config(config)
    assert engine.up().summary.result == "succeeded"
    started = time.monotonic()
    result = engine.stack.destroy(color="never")
    seconds = time.monotonic() - started
    report.checks[f"destroy {engine.name}"] = f"{result.summary.resource_changes} in {seconds:.1f} s"
    assert result.summary.result == "succeeded"
    namespaces = [r for r in engine.plan.resources if r["type"] == "kubernetes:core/v1:Namespace"]
    deleted = {r["inputs"]["metadata"]["name"] for r in namespaces if not r.get("retainOnDelete")}
    retained = {r["inputs"]["metadata"]["name"] for r in namespaces if r.get("retainOnDelete")}
    left: dict[str, str] = {}
    for _ in _deadline_loop("deleted namespaces to be gone (no finalizer stuck)", 120, interval=1):
        left = {n["metadata"]["name"]: n["status"]["phase"] for n in engine.cluster.get_json("namespaces")["items"]}
        if not set(left) & deleted:
            break
    assert {n: left.get(n) for n in sorted(retained)} == dict.fromkeys(sorted(retained), "Active")
    # Kueue's CRDs went with the chart (protection lifted), and every ClusterQueue with them.
    remaining = engine.cluster.kubectl("get", "clusterqueues", "-o", "name", check=False)
    assert (remaining.returncode, remaining.stdout) == (1, "")
    assert json.dumps(_state_resources(engine)) == "[]"
