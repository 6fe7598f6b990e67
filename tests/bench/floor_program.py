"""The floor: ``count`` bare ``CustomResource`` registrations, no logic, no components, no dependencies."""

import pulumi
import pulumi_kubernetes as k8s

for i in range(pulumi.Config().require_int("count")):
    k8s.apiextensions.CustomResource(
        f"cr-{i}",
        api_version="aiperf.nvidia.com/v1alpha1",
        kind="AIPerfJob",
        metadata={"name": f"cr-{i}", "namespace": "bench"},
        spec={},
    )
