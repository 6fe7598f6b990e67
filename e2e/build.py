#!/usr/bin/env python3
"""Build the e2e cluster's and the real Pulumi engine's binaries from their Go modules, cached by version.

Every binary comes from a committed wrapper module under ``e2e/tools/<component>/`` (``go.mod`` + ``go.sum``
pin the upstream sources; nothing upstream is committed).  The binaries land in a cache outside the
repository, ``$AIPERF_KUEUE_CACHE`` (default ``~/.cache/aiperf-kueue``), under
``e2e/<component>-<version>-<key>/``.  The key hashes the wrapper's ``go.mod``/``go.sum``, the build recipe
and the Go version, so a second run with the same pins builds nothing, and a changed pin builds afresh
beside the old one.

Usage: ``python3 e2e/build.py [--only NAME ...] [--nightly] [--manifest out/e2e/binaries.json]``.  It prints a
line per component and the wall and CPU time of what it built.  The old Kueue and JobSet releases that only the
upgrade e2e runs are built with ``--nightly`` (``make e2e-nightly``) or when named by ``--only``.  Standard
library only: it runs before any virtualenv exists.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "e2e" / "tools"
# Bump when the recipe below changes in a way the hashed inputs do not show.
RECIPE_VERSION = "1"

KUBERNETES = "v1.36.3"
ETCD = "v3.6.14"
KUEUE = "v0.19.2"
JOBSET = "v0.12.0"
# kwok fakes the GPU nodes and the pods' lifecycle for the living cluster (kube-scheduler places the pods).
KWOK = "v0.8.0"
# An older Kueue, for the upgrade e2e (a stack pinned below v1beta2, then moved to KUEUE). A release below 0.16 (where
# v1beta2 becomes the default) that the Go module proxy serves (so are v0.15.1, v0.15.2, v0.16.1 and v0.17.x; v0.16.0,
# v0.18.0 and v0.20.x are not). Its own wrapper: it compiles
# against its own k8s.io modules (v0.34.2), not the cluster wrapper's.
KUEUE_OLD = "v0.15.0"
# An older JobSet, for the JobSet upgrade e2e (a stack pinned to it, then moved to JOBSET): the newest 0.11 release the
# Go module proxy serves (v0.10.1, v0.11.0 and v0.11.1 are served; v0.11.2 and v0.11.3 are not). Its own wrapper: it
# compiles against its own k8s.io modules (v0.35.0), not the cluster wrapper's.
JOBSET_OLD = "v0.11.1"
# pkg/v3@v3.272.0 is not served by the Go module proxy; v3.274.0 is the nearest served release at or above
# the Python SDK's pin (a CLI newer than the SDK is the supported direction).
PULUMI_CLI = "v3.274.0"
# provider/v4 is never tagged; the only release commit the proxy serves is v4.25.0's (f47bc2d6f199).
PULUMI_KUBERNETES = "4.25.0"
PULUMI_KUBERNETES_PSEUDO = "v4.0.0-20260115033456-f47bc2d6f199"
# A fixed build date keeps the binaries reproducible; the version strings are what clients check.
BUILD_DATE = "2026-01-01T00:00:00Z"


def _k8s_version_ldflags(version: str) -> list[str]:
    major, minor = version.lstrip("v").split(".")[:2]
    flags = []
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {pkg}.gitVersion={version}",
            f"-X {pkg}.gitMajor={major}",
            f"-X {pkg}.gitMinor={minor}",
            f"-X {pkg}.gitTreeState=clean",
            f"-X {pkg}.buildDate={BUILD_DATE}",
        ]
    return flags


@dataclasses.dataclass(frozen=True)
class Binary:
    """One ``go build`` of one main package into one file."""

    name: str
    package: str
    ldflags: tuple[str, ...] = ()
    tags: str = ""


@dataclasses.dataclass(frozen=True)
class Component:
    """A wrapper module and the binaries built from it."""

    name: str
    version: str
    binaries: tuple[Binary, ...]
    # Files copied out of a module zip next to the binaries: (module@version, path in zip, file name).
    extras: tuple[tuple[str, str, str], ...] = ()
    # The wrapper needs a generated main package (the provider's go:embed files are not in its zip).
    generate_provider: bool = False
    # Built only for `make e2e-nightly` (--nightly): the old releases only the upgrade e2e runs. Cold, on the 2-core
    # AMD EPYC machine, they took 346 s (Kueue) and 157 s (JobSet) of a build that left `.ci/run` over CI's 90 minutes.
    nightly: bool = False


COMPONENTS: tuple[Component, ...] = (
    Component(
        "etcd",
        ETCD,
        (Binary("etcd", "go.etcd.io/etcd/server/v3"),),
    ),
    Component(
        "cluster",
        f"k8s-{KUBERNETES}_kueue-{KUEUE}_jobset-{JOBSET}_kwok-{KWOK}",
        (
            Binary("kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver", tuple(_k8s_version_ldflags(KUBERNETES))),
            Binary(
                "kube-controller-manager",
                "k8s.io/kubernetes/cmd/kube-controller-manager",
                tuple(_k8s_version_ldflags(KUBERNETES)),
            ),
            Binary(
                "kube-scheduler",
                "k8s.io/kubernetes/cmd/kube-scheduler",
                tuple(_k8s_version_ldflags(KUBERNETES)),
            ),
            Binary("kubectl", "k8s.io/kubernetes/cmd/kubectl", tuple(_k8s_version_ldflags(KUBERNETES))),
            Binary(
                "kueue",
                "sigs.k8s.io/kueue/cmd/kueue",
                (f"-X sigs.k8s.io/kueue/pkg/version.GitVersion={KUEUE}",),
            ),
            Binary("jobset", "sigs.k8s.io/jobset", (f"-X sigs.k8s.io/jobset/pkg/version.GitVersion={JOBSET}",)),
            Binary("kwok", "sigs.k8s.io/kwok/cmd/kwok"),
        ),
    ),
    Component(
        "kueue-0.15",
        KUEUE_OLD,
        (
            Binary(
                f"kueue-{KUEUE_OLD}",
                "sigs.k8s.io/kueue/cmd/kueue",
                (f"-X sigs.k8s.io/kueue/pkg/version.GitVersion={KUEUE_OLD}",),
            ),
        ),
        nightly=True,
    ),
    Component(
        "jobset-0.11",
        JOBSET_OLD,
        (
            Binary(
                f"jobset-{JOBSET_OLD}",
                "sigs.k8s.io/jobset",
                (f"-X sigs.k8s.io/jobset/pkg/version.GitVersion={JOBSET_OLD}",),
            ),
        ),
        nightly=True,
    ),
    Component(
        "pulumi",
        PULUMI_CLI,
        (
            Binary(
                "pulumi",
                "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi",
                (f"-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version={PULUMI_CLI}",),
                tags="osusergo,grpcnotrace",
            ),
        ),
        # The Python dynamic provider's launcher (the readiness gate runs in it); the CLI looks for it on PATH.
        extras=(
            (
                f"github.com/pulumi/pulumi/sdk/v3@{PULUMI_CLI}",
                "python/dist/pulumi-resource-pulumi-python",
                "pulumi-resource-pulumi-python",
            ),
        ),
    ),
    Component(
        "provider",
        PULUMI_KUBERNETES,
        (
            Binary(
                "pulumi-resource-kubernetes",
                "./cmd/pulumi-resource-kubernetes",
                (f"-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version={PULUMI_KUBERNETES}",),
            ),
        ),
        generate_provider=True,
    ),
)


def cache_root() -> Path:
    """Where built binaries live: ``$AIPERF_KUEUE_CACHE`` or ``~/.cache/aiperf-kueue``."""
    return Path(os.environ.get("AIPERF_KUEUE_CACHE") or Path.home() / ".cache" / "aiperf-kueue")


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    env["CGO_ENABLED"] = "0"
    env["GOTOOLCHAIN"] = "local"
    env["GOFLAGS"] = (env.get("GOFLAGS", "") + " -trimpath -mod=mod").strip()
    return env


def _go_version() -> str:
    return subprocess.run(["go", "version"], check=True, capture_output=True, text=True).stdout.strip()


def component_key(component: Component, go_version: str) -> str:
    """Hash of everything that decides the component's bytes."""
    h = hashlib.sha256()
    wrapper = TOOLS / component.name
    for name in ("go.mod", "go.sum"):
        h.update((wrapper / name).read_bytes())
    # Which make target builds it (`nightly`) does not change its bytes: left out, so that caches stay valid.
    recipe = {k: v for k, v in dataclasses.asdict(component).items() if k != "nightly"}
    h.update(json.dumps(recipe, sort_keys=True).encode())
    h.update(go_version.encode())
    h.update(RECIPE_VERSION.encode())
    return h.hexdigest()[:12]


