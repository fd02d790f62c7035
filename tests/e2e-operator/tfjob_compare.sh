#!/usr/bin/env bash
# Side by side with Kubeflow's training-operator (the testbed's peer, the
# version scripts/testbed.d/kubeflow/go.mod pins): the
# same TFJob, in the same namespace, first under training-operator, then
# (deleted and applied again) under Ringmaster's operator with --tfjob. At
# Running and at Succeeded, the pods, the Services and the TFJob's status of
# both are compared field by field (tfjob_compare.py): no difference but the
# ones docs/kubeflow.md lists as on purpose.
. "$(dirname "$0")/lib_operator.sh"
setup
on_exit "'$TESTBED' peer-kubeflow down"
JOB="$LOGDIR/job.yaml"
cat >"$JOB" <<'YAML'
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: cmp
spec:
  runPolicy: {cleanPodPolicy: None}
  tfReplicaSpecs:
    Chief:
      replicas: 1
      template:
        metadata: {labels: {team: ml}, annotations: {note: kept}}
        spec:
          containers:
            - name: tensorflow
              image: ghcr.io/ringmaster/worker:0.1.0
              command: [ringmaster-worker]
              env: [{name: MODEL, value: resnet}]
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - {name: tensorflow, image: ghcr.io/ringmaster/worker:0.1.0, command: [ringmaster-worker]}
            - {name: sidecar, image: ghcr.io/ringmaster/worker:0.1.0, command: [sleep, "3600"]}
    PS:
      replicas: 1
      template:
        spec:
          containers:
            - name: tensorflow
              image: ghcr.io/ringmaster/worker:0.1.0
              ports: [{name: tfjob-port, containerPort: 3333}, {name: metrics, containerPort: 9090}]
YAML

cond() { k -n "$NS" get tfjob cmp -o "jsonpath={.status.conditions[?(@.type==\"$1\")].status}" 2>/dev/null; }
snapshot() {  # DIR
  mkdir -p "$1"
  k -n "$NS" get pods -l training.kubeflow.org/job-name=cmp -o json >"$1/pods.json"
  k -n "$NS" get services -l training.kubeflow.org/job-name=cmp -o json >"$1/services.json"
  k -n "$NS" get tfjob cmp -o json >"$1/tfjob.json"
}
run_once() {  # WHO: apply, Running, snapshot, the chief exits 0, Succeeded, snapshot
  k -n "$NS" apply -f "$JOB" >/dev/null || fail "apply under $1"
  wait_for 90 "the TFJob Running under $1" bash -c "[ \"\$(kubectl -n $NS get tfjob cmp -o 'jsonpath={.status.conditions[?(@.type==\"Running\")].status}')\" = True ]"
  wait_for 60 "4 pods Running under $1" bash -c "[ \$(kubectl -n $NS get pods -l training.kubeflow.org/job-name=cmp --field-selector=status.phase=Running -o name | wc -l) = 4 ]"
  sleep 2  # let the status settle (replicaStatuses after the last pod)
  snapshot "$LOGDIR/$1/running"
  pod_exit cmp-chief-0 0
  wait_for 60 "the TFJob Succeeded under $1" bash -c "[ \"\$(kubectl -n $NS get tfjob cmp -o 'jsonpath={.status.conditions[?(@.type==\"Succeeded\")].status}')\" = True ]"
  sleep 2
  snapshot "$LOGDIR/$1/succeeded"
}

"$TESTBED" peer-kubeflow up >"$LOGDIR/peer.log" 2>&1 || { cat "$LOGDIR/peer.log" >&2; fail "peer-kubeflow up"; }
run_once training-operator
"$TESTBED" peer-kubeflow down >>"$LOGDIR/peer.log" 2>&1 || fail "peer-kubeflow down"
k -n "$NS" delete tfjob cmp --wait=true --timeout=60s >/dev/null || fail "delete the TFJob"
wait_for 60 "training-operator's pods and Services to go" bash -c \
  "[ \$(kubectl -n $NS get pods,services -l training.kubeflow.org/job-name=cmp -o name | wc -l) = 0 ]"
pass "training-operator ran the TFJob to Succeeded"

start_operator op --leader-elect=false --tfjob
run_once ringmaster
pass "Ringmaster ran the same TFJob to Succeeded"

rc=0
for phase in running succeeded; do
  python3 "$(dirname "$0")/tfjob_compare.py" "$LOGDIR/training-operator/$phase" "$LOGDIR/ringmaster/$phase" "$phase" || rc=1
done
[ "$rc" = 0 ] || fail "what Ringmaster made of the TFJob differs from training-operator's (above)"
pass "pods, Services and status as training-operator's, but for the differences on purpose"
