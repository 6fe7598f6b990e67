"""Issue 27's smoke run, in ``make e2e-nightly`` (not in ``make e2e``: on a slower 2-core machine CI came near its 90
minutes with it): ``make bench-engine BENCH_ENGINE_ARGS=--quick`` on the real engine.

It runs the benchmark's quick mode to its end (``prod``, then 10 and 100 benchmark namespaces: ``kubectl apply``,
``pulumi up`` with and without checkpoints, the no-change preview, the one-namespace edit) and checks that it measured
every figure of issue 27's table that ``--quick`` can. It asserts no time: benchmarks measure, tests check, and this
one may share the machine with other work. Its figures go to ``out/e2e/bench-smoke.json`` only; the ones
docs/scale.md quotes come from ``make bench-engine`` on an idle machine.
"""

from __future__ import annotations

import json

from tests.e2e import bench_engine
from tests.e2e.conftest import OUT


def test_quick_run_measures_every_figure_but_the_1000_namespace_ones() -> None:
    out = OUT / "bench-smoke.json"
    out.unlink(missing_ok=True)
    assert bench_engine.main(["--quick", "--repeat", "1", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert [s["namespaces"] for s in report["sizes"]] == [10, 100]
    measured = {row["figure"]: row["measured"] for row in report["goals"]}
    assert list(measured) == [
        "up100", "up1000", "skip1000", "prodPreview", "planVsPreview", "stateBytes", "firstAdmittedShare",
        "oneNamespaceEdit",
    ]
    assert [figure for figure, value in measured.items() if value == "not measured"] == ["up1000", "skip1000"]
    # Every measured figure is a number with its unit, at the largest size where a size applies.
    assert measured["up100"].endswith("x")
    assert measured["planVsPreview"].endswith("x faster")
    assert measured["stateBytes"].endswith("MB (at 100)")
    assert measured["firstAdmittedShare"].endswith("% (at 100)")
    assert measured["oneNamespaceEdit"].startswith("up ") and measured["oneNamespaceEdit"].endswith("(at 100)")
    # Both ups of 100 namespaces created every object and admitted the fleet's first job.
    s100 = report["sizes"][1]
    assert s100["pulumiUp"]["stopped"] is False
    assert s100["pulumiUp"]["firstAdmittedSeconds"] is not None
    assert s100["pulumiUp"]["created"] == s100["pulumiUp"]["changes"]["create"]
