"""Registering a whole Kubernetes object, top-level fields included."""

from __future__ import annotations

from importlib import metadata
from typing import Any

import pulumi

#: The pulumi-kubernetes release this program is pinned to: the provider plugin every object
#: is registered with, as the package's own resources ask for it (a release's PEP 440 version
#: is its semver: the pins are plain releases).
PROVIDER_VERSION = metadata.version("pulumi-kubernetes")


class KubeObject(pulumi.CustomResource):
    """Any Kubernetes object from its manifest, under ``kubernetes:<apiVersion>:<kind>``.

    ``apiextensions.CustomResource`` accepts only ``spec`` and ``metadata``, and a
    WorkloadPriorityClass has top-level ``value`` and ``description``
    (pulumi-kubernetes#2363). Registering the manifest as the inputs is what
    ``CustomResource`` does under the hood, so the provider treats both the same.
    """

    def __init__(self, name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions | None = None) -> None:
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(version=PROVIDER_VERSION))
        super().__init__(f"kubernetes:{manifest['apiVersion']}:{manifest['kind']}", name, dict(manifest), opts)
