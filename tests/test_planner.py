"""The quota planner: hand-worked inventories with literal expected quotas."""

from __future__ import annotations

import copy
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiperf_kueue.common import quantity
from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.queues.queue_plan import apportion
from tests.support import plan_values, stack_values


def stack(pools: list[dict[str, Any]], cqs: list[dict[str, Any]], headroom: Any = 0, **queues: Any) -> dict[str, Any]:
    for cq in cqs:
        cq.setdefault("namespaces", [{"name": f"ns-{cq['name']}"}])
    return {"inventory": {"headroom": headroom, "pools": pools}, "queues": {"clusterQueues": cqs, **queues}}


def test_apportion_largest_remainder_hands_out_exactly_the_total() -> None:
    assert apportion(1024, [Fraction("33.4"), Fraction("33.3"), Fraction("33.3")]) == [342, 341, 341]
    assert apportion(7, [Fraction("33.4"), Fraction("33.3"), Fraction("33.3")]) == [3, 2, 2]


def test_apportion_ties_go_to_the_first_listed() -> None:
    assert apportion(3, [Fraction(50), Fraction(50)]) == [2, 1]
    assert apportion(1, [Fraction(25)] * 4) == [1, 0, 0, 0]


def test_apportion_below_100_percent_never_exceeds_its_part() -> None:
    # 60% of 5 = 3 units; 30/30 split of 3 gives 2 + 1 (tie to the first).
    assert apportion(5, [Fraction(30), Fraction(30)]) == [2, 1]
    assert apportion(0, [Fraction(50), Fraction(50)]) == [0, 0]


def test_uneven_shares_split_every_unit() -> None:
    _, plan = plan_values(
        stack(
            [{"name": "gpu", "nodes": 1, "cpu": "1", "memory": "1Gi", "gpus": 7}],
            [{"name": "a", "share": 33.4}, {"name": "b", "share": 33.3}, {"name": "c", "share": 33.3}],
        )
    )
    assert plan.quota_table() == {
        "a": {"gpu": {"cpu": "334m", "memory": "342Mi", "nvidia.com/gpu": 3}},
        "b": {"gpu": {"cpu": "333m", "memory": "341Mi", "nvidia.com/gpu": 2}},
        "c": {"gpu": {"cpu": "333m", "memory": "341Mi", "nvidia.com/gpu": 2}},
    }


def test_headroom_applies_to_cpu_and_memory_never_to_gpus() -> None:
    _, plan = plan_values(
        stack(
            [{"name": "l40s", "nodes": 3, "cpu": "15890m", "memory": "62Gi", "gpus": 4}],
            [{"name": "all", "share": 100}],
            headroom=7.5,
        )
    )
    # cpu: floor(3 × 15890m × 0.925) = 44094m; memory: floor(186Gi × 0.925) = 176179Mi; GPUs 3 × 4.
    assert plan.pool_table() == {"l40s": {"cpu": "44094m", "memory": "176179Mi", "nvidia.com/gpu": 12}}
    assert plan.quota_table() == {"all": {"l40s": {"cpu": "44094m", "memory": "176179Mi", "nvidia.com/gpu": 12}}}


