"""Day two on the real engine: upgrades and flips keep the live objects, drift made by hand is restored, every
destructive change the offline ``diff`` names is one the real preview plans, and the stack deploys only to the
cluster it names.

One ``dev`` stack on its own cluster, edited step by step as a user would: each step compares the live objects'
UIDs before and after (the same UID is the same object: nothing was deleted and re-created).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from pulumi import automation as auto

from aiperf_kueue.review.destructive import destructive_changes
from aiperf_kueue.review.resource_diff import resource_changes
from tests.e2e.conftest import BUILD, JOBSET_MODULE, KUEUE_MODULE, OUT, ROOT, ClusterFactory, Report
from tests.e2e.engine import CONTEXT, PROJECT, Engine, EngineRun, e2e_config, engine_run, step_recorder
from tests.e2e.stackrun import plan_stack

STACK = ROOT / "stacks" / "Pulumi.dev.yaml"
KUEUE_KINDS = ("resourceflavors", "clusterqueues", "localqueues")
NAMESPACE_PATCH = "kubernetes:core/v1:NamespacePatch"


@pytest.fixture(scope="module")
def dev(new_cluster: ClusterFactory, binaries: dict[str, str]) -> Iterator[EngineRun]:
    """dev on Kueue's v1beta1 API (as a stack deployed before Kueue 0.16 made v1beta2 the default), from empty."""
    cluster = new_cluster("engine-day-two", controllers=False)
    config = e2e_config(STACK, KUEUE_MODULE, JOBSET_MODULE)
    config[f"{PROJECT}:kueue"] = {**config[f"{PROJECT}:kueue"], "apiVersion": "v1beta1"}
    with engine_run("dev", STACK, cluster, binaries, BUILD.PULUMI_KUBERNETES, config) as run:
        assert run.up().summary.result == "succeeded"
        yield run
        assert run.controllers.errors == []


def _uids(run: EngineRun) -> dict[str, str]:
    """``kind/namespace/name`` → UID of every Kueue queue object and every namespace."""
    return run.cluster.uids(*(f"{k}.kueue.x-k8s.io" for k in KUEUE_KINDS), "namespaces")


def _offline(run: EngineRun, name: str, config: dict[str, Any]) -> dict[str, list[str]]:
    """The offline diff of the stack file now against ``config``: ``{action: [URN]}`` and the destructive names."""
    base = plan_stack(run.stack_file, OUT / "day-two" / f"{name}-base")
    head = plan_stack(run.set_config(config), OUT / "day-two" / f"{name}-head")
    changes = resource_changes(base.resources, head.resources)
    out: dict[str, set[str]] = {}
    for change in changes:
        out.setdefault(change.action, set()).add(change.urn)
    destructive = destructive_changes(tuple(changes), base.data, head.data)
    out["destructive"] = {d.name for d in destructive}
    return {k: sorted(v) for k, v in sorted(out.items())}


def _edit(run: EngineRun, name: str, edit: Any, report: Report) -> dict[str, Any]:
    config = copy.deepcopy(run.config)
    edit(config)
    before = _uids(run)
    expected = _offline(run, name, config)
    preview = run.preview()
    previewed = run.changes()
    up = run.up()
    applied = run.changes()
    clean = run.preview(expect_no_changes=True)
    after = _uids(run)
    report.checks[f"day two: {name}"] = (
        f"offline {({k: len(v) for k, v in expected.items()})}, preview {preview.change_summary}, up "
        f"{up.summary.resource_changes}, then {clean.change_summary}; objects kept: "
        f"{sum(1 for k, v in before.items() if after.get(k) == v)} of {len(before)}"
    )
    return {"expected": expected, "previewed": previewed, "applied": applied, "before": before, "after": after}


def _names(urns: list[str]) -> list[str]:
    return sorted(u.rsplit("::", 1)[1] for u in urns)


def test_the_stack_deploys_through_its_own_provider_only(dev: EngineRun) -> None:
    # One Kubernetes provider, the stack's own, and no default one (Pulumi.yaml disables it).
    providers = [r for r in dev.state() if r["type"] == "pulumi:providers:kubernetes"]
    assert [(p["urn"].rsplit("::", 1)[1], p["inputs"]["context"]) for p in providers] == [("cluster", CONTEXT)]
    # Every Kubernetes object names it: nothing fell back to a default provider.
    kube = [r for r in dev.state() if r["type"].startswith("kubernetes:") and r.get("custom")]
    assert len(kube) > 10
    assert {r["provider"].split("::", 3)[3].split("::")[0] for r in kube} == {"cluster"}


