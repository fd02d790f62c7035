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
  kubernetes_scheduler_fix "$out" "$go" "$ld"
}
# What else the cache key covers: the scheduler's fix below.
kubernetes_key() { echo "scheduler fix kubernetes#141255 v1"; }

# kubernetes_scheduler_fix OUTDIR GO LDFLAGS: kube-scheduler again, with the
# fix of kubernetes/kubernetes#141255 (open upstream) where the release needs
# it (a scheduler with one pod handler: 1.37; 1.34 has two). A pod deleted
# and recreated under its name while the scheduler's watch was away (an API
# server restart, an etcd compaction) reaches updatePod as one update of two
# pods; the
# scheduler then keeps the new one as the old, assigned, and never
# schedules it. The operator's replicas keep their names, so the fault soak
# met it at once. Built from a copy of the module with the one file
# patched: the module cache cannot be overlaid. Fails if the code to patch
# is not where it was.
kubernetes_scheduler_fix() {
  local out=$1 go=$2 ld=$3 src work
  src=$("$go" list -m -f '{{.Dir}}' k8s.io/kubernetes) || return 1
  grep -q '^func (sched \*Scheduler) updatePod(oldObj, newObj interface{}) {' "$src/pkg/scheduler/eventhandlers.go" ||
    return 0   # before 1.36: an assigned and an unassigned handler, each on its own
  work=$(mktemp -d) || return 1
  cp go.mod go.sum tools.go "$work/" && cp -r unused "$work/" && mkdir "$work/k8s" &&
    (cd "$src" && tar cf - --exclude=./test --exclude=./docs --exclude=./api .) | tar xf - -C "$work/k8s" &&
    chmod -R u+w "$work/k8s" || { rm -rf "$work"; return 1; }
  echo 'replace k8s.io/kubernetes => ./k8s' >>"$work/go.mod"
  python3 - "$work/k8s/pkg/scheduler/eventhandlers.go" <<'PY' || { log "build: kubernetes: the scheduler's fix does not apply"; rm -rf "$work"; return 1; }
import sys
path = sys.argv[1]
text = open(path).read()
anchor = '\t\tutilruntime.HandleErrorWithLogger(logger, nil, "Cannot convert newObj to *v1.Pod", "newObj", newObj)\n\t\treturn\n\t}\n\n\tif assignedPod(oldPod) {'
if text.count(anchor) != 1 or "oldPod.UID != newPod.UID" in text:
    sys.exit(1)
fix = ('\t// kubernetes/kubernetes#141255: two pods under one name, one update.\n'
       '\tif oldPod.UID != newPod.UID {\n\t\tsched.deletePod(oldPod)\n\t\tsched.addPod(newPod)\n\t\treturn\n\t}\n\n')
open(path, "w").write(text.replace(anchor, anchor.replace("\tif assignedPod(oldPod) {", fix + "\tif assignedPod(oldPod) {")))
PY
  (cd "$work" && "$go" build -trimpath -ldflags="$ld" -o "$out/" k8s.io/kubernetes/cmd/kube-scheduler) ||
    { rm -rf "$work"; return 1; }
  rm -rf "$work"
  log "build: kubernetes: kube-scheduler carries the fix of kubernetes#141255"
}

# The pinned release's minor version (37 for v1.37.2).
kubernetes_minor() { module_version "$(pins_dir kubernetes)" k8s.io/kubernetes | cut -d. -f2; }

# workload_api_args COMPONENT: Kubernetes' own gang scheduling (KEP-4671),
# one argument a line, where the pinned release has it in beta: 1.37 serves
# scheduling.k8s.io/v1beta1 (Workload, PodGroup) and enables the scheduler's
# GangScheduling plugin behind the GenericWorkload gate (off by default; a
# beta API is served only when asked). An older release runs without: 1.34
# has no Workload API, and 1.35-1.36's alpha shapes are not tested here.
workload_api_args() {
  [ "$(kubernetes_minor)" -ge 37 ] || return 0
  echo --feature-gates=GenericWorkload=true
  [ "$1" != kube-apiserver ] || echo --runtime-config=scheduling.k8s.io/v1beta1=true
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
  local kdir pki="$RUN_DIR/pki"; local -a node_args gang_args
  kdir=$(component_dir kubernetes)
  if node_in_run; then mapfile -t node_args < <(node_apiserver_args)
  else node_args=(--advertise-address 127.0.0.1 --endpoint-reconciler-type none); fi
  mapfile -t gang_args < <(workload_api_args kube-apiserver)
  # tlssha1=1: busybox's own TLS (wget in the e2e pods' image) sends a TLS
  # 1.2 hello without signature_algorithms, which Go 1.25+ refuses by
  # default (RFC 9155); 1.37's go.mod (go 1.26) brought that default. Any
  # TLS 1.3 client, the operator's included, never meets it.
  GODEBUG=tlssha1=1 start kube-apiserver "$kdir/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address "$API_HOST" --secure-port "$API_PORT" "${node_args[@]}" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" \
    --service-account-signing-key-file "$pki/sa.key" \
    --service-cluster-ip-range 10.96.0.0/16 \
    --authorization-mode Node,RBAC "${gang_args[@]}" \
    --allow-privileged=true --profiling=false --v=1
  wait_until kube-apiserver 120 api_ready
}

# controllers_up: the controller-manager and the scheduler, healthy.
controllers_up() {
  local kdir pki="$RUN_DIR/pki"; local -a kcm_gang sched_gang
  kdir=$(component_dir kubernetes)
  mapfile -t kcm_gang < <(workload_api_args kube-controller-manager)
  mapfile -t sched_gang < <(workload_api_args kube-scheduler)
  start kube-controller-manager "$kdir/kube-controller-manager" \
    --kubeconfig "$RUN_DIR/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$RUN_DIR/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$RUN_DIR/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$KCM_PORT" \
    --controllers '*' --use-service-account-credentials=true \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
    --cluster-name ringmaster-testbed "${kcm_gang[@]}" --leader-elect=false --profiling=false --v=1
  start kube-scheduler "$kdir/kube-scheduler" \
    --kubeconfig "$RUN_DIR/scheduler.kubeconfig" \
    --authentication-kubeconfig "$RUN_DIR/scheduler.kubeconfig" \
    --authorization-kubeconfig "$RUN_DIR/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$SCHED_PORT" "${sched_gang[@]}" \
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
