#!/usr/bin/env bash
# Operator benchmark at scale (not a test). For each scale in JOBS: JOBS
# DistributedJobs x (1 chief + WORKERS workers) are created at once on the
# testbed's kwok nodes, and measured: the time until every pod exists, until
# every job is Running, and, after the jobs are deleted (one DeleteCollection),
# until every pod is gone (the garbage collector of kube-controller-manager
# deletes them through their ownerReferences, kwok finalises each); the
# operator's peak RSS (VmHWM) and CPU seconds until every job is Running.
# In the same run and on the same testbed, each scale also measures
#   bare          a bare client: the same number of pods (Ringmaster's own pod
#                 object, renamed and without owner) POSTed by curl, HTTP/2,
#                 BARE_PARALLEL streams in flight on one TLS connection; then
#                 every pod Running (scheduler + kwok), and one
#                 DeleteCollection of the pods until every pod is gone;
#   bare-job      the bare client creating what the operator creates: the
#                 jobs (no operator runs), then each job's headless Service,
#                 key Secret and pods, owned by the job (Ringmaster's own
#                 objects, renamed), BARE_PARALLEL in flight; then every pod
#                 Running. What Kubernetes itself does for a job (the
#                 scheduler's spreading over a Service's pods, endpoints, the
#                 garbage collector's graph) costs the same here as under the
#                 operator, so this is the limit for an operator's creation
#                 rate on the same machine. Needs the ringmaster run before
#                 it (its objects); its deletion is not timed;
#   ringmaster-tfjob  the same operator with --tfjob on the TFJobs of the
#                 kubeflow runs (Kubeflow's names, one Service per replica);
#   kubeflow      Kubeflow's training-operator (the testbed's pin, v1.9.4;
#                 the figures in docs/benchmarks/operator.md are of v1.8.1)
#                 on equivalent TFJobs, its defaults (client QPS 20, burst 30);
#   kubeflow-qps  the same with Ringmaster's QPS and burst (--kube-api-qps and
#                 --kube-api-burst, see bench/operator/kubeflow-qps.sh).
# Prints one markdown table per scale (times, pods/s, fraction of the bare
# clients' creation rates, peak RSS, CPU; and the profile of the creation
# phase: the API server's CPU, the cores busy, the API writes per pod, each
# control-plane process's CPU) and, with two scales or more, each operator's
# peak RSS fitted against pods (bytes per pod).
#
#   bench/operator/run.sh [OPERATOR_BINARY]   (default build/bin/ringmaster-operator)
#   env: JOBS="100 1000"  scales (number of jobs); default 50
#        WORKERS=9        workers per job (pods per job: WORKERS + 1); default 8
#        RUNS="ringmaster ringmaster-tfjob bare bare-job kubeflow kubeflow-qps"   what to measure (this order)
#        LIMIT_S=900      per phase (create, delete) before giving up
#        BARE_PARALLEL=64 the bare client's requests in flight
#        MEASURE_DELETE="ringmaster kubeflow"  the runs whose deletion is
#                         timed (default: all); the others' pods are
#                         force-deleted (the deletion is the garbage
#                         collector's and kwok's work, not the operator's)
#        RINGMASTER_QPS, RINGMASTER_BURST, RINGMASTER_WORKERS: passed to the
#                         operator (its defaults otherwise); kubeflow-qps
#                         uses the same QPS and burst
#   Everything of docs/benchmarks/operator.md in one command
#   (the operator's defaults; roughly 2 hours on 2 cores, most of it Kubeflow
#   at its defaults at 10,000 pods, ~10 pods/s, and the garbage collector's
#   deletions; MEASURE_DELETE="" leaves those out):
#     JOBS="100 1000" WORKERS=9 LIMIT_S=1500 bench/operator/run.sh build/bin/ringmaster-operator
#   The second pass's tables came from the two commands given there.
#   A run that passes LIMIT_S exits 1, saying how many pods it had by then,
#   the operator's CPU and peak RSS.
#
# Needs the testbed (scripts/testbed build; it is brought up if it is not; set
# RINGMASTER_TESTBED_DIR for a testbed of your own), Kubeflow's
# training-operator built by it (scripts/testbed build kubeflow), curl with
# HTTP/2, jq. Removes what it creates (namespaces, nodes, the Kubeflow peer).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OPERATOR=${1:-$ROOT/build/bin/ringmaster-operator}
SCALES=${JOBS:-50}
WORKERS=${WORKERS:-8}
RUNS=${RUNS:-ringmaster ringmaster-tfjob bare bare-job kubeflow kubeflow-qps}
JOB_LABEL=ringmaster.io/job-name
LIMIT_S=${LIMIT_S:-900}
BARE_PARALLEL=${BARE_PARALLEL:-64}
MEASURE_DELETE=${MEASURE_DELETE-$RUNS}
TESTBED="$ROOT/scripts/testbed"
[ -x "$OPERATOR" ] || { echo "no operator at $OPERATOR (build it first)" >&2; exit 1; }
for tool in curl jq bc; do
  command -v "$tool" >/dev/null || { echo "run.sh: needs $tool" >&2; exit 1; }