def test_several_gpu_types_and_a_cpu_only_pool() -> None:
    _, plan = plan_values(
        stack(
            [
                {"name": "cpu", "nodes": 2, "cpu": "32", "memory": "128Gi"},
                {"name": "h100", "nodes": 2, "cpu": "96", "memory": "1Ti", "gpus": 8},
                {"name": "mi300", "nodes": 1, "cpu": "96", "memory": "1536Gi", "gpus": 8, "gpuResource": "amd.com/gpu"},
            ],
            [
                {"name": "a", "share": {"cpu": 75, "h100": 50, "mi300": 100}},
                {"name": "b", "share": {"cpu": 25, "h100": 50}},
            ],
        )
    )
    assert plan.covered_resources == ("cpu", "memory", "nvidia.com/gpu", "amd.com/gpu")
    assert plan.quota_table() == {
        "a": {
            "cpu": {"cpu": "48", "memory": "192Gi", "nvidia.com/gpu": 0, "amd.com/gpu": 0},
            "h100": {"cpu": "96", "memory": "1Ti", "nvidia.com/gpu": 8, "amd.com/gpu": 0},
            "mi300": {"cpu": "96", "memory": "1536Gi", "nvidia.com/gpu": 0, "amd.com/gpu": 8},
        },
        "b": {
            "cpu": {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": 0, "amd.com/gpu": 0},
            "h100": {"cpu": "96", "memory": "1Ti", "nvidia.com/gpu": 8, "amd.com/gpu": 0},
            "mi300": {"cpu": "0", "memory": "0", "nvidia.com/gpu": 0, "amd.com/gpu": 0},
        },
    }
    assert plan.warnings == ()


def test_explicit_quotas_and_extra_covered_resources() -> None:
    _, plan = plan_values(
        stack(
            [{"name": "cpu", "nodes": 2, "cpu": "16", "memory": "64Gi", "extraResources": {"pods": 110}}],
            [
                {"name": "a", "nominalQuota": {"cpu": {"cpu": "1500m", "memory": "2048Mi", "pods": 20}}},
                {"name": "b", "share": 50},
            ],
            coveredResources=["pods"],
        )
    )
    assert plan.quota_table() == {
        "a": {"cpu": {"cpu": "1500m", "memory": "2Gi", "pods": 20}},
        "b": {"cpu": {"cpu": "16", "memory": "64Gi", "pods": 110}},
    }


def test_prod_stack_quotas_are_the_hand_worked_ones() -> None:
    values, _ = stack_values("prod")
    _, plan = plan_values(values)
    # cpu pool: 4 × 63 × 0.95 = 239.4 cores, 4 × 250Gi × 0.95 = 950Gi; split 50 / 30 / 20.
    # gpu-h100: 4 × 190 × 0.95 = 722 cores, 7220Gi, 32 GPUs; split 50 / 25 / 25.
    # gpu-a100: 2 × 94 × 0.95 = 178.6 cores, 1710Gi, 16 GPUs; split 50 / 50 / 0.
    assert plan.quota_table() == {
        "team-a": {
            "cpu": {"cpu": "119700m", "memory": "475Gi", "nvidia.com/gpu": 0},
            "gpu-h100": {"cpu": "361", "memory": "3610Gi", "nvidia.com/gpu": 16},
            "gpu-a100": {"cpu": "89300m", "memory": "855Gi", "nvidia.com/gpu": 8},
        },
        "team-b": {
            "cpu": {"cpu": "71820m", "memory": "285Gi", "nvidia.com/gpu": 0},
            "gpu-h100": {"cpu": "180500m", "memory": "1805Gi", "nvidia.com/gpu": 8},
            "gpu-a100": {"cpu": "89300m", "memory": "855Gi", "nvidia.com/gpu": 8},
        },
        "research": {
            "cpu": {"cpu": "47880m", "memory": "190Gi", "nvidia.com/gpu": 0},
            "gpu-h100": {"cpu": "180500m", "memory": "1805Gi", "nvidia.com/gpu": 8},
            "gpu-a100": {"cpu": "0", "memory": "0", "nvidia.com/gpu": 0},
        },
    }
    assert plan.pool_table() == {
        "cpu": {"cpu": "239400m", "memory": "950Gi", "nvidia.com/gpu": 0},
        "gpu-h100": {"cpu": "722", "memory": "7220Gi", "nvidia.com/gpu": 32},
        "gpu-a100": {"cpu": "178600m", "memory": "1710Gi", "nvidia.com/gpu": 16},
    }


def test_gpu_pool_before_cpu_pool_warns() -> None:
    _, plan = plan_values(
        stack(
            [
                {"name": "h100", "nodes": 1, "cpu": "8", "memory": "8Gi", "gpus": 8},
                {"name": "cpu", "nodes": 1, "cpu": "8", "memory": "8Gi"},
            ],
            [{"name": "a", "share": 100}],
        )
    )
    assert plan.warnings == (
        "inventory.pools: GPU pool 'h100' is listed before CPU-only pool 'cpu'; AIPerf pods request no GPU and "
        "Kueue takes the first flavor that fits, so benchmark clients would land on GPU nodes. List CPU-only pools "
        "first.",
    )


def test_shares_over_100_percent_are_rejected_with_the_split() -> None:
    with pytest.raises(ConfigError) as err:
        plan_values(
            stack(
                [{"name": "cpu", "nodes": 1, "cpu": "8", "memory": "8Gi"}],
                [{"name": "a", "share": 60}, {"name": "b", "share": 50}],
            )
        )
    assert err.value.lines() == [
        "test.yaml: aiperf-kueue:queues.clusterQueues[1].share: shares of pool 'cpu' add up to 110%, "
        "more than 100% (a 60, b 50)"
    ]


def test_canonical_quantities() -> None:
    assert quantity.format_bytes(1900 * 2**30) == "1900Gi"
    assert quantity.format_bytes(1536 * 2**20) == "1536Mi"
    assert quantity.format_bytes(2048 * 2**20) == "2Gi"
    assert quantity.canonical("nvidia.com/gpu", Fraction(8)) == 8
    assert quantity.parse("12000m") == 12
    assert quantity.parse("1.5Gi") == 1536 * 2**20
    assert quantity.parse("1e3") == 1000


def _decimal(value: Fraction) -> str:
    # Exact, as text: a percentage written as text carries its unit.
    return f"{Decimal(value.numerator) / Decimal(value.denominator)}%"


# Property: any valid inventory and shares → per pool and resource, Σ quota ≤ total, = total at 100%.
_pool = st.fixed_dictionaries(
    {
        "nodes": st.integers(1, 64),
        "cpu_m": st.integers(100, 256_000),
        "mem_mi": st.integers(64, 4_194_304),
        "gpus": st.integers(0, 8),
    }
)


@st.composite
def _shares(draw: st.DrawFn, n_queues: int, n_pools: int) -> list[list[Fraction]]:
    per_pool = []
    for _ in range(n_pools):
        cuts = sorted(draw(st.lists(st.integers(0, 1000), min_size=n_queues - 1, max_size=n_queues - 1)))
        full = draw(st.booleans())
        top = 1000 if full else draw(st.integers(0, 1000))
        cuts = [min(c, top) for c in cuts]
        bounds = [0, *cuts, top]
        per_pool.append([Fraction(bounds[i + 1] - bounds[i], 10) for i in range(n_queues)])
    return per_pool


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pools=st.lists(_pool, min_size=1, max_size=4),
    n_queues=st.integers(1, 5),
    headroom=st.integers(0, 50),
    data=st.data(),
)
def test_quotas_never_exceed_and_at_100_percent_equal_the_pool_total(
    pools: list[dict[str, int]], n_queues: int, headroom: int, data: st.DataObject
) -> None:
    shares = data.draw(_shares(n_queues, len(pools)))
    pool_cfg = [
        {"name": f"p{i}", "nodes": p["nodes"], "cpu": f"{p['cpu_m']}m", "memory": f"{p['mem_mi']}Mi", "gpus": p["gpus"]}
        for i, p in enumerate(pools)
    ]
    cqs = [
        {"name": f"q{j}", "share": {f"p{i}": _decimal(shares[i][j]) for i in range(len(pools))}}
        for j in range(n_queues)
    ]
    _, plan = plan_values(stack(pool_cfg, cqs, headroom=headroom, cohort="all"))
    for i, pool in enumerate(plan.pools):
        for res in plan.covered_resources:
            handed = [plan.nominal[f"q{j}"][pool.name][res] for j in range(n_queues)]
            assert all(h >= 0 for h in handed)
            assert sum(handed) <= pool.totals[res]
            if sum(shares[i]) == 100:
                assert sum(handed) == pool.totals[res]


