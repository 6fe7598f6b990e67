"""``aiperf-kueue:cluster``: the one cluster a stack deploys to.

One stack per cluster is the workflow; a stack that does not say which cluster is the one that
deploys prod's quotas to dev because kubectl pointed there (``pulumi up -s prod`` with the current
context on dev). The program builds one explicit Kubernetes provider from this key, passes it to
every component, and disables Pulumi's default Kubernetes provider in ``Pulumi.yaml``, so nothing
can fall back to the current context unless the stack opts in (``currentContext: true``).
"""

from __future__ import annotations

import re

from pydantic import field_validator, model_validator

from aiperf_kueue.common.display import quoted
from aiperf_kueue.config.base import Flag, Model

#: A kubeconfig context name: printable, no control characters, at most 253 characters. kubectl
#: itself puts almost no rule on it (``kind-dev``, ``gke_project_zone_name``, ARNs with ``:`` and ``/``).
_CONTEXT = re.compile(r"[^\x00-\x1f\x7f\s][^\x00-\x1f\x7f]*")
#: A kubeconfig path: one line, no control characters.
_PATH = re.compile(r"[^\x00-\x1f\x7f]+")


class ClusterConfig(Model):
    """Which cluster ``pulumi up`` of this stack talks to: a kubeconfig and a context in it."""

    context: str | None = None
    """Kubeconfig context of this stack's cluster (a ``contexts[].name``, e.g. ``kind-aiperf``). Required
    unless ``currentContext: true``. The Kubernetes provider and Kueue's readiness gate both use it;
    changing it points the stack at another cluster, which ``diff`` flags as destructive."""

    kubeconfig: str | None = None
    """Path of the kubeconfig file that has ``context`` (``~`` is expanded; relative to the project
    directory). Default: none, i.e. ``$KUBECONFIG``, else ``~/.kube/config``, as kubectl reads it.
    A path only: credentials stay in the file, never in stack config or state."""

    current_context: Flag = False
    """Opt in to deploying to whatever the kubeconfig's ``current-context`` is at ``pulumi up`` time
    (default false). For a throw-away or CI cluster whose context name changes; never for a shared one."""

    @field_validator("context")
    @classmethod
    def _context(cls, value: str | None) -> str | None:
        if value is not None and (len(value) > 253 or not _CONTEXT.fullmatch(value)):
            raise ValueError(
                f"must be a kubeconfig context name (1 to 253 printable characters, no control characters, "
                f"not starting with a space), got {quoted(value[:80])}"
            )
        return value

    @field_validator("kubeconfig")
    @classmethod
    def _kubeconfig(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if "\n" in value or value.lstrip().startswith(("{", "apiVersion")):
            raise ValueError(
                "must be the path of a kubeconfig file, got its contents; write them to a file and give its path "
                "(or leave kubeconfig out to use $KUBECONFIG)"
            )
        if len(value) > 4096 or not _PATH.fullmatch(value):
            raise ValueError(
                f"must be a file path (one line, no control characters, at most 4096 characters), "
                f"got {quoted(value[:80])}"
            )
        return value

    @model_validator(mode="after")
    def _one_target(self) -> ClusterConfig:
        if self.current_context and self.context is not None:
            raise ValueError(
                f"names context {quoted(self.context)} and currentContext: true; keep one (context pins the cluster)"
            )
        if not self.current_context and self.context is None:
            raise ValueError(
                "names no context: set cluster.context to this stack's kubeconfig context (kubectl config "
                "get-contexts lists them), or currentContext: true to deploy wherever kubectl points"
            )
        return self
