# scripts/testbed.d/node-clean.sh: what the real node changes on the
# machine, recorded at up (node_save_machine, in $NODE_DIR/machine.saved)
# and put back at down (node_net_down): the processes of its pods, mounts,
# network namespaces, cgroups, iptables chains, sysctls, the bridge and its
# veths, and the fixed paths the kubelet, containerd and CNI write.

# Sysctls the kubelet, kube-proxy or the CNI bridge may set.
NODE_SYSCTLS=(vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops
  kernel/keys/root_maxkeys kernel/keys/root_maxbytes net/ipv4/ip_forward
  net/ipv4/conf/all/forwarding net/ipv4/conf/default/forwarding net/ipv6/conf/all/forwarding
  net/ipv4/conf/all/route_localnet net/bridge/bridge-nf-call-iptables
  net/bridge/bridge-nf-call-ip6tables net/netfilter/nf_conntrack_max
  net/netfilter/nf_conntrack_tcp_timeout_established
  net/netfilter/nf_conntrack_tcp_timeout_close_wait)
# Fixed paths the kubelet writes whatever its configuration (one kubelet per
# machine): removed at down if up did not find them.
NODE_KUBELET_PATHS=(/var/lib/kubelet /var/log/containers /var/log/pods)
# Fixed paths containerd and CNI write, which other tools on the machine
# share: down removes our entries, then what is left empty if up did not
# find it.
NODE_SHARED_PATHS=(/var/lib/cni /run/containerd /run/netns /opt/containerd /var/lib/containerd
  /etc/cni /opt/cni)
NODE_IPTABLES=(iptables ip6tables)

node_chains() {  # the KUBE-* and CNI-* chains of every table, as "CMD TABLE CHAIN"
  local cmd table
  for cmd in "${NODE_IPTABLES[@]}"; do
    command -v "$cmd" >/dev/null || continue
    for table in filter nat mangle raw; do
      "$cmd" -t "$table" -S 2>/dev/null | awk -v c="$cmd" -v t="$table" \
        '$1 == "-N" && $2 ~ /^(KUBE|CNI)-/ { print c, t, $2 }'
    done
  done
}

node_save_machine() {
  local s p
  {
    for s in "${NODE_SYSCTLS[@]}"; do
      [ -r "/proc/sys/$s" ] && echo "sysctl $s $(<"/proc/sys/$s")"
    done
    for p in "${NODE_KUBELET_PATHS[@]}" "${NODE_SHARED_PATHS[@]}"; do [ -e "$p" ] && echo "path $p"; done
    for p in /run/netns/*; do [ -e "$p" ] && echo "netns $p"; done
    for p in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/*/k8s.io; do [ -d "$p" ] && echo "cgroup $p"; done
    node_chains | sed 's/^/chain /'
  } >"$NODE_DIR/machine.saved.tmp"
  mv "$NODE_DIR/machine.saved.tmp" "$NODE_DIR/machine.saved"
}

saved() { grep -qxF "$1" "$NODE_DIR/machine.saved" 2>/dev/null; }

