#!/usr/bin/env bash
# The emulated cluster of `scripts/bench network`: N "hosts", each a network
# namespace of its own (rmbench-h1 .. rmbench-hN, addresses 10.213.0.1 ..
# 10.213.0.N/24), joined to one bridge (rmbench0, 10.213.0.254/24 on the
# host side: Open MPI's launcher reaches its daemons there) by a veth pair,
# every host's link shaped in both directions with tc tbf (egress of the
# host-side end: traffic to the host; egress of the namespace-side end:
# traffic from it).
#
#   bench/network/topo.sh up N RATE [BURST]   (RATE, BURST: tc units, e.g. 1gbit 128kb)
#   bench/network/topo.sh down                 removes all of it, also a stale
#                                              leftover of a killed run; kills
#                                              what still runs in those namespaces
#   bench/network/topo.sh show                 namespaces, links, qdiscs of ours
#
# Nothing else is touched: only names starting with rmbench (namespaces,
# links) and 10.213.0.0/24, a range this machine does not use (`up` checks).
set -euo pipefail
PREFIX=rmbench-h BRIDGE=rmbench0 VETH=rmbench-v NET=10.213.0 HOSTIP=254
# `ip netns add` makes /run/netns a mount point the first time; when that was
# our doing (this marker says so), `down` undoes it once no namespace is left.
MOUNT_MARKER=/run/rmbench-made-netns-mount

down() {
  local ns pid
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$PREFIX" || true); do
    for pid in $(ip netns pids "$ns" 2>/dev/null || true); do kill -KILL "$pid" 2>/dev/null || true; done
  done
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$PREFIX" || true); do
    ip netns delete "$ns" 2>/dev/null || true
  done
  local link
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep "^$VETH" || true); do
    ip link delete "$link" 2>/dev/null || true
  done
  ip link show "$BRIDGE" >/dev/null 2>&1 && ip link delete "$BRIDGE" || true
  if [ -e "$MOUNT_MARKER" ] && [ -z "$(ls -A /run/netns 2>/dev/null)" ]; then
    if ! mountpoint -q /run/netns || umount /run/netns 2>/dev/null; then
      rmdir /run/netns 2>/dev/null || true
      rm -f "$MOUNT_MARKER"
    fi
  fi
}

up() {
  local n=$1 rate=$2 burst=${3:-128kb}
  [ "$n" -ge 1 ] && [ "$n" -le 64 ] || { echo "topo: N must be 1..64" >&2; exit 2; }
  # The range must be ours alone: no address or route of this machine in it.
  if ip -o addr show | grep -v " $BRIDGE " | grep -q " $NET\." || ip route | grep -v " dev $BRIDGE " | grep -q "^$NET\."; then
    echo "topo: $NET.0/24 is in use on this machine; not touching it" >&2
    exit 1
  fi
  down
  mountpoint -q /run/netns || touch "$MOUNT_MARKER"
  ip link add "$BRIDGE" type bridge
  ip addr add "$NET.$HOSTIP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  local i ns
  for i in $(seq 1 "$n"); do
    ns=$PREFIX$i
    ip netns add "$ns"
    ip link add "$VETH$i" type veth peer name eth0 netns "$ns"
    ip link set "$VETH$i" master "$BRIDGE"
    ip link set "$VETH$i" up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$NET.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    # Both directions at RATE; the queue holds ~20 ms at RATE beyond the burst.
    tc qdisc replace dev "$VETH$i" root tbf rate "$rate" burst "$burst" latency 20ms
    ip netns exec "$ns" tc qdisc replace dev eth0 root tbf rate "$rate" burst "$burst" latency 20ms
  done
}

show() {
  echo "namespaces:"; ip netns list | grep "^$PREFIX" || true
  echo "links:"; ip -o link show | awk -F': ' '{print $2}' | grep -E "^($VETH|$BRIDGE)" || true
  echo "qdiscs:"; tc qdisc show | grep -E "dev ($VETH|$BRIDGE)" || true
}

case "${1:-}" in
  up) shift; up "$@" ;;
  down) down ;;
  show) show ;;
  *) sed -n '2,19p' "$0"; exit 2 ;;
esac
