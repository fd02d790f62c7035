# scripts/testbed.d/node.sh: the testbed's real node, ringmaster-real-0,
# beside kwok's fake ones: containerd with runc and a CNI bridge of its own
# (containerd.sh), the kubelet and kube-proxy of the pinned Kubernetes, and
# CoreDNS (coredns.sh). Pods land there only if they ask for it: the node
# is labelled ringmaster.io/node=real and tainted
# ringmaster.io/real-node=true:NoSchedule. One real node per machine (the
# bridge's name is fixed); RINGMASTER_TESTBED_REAL_NODE=0 starts a testbed
# without one. What up changes on the machine, down undoes (node-clean.sh).

NODE_NAME=ringmaster-real-0
NODE_BRIDGE=rmtb0
NODE_SUBNET=10.202.0.0/16      # on no machine of ours; pods from .1.1 on
NODE_IP=10.202.0.1             # the bridge: API server, kubelet, DNS
NODE_POD_FIRST=10.202.1.1
NODE_DIR="$RUN_DIR/node"
CONTAINERD_SOCK="$NODE_DIR/containerd.sock"
NODE_PORTS=(KUBELET_PORT KUBELET_HEALTHZ_PORT PROXY_HEALTHZ_PORT PROXY_METRICS_PORT
            DNS_HEALTH_PORT DNS_READY_PORT)

node_enabled() { [ "${RINGMASTER_TESTBED_REAL_NODE:-1}" != 0 ]; }
# node_in_run: this run directory has a real node (read after up).
node_in_run() { [ -f "$NODE_DIR/machine.saved" ]; }

# node_render TEMPLATE: a file of node/ with its @NAME@ values filled in.
node_render() {
  local v script=""
  for v in RUN_DIR NODE_DIR NODE_NAME NODE_BRIDGE NODE_SUBNET NODE_IP NODE_POD_FIRST \
           CONTAINERD_SOCK CNI_BIN_DIR PAUSE_IMAGE "${NODE_PORTS[@]}"; do
    script+="s|@$v@|${!v:-}|g;"
  done
  sed -e "$script" -e "s|@PKI@|$RUN_DIR/pki|g" "$PINS_DIR/node/$1"
}

# ------------------------------------------------------------------- up ---

# node_net_up: claim the machine's real node, record what down must put
# back, and create the bridge with its address (before the API server,
# which listens there).
node_net_up() {
  local owner
  if [ -e "/sys/class/net/$NODE_BRIDGE" ]; then
    owner=$(sed -n 's/^ringmaster-testbed //p' "/sys/class/net/$NODE_BRIDGE/ifalias" 2>/dev/null)
    if [ -n "$owner" ] && [ "$owner" != "$RUN_DIR" ] && RUN_DIR=$owner is_ours kubelet; then
      die "this machine's real node belongs to the testbed in $owner: take that one down first" \
          "(RINGMASTER_TESTBED_DIR=$owner scripts/testbed down), or start this one without" \
          "a real node (RINGMASTER_TESTBED_REAL_NODE=0)"
    fi
    die "$NODE_BRIDGE exists (left by the testbed in ${owner:-an unknown directory}?): remove" \
        "what that testbed left (scripts/testbed down with RINGMASTER_TESTBED_DIR=$owner) or the" \
        "bridge (ip link del $NODE_BRIDGE)"
  fi
  # Creating the bridge claims the node (atomically: a second testbed's
  # fails); only then is there anything of ours for down to undo.
  ip link add "$NODE_BRIDGE" type bridge || die "cannot create the bridge $NODE_BRIDGE (root needed)"
  echo "ringmaster-testbed $RUN_DIR" >"/sys/class/net/$NODE_BRIDGE/ifalias"
  mkdir -p "$NODE_DIR"
  node_save_machine
  ip addr add "$NODE_IP/${NODE_SUBNET#*/}" dev "$NODE_BRIDGE"
  ip link set "$NODE_BRIDGE" up
}

# node_pki: the node's identities, signed by the testbed CA.
node_pki() {
  sign kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" clientAuth
  sign kubelet-serving "/CN=$NODE_NAME" serverAuth "IP:$NODE_IP,DNS:$NODE_NAME"
  sign apiserver-kubelet-client "/CN=kube-apiserver-kubelet-client" clientAuth
  sign kube-proxy "/CN=system:kube-proxy" clientAuth
  sign coredns "/CN=ringmaster-testbed:coredns" clientAuth
  local who
  for who in kubelet kube-proxy coredns; do write_kubeconfig "$RUN_DIR/$who.kubeconfig" "$who"; done
}

