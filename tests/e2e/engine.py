"""The real Pulumi engine: the CLI and the Kubernetes provider built from source, the program run as users run it.

The CLI is ``pulumi`` v3.274.0 (``e2e/tools/pulumi``) and the provider ``pulumi-resource-kubernetes`` 4.25.0
(``e2e/tools/provider``), installed into a private ``PULUMI_HOME`` with ``pulumi plugin install --file``. The state
backend is a local directory and secrets use the passphrase provider. Nothing is downloaded: the update check and
automatic plugin acquisition are off.

The program runs through the Automation API as an inline program that executes the repository's ``__main__.py``: the
CLI's ``pulumi up``/``preview``/``destroy`` drive the engine, and the engine talks to the program over gRPC (the
Python language-host binary is not served by the Go module proxy; the inline form needs none). The project directory
handed to the CLI holds ``Pulumi.yaml`` and ``stacks/``, as the repository does.
"""

from __future__ import annotations

import json
import os
import runpy
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pulumi import automation as auto

ROOT = Path(__file__).resolve().parents[2]
PROJECT = "aiperf-kueue"
PASSPHRASE = "aiperf-kueue-e2e"


def program() -> None:
    """The repository's ``__main__.py``, as the language host would run it."""
    runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")


class Engine:
    """A private Pulumi home and state backend with the built CLI and provider."""

    def __init__(self, binaries: Mapping[str, str], workdir: Path, kubeconfig: Path, provider_version: str) -> None:
        self.pulumi = Path(binaries["pulumi"])
        self.provider = Path(binaries["pulumi-resource-kubernetes"])
        self.dir = workdir
        self.home = workdir / "pulumi-home"
        self.state = workdir / "state"
        self.kubeconfig = kubeconfig
        # Every run starts from an empty state: the cluster is new too.
        shutil.rmtree(workdir, ignore_errors=True)
        self.home.mkdir(parents=True, exist_ok=True)
        self.state.mkdir(parents=True, exist_ok=True)
        self.env = {
            "PULUMI_HOME": str(self.home),
            "PULUMI_BACKEND_URL": f"file://{self.state}",
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK": "false",
            "KUBECONFIG": str(kubeconfig),
            # The dynamic provider (the readiness gate) runs with this interpreter, which has the project installed.
            "PULUMI_PYTHON_CMD": sys.executable,
            "PATH": f"{self.pulumi.parent}:{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        }
        self.cli("plugin", "install", "resource", "kubernetes", provider_version, "--file", str(self.provider))

    def cli(self, *args: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run the built ``pulumi`` with this engine's environment."""
        result = subprocess.run(
            [str(self.pulumi), *args, "--non-interactive"],
            capture_output=True,
            text=True,
            env={**os.environ, **self.env},
            cwd=cwd or self.dir,
            timeout=900,
        )
        if check and result.returncode != 0:
            raise RuntimeError(f"pulumi {' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
        return result

    def project_dir(self, stack: str, config: Mapping[str, Any]) -> Path:
        """A project directory with the repository's ``Pulumi.yaml`` and ``stacks/Pulumi.<stack>.yaml`` = ``config``."""
        work = self.dir / "projects" / stack
        (work / "stacks").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / "Pulumi.yaml", work / "Pulumi.yaml")
        # Pulumi.yaml names ./venv (runtime options): the CLI's own commands (destroy, the dynamic provider's
        # launcher) look for it in the project directory, where `pulumi install` puts it for users.
        if not (work / "venv").exists():
            (work / "venv").symlink_to(ROOT / "venv")
        stack_file = work / "stacks" / f"Pulumi.{stack}.yaml"
        existing = yaml.safe_load(stack_file.read_text()) if stack_file.exists() else {}
        document = {**(existing or {}), "config": dict(config)}
        stack_file.write_text(yaml.safe_dump(document, sort_keys=False))
        return work

    def stack(self, stack: str, work: Path) -> auto.Stack:
        """Create or select ``stack`` in ``work`` (the passphrase provider writes its salt into the stack file)."""
        return auto.create_or_select_stack(
            stack_name=stack,
            project_name=PROJECT,
            program=program,
            opts=auto.LocalWorkspaceOptions(
                work_dir=str(work),
                pulumi_home=str(self.home),
                env_vars=self.env,
                secrets_provider="passphrase",
                pulumi_command=auto.PulumiCommand(root=str(self.pulumi.parent.parent)),
            ),
        )

    def export(self, stack: auto.Stack) -> dict[str, Any]:
        """``pulumi stack export`` (secrets stay encrypted)."""
        return json.loads(json.dumps(stack.export_stack().deployment))
