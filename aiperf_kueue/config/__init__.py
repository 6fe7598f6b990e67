"""Typed stack config: one frozen pydantic model per ``aiperf-kueue:<key>``.

Nothing here imports Pulumi: the same models validate a stack file offline and
the config the Pulumi engine hands to ``__main__.py``.
"""

from aiperf_kueue.common.errors import PROJECT
from aiperf_kueue.config.inventory import Inventory, Pool, Taint, Toleration
from aiperf_kueue.config.kueue import KueueConfig
from aiperf_kueue.config.priorities import PriorityClass
from aiperf_kueue.config.queues import ClusterQueue, Cohort, Namespace, Queues
from aiperf_kueue.config.stack import KEYS, StackConfig

__all__ = [
    "KEYS",
    "PROJECT",
    "ClusterQueue",
    "Cohort",
    "Inventory",
    "KueueConfig",
    "Namespace",
    "Pool",
    "PriorityClass",
    "Queues",
    "StackConfig",
    "Taint",
    "Toleration",
]
