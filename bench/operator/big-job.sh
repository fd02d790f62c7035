#!/usr/bin/env bash
# One big job (not a test): a single job of N workers on the testbed's kwok
# nodes, for each N in SIZES, by each run in RUNS:
#   ringmaster            a DistributedJob, TF_CONFIG inline in every pod
#                         (the default);
#   ringmaster-configmap  the same job annotated ringmaster.io/tf-config:
#                         ConfigMap (the cluster once, in a ConfigMap);
#   kubeflow              the same as a TFJob, under Kubeflow's
#                         training-operator (the testbed's pin, v1.9.4), its
#                         defaults.
# Measured: the time until every pod exists, until every pod is Running,
# and until every Service exists too (training-operator's, one per replica);
# then what the job's objects hold, read from etcd itself (the values of
# every key under the job's namespace, through etcd's JSON gateway): the
# bytes stored per kind of object, the bytes etcd has written for them (each
# value's size times its version: a pod is written again at every change of
# it, its whole TF_CONFIG with it), and the TF_CONFIG bytes in the pods'
# specs (from the API server: the env values named TF_CONFIG).
# Prints one line of CSV per (N, run) on stdout, under a header.
#
#   bench/operator/big-job.sh [OPERATOR_BINARY]   (default build/bin/ringmaster-operator)
#   env: SIZES="64 256 1024"  workers per job; default 1024
#        RUNS="ringmaster ringmaster-configmap kubeflow"   (this order)
#        LIMIT_S=900          per job before giving up
#   The figures of docs/benchmarks/operator-big-job.md:
#     SIZES="64 256 1024" bench/operator/big-job.sh > docs/benchmarks/operator-big-job.csv
#
# Needs the testbed (brought up if it is not), Kubeflow's training-operator
# built by it (scripts/testbed build kubeflow), curl, jq, bc. Removes what it
# creates (namespaces, nodes, the Kubeflow peer).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OPERATOR=${1:-$ROOT/build/bin/ringmaster-operator}
SIZES=${SIZES:-1024}
RUNS=${RUNS:-ringmaster ringmaster-configmap kubeflow}
LIMIT_S=${LIMIT_S:-900}
TESTBED="$ROOT/scripts/testbed"
[ -x "$OPERATOR" ] || { echo "no operator at $OPERATOR (build it first)" >&2; exit 1; }
for tool in curl jq bc; do
  command -v "$tool" >/dev/null || { echo "big-job.sh: needs $tool" >&2; exit 1; }
done
"$TESTBED" status >/dev/null 2>&1 || "$TESTBED" up >&2
eval "$("$TESTBED" env)"
RUN_DIR=${RINGMASTER_TESTBED_DIR:-${RINGMASTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ringmaster}/testbed-run}
# shellcheck disable=SC1091
ETCD_PORT=$(. "$RUN_DIR/ports.env" && echo "$ETCD_PORT")
ETCD="http://127.0.0.1:$ETCD_PORT"
k() { kubectl --request-timeout=60s "$@"; }
. "$ROOT/bench/operator/lib.sh"
now() { date +%s.%N; }
since() { echo "scale=2; ($(now) - $1) / 1" | bc; }

WORK=$(mktemp -d)
cleanup() {
  [ -z "${RM_PID:-}" ] || kill "$RM_PID" 2>/dev/null || true
  [ -z "${KF_UP:-}" ] || "$TESTBED" peer-kubeflow down >&2 || true
  [ -z "${NS:-}" ] || drop_ns "$NS"
  drop_bench_nodes
  rm -rf "$WORK"
}
trap cleanup EXIT
drop_ns() {
  k -n "$1" delete pods --all --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
  k delete namespace "$1" --wait=true --timeout=300s >/dev/null 2>&1 || echo "big-job.sh: namespace $1 not gone after 300s" >&2
}

