#!/usr/bin/env bash
# Recovery in place under Kueue, on the real node: a job queued in
# ringmaster-queue (its pods one pod group, 3 x 200m cpu of the 4-cpu quota)
# with runPolicy.recovery InPlace, then with an elastic size too. Worker 1's
# process is SIGKILLed from the host; the operator replaces its pod under the
# same name. Kueue must let the replacement in as a member of the admitted
# group (not gate it as a new group, not count it again): the Workload stays
# the one admitted, with 3 pods, the ClusterQueue's usage stays 600m cpu, no
# second Workload appears, the job is never Queued again, and the survivors
# recover in place and the job Succeeds. (200m each: the real node is this
# machine, 2 cpus.)
. "$(dirname "$0")/lib_real.sh"
use_namespace rm-real-kueue  # the Kueue test's namespace (the operator watches a fixed list)
on_exit '"$TESTBED" kueue down'
"$TESTBED" kueue up --namespace "$NS" >/dev/null || fail "scripts/testbed kueue up failed"
steps=400

# queued_job NAME RUN_POLICY: a chief and two workers, each asking for 200m cpu.
queued_job() {
  on_real_node <<YAML | k -n "$NS" apply -f - >/dev/null || fail "creating job $1 failed"
apiVersion: ringmaster.io/v1alpha1
kind: DistributedJob
metadata:
  name: $1
spec:
  communication: {timeoutSeconds: 60}
  runPolicy: $2
  replicaSpecs:
$(for type in Chief Worker; do cat <<REPLICA
    $type:
      replicas: $([ "$type" = Chief ] && echo 1 || echo 2)
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: trainer
              image: $WORKER_IMAGE
              args: ["--model", "32x100000", "--steps", "$steps"]
              resources: {requests: {cpu: 200m, memory: 256Mi}}
REPLICA
done)
YAML
}
cq_cpu() {  # the ClusterQueue's cpu in use by admitted Workloads
  k get clusterqueue ringmaster-cq -o 'jsonpath={.status.flavorsUsage[0].resources[?(@.name=="cpu")].total}'
}
workloads() { k -n "$NS" get workloads.kueue.x-k8s.io -o name | sort | paste -sd' ' -; }
events_of() {  # JOB REASON: how many events of that reason the job has
  k -n "$NS" get events --field-selector "involvedObject.name=$1,reason=$2" -o name | grep -c . || true
}

recoveries() { k -n "$NS" logs "$1" 2>/dev/null | grep -c ': recovered: ' || true; }

drill() {  # JOB RUN_POLICY WHAT
  local job=$1 group wl_before chief worker1 w1_uid t0 before
  queued_job "$job" "$2"
  wait_for 120 "$job's chief pod" bash -c "kubectl -n $NS get pod $job-chief-0"
  group=$(k -n "$NS" get pod "$job-chief-0" -o 'jsonpath={.metadata.labels.kueue\.x-k8s\.io/pod-group-name}')
  [ -n "$group" ] || fail "$job's chief carries no pod-group label"
  wait_job_state 180 "$job" Running
  chief=$(job_pod "$job" chief 0); worker1=$(job_pod "$job" worker 1)
  wait_for 180 "$job's chief at step 5" log_has "$chief" ': step 5: '
  wl_before=$(workloads)
  expect_eq "$job: the ClusterQueue's cpu in use before the kill" "$(cq_cpu)" 600m
  w1_uid=$(k -n "$NS" get pod "$worker1" -o 'jsonpath={.metadata.uid}')
  # An elastic group may have re-formed already (a member that started late
  # is let in at a step boundary): count the recoveries from here.
  before=$(recoveries "$chief")
  t0=$(kill_container "$NS" "$worker1")
  note "$job: killed worker 1 at $(date -d "@$t0" -u +%H:%M:%S.%N)"
  wait_for 180 "$job's chief to recover in place" bash -c "[ \"\$(kubectl -n $NS logs $chief | grep -c ': recovered: ')\" -gt $before ]"
  # Elastic: the others may go on without it before its pod is replaced.
  wait_for 120 "$job's worker 1 replaced and running" bash -c \
    "[ \"\$(kubectl -n $NS get pod $worker1 -o 'jsonpath={.metadata.uid} {.status.phase}')\" != '$w1_uid Running' ] &&
     [ \"\$(kubectl -n $NS get pod $worker1 -o 'jsonpath={.status.phase}')\" = Running ]"
  expect_eq "$job: worker 1's replacement's pod group" \
    "$(k -n "$NS" get pod "$worker1" -o 'jsonpath={.metadata.labels.kueue\.x-k8s\.io/pod-group-name}')" "$group"
  expect_eq "$job: Workloads after the replacement" "$(workloads)" "$wl_before"
  expect_eq "$job: $group's Workload admitted" \
    "$(k -n "$NS" get workloads.kueue.x-k8s.io "$group" -o 'jsonpath={.status.conditions[?(@.type=="Admitted")].status}')" True
  expect_eq "$job: pods in $group's Workload" "$(k -n "$NS" get workloads.kueue.x-k8s.io "$group" -o 'jsonpath={.spec.podSets[*].count}')" 3
  expect_eq "$job: the ClusterQueue's cpu in use after the replacement" "$(cq_cpu)" 600m
  wait_job_state 300 "$job" Succeeded
  expect_eq "$job: Queued events (the first admission only)" "$(events_of "$job" Queued)" 1
  expect_eq "$job: the job's restartCount" "$(k -n "$NS" get djob "$job" -o 'jsonpath={.status.restartCount}')" 1
  log_has "$chief" "$steps steps verified \\([0-9]+ recoveries in place\\)" ||
    fail "$job: the chief: $(k -n "$NS" logs "$chief" | tail -3)"
  pass "$job ($3): worker 1 replaced inside the admitted group $group (one Workload, 3 pods, 600m cpu in use), the others recovered in place, Succeeded"
  wait_jsonpath 60 "workloads.kueue.x-k8s.io/$group" '{.status.conditions[?(@.type=="Finished")].status}' True -n "$NS"
  k -n "$NS" delete djob "$job" --wait=false >/dev/null
  wait_for 120 "$job's pods to go" bash -c "[ -z \"\$(kubectl -n $NS get pods -l ringmaster.io/job-name=$job -o name)\" ]"
}

Q='schedulingPolicy: {queue: ringmaster-queue}'
drill inplace "{backoffLimit: 3, cleanPodPolicy: None, recovery: InPlace, $Q}" "recovery in place"
drill elastic "{backoffLimit: 3, cleanPodPolicy: None, recovery: InPlace, elastic: {minWorkers: 1, rejoinTimeoutSeconds: 5}, $Q}" \
  "recovery in place with an elastic size"