# node_apiserver_args: what kube-apiserver needs for a real node: reach the
# kubelet (logs, exec) with a client certificate, verify the kubelet's
# serving certificate, and advertise the bridge address as the endpoint of
# the `kubernetes` Service. One argument a line.
node_apiserver_args() {
  local pki="$RUN_DIR/pki"
  printf '%s\n' --advertise-address "$NODE_IP" \
    --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$pki/ca.crt" \
    --kubelet-preferred-address-types InternalIP \
    --enable-admission-plugins NodeRestriction \
    --endpoint-reconciler-type lease
}

kubelet_healthy() { curl -fsS --max-time 2 "http://127.0.0.1:$KUBELET_HEALTHZ_PORT/healthz" | grep -qx ok; }
proxy_healthy() { curl -fsS --max-time 2 "http://127.0.0.1:$PROXY_HEALTHZ_PORT/healthz" >/dev/null; }
node_ready() {
  [ "$(kctl get node "$NODE_NAME" \
        -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

# node_up: start the node's processes (the API server is up); node_wait
# then waits until the node is Ready and DNS and Services work.
node_up() {
  local kdir; kdir=$(component_dir kubernetes)
  kctl apply -f "$PINS_DIR/node/rbac.yaml" >/dev/null
  containerd_up
  node_render kubelet.yaml >"$NODE_DIR/kubelet.yaml"
  node_render kube-proxy.yaml >"$NODE_DIR/kube-proxy.yaml"
  start kubelet "$kdir/kubelet" --config "$NODE_DIR/kubelet.yaml" \
    --kubeconfig "$RUN_DIR/kubelet.kubeconfig" --root-dir "$NODE_DIR/kubelet" \
    --hostname-override "$NODE_NAME" --node-ip "$NODE_IP" \
    --node-labels ringmaster.io/node=real --v=1
  start kube-proxy "$kdir/kube-proxy" --config "$NODE_DIR/kube-proxy.yaml" --v=1
  coredns_up
}

node_wait() {
  wait_until kubelet 60 kubelet_healthy
  wait_until kube-proxy 60 proxy_healthy
  coredns_wait
  wait_until kubelet 60 node_ready
}

# ----------------------------------------------------------------- down ---

# node_drain: delete the node's pods while the API server is up (the
# controllers are already stopped, so nothing replaces them): the kubelet
# stops their containers and tears down their network and volumes.
node_drain() {
  is_ours kubelet && load_ports && api_ready || return 0
  KUBECTL="$(component_dir kubernetes)/kubectl"
  kctl delete pods -A --field-selector "spec.nodeName=$NODE_NAME" \
    --grace-period=1 --wait=false >/dev/null 2>&1 || true
  local deadline=$(( $(now_ms) + 30000 ))
  while [ -n "$(kctl get pods -A --field-selector "spec.nodeName=$NODE_NAME" -o name 2>/dev/null)" ]; do
    [ "$(now_ms)" -lt "$deadline" ] || { log "down: pods of $NODE_NAME still there after 30s"; break; }
    sleep 0.5
  done
}

# node_stop: the node's processes, and every container (before the API
# server stops).
node_stop() {
  node_in_run || return 0
  node_drain || log "down: draining $NODE_NAME did not finish"
  stop coredns kube-proxy kubelet
  containerd_down || log "down: removing the containers did not finish"
}

# ------------------------------------------------------ env and status ---

node_env() {
  node_in_run || return 0
  local images; images="$(component_dir pause)/images.env"
  if [ -f "$images" ]; then . "$images"; fi
  printf 'export RINGMASTER_CONTAINERD_ADDRESS=%q\n' "$CONTAINERD_SOCK"
  printf 'export RINGMASTER_NODE_IP=%q\n' "$NODE_IP"
  printf 'export RINGMASTER_REAL_NODE=%q\n' "$NODE_NAME"
  printf 'export RINGMASTER_BUSYBOX_IMAGE=%q\n' "$BUSYBOX_IMAGE"
}

node_status() {
  node_in_run || { echo "  real node: none (RINGMASTER_TESTBED_REAL_NODE=0)"; return 0; }
  local ready
  ready=$(kctl get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) || true
  echo "  real node $NODE_NAME: Ready=${ready:-unknown}, bridge $NODE_BRIDGE $NODE_IP," \
       "DNS $NODE_IP:53, containerd $CONTAINERD_SOCK"
  [ "$ready" = True ]
}