def test_moving_to_kueue_v1beta2_updates_every_queue_in_place(dev: EngineRun, report: Report) -> None:
    def upgrade(config: dict[str, Any]) -> None:
        config[f"{PROJECT}:kueue"] = {**config[f"{PROJECT}:kueue"], "apiVersion": "auto"}  # v1beta2 on 0.19.2

    result = _edit(dev, "kueue-v1beta2", upgrade, report)
    expected = result["expected"]
    assert _names(expected["update"]) == [
        "ns-aiperf-benchmarks-lq-aiperf-queue",
        "queues-cq-benchmarks",
        "queues-flavor-default",
    ]
    assert _names(expected["replace"]) == ["kueue-ready"]  # the gate waits for the new API again, on purpose
    assert "create" not in expected and "delete" not in expected and expected["destructive"] == []
    del expected["destructive"]
    assert (result["previewed"], result["applied"]) == (expected, expected)
    assert result["after"] == result["before"]  # the same objects, by UID


def test_flipping_a_namespaces_create_keeps_it(dev: EngineRun, report: Report) -> None:
    def flip(value: bool) -> Any:
        def edit(config: dict[str, Any]) -> None:
            config[f"{PROJECT}:queues"]["clusterQueues"][0]["namespaces"][0]["create"] = value

        return edit

    for value in (False, True):
        result = _edit(dev, f"namespace-create-{str(value).lower()}", flip(value), report)
        # Same inputs under the other type: the engine moves its state and takes no step; the offline diff agrees.
        assert result["expected"] == {"destructive": []}
        assert (result["previewed"], result["applied"]) == ({}, {})
        assert result["after"] == result["before"]
        types = {r["urn"].rsplit("::", 1)[1]: r["type"] for r in dev.state()}
        assert types["ns-aiperf-benchmarks-ns"] == ("kubernetes:core/v1:Namespace" if value else NAMESPACE_PATCH)


def test_a_cluster_queue_edited_by_hand_is_shown_and_restored(dev: EngineRun, report: Report) -> None:
    def quota() -> str:
        cq = dev.cluster.get_json("clusterqueues.kueue.x-k8s.io", "benchmarks")
        return str(cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"])

    planned = quota()
    path = "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota"
    patch = [{"op": "replace", "path": path, "value": "1"}]
    dev.cluster.kubectl("patch", "clusterqueue.kueue.x-k8s.io", "benchmarks", "--type=json", "-p", json.dumps(patch))
    assert quota() == "1"
    # Without a refresh the engine compares with what it last wrote: the drift is invisible.
    dev.preview(expect_no_changes=True)
    dev.preview(refresh=True)
    assert _names(dev.changes().get("update", [])) == ["queues-cq-benchmarks"]
    dev.up(refresh=True)
    assert quota() == planned
    dev.preview(refresh=True, expect_no_changes=True)
    report.checks["day two: drift by hand"] = (
        f"nominalQuota 1 by kubectl, shown by preview --refresh, restored by up --refresh to {planned}"
    )


def test_a_destructive_change_named_offline_is_the_one_the_engine_plans(dev: EngineRun, report: Report) -> None:
    """Renaming the ClusterQueue: diff's Destructive section names its delete and the LocalQueue's replace, and
    the real preview plans exactly those (nothing is applied)."""
    deployed = dev.config
    config = copy.deepcopy(deployed)
    config[f"{PROJECT}:queues"]["clusterQueues"][0]["name"] = "benchmarks-v2"
    expected = _offline(dev, "rename-cq", config)
    assert expected["destructive"] == ["ns-aiperf-benchmarks-lq-aiperf-queue", "queues-cq-benchmarks"]
    dev.preview()
    previewed = dev.changes()
    assert _names(previewed["delete"]) == ["queues-cq-benchmarks"]
    assert "ns-aiperf-benchmarks-lq-aiperf-queue" in _names(previewed["replace"])
    report.checks["day two: destructive rename"] = f"offline {expected['destructive']}, preview {previewed}"
    dev.set_config(deployed)  # back to the deployed config: nothing was applied


def test_a_stack_that_names_no_cluster_is_refused(dev: EngineRun) -> None:
    deployed = dev.config
    config = copy.deepcopy(deployed)
    del config[f"{PROJECT}:cluster"]
    dev.set_config(config)
    try:
        with pytest.raises(auto.CommandError) as raised:
            dev.preview()
    finally:
        dev.set_config(deployed)
    assert "aiperf-kueue:cluster: the stack names no cluster" in str(raised.value)


def test_moving_from_the_default_provider_to_the_stacks_own_replaces_nothing(
    dev: EngineRun, binaries: dict[str, str], report: Report
) -> None:
    """A stack deployed by an earlier version of this program went through Pulumi's default provider; this version
    gives every object the stack's explicit one. The same cluster behind both: the engine updates the provider
    reference and replaces nothing (a small program of the same shape, on dev's cluster)."""
    import pulumi
    import pulumi_kubernetes as k8s

    from components.kube import KubeObject

    engine = Engine(
        binaries, OUT / "engine" / "provider-move", dev.cluster.kubeconfig, BUILD.PULUMI_KUBERNETES, checkpoints=False
    )
    flavor = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "provider-move"},
        "spec": {},
    }
    explicit = {"on": False}

    def program() -> None:
        opts = None
        if explicit["on"]:
            cluster = k8s.Provider("cluster", context=CONTEXT, kubeconfig=str(dev.cluster.kubeconfig))
            opts = pulumi.ResourceOptions(provider=cluster)
        k8s.core.v1.Namespace("ns", metadata={"name": "provider-move"}, opts=opts)
        KubeObject("flavor", flavor, opts)

    # The project as it was before this program disabled the default provider.
    stack = engine.small_stack("provider-move", program)
    assert stack.up(color="never").summary.result == "succeeded"

    def uids() -> tuple[str, str]:
        ns = dev.cluster.get_json("namespace", "provider-move")["metadata"]["uid"]
        rf = dev.cluster.get_json("resourceflavors.kueue.x-k8s.io", "provider-move")["metadata"]["uid"]
        return ns, rf

    before = uids()
    explicit["on"] = True
    steps: list[tuple[str, str]] = []
    record = step_recorder(steps)
    stack.preview(on_event=record, color="never")
    previewed = sorted(s for s in steps if s[0] != "same")
    # The explicit provider is created and the default one deleted; every object stays as it is ("same": the
    # engine only records which provider it goes through).
    assert previewed == [("create", "cluster"), ("delete", "default_4_25_0")]
    assert stack.up(color="never").summary.result == "succeeded"
    assert uids() == before
    report.checks["day two: default provider to the stack's own"] = f"preview {previewed}; same UIDs after up"


