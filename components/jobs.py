"""The stack's AIPerfJobs: one child per benchmark run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi

from aiperf_kueue.manifests import AIPERF_JOB_IMMUTABLE
from components.kube import KubeObject

TYPE = "aiperf-kueue:index:AIPerfJobs"


@dataclass(frozen=True)
class JobResource:
    """One AIPerfJob manifest and what it must wait for."""

    manifest: dict[str, Any]
    after: list[pulumi.Resource]
    retain_on_delete: bool = True


@dataclass(frozen=True)
class AIPerfJobsArgs:
    """Every job, each already proven admissible by the planner."""

    jobs: list[JobResource] = field(default_factory=list)


class AIPerfJobs(pulumi.ComponentResource):
    """Adding a job adds only that child; a change to a frozen spec field replaces it."""

    def __init__(self, name: str, args: AIPerfJobsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        self.job_names: list[str] = []
        for job in args.jobs:
            meta = job.manifest["metadata"]
            KubeObject(
                f"{name}-{meta['namespace']}-{meta['name']}",
                _with_secrets(job.manifest),
                pulumi.ResourceOptions(
                    parent=self,
                    depends_on=job.after,
                    # The CRD freezes these (CEL); only cancel and timeoutSeconds update in place.
                    replace_on_changes=[f"spec.{f}" for f in AIPERF_JOB_IMMUTABLE],
                    delete_before_replace=True,  # the name is the job id: fixed
                    retain_on_delete=job.retain_on_delete,
                ),
            )
            self.job_names.append(f"{meta['namespace']}/{meta['name']}")
        self.register_outputs({"jobs": self.job_names})


def _with_secrets(manifest: dict[str, Any]) -> dict[str, Any]:
    """The endpoint's ``apiKey`` and header values as Pulumi secrets: encrypted in state,
    masked in every preview, never plaintext in ``plan`` output."""
    endpoint = manifest.get("spec", {}).get("benchmark", {}).get("endpoint")
    if not isinstance(endpoint, dict) or not ({"apiKey", "headers"} & set(endpoint)):
        return manifest
    endpoint = dict(endpoint)
    if "apiKey" in endpoint:
        endpoint["apiKey"] = pulumi.Output.secret(endpoint["apiKey"])
    if isinstance(endpoint.get("headers"), dict):
        endpoint["headers"] = {k: pulumi.Output.secret(v) for k, v in endpoint["headers"].items()}
    spec = manifest["spec"]
    return {**manifest, "spec": {**spec, "benchmark": {**spec["benchmark"], "endpoint": endpoint}}}
