"""``python -m tests.e2e.hold_cluster MANIFEST WORKDIR [STACK]``: start a living cluster and hold it until killed.

The harness in miniature, for :mod:`tests.e2e.test_interrupt`: a control plane, kube-scheduler and kwok (with
``STACK``'s fleet when given), started the way the suite starts them and with the suite's trap installed. It writes
``WORKDIR/ready`` once everything serves, then sleeps; the test kills it and checks nothing it started is left.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tests.e2e.cluster import LocalCluster, install_trap
from tests.e2e.living import APISERVER_ARGS, start_living, sync_fleet

KUEUE_MODULE = "sigs.k8s.io/kueue@v0.19.2"
JOBSET_MODULE = "sigs.k8s.io/jobset@v0.12.0"


def main(argv: list[str]) -> int:
    """Start, write ``ready``, sleep (at most an hour)."""
    manifest, workdir = Path(argv[0]), Path(argv[1])
    install_trap()
    binaries = json.loads(manifest.read_text())["binaries"]
    cluster = LocalCluster(binaries, workdir, kueue_module=KUEUE_MODULE, jobset_module=JOBSET_MODULE)
    cluster.apiserver_args = list(APISERVER_ARGS)
    cluster.start(controllers=False)
    start_living(cluster)
    if len(argv) > 2:
        sync_fleet(cluster, Path(argv[2]))
    (workdir / "ready").write_text(json.dumps({name: p.popen.pid for name, p in cluster.processes.items()}))
    time.sleep(3600)
    cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