done
curl --version | grep -q HTTP2 || { echo "run.sh: this curl has no HTTP/2" >&2; exit 1; }
"$TESTBED" status >/dev/null 2>&1 || "$TESTBED" up >&2
eval "$("$TESTBED" env)"
RUN_DIR=${RINGMASTER_TESTBED_DIR:-${RINGMASTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ringmaster}/testbed-run}
k() { kubectl --request-timeout=60s "$@"; }
. "$ROOT/bench/operator/lib.sh"
has_run() { [[ " $RUNS " == *" $1 "* ]]; }

# Ringmaster's QPS and burst: the environment's, else the operator's defaults.
# (--help's lines: "  --qps FLOAT:a number in [0.01, 1000000]=500 (Env:...)".)
RM_QPS=${RINGMASTER_QPS:-$("$OPERATOR" --help | sed -n 's/^ *--qps [^=]*=\([0-9.]*\).*/\1/p')}
RM_BURST=${RINGMASTER_BURST:-$("$OPERATOR" --help | sed -n 's/^ *--burst [^=]*=\([0-9]*\).*/\1/p')}
[ -n "$RM_QPS" ] && [ -n "$RM_BURST" ] || { echo "run.sh: cannot read the operator's --qps/--burst defaults from --help" >&2; exit 1; }
KF_QPS_BIN=""
if has_run kubeflow-qps; then KF_QPS_BIN=$("$ROOT/bench/operator/kubeflow-qps.sh"); fi

