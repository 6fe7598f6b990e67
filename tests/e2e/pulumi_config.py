"""The real Pulumi CLI reading a stack file: ``pulumi config --json`` in a private local backend, no cluster.

``pulumi config --json`` loads the stack file as ``pulumi preview`` and ``up`` do
(``workspace.LoadProjectStack``) and prints each value as the engine hands it to the program
(``config.Map.Decrypt``); a secret's value is left out unless ``--show-secrets``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

STACK = "corpus"


class PulumiConfig:
    """A Pulumi home, a ``file://`` backend and a project ``aiperf-kueue`` with one stack."""

    def __init__(self, pulumi: Path, workdir: Path) -> None:
        self.pulumi = pulumi
        self.project = workdir / "project"
        self.project.mkdir(parents=True)
        (workdir / "state").mkdir()
        (self.project / "Pulumi.yaml").write_text("name: aiperf-kueue\nruntime: python\n")
        self.env = {
            **os.environ,
            "PULUMI_HOME": str(workdir / "home"),
            "PULUMI_BACKEND_URL": f"file://{workdir / 'state'}",
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_CONFIG_PASSPHRASE": "test",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        }
        self._run("stack", "init", STACK)

    def read(self, stack_file: Path) -> dict[str, Any]:
        """``{"config": {key: {"value", "secret"}}}`` as Pulumi reads ``stack_file``, or ``{"error": line}``."""
        shutil.copyfile(stack_file, self.project / f"Pulumi.{STACK}.yaml")
        done = self._run("config", "--json", "--stack", STACK, check=False)
        if done.returncode != 0:
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            return {"error": lines[0] if lines else f"exit {done.returncode}"}
        config = json.loads(done.stdout or "{}")
        return {"config": {k: {"value": v.get("value"), "secret": v["secret"]} for k, v in sorted(config.items())}}

    def version(self) -> str:
        """``pulumi version``."""
        return self._run("version").stdout.strip()

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(self.pulumi), *args, "--non-interactive"],
            cwd=self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"pulumi {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
        return done
