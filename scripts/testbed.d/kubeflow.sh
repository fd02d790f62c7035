# scripts/testbed.d/kubeflow.sh: Kubeflow's training-operator (pins in
# kubeflow/), the peer the operator benchmarks run against:
# `scripts/testbed peer-kubeflow up|down|check`.
ALL_COMPONENTS+=(kubeflow)

kubeflow_module() { echo github.com/kubeflow/training-operator; }
kubeflow_outputs() { echo training-operator kubeflow.org_tfjobs.yaml; }
# The operator's webhook server listens on every interface and has no flag
# for its host. Its main.go is built unchanged but for one line (listen on
# 127.0.0.1), as a package of this module added through a -overlay (the
# module cache itself cannot be overlaid).
kubeflow_build() {  # OUTDIR GO VERSION
  local out=$1 go=$2 src main work
  src=$("$go" list -m -f '{{.Dir}}' github.com/kubeflow/training-operator) || return 1
  main="$src/cmd/training-operator.v1/main.go"
  work=$(mktemp -d) || return 1
  sed 's/^\(\t*\)Port: webhookServerPort,$/\1Host: "127.0.0.1", Port: webhookServerPort,/' \
    "$main" >"$work/main.go" || return 1
  if ! grep -q 'Host: "127.0.0.1", Port: webhookServerPort,' "$work/main.go"; then
    log "build: kubeflow: could not patch the webhook host in $main"
    rm -rf "$work"; return 1
  fi
  printf '{"Replace":{"%s":"%s"}}\n' "$PINS_DIR/kubeflow/cmd/training-operator.v1/main.go" \
    "$work/main.go" >"$work/overlay.json"
  "$go" build -trimpath -overlay="$work/overlay.json" -ldflags="-s -w" \
    -o "$out/training-operator" ./cmd/training-operator.v1 || { rm -rf "$work"; return 1; }
  rm -rf "$work"
  # Its TFJob CRD, as published in the module.
  cp "$src/manifests/base/crds/kubeflow.org_tfjobs.yaml" "$out/" || return 1
  chmod u+w "$out/kubeflow.org_tfjobs.yaml"
}

PEER_NS=kubeflow
peer_dir() { echo "$RUN_DIR/peer"; }
PEER_CERT_DIR=/tmp/k8s-webhook-server/serving-certs   # fixed in the operator

peer_down() {
  local saved=$RUN_DIR
  if [ -d "$RUN_DIR/peer/pids" ]; then
    RUN_DIR="$saved/peer" stop training-operator
  fi
  RUN_DIR=$saved
  if [ -f "$RUN_DIR/peer/cert-dir-ours" ]; then
    rm -rf "$PEER_CERT_DIR"; rmdir "$(dirname "$PEER_CERT_DIR")" 2>/dev/null || true
  fi
  rm -rf "$RUN_DIR/peer/pids" "$RUN_DIR/peer/cert-dir-ours"
}