def component_dir(component: Component, go_version: str) -> Path:
    """The cache directory of one component's binaries at its pinned versions."""
    return cache_root() / "e2e" / f"{component.name}-{component.version}-{component_key(component, go_version)}"


def _module_dir(module_at_version: str, env: dict[str, str], cwd: Path) -> Path:
    out = subprocess.run(
        ["go", "mod", "download", "-json", module_at_version], check=True, capture_output=True, text=True, env=env,
        cwd=cwd,
    ).stdout
    return Path(json.loads(out)["Dir"])


def _prepare_provider(work: Path, env: dict[str, str]) -> None:
    """Lay out the provider's main package with the two go:embed files its `go generate` would write."""
    module = _module_dir(f"github.com/pulumi/pulumi-kubernetes/provider/v4@{PULUMI_KUBERNETES_PSEUDO}", env, work)
    src = module / "cmd" / "pulumi-resource-kubernetes"
    dst = work / "cmd" / "pulumi-resource-kubernetes"
    dst.mkdir(parents=True, exist_ok=True)
    # main.go, and helm-mapping.json in releases that embed it (v4.25.0 does not).
    for name in ("main.go", "helm-mapping.json"):
        if (src / name).exists():
            shutil.copyfile(src / name, dst / name)
    schema = json.loads((src / "schema.json").read_text())
    schema["version"] = PULUMI_KUBERNETES
    (dst / "schema-embed.json").write_text(json.dumps(schema, separators=(",", ":")))
    mapping = json.loads((src / "terraform-mapping.json").read_text())
    (dst / "terraform-mapping-embed.json").write_text(json.dumps(mapping, separators=(",", ":")))


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def build(component: Component, go_version: str) -> dict[str, object]:
    """Build one component unless its cache directory is complete; return what happened."""
    target = component_dir(component, go_version)
    stamp = target / ".complete"
    if stamp.exists():
        return {"component": component.name, "version": component.version, "dir": str(target), "built": False}
    env = _go_env()
    work = cache_root() / "e2e" / "work" / component.name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    for name in ("go.mod", "go.sum"):
        shutil.copyfile(TOOLS / component.name / name, work / name)
    started, cpu0 = time.monotonic(), _cpu_seconds()
    if component.generate_provider:
        _prepare_provider(work, env)
    bin_dir = target / "bin"
    shutil.rmtree(target, ignore_errors=True)
    bin_dir.mkdir(parents=True)
    for binary in component.binaries:
        t0 = time.monotonic()
        ldflags = " ".join(("-s", "-w", *binary.ldflags))
        cmd = ["go", "build", "-ldflags", ldflags, "-o", str(bin_dir / binary.name)]
        if binary.tags:
            cmd += ["-tags", binary.tags]
        cmd.append(binary.package)
        print(f"  go build {binary.package} -> {binary.name}", flush=True)
        subprocess.run(cmd, check=True, cwd=work, env=env)
        print(f"    {binary.name}: {time.monotonic() - t0:.0f} s", flush=True)
    for module, path, name in component.extras:
        dest = bin_dir / name
        shutil.copyfile(_module_dir(module, env, work) / path, dest)
        dest.chmod(0o755)
    record = {
        "component": component.name,
        "version": component.version,
        "dir": str(target),
        "built": True,
        "wall_s": round(time.monotonic() - started, 1),
        "cpu_s": round(_cpu_seconds() - cpu0, 1),
    }
    stamp.write_text(json.dumps(record, indent=2) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    return record


#: Go modules whose files the e2e suite reads at run time (kwok's Stages, the charts and CRDs of every Kueue and JobSet
#: release it runs), from the module cache. The suite runs in ``e2e/sandbox.sh``, without network: a module the
#: builds above downloaded inside their wrapper (its ``go.sum`` vouches for it) still needs the checksum database
#: the first time it is asked for on its own, as ``go mod download MODULE@VERSION`` asks outside a module. So each
#: is asked for here, outside the sandbox (on a fresh machine, kwok's was the first the suite missed).
MODULES_READ = (
    f"sigs.k8s.io/kwok@{KWOK}",
    f"sigs.k8s.io/kueue@{KUEUE}",
    f"sigs.k8s.io/jobset@{JOBSET}",
    f"sigs.k8s.io/kueue@{KUEUE_OLD}",
    f"sigs.k8s.io/jobset@{JOBSET_OLD}",
)


def download_modules(modules: tuple[str, ...] = MODULES_READ) -> dict[str, str]:
    """``go mod download`` each of ``modules`` (a no-op once cached and vouched for); module → its directory."""
    dirs = {}
    for module in modules:
        try:
            found = _module_dir(module, dict(os.environ), Path("/"))
        except subprocess.CalledProcessError as exc:
            # With -json, go reports the failure in the JSON it prints, not on stderr.
            try:
                reason = json.loads(exc.stdout or "{}").get("Error")
            except ValueError:
                reason = None
            reason = " ".join((reason or exc.stderr).split())  # one line
            raise SystemExit(f"e2e build: go mod download {module} failed: {reason}") from None
        dirs[module] = str(found)
        print(f"e2e build: module {module}: {found}", flush=True)
    return dirs


def main(argv: list[str] | None = None) -> int:
    """Build what is missing; download the modules the suite reads; print the per-component and total times; write
    the binaries manifest."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=[c.name for c in COMPONENTS])
    parser.add_argument("--manifest", type=Path, help="write {binary name: path} and the build record as JSON")
    parser.add_argument(
        "--nightly", action="store_true", help="also the old releases the upgrade e2e runs (make e2e-nightly)"
    )
    args = parser.parse_args(argv)
    go_version = _go_version()
    wanted = [
        c for c in COMPONENTS if (c.name in args.only if args.only else args.nightly or not c.nightly)
    ]
    started = time.monotonic()
    records = []
    binaries: dict[str, str] = {}
    for component in wanted:
        print(f"e2e build: {component.name} {component.version}", flush=True)
        record = build(component, go_version)
        records.append(record)
        note = f"built in {record['wall_s']} s wall, {record['cpu_s']} CPU-s" if record["built"] else "cached"
        print(f"e2e build: {component.name} {component.version}: {note} ({record['dir']})", flush=True)
        for path in sorted((Path(str(record["dir"])) / "bin").iterdir()):
            binaries[path.name] = str(path)
    modules = download_modules()
    total = time.monotonic() - started
    built = [r for r in records if r["built"]]
    print(f"e2e build: {len(built)} of {len(records)} components built, {total:.0f} s in all", flush=True)
    if args.manifest:
        args.manifest.parent.mkdir(parents=True, exist_ok=True)
        manifest = {
            "go": go_version,
            "binaries": binaries,
            "modules": modules,
            "components": records,
            "total_s": round(total, 1),
        }
        args.manifest.write_text(json.dumps(manifest, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