def test_moving_to_the_benchmark_cluster_role_keeps_the_pods_access(
    dev: EngineRun, binaries: dict[str, str], report: Report
) -> None:
    """A stack deployed by an earlier version of this program has a Role ``<operator>-benchmark`` and a RoleBinding to
    it in every benchmark namespace; this version declares the rules once, as a ClusterRole, and binds it per
    namespace. The move, on the real engine (a program of the earlier shape, then the real components, on dev's
    cluster): the new binding is created before the old one goes, so the benchmark pods never lose their access,
    and the namespace is kept."""
    import pulumi
    import pulumi_kubernetes as k8s

    from aiperf_kueue.installs import operator_objects
    from components.access import BenchmarkAccess, BenchmarkAccessArgs
    from components.kube import KubeObject
    from components.namespace import (
        EARLIER_TYPE,
        BenchmarkNamespaceArgs,
        BenchmarkNamespaces,
        BenchmarkNamespacesArgs,
    )

    namespace, fullname = "rbac-move", "aiperf-operator"
    role_rules = [dict(rule) for rule in operator_objects.BENCHMARK_RULES]
    manifest: dict[str, Any] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    old_role: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": f"{fullname}-benchmark", "namespace": namespace},
        "rules": role_rules,
    }
    old_binding: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": f"{fullname}-benchmark", "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"{fullname}-benchmark"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": namespace}],
    }
    engine = Engine(
        binaries, OUT / "engine" / "rbac-move", dev.cluster.kubeconfig, BUILD.PULUMI_KUBERNETES, checkpoints=False
    )
    moved = {"on": False}

    class EarlierNamespace(pulumi.ComponentResource):
        """The earlier BenchmarkNamespace's shape: the namespace, the Role and the RoleBinding."""

        def __init__(self, name: str, opts: pulumi.ResourceOptions) -> None:
            super().__init__(EARLIER_TYPE, name, None, opts)
            ns = k8s.core.v1.Namespace(
                f"{name}-ns", metadata=manifest["metadata"], opts=pulumi.ResourceOptions(parent=self)
            )
            for obj in (old_role, old_binding):
                KubeObject(f"{name}-{obj['kind'].lower()}", obj, pulumi.ResourceOptions(parent=self, depends_on=[ns]))

    def program() -> None:
        cluster = k8s.Provider("cluster", context=CONTEXT, kubeconfig=str(dev.cluster.kubeconfig))
        opts = pulumi.ResourceOptions(provider=cluster)
        if not moved["on"]:
            EarlierNamespace("ns-rbac-move", opts)
            return
        access = BenchmarkAccess(
            "benchmark-access",
            BenchmarkAccessArgs(cluster_role=operator_objects.benchmark_cluster_role(fullname)),
            opts,
        )
        group = BenchmarkNamespaces("ns", BenchmarkNamespacesArgs(access=access.cluster_role), opts)
        group.add(
            BenchmarkNamespaceArgs(
                namespace=manifest,
                local_queues=[],
                cluster_queue=access,  # no LocalQueue here: nothing waits for a ClusterQueue
                retain_on_delete=False,
                binding=operator_objects.benchmark_binding(namespace, fullname),
            ),
        )

    stack = engine.small_stack("rbac-move", program)
    assert stack.up(color="never").summary.result == "succeeded"

    def allowed() -> list[str]:
        """What the namespace's default service account, which benchmark pods run as, may do there."""
        asks = (
            ("patch", "aiperfjobs.aiperf.nvidia.com", "status"),
            ("get", "pods", ""),
            ("patch", "jobsets.jobset.x-k8s.io", ""),
        )
        out = []
        for verb, resource, sub in asks:
            args = ["auth", "can-i", verb, resource, "-n", namespace, f"--as=system:serviceaccount:{namespace}:default"]
            result = dev.cluster.kubectl(*args, *([f"--subresource={sub}"] if sub else []), check=False)
            out.append(f"{verb} {resource}{'/' + sub if sub else ''}: {result.stdout.strip()}")
        return out

    expected_access = [
        "patch aiperfjobs.aiperf.nvidia.com/status: yes",
        "get pods: yes",
        "patch jobsets.jobset.x-k8s.io: yes",
    ]
    assert allowed() == expected_access
    uid = dev.cluster.get_json("namespace", namespace)["metadata"]["uid"]
    moved["on"] = True
    steps: list[tuple[str, str]] = []
    record = step_recorder(steps)
    assert stack.up(on_event=record, color="never").summary.result == "succeeded"
    changed = [s for s in steps if s[0] not in ("same", "refresh")]
    # The new binding exists before the old one goes (it waits for the ClusterRole); the deletes come last, and
    # nothing orders the Role's delete against the old binding's. The earlier per-namespace component goes too.
    creates, deletes = changed[:5], changed[5:]
    assert sorted(creates) == [
        ("create", "benchmark-access"),
        ("create", "benchmark-access-clusterrole"),
        ("create", "ns"),
        ("create-replacement", "ns-rbac-move-rolebinding"),
        ("replace", "ns-rbac-move-rolebinding"),
    ]
    assert creates.index(("create", "benchmark-access-clusterrole")) < creates.index(
        ("create-replacement", "ns-rbac-move-rolebinding")
    )
    assert sorted(deletes) == [
        ("delete", "ns-rbac-move"),
        ("delete", "ns-rbac-move-role"),
        ("delete-replaced", "ns-rbac-move-rolebinding"),
    ]
    assert allowed() == expected_access
    assert dev.cluster.get_json("namespace", namespace)["metadata"]["uid"] == uid
    bindings = dev.cluster.get_json("rolebindings", "-n", namespace)["items"]
    assert [(b["metadata"]["name"], b["roleRef"]["kind"]) for b in bindings] == [
        ("aiperf-operator-benchmark-access", "ClusterRole")
    ]
    assert dev.cluster.get_json("roles", "-n", namespace)["items"] == []
    report.checks["day two: benchmark Role to one ClusterRole"] = f"steps {changed}; access kept; same namespace UID"
    assert stack.destroy(color="never").summary.result == "succeeded"