# --- shares given as floats


@pytest.mark.parametrize("third", [33.333333333333333, 33.33333333333333, "33.333333333333333%"])
def test_float_thirds_count_as_100_percent_and_hand_out_everything(third: Any) -> None:
    # 33.333333333333333 arrives as the float 33.333333333333336 (sum 100.000000000000008);
    # 33.33333333333333 sums to 99.99999999999999. Both are within SHARE_SLACK of 100.
    _, plan = plan_values(
        stack(
            [{"name": "gpu", "nodes": 1, "cpu": "1", "memory": "1Gi", "gpus": 16}],
            [{"name": "a", "share": third}, {"name": "b", "share": third}, {"name": "c", "share": third}],
        )
    )
    assert plan.quota_table() == {
        "a": {"gpu": {"cpu": "334m", "memory": "342Mi", "nvidia.com/gpu": 6}},
        "b": {"gpu": {"cpu": "333m", "memory": "341Mi", "nvidia.com/gpu": 5}},
        "c": {"gpu": {"cpu": "333m", "memory": "341Mi", "nvidia.com/gpu": 5}},
    }


def test_shares_just_over_100_percent_say_by_how_much() -> None:
    with pytest.raises(ConfigError) as err:
        plan_values(
            stack(
                [{"name": "cpu", "nodes": 1, "cpu": "8", "memory": "8Gi"}],
                [{"name": "a", "share": 66.6666}, {"name": "b", "share": 33.3334001}],
            )
        )
    assert err.value.lines() == [
        "test.yaml: aiperf-kueue:queues.clusterQueues[1].share: shares of pool 'cpu' add up to 100.0000001%, "
        "more than 100% (a 66.6666, b 33.3334001)"
    ]


