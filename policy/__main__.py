"""Serve the aiperf-kueue policy pack to the Pulumi CLI (``pulumi preview --policy-pack policy``).

The only place that constructs the ``PolicyPack``: constructing it starts the analyzer's
gRPC server and blocks until the CLI is done, so tests import ``policy.policies`` instead.
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The pack's own modules, and the repository's pure ``aiperf_kueue`` package beside it.
for path in (HERE, HERE.parent):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from policies import POLICIES  # noqa: E402 - after the path set-up
from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402

PolicyPack(
    name="aiperf-kueue",
    enforcement_level=EnforcementLevel.MANDATORY,
    policies=POLICIES,
)
