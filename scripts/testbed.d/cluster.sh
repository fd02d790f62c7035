# scripts/testbed.d/cluster.sh: the testbed as a whole: up brings the
# components up in order and waits until each is ready, down takes them down
# in reverse; env, exec and status for the tests and for people.

COMPONENTS_UP=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)
NODE_COMPONENTS=(containerd kubelet kube-proxy coredns)

# components_up: the processes of this run (the node's if it has one).
components_up() {
  echo "${COMPONENTS_UP[@]}"
  if node_in_run; then echo "${NODE_COMPONENTS[@]}"; fi
}

testbed_healthy() {
  local c
  [ -f "$RUN_DIR/ready" ] || return 1
  for c in $(components_up); do is_ours "$c" || return 1; done
  # One up on another release (RINGMASTER_KUBERNETES_PINS) is not this one.
  local bin; read -r _ _ bin <"$RUN_DIR/pids/kube-apiserver" || return 1
  [ "$bin" = "$(component_dir kubernetes)/kube-apiserver" ] || return 1
  load_ports && api_ready
}

cmd_up() {
  local start; start=$(now_ms)
  local -a ports=(ETCD_PORT ETCD_PEER_PORT API_PORT KCM_PORT SCHED_PORT)
  require_built kubernetes etcd kwok
  if node_enabled; then require_built coredns pause; ports+=("${NODE_PORTS[@]}"); fi
  for t in openssl curl setsid flock base64; do
    command -v "$t" >/dev/null || die "'$t' is missing (scripts/setup installs it)"
  done
  KUBECTL="$(component_dir kubernetes)/kubectl"

  mkdir -p "$(dirname "$RUN_DIR")"
  exec 9>"$RUN_DIR.lock"
  flock -w 120 9 || die "another 'scripts/testbed up/down' holds $RUN_DIR.lock"

  if testbed_healthy; then
    log "up: a testbed is already up in $RUN_DIR; reusing it"
    print_usage
    return 0
  fi
  if any_recorded || [ -e "$RUN_DIR" ]; then
    log "up: cleaning up an earlier testbed that is not healthy (crashed or partial)"
    teardown
  fi

  mkdir -p "$RUN_DIR"/{pki,pids,logs,etcd}
  chmod 700 "$RUN_DIR"
  pick_ports "${ports[@]}"
  if node_enabled; then
    node_net_up
    echo "API_HOST=$NODE_IP" >>"$RUN_DIR/ports.env"
  fi
  load_ports
  gen_pki
  if node_in_run; then node_pki; fi
  local who
  for who in admin controller-manager scheduler kwok; do
    write_kubeconfig "$RUN_DIR/$who.kubeconfig" "$who"
  done
  mv "$RUN_DIR/admin.kubeconfig" "$RUN_DIR/kubeconfig"

  etcd_up
  log "up: etcd ready on 127.0.0.1:$ETCD_PORT ($(elapsed "$start"))"
  apiserver_up
  log "up: kube-apiserver ready on https://$API_HOST:$API_PORT ($(elapsed "$start"))"
  controllers_up
  kwok_up
  if node_in_run; then node_up; fi
  controllers_wait
  log "up: controller-manager and scheduler healthy ($(elapsed "$start"))"

  kwok_create_nodes
  # The service-account controller has run once the default namespace has
  # its "default" service account; pods need it.
  wait_until kube-controller-manager 60 kctl -n default get serviceaccount default
  if node_in_run; then node_wait; fi
  touch "$RUN_DIR/ready"
  log "up: $NODES kwok nodes$(node_in_run && echo " and $NODE_NAME" || true) Ready; testbed up in $(elapsed "$start")"
  link_default_kubeconfig
  print_usage
}

# So that a plain `kubectl` works on a machine without a kubeconfig of its
# own: ~/.kube/config becomes a link to ours (only if absent; down removes
# the link only while it still points here).
link_default_kubeconfig() {
  local def="$HOME/.kube/config"
  [ -z "${KUBECONFIG:-}" ] || return 0
  if [ ! -e "$def" ] && [ ! -L "$def" ]; then
    mkdir -p "$HOME/.kube"
    ln -s "$RUN_DIR/kubeconfig" "$def"
    log "up: $def did not exist: linked it to the testbed's kubeconfig"
  fi
}
unlink_default_kubeconfig() {
  local def="$HOME/.kube/config"
  if [ -L "$def" ] && [ "$(readlink "$def")" = "$RUN_DIR/kubeconfig" ]; then
    rm -f "$def"
  fi
}

