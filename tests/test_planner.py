"""The quota planner: hand-worked inventories with literal expected quotas."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiperf_kueue import quantity
from aiperf_kueue.errors import ConfigError
from aiperf_kueue.planner import apportion
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
    assert quantity.format_cpu(190000) == "190"
    assert quantity.format_cpu(1500) == "1500m"
    assert quantity.format_bytes(1900 * 2**30) == "1900Gi"
    assert quantity.format_bytes(1536 * 2**20) == "1536Mi"
    assert quantity.format_bytes(2048 * 2**20) == "2Gi"
    assert quantity.canonical("nvidia.com/gpu", Fraction(8)) == 8
    assert quantity.parse("12000m") == 12
    assert quantity.parse("1.5Gi") == 1536 * 2**20
    assert quantity.parse("1e3") == 1000


def _decimal(value: Fraction) -> str:
    return str(Decimal(value.numerator) / Decimal(value.denominator))


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
