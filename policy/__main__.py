"""Serve the aiperf-kueue policy pack to the Pulumi CLI (``pulumi preview --policy-pack policy``).

The only place that constructs the ``PolicyPack``: constructing it starts the analyzer's
gRPC server and blocks until the CLI is done, so tests import ``aiperf_kueue.policies`` instead.
The policies live in the project's package; this directory is only the pack's root.
"""

import sys
from pathlib import Path

# The repository root, where the aiperf_kueue package is: the CLI runs the pack from its own
# virtualenv (policy/venv), which does not have the project installed.
REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402 - after the path set-up

from aiperf_kueue.policies import POLICIES  # noqa: E402

PolicyPack(
    name="aiperf-kueue",
    enforcement_level=EnforcementLevel.MANDATORY,
    policies=POLICIES,
)
