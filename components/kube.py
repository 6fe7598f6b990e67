"""Registering a whole Kubernetes object, top-level fields included."""

from __future__ import annotations

from importlib import metadata
from typing import Any

import pulumi

from aiperf_kueue.upstream.kueue import former_type_tokens

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

    A Kueue object is aliased to its type under Kueue's other apiVersions: moving a stack across
    v1beta1 -> v1beta2 updates each object in place instead of creating it anew and deleting the
    live one (:data:`aiperf_kueue.upstream.kueue.KIND_API_VERSIONS`). The program owns its Kueue objects
    whole (:data:`aiperf_kueue.plan.manifests.PATCH_FORCE`): a field someone changed by hand is taken back by
    the next ``pulumi up --refresh``, instead of a server-side apply conflict.
    """

    def __init__(
        self,
        name: str,
        manifest: dict[str, Any],
        opts: pulumi.ResourceOptions | None = None,
        *,
        former_parent: pulumi.Input[str] | None = None,
    ) -> None:
        type_ = f"kubernetes:{manifest['apiVersion']}:{manifest['kind']}"
        former_types = former_type_tokens(str(manifest["apiVersion"]), str(manifest["kind"]))
        aliases: list[pulumi.Input[str | pulumi.Alias]] = [pulumi.Alias(type_=t) for t in former_types]
        if former_parent is not None:
            # The same resource under the component it had before (whole URNs: the review's ``diff`` matches
            # them as the engine does), under this type or a former one.
            aliases += [pulumi.create_urn(name, t, parent=former_parent) for t in (type_, *former_types)]
        own = pulumi.ResourceOptions(version=PROVIDER_VERSION, aliases=aliases or None)
        opts = pulumi.ResourceOptions.merge(opts, own)
        super().__init__(type_, name, dict(manifest), opts)
