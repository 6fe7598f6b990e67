"""``aiperf-kueue:kueue``: which Kueue release the objects target."""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator, model_validator

from aiperf_kueue import kueue
from aiperf_kueue.config.installs import KueueInstallConfig


class KueueConfig(KueueInstallConfig):
    """The pinned Kueue release, the apiVersion the program writes, and how Kueue is installed."""

    version: str = kueue.DEFAULT_VERSION
    """Kueue release the objects target, ``x.y.z`` (default ``0.19.2``, the newest tested).
    Supported: ``>=0.10.0, <0.20.0``; tested: 0.10.1 and 0.19.2. Decides field shapes
    and per-group limits (16 before 0.14, 64 from 0.14)."""

    api_version: Literal["auto", "v1beta1", "v1beta2"] = "auto"
    """apiVersion of every Kueue object (default ``auto``: ``v1beta2`` from Kueue 0.16,
    where it is the storage version, ``v1beta1`` below). ``v1beta2`` needs Kueue >= 0.15."""

    @field_validator("version")
    @classmethod
    def _supported(cls, value: str) -> str:
        parsed = kueue.parse_version(value)
        if not kueue.is_supported(parsed):
            raise ValueError(
                f"Kueue {value} is not supported; supported versions are {kueue.SUPPORTED_RANGE} "
                f"(tested: {', '.join(kueue.TESTED_VERSIONS)})"
            )
        return value.removeprefix("v")

    @model_validator(mode="after")
    def _served(self) -> KueueConfig:
        if self.api_version == "v1beta2" and not self.target().v1beta2_served:
            raise ValueError(
                f"apiVersion v1beta2 is served only from Kueue 0.15; Kueue {self.version} needs v1beta1 (or auto)"
            )
        return self

    def target(self) -> kueue.KueueTarget:
        """The resolved release and apiVersion."""
        return kueue.KueueTarget.resolve(self.version, self.api_version)
