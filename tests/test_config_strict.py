"""Config models: strict numbers and booleans, full-string name checks, toleration rules."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from aiperf_kueue.common.display import quoted
from aiperf_kueue.common.errors import ConfigError, key_path
from aiperf_kueue.config.base import dns_label, label_value, qualified_name
from aiperf_kueue.stackfile.loader import parse_config

BASE: dict[str, Any] = {
    "inventory": {
        "pools": [
            {"name": "cpu", "nodes": 2, "cpu": "16", "memory": "64Gi"},
            {
                "name": "gpu",
                "nodes": 2,
                "cpu": "32",
                "memory": "256Gi",
                "gpus": 8,
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            },
        ]
    },
    "queues": {
        "cohort": "benchmarks",
        "clusterQueues": [
            {
                "name": "team-a",
                "share": 100,
                "preemption": {"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"}},
                "namespaces": [{"name": "bench-team-a"}],
            }
        ],
    },
    "priorityClasses": [{"name": "high", "value": 1000}],
}


def problems(path: tuple[str | int, ...], value: Any) -> list[str]:
    """The problem lines of BASE with the value at ``path`` replaced."""
    values = copy.deepcopy(BASE)
    node: Any = values
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    try:
        parse_config(values, "test.yaml")
    except ConfigError as err:
        return err.lines()
    return []


def test_the_base_is_valid() -> None:
    parse_config(copy.deepcopy(BASE), "test.yaml")


POOL = ("inventory", "pools", 1)
TOLERATION = (*POOL, "tolerations", 0)
NAMESPACE = ("queues", "clusterQueues", 0, "namespaces", 0)
THRESHOLD = ("queues", "clusterQueues", 0, "preemption", "borrowWithinCohort", "maxPriorityThreshold")


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ((*POOL, "gpus"), True, "must be a whole number (e.g. gpus: 8), got true"),
        ((*POOL, "gpus"), 8.0, "must be a whole number (e.g. gpus: 8), got 8.0"),
        ((*POOL, "gpus"), "8", "must be a whole number (e.g. gpus: 8), got '8', text because of its quotes"),
        ((*POOL, "nodes"), True, "must be a whole number (e.g. nodes: 8), got true"),
        ((*POOL, "nodes"), False, "must be a whole number (e.g. nodes: 8), got false"),
        (("priorityClasses", 0, "value"), True, "must be a whole number (e.g. value: 8), got true"),
        ((*TOLERATION, "tolerationSeconds"), True, "must be a whole number (e.g. tolerationSeconds: 8), got true"),
        (THRESHOLD, True, "must be a whole number (e.g. maxPriorityThreshold: 8), got true"),
        (THRESHOLD, 2**31, "must be <= 2147483647, got 2147483648"),
        (THRESHOLD, -(2**31) - 1, "must be >= -2147483648, got -2147483649"),
        (
            (*NAMESPACE, "create"),
            "no",
            "must be true or false, got 'no' (YAML 1.2, which Pulumi reads, has only true and false)",
        ),
        ((*NAMESPACE, "create"), 0, "must be true or false, got 0"),
        (
            (*NAMESPACE, "defaultQueue"),
            "yes",
            "must be true or false, got 'yes' (YAML 1.2, which Pulumi reads, has only true and false)",
        ),
        (
            (*NAMESPACE, "defaultQueueAnnotation"),
            "false",
            "must be true or false, got 'false', text because of its quotes",
        ),
        ((*NAMESPACE, "retainOnDelete"), 1, "must be true or false, got 1"),
        # What `pulumi config set --path ... 7.5` writes: a percentage as text needs its unit.
        (
            ("inventory", "headroom"),
            "7.5",
            "must be a percentage from 0 to 100, such as 25, 12.5 or \"12.5%\", got '7.5', text because of its "
            'quotes: write 7.5 or "7.5%" (pulumi config set --path stores 7.5 as text, 7.5% as a percentage)',
        ),
    ],
)
def test_numbers_and_booleans_are_strict(path: tuple[str | int, ...], value: Any, message: str) -> None:
    assert problems(path, value) == [f"test.yaml: aiperf-kueue:{key_path(*path)}: {message}"]


@pytest.mark.parametrize(
    ("path", "value"),
    [(THRESHOLD, 2**31 - 1), (THRESHOLD, -(2**31)), (("priorityClasses", 0, "value"), -(2**31))],
)
def test_int32_bounds_are_inclusive(path: tuple[str | int, ...], value: int) -> None:
    assert problems(path, value) == []


def test_toleration_seconds_is_int64() -> None:
    seconds = (*TOLERATION, "tolerationSeconds")
    toleration = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}
    assert problems((*POOL, "tolerations"), [{**toleration, "tolerationSeconds": 2**63 - 1}]) == []
    assert problems((*POOL, "tolerations"), [{**toleration, "tolerationSeconds": 2**63}]) == [
        f"test.yaml: aiperf-kueue:{key_path(*seconds)}: must be <= 9223372036854775807, got 9223372036854775808 "
        "(past int64 Pulumi reads an integer as a float, so its last digits may differ)"
    ]


@pytest.mark.parametrize(
    ("toleration", "message"),
    [
        ({"key": "k", "operator": "Exists", "value": ""}, "a toleration with operator Exists must not have a value"),
        ({"key": "k", "operator": "Exists", "value": "v"}, "a toleration with operator Exists must not have a value"),
        ({"value": "v"}, "a toleration without key must use operator Exists"),
        ({"key": "k", "value": "v", "tolerationSeconds": 0}, "tolerationSeconds needs effect NoExecute"),
    ],
)
def test_toleration_rules_have_no_falsy_holes(toleration: dict[str, Any], message: str) -> None:
    assert problems((*POOL, "tolerations"), [toleration]) == [
        f"test.yaml: aiperf-kueue:{key_path(*TOLERATION)}: {message}"
    ]


@pytest.mark.parametrize(
    "toleration",
    [
        {"operator": "Exists"},
        {"key": "k", "operator": "Exists"},
        {"key": "k", "value": ""},  # Equal with an empty value matches a taint without value
        {"key": "k", "value": "v", "effect": "NoExecute", "tolerationSeconds": 0},
    ],
)
def test_valid_tolerations_pass(toleration: dict[str, Any]) -> None:
    assert problems((*POOL, "tolerations"), [toleration]) == []


@pytest.mark.parametrize("name", ["bench\n", "bench\r", "\nbench", "bench-\n"])
def test_dns_labels_must_match_in_full(name: str) -> None:
    with pytest.raises(ValueError, match="must be a DNS-1123 label"):
        dns_label(name)
    assert problems((*NAMESPACE, "name"), name) == [
        f"test.yaml: aiperf-kueue:{key_path(*NAMESPACE, 'name')}: must be a DNS-1123 label (lower-case letters, "
        f"digits and '-', starting and ending with a letter or digit), got {quoted(name)}"
    ]


def test_a_nul_in_a_name_is_an_invisible_character() -> None:
    with pytest.raises(ValueError, match="must be a DNS-1123 label"):
        dns_label("bench\x00")
    assert problems((*NAMESPACE, "name"), "bench\x00") == [
        f'test.yaml: aiperf-kueue:{key_path(*NAMESPACE, "name")}: "bench\\x00" holds the invisible control '
        "character \\x00 (a terminal escape or a bidi control); no config value needs one: remove it"
    ]


QUALIFIED = "must be a qualified name ([prefix/]name, name at most 63 characters of [A-Za-z0-9-_.])"


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("node-pool\n", QUALIFIED),
        ("example.com/gpu\n", QUALIFIED),
        ("", QUALIFIED),
        ("example.com\n/gpu", "prefix must be a DNS subdomain"),
        ("/gpu", "prefix must be a DNS subdomain"),  # Kubernetes: "prefix part must be non-empty"
        ("a/b/c", "prefix must be a DNS subdomain"),
    ],
)
def test_qualified_names_must_match_in_full(key: str, message: str) -> None:
    with pytest.raises(ValueError) as err:
        qualified_name(key)
    assert str(err.value) == f"{message}, got {quoted(key)}"


@pytest.mark.parametrize("key", ["node-pool", "example.com/gpu", "nvidia.com/gpu", "A_b.c"])
def test_qualified_names_that_are_valid(key: str) -> None:
    assert qualified_name(key) == key


@pytest.mark.parametrize("value", ["gpu\n", "\n", "a b"])
def test_label_values_must_match_in_full(value: str) -> None:
    with pytest.raises(ValueError, match="must be a label value"):
        label_value(value)
    assert label_value("") == ""


def test_a_key_path_with_a_newline_stays_on_one_line() -> None:
    assert key_path("inventory", "pools", 0, "nodeLabels", "pool\n") == 'inventory.pools[0].nodeLabels["pool\\n"]'
    assert key_path("quotas", "nvidia.com/gpu") == 'quotas["nvidia.com/gpu"]'


def test_a_label_key_with_a_newline_is_one_problem_line() -> None:
    [line] = problems((*POOL, "nodeLabels"), {"pool\n": "gpu"})
    assert "\n" not in line
    assert line.startswith('test.yaml: aiperf-kueue:inventory.pools[1].nodeLabels["pool\\n"]')
    assert line.endswith(
        'must be a qualified name ([prefix/]name, name at most 63 characters of [A-Za-z0-9-_.]), got "pool\\n"'
    )


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (
            ("kueue", "protect"),
            "no",
            "aiperf-kueue:kueue.protect: must be true or false, got 'no' (YAML 1.2, "
            "which Pulumi reads, has only true and false)",
        ),
        (
            ("kueue", "readiness", "attempts"),
            "3",
            "aiperf-kueue:kueue.readiness.attempts: must be a whole number (e.g. attempts: 8), got '3', text "
            "because of its quotes",
        ),
        (
            ("kueue", "readiness", "intervalSeconds"),
            True,
            "aiperf-kueue:kueue.readiness.intervalSeconds: must be a number, got true",
        ),
        (("jobset", "install"), 1, "aiperf-kueue:jobset.install: must be true or false, got 1"),
        (
            ("operator", "protectCrds"),
            "yes",
            "aiperf-kueue:operator.protectCrds: must be true or false, got "
            "'yes' (YAML 1.2, which Pulumi reads, has only true and false)",
        ),
    ],
)
def test_install_settings_take_their_own_type(path: tuple[str, ...], value: Any, expected: str) -> None:
    values = copy.deepcopy(BASE)
    node: Any = values
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value
    with pytest.raises(ConfigError) as raised:
        parse_config(values, "test.yaml")
    assert raised.value.lines() == [f"test.yaml: {expected}"]


def test_a_bad_mapping_key_is_named_by_its_path_alone() -> None:
    assert problems(("inventory", "pools", 0, "nodeLabels"), {"bad key!": "x"}) == [
        'test.yaml: aiperf-kueue:inventory.pools[0].nodeLabels["bad key!"]: must be a qualified name '
        "([prefix/]name, name at most 63 characters of [A-Za-z0-9-_.]), got 'bad key!'"
    ]
