#!/usr/bin/env bash
# restartPolicy ExitCode: exit 137 (a signal) restarts the replica as a new
# pod; exit 1-127 fails the job; restarts beyond backoffLimit fail it with
# BackoffLimitExceeded.
. "$(dirname "$0")/lib_operator.sh"
setup
start_operator op --leader-elect=false

job_yaml retry 2 ExitCode 0 '{backoffLimit: 1, cleanPodPolicy: All}' | k -n "$NS" apply -f - >/dev/null
wait_pods_running 90 retry 2
wait_state 60 retry Running
expect_eq "pod restartPolicy for ExitCode" "$(k -n "$NS" get pod retry-worker-1 -o 'jsonpath={.spec.restartPolicy}')" Never
uid=$(pod_uid retry-worker-1)
pod_exit retry-worker-1 137
wait_for 60 "worker 1 to be recreated" bash -c "u=\$(kubectl -n $NS get pod retry-worker-1 -o jsonpath={.metadata.uid} 2>/dev/null); [ -n \"\$u\" ] && [ \"\$u\" != $uid ]"
wait_jsonpath 60 djob/retry '{.status.restartCount}' 1 -n "$NS"
wait_pods_running 90 retry 2
wait_state 60 retry Running
pass "exit 137 -> pod recreated, restartCount 1, Running again"

pod_exit retry-worker-0 143
wait_state 60 retry Failed
expect_eq "reason" "$(condition_reason retry Failed)" BackoffLimitExceeded
wait_pod_count 60 retry 0
pass "a second restart beyond backoffLimit 1 -> Failed BackoffLimitExceeded, pods cleaned (All)"

job_yaml code 2 ExitCode 0 '{backoffLimit: 5}' | k -n "$NS" apply -f - >/dev/null
wait_pods_running 90 code 2
uid=$(pod_uid code-worker-1)
pod_exit code-worker-1 3
wait_state 60 code Failed
expect_eq "reason" "$(condition_reason code Failed)" ReplicaFailed
expect_eq "restartCount" "$(k -n "$NS" get djob code -o 'jsonpath={.status.restartCount}')" 0
grep -q "ReplicaFailed" <<<"$(k -n "$NS" describe djob code)" || fail "no ReplicaFailed event"
pass "exit 3 -> Failed ReplicaFailed without a restart"

job_yaml onfail 1 OnFailure 0 '{backoffLimit: 3}' | k -n "$NS" apply -f - >/dev/null
wait_pods_running 90 onfail 1
uid=$(pod_uid onfail-worker-0)
pod_exit onfail-worker-0 1
wait_for 60 "worker 0 (OnFailure) to be recreated" bash -c "u=\$(kubectl -n $NS get pod onfail-worker-0 -o jsonpath={.metadata.uid} 2>/dev/null); [ -n \"\$u\" ] && [ \"\$u\" != $uid ]"
grep -q "JobRestarting" <<<"$(k -n "$NS" describe djob onfail)" || fail "no JobRestarting event"
pass "OnFailure: exit 1 -> restarted"