# kwok nodes: 110 pods each, enough for the largest job.
MAX=$(tr ' ' '\n' <<<"$SIZES" | sort -n | tail -1)
NODES=$(( MAX / 110 + 2 ))
bench_nodes "$NODES"
k apply -f "$ROOT/manifests/00-crd.yaml" >/dev/null
established crd/distributedjobs.ringmaster.io

# The job, as each run gives it (the container named tensorflow: where
# training-operator puts TF_CONFIG).
job_yaml() {  # RUN N
  local spec="{\"Worker\":{\"replicas\":$2,\"restartPolicy\":\"OnFailure\",\"template\":{\"spec\":{\"containers\":[{\"name\":\"tensorflow\",\"image\":\"ghcr.io/ringmaster/worker:0.1.0\",\"command\":[\"ringmaster-worker\"]}]}}}}"
  case $1 in
    ringmaster) echo "{\"apiVersion\":\"ringmaster.io/v1alpha1\",\"kind\":\"DistributedJob\",\"metadata\":{\"name\":\"big\"},\"spec\":{\"replicaSpecs\":$spec}}" ;;
    ringmaster-configmap) echo "{\"apiVersion\":\"ringmaster.io/v1alpha1\",\"kind\":\"DistributedJob\",\"metadata\":{\"name\":\"big\",\"annotations\":{\"ringmaster.io/tf-config\":\"ConfigMap\"}},\"spec\":{\"replicaSpecs\":$spec}}" ;;
    kubeflow) echo "{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\",\"metadata\":{\"name\":\"big\"},\"spec\":{\"tfReplicaSpecs\":$spec}}" ;;
  esac
}
count_pods() { k -n "$1" get pods --chunk-size=0 -o name 2>/dev/null | wc -l; }
not_running() { k -n "$1" get pods --field-selector=status.phase!=Running -o name | wc -l; }

# etcd_bytes NS: "resource keys bytes written" per kind of object in NS
# (every key /registry/<resource>/NS/<name>; a value's size from its base64
# length; written = size x version, the writes since its creation).
b64() { printf '%s' "$1" | base64 -w0; }
etcd_bytes() {
  # Pages of 100 keys (the gateway's answers stay small with 1,024 pods of
  # 50 KB each), from KEY on; the next page starts after the last key.
  local from page
  from=$(b64 /registry/)
  while :; do
    page=$(curl -fsS --max-time 120 -X POST "$ETCD/v3/kv/range" \
      -d "{\"key\":\"$from\",\"range_end\":\"$(b64 /registry0)\",\"limit\":100}")
    # (Not the namespace's own: its default ServiceAccount and kube-root-ca.crt.)
    jq -r --arg ns "$1" '.kvs[]? | (.key | @base64d) as $k | select($k | contains("/" + $ns + "/"))
      | select(($k | endswith("/kube-root-ca.crt") or startswith("/registry/serviceaccounts/")) | not)
      | (.value | length) as $l
      | ($l / 4 * 3 - (if (.value | endswith("==")) then 2 elif (.value | endswith("=")) then 1 else 0 end)) as $size
      | "\($k | split("/" + $ns + "/")[0] | ltrimstr("/registry/")) \($size) \((.version // "1") | tonumber)"' <<<"$page"
    [ "$(jq -r '.more // false' <<<"$page")" = true ] || break
    from=$( (jq -j '.kvs[-1].key | @base64d' <<<"$page"; printf '\0') | base64 -w0)
  done | awk '{ n[$1]++; b[$1] += $2; w[$1] += $2 * $3 } END { for (r in n) printf "%s %d %d %d\n", r, n[r], b[r], w[r] }' | sort
}

