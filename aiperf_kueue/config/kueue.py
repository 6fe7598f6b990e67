"""``aiperf-kueue:kueue``: which Kueue release the objects target."""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator, model_validator

from aiperf_kueue.config.installs import KueueInstallConfig
from aiperf_kueue.upstream import kueue


class KueueConfig(KueueInstallConfig):
    """The pinned Kueue release, the apiVersion the program writes, and how Kueue is installed."""

    version: str = kueue.DEFAULT_VERSION
    """Kueue release the objects target, ``x.y.z`` (default ``0.19.2``, the newest tested).
    Supported: ``>=0.10.0, <0.22.0``; tested: 0.10.1 and 0.19.2 (0.20 and 0.21 by design: no
    0.20 release is readable from the Go module proxy). Decides field shapes, per-group limits
    (16 before 0.14, 64 from 0.14), and which AIPerf submission routes work (from 0.20, with
    AIPerf 0.13.0, only the operator's default queue: ``docs/aiperf.md``)."""

    api_version: Literal["auto", "v1beta1", "v1beta2"] = "auto"
    """apiVersion of every Kueue object (default ``auto``: ``v1beta2`` from Kueue 0.16,
    where it is the storage version, ``v1beta1`` below). ``v1beta2`` needs Kueue >= 0.15;
    ``v1beta1`` is refused from Kueue 0.20, which no longer serves it."""

    @field_validator("version")
    @classmethod
    def _supported(cls, value: str) -> str:
        parsed = kueue.parse_version(value)
        tested = ", ".join(kueue.TESTED_VERSIONS)
        if parsed >= kueue.MAX_VERSION_EXCLUSIVE:
            raise ValueError(
                f"Kueue {value} is newer than this program models: it knows Kueue's API rules, manager "
                f"configuration and chart up to {kueue.NEWEST_KNOWN_LINE}.x (supported {kueue.SUPPORTED_RANGE}; "
                f"tested: {tested}); pin a supported release"
            )
        if not kueue.is_supported(parsed):
            raise ValueError(
                f"Kueue {value} is older than this program models: before 0.10.0 Kueue has no "
                f"managedJobsNamespaceSelector and other rules the program relies on (supported "
                f"{kueue.SUPPORTED_RANGE}; tested: {tested}); pin a supported release"
            )
        return value.removeprefix("v")

    @model_validator(mode="after")
    def _served(self) -> KueueConfig:
        target = self.target()
        if self.api_version == "v1beta2" and not target.v1beta2_served:
            raise ValueError(
                f"apiVersion v1beta2 is served only from Kueue 0.15; Kueue {self.version} needs v1beta1 (or auto)"
            )
        if self.api_version == "v1beta1" and not target.v1beta1_served:
            raise ValueError(
                f"apiVersion v1beta1 is not served by Kueue {self.version}: Kueue 0.20.0 stopped serving "
                f"kueue.x-k8s.io/v1beta1 (every read and write of it is a 404); use apiVersion v1beta2 (or auto)"
            )
        return self

    def target(self) -> kueue.KueueTarget:
        """The resolved release and apiVersion."""
        return kueue.KueueTarget.resolve(self.version, self.api_version)
