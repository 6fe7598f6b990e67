"""Run ``__main__.py`` exactly as ``pulumi up`` would, but against a recording mock engine.

No CLI, no provider plugin, no cluster: every registration the program makes is
recorded with its options, and nothing else differs from a real run.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import runpy
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import mocks, rpc, settings
from pulumi.runtime.config import set_all_config

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "__main__.py"
PROJECT = "aiperf-kueue"
SECRET_SIG = rpc._special_sig_key


class _Recorder(mocks.Mocks):
    """Answers every registration with its inputs as outputs, as a provider would on create."""

    def __init__(self) -> None:
        self.resources: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def new_resource(self, args: mocks.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: mocks.MockCallArgs) -> dict[str, Any]:
        return {}


class _RecordingMonitor(mocks.MockMonitor):
    """Keeps the whole registration request: parent, dependencies and options too."""

    def __init__(self, recorder: _Recorder) -> None:
        super().__init__(recorder)
        self.recorder = recorder

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            record = {
                "type": request.type,
                "name": request.name,
                "urn": response.urn,
                "custom": request.custom,
                "parent": request.parent,
                "dependsOn": sorted(request.dependencies),
                "protect": bool(request.protect),
                "retainOnDelete": bool(request.retainOnDelete),
                "deleteBeforeReplace": bool(request.deleteBeforeReplace),
                "replaceOnChanges": list(request.replaceOnChanges),
                "inputs": rpc.deserialize_properties(request.object, keep_unknowns=True),
            }
            with self.recorder.lock:
                self.recorder.resources.append(record)
        return response


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@dataclass
class ProgramRun:
    """What one run of the program registered, exported and warned about."""

    resources: list[dict[str, Any]]
    outputs: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def run_program(
    stack: str,
    config: dict[str, Any],
    secret_keys: set[str] | None = None,
    program: Path = PROGRAM,
) -> ProgramRun:
    """Run ``program`` for ``stack`` with ``config`` (key without prefix → value).

    Values are handed over as the engine does: strings, objects as JSON.
    """
    import json

    engine_config = {f"{PROJECT}:{k}": v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}
    recorder = _Recorder()
    handler = _Warnings()
    logger = logging.getLogger(f"aiperf-kueue.offline.{id(handler)}")
    logger.propagate = False
    logger.addHandler(handler)
    settings.ROOT.set(None)
    set_all_config(engine_config, [f"{PROJECT}:{k}" for k in secret_keys or ()])
    mocks.set_mocks(
        recorder, project=PROJECT, stack=stack, preview=False, logger=logger, monitor=_RecordingMonitor(recorder)
    )
    outputs: dict[str, Any] = {}
    root = str(program.parent)
    if root not in sys.path:
        sys.path.insert(0, root)

    @mocks.test
    def _run() -> Any:
        runpy.run_path(str(program), run_name="__main__")
        stack_resource = settings.get_root_resource()
        exported = getattr(stack_resource, "outputs", {})
        keys = list(exported)
        return pulumi.Output.all(*[exported[k] for k in keys]).apply(
            lambda values: outputs.update(zip(keys, values, strict=True))
        )

    try:
        _run()
    finally:
        logger.removeHandler(handler)
    with recorder.lock:
        resources = sorted(recorder.resources, key=lambda r: r["urn"])
    return ProgramRun(resources=resources, outputs=outputs, warnings=handler.messages)


def close_worker_loops() -> None:
    """Close the event loops the mock monitor's worker threads leave open, or the interpreter
    may print ``Invalid file descriptor`` noise at exit (pulumi NOTES §14). Call once, at the
    end of the process: the worker threads reuse their loops for the next program run."""
    try:
        main_loop = asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:
        main_loop = None
    for obj in gc.get_objects():
        if obj is main_loop:
            continue  # the SDK runs the next program on it
        if isinstance(obj, asyncio.AbstractEventLoop) and not obj.is_running() and not obj.is_closed():
            with contextlib.suppress(Exception):  # best effort at shutdown
                obj.close()
