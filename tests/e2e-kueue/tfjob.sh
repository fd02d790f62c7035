#!/usr/bin/env bash
# TFJobs under Kueue through Ringmaster (--tfjob), without Kueue's own TFJob
# integration (the testbed's Kueue has only its pod integration): a TFJob
# queued by runPolicy.schedulingPolicy.queue, or by the queue-name label on
# the TFJob, is one Kueue pod group, as a DistributedJob is. Quota for one:
# the second waits Queued, every pod gated, and runs once the first ends.
# Usage: tfjob.sh OPERATOR_BINARY RINGMASTER_CLI
. "$(dirname "$0")/../e2e-operator/lib_operator.sh"
setup
on_exit '"$TESTBED" kueue down'
use_tfjob_crd
"$TESTBED" kueue up --namespace "$NS" >/dev/null || fail "scripts/testbed kueue up failed"
start_operator op --leader-elect=false --tfjob
QUEUE=ringmaster-queue   # the testbed's sample LocalQueue: 4 cpu, 16Gi in all

# tfjob NAME QUEUE-BY(policy|label): 2 workers of 2 cpu each.
tfjob() {
  local label="" policy=""
  if [ "$2" = label ]; then label="labels: {kueue.x-k8s.io/queue-name: $QUEUE}"; else policy="schedulingPolicy: {queue: $QUEUE}"; fi
  k -n "$NS" apply -f - >/dev/null <<EOF || fail "creating TFJob $1 failed"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: $1
  $label
spec:
  runPolicy: {cleanPodPolicy: Running, $policy}
  tfReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - {name: tensorflow, image: ghcr.io/ringmaster/worker:0.1.0, command: [ringmaster-worker], resources: {requests: {cpu: "2", memory: 1Gi}}}
EOF
}
cond() { k -n "$NS" get tfjob "$1" -o "jsonpath={.status.conditions[?(@.type==\"$2\")].status}" 2>/dev/null || true; }
wait_cond() {  # SECONDS JOB TYPE
  wait_for "$1" "TFJob $2 to be $3" bash -c "[ \"\$(kubectl -n $NS get tfjob $2 -o 'jsonpath={.status.conditions[?(@.type==\"$3\")].status}')\" = True ]"
}
rows() {  # JOB: name gates|node per pod
  k -n "$NS" get pods -l "training.kubeflow.org/job-name=$1" \
    -o 'jsonpath={range .items[*]}{.metadata.name} {.spec.schedulingGates[*].name}|{.spec.nodeName}{"\n"}{end}'
}

tfjob first policy
wait_cond 90 first Running
group=$(k -n "$NS" get pod first-worker-0 -o 'jsonpath={.metadata.labels.kueue\.x-k8s\.io/pod-group-name}')
[ -n "$group" ] || fail "first's pods carry no pod-group label"
expect_eq "first's group on both pods" \
  "$(k -n "$NS" get pod first-worker-1 -o 'jsonpath={.metadata.labels.kueue\.x-k8s\.io/pod-group-name}')" "$group"
wait_jsonpath 30 "workloads.kueue.x-k8s.io/$group" '{.status.conditions[?(@.type=="Admitted")].status}' True -n "$NS"
pass "first (schedulingPolicy.queue; 2 x 2 cpu) admitted as one pod group ($group), Running"

tfjob second label
wait_cond 60 second Queued
wait_for 30 "second's 2 pods, gated" bash -c "[ \$(kubectl -n $NS get pods -l training.kubeflow.org/job-name=second -o name | wc -l) = 2 ]"
r=$(rows second)
grep -v 'kueue.x-k8s.io/admission.*|$' <<<"$r" | grep -q . && fail "second's pods are not all gated and unscheduled: $r"
expect_eq "second Running while queued" "$(cond second Running)" ""
pass "second (queue-name label on the TFJob) waits: Queued, both pods gated, none scheduled"

pod_exit first-worker-0 0
wait_cond 60 first Succeeded
wait_cond 90 second Running
pass "first succeeds, its quota is released; second is admitted and Running"
pod_exit second-worker-0 0
wait_cond 60 second Succeeded
pass "second succeeds"