print_usage() {
  load_ports
  cat <<EOU
Testbed up: Kubernetes $(component_dir kubernetes | sed -E 's#.*/kubernetes-(v[^-]+)-.*#\1#') at https://$API_HOST:$API_PORT, $NODES kwok nodes$(node_in_run && echo ", real node $NODE_NAME" || true).
  kubeconfig: $RUN_DIR/kubeconfig
  use it:     eval "\$(scripts/testbed env)"; kubectl get nodes
  logs:       $RUN_DIR/logs/
  stop it:    scripts/testbed down
EOU
}

teardown() {
  [ -f "$RUN_DIR/peer/pids/training-operator" ] && peer_down || true
  { [ -e "$RUN_DIR/kueue" ] || [ -f "$RUN_DIR/pids/kueue" ]; } && kueue_down teardown || true
  # The clients first, then the API server, etcd last.
  kwok_down
  controllers_down
  node_stop
  apiserver_down
  etcd_down
  local f
  if [ -d "$RUN_DIR/pids" ]; then
    for f in "$RUN_DIR"/pids/*; do [ -e "$f" ] && stop "$(basename "$f")"; done
  fi
  node_net_down
  unlink_default_kubeconfig
  if [ -d "$RUN_DIR/logs" ]; then
    rm -rf "$RUN_DIR.logs"
    cp -r "$RUN_DIR/logs" "$RUN_DIR.logs" 2>/dev/null || true
  fi
  rm -rf "$RUN_DIR"
}

cmd_down() {
  mkdir -p "$(dirname "$RUN_DIR")"
  exec 9>"$RUN_DIR.lock"
  flock -w 120 9 || die "another 'scripts/testbed up/down' holds $RUN_DIR.lock"
  if [ ! -e "$RUN_DIR" ]; then
    log "down: no testbed in $RUN_DIR; nothing to do"
    return 0
  fi
  teardown
  log "down: stopped; removed $RUN_DIR (logs kept in $RUN_DIR.logs)"
}

require_up() {
  [ -f "$RUN_DIR/ready" ] && [ -f "$RUN_DIR/kubeconfig" ] ||
    die "the testbed is not up ($RUN_DIR): run 'scripts/testbed up'"
}

# The pinned kubectl (and helm, when built) for PATH.
tool_path() {
  local p hdir
  p=$(component_dir kubernetes)
  hdir=$(component_dir helm)
  if is_built "$hdir" helm; then p="$p:$hdir"; fi
  echo "$p"
}

cmd_env() {
  require_up
  printf 'export KUBECONFIG=%q\n' "$RUN_DIR/kubeconfig"
  printf 'export RINGMASTER_TESTBED_DIR=%q\n' "$RUN_DIR"
  printf 'export PATH=%q:"$PATH"\n' "$(tool_path)"
  node_env
}

cmd_exec() {
  [ $# -gt 0 ] || die "exec: no command given"
  require_up
  export KUBECONFIG="$RUN_DIR/kubeconfig" RINGMASTER_TESTBED_DIR="$RUN_DIR"
  PATH="$(tool_path):$PATH"; export PATH
  export RINGMASTER_TESTBED="$SCRIPT_DIR/testbed"
  eval "$(node_env)"
  exec "$@"
}

cmd_status() {
  local c ok=0
  if [ ! -e "$RUN_DIR" ]; then echo "testbed: down"; return 1; fi
  load_ports || true
  for c in $(components_up) training-operator kueue; do
    if is_ours "$c"; then echo "  $c: running (pid $(recorded_pid "$c"))"
    elif [ -f "$RUN_DIR/pids/$c" ]; then echo "  $c: DEAD"; ok=1
    elif [ "$c" != training-operator ] && [ "$c" != kueue ]; then echo "  $c: not started"; ok=1
    fi
  done
  KUBECTL="$(component_dir kubernetes)/kubectl"
  node_status || ok=1
  if [ $ok = 0 ] && api_ready; then
    echo "testbed: up at https://$API_HOST:$API_PORT; KUBECONFIG=$RUN_DIR/kubeconfig"
  else
    echo "testbed: not healthy ($RUN_DIR)"; return 1
  fi
}
