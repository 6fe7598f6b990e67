"""The stack's AIPerfJobs: one child per benchmark run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from aiperf_kueue.plan.manifests import AIPERF_JOB_IMMUTABLE, JOB_LABEL
from components.kube import KubeObject

TYPE = "aiperf-kueue:index:AIPerfJobs"


@dataclass(frozen=True, kw_only=True)
class JobResource:
    """One AIPerfJob manifest and what it must wait for."""

    manifest: dict[str, Any]
    after: Sequence[pulumi.Resource] = ()
    retain_on_delete: bool = True
    """Keep the job (and so its results) in the cluster when it leaves the stack."""


@dataclass(frozen=True, kw_only=True)
class AIPerfJobsArgs:
    """Every job, each already proven admissible by the planner."""

    jobs: Sequence[JobResource] = ()
    secret_strings: frozenset[str] = frozenset()
    """The stack file's ``secure:`` values (``aiperf_kueue.stackfile.secrets``): every spec string equal to
    one becomes a Pulumi secret, wherever the spec carries it."""


class AIPerfJobs(pulumi.ComponentResource):
    """Adding a job adds only that child; a change to a frozen spec field replaces it with a new
    run, named after its new spec."""

    job_names: list[str]
    """``namespace/name`` of every AIPerfJob (its ``metadata.name``), in declaration order."""
    runs: list[KubeObject]
    """Every AIPerfJob resource, in declaration order: the program waits for them before the other namespaces."""

    def __init__(self, name: str, args: AIPerfJobsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        self.job_names = []
        self.runs = []
        for job in args.jobs:
            meta = job.manifest["metadata"]
            run = KubeObject(
                # The config name, not the object's: a changed spec replaces this one logical resource.
                f"{name}-{meta['namespace']}-{meta['labels'][JOB_LABEL]}",
                _with_secrets(job.manifest, args.secret_strings),
                pulumi.ResourceOptions(
                    parent=self,
                    depends_on=list(job.after),
                    # The CRD freezes these (CEL); only cancel and timeoutSeconds update in place. Each
                    # also changes the name (its digest), which replaces the object by itself.
                    replace_on_changes=[f"spec.{f}" for f in AIPERF_JOB_IMMUTABLE],
                    # No delete before replace: the new run has a name of its own, so Pulumi creates it
                    # first and only then lets go of the old one (kept, under retainOnDelete). A
                    # create that fails leaves the old run in the state and the cluster, to retry.
                    retain_on_delete=job.retain_on_delete,
                ),
            )
            self.runs.append(run)
            self.job_names.append(f"{meta['namespace']}/{meta['name']}")
        self.register_outputs({"jobs": self.job_names})


def _with_secrets(manifest: dict[str, Any], secret_strings: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The endpoint's ``apiKey`` and header values, and every spec string that came from a
    ``secure:`` value, as Pulumi secrets: encrypted in state, masked in every preview, never
    plaintext in ``plan`` output."""
    spec = _secret_leaves(manifest.get("spec", {}), secret_strings)
    endpoint = spec.get("benchmark", {}).get("endpoint") if isinstance(spec.get("benchmark"), dict) else None
    if isinstance(endpoint, dict) and {"apiKey", "headers"} & set(endpoint):
        endpoint = dict(endpoint)
        if "apiKey" in endpoint:
            endpoint["apiKey"] = _secret(endpoint["apiKey"])
        if isinstance(endpoint.get("headers"), dict):
            endpoint["headers"] = {k: _secret(v) for k, v in endpoint["headers"].items()}
        spec = {**spec, "benchmark": {**spec["benchmark"], "endpoint": endpoint}}
    return {**manifest, "spec": spec}


def _secret(value: Any) -> Any:
    return value if isinstance(value, pulumi.Output) else pulumi.Output.secret(value)


def _secret_leaves(value: Any, secret_strings: frozenset[str]) -> Any:
    """``value`` with every string in ``secret_strings`` wrapped as a Pulumi secret."""
    if not secret_strings:
        return value
    if isinstance(value, dict):
        return {k: _secret_leaves(v, secret_strings) for k, v in value.items()}
    if isinstance(value, list):
        return [_secret_leaves(v, secret_strings) for v in value]
    if isinstance(value, str) and value in secret_strings:
        return pulumi.Output.secret(value)
    return value
