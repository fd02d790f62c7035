#!/usr/bin/env bash
# Operator benchmark (not a test): N jobs x (1 chief + W workers) created at
# once on the testbed; time until every pod exists and until every job is
# Running; the operator's peak RSS and CPU seconds. The same with Kubeflow's
# training-operator on equivalent TFJobs, in the same run; prints a markdown
# table with the ratios.
#
#   bench/operator/run.sh [OPERATOR_BINARY]   (default build/bin/ringmaster-operator)
#   env: JOBS=50 WORKERS=8 LIMIT_S=600 RINGMASTER_WORKERS=4 RINGMASTER_QPS=50 RINGMASTER_BURST=100
#
# Needs the testbed (scripts/testbed build; it is brought up if it is not) and
# Kubeflow's training-operator built by it (scripts/testbed build kubeflow).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OPERATOR=${1:-$ROOT/build/bin/ringmaster-operator}
JOBS=${JOBS:-50}
WORKERS=${WORKERS:-8}
LIMIT_S=${LIMIT_S:-600}
TESTBED="$ROOT/scripts/testbed"
[ -x "$OPERATOR" ] || { echo "no operator at $OPERATOR (build it first)" >&2; exit 1; }
"$TESTBED" status >/dev/null 2>&1 || "$TESTBED" up >&2
eval "$("$TESTBED" env)"
k() { kubectl --request-timeout=30s "$@"; }
PODS=$(( JOBS * (WORKERS + 1) ))
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

now() { date +%s.%N; }
cpu_seconds() {  # PID: utime+stime in seconds
  awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"
}
peak_rss_mib() { awk '/VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }

# measure NS KIND RUNNING-JSONPATH RUNNING-VALUE PID: sets T_PODS T_RUNNING CPU RSS
measure() {
  local ns=$1 kind=$2 jp=$3 want=$4 pid=$5 start cpu0 n r t_pods="" t_run="" end
  cpu0=$(cpu_seconds "$pid")
  start=$(now)
  k -n "$ns" create -f "$WORK/$kind.yaml" >/dev/null
  end=$(( SECONDS + LIMIT_S ))
  while [ "$SECONDS" -lt "$end" ]; do
    if [ -z "$t_pods" ]; then
      n=$(k -n "$ns" get pods -o name 2>/dev/null | wc -l)
      [ "$n" -ge "$PODS" ] && t_pods=$(echo "$(now) - $start" | bc)
    fi
    if [ -n "$t_pods" ]; then
      r=$(k -n "$ns" get "$kind" -o "jsonpath=$jp" 2>/dev/null | grep -c "^$want\$" || true)
      if [ "$r" -ge "$JOBS" ]; then t_run=$(echo "$(now) - $start" | bc); break; fi
    fi
    sleep 0.2
  done
  [ -n "$t_run" ] || { echo "$kind: not converged within ${LIMIT_S}s" >&2; exit 1; }
  T_PODS=$t_pods T_RUNNING=$t_run
  CPU=$(echo "$(cpu_seconds "$pid") - $cpu0" | bc)
  RSS=$(peak_rss_mib "$pid")
}

container='[{name: tensorflow, image: ghcr.io/ringmaster/worker:0.1.0, command: [ringmaster-worker]}]'
: >"$WORK/djob.yaml"
: >"$WORK/tfjob.yaml"
for i in $(seq 1 "$JOBS"); do
  cat >>"$WORK/djob.yaml" <<YAML
---
apiVersion: ringmaster.io/v1alpha1
kind: DistributedJob
metadata: {name: bench-$i}
spec:
  runPolicy: {cleanPodPolicy: Running}
  replicaSpecs:
    Chief: {replicas: 1, restartPolicy: OnFailure, template: {spec: {containers: $container}}}
    Worker: {replicas: $WORKERS, restartPolicy: OnFailure, template: {spec: {containers: $container}}}
YAML
  cat >>"$WORK/tfjob.yaml" <<YAML
---
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: bench-$i}
spec:
  runPolicy: {cleanPodPolicy: Running}
  tfReplicaSpecs:
    Chief: {replicas: 1, restartPolicy: OnFailure, template: {spec: {containers: $container}}}
    Worker: {replicas: $WORKERS, restartPolicy: OnFailure, template: {spec: {containers: $container}}}
YAML
done

