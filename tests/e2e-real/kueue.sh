#!/usr/bin/env bash
# One job through Kueue on the real node: examples/quickstart.yaml with
# Kueue's own convention (the kueue.x-k8s.io/queue-name label on the job).
# The in-cluster operator makes its pods one pod group; Kueue gates them,
# admits the group whole, and the pods form the group through the headless
# Service and all-reduce with verification. Once the job has succeeded the
# group's Workload is Finished (its quota released) and no pod is left held
# by Kueue's finalizer (cleanPodPolicy Running deletes the workers still
# running, on a real kubelet, where a finalizer really holds a pod).
# Then a preemption on the real node: a low-priority job (its members idle
# after step 2, alive) is preempted by a high-priority one: its pods are
# killed, let go of Kueue's finalizer and created again under their names,
# gated; the job is Queued with no restart counted (backoffLimit 0), and once
# the high one has succeeded it is readmitted and runs again. Deleting it
# leaves no pod behind.
. "$(dirname "$0")/lib_real.sh"
use_namespace rm-real-kueue
on_exit '"$TESTBED" kueue down'
"$TESTBED" kueue up --namespace "$NS" >/dev/null || fail "scripts/testbed kueue up failed"
job=quickstart
sed '/^  name: quickstart$/a\  labels: {kueue.x-k8s.io/queue-name: ringmaster-queue}' \
  "$REPO_ROOT/examples/quickstart.yaml" >"/tmp/$E2E_NAME.yaml"
grep -q 'kueue.x-k8s.io/queue-name' "/tmp/$E2E_NAME.yaml" || fail "could not add the queue label to the example"
apply_job "/tmp/$E2E_NAME.yaml"
wait_for 60 "the chief's pod" bash -c "kubectl -n $NS get pod $job-chief-0"
group=$(k -n "$NS" get pod "$job-chief-0" -o 'jsonpath={.metadata.labels.kueue\.x-k8s\.io/pod-group-name}')
[ -n "$group" ] || fail "the chief's pod carries no pod-group label"
wait_job_state 240 "$job" Succeeded
expect_on_real_node "$job"
expect_eq "ClusterQueue of $group" "$(k -n "$NS" get workloads.kueue.x-k8s.io "$group" -o 'jsonpath={.status.admission.clusterQueue}')" ringmaster-cq
expect_eq "pods in $group's Workload" "$(k -n "$NS" get workloads.kueue.x-k8s.io "$group" -o 'jsonpath={.spec.podSets[*].count}')" 3
for reason in Queued Admitted; do
  [ -n "$(k -n "$NS" get events --field-selector "involvedObject.name=$job,reason=$reason" -o name)" ] ||
    fail "no $reason event on the job"
done
log=$(k -n "$NS" logs "$job-chief-0")
grep -q "3 steps verified" <<<"$log" || fail "the chief did not verify 3 steps: $log"
pass "quickstart through Kueue ($group, 3 pods admitted whole in ringmaster-cq): Succeeded on the real node, 3 steps verified"

wait_jsonpath 60 "workloads.kueue.x-k8s.io/$group" '{.status.conditions[?(@.type=="Finished")].status}' True -n "$NS"
# Nothing held: every pod left is finished, none is being deleted.
wait_for 60 "the job's pods to finish or go (no pod held by a finalizer)" pods_settled "$job"
pass "the group's Workload is Finished (quota released); no pod of the job is left terminating"

# --- preemption on the real node -----------------------------------------
LOW=rm-real-kueue-low HIGH=rm-real-kueue-high
priority_classes "$LOW" "$HIGH"
# prio_job NAME PRIORITY_CLASS MEMORY ARGS: a chief and a worker queued in
# ringmaster-queue, each asking for MEMORY (the quota is 16Gi: 2 x 5Gi and
# 2 x 4Gi do not fit together; the node's 24Gi hold both).
prio_job() {
  local args="" a
  for a in $4; do args+="${args:+, }\"$a\""; done
  on_real_node <<YAML | k -n "$NS" apply -f - >/dev/null || fail "creating job $1 failed"
apiVersion: ringmaster.io/v1alpha1
kind: DistributedJob
metadata:
  name: $1
spec:
  communication: {timeoutSeconds: 60}
  runPolicy:
    backoffLimit: 0
    schedulingPolicy: {queue: ringmaster-queue, priorityClass: $2}
  replicaSpecs:
$(for type in Chief Worker; do cat <<REPLICA
    $type:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - {name: trainer, image: $WORKER_IMAGE, args: [$args], resources: {requests: {memory: $3}}}
REPLICA
done)
YAML
}
uids() { k -n "$NS" get pods -l "ringmaster.io/job-name=$1" -o 'jsonpath={range .items[*]}{.metadata.uid} {end}'; }
running() {  # JOB N: N pods of the job Running, none being deleted
  local rows
  rows=$(k -n "$NS" get pods -l "ringmaster.io/job-name=$1" -o 'jsonpath={range .items[*]}{.metadata.deletionTimestamp}{.status.phase}{"\n"}{end}') || return 1
  [ "$(grep -cx Running <<<"$rows")" = "$2" ] && [ "$(grep -c . <<<"$rows")" = "$2" ]
}
prio_job low "$LOW" 5Gi "--model tiny --steps 10 --stall-at-step 2"
wait_for 120 "low's 2 pods Running" running low 2
wait_job_state 60 low Running
before=$(uids low)
prio_job high "$HIGH" 4Gi "--model tiny --steps 3"
wait_job_state 120 low Queued
wait_job_state 240 high Succeeded
expect_eq "low's restarts after the preemption" "$(k -n "$NS" get djob low -o 'jsonpath={.status.restartCount}')" 0
pass "high preempted low on the real node: low Queued, restartCount 0 (backoffLimit 0); high Succeeded"
wait_for 120 "low's 2 pods Running again (readmitted)" running low 2
wait_job_state 60 low Running
after=$(uids low)
for u in $before; do
  grep -qw "$u" <<<"$after" && fail "low's pod $u survived its preemption"
done
expect_on_real_node low
expect_eq "low's restarts once readmitted" "$(k -n "$NS" get djob low -o 'jsonpath={.status.restartCount}')" 0
pass "low readmitted after high ended: new pods Running on the real node, still no restart counted"
k -n "$NS" delete djob low --wait=false >/dev/null
wait_for 90 "low's pods to go (no finalizer left holding one)" bash -c "[ -z \"\$(kubectl -n $NS get pods -l ringmaster.io/job-name=low -o name)\" ]"
pass "low deleted: its pods are gone"