def test_apportion_scales_shares_within_the_slack_to_exactly_100() -> None:
    third = Fraction("33.333333333333336")
    assert apportion(2_000_000_000, [third] * 3) == [666_666_667, 666_666_667, 666_666_666]
    low = Fraction("33.33333333333333")
    assert apportion(2_000_000_000, [low] * 3) == [666_666_667, 666_666_667, 666_666_666]
    # Outside the slack the shares are taken as given.
    assert apportion(1000, [Fraction("99.99")]) == [999]


# --- per-version limits of one resource group


def _many_pools(n: int, extras: int) -> dict[str, Any]:
    devices = [f"example.com/device-{i}" for i in range(extras)]
    pools = [{"name": f"p{i:02d}", "nodes": 1, "cpu": "8", "memory": "8Gi"} for i in range(n)]
    pools[0]["extraResources"] = dict.fromkeys(devices, "1")
    return stack(pools, [{"name": "a", "share": 100}], coveredResources=devices)


@pytest.mark.parametrize(
    ("version", "pools", "extras", "error"),
    [
        # 52 × (cpu, memory + 8) = 520 > 512 from Kueue 0.14 (kueue NOTES §2, ClusterQueue rule 6).
        ("0.14.0", 52, 8, "got 52 pools × 10 covered resources = 520"),
        ("0.19.2", 52, 8, "got 52 pools × 10 covered resources = 520"),
        ("0.19.2", 51, 8, None),  # 510
        ("0.19.2", 64, 6, None),  # exactly 512
        ("0.13.0", 16, 14, None),  # 16 × 16 = 256: older releases only cap each dimension at 16
    ],
)
def test_quotas_per_resource_group_are_capped_from_kueue_0_14(
    version: str, pools: int, extras: int, error: str | None
) -> None:
    values = _many_pools(pools, extras)
    values["kueue"] = {"version": version}
    if error is None:
        plan_values(values)
        return
    with pytest.raises(ConfigError) as err:
        plan_values(values)
    assert err.value.lines() == [
        f"test.yaml: aiperf-kueue:inventory.pools: Kueue {version} allows at most 512 resource quotas per "
        f"ClusterQueue resource group (flavors × covered resources), {error}; use fewer pools or fewer "
        "queues.coveredResources"
    ]


