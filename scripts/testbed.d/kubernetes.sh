# scripts/testbed.d/kubernetes.sh: the control plane of k8s.io/kubernetes
# (pins in kubernetes/): kube-apiserver, kube-controller-manager,
# kube-scheduler, and the pinned kubectl; the same build makes the real
# node's kubelet and kube-proxy (node.sh runs them).
ALL_COMPONENTS+=(kubernetes)

kubernetes_module() { echo k8s.io/kubernetes; }
kubernetes_outputs() { echo kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy; }
kubernetes_build() {  # OUTDIR GO VERSION
  local out=$1 go=$2 ver=$3 ld="-s -w" p minor
  minor=$(cut -d. -f2 <<<"$ver")
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitVersion=$ver"
    ld+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  # One go build for all commands: shared packages compile once.
  "$go" build -trimpath -ldflags="$ld" -o "$out/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler \
    k8s.io/kubernetes/cmd/kubectl \
    k8s.io/kubernetes/cmd/kubelet \
    k8s.io/kubernetes/cmd/kube-proxy || return 1
}

api_ready() {
  curl -fsS --max-time 2 --cacert "$RUN_DIR/pki/ca.crt" \
    --cert "$RUN_DIR/pki/admin.crt" --key "$RUN_DIR/pki/admin.key" \
    "https://$API_HOST:$API_PORT/readyz" | grep -qx ok
}
healthz_ok() {  # PORT: a component's /healthz (anonymous is allowed there)
  curl -fsSk --max-time 2 "https://127.0.0.1:$1/healthz" | grep -qx ok
}

# apiserver_up: kube-apiserver on the ports and PKI of the run directory,
# then wait until it is ready (used by up and restart-apiserver). It listens
# on API_HOST: the real node's bridge address, where pods reach it too (or
# 127.0.0.1 in a testbed without a real node).
apiserver_up() {
  local kdir pki="$RUN_DIR/pki"; local -a node_args
  kdir=$(component_dir kubernetes)
  if node_in_run; then mapfile -t node_args < <(node_apiserver_args)
  else node_args=(--advertise-address 127.0.0.1 --endpoint-reconciler-type none); fi
  start kube-apiserver "$kdir/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address "$API_HOST" --secure-port "$API_PORT" "${node_args[@]}" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" \
    --service-account-signing-key-file "$pki/sa.key" \
    --service-cluster-ip-range 10.96.0.0/16 \
    --authorization-mode Node,RBAC \
    --allow-privileged=true --profiling=false --v=1
  wait_until kube-apiserver 120 api_ready
}

# controllers_up: the controller-manager and the scheduler, healthy.
controllers_up() {
  local kdir pki="$RUN_DIR/pki"
  kdir=$(component_dir kubernetes)
  start kube-controller-manager "$kdir/kube-controller-manager" \
    --kubeconfig "$RUN_DIR/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$RUN_DIR/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$RUN_DIR/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$KCM_PORT" \
    --controllers '*' --use-service-account-credentials=true \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
    --cluster-name ringmaster-testbed --leader-elect=false --profiling=false --v=1
  start kube-scheduler "$kdir/kube-scheduler" \
    --kubeconfig "$RUN_DIR/scheduler.kubeconfig" \
    --authentication-kubeconfig "$RUN_DIR/scheduler.kubeconfig" \
    --authorization-kubeconfig "$RUN_DIR/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$SCHED_PORT" \
    --leader-elect=false --profiling=false --v=1
}

controllers_wait() {
  wait_until kube-controller-manager 60 healthz_ok "$KCM_PORT"
  wait_until kube-scheduler 60 healthz_ok "$SCHED_PORT"
}

# The clients first, then the API server.
controllers_down() { stop kube-scheduler kube-controller-manager; }
apiserver_down() { stop kube-apiserver; }

# restart-apiserver: stop kube-apiserver and start it again on the same port,
# etcd untouched. Its watch cache starts afresh at etcd's current revision, so
# a client resuming a watch from an older resourceVersion gets a real 410 Gone
# (what tests of informers need; nothing else provokes one on demand).
cmd_restart_apiserver() {
  require_up
  exec 9>"$RUN_DIR.lock"
  flock -w 120 9 || die "another 'scripts/testbed up/down' holds $RUN_DIR.lock"
  load_ports
  local start; start=$(now_ms)
  apiserver_down
  apiserver_up
  log "restart-apiserver: ready again on https://$API_HOST:$API_PORT ($(elapsed "$start"))"
}
