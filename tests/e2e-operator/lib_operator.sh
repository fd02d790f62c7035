# Helpers for the operator's end-to-end tests (sourced, bash), on top of
# tests/e2e/lib.sh. Usage: script.sh OPERATOR_BINARY RINGMASTER_CLI
# Each test gets a namespace of its own and runs its own operator processes
# on the host (watching only that namespace, with its Lease there), so tests
# cannot see each other's jobs. Operators are killed and their logs printed
# when the test fails.
. "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.sh"

OPERATOR=${1:?usage: $0 OPERATOR_BINARY RINGMASTER_CLI}
CLI=${2:?usage: $0 OPERATOR_BINARY RINGMASTER_CLI}
LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/ringmaster-e2e-op.XXXXXX")
declare -A OP_PIDS=()

# The CRD and the rest of manifests/ (idempotent).
install_crd() {
  k apply -f "$REPO_ROOT/manifests/" >/dev/null || fail "kubectl apply -f manifests/ failed"
  wait_for 60 "the DistributedJob CRD to be established" \
    k wait --for=condition=Established --timeout=5s crd/distributedjobs.ringmaster.io
}

# start_operator NAME [FLAGS...]: runs ringmaster-operator in the background.
start_operator() {
  local name=$1; shift
  "$OPERATOR" --kubeconfig "$KUBECONFIG" --namespace "$NS" --leader-election-namespace "$NS" \
    --identity "$name" --metrics-address 127.0.0.1:0 --health-probe-address 127.0.0.1:0 --resync-seconds 30 "$@" >>"$LOGDIR/$name.log" 2>&1 &
  OP_PIDS[$name]=$!
  note "operator $name started (pid ${OP_PIDS[$name]})"
}

# await_operator_exit NAME WHY: waits (10 s at most) for it to exit; its exit
# code in OP_RC. WHY ends the failure message ("within 10s WHY").
await_operator_exit() {
  local name=$1 pid=${OP_PIDS[$1]}
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$pid" 2>/dev/null && fail "operator $name did not exit within 10s $2"
  wait "$pid" 2>/dev/null && OP_RC=0 || OP_RC=$?
  unset "OP_PIDS[$name]"
}

# kill_operator NAME SIGNAL: signals it and waits (bounded) for it to exit.
kill_operator() {
  kill "-$2" "${OP_PIDS[$1]}" 2>/dev/null || true
  await_operator_exit "$1" "of SIG$2"
}

# logged_port NAME FIELD: the port the operator logged as FIELD.
logged_port() {
  local port=""
  for _ in $(seq 1 100); do
    port=$(sed -n "s/.*\"$2\":\\([0-9]*\\).*/\\1/p" "$LOGDIR/$1.log" | head -1)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || fail "operator $1 logged no $2"
  echo "$port"
}
metrics_port() { logged_port "$1" port; }     # /metrics
probe_port() { logged_port "$1" probe_port; }  # /healthz, /readyz

