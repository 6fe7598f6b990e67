"""Quantities: exact parsing and the canonical form the API server stores, and where it is emitted."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiperf_kueue.common import quantity
from aiperf_kueue.common.display import show
from aiperf_kueue.common.errors import ConfigError
from aiperf_kueue.plan.manifests import cluster_queue
from tests.support import plan_values

GI = 2**30


@pytest.mark.parametrize(
    ("amount", "text"),
    [
        (Fraction(1000), "1k"),
        (Fraction(2000), "2k"),
        (Fraction(1500), "1500"),
        (Fraction(190), "190"),
        (Fraction(3, 2), "1500m"),
        (Fraction(2), "2"),
        (Fraction(1, 2), "500m"),
        (Fraction(1_200_000), "1200k"),
        (Fraction(10**9), "1G"),
        (Fraction(0), "0"),
        (Fraction(1, 10**6), "1u"),
        (Fraction(3, 2 * 10**9), "2n"),  # 1.5n: below nano, the API server rounds up
        (Fraction(1, 10**10), "1n"),
        (Fraction(-1500), "-1500"),
    ],
)
def test_decimal_si_is_what_quantity_string_gives(amount: Fraction, text: str) -> None:
    assert quantity.format_decimal(amount) == text


@pytest.mark.parametrize(
    ("resource", "amount", "expected"),
    [
        ("cpu", Fraction(1000), "1k"),
        ("cpu", Fraction(190), "190"),
        ("cpu", Fraction(1500), "1500"),
        ("cpu", Fraction(3, 2), "1500m"),
        ("cpu", Fraction(0), "0"),
        ("nvidia.com/gpu", Fraction(8), 8),
        ("nvidia.com/gpu", Fraction(1000), "1k"),
        ("nvidia.com/gpu", Fraction(0), 0),
        ("pods", Fraction(1100), 1100),
        ("pods", Fraction(3000), "3k"),
        ("example.com/fpga", Fraction(1, 2), "500m"),
        ("memory", Fraction(1900 * GI), "1900Gi"),
        ("memory", Fraction(1536 * 2**20), "1536Mi"),
        ("memory", Fraction(2048 * 2**20), "2Gi"),
        ("memory", Fraction(1_024_000), "1000Ki"),
        ("memory", Fraction(10**9), "1G"),  # not "1000000000": the server would store that as "1G"
        ("memory", Fraction(1000), "1k"),
        ("memory", Fraction(0), "0"),
        ("ephemeral-storage", Fraction(400 * GI), "400Gi"),
    ],
)
def test_canonical_per_resource(resource: str, amount: Fraction, expected: str | int) -> None:
    assert quantity.canonical(resource, amount) == expected


@given(st.integers(0, 10**15), st.sampled_from(["", "m", "k", "Mi", "Gi", "n", "u", "M", "G", "Ki"]))
def test_canonical_forms_are_fixed_points(number: int, suffix: str) -> None:
    """What is emitted parses back to the same amount and is its own canonical form, so the
    stored value equals the Pulumi input."""
    amount = quantity.parse(f"{number}{suffix}")
    for resource in ("cpu", "memory", "nvidia.com/gpu"):
        text = str(quantity.canonical(resource, amount))
        assert quantity.parse(text) == amount
        assert str(quantity.canonical(resource, quantity.parse(text))) == text


@pytest.mark.parametrize("text", ["16\n", " 2 ", "2 ", "\n16", "16Gi\n", "1e1000", "", "1 k", "1.5.1"])
def test_parse_takes_the_whole_string_only(text: str) -> None:
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        quantity.parse(text)


def _values(**queue: Any) -> dict[str, Any]:
    return {
        "inventory": {
            "pools": [
                {"name": "cpu", "nodes": 10, "cpu": "100", "memory": "100Gi"},
                {"name": "gpu", "nodes": 125, "cpu": "16", "memory": "64Gi", "gpus": 8},
            ]
        },
        "queues": {"clusterQueues": [{"name": "a", "namespaces": [{"name": "bench-a"}], **queue}]},
    }


def test_large_totals_use_si_suffixes() -> None:
    _, plan = plan_values(_values(share=100))
    assert plan.pool_table() == {
        "cpu": {"cpu": "1k", "memory": "1000Gi", "nvidia.com/gpu": 0},
        "gpu": {"cpu": "2k", "memory": "8000Gi", "nvidia.com/gpu": "1k"},
    }


def test_an_explicit_decimal_memory_quota_keeps_its_decimal_form() -> None:
    _, plan = plan_values(_values(nominalQuota={"cpu": {"cpu": "2000m", "memory": "1G"}}))
    assert plan.quota_table() == {
        "a": {
            "cpu": {"cpu": "2", "memory": "1G", "nvidia.com/gpu": 0},
            "gpu": {"cpu": "0", "memory": "0", "nvidia.com/gpu": 0},
        }
    }


@pytest.mark.parametrize(
    ("given", "written"),
    [("0.5", "500m"), (2, "2"), (0.25, "250m"), ("1000", "1k"), ("2500m", "2500m"), ("0", "0"), ("1.5n", "2n")],
)
def test_fair_sharing_weight_is_written_as_kueue_stores_it(given: Any, written: str) -> None:
    config, plan = plan_values(_values(share=100, fairSharing={"weight": given}))
    assert cluster_queue(config.queues.cluster_queues[0], plan, None)["spec"]["fairSharing"] == {"weight": written}


@pytest.mark.parametrize("given", [" 2 ", "2\n", "-1", "two", True])
def test_a_fair_sharing_weight_that_is_no_quantity_is_rejected(given: Any) -> None:
    with pytest.raises(ConfigError) as err:
        plan_values(_values(share=100, fairSharing={"weight": given}))
    message = (
        "must be >= 0, got '-1'"
        if given == "-1"
        else f'must be a Kubernetes quantity such as "16", "1500m" or "64Gi", got {show(given)}'
    )
    assert err.value.lines() == [f"test.yaml: aiperf-kueue:queues.clusterQueues[0].fairSharing.weight: {message}"]
