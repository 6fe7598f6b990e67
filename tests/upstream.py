"""Upstream files the tests check against, from the upstream Go modules at pinned versions.

Kueue's CRDs and chart values come from ``sigs.k8s.io/kueue`` at every release in
:data:`aiperf_kueue.upstream.kueue.TESTED_VERSIONS`; JobSet's CRD from ``sigs.k8s.io/jobset`` at the
version that Kueue release's own ``go.mod`` requires (so the pins follow the program's Kueue
version table). ``go mod download`` fetches them once into Go's module cache
(``go env GOMODCACHE``, outside the repository), checksum-verified against the Go checksum
database; later runs read the cache. ``make test`` runs ``python -m tests.upstream`` first, so a
fresh clone downloads them before the suite; each test asks again (a cache hit takes a few
milliseconds).

Only the AIPerfJob CRD and the operator chart's ``values.schema.json`` still come from
``../shared/reference/aiperf``: no package publishes them.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from aiperf_kueue.upstream.kueue import DEFAULT_VERSION, TESTED_VERSIONS

KUEUE_MODULE = "sigs.k8s.io/kueue"
JOBSET_MODULE = "sigs.k8s.io/jobset"
#: Where kubebuilder writes the CRDs, in both modules.
CRD_BASES = Path("config", "components", "crd", "bases")
#: Seconds one ``go mod download`` may take (a Kueue module zip is about 20 MB).
DOWNLOAD_TIMEOUT = 600
_REQUIRE_JOBSET = re.compile(r"^\s*(?:require\s+)?sigs\.k8s\.io/jobset\s+v(\S+)", re.MULTILINE)


class MissingInput(Exception):  # noqa: N818 - not an error of the code under test
    """An upstream file cannot be had here (no Go, no module proxy): the test cannot run."""


@functools.cache
def module_dir(module: str, version: str) -> Path:
    """The extracted module ``module@v{version}`` in Go's module cache, downloaded if needed."""
    go = shutil.which("go")
    if go is None:
        raise MissingInput(f"the go command is not on PATH, so {module}@v{version} cannot be downloaded")
    # Outside any module (the repository has no go.mod, but a parent directory might).
    with tempfile.TemporaryDirectory(prefix="aiperf-kueue-go-") as scratch:
        try:
            done = subprocess.run(
                [go, "mod", "download", "-json", f"{module}@v{version}"],
                cwd=scratch,
                capture_output=True,
                text=True,
                timeout=DOWNLOAD_TIMEOUT,
                check=False,
                env={**os.environ, "GOFLAGS": "-mod=mod", "GO111MODULE": "on"},
            )
        except subprocess.TimeoutExpired:
            raise MissingInput(f"go mod download {module}@v{version} took over {DOWNLOAD_TIMEOUT} s") from None
    try:
        info = json.loads(done.stdout)
    except ValueError:
        info = {"Error": done.stderr.strip() or f"exit {done.returncode}"}
    if info.get("Error") or not info.get("Dir"):
        raise MissingInput(f"go mod download {module}@v{version} failed: {info.get('Error')}")
    return Path(info["Dir"])


def kueue_dir(release: str) -> Path:
    """The ``sigs.k8s.io/kueue`` module at ``release`` (``0.19.2``)."""
    return module_dir(KUEUE_MODULE, release)


def kueue_crd_dirs() -> dict[str, Path]:
    """Tested Kueue release → the directory of its CRDs (``kueue.x-k8s.io_<plural>.yaml``)."""
    return {release: kueue_dir(release) / CRD_BASES for release in sorted(TESTED_VERSIONS, reverse=True)}


def kueue_chart_dir(release: str) -> Path:
    """``charts/kueue`` of the Kueue module at ``release`` (``values.yaml``, ``Chart.yaml``)."""
    return kueue_dir(release) / "charts" / "kueue"


def jobset_version(kueue_release: str = DEFAULT_VERSION) -> str:
    """The JobSet release the Kueue release builds against (its ``go.mod``), e.g. ``0.12.0``."""
    found = _REQUIRE_JOBSET.search((kueue_dir(kueue_release) / "go.mod").read_text())
    if found is None:
        raise MissingInput(f"{KUEUE_MODULE}@v{kueue_release}'s go.mod requires no {JOBSET_MODULE}")
    return found.group(1)


def jobset_crd(version: str) -> Path:
    """The JobSet CRD of ``sigs.k8s.io/jobset`` at ``version``."""
    return module_dir(JOBSET_MODULE, version) / CRD_BASES / "jobset.x-k8s.io_jobsets.yaml"


def main() -> int:
    """Download every module the tests use (``make test`` runs this first); print where each is."""
    try:
        for release in sorted(TESTED_VERSIONS, reverse=True):
            print(f"upstream: {KUEUE_MODULE}@v{release} -> {kueue_dir(release)}", flush=True)
        version = jobset_version()
        print(f"upstream: {JOBSET_MODULE}@v{version} -> {module_dir(JOBSET_MODULE, version)}", flush=True)
    except MissingInput as exc:
        # Not fatal here: each test that needs the file skips (or, under CI=true, fails) with the reason.
        print(f"upstream: {exc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