operator_cleanup() {
  local rc=$? name
  for name in "${!OP_PIDS[@]}"; do
    kill -9 "${OP_PIDS[$name]}" 2>/dev/null || true
    wait "${OP_PIDS[$name]}" 2>/dev/null || true
  done
  if [ "$rc" != 0 ]; then
    for f in "$LOGDIR"/*.log; do
      [ -f "$f" ] || continue
      echo "----- last lines of $(basename "$f")" >&2
      tail -n 40 "$f" >&2
    done
    [ -z "${NS:-}" ] || k -n "$NS" get djob,pods,svc -o wide >&2 || true
  fi
  rm -rf "$LOGDIR"
  local c
  for c in "${E2E_ON_EXIT[@]}"; do eval "$c" >/dev/null 2>&1 || true; done  # lib.sh's on_exit
  [ -z "${NS:-}" ] || kubectl --request-timeout=10s delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  exit "$rc"
}

# setup: namespace, CRD, cleanup trap (replaces lib.sh's).
setup() {
  new_namespace
  trap operator_cleanup EXIT
  install_crd
}

djob_state() { k -n "$NS" get djob "$1" -o 'jsonpath={.status.state}' 2>/dev/null || true; }
wait_state() {  # SECONDS JOB STATE
  wait_jsonpath "$1" "djob/$2" '{.status.state}' "$3" -n "$NS"
}
pod_count() {  # JOB
  k -n "$NS" get pods -l "ringmaster.io/job-name=$1" -o name 2>/dev/null | wc -l
}
wait_pod_count() {  # SECONDS JOB N
  local end=$(( SECONDS + $1 )) n
  while :; do
    n=$(pod_count "$2")
    [ "$n" = "$3" ] && return 0
    [ "$SECONDS" -lt "$end" ] || fail "timed out after $1s: job $2 has $n pods, want $3"
    sleep 0.25
  done
}
wait_pods_running() {  # SECONDS JOB N
  local end=$(( SECONDS + $1 )) n
  while :; do
    n=$(k -n "$NS" get pods -l "ringmaster.io/job-name=$2" --field-selector=status.phase=Running -o name 2>/dev/null | wc -l)
    [ "$n" = "$3" ] && return 0
    [ "$SECONDS" -lt "$end" ] || fail "timed out after $1s: job $2 has $n Running pods, want $3"
    sleep 0.25
  done
}
pod_uid() { k -n "$NS" get pod "$1" -o 'jsonpath={.metadata.uid}' 2>/dev/null || true; }
pod_exit() { "$TESTBED" pod-exit "$NS" "$1" "$2" >/dev/null 2>&1 || fail "pod-exit $1 $2 failed"; }
condition_reason() {  # JOB TYPE
  k -n "$NS" get djob "$1" -o "jsonpath={.status.conditions[?(@.type==\"$2\")].reason}"
}

# sa_token: a token (1 h) of manifests/' service account ringmaster-operator.
sa_token() { k -n ringmaster-system create token ringmaster-operator --duration=1h; }

# testbed_kubeconfig FILE USER: a kubeconfig for the testbed's server and CA
# whose one user is USER (a flow mapping: `{token: ...}`, `{exec: {...}}`).
testbed_kubeconfig() {
  local server ca
  server=$(k config view --minify --raw -o 'jsonpath={.clusters[0].cluster.server}')
  ca=$(k config view --minify --raw -o 'jsonpath={.clusters[0].cluster.certificate-authority-data}')
  if [ -z "$ca" ]; then
    ca=$(base64 -w0 <"$(k config view --minify --raw -o 'jsonpath={.clusters[0].cluster.certificate-authority}')")
  fi
  cat >"$1" <<YAML
apiVersion: v1
kind: Config
clusters: [{name: testbed, cluster: {server: "$server", certificate-authority-data: "$ca"}}]
users: [{name: sa, user: $2}]
contexts: [{name: sa, context: {cluster: testbed, user: sa}}]
current-context: sa
YAML
}

# job_yaml NAME WORKERS RESTART_POLICY [CHIEF(0|1)] [RUNPOLICY-YAML] [SPEC-EXTRA-YAML]
job_yaml() {
  local name=$1 workers=$2 policy=$3 chief=${4:-0} run=${5:-"{}"} extra=${6:-}
  cat <<YAML
apiVersion: ringmaster.io/v1alpha1
kind: DistributedJob
metadata:
  name: $name
spec:
  runPolicy: $run
  $extra
  replicaSpecs:
YAML
  if [ "$chief" = 1 ]; then
    cat <<YAML
    Chief:
      replicas: 1
      restartPolicy: $policy
      template:
        spec:
          containers: [{name: trainer, image: ghcr.io/ringmaster/worker:0.1.0, command: [ringmaster-worker]}]
YAML
  fi
  cat <<YAML
    Worker:
      replicas: $workers
      restartPolicy: $policy
      template:
        spec:
          containers: [{name: trainer, image: ghcr.io/ringmaster/worker:0.1.0, command: [ringmaster-worker]}]
YAML
}
