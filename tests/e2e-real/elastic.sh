#!/usr/bin/env bash
# Elastic size in real pods (runPolicy.elastic): a worker's replacement
# cannot be scheduled, the others go on without it, then let it in.
#
# tests/python/tf/elastic_worker.py (Keras 3, Horovod's elastic API) on a
# chief and two workers, recovery InPlace, elastic {minWorkers: 1,
# rejoinTimeoutSeconds: 3}. The node is cordoned once the pods run, then
# worker 0 SIGKILLs itself in the middle of model.fit: the operator creates
# its replacement, which stays Pending (unschedulable). The chief and worker
# 1 form a group of two (worker 1 renumbered rank 1) and train on. The test
# then uncordons the node: the replacement starts, waits to join, and the
# others let it in at their next commit; all three finish with identical
# weights, the survivors in their first pods and processes.
. "$(dirname "$0")/lib_real.sh"
use_namespace rm-real-elastic
uncordon() { kubectl uncordon "$REAL_NODE" >/dev/null 2>&1 || true; }
on_exit uncordon
elastic_worker_configmap
job=elastic-shrink
elastic_job "$job" "1:2:1" "elastic: {minWorkers: 1, rejoinTimeoutSeconds: 3}" \
  '{name: ELASTIC_EPOCHS, value: "12"}, {name: ELASTIC_STEP_SLEEP, value: "0.3"}' >"/tmp/$E2E_NAME.yaml"
apply_job "/tmp/$E2E_NAME.yaml"
# Cordoned once all three are bound to the node (they start there; only a
# new pod cannot), long before worker 0 reaches its step 8.
wait_for 240 "the job's three pods bound to $REAL_NODE" bash -c \
  "[ \"\$(kubectl -n $NS get pods -l ringmaster.io/job-name=$job -o 'jsonpath={range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -c .)\" = 3 ]"
chief=$(job_pod "$job" chief 0); victim=$(job_pod "$job" worker 0); worker1=$(job_pod "$job" worker 1)
uids=$(k -n "$NS" get pod "$chief" "$victim" "$worker1" -o 'jsonpath={range .items[*]}{.metadata.uid} {end}')
read -r chief_uid victim_uid w1_uid <<<"$uids"
k cordon "$REAL_NODE" >/dev/null || fail "cannot cordon $REAL_NODE"
log_has "$victim" '^kill rank' && fail "worker 0 was killed before the node was cordoned (the test is too slow)"

# The replacement is Pending, and the others formed without it.
replacement_pending() {
  local got
  got=$(k -n "$NS" get pod "$victim" -o 'jsonpath={.metadata.uid} {.status.phase}') || return 1
  [ "${got% *}" != "$victim_uid" ] && [ "${got#* }" = Pending ]
}
chief_shrank() { log_has "$chief" 'formed with 2 of 3 members \(without /job:worker/task:0\)'; }
wait_for 180 "worker 0's replacement, unschedulable" replacement_pending
wait_for 60 "the chief's group of two" chief_shrank
expect_eq "the replacement's phase while the others train" "$(k -n "$NS" get pod "$victim" -o 'jsonpath={.status.phase}')" Pending
log_has "$worker1" '^reset rank 1 size 2 ' || fail "worker 1 is not rank 1 of 2: $(k -n "$NS" logs "$worker1" | tail -5)"
pass "worker 0's replacement could not be scheduled; the chief and worker 1 went on as a group of two"
# The job says so too: Running, reason RunningShrunk, Workers 1/2.
shrunk_status() {
  [ "$(k -n "$NS" get djob "$job" -o 'jsonpath={.status.conditions[?(@.type=="Running")].reason} {.status.workers}')" = "RunningShrunk 1/2" ]
}
wait_for 60 "the job's status: RunningShrunk, workers 1/2" shrunk_status

# Capacity returns: the replacement starts and is let in.
uncordon
wait_job_state 480 "$job" Succeeded
log_has "$chief" 'formed with 3 of 3 members' || fail "the chief never formed with all three: $(k -n "$NS" logs "$chief" | tail -5)"
log_has "$chief" '^reset rank 0 size 3 ' || fail "the chief did not reset for the growth"
log_has "$worker1" '^reset rank 2 size 3 ' || fail "worker 1 is not rank 2 of 3 again"
expect_eq "the chief's pod" "$(k -n "$NS" get pod "$chief" -o 'jsonpath={.metadata.uid}')" "$chief_uid"
expect_eq "worker 1's pod" "$(k -n "$NS" get pod "$worker1" -o 'jsonpath={.metadata.uid}')" "$w1_uid"
for pod in "$chief" "$worker1"; do
  expect_eq "$pod's restart count" "$(k -n "$NS" get pod "$pod" -o 'jsonpath={.status.containerStatuses[0].restartCount}')" 0
done
want=$(done_line "$chief" | sed -n 's/.*weights sha256 //p')
[ -n "$want" ] || fail "the chief printed no weights"
for pod in "$victim" "$worker1"; do
  expect_eq "$pod's weights" "$(done_line "$pod" | sed -n 's/.*weights sha256 //p')" "$want"
done
pass "the replacement joined once schedulable; all three finished with identical weights ($(head -c 16 <<<"$want")...)"