WORK=$(mktemp -d)
# The API server and the client credentials, for curl.
SERVER=$(k config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
k config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$WORK/ca.crt"
k config view --raw --minify -o jsonpath='{.users[0].user.client-certificate-data}' | base64 -d >"$WORK/client.crt"
k config view --raw --minify -o jsonpath='{.users[0].user.client-key-data}' | base64 -d >"$WORK/client.key"
[ -s "$WORK/client.crt" ] && [ -s "$WORK/client.key" ] ||
  { echo "run.sh: the kubeconfig has no embedded client certificate and key (curl needs them)" >&2; exit 1; }
CURL=(curl -sS --http2 --cacert "$WORK/ca.crt" --cert "$WORK/client.crt" --key "$WORK/client.key")

now() { date +%s.%N; }
since() { echo "scale=2; ($(now) - $1) / 1" | bc; }
cpu_seconds() {  # PID: utime+stime in seconds
  awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"
}
peak_rss_kib() { awk '/VmHWM/ { print $2 }' "/proc/$1/status"; }
# The profile of the creation phase: what bounds it is the API server on
# the same cores. APISERVER_PID's CPU seconds, the machine's busy CPU
# seconds (all cores, from /proc/stat), and the API server's write requests
# (POST, PUT, PATCH, DELETE in apiserver_request_total: every client's,
# the scheduler's, kwok's and the controllers' as well).
APISERVER_PID=$(awk '{print $1}' "$RUN_DIR/pids/kube-apiserver")
busy_seconds() {
  awk -v hz="$(getconf CLK_TCK)" '/^cpu / { print ($2 + $3 + $4 + $7 + $8) / hz }' /proc/stat
}
api_writes() {
  "${CURL[@]}" --max-time 60 "$SERVER/metrics" |
    awk '/^apiserver_request_total\{/ && /verb="(POST|PUT|PATCH|DELETE)"/ { n += $NF } END { printf "%d\n", n }'
}
# components_cpu [OPERATOR_PID]: "name seconds" for each testbed process
# (and the operator).
components_cpu() {
  local f
  for f in "$RUN_DIR"/pids/*; do echo "$(basename "$f") $(cpu_seconds "$(awk '{print $1}' "$f")")"; done
  [ -z "${1:-}" ] || echo "operator $(cpu_seconds "$1")"
}
# profile_start [OPERATOR_PID] / profile_end: the phase's API server CPU,
# machine busy CPU and API writes into P_API_CPU P_BUSY P_WRITES, and each
# component's CPU seconds into P_COMPONENTS ("name=seconds ...").
profile_start() {
  P_OP=${1:-}
  P0_API=$(cpu_seconds "$APISERVER_PID"); P0_BUSY=$(busy_seconds); P0_WRITES=$(api_writes)
  components_cpu "$P_OP" >"$WORK/cpu0"
}
profile_end() {
  P_API_CPU=$(echo "$(cpu_seconds "$APISERVER_PID") - $P0_API" | bc)
  P_BUSY=$(echo "$(busy_seconds) - $P0_BUSY" | bc)
  P_WRITES=$(( $(api_writes) - P0_WRITES ))
  P_COMPONENTS=$(components_cpu "$P_OP" | awk 'NR == FNR { c[$1] = $2; next } { printf "%s=%.1f ", $1, $2 - c[$1] }' "$WORK/cpu0" -)
}
# count_pods NS: how many pods exist (a list of one item and its remainingItemCount).
count_pods() {
  "${CURL[@]}" --max-time 60 "$SERVER/api/v1/namespaces/$1/pods?limit=1" |
    jq -e '(.metadata.remainingItemCount // 0) + (.items | length)'
}
# not_running NS: how many pods are not Running (server-side field selector).
not_running() {
  k -n "$1" get pods --field-selector=status.phase!=Running -o name | wc -l
}

# post_all URL DIR: POST every DIR/*.json to URL, BARE_PARALLEL in flight
# over HTTP/2; fails unless every answer is 201.
post_all() {
  local url=$1 dir=$2 f codes sep=""
  for f in "$dir"/*.json; do
    printf '%surl = "%s"\ndata-binary = "@%s"\nheader = "Content-Type: application/json"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\nsilent\nshow-error\nhttp2\ncacert = "%s"\ncert = "%s"\nkey = "%s"\n' \
      "$sep" "$url" "$f" "$WORK/ca.crt" "$WORK/client.crt" "$WORK/client.key"
    sep=$'next\n'
  done >"$dir.curl"
  codes=$(curl --parallel --parallel-max "$BARE_PARALLEL" -K "$dir.curl" 2>"$dir.curl.err" | sort | uniq -c)
  if [ "$(awk '$2 != 201 { n += $1 } END { print n + 0 }' <<<"$codes")" != 0 ] ||
     [ "$(awk '{ n += $1 } END { print n + 0 }' <<<"$codes")" != "$(find "$dir" -name '*.json' | wc -l)" ]; then
    echo "run.sh: POST $url: not every object was created (count, HTTP code): $codes $(sort "$dir.curl.err" | uniq -c | head -5)" >&2
    return 1
  fi
}
# wait_all_running RUN NS: checks that every pod exists, then waits until
# every one is Running (a bare client's pods: no job to ask).
wait_all_running() {
  local n end=$(( SECONDS + LIMIT_S ))
  n=$(count_pods "$2"); [ "$n" -ge "$PODS" ] || { echo "run.sh: $1: $n pods, not $PODS" >&2; exit 1; }
  until [ "$(not_running "$2")" = 0 ]; do
    [ "$SECONDS" -lt "$end" ] || { echo "run.sh: $1: pods not Running within ${LIMIT_S}s" >&2; exit 1; }
    sleep "$POLL_S"
  done
}
# delete_collection PATH [BODY]: one DeleteCollection.
delete_collection() {
  local body=${2:-'{}'}
  "${CURL[@]}" --max-time 120 -X DELETE -H 'Content-Type: application/json' \
    -d "$body" "$SERVER$1" -o /dev/null -w '%{http_code}' | grep -q '^200$' ||
    { echo "run.sh: DELETE $1 failed" >&2; return 1; }
}
# wait_gone NS START: until the namespace has no pod; prints the time since START.
wait_gone() {
  local ns=$1 start=$2 end=$(( SECONDS + LIMIT_S )) n
  while [ "$SECONDS" -lt "$end" ]; do
    n=$(count_pods "$ns") || n=-1
    if [ "$n" = 0 ]; then since "$start"; return 0; fi
    sleep "$POLL_S"
  done
  echo "run.sh: $ns: $n pods left after ${LIMIT_S}s" >&2
  echo ">$LIMIT_S"
}
# drop_ns NS: remove the namespace quickly (pods force-deleted first).
drop_ns() {
  delete_collection "/api/v1/namespaces/$1/pods" '{"gracePeriodSeconds":0}' || true
  k delete namespace "$1" --wait=true --timeout=300s >/dev/null 2>&1 ||
    echo "run.sh: namespace $1 not gone after 300s" >&2
}
new_ns() {
  k create namespace "$1" >/dev/null
  local end=$(( SECONDS + 60 ))
  until k -n "$1" get serviceaccount default >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$end" ] || { echo "run.sh: no default service account in $1" >&2; exit 1; }
    sleep 0.2
  done
}

# measure NS KIND PLURAL-PATH RUNNING-JSONPATH RUNNING-VALUE PID:
# sets T_PODS T_RUNNING T_PODS_RUNNING T_GONE CPU RSS_KIB
measure() {
  local ns=$1 kind=$2 path=$3 jp=$4 want=$5 pid=$6 start cpu0 n r t_pods="" t_run="" end
  cpu0=$(cpu_seconds "$pid")
  profile_start "$pid"
  start=$(now)
  post_all "$SERVER/apis/$path/namespaces/$ns/$kind" "$WORK/$kind"
  end=$(( SECONDS + LIMIT_S ))
  while [ "$SECONDS" -lt "$end" ]; do
    if [ -z "$t_pods" ]; then
      n=$(count_pods "$ns") || n=0
      if [ "$n" -ge "$PODS" ]; then t_pods=$(since "$start"); profile_end; fi
    fi
    if [ -n "$t_pods" ]; then
      r=$(k -n "$ns" get "$kind" -o "jsonpath=$jp" 2>/dev/null | grep -c "^$want\$" || true)
      if [ "$r" -ge "$JOBS_N" ]; then t_run=$(since "$start"); break; fi
    fi
    sleep "$POLL_S"
  done
  [ -n "$t_run" ] || {
    echo "run.sh: $run: not every job Running within ${LIMIT_S}s: $(count_pods "$ns" || echo "?") of $PODS pods" \
      "after $(since "$start")s (all pods after ${t_pods:--}s), Running jobs: ${r:-0};" \
      "operator CPU $(echo "$(cpu_seconds "$pid") - $cpu0" | bc)s, peak RSS $(peak_rss_kib "$pid") KiB" >&2
    exit 1
  }
  T_PODS=$t_pods T_RUNNING=$t_run
  CPU=$(echo "$(cpu_seconds "$pid") - $cpu0" | bc)
  RSS_KIB=$(peak_rss_kib "$pid")
  # A TFJob is Running under training-operator once its chief runs (without
  # one, a worker); a job of Ringmaster's once every replica runs. Every pod
  # Running is the same work for both.
  wait_all_running "$run" "$ns"
  T_PODS_RUNNING=$(since "$start")
  if [ "$kind" = distributedjobs ]; then  # the bare clients' objects: Ringmaster's
    k -n "$ns" get pods -o json | jq '.items[0]' >"$WORK/pod-template.json"
    k -n "$ns" get services -o json | jq '.items[0]' >"$WORK/service-template.json"
    k -n "$ns" get secrets -l "$JOB_LABEL" -o json | jq '.items[0]' >"$WORK/secret-template.json"
  fi
  if [[ " $MEASURE_DELETE " == *" $run "* ]]; then
    start=$(now)
    delete_collection "/apis/$path/namespaces/$ns/$kind"
    T_GONE=$(wait_gone "$ns" "$start")
  else
    T_GONE=-
  fi
}

# The job files: one JSON object each, posted by the bare client (curl).
container='[{"name":"tensorflow","image":"ghcr.io/ringmaster/worker:0.1.0","command":["ringmaster-worker"]}]'
write_jobs() {
  local i spec
  rm -rf "$WORK/distributedjobs" "$WORK/tfjobs"; mkdir -p "$WORK/distributedjobs" "$WORK/tfjobs"
  spec="{\"Chief\":{\"replicas\":1,\"restartPolicy\":\"OnFailure\",\"template\":{\"spec\":{\"containers\":$container}}},\"Worker\":{\"replicas\":$WORKERS,\"restartPolicy\":\"OnFailure\",\"template\":{\"spec\":{\"containers\":$container}}}}"
  for i in $(seq 1 "$JOBS_N"); do
    echo "{\"apiVersion\":\"ringmaster.io/v1alpha1\",\"kind\":\"DistributedJob\",\"metadata\":{\"name\":\"bench-$i\"},\"spec\":{\"runPolicy\":{\"cleanPodPolicy\":\"Running\"},\"replicaSpecs\":$spec}}" \
      >"$WORK/distributedjobs/$i.json"
    echo "{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\",\"metadata\":{\"name\":\"bench-$i\"},\"spec\":{\"runPolicy\":{\"cleanPodPolicy\":\"Running\"},\"tfReplicaSpecs\":$spec}}" \
      >"$WORK/tfjobs/$i.json"
  done
}
# The bare client's pods: Ringmaster's pod object (from the ringmaster run,
# else a minimal one), renamed, without owner, uid, status or node.
write_pods() {
  local tmpl="$WORK/pod-template.json"
  [ -s "$tmpl" ] || echo "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\"},\"spec\":{\"containers\":$container}}" >"$tmpl"
  rm -rf "$WORK/pods"; mkdir -p "$WORK/pods"
  jq -c --argjson n "$PODS" 'del(.metadata.uid, .metadata.resourceVersion, .metadata.creationTimestamp,
      .metadata.ownerReferences, .metadata.managedFields, .metadata.generateName, .metadata.namespace,
      .status, .spec.nodeName) | . as $p | range(1; $n + 1) | . as $i | $p | .metadata.name = "bare-\($i)"' \
    "$tmpl" | awk -v d="$WORK/pods" '{ print > (d "/" NR ".json"); close(d "/" NR ".json") }'
}

# The bare client's objects of every job (run bare-job), owned by the jobs
# in JOBS_JSON (a list of {name, uid}): its headless Service, its key
# Secret and its pods, Ringmaster's own objects renamed (the job's name in
# names, labels, selector and owner reference). Into $WORK/job-{services,secrets,pods}.
write_job_objects() {
  local kind
  for kind in service secret pod; do
    [ -s "$WORK/$kind-template.json" ] && [ "$(cat "$WORK/$kind-template.json")" != null ] ||
      { echo "run.sh: bare-job needs the ringmaster run before it (for its objects)" >&2; exit 1; }
  done
  rm -rf "$WORK"/job-{services,secrets,pods}; mkdir -p "$WORK"/job-{services,secrets,pods}
  jq -nc --slurpfile svc "$WORK/service-template.json" --slurpfile sec "$WORK/secret-template.json" \
      --slurpfile pod "$WORK/pod-template.json" --slurpfile jobs "$JOBS_JSON" --argjson w "$WORKERS" '
    ($pod[0].metadata.ownerReferences[0].name) as $old
    | def own($j): .metadata.ownerReferences = [.metadata.ownerReferences[0] | .name = $j.name | .uid = $j.uid]
        | .metadata.labels |= with_entries(if .value == $old then .value = $j.name else . end)
        | del(.metadata.uid, .metadata.resourceVersion, .metadata.creationTimestamp, .metadata.managedFields,
              .metadata.namespace, .status);
      $jobs[0][] as $j
      | ($svc[0] | own($j) | .metadata.name = $j.name | .spec.selector |= with_entries(.value = $j.name)
           | del(.spec.clusterIPs) | {dir: "services", o: .}),
        ($sec[0] | own($j) | .metadata.name = ($j.name + "-ringmaster-key") | {dir: "secrets", o: .}),
        (range(0; $w + 1) as $r | $pod[0] | own($j) | del(.spec.nodeName)
           | .metadata.name = ($j.name + (if $r == 0 then "-chief-0" else "-worker-\($r - 1)" end))
           | {dir: "pods", o: .})' |
    awk -v d="$WORK/job-" '{ match($0, /^\{"dir":"[a-z]+"/); dir = substr($0, 9, RLENGTH - 9)
      sub(/^\{"dir":"[a-z]+","o":/, ""); sub(/\}$/, ""); f = d dir "/" NR ".json"; print > f; close(f) }'
}

# kwok nodes: 110 pods each; enough for the largest scale.
MAX_JOBS=$(tr ' ' '\n' <<<"$SCALES" | sort -n | tail -1)
EXTRA_NODES=$(( MAX_JOBS * (WORKERS + 1) / 110 + 2 ))
cleanup() {
  [ -z "${RM_PID:-}" ] || kill "$RM_PID" 2>/dev/null || true
  [ -z "${KFQ_PID:-}" ] || kill "$KFQ_PID" 2>/dev/null || true
  [ -z "${KF_UP:-}" ] || "$TESTBED" peer-kubeflow down >&2 || true
  for ns in ${NAMESPACES:-}; do drop_ns "$ns"; done
  drop_bench_nodes
  rm -rf "$WORK"
}
trap cleanup EXIT
bench_nodes "$EXTRA_NODES"
k apply -f "$ROOT/manifests/00-crd.yaml" >/dev/null
established crd/distributedjobs.ringmaster.io

ratio() { case "$1$2" in *'>'*|*-*) echo "-" ;; *) printf "%.2f" "$(echo "scale=4; $1 / $2" | bc)" ;; esac; }
per_pod() { printf "%.2f" "$(echo "scale=4; $1 * 1000 / $PODS" | bc)"; }
rate() { case "$1" in *'>'*|-) echo "-" ;; *) echo "scale=0; $PODS / $1" | bc ;; esac; }
declare -A R   # R[run,field]
FIT=""         # lines "run pods rss_kib"
for JOBS_N in $SCALES; do
  PODS=$(( JOBS_N * (WORKERS + 1) ))
  POLL_S=$( [ "$PODS" -le 1000 ] && echo 0.2 || echo 1 )
  echo "run.sh: scale $JOBS_N jobs x $(( WORKERS + 1 )) pods = $PODS pods" >&2
  write_jobs
  rm -f "$WORK/pod-template.json"
  NAMESPACES=""
  for run in $RUNS; do
    ns=bench-$run-$$-$JOBS_N
    new_ns "$ns"; NAMESPACES+=" $ns"
    case $run in
      ringmaster)
        "$OPERATOR" --kubeconfig "$KUBECONFIG" --namespace "$ns" --leader-elect=false --metrics-address 0 \
          >"$WORK/ringmaster.log" 2>&1 &
        RM_PID=$!
        sleep 2
        measure "$ns" distributedjobs ringmaster.io/v1alpha1 '{range .items[*]}{.status.state}{"\n"}{end}' Running "$RM_PID"
        kill -TERM "$RM_PID"; wait "$RM_PID" || true; RM_PID=
        ;;
      ringmaster-tfjob)
        # The same TFJobs as Kubeflow's runs, through the operator's --tfjob;
        # training-operator must not be running beside it.
        if [ -n "${KF_UP:-}" ]; then "$TESTBED" peer-kubeflow down >&2; KF_UP=; fi
        if ! k get crd tfjobs.kubeflow.org >/dev/null 2>&1; then
          k create -f "$ROOT/charts/ringmaster/crds/tfjobs.kubeflow.org.yaml" >/dev/null
          established crd/tfjobs.kubeflow.org
        fi
        "$OPERATOR" --kubeconfig "$KUBECONFIG" --namespace "$ns" --leader-elect=false --metrics-address 0 --tfjob \
          >"$WORK/ringmaster-tfjob.log" 2>&1 &
        RM_PID=$!
        sleep 2
        measure "$ns" tfjobs kubeflow.org/v1 '{range .items[*]}{.status.conditions[?(@.type=="Running")].status}{"\n"}{end}' True "$RM_PID"
        kill -TERM "$RM_PID"; wait "$RM_PID" || true; RM_PID=
        ;;
      bare)
        write_pods
        profile_start
        start=$(now)
        post_all "$SERVER/api/v1/namespaces/$ns/pods" "$WORK/pods"
        T_PODS=$(since "$start")
        profile_end
        wait_all_running "bare" "$ns"
        T_RUNNING=$(since "$start") T_PODS_RUNNING=$(since "$start")
        T_GONE=-
        if [[ " $MEASURE_DELETE " == *" bare "* ]]; then
          start=$(now)
          delete_collection "/api/v1/namespaces/$ns/pods"
          T_GONE=$(wait_gone "$ns" "$start")
        fi
        CPU=- RSS_KIB=-
        ;;
      bare-job)
        # The same objects as the operator creates, by the bare client: the
        # jobs (no operator runs: they only own), then each job's Service,
        # Secret and pods. Timed without the jq that writes the objects
        # between the two (it needs the jobs' uids), and that jq's CPU is
        # taken out of the machine's busy seconds.
        profile_start
        start=$(now)
        post_all "$SERVER/apis/ringmaster.io/v1alpha1/namespaces/$ns/distributedjobs" "$WORK/distributedjobs"
        t_jobs=$(since "$start")
        gen_busy=$(busy_seconds)
        JOBS_JSON="$WORK/jobs.json"
        "${CURL[@]}" --max-time 60 "$SERVER/apis/ringmaster.io/v1alpha1/namespaces/$ns/distributedjobs" |
          jq '[.items[].metadata | {name, uid}]' >"$JOBS_JSON"
        write_job_objects
        gen_busy=$(echo "$(busy_seconds) - $gen_busy" | bc)
        start=$(now)
        for kind in services secrets pods; do
          post_all "$SERVER/api/v1/namespaces/$ns/$kind" "$WORK/job-$kind"
        done
        T_PODS=$(echo "$(since "$start") + $t_jobs" | bc)
        profile_end
        P_BUSY=$(echo "$P_BUSY - $gen_busy" | bc)
        wait_all_running "bare-job" "$ns"
        T_RUNNING=$(echo "$(since "$start") + $t_jobs" | bc) T_PODS_RUNNING=$T_RUNNING
        T_GONE=- CPU=- RSS_KIB=-
        ;;
      kubeflow|kubeflow-qps)
        if [ -z "${KF_UP:-}" ]; then "$TESTBED" peer-kubeflow up >&2; KF_UP=1; fi
        pid=$(awk '{print $1}' "$RUN_DIR/peer/pids/training-operator")
        if [ "$run" = kubeflow-qps ]; then
          # The testbed's peer stopped, the rebuilt one started with its very
          # arguments (and webhook certificates) plus the two flags.
          mapfile -d '' args <"/proc/$pid/cmdline"
          kill -TERM "$pid"; while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
          # shellcheck disable=SC1090
          . "$RUN_DIR/peer/ports.env"
          KUBECONFIG="$RUN_DIR/kubeconfig" MY_POD_NAMESPACE=kubeflow \
            "$KF_QPS_BIN" "${args[@]:1}" --kube-api-qps "$RM_QPS" --kube-api-burst "$RM_BURST" \
            >"$WORK/kubeflow-qps.log" 2>&1 &
          KFQ_PID=$! pid=$!
          end=$(( SECONDS + 120 ))
          until curl -fsS --max-time 2 "http://127.0.0.1:$PEER_PROBE_PORT/readyz" >/dev/null 2>&1; do
            kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$end" ] ||
              { tail -20 "$WORK/kubeflow-qps.log" >&2; echo "run.sh: kubeflow-qps: not ready" >&2; exit 1; }
            sleep 0.5
          done
          # Before v1.9 the added flags log what they set (v1.9's own flags do not log).
          if grep -q 'rate limits' "$WORK/kubeflow-qps.log"; then
            grep -q "\"qps\": $RM_QPS" "$WORK/kubeflow-qps.log" ||
              { grep 'rate limits' "$WORK/kubeflow-qps.log" >&2; echo "run.sh: kubeflow-qps: QPS not $RM_QPS" >&2; exit 1; }
          fi
        fi
        sleep 2
        measure "$ns" tfjobs kubeflow.org/v1 '{range .items[*]}{.status.conditions[?(@.type=="Running")].status}{"\n"}{end}' True "$pid"
        if [ "$run" = kubeflow-qps ]; then
          # The testbed's peer was replaced: a later kubeflow run starts it anew.
          kill -TERM "$KFQ_PID"; wait "$KFQ_PID" || true; KFQ_PID=
          "$TESTBED" peer-kubeflow down >&2; KF_UP=
        fi
        ;;
      *) echo "run.sh: unknown run '$run' in RUNS" >&2; exit 2 ;;
    esac
    R[$run,pods]=$T_PODS R[$run,running]=$T_RUNNING R[$run,gone]=$T_GONE R[$run,cpu]=$CPU
    R[$run,pods_running]=$T_PODS_RUNNING
    R[$run,api_cpu]=$P_API_CPU R[$run,busy]=$P_BUSY R[$run,writes]=$P_WRITES R[$run,components]=$P_COMPONENTS
    R[$run,rss]=$( [ "$RSS_KIB" = - ] && echo - || echo "scale=1; $RSS_KIB / 1024" | bc )
    [ "$RSS_KIB" = - ] || FIT+="$run $PODS $RSS_KIB"$'\n'
    echo "run.sh: $run: pods ${T_PODS}s, Running ${T_RUNNING}s, every pod Running ${T_PODS_RUNNING}s, gone ${T_GONE}s, CPU ${CPU}s, peak RSS ${R[$run,rss]} MiB;" \
      "until all pods: API server CPU ${P_API_CPU}s, machine busy ${P_BUSY}s, API writes $P_WRITES;" \
      "CPU seconds by process: $P_COMPONENTS" >&2
    drop_ns "$ns"; NAMESPACES=${NAMESPACES% "$ns"}
  done
  if [ -n "${KF_UP:-}" ]; then "$TESTBED" peer-kubeflow down >&2; KF_UP=; fi

  echo
  echo "$JOBS_N jobs x (1 chief + $WORKERS workers) = $PODS pods; operator QPS/burst: Ringmaster $RM_QPS/$RM_BURST, kubeflow 20/30, kubeflow-qps $RM_QPS/$RM_BURST"
  echo
  printf '| %s |' "$PODS pods"; for run in $RUNS; do printf ' %s |' "$run"; done; echo
  printf '| --- |'; for run in $RUNS; do printf ' ---: |'; done; echo
  row() {  # TITLE FIELD|expr
    printf '| %s |' "$1"
    for run in $RUNS; do printf ' %s |' "$(eval "$2")"; done; echo
  }
  row "time until all pods exist (s)" 'echo "${R[$run,pods]}"'
  row "creation rate (pods/s)" 'rate "${R[$run,pods]}"'
  has_run bare && row "creation rate / bare client's" 'ratio "${R[bare,pods]}" "${R[$run,pods]}"'
  has_run bare-job && row "creation rate / bare-job's" 'ratio "${R[bare-job,pods]}" "${R[$run,pods]}"'
  row "time until every job (bare: pod) is Running (s)" 'echo "${R[$run,running]}"'
  row "time until every pod is Running (s)" 'echo "${R[$run,pods_running]}"'
  row "time until all pods are gone after the delete (s)" 'echo "${R[$run,gone]}"'
  row "operator peak RSS (MiB)" 'echo "${R[$run,rss]}"'
  row "operator CPU until all Running (s)" 'echo "${R[$run,cpu]}"'
  row "until all pods exist: API server CPU (s)" 'echo "${R[$run,api_cpu]}"'
  row "until all pods exist: API server CPU per pod (ms)" 'per_pod "${R[$run,api_cpu]}"'
  row "until all pods exist: cores busy (of $(nproc))" 'ratio "${R[$run,busy]}" "${R[$run,pods]}"'
  row "until all pods exist: API writes per pod (all clients)" 'ratio "${R[$run,writes]}" "$PODS"'
  row "until all pods exist: CPU seconds by process" 'echo "${R[$run,components]}"'
  echo
done

# Peak RSS against pods: a least-squares line per operator (two scales or more).
if [ "$(wc -w <<<"$SCALES")" -ge 2 ]; then
  echo "Peak RSS fitted against pods (least squares over the scales):"
  echo
  echo "| operator | intercept (MiB) | bytes per pod |"
  echo "| --- | ---: | ---: |"
  awk 'NF == 3 { n[$1]++; sx[$1] += $2; sy[$1] += $3 * 1024; sxx[$1] += $2 * $2; sxy[$1] += $2 * $3 * 1024 }
       END { for (r in n) { d = n[r] * sxx[r] - sx[r] * sx[r]; if (d == 0) continue
             b = (n[r] * sxy[r] - sx[r] * sy[r]) / d; a = (sy[r] - b * sx[r]) / n[r]
             printf "| %s | %.1f | %.0f |\n", r, a / 1048576, b } }' <<<"$FIT" | sort
fi
