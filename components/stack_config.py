"""Read this stack's config from the Pulumi engine and plan it, or stop cleanly."""

from __future__ import annotations

from pathlib import Path

import pulumi
from pulumi.runtime import config as runtime_config

from aiperf_kueue.errors import ConfigError
from aiperf_kueue.loader import decode_engine_config, parse_config
from aiperf_kueue.stack_plan import StackPlan, plan_stack

#: Where Pulumi.yaml is: relative chart paths start here, under ``pulumi up`` and ``plan`` alike.
PROJECT_DIR = Path(__file__).resolve().parent.parent


def load() -> StackPlan:
    """Validate and plan; a config problem ends the run with one line per problem.

    ``pulumi.RunError`` makes the engine print the message without a traceback.
    """
    source = f"stacks/Pulumi.{pulumi.get_stack()}.yaml"
    raw = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    try:
        config = parse_config(decode_engine_config(raw), source)
        return plan_stack(config, source, PROJECT_DIR)
    except ConfigError as exc:
        raise pulumi.RunError("invalid stack config:\n" + "\n".join(exc.lines())) from None
