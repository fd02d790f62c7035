# scripts/testbed.d/kwok.sh: kwok and its fake nodes (pins in kwok/), where
# the scale tests' pods land; and pod-exit, which ends a pod on one of them.
ALL_COMPONENTS+=(kwok)

kwok_module() { echo sigs.k8s.io/kwok; }
kwok_outputs() { echo kwok; }
kwok_build() {  # OUTDIR GO VERSION
  "$2" build -trimpath -ldflags="-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$3" \
    -o "$1/kwok" sigs.k8s.io/kwok/cmd/kwok || return 1
}

# kwok serves nothing (no --server-address/--node-port): it only watches
# and patches nodes and pods through the API server, with its built-in
# "fast" stages: a pod on a kwok node becomes Running at once (and one
# owned by a Job, Succeeded). Its work dir is ours, so no ~/.kwok config
# is read.
kwok_up() {
  local wdir; wdir=$(component_dir kwok)
  KWOK_WORKDIR="$RUN_DIR/kwok" start kwok "$wdir/kwok" \
    --kubeconfig "$RUN_DIR/kwok.kubeconfig" \
    --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
    --node-lease-duration-seconds 40 --cidr 10.0.0.1/16
}

kwok_down() { stop kwok; }

kwok_nodes_ready() {
  local n
  n=$(kctl get nodes -l type=kwok \
        -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' |
      grep -cx True) || true
  [ "${n:-0}" -ge "$NODES" ]
}

kwok_create_nodes() {
  local i
  for i in $(seq 0 $((NODES - 1))); do
    cat <<EON
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    type: kwok
    kubernetes.io/arch: amd64
    kubernetes.io/hostname: kwok-node-$i
    kubernetes.io/os: linux
    kubernetes.io/role: agent
    node-role.kubernetes.io/agent: ""
status:
  allocatable: {cpu: "32", memory: 256Gi, pods: "110"}
  capacity: {cpu: "32", memory: 256Gi, pods: "110"}
EON
  done | kctl apply -f - >/dev/null
  wait_until kwok 60 kwok_nodes_ready
}

# pod-exit NS POD CODE: end every container of a pod with an exit code, as
# a kubelet would report it: a status-subresource patch. kwok leaves a pod
# alone once it has a pod IP, so the status stays as written.
cmd_pod_exit() {
  [ $# -eq 3 ] || die "usage: scripts/testbed pod-exit NAMESPACE POD EXIT_CODE"
  local ns=$1 pod=$2 code=$3 phase reason now names patch n
  [[ "$code" =~ ^[0-9]+$ ]] && [ "$code" -le 255 ] || die "pod-exit: exit code must be 0..255, not '$code'"
  require_up
  KUBECTL="$(component_dir kubernetes)/kubectl"
  if [ "$code" = 0 ]; then phase=Succeeded; reason=Completed; else phase=Failed; reason=Error; fi
  now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  names=$(kctl -n "$ns" get pod "$pod" -o jsonpath='{range .spec.containers[*]}{.name}{"\n"}{end}') ||
    die "pod-exit: cannot read pod $ns/$pod"
  local statuses="" sep=""
  for n in $names; do
    statuses+="$sep{\"name\":\"$n\",\"ready\":false,\"started\":false,\"state\":{\"running\":null,\"waiting\":null,\"terminated\":{\"exitCode\":$code,\"reason\":\"$reason\",\"startedAt\":\"$now\",\"finishedAt\":\"$now\"}}}"
    sep=","
  done
  patch="{\"status\":{\"phase\":\"$phase\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"Pod$phase\",\"lastTransitionTime\":\"$now\"},{\"type\":\"ContainersReady\",\"status\":\"False\",\"reason\":\"Pod$phase\",\"lastTransitionTime\":\"$now\"}],\"containerStatuses\":[$statuses]}}"
  kctl -n "$ns" patch pod "$pod" --subresource=status --type=strategic -p "$patch" >/dev/null ||
    die "pod-exit: the status patch of $ns/$pod failed"
  log "pod-exit: $ns/$pod is $phase, exit code $code"
}
