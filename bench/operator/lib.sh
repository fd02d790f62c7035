# shellcheck shell=bash
# What the operator benchmarks (run.sh, big-job.sh) share, sourced after
# they define k() (kubectl with a request timeout).

# established CRD: waits until it is. kubectl wait fails at once ("accessor
# error") on a CRD that has no conditions yet, so it is asked again.
established() {
  local _
  for _ in $(seq 60); do
    k wait --for=condition=Established --timeout=5s "$1" >/dev/null 2>&1 && return 0
    sleep 1
  done
  k wait --for=condition=Established --timeout=5s "$1" >/dev/null
}

# bench_nodes N: N kwok nodes of 110 pods each (label ringmaster-bench=1),
# then until every one is Ready (120 s at most).
bench_nodes() {
  local i end
  for i in $(seq 1 "$1"); do
    cat <<YAML
---
apiVersion: v1
kind: Node
metadata:
  name: ringmaster-bench-node-$i
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels: {type: kwok, ringmaster-bench: "1", kubernetes.io/hostname: ringmaster-bench-node-$i, kubernetes.io/os: linux}
status:
  allocatable: {cpu: "32", memory: 256Gi, pods: "110"}
  capacity: {cpu: "32", memory: 256Gi, pods: "110"}
YAML
  done | k apply -f - >/dev/null
  end=$(( SECONDS + 120 ))
  until [ "$(ready_bench_nodes)" -ge "$1" ]; do
    [ "$SECONDS" -lt "$end" ] || { echo "$(basename "$0"): the $1 kwok nodes are not Ready after 120s" >&2; exit 1; }
    sleep 1
  done
}
ready_bench_nodes() {  # (a node kwok has not taken yet has no conditions: jsonpath fails on it)
  { k get nodes -l ringmaster-bench=1 -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null || true; } |
    grep -cx True || true
}

# drop_bench_nodes: the kwok nodes bench_nodes made.
drop_bench_nodes() {
  k get nodes -l ringmaster-bench=1 -o name | xargs -r kubectl --request-timeout=60s delete --wait=false >/dev/null 2>&1 || true
}
