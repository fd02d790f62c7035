#!/usr/bin/env bash
# The operator is SIGKILLed in the middle of creating 20 pods and started
# again: exactly 20 pods (no duplicates, none recreated), and the status
# converges to Running.
. "$(dirname "$0")/lib_operator.sh"
setup
# 2 requests/s: creating 20 pods takes ~10 s, so the kill lands mid-way.
start_operator slow --leader-elect=false --qps 2 --burst 1

job_yaml big 20 Never 0 '{}' | k -n "$NS" apply -f - >/dev/null
end=$(( SECONDS + 90 ))
until [ "$(pod_count big)" -ge 4 ]; do
  [ "$SECONDS" -lt "$end" ] || fail "the first pods were not created"
  sleep 0.1
done
kill_operator slow KILL
before=$(pod_count big)
[ "$before" -lt 20 ] || fail "all 20 pods existed before the kill; the test needs a slower operator"
note "killed with $before of 20 pods created"
uids_before=$(k -n "$NS" get pods -l ringmaster.io/job-name=big -o 'jsonpath={range .items[*]}{.metadata.name}={.metadata.uid}{"\n"}{end}' | sort)

start_operator again --leader-elect=false
wait_pod_count 90 big 20
wait_pods_running 120 big 20
wait_state 60 big Running
sleep 2
expect_eq "pod count after convergence" "$(pod_count big)" 20
uids_after=$(k -n "$NS" get pods -l ringmaster.io/job-name=big -o 'jsonpath={range .items[*]}{.metadata.name}={.metadata.uid}{"\n"}{end}' | sort)
while IFS= read -r line; do
  [ -z "$line" ] || grep -qxF "$line" <<<"$uids_after" || fail "pod recreated after the restart: $line"
done <<<"$uids_before"
names=$(k -n "$NS" get pods -l ringmaster.io/job-name=big -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}' | sort -u | wc -l)
expect_eq "distinct pod names" "$names" 20
expect_eq "Worker active" "$(k -n "$NS" get djob big -o 'jsonpath={.status.replicaStatuses.Worker.active}')" 20
pass "SIGKILL mid-creation: 20 pods, no duplicates, status Running"
