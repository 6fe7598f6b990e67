"""``aiperf-kueue:priorityClasses``: Kueue WorkloadPriorityClasses."""

from __future__ import annotations

from aiperf_kueue.config.base import DnsLabel, Int32, Model


class PriorityClass(Model):
    """One WorkloadPriorityClass; jobs name it in ``kueue.x-k8s.io/priority-class``."""

    name: DnsLabel
    """Class name (DNS-1123 label: it is a label value), required."""

    value: Int32
    """Priority, a 32-bit integer (required); higher is scheduled and kept first."""

    description: str = ""
    """Free text shown by ``kubectl get`` (default empty; at most 2048 characters in v1beta2)."""
