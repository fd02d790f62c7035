#!/bin/sh
# Open MPI's remote launcher for `scripts/bench network` (mpirun --mca
# plm_rsh_agent): "ssh HOST COMMAND" for the emulated hosts. HOST is a
# host's address, 10.213.0.I, and the command runs inside its namespace
# rmbench-hI, under a hostname of its own (a UTS namespace: rmbench-hI) as on
# a cluster, through sh as ssh would run it. With RMBENCH_PIN set, on CPU
# I-1 (mod the CPUs here) like the other peers' processes of that host.
[ -n "${RMBENCH_RSH_LOG:-}" ] && echo "$*" >> "$RMBENCH_RSH_LOG"
host=$1
shift
case "$host" in
  10.213.0.*) i=${host##*.} ;;
  rmbench-h*) i=${host#rmbench-h} ;;
  *) echo "netns-rsh: not one of the bench's hosts: $host" >&2; exit 255 ;;
esac
pin=
[ -n "${RMBENCH_PIN:-}" ] && pin="taskset -c $(( (i - 1) % $(nproc --all) ))"
exec ip netns exec "rmbench-h$i" $pin unshare --uts sh -c "hostname rmbench-h$i && exec sh -c \"\$0\"" "$*"