echo "workers,run,pods_s,running_s,objects_s,pod_bytes,tfconfig_bytes,configmap_bytes,service_bytes,job_bytes,other_bytes,total_bytes,total_written_bytes,pods_written_bytes"
for N in $SIZES; do
  for run in $RUNS; do
    # Names of one length for every run: TF_CONFIG's addresses hold the namespace.
    case $run in ringmaster) code=rmi ;; ringmaster-configmap) code=rmc ;; *) code=kfl ;; esac
    NS=bigjob-$code-$N-$$
    k create namespace "$NS" >/dev/null
    end=$(( SECONDS + 60 ))
    until k -n "$NS" get serviceaccount default >/dev/null 2>&1; do
      [ "$SECONDS" -lt "$end" ] || { echo "big-job.sh: no default service account in $NS" >&2; exit 1; }
      sleep 0.2
    done
    case $run in
      ringmaster|ringmaster-configmap)
        "$OPERATOR" --kubeconfig "$KUBECONFIG" --namespace "$NS" --leader-elect=false --metrics-address 0 \
          >"$WORK/$run-$N.log" 2>&1 &
        RM_PID=$!
        ;;
      kubeflow)
        if [ -z "${KF_UP:-}" ]; then "$TESTBED" peer-kubeflow up >&2; KF_UP=1; fi
        ;;
      *) echo "big-job.sh: unknown run '$run'" >&2; exit 2 ;;
    esac
    sleep 2
    job_yaml "$run" "$N" >"$WORK/job.json"
    start=$(now)
    k -n "$NS" create -f "$WORK/job.json" >/dev/null
    t_pods="" t_run=""
    end=$(( SECONDS + LIMIT_S ))
    while [ "$SECONDS" -lt "$end" ]; do
      if [ -z "$t_pods" ] && [ "$(count_pods "$NS")" -ge "$N" ]; then t_pods=$(since "$start"); fi
      if [ -n "$t_pods" ] && [ "$(not_running "$NS")" = 0 ]; then t_run=$(since "$start"); break; fi
      sleep 0.5
    done
    [ -n "$t_run" ] || { echo "big-job.sh: $run N=$N: not all pods Running within ${LIMIT_S}s ($(count_pods "$NS") pods)" >&2; exit 1; }
    # Every Service too (training-operator makes one per replica, and goes on
    # making them after the pods are Running): the job's objects complete.
    want_svcs=$( [ "$run" = kubeflow ] && echo "$N" || echo 1 )
    until [ "$(k -n "$NS" get services --chunk-size=0 -o name | wc -l)" -ge "$want_svcs" ]; do
      [ "$SECONDS" -lt "$end" ] || { echo "big-job.sh: $run N=$N: not every Service within ${LIMIT_S}s" >&2; exit 1; }
      sleep 0.5
    done
    t_all=$(since "$start")
    # Let the last status writes land before reading the store.
    sleep 3
    tf=$(k -n "$NS" get pods -o json |
      jq '[.items[].spec.containers[].env[]? | select(.name == "TF_CONFIG") | .value | utf8bytelength] | add // 0')
    etcd_bytes "$NS" >"$WORK/etcd"
    echo "big-job.sh: $run N=$N: pods ${t_pods}s, Running ${t_run}s, every Service ${t_all}s; etcd (resource keys bytes written):" >&2
    sed 's/^/  /' "$WORK/etcd" >&2
    field() { awk -v r="$1" -v c="$2" '$1 == r { s += $c } END { print s + 0 }' "$WORK/etcd"; }
    total=$(awk '{ s += $3 } END { print s + 0 }' "$WORK/etcd")
    written=$(awk '{ s += $4 } END { print s + 0 }' "$WORK/etcd")
    pods=$(field pods 3) cms=$(field configmaps 3) svcs=$(field services/specs 3)
    jobs=$(( $(field ringmaster.io/distributedjobs 3) + $(field kubeflow.org/tfjobs 3) ))
    echo "$N,$run,$t_pods,$t_run,$t_all,$pods,$tf,$cms,$svcs,$jobs,$(( total - pods - cms - svcs - jobs )),$total,$written,$(field pods 4)"
    if [ -n "${RM_PID:-}" ]; then kill -TERM "$RM_PID"; wait "$RM_PID" || true; RM_PID=; fi
    drop_ns "$NS"; NS=
  done
done
