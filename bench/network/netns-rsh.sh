#!/bin/sh
# Open MPI's remote launcher for `scripts/bench network` (mpirun --mca
# plm_rsh_agent): "ssh HOST COMMAND" for the emulated hosts. HOST is a
# host's address, 10.213.0.I, and the command runs inside its namespace
# rmbench-hI, under a hostname of its own (a UTS namespace: rmbench-hI) as on
# a cluster, through sh as ssh would run it; that hostname resolves to the
# host's address there (a private /etc/hosts: Horovod's Gloo advertises its
# hostname's address, 127.0.0.1 for the machine's). With RMBENCH_PIN set, on
# CPU I-1 (mod the CPUs here) like the other peers' processes of that host.
# Also horovodrun's "ssh" in scripts/bench keras-shaped.
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
hosts=${TMPDIR:-/tmp}/rmbench-hosts-$i
printf '127.0.0.1 localhost\n10.213.0.%s rmbench-h%s\n' "$i" "$i" > "$hosts"
exec ip netns exec "rmbench-h$i" $pin unshare --uts --mount sh -c \
  "mount --bind '$hosts' /etc/hosts && hostname rmbench-h$i && exec sh -c \"\$0\"" "$*"
