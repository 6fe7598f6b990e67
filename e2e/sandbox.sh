#!/usr/bin/env bash
# Run a command in the e2e sandbox: a fresh network namespace with only loopback (nothing can dial a Service
# cluster IP or any non-loopback address), a private mount namespace whose /etc is an overlay (Kueue writes
# its metrics certificates to a hard-coded /etc/kueue path; the host's /etc is never touched), and a PID namespace
# of its own. The namespaces vanish with the command, and so does every process started in it: this script is the
# PID namespace's init, and when it exits (or unshare is killed: --kill-child) the kernel kills everything left
# inside, so an interrupted or killed run leaves no etcd, API server or controller behind.
# Needs root (or CAP_SYS_ADMIN), `unshare` and `ip`.
set -euo pipefail
if [ -z "${_AIPERF_KUEUE_E2E_INSIDE:-}" ]; then
  _AIPERF_KUEUE_E2E_INSIDE=1 exec unshare --net --mount --propagation private --pid --mount-proc --fork --kill-child -- "$0" "$@"
fi
ip link set lo up
# getaddrinfo(AI_ADDRCONFIG), which aiohttp uses, answers no IPv4 name while the only IPv4 address is 127.0.0.1.
# A second address on lo, from TEST-NET-1 (RFC 5737), satisfies it. It is local: there is still no route, so every
# non-loopback destination stays unreachable ("Network is unreachable").
ip addr add 192.0.2.1/32 dev lo
# The Service cluster IP ranges (each cluster's --service-cluster-ip-range, a 10.0.N.0/24) are local too: when the API
# server calls a Service-backed webhook or APIService of a chart the program installed, it dials that Service's
# cluster IP, which lands on loopback here, where the harness runs the controller bound to it. Nothing leaves the
# namespace.
ip addr add 10.0.0.0/16 dev lo
# kwok's fake pod and node IPs (tests/e2e/living.py, TEST-NET-2 of RFC 5737) are local as well: a dial to a fake
# pod is refused on loopback.
ip addr add 198.51.100.0/24 dev lo
scratch=$(mktemp -d /tmp/aiperf-kueue-e2e-etc.XXXXXX)
mount -t tmpfs tmpfs "$scratch"
mkdir "$scratch/upper" "$scratch/work"
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$scratch/upper,workdir=$scratch/work" /etc
# JobSet's internal cert management waits for its serving certificate under this fixed directory
# (sigs.k8s.io/jobset pkg/util/cert); a private tmpfs keeps it out of the host's /tmp.
mkdir -p /tmp/k8s-webhook-server
mount -t tmpfs tmpfs /tmp/k8s-webhook-server
export AIPERF_KUEUE_E2E_SANDBOX=1
unset _AIPERF_KUEUE_E2E_INSIDE
status=0
# A TERM or HUP to this init ends the command's whole process tree first (a PID namespace's init ignores signals it
# has no handler for, so without this trap they would do nothing).
trap 'kill -TERM -- "$child" 2>/dev/null; wait "$child"' TERM HUP INT
"$@" &
child=$!
wait "$child" || status=$?
umount /tmp/k8s-webhook-server || true
umount /etc || true
umount "$scratch" || true
rmdir "$scratch" || true
exit "$status"
