#!/usr/bin/env bash
# The operator under Kueue (kwok nodes; issue 24's cases): a queued job's
# pods are one pod group, admitted whole or not at all.
# - two jobs, quota for one: the second is Queued (every pod gated, none
#   scheduled, `kubectl get djob` says Queued) and runs once the first ends
#   (the operator finishes the first's group: its quota is released);
# - a job larger than the quota never half-starts, and fails with
#   ScheduleTimeout once its scheduleTimeoutSeconds is up; a queued job
#   deleted leaves no pod held by Kueue's finalizer;
# - a high-priority job preempts a running low-priority one: the low one goes
#   back to Queued with no restart counted (backoffLimit 0), and succeeds
#   once readmitted;
# - a worker that fails in an admitted OnFailure job is replaced in the same
#   group without losing the admission;
# - Kueue down while a job is created: the creations fail (its webhook is
#   failurePolicy Fail), an event says why, the job is not failed, and it
#   proceeds once Kueue is back.
# Usage: operator.sh OPERATOR_BINARY RINGMASTER_CLI
. "$(dirname "$0")/../e2e-operator/lib_operator.sh"

# On failure, what Kueue made of it too.
fail() {
  printf 'FAIL %s: %s\n' "$E2E_NAME" "$*" >&2
  {
    k -n "$NS" get workloads.kueue.x-k8s.io -o wide
    k -n "$NS" get pods -o 'custom-columns=NAME:.metadata.name,PHASE:.status.phase,NODE:.spec.nodeName,GATES:.spec.schedulingGates[*].name,GROUP:.metadata.labels.kueue\.x-k8s\.io/pod-group-name'
    k -n "$NS" get events --sort-by=.lastTimestamp | tail -40
  } >&2 2>&1 || true
  exit 1
}

setup
on_exit '"$TESTBED" kueue down'
"$TESTBED" kueue up --namespace "$NS" >/dev/null || fail "scripts/testbed kueue up failed"
start_operator op --leader-elect=false
QUEUE=ringmaster-queue   # the testbed's sample LocalQueue: 4 cpu, 16Gi in all
IMAGE=ghcr.io/ringmaster/worker:0.1.0

# Priorities Kueue orders and preempts by (cluster-scoped: names of this run).
LOW=e2e-kueue-low-$$ HIGH=e2e-kueue-high-$$
priority_classes "$LOW" "$HIGH"

# qjob NAME WORKERS CPU BACKOFF [PRIORITY_CLASS] [SCHEDULE_TIMEOUT]: a job
# queued in $QUEUE, every worker asking for CPU cpus; worker 0's success ends
# it, and the workers still running are deleted (cleanPodPolicy Running).
qjob() {
  local prio=${5:+, priorityClass: $5}
  prio+=${6:+, scheduleTimeoutSeconds: $6}
  k -n "$NS" apply -f - >/dev/null <<EOF || fail "creating job $1 failed"
apiVersion: ringmaster.io/v1alpha1
kind: DistributedJob
metadata: {name: $1}
spec:
  runPolicy:
    backoffLimit: $4
    cleanPodPolicy: Running
    schedulingPolicy: {queue: $QUEUE$prio}
  replicaSpecs:
    Worker:
      replicas: $2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - {name: trainer, image: $IMAGE, command: [ringmaster-worker], resources: {requests: {cpu: "$3", memory: 1Gi}}}
EOF
}
jp() { k -n "$NS" get "$1" "$2" -o "jsonpath=$3" 2>/dev/null || true; }
group_of() { jp pod "$1-worker-0" '{.metadata.labels.kueue\.x-k8s\.io/pod-group-name}'; }
restarts() { jp djob "$1" '{.status.restartCount}'; }
# held JOB N: the job has N pods, each gated by Kueue and on no node.
held() {
  local rows
  rows=$(k -n "$NS" get pods -l "ringmaster.io/job-name=$1" \
    -o 'jsonpath={range .items[*]}{.metadata.name} {.spec.schedulingGates[*].name}|{.spec.nodeName}{"\n"}{end}') || return 1
  [ "$(grep -c . <<<"$rows")" = "$2" ] || return 1
  ! grep -v 'kueue.x-k8s.io/admission.*|$' <<<"$rows" | grep -q .
}
expect_held() {  # JOB N WHAT
  held "$1" "$2" || fail "$3: job $1 should have $2 pods, all gated and unscheduled: $(k -n "$NS" get pods -l "ringmaster.io/job-name=$1" -o 'jsonpath={range .items[*]}{.metadata.name}:{.spec.schedulingGates[*].name}@{.spec.nodeName} {end}')"
}
finish() {  # JOB: worker 0 succeeds; the job ends Succeeded
  pod_exit "$1-worker-0" 0
  wait_state 60 "$1" Succeeded
}
# refused JOB: Kueue has looked at the job's Workload and refused it quota
# (QuotaReserved False, "insufficient"), and counts it pending in the
# ClusterQueue: positive evidence that it decided, not a wait for it to.
refused() {
  local wl
  wl=$(group_of "$1")
  [ -n "$wl" ] || return 1
  [ "$(jp workloads.kueue.x-k8s.io "$wl" '{.status.conditions[?(@.type=="QuotaReserved")].status}')" = False ] || return 1
  jp workloads.kueue.x-k8s.io "$wl" '{.status.conditions[?(@.type=="QuotaReserved")].message}' | grep -q insufficient || return 1
  [ "$(k get clusterqueue ringmaster-cq -o 'jsonpath={.status.pendingWorkloads}')" -ge 1 ] 2>/dev/null
}
events_of() {  # JOB REASON: how many such events the job has
  k -n "$NS" get events --field-selector "involvedObject.name=$1,reason=$2" -o name 2>/dev/null | grep -c . || true
}

