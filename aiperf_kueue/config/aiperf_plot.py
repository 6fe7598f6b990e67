"""``spec.plot`` of an AIPerfJob as AIPerf 0.13.0 accepts it (``PlotEnvelopeConfig``).

Upstream: aiperf 0.13.0 aiperf/config/plot.py, aiperf/config/config.py, aiperf/plot/core/plot_specs.py

The release takes ``plot`` as null, a path to a plot YAML file, or an inline mapping. A path is
read by the operator from its own file system when the job is created (a relative one is refused:
a custom resource has no source directory), where a stack's files never are: here only the inline
mapping is taken. Preset bodies (``visualization.*RunPlots``) stay free-form, as in the release
(its plot renderer validates them after the run); ``experimentClassification`` ignores unknown
keys in the release, so it keeps them here too.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, StrictBool, StrictStr, model_validator

from aiperf_kueue.common.display import show
from aiperf_kueue.common.suggest import did_you_mean
from aiperf_kueue.config.aiperf_base import CrdModel, Number


class ServerMetricsDownsampling(CrdModel):
    """``plot.settings.serverMetricsDownsampling``."""

    enabled: StrictBool | None = None
    """Downsample server metrics before plotting (default true)."""

    window_size_seconds: Number | None = Field(None, gt=0)
    """Aggregation window in seconds, > 0 (default 5)."""

    aggregation_method: Literal["mean", "max", "min", "median"] | None = None
    """How points in a window combine (default ``mean``)."""


class PlotSettings(CrdModel):
    """``plot.settings``."""

    server_metrics_downsampling: ServerMetricsDownsampling | None = None
    """Server-metrics downsampling (default on, 5 s windows, mean)."""


class PlotVisualization(CrdModel):
    """``plot.visualization``: presets and the ones drawn by default."""

    multi_run_defaults: list[StrictStr] | None = None
    """Names of ``multiRunPlots`` drawn by default (default none); each must be defined there."""

    single_run_defaults: list[StrictStr] | None = None
    """Names of ``singleRunPlots`` drawn by default (default none); each must be defined there."""

    multi_run_plots: dict[str, dict[str, Any]] | None = None
    """Cross-run presets, name → body; bodies free-form, as in the release (default none)."""

    single_run_plots: dict[str, dict[str, Any]] | None = None
    """Single-run presets, name → body; bodies free-form, as in the release (default none)."""

    @model_validator(mode="after")
    def _defaults_defined(self) -> PlotVisualization:
        for defaults, plots, key in (
            (self.multi_run_defaults, self.multi_run_plots, "multiRun"),
            (self.single_run_defaults, self.single_run_plots, "singleRun"),
        ):
            defined = sorted(plots or {})
            for name in defaults or []:
                if name not in defined:
                    raise ValueError(
                        f"{key}Defaults names {show(name)}, which {key}Plots does not define"
                        f"{did_you_mean(name, defined)}; defined: {', '.join(defined) if defined else 'none'}"
                    )
        return self


class ExperimentClassification(CrdModel):
    """``plot.experimentClassification``: baseline vs treatment runs (unknown keys ignored by the release)."""

    model_config = ConfigDict(extra="allow")

    baselines: list[StrictStr] | None = None
    """Glob patterns of baseline runs (default none)."""

    treatments: list[StrictStr] | None = None
    """Glob patterns of treatment runs (default none)."""

    default: Literal["baseline", "treatment"] | None = None
    """Classification when no pattern matches (default ``treatment``)."""

    group_extraction_pattern: StrictStr | None = None
    """Regex whose first group is the experiment group (default ``^(baseline|treatment_\\d+)``)."""

    group_display_names: dict[str, StrictStr] | None = None
    """Group id → legend name (default none)."""


class Plot(CrdModel):
    """``spec.plot``: the inline plot configuration (``PlotEnvelopeConfig``)."""

    visualization: PlotVisualization
    """Presets and default plot names (required: ``plot: {}`` is refused by the release)."""

    settings: PlotSettings | None = None
    """Global plot settings (default: AIPerf's)."""

    experiment_classification: ExperimentClassification | None = None
    """Baseline-vs-treatment grouping (default none)."""

    @model_validator(mode="before")
    @classmethod
    def _inline_only(cls, data: Any) -> Any:
        if isinstance(data, str):
            raise ValueError(
                f"must be an inline mapping (visualization, settings, experimentClassification), got the path "
                f"{show(data)}: AIPerf would read it from the operator's own file system, where the stack's "
                "files are not; inline the plot YAML here"
            )
        if not isinstance(data, dict):
            raise ValueError(f"must be a mapping with visualization, got {show(data)}")
        return data