peer_up() {
  require_up
  local kdir fdir pdir; kdir=$(component_dir kubernetes); fdir=$(component_dir kubeflow)
  is_built "$fdir" kubeflow || die "the training-operator is not built: run 'scripts/testbed build kubeflow'"
  KUBECTL="$kdir/kubectl"; pdir=$(peer_dir)
  if RUN_DIR="$pdir" is_ours training-operator; then log "peer-kubeflow: already running"; return 0; fi
  mkdir -p "$pdir/pids" "$pdir/logs"
  # --force-conflicts: training-operator's own CRD replaces one that Ringmaster's chart installed.
  kctl apply --server-side --force-conflicts -f "$fdir/kubeflow.org_tfjobs.yaml" >/dev/null
  local deadline=$(( $(now_ms) + 30000 ))
  until [ "$(kctl get crd tfjobs.kubeflow.org \
           -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null)" = True ]; do
    [ "$(now_ms)" -lt "$deadline" ] || die "peer-kubeflow: the TFJob CRD is not Established after 30s"
    sleep 0.2
  done
  kctl create namespace "$PEER_NS" --dry-run=client -o yaml | kctl apply -f - >/dev/null
  # The operator's cert rotator fills this secret; in a cluster the secret is
  # then mounted at $PEER_CERT_DIR, here this script copies it there.
  kctl -n "$PEER_NS" create secret generic training-operator-webhook-cert \
    --dry-run=client -o yaml | kctl apply -f - >/dev/null
  if [ -e "$PEER_CERT_DIR" ] && [ ! -f "$pdir/cert-dir-ours" ]; then
    die "peer-kubeflow: $PEER_CERT_DIR exists and is not ours; remove it first"
  fi
  mkdir -p "$PEER_CERT_DIR"; touch "$pdir/cert-dir-ours"
  local p1 p2 p3
  load_ports
  PORTS_TAKEN=" $(sed -n 's/^[A-Z_]*_PORT=//p' "$RUN_DIR/ports.env" | tr '\n' ' ')"
  p1=$(free_port); PORTS_TAKEN+="$p1 "
  p2=$(free_port); PORTS_TAKEN+="$p2 "
  p3=$(free_port)
  echo "PEER_METRICS_PORT=$p1 PEER_PROBE_PORT=$p2 PEER_WEBHOOK_PORT=$p3" >"$pdir/ports.env"
  local kubeconfig="$RUN_DIR/kubeconfig"
  # shellcheck disable=SC2097,SC2098  # RUN_DIR: where start() records the pid
  KUBECONFIG=$kubeconfig MY_POD_NAMESPACE=$PEER_NS RUN_DIR=$pdir \
    start training-operator "$fdir/training-operator" \
      --enable-scheme=tfjob \
      --metrics-bind-address "127.0.0.1:$p1" \
      --health-probe-bind-address "127.0.0.1:$p2" \
      --webhook-server-port "$p3"
  local crt=""
  deadline=$(( $(now_ms) + 60000 ))
  while [ "$(now_ms)" -lt "$deadline" ]; do
    crt=$(kctl -n "$PEER_NS" get secret training-operator-webhook-cert -o jsonpath='{.data.tls\.crt}' 2>/dev/null) || true
    [ -n "$crt" ] && break
    RUN_DIR="$pdir" is_ours training-operator || break
    sleep 0.5
  done
  [ -n "$crt" ] || { tail -n 20 "$pdir/logs/training-operator.log" >&2; peer_down; die "peer-kubeflow: the operator did not fill its webhook secret"; }
  # The operator starts its webhook server once tls.crt exists, and reads
  # tls.key then: the key goes in first and each file appears whole (a rename).
  local key
  key=$(kctl -n "$PEER_NS" get secret training-operator-webhook-cert -o jsonpath='{.data.tls\.key}')
  [ -n "$key" ] || { peer_down; die "peer-kubeflow: the webhook secret has tls.crt but no tls.key"; }
  base64 -d <<<"$key" >"$PEER_CERT_DIR/.tls.key.new" && mv -f "$PEER_CERT_DIR/.tls.key.new" "$PEER_CERT_DIR/tls.key"
  base64 -d <<<"$crt" >"$PEER_CERT_DIR/.tls.crt.new" && mv -f "$PEER_CERT_DIR/.tls.crt.new" "$PEER_CERT_DIR/tls.crt"
  deadline=$(( $(now_ms) + 90000 ))
  until curl -fsS --max-time 2 "http://127.0.0.1:$p2/readyz" >/dev/null 2>&1; do
    if ! RUN_DIR="$pdir" is_ours training-operator || [ "$(now_ms)" -ge "$deadline" ]; then
      tail -n 20 "$pdir/logs/training-operator.log" >&2; peer_down
      die "peer-kubeflow: the training-operator did not become ready"
    fi
    sleep 0.5
  done
  log "peer-kubeflow: training-operator ready (log: $pdir/logs/training-operator.log)"
}

peer_check() {
  local ns=tfjob-peer-check deadline n
  peer_up
  kctl delete namespace "$ns" --ignore-not-found --wait=true --timeout=60s >/dev/null
  kctl create namespace "$ns" >/dev/null
  # Pods need the namespace's default service account.
  deadline=$(( $(now_ms) + 30000 ))
  until kctl -n "$ns" get serviceaccount default >/dev/null 2>&1; do
    [ "$(now_ms)" -lt "$deadline" ] || die "peer-kubeflow: no default service account in $ns"
    sleep 0.2
  done
  kctl -n "$ns" apply -f - >/dev/null <<'EOF'
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: mnist
spec:
  tfReplicaSpecs:
    Chief:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: tensorflow
            image: example.invalid/tensorflow:2.15
    Worker:
      replicas: 2
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: tensorflow
            image: example.invalid/tensorflow:2.15
EOF
  deadline=$(( $(now_ms) + 90000 ))
  while :; do
    n=$(kctl -n "$ns" get pods -l training.kubeflow.org/job-name=mnist \
          -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -cx Running) || true
    [ "${n:-0}" -ge 3 ] && break
    if [ "$(now_ms)" -ge "$deadline" ]; then
      kctl -n "$ns" get tfjob,pods,svc -o wide >&2 || true
      die "peer-kubeflow: the TFJob was not reconciled into 3 Running pods in 90s"
    fi
    sleep 0.5
  done
  kctl -n "$ns" get pods -o wide -l training.kubeflow.org/job-name=mnist
  kctl -n "$ns" get tfjob mnist
  kctl delete namespace "$ns" --wait=false >/dev/null
  log "peer-kubeflow: check passed: TFJob mnist reconciled into 3 Running pods"
}

cmd_peer() {
  local sub=${1:-}
  case $sub in
    up) peer_up ;;
    down) peer_down; log "peer-kubeflow: stopped" ;;
    check) peer_check; peer_down ;;
    *) die "usage: scripts/testbed peer-kubeflow up|down|check" ;;
  esac
}
