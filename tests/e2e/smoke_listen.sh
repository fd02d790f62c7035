#!/usr/bin/env bash
# Every process of the testbed listens on 127.0.0.1 only, or on the real
# node's bridge address (RINGMASTER_NODE_IP: the API server, the kubelet,
# CoreDNS), never on the machine's other addresses (read from /proc, so no
# tool beyond bash is needed).
. "$(dirname "$0")/lib.sh"

dir=${RINGMASTER_TESTBED_DIR:?RINGMASTER_TESTBED_DIR is not set}
# The bridge address as /proc/net/tcp writes it (little-endian hex).
bridge=none
if [ -n "${RINGMASTER_NODE_IP:-}" ]; then
  IFS=. read -r a b c d <<<"$RINGMASTER_NODE_IP"
  bridge=$(printf '%02X%02X%02X%02X' "$d" "$c" "$b" "$a")
fi
[ -d "$dir/pids" ] || fail "no pid records in $dir/pids"

# Listening TCP sockets: inode -> local address (hex), from /proc/net/tcp{,6}.
declare -A listen_addr
while read -r _ local _ st _ _ _ _ _ inode _; do
  [ "$st" = 0A ] && listen_addr[$inode]=$local
done < <(cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | grep -v local_address)

checked=0
for f in "$dir"/pids/*; do
  name=$(basename "$f"); read -r pid _ <"$f"
  [ -d "/proc/$pid" ] || fail "$name (pid $pid) is not running"
  for fd in /proc/"$pid"/fd/*; do
    target=$(readlink "$fd" 2>/dev/null) || continue
    [[ "$target" =~ ^socket:\[([0-9]+)\]$ ]] || continue
    inode=${BASH_REMATCH[1]}
    addr=${listen_addr[$inode]:-}
    [ -n "$addr" ] || continue
    ip=${addr%:*}; port=$((16#${addr#*:}))
    case $ip in
      0100007F) ;;                                   # 127.0.0.1
      0000000000000000FFFF00000100007F) ;;           # ::ffff:127.0.0.1
      "$bridge"|"0000000000000000FFFF0000$bridge") ;;  # the bridge
      *) fail "$name (pid $pid) listens on a non-loopback address: $ip port $port" ;;
    esac
    checked=$((checked + 1))
  done
done
[ "$checked" -ge 5 ] || fail "found only $checked listening sockets of the testbed; expected at least 5"
pass "$checked listening sockets, all on 127.0.0.1${RINGMASTER_NODE_IP:+ or $RINGMASTER_NODE_IP}"