# --- two jobs, quota for one ---------------------------------------------
qjob first 2 2 0
wait_pods_running 90 first 2
wait_state 60 first Running
wl=$(group_of first)
[ -n "$wl" ] || fail "first's pods carry no pod-group label"
wait_jsonpath 30 "workloads.kueue.x-k8s.io/$wl" '{.status.conditions[?(@.type=="Admitted")].status}' True -n "$NS"
expect_eq "first's Queued condition after admission" "$(condition_reason first Queued)" Admitted
pass "first (2 x 2 cpu) admitted as one group ($wl), Running"

qjob second 2 2 0
wait_state 60 second Queued
wait_for 30 "second's 2 pods, gated" held second 2
wait_for 60 "Kueue to refuse second quota" refused second
expect_held second 2 "with first running"
expect_eq "second's Queued reason" "$(condition_reason second Queued)" WaitingForAdmission
grep -qw Queued <<<"$(k -n "$NS" get djob second --no-headers)" || fail "kubectl get djob does not show second as Queued: $(k -n "$NS" get djob second)"
expect_eq "second's start time while queued" "$(jp djob second '{.status.startTime}')" ""
pass "second (2 x 2 cpu, no quota left): Queued, both pods gated and unscheduled, 'kubectl get djob' says Queued"

# --- larger than the quota: never half-starts; scheduleTimeoutSeconds -----
qjob big 3 2 0 "" 12
wait_state 60 big Queued
wait_for 30 "big's 3 pods, gated" held big 3
wait_for 60 "Kueue to refuse big quota" refused big
expect_held big 3 "6 cpu asked of a 4 cpu quota"
expect_eq "big's restarts" "$(restarts big)" 0
big_wl=$(group_of big)
wait_state 60 big Failed
expect_eq "big's Failed reason" "$(condition_reason big Failed)" ScheduleTimeout
wait_pod_count 60 big 0
wait_for 60 "big's Workload $big_wl to go with its pods" bash -c "! kubectl -n $NS get workloads.kueue.x-k8s.io $big_wl >/dev/null 2>&1"
pass "big (3 x 2 cpu > 4 cpu quota): Queued, all 3 pods gated, none scheduled, no restart; Failed ScheduleTimeout after 12 s, nothing of it left"

# A queued job deleted: its gated pods (held by Kueue's finalizer) go too.
qjob gone 1 5 0
wait_for 30 "gone's pod, gated" held gone 1
k -n "$NS" delete djob gone --wait=false >/dev/null
wait_pod_count 60 gone 0
pass "gone (deleted while Queued): its gated pod is gone"

# first ends: its group is finished (quota released), second is admitted.
finish first
wait_jsonpath 30 "workloads.kueue.x-k8s.io/$wl" '{.status.conditions[?(@.type=="Finished")].status}' True -n "$NS"
wait_pods_running 90 second 2
wait_state 60 second Running
expect_eq "second's Queued condition" "$(condition_reason second Queued)" Admitted
[ -n "$(jp djob second '{.status.startTime}')" ] || fail "second has no start time once admitted"
finish second
expect_eq "second's restarts" "$(restarts second)" 0
pass "first succeeded, its group finished; second admitted, Running, Succeeded"