# --- GPU resources


@pytest.mark.parametrize("resource", ["cpu", "memory", "pods", "ephemeral-storage", "hugepages-2Mi"])
def test_a_gpu_resource_may_not_be_a_standard_resource(resource: str) -> None:
    with pytest.raises(ConfigError) as err:
        plan_values(
            stack(
                [{"name": "gpu", "nodes": 1, "cpu": "8", "memory": "8Gi", "gpus": 8, "gpuResource": resource}],
                [{"name": "a", "share": 100}],
            )
        )
    assert err.value.lines() == [
        "test.yaml: aiperf-kueue:inventory.pools[0].gpuResource: must be the extended resource the GPUs are "
        f"requested by (such as nvidia.com/gpu), got the standard resource {resource!r}"
    ]


def test_the_gpu_resource_of_a_pool_without_gpus_is_not_covered() -> None:
    _, plan = plan_values(
        stack(
            [{"name": "cpu", "nodes": 1, "cpu": "8", "memory": "8Gi", "gpuResource": "memory"}],
            [{"name": "a", "share": 100}],
        )
    )
    assert plan.covered_resources == ("cpu", "memory")
    assert plan.quota_table() == {"a": {"cpu": {"cpu": "8", "memory": "8Gi"}}}


def test_gpus_given_as_an_extra_resource_are_rejected() -> None:
    with pytest.raises(ConfigError) as err:
        plan_values(
            stack(
                [
                    {"name": "cpu", "nodes": 1, "cpu": "8", "memory": "8Gi", "extraResources": {"nvidia.com/gpu": 4}},
                    {"name": "gpu", "nodes": 1, "cpu": "8", "memory": "8Gi", "gpus": 8},
                ],
                [{"name": "a", "share": 100}],
            )
        )
    assert err.value.lines() == [
        'test.yaml: aiperf-kueue:inventory.pools[0].extraResources["nvidia.com/gpu"]: '
        "'nvidia.com/gpu' is a GPU resource; a pool's GPUs come from gpus (and gpuResource)"
    ]


# --- quotas nothing can use


def test_a_queue_without_cpu_or_memory_anywhere_warns() -> None:
    _, plan = plan_values(
        stack(
            [{"name": "gpu", "nodes": 1, "cpu": "8", "memory": "8Gi", "gpus": 8}],
            [
                {"name": "a", "nominalQuota": {"gpu": {"nvidia.com/gpu": 8, "cpu": "8"}}},
                {"name": "b", "nominalQuota": {"gpu": {"memory": "8Gi"}}},
            ],
        )
    )
    assert plan.warnings == (
        "queues.clusterQueues[0]: ClusterQueue 'a' has no flavor with both cpu and memory quota (own, and it has "
        "no cohort to borrow from); every AIPerf pod requests both, so no AIPerf job can be admitted there",
        "queues.clusterQueues[1]: ClusterQueue 'b' has no flavor with both cpu and memory quota (own, and it has "
        "no cohort to borrow from); every AIPerf pod requests both, so no AIPerf job can be admitted there",
    )


def test_cpu_and_memory_borrowable_in_the_cohort_count() -> None:
    pools = [{"name": "gpu", "nodes": 1, "cpu": "8", "memory": "8Gi", "gpus": 8}]
    cqs: list[dict[str, Any]] = [
        {"name": "a", "nominalQuota": {"gpu": {"nvidia.com/gpu": 8}}},
        {"name": "b", "nominalQuota": {"gpu": {"cpu": "8", "memory": "8Gi"}}},
    ]
    _, plan = plan_values(stack(copy.deepcopy(pools), copy.deepcopy(cqs), cohort="all"))
    assert plan.warnings == ()
    # ... unless b lends no memory.
    cqs[1]["lendingLimit"] = {"gpu": {"memory": 0}}
    _, plan = plan_values(stack(pools, cqs, cohort="all"))
    assert plan.warnings == (
        "queues.clusterQueues[0]: ClusterQueue 'a' has no flavor with both cpu and memory quota (own or borrowable "
        "in the cohort); every AIPerf pod requests both, so no AIPerf job can be admitted there",
    )