# kwok nodes hold 110 pods each: add fake nodes for the benchmark's pods
# (kwok manages every node annotated kwok.x-k8s.io/node=fake).
EXTRA_NODES=$(( PODS / 110 + 2 ))
for i in $(seq 1 "$EXTRA_NODES"); do
  cat <<YAML
---
apiVersion: v1
kind: Node
metadata:
  name: ringmaster-bench-node-$i
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels: {type: kwok, kubernetes.io/hostname: ringmaster-bench-node-$i, kubernetes.io/os: linux}
status:
  allocatable: {cpu: "32", memory: 256Gi, pods: "110"}
  capacity: {cpu: "32", memory: 256Gi, pods: "110"}
YAML
done | k apply -f - >/dev/null
trap 'kill "${RM_PID:-}" 2>/dev/null; [ -z "${KF_UP:-}" ] || "$TESTBED" peer-kubeflow down >&2 || true; rm -rf "$WORK"; for i in $(seq 1 "$EXTRA_NODES"); do kubectl --request-timeout=30s delete node "ringmaster-bench-node-$i" --wait=false >/dev/null 2>&1 || true; done' EXIT
sleep 3

cleanup_ns() { k delete namespace "$1" --wait=true --timeout=180s >/dev/null 2>&1 || true; }

# ---- Ringmaster
k apply -f "$ROOT/manifests/00-crd.yaml" >/dev/null
k wait --for=condition=Established --timeout=60s crd/distributedjobs.ringmaster.io >/dev/null
NS_RM=bench-ringmaster-$$
k create namespace "$NS_RM" >/dev/null
"$OPERATOR" --kubeconfig "$KUBECONFIG" --namespace "$NS_RM" --leader-elect=false --metrics-address 0 \
  >"$WORK/ringmaster.log" 2>&1 &
RM_PID=$!
sleep 2
measure "$NS_RM" djob '{range .items[*]}{.status.state}{"\n"}{end}' Running "$RM_PID"
RM=("$T_PODS" "$T_RUNNING" "$RSS" "$CPU")
kill -TERM "$RM_PID"; wait "$RM_PID" || true
RM_PID=
cleanup_ns "$NS_RM"

# ---- Kubeflow training-operator (PEER=0 skips it)
if [ "${PEER:-1}" = 0 ]; then
  echo "| $JOBS jobs x (1 chief + $WORKERS workers) | Ringmaster |"
  echo "| --- | ---: |"
  echo "| time until all pods exist (s) | ${RM[0]} |"
  echo "| time until every job is Running (s) | ${RM[1]} |"
  echo "| operator peak RSS (MiB) | ${RM[2]} |"
  echo "| operator CPU during the run (s) | ${RM[3]} |"
  exit 0
fi
"$TESTBED" peer-kubeflow up >&2
KF_UP=1
RUN_DIR=${RINGMASTER_TESTBED_DIR:-${RINGMASTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ringmaster}/testbed-run}
KF_PID=$(awk '{print $1}' "$RUN_DIR/peer/pids/training-operator")
NS_KF=bench-kubeflow-$$
k create namespace "$NS_KF" >/dev/null
sleep 2
measure "$NS_KF" tfjob '{range .items[*]}{.status.conditions[?(@.type=="Running")].status}{"\n"}{end}' True "$KF_PID"
KF=("$T_PODS" "$T_RUNNING" "$RSS" "$CPU")
"$TESTBED" peer-kubeflow down >&2 || true
KF_UP=
cleanup_ns "$NS_KF"

ratio() { echo "scale=2; $1 / $2" | bc; }
cat <<EOF2
| $JOBS jobs x (1 chief + $WORKERS workers) = $PODS pods | Ringmaster | Kubeflow training-operator | Kubeflow / Ringmaster |
| --- | ---: | ---: | ---: |
| time until all pods exist (s) | ${RM[0]} | ${KF[0]} | $(ratio "${KF[0]}" "${RM[0]}")x |
| time until every job is Running (s) | ${RM[1]} | ${KF[1]} | $(ratio "${KF[1]}" "${RM[1]}")x |
| operator peak RSS (MiB) | ${RM[2]} | ${KF[2]} | $(ratio "${KF[2]}" "${RM[2]}")x |
| operator CPU during the run (s) | ${RM[3]} | ${KF[3]} | $(ratio "${KF[3]}" "${RM[3]}")x |
EOF2