# node_cgroups: the cgroups of the node's containers that up did not find:
# the kubelet's (kubepods) and those containerd makes for containers started
# outside the kubelet (named after its namespace, k8s.io).
node_cgroups() {
  local c
  for c in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/*/k8s.io; do
    if [ -d "$c" ] && ! saved "cgroup $c"; then echo "$c"; fi
  done
}

# node_kill_pods: every process in the kubelet's cgroups (a container whose
# shim was killed, say), until none is left.
node_kill_pods() {
  local i pids cgroups
  cgroups=$(node_cgroups | grep '/kubepods$') || return 0
  for i in 1 2 3 4 5 6 7 8 9 10; do
    # shellcheck disable=SC2086
    pids=$(find $cgroups -name cgroup.procs -exec cat {} + 2>/dev/null | sort -un) || true
    [ -n "$pids" ] || return 0
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.2
  done
  log "down: processes left in the kubepods cgroups: $pids"
}

# node_unmount: every mount under the run directory and the network
# namespaces containerd made, deepest first; lazily if still busy.
node_unmount() {
  local m
  for m in $(awk '{ print $5 }' /proc/self/mountinfo | sort -r); do
    m=$(printf '%b' "$m")
    case $m in
      "$RUN_DIR"/*) ;;
      /run/netns/cni-*) saved "netns $m" && continue ;;
      *) continue ;;
    esac
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "down: cannot unmount $m"
  done
  for m in /run/netns/cni-*; do
    if [ -e "$m" ] && ! saved "netns $m"; then rm -f "$m"; fi
  done
}

# One process, not awk | grep -q: under pipefail an early match would be a
# SIGPIPE'd awk, and so "no mounts left".
node_mounts_left() { awk -v d="$RUN_DIR/" 'index($5, d) == 1 { n++ } END { exit n == 0 }' /proc/self/mountinfo; }

chain_is_new() { grep -qxF "$1" "$NODE_DIR/chains.new"; }

# node_iptables_clean: remove the rules of other chains that jump to the
# chains up did not find, then those chains.
node_iptables_clean() {
  local cmd table chain line target
  node_chains | while read -r cmd table chain; do
    saved "chain $cmd $table $chain" || echo "$cmd $table $chain"
  done >"$NODE_DIR/chains.new"
  awk '{ print $1, $2 }' "$NODE_DIR/chains.new" | sort -u | while read -r cmd table; do
    { "$cmd" -t "$table" -S 2>/dev/null | grep -- '^-A .* -j ' || true; } | while read -r line; do
      chain=${line#-A }; chain=${chain%% *}
      target=${line##* -j }; target=${target%% *}
      chain_is_new "$cmd $table $chain" || ! chain_is_new "$cmd $table $target" ||
        eval "$cmd -t $table -D ${line#-A }" || true
    done
  done
  while read -r cmd table chain; do "$cmd" -t "$table" -F "$chain" || true; done <"$NODE_DIR/chains.new"
  while read -r cmd table chain; do "$cmd" -t "$table" -X "$chain" || true; done <"$NODE_DIR/chains.new"
  # The node's connections leave the conntrack table too.
  conntrack -D -s "$NODE_SUBNET" >/dev/null 2>&1 || true
  conntrack -D -d "$NODE_SUBNET" >/dev/null 2>&1 || true
}

node_restore_sysctls() {
  local s v
  grep '^sysctl ' "$NODE_DIR/machine.saved" | while read -r _ s v; do
    [ "$(cat "/proc/sys/$s" 2>/dev/null)" = "$v" ] || echo "$v" >"/proc/sys/$s" ||
      log "down: cannot restore $s to $v"
  done
  return 0
}

# node_dead_sockets DIR: the socket files under DIR that nothing listens on
# (a killed shim's, say), whoever made them.
node_dead_sockets() {
  local f
  [ -d "$1" ] || return 0
  find "$1" -type s | while read -r f; do
    awk -v f="$f" '$NF == f { found = 1 } END { exit !found }' /proc/net/unix || echo "$f"
  done
}

node_remove_paths() {
  local p c
  for c in $(node_cgroups); do
    find "$c" -depth -type d -exec rmdir {} + 2>/dev/null || log "down: cannot remove the cgroup $c"
  done
  for p in "${NODE_KUBELET_PATHS[@]}"; do
    saved "path $p" || rm -rf --one-file-system "$p"
  done
  find /var/log/containers -maxdepth 1 -lname "$NODE_DIR/*" -delete 2>/dev/null || true
  # Ours in the shared ones: the CNI results of our sandboxes (named by
  # their ids), dead shim sockets (the network namespaces went in
  # node_unmount).
  local d id
  for d in "$NODE_DIR"/containerd/{root,state}/io.containerd.grpc.v1.cri/sandboxes/*; do
    id=${d##*/}
    if [ -d "$d" ] && [[ "$id" =~ ^[0-9a-f]{64}$ ]]; then rm -f /var/lib/cni/results/*-"$id"-*; fi
  done
  node_dead_sockets /run/containerd | xargs -r rm -f -- || true
  for p in "${NODE_SHARED_PATHS[@]}"; do
    if [ -d "$p" ] && ! saved "path $p"; then find "$p" -depth -type d -empty -delete 2>/dev/null || true; fi
    if [ -e "$p" ] && ! saved "path $p"; then log "down: $p was not there before up; left as it is (not empty, or in use)"; fi
  done
  return 0
}

node_remove_bridge() {
  local v
  for v in $(ls "/sys/class/net/$NODE_BRIDGE/brif" 2>/dev/null); do ip link del "$v" 2>/dev/null || true; done
  if [ "$(cat "/sys/class/net/$NODE_BRIDGE/ifalias" 2>/dev/null)" = "ringmaster-testbed $RUN_DIR" ]; then
    ip link del "$NODE_BRIDGE"
  fi
}

# node_net_down: after the node's processes and the API server are gone.
# Each step does what it can (one that fails does not stop the others).
node_net_down() {
  [ -f "$NODE_DIR/machine.saved" ] || return 0
  local step
  for step in node_kill_pods node_kill_shims node_unmount node_iptables_clean \
              node_restore_sysctls node_remove_bridge node_remove_paths; do
    "$step" || log "down: $step did not finish"
  done
  if node_mounts_left; then
    die "down: mounts are left under $RUN_DIR (see /proc/self/mountinfo); not removing it"
  fi
}
