# scripts/testbed.d/containerd.sh: the real node's container runtime:
# Debian's containerd and runc (scripts/setup installs them) with the CNI
# bridge plugin on the node's bridge, configured from node/containerd.toml
# and node/cni.conflist; its root and state in the run directory. The local
# images (pause.sh) are imported at up: namespace k8s.io, what the kubelet
# sees. Pods must not pull (imagePullPolicy Never or IfNotPresent).

CNI_BIN_DIR=/usr/lib/cni

node_ctr() { ctr --address "$CONTAINERD_SOCK" --namespace k8s.io "$@"; }
containerd_ok() { node_ctr version; }

containerd_up() {
  local t pdir
  for t in containerd containerd-shim-runc-v2 runc ctr iptables ip; do
    command -v "$t" >/dev/null || die "'$t' is missing (scripts/setup installs it)"
  done
  [ -x "$CNI_BIN_DIR/bridge" ] && [ -x "$CNI_BIN_DIR/host-local" ] && [ -x "$CNI_BIN_DIR/loopback" ] ||
    die "the CNI plugins are missing in $CNI_BIN_DIR (scripts/setup installs containernetworking-plugins)"
  pdir=$(component_dir pause)
  . "$pdir/images.env"
  mkdir -p "$NODE_DIR/cni/net.d" "$NODE_DIR/containerd"
  node_render containerd.toml >"$NODE_DIR/containerd.toml"
  node_render cni.conflist >"$NODE_DIR/cni/net.d/10-ringmaster.conflist"
  start containerd containerd --config "$NODE_DIR/containerd.toml" --log-level warn
  wait_until containerd 30 containerd_ok
  for t in pause busybox; do
    node_ctr images import --digests "$pdir/$t.tar" >>"$RUN_DIR/logs/containerd.log" 2>&1 ||
      fail_with_log containerd "could not import $pdir/$t.tar into containerd"
  done
}

# containerd_down: kill and remove every container still there (the kubelet
# has stopped those of deleted pods), then containerd; then any shim of
# ours still alive (they outlive containerd by design).
containerd_down() {
  local id
  if is_ours containerd; then
    for id in $(node_ctr tasks ls -q 2>/dev/null); do
      node_ctr tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true
    done
    for id in $(node_ctr tasks ls -q 2>/dev/null); do
      node_ctr tasks delete -f "$id" >/dev/null 2>&1 || true
    done
    for id in $(node_ctr containers ls -q 2>/dev/null); do
      node_ctr containers delete "$id" >/dev/null 2>&1 || true
    done
  fi
  stop containerd
  node_kill_shims
}

# node_kill_shims: the containerd-shim processes started for our socket.
node_kill_shims() {
  local p cmd pids=()
  for p in /proc/[0-9]*; do
    { cmd=$(tr '\0' ' ' <"$p/cmdline"); } 2>/dev/null || continue
    case $cmd in
      *containerd-shim*" -address $CONTAINERD_SOCK "*) pids+=("${p#/proc/}") ;;
    esac
  done
  [ ${#pids[@]} -eq 0 ] || kill -KILL "${pids[@]}" 2>/dev/null || true
}
