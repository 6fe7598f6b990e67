"""Read this stack's config from the Pulumi engine and plan it, or stop cleanly."""

from __future__ import annotations

from pathlib import Path

import pulumi
from pulumi.runtime import config as runtime_config

from aiperf_kueue.errors import ConfigError
from aiperf_kueue.loader import decode_engine_config
from aiperf_kueue.stack_plan import StackPlan, plan_values

#: Where Pulumi.yaml is: relative chart paths start here, under ``pulumi up`` and ``plan`` alike.
PROJECT_DIR = Path(__file__).resolve().parent.parent


def load() -> StackPlan:
    """Validate and plan; a config problem ends the run with one line per problem.

    ``pulumi.RunError`` makes the engine print the message without a traceback.
    """
    source = f"stacks/Pulumi.{pulumi.get_stack()}.yaml"
    raw = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    try:
        return plan_values(decode_engine_config(raw), source, PROJECT_DIR)
    except ConfigError as exc:
        raise pulumi.RunError("invalid stack config:\n" + "\n".join(exc.lines())) from None
