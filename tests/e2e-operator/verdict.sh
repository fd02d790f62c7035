#!/usr/bin/env bash
# The verdict: a failed pod's termination message (what the agent writes when
# its group aborts) ends up in the job's Failed condition and in a
# TerminationMessage event; a restarted pod's in a TerminationMessage event.
# The containers get terminationMessagePolicy FallbackToLogsOnError.
. "$(dirname "$0")/lib_operator.sh"
setup
start_operator op --leader-elect=false

# pod_fail POD CODE MESSAGE: the pod's container terminated with CODE and
# MESSAGE, as a kubelet reports it (a status-subresource patch, as
# `scripts/testbed pod-exit` does, with a termination message).
pod_fail() {
  local pod=$1 code=$2 message=$3 now patch
  now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  message=$(sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' <<<"$message")  # a JSON string
  patch="{\"status\":{\"phase\":\"Failed\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"PodFailed\",\"lastTransitionTime\":\"$now\"}],\"containerStatuses\":[{\"name\":\"trainer\",\"ready\":false,\"started\":false,\"state\":{\"running\":null,\"waiting\":null,\"terminated\":{\"exitCode\":$code,\"reason\":\"Error\",\"message\":\"$message\",\"startedAt\":\"$now\",\"finishedAt\":\"$now\"}}}]}}"
  k -n "$NS" patch pod "$pod" --subresource=status --type=strategic -p "$patch" >/dev/null ||
    fail "status patch of $pod failed"
}
events_of() {  # REASON: the messages of the namespace's events with that reason
  k -n "$NS" get events --field-selector "reason=$1" -o 'jsonpath={range .items[*]}{.message}{"\n"}{end}'
}

verdict='DeadlineExceeded: all-reduce collective #3 (pack 0 of 1) timed out after 5 s: /job:worker/task:1 never entered it (its last finished collective is #2); /job:worker/task:0 waited'

job_yaml culprit 2 Never 0 '{cleanPodPolicy: None}' | k -n "$NS" apply -f - >/dev/null
wait_pods_running 90 culprit 2
wait_state 60 culprit Running
expect_eq "terminationMessagePolicy" \
  "$(k -n "$NS" get pod culprit-worker-0 -o 'jsonpath={.spec.containers[0].terminationMessagePolicy}')" \
  FallbackToLogsOnError
pod_fail culprit-worker-0 1 "$verdict"
wait_state 60 culprit Failed
expect_eq "reason" "$(condition_reason culprit Failed)" ReplicaFailed
expect_eq "Failed message" \
  "$(k -n "$NS" get djob culprit -o 'jsonpath={.status.conditions[?(@.type=="Failed")].message}')" \
  "Worker 0 exited with code 1 (restartPolicy Never); worker-0 failed (exit code 1): $verdict"
wait_for 30 "a TerminationMessage event" bash -c \
  "kubectl -n $NS get events --field-selector reason=TerminationMessage -o jsonpath='{.items[*].message}' | grep -qF 'worker-0 failed (exit code 1): DeadlineExceeded'"
expect_eq "event" "$(events_of TerminationMessage)" "worker-0 failed (exit code 1): $verdict"
pass "termination message -> Failed condition and TerminationMessage event"

job_yaml again 1 ExitCode 0 '{backoffLimit: 3}' | k -n "$NS" apply -f - >/dev/null
wait_pods_running 90 again 1
wait_state 60 again Running
pod_fail again-worker-0 137 'Aborted: the group aborted: /job:chief/task:0 left'
wait_jsonpath 60 djob/again '{.status.restartCount}' 1 -n "$NS"
wait_for 30 "a TerminationMessage event for the restart" bash -c \
  "kubectl -n $NS get events --field-selector reason=TerminationMessage -o jsonpath='{.items[*].message}' | grep -qF 'worker-0 failed (exit code 137): Aborted: the group aborted'"
pass "a restarted pod's termination message -> TerminationMessage event"
