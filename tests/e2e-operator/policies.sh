#!/usr/bin/env bash
# successPolicy AllWorkers, cleanPodPolicy All/None, activeDeadlineSeconds,
# ttlSecondsAfterFinished, suspend/resume, and delete -> garbage collection.
. "$(dirname "$0")/lib_operator.sh"
setup
start_operator op --leader-elect=false

# AllWorkers: worker 0 alone is not success; all workers are.
job_yaml allw 2 Never 1 '{cleanPodPolicy: None}' 'successPolicy: AllWorkers' | k -n "$NS" apply -f - >/dev/null
wait_pods_running 90 allw 3
wait_state 60 allw Running
pod_exit allw-worker-0 0
sleep 2
expect_eq "state after worker 0 succeeded" "$(djob_state allw)" Running
pod_exit allw-worker-1 0
wait_state 60 allw Succeeded
sleep 1
expect_eq "pods kept (cleanPodPolicy None)" "$(pod_count allw)" 3
pass "AllWorkers: Succeeded only once every worker did; None keeps pods"

# activeDeadlineSeconds
job_yaml deadline 1 Never 0 '{activeDeadlineSeconds: 3, cleanPodPolicy: Running}' | k -n "$NS" apply -f - >/dev/null
wait_state 60 deadline Failed
expect_eq "reason" "$(condition_reason deadline Failed)" DeadlineExceeded
wait_pod_count 60 deadline 0
pass "activeDeadlineSeconds -> Failed DeadlineExceeded"

# suspend / resume
job_yaml susp 2 Never 0 '{}' | k -n "$NS" apply -f - >/dev/null
wait_pods_running 90 susp 2
k -n "$NS" patch djob susp --type=merge -p '{"spec":{"runPolicy":{"suspend":true}}}' >/dev/null
wait_state 60 susp Suspended
wait_pod_count 60 susp 0
k -n "$NS" patch djob susp --type=merge -p '{"spec":{"runPolicy":{"suspend":false}}}' >/dev/null
wait_pods_running 90 susp 2
wait_state 60 susp Running
expect_eq "Suspended condition after resume" \
  "$(k -n "$NS" get djob susp -o 'jsonpath={.status.conditions[?(@.type=="Suspended")].status}')" False
pass "suspend deletes pods (Suspended); resume recreates them (Running)"

# ttlSecondsAfterFinished
job_yaml ttl 1 Never 0 '{ttlSecondsAfterFinished: 2}' | k -n "$NS" apply -f - >/dev/null
wait_pods_running 90 ttl 1
pod_exit ttl-worker-0 0
wait_for 60 "the finished job to be deleted after its TTL" bash -c "! kubectl -n $NS get djob ttl >/dev/null 2>&1"
pass "ttlSecondsAfterFinished deletes the job"

# delete -> children garbage-collected
job_yaml gc 2 Never 1 '{}' | k -n "$NS" apply -f - >/dev/null
wait_pods_running 90 gc 3
wait_for 30 "the gc Service" k -n "$NS" get svc gc
k -n "$NS" delete djob gc --wait=false >/dev/null
wait_pod_count 90 gc 0
wait_for 90 "the Service to be garbage-collected" bash -c "! kubectl -n $NS get svc gc >/dev/null 2>&1"
pass "deleting the job garbage-collects its pods and Service"
