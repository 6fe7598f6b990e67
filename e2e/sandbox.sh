#!/usr/bin/env bash
# Run a command in the e2e sandbox: a fresh network namespace with only loopback (nothing can dial a Service
# cluster IP or any non-loopback address) and a private mount namespace whose /etc is an overlay (Kueue writes
# its metrics certificates to a hard-coded /etc/kueue path; the host's /etc is never touched). Both namespaces
# vanish with the command. Needs root (or CAP_SYS_ADMIN), `unshare` and `ip`.
set -euo pipefail
if [ -z "${_AIPERF_KUEUE_E2E_INSIDE:-}" ]; then
  _AIPERF_KUEUE_E2E_INSIDE=1 exec unshare --net --mount --propagation private --fork -- "$0" "$@"
fi
ip link set lo up
scratch=$(mktemp -d /tmp/aiperf-kueue-e2e-etc.XXXXXX)
mount -t tmpfs tmpfs "$scratch"
mkdir "$scratch/upper" "$scratch/work"
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$scratch/upper,workdir=$scratch/work" /etc
export AIPERF_KUEUE_E2E_SANDBOX=1
unset _AIPERF_KUEUE_E2E_INSIDE
status=0
"$@" || status=$?
umount /etc || true
umount "$scratch" || true
rmdir "$scratch" || true
exit "$status"
