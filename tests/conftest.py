"""Collection rules shared by every test directory."""

import os

# The e2e suite needs the local real cluster and the binaries `make e2e` builds; only `make e2e` collects it.
collect_ignore = [] if os.environ.get("AIPERF_KUEUE_E2E") == "1" else ["e2e"]