def test_leaving_the_per_namespace_component_keeps_every_object(
    dev: EngineRun, binaries: dict[str, str], report: Report
) -> None:
    """A stack deployed by an earlier version of this program has one ``BenchmarkNamespace`` component per benchmark
    namespace (``ns-<namespace>``), the parent of its Namespace, LocalQueue and RoleBinding; this version keeps them
    under one ``ns`` component for the stack (``BenchmarkNamespaces``). On the real engine (a program of the earlier
    shape, as ``components/namespace.py`` registered it until 2026-12-07, then the real component, on dev's
    cluster): the objects are carried over by their aliases, untouched (same UIDs, no step of theirs), and only the
    components come and go."""
    import pulumi
    import pulumi_kubernetes as k8s

    from aiperf_kueue.installs import operator_objects
    from components.access import BenchmarkAccess, BenchmarkAccessArgs
    from components.kube import KubeObject
    from components.namespace import (
        EARLIER_TYPE,
        NAMESPACE_PATCH,
        BenchmarkNamespaceArgs,
        BenchmarkNamespaces,
        BenchmarkNamespacesArgs,
    )

    namespace, fullname, name = "parent-move", "aiperf-operator", "ns-parent-move"
    manifest: dict[str, Any] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    local_queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "aiperf-queue", "namespace": namespace},
        "spec": {"clusterQueue": "benchmarks"},
    }
    binding = operator_objects.benchmark_binding(namespace, fullname)
    engine = Engine(
        binaries, OUT / "engine" / "parent-move", dev.cluster.kubeconfig, BUILD.PULUMI_KUBERNETES, checkpoints=False
    )
    moved = {"on": False}

    class EarlierNamespace(pulumi.ComponentResource):
        """The earlier BenchmarkNamespace: its children as it registered them (names, options, aliases)."""

        def __init__(self, access: pulumi.Resource, opts: pulumi.ResourceOptions) -> None:
            super().__init__(EARLIER_TYPE, name, None, opts)
            ns = k8s.core.v1.Namespace(
                f"{name}-ns",
                metadata=manifest["metadata"],
                opts=pulumi.ResourceOptions(
                    parent=self, retain_on_delete=False, aliases=[pulumi.Alias(type_=NAMESPACE_PATCH)]
                ),
            )
            KubeObject(
                f"{name}-lq-aiperf-queue",
                local_queue,
                pulumi.ResourceOptions(
                    parent=self, depends_on=[ns], replace_on_changes=["spec.clusterQueue"], delete_before_replace=True
                ),
            )
            KubeObject(f"{name}-rolebinding", binding, pulumi.ResourceOptions(parent=self, depends_on=[ns, access]))

    def program() -> None:
        cluster = k8s.Provider("cluster", context=CONTEXT, kubeconfig=str(dev.cluster.kubeconfig))
        opts = pulumi.ResourceOptions(provider=cluster)
        access = BenchmarkAccess(
            "benchmark-access",
            BenchmarkAccessArgs(cluster_role=operator_objects.benchmark_cluster_role(fullname)),
            opts,
        )
        if not moved["on"]:
            EarlierNamespace(access.cluster_role, opts)
            return
        group = BenchmarkNamespaces("ns", BenchmarkNamespacesArgs(access=access.cluster_role), opts)
        group.add(
            BenchmarkNamespaceArgs(
                namespace=manifest,
                local_queues=[local_queue],
                cluster_queue=access,  # the ClusterQueue is dev's: nothing of this stack to wait for
                retain_on_delete=False,
                binding=binding,
            ),
        )

    def uids() -> dict[str, str]:
        out = {"namespace": dev.cluster.get_json("namespace", namespace)["metadata"]["uid"]}
        for kind in ("localqueues.kueue.x-k8s.io", "rolebindings"):
            for item in dev.cluster.get_json(kind, "-n", namespace)["items"]:
                out[f"{item['kind']}/{item['metadata']['name']}"] = item["metadata"]["uid"]
        return out

    stack = engine.small_stack("parent-move", program)
    assert stack.up(color="never").summary.result == "succeeded"
    before = uids()
    assert sorted(before) == ["LocalQueue/aiperf-queue", "RoleBinding/aiperf-operator-benchmark-access", "namespace"]
    moved["on"] = True
    steps: list[tuple[str, str]] = []
    record = step_recorder(steps, providers=False)
    stack.preview(on_event=record, color="never")
    previewed = sorted(s for s in steps if s[0] != "same")
    assert previewed == [("create", "ns"), ("delete", name)]
    steps.clear()
    assert stack.up(on_event=record, color="never").summary.result == "succeeded"
    assert sorted(s for s in steps if s[0] != "same") == previewed
    # The three objects took no step but "same", now under the one component.
    same = sorted(s[1] for s in steps if s[0] == "same")
    assert [n for n in same if n.startswith(name)] == [f"{name}-lq-aiperf-queue", f"{name}-ns", f"{name}-rolebinding"]
    assert uids() == before
    parents = {r["urn"].rsplit("::", 1)[1]: r.get("parent", "") for r in engine.export(stack)["resources"]}
    assert {parents[f"{name}-{child}"].rsplit("::", 1)[1] for child in ("ns", "lq-aiperf-queue", "rolebinding")} == {
        "ns"
    }
    assert name not in parents
    report.checks["day two: per-namespace component to one"] = f"steps {previewed}; same UIDs: {sorted(before)}"
    assert stack.destroy(color="never").summary.result == "succeeded"
