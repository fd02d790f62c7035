# shellcheck shell=bash disable=SC2034
# Helpers for the real-pod end-to-end tests (sourced, bash), on top of
# tests/e2e/lib.sh. These run on the testbed's real node (kubelet,
# containerd, CoreDNS, kube-proxy) with the images built from the
# repository's Dockerfiles (scripts/images), reconciled by the operator
# running in-cluster (install.sh, the fixture that helm-installs it).
. "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.sh"

# The in-cluster operator's namespace and the namespaces it watches: one per
# real-pod test, fixed so that the chart's Roles can be granted at install.
OPERATOR_NS=ringmaster-system
REAL_NAMESPACES=(rm-real-quickstart rm-real-late rm-real-missing rm-real-kill rm-real-timeout rm-real-keras rm-real-kueue rm-real-intruder
                 rm-real-recovery rm-real-elastic)
RELEASE=rm
REAL_NODE=${RINGMASTER_REAL_NODE:-ringmaster-real-0}
WORKER_IMAGE=ghcr.io/ringmaster/worker:0.1.0
KERAS_IMAGE=ghcr.io/ringmaster/keras-example:0.1.0

# host_operator LOGDIR [FLAGS...]: Ringmaster's operator ($OPERATOR) run on
# the host, watching $NS only (the in-cluster one does not watch it), its
# log in LOGDIR/op.log; stopped when the test exits, and a failure shows its
# last words.
host_operator() {
  local logdir=$1
  shift
  "$OPERATOR" --kubeconfig "$KUBECONFIG" --namespace "$NS" --leader-elect=false \
    --metrics-address 0 --health-probe-address 0 "$@" >"$logdir/op.log" 2>&1 &
  on_exit "kill $!"
  HOST_OPERATOR_LOG=$logdir/op.log
  fail() {
    tail -n 30 "$HOST_OPERATOR_LOG" >&2
    printf 'FAIL %s: %s\n' "$E2E_NAME" "$*" >&2
    exit 1
  }
}

# use_namespace NAME: this test's namespace (one of REAL_NAMESPACES), emptied
# of jobs first; its objects are dumped when the test fails.
use_namespace() {
  NS=$1
  k get namespace "$NS" >/dev/null 2>&1 || fail "namespace $NS is missing (install.sh creates it)"
  k -n "$NS" delete djob --all --wait=true --timeout=60s >/dev/null 2>&1 || true
  wait_for 60 "no pods left in $NS" bash -c "[ -z \"\$(kubectl -n $NS get pods -o name)\" ]"
}

dump_on_failure() {
  [ -n "${NS:-}" ] || return 0
  {
    echo "----- $NS: jobs, pods, events"
    kubectl -n "$NS" get djob,pods,svc -o wide
    kubectl -n "$NS" get djob -o yaml | sed -n '/^  status:/,$p' | head -60
    kubectl -n "$NS" get events --sort-by=.lastTimestamp | tail -30
    for p in $(kubectl -n "$NS" get pods -o name); do
      echo "----- logs of $p"; kubectl -n "$NS" logs "$p" --all-containers --tail=30
    done
    echo "----- operator"
    kubectl -n "$OPERATOR_NS" logs -l "app.kubernetes.io/name=ringmaster-operator,app.kubernetes.io/instance=$RELEASE" --tail=40
  } >&2 2>&1 || true
}
# On failure, what the cluster knew, then lib.sh's exit handling.
trap '_E2E_RC=$?; set +e; [ $_E2E_RC = 0 ] || dump_on_failure; _e2e_exit $_E2E_RC' EXIT

# on_real_node: a job's YAML on stdin, every replica's pod template sent to
# the real node (its label and its taint) on stdout. The examples' pod
# templates are `        spec:` lines (8 spaces) under `template:`.
on_real_node() {
  awk -v node="$REAL_NODE" '
    { print }
    /^      template:$/ { in_tpl = 1; next }
    in_tpl && /^        spec:$/ {
      print "          nodeSelector: {ringmaster.io/node: real}"
      print "          tolerations: [{key: ringmaster.io/real-node, operator: Exists, effect: NoSchedule}]"
      in_tpl = 0
    }'
}

apply_job() {  # FILE: on the real node, in $NS
  on_real_node <"$1" | k -n "$NS" apply -f - >/dev/null || fail "kubectl apply of $1 failed"
}

job_state() { k -n "$NS" get djob "$1" -o 'jsonpath={.status.state}' 2>/dev/null || true; }

# wait_job_state SECONDS JOB STATE: fails at once if the job reaches another
# final state.
wait_job_state() {
  local end=$(( SECONDS + $1 )) s=""
  while :; do
    s=$(job_state "$2")
    [ "$s" = "$3" ] && return 0
    case $s in Succeeded|Failed) fail "job $2 is $s, want $3" ;; esac
    [ "$SECONDS" -lt "$end" ] || fail "timed out after $1s: job $2 is '$s', want $3"
    sleep 1
  done
}

# pods_settled JOB: every pod of the job left has finished (Succeeded or
# Failed) and none is being deleted.
pods_settled() {
  local states
  states=$(k -n "$NS" get pods -l "ringmaster.io/job-name=$1" \
    -o 'jsonpath={range .items[*]}{.metadata.deletionTimestamp}{.status.phase}{"\n"}{end}') || return 1
  [ -z "$(grep -v -x -e Succeeded -e Failed <<<"$states")" ]
}

job_pod() {  # JOB TYPE INDEX: the pod's name
  k -n "$NS" get pods -l "ringmaster.io/job-name=$1,ringmaster.io/replica-type=$2,ringmaster.io/replica-index=$3" \
    -o 'jsonpath={.items[0].metadata.name}' 2>/dev/null || true
}