def test_cpu_in_one_flavor_and_memory_in_another_is_not_enough() -> None:
    _, plan = plan_values(
        stack(
            [
                {"name": "cpu", "nodes": 1, "cpu": "8", "memory": "8Gi"},
                {"name": "big", "nodes": 1, "cpu": "8", "memory": "8Gi"},
            ],
            [{"name": "a", "nominalQuota": {"cpu": {"cpu": "8"}, "big": {"memory": "8Gi"}}}],
        )
    )
    assert [w.split(":")[0] for w in plan.warnings] == ["queues.clusterQueues[0]"]


def test_covered_pods_missing_on_one_pool_warns() -> None:
    _, plan = plan_values(
        stack(
            [
                {"name": "cpu", "nodes": 2, "cpu": "8", "memory": "8Gi", "extraResources": {"pods": 110}},
                {"name": "big", "nodes": 1, "cpu": "8", "memory": "8Gi"},
            ],
            [{"name": "a", "share": 100}],
            coveredResources=["pods"],
        )
    )
    assert plan.pool_table() == {
        "cpu": {"cpu": "16", "memory": "16Gi", "pods": 220},
        "big": {"cpu": "8", "memory": "8Gi", "pods": 0},
    }
    assert plan.warnings == (
        "inventory.pools[1]: pool 'big' has no extraResources.pods while pods is covered; Kueue admits nothing on it",
    )


def test_an_extra_resource_no_pool_has_warns() -> None:
    _, plan = plan_values(
        stack(
            [{"name": "cpu", "nodes": 1, "cpu": "8", "memory": "8Gi"}],
            [{"name": "a", "share": 100}],
            coveredResources=["ephemeral-storage"],
        )
    )
    assert plan.warnings == (
        "queues.coveredResources[0]: no pool sets extraResources['ephemeral-storage'], so its quota is 0 in every "
        "flavor; a pod that requests ephemeral-storage can never be admitted",
    )


# --- namespaces every cluster has


@pytest.mark.parametrize("name", ["default", "kube-public", "kube-node-lease"])
def test_builtin_namespaces_need_create_false(name: str) -> None:
    pools = [{"name": "cpu", "nodes": 1, "cpu": "8", "memory": "8Gi"}]
    with pytest.raises(ConfigError) as err:
        plan_values(stack(pools, [{"name": "a", "share": 100, "namespaces": [{"name": name}]}]))
    assert err.value.lines() == [
        f"test.yaml: aiperf-kueue:queues.clusterQueues[0].namespaces[0].create: namespace {name!r} exists in every "
        "cluster, so creating it fails with AlreadyExists; set create: false to only label it"
    ]
    _, plan = plan_values(stack(pools, [{"name": "a", "share": 100, "namespaces": [{"name": name, "create": False}]}]))
    assert plan.warnings == ()


@pytest.mark.parametrize(
    ("name", "settings"),
    [
        ("kube-system", {}),
        ("kueue-system", {}),
        ("jobset-system", {}),
        ("aiperf-system", {}),
        ("kueue-ops", {"kueue": {"namespace": "kueue-ops"}}),
    ],
)
def test_namespaces_kueue_ignores_are_one_error_even_with_create(name: str, settings: dict[str, Any]) -> None:
    values = stack(
        [{"name": "cpu", "nodes": 1, "cpu": "8", "memory": "8Gi"}],
        [{"name": "a", "share": 100, "namespaces": [{"name": name, "create": True}]}],
    )
    values.update(settings)
    with pytest.raises(ConfigError) as err:
        plan_values(values)
    assert err.value.lines() == [
        f"test.yaml: aiperf-kueue:queues.clusterQueues[0].namespaces[0].name: Kueue's job webhooks ignore namespace "
        f"{name!r}, so jobs there are never queued; use a dedicated benchmark namespace"
    ]
