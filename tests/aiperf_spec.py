"""The smallest AIPerfJob spec AIPerf 0.13.0 takes, and the loader's lines for a refused one: shared by the tests of
the spec's sections (``test_aiperf_dataset``, ``_content``, ``_outputs``, ``_sections``)."""

from __future__ import annotations

import copy
from typing import Any

from pydantic import ValidationError

from aiperf_kueue.config.aiperf_spec import AIPerfJobSpec
from aiperf_kueue.stackfile.loader import _problem

#: The spec without a dataset; each test adds its own, or :data:`DATASET`.
BASE: dict[str, Any] = {
    "image": "nvcr.io/nvidia/aiperf:0.13.0",
    "benchmark": {
        "models": ["m"],
        "endpoint": {"urls": ["http://llm.serving:8000"], "type": "chat"},
        "phases": [{"name": "profiling", "type": "concurrency", "concurrency": 8, "requests": 10}],
    },
}
#: A synthetic dataset with nothing set: for the tests of other sections.
DATASET: dict[str, Any] = {"name": "main", "type": "synthetic"}


def with_benchmark(**fields: Any) -> dict[str, Any]:
    """A copy of :data:`BASE` with ``fields`` set in its ``benchmark`` (as given, not copied)."""
    data = copy.deepcopy(BASE)
    data["benchmark"].update(fields)
    return data


def problems(data: dict[str, Any]) -> dict[str, str]:
    """Each refusal of ``data`` as the loader prints it: its path → its message (empty: accepted)."""
    try:
        AIPerfJobSpec.model_validate(data)
    except ValidationError as exc:
        return {p.path: p.message for p in (_problem(e) for e in exc.errors())}
    return {}