# log_has POD ERE: whether the pod's log (in $NS) has a line matching ERE.
# The log is read whole first: `kubectl logs | grep -q` under pipefail fails
# when grep stops at a match before the end and kubectl dies of SIGPIPE.
log_has() {
  local log
  log=$(k -n "$NS" logs "$1" 2>/dev/null) || return 1
  grep -qE -- "$2" <<<"$log"
}

# container_pid NAMESPACE POD: the host's PID of the pod's (first)
# container's process, found through containerd (the node is this machine).
container_pid() {
  local cid pid
  cid=$(k -n "$1" get pod "$2" -o 'jsonpath={.status.containerStatuses[0].containerID}')
  pid=$(ctr --address "$RINGMASTER_CONTAINERD_ADDRESS" -n k8s.io task ls | awk -v c="${cid#containerd://}" '$1 == c { print $2 }')
  [ -n "$pid" ] || fail "no task for $2's container ${cid:-?}"
  echo "$pid"
}

# kill_container NAMESPACE POD: SIGKILL to the pod's (first) container's
# process from the host: what the OOM killer or a node's loss does, not a
# signal the process sends itself (which as a container's PID 1 it would
# ignore). Prints the kill's time (s.ns).
kill_container() {
  local pid
  pid=$(container_pid "$1" "$2") || exit 1
  date +%s.%N
  kill -KILL "$pid" || fail "kill -KILL $pid ($2) failed"
}

condition_message() {  # JOB TYPE
  k -n "$NS" get djob "$1" -o "jsonpath={.status.conditions[?(@.type==\"$2\")].message}"
}

# Every pod of the job was on the real node (and so really ran).
expect_on_real_node() {  # JOB
  local nodes
  nodes=$(k -n "$NS" get pods -l "ringmaster.io/job-name=$1" -o 'jsonpath={range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u)
  [ "$nodes" = "$REAL_NODE" ] || fail "job $1's pods ran on '$nodes', not only on $REAL_NODE"
}

# worker_job NAME: a DistributedJob on stdout, a chief and WORKERS (2)
# workers running ringmaster-worker ARGS ("--model tiny --steps 3") with
# restartPolicy RESTART (Never) and runPolicy RUN_POLICY. Per test, YAML
# lines (indented for the place they go) added to the chief's container
# (CHIEF_EXTRA), to the workers' pod spec (WORKER_POD_EXTRA), and the
# workers' image (WORKER_IMG, default the worker image).
worker_job() {
  local args="" a
  for a in ${ARGS:---model tiny --steps 3}; do args+="${args:+, }\"$a\""; done
  cat <<YAML
apiVersion: ringmaster.io/v1alpha1
kind: DistributedJob
metadata:
  name: $1
spec:
  communication: {timeoutSeconds: 60}
  runPolicy: ${RUN_POLICY:-{backoffLimit: 0, cleanPodPolicy: None\}}
  replicaSpecs:
    Chief:
      replicas: 1
      restartPolicy: ${RESTART:-Never}
      template:
        spec:
          containers:
            - name: trainer
              image: $WORKER_IMAGE
              args: [$args]
${CHIEF_EXTRA:-}
    Worker:
      replicas: ${WORKERS:-2}
      restartPolicy: ${RESTART:-Never}
      template:
        spec:
${WORKER_POD_EXTRA:-}
          containers:
            - name: trainer
              image: ${WORKER_IMG:-$WORKER_IMAGE}
              args: [$args]
YAML
}

# Keras recovery in place in pods: tests/python/tf/elastic_worker.py from a
# ConfigMap, in the keras example's image.
elastic_worker_configmap() {
  k -n "$NS" create configmap elastic-worker --from-file="$REPO_ROOT/tests/python/tf/elastic_worker.py" \
    --dry-run=client -o yaml | k -n "$NS" apply -f - >/dev/null || fail "cannot create the elastic-worker ConfigMap"
}

# elastic_job NAME KILL [RUN_POLICY [ENV]]: a chief and two workers of it,
# runPolicy.recovery InPlace; RUN_POLICY: more fields of runPolicy ("a: b,
# c: d"), ENV: more env entries ("{name: N, value: V}, ...").
elastic_job() {
  local replica name=$1 kill=$2 policy=${3:+, $3} env=${4:+, $4}
  cat <<YAML
apiVersion: ringmaster.io/v1alpha1
kind: DistributedJob
metadata: {name: $name}
spec:
  communication: {timeoutSeconds: 120}
  runPolicy: {backoffLimit: 2, cleanPodPolicy: None, recovery: InPlace$policy}
  replicaSpecs:
YAML
  for replica in "Chief 1" "Worker 2"; do
    set -- $replica
    cat <<YAML
    $1:
      replicas: $2
      restartPolicy: OnFailure
      template:
        spec:
          volumes: [{name: elastic, configMap: {name: elastic-worker}}]
          containers:
            - name: trainer
              image: ghcr.io/ringmaster/keras-example:0.1.0
              command: ["sh", "-c", 'exec "\${RINGMASTER_PYTHON:-python3}" /elastic/elastic_worker.py']
              env: [{name: ELASTIC_KILL, value: "$kill"}, {name: PYTHONUNBUFFERED, value: "1"}$env]
              volumeMounts: [{name: elastic, mountPath: /elastic}]
YAML
  done
}
# The pod's "done rank R pid P steps S weights sha256 H" line.
done_line() { k -n "$NS" logs "$1" | grep -E '^done rank [0-9] ' | tail -1; }