# --- preemption: back to Queued, no restart, then success ----------------
qjob low 2 2 0 "$LOW"
wait_pods_running 90 low 2
wait_state 60 low Running
low_uid=$(pod_uid low-worker-0)
qjob high 2 2 0 "$HIGH"
wait_state 90 low Queued
wait_pods_running 90 high 2
wait_state 60 high Running
wait_for 60 "low's pods, created again and gated" held low 2
[ "$(pod_uid low-worker-0)" != "$low_uid" ] || fail "low-worker-0 is the same pod after the preemption"
expect_eq "low's restarts after the preemption" "$(restarts low)" 0
expect_eq "low's state (backoffLimit 0)" "$(djob_state low)" Queued
pass "high preempted low: low back to Queued, pods recreated and gated, restartCount 0 with backoffLimit 0"
finish high
wait_pods_running 90 low 2
wait_state 60 low Running
finish low
expect_eq "low's restarts at the end" "$(restarts low)" 0
pass "low readmitted after high ended, Succeeded without a restart"

# --- a worker's restart keeps the admission ------------------------------
qjob steady 2 1 2
wait_pods_running 90 steady 2
wait_state 60 steady Running
wl=$(group_of steady)
wait_jsonpath 30 "workloads.kueue.x-k8s.io/$wl" '{.status.conditions[?(@.type=="Admitted")].status}' True -n "$NS"
uid=$(pod_uid steady-worker-1)
pod_exit steady-worker-1 1
wait_for 60 "steady-worker-1 to be recreated" bash -c "u=\$(kubectl -n $NS get pod steady-worker-1 -o jsonpath={.metadata.uid} 2>/dev/null); [ -n \"\$u\" ] && [ \"\$u\" != $uid ]"
wait_pods_running 90 steady 2
wait_state 60 steady Running
expect_eq "steady's restarts" "$(restarts steady)" 1
expect_eq "group of the new worker 1" "$(jp pod steady-worker-1 '{.metadata.labels.kueue\.x-k8s\.io/pod-group-name}')" "$wl"
expect_eq "steady's Workload still Admitted" "$(jp workloads.kueue.x-k8s.io "$wl" '{.status.conditions[?(@.type=="Admitted")].status}')" True
expect_eq "steady's Workload evicted" "$(jp workloads.kueue.x-k8s.io "$wl" '{.status.conditions[?(@.type=="Evicted")].status}')" ""
expect_eq "Queued events of steady (the first wait only)" "$(events_of steady Queued)" 1
finish steady
pass "steady: worker 1 failed and was replaced in the same admitted group ($wl), never Queued again, Succeeded"

# --- Kueue down while a job is created -----------------------------------
"$TESTBED" kueue pause >/dev/null || fail "kueue pause failed"
qjob late 2 1 2
wait_for 60 "a FailedCreatePod event on late" bash -c "[ \"\$(kubectl -n $NS get events --field-selector involvedObject.name=late,reason=FailedCreatePod -o name | grep -c .)\" -ge 1 ]"
msg=$(k -n "$NS" get events --field-selector involvedObject.name=late,reason=FailedCreatePod -o 'jsonpath={.items[0].message}')
grep -qi "webhook" <<<"$msg" || fail "the FailedCreatePod event does not name the webhook: $msg"
wait_for 60 "the operator to try again (a second FailedCreatePod)" bash -c "[ \"\$(kubectl -n $NS get events --field-selector involvedObject.name=late,reason=FailedCreatePod -o name | grep -c .)\" -ge 2 ]"
state=$(djob_state late)
[ "$state" != Failed ] || fail "late failed while Kueue was down"
expect_eq "late's pods while Kueue is down" "$(pod_count late)" 0
pass "Kueue down: late's creations refused ($msg), late is $state, not failed"
"$TESTBED" kueue resume >/dev/null || fail "kueue resume failed"
wait_pods_running 120 late 2
wait_state 60 late Running
finish late
expect_eq "late's restarts" "$(restarts late)" 0
pass "Kueue back: late's pods created, admitted, Running, Succeeded"
