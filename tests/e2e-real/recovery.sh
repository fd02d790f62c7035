#!/usr/bin/env bash
# Recovery in place in real pods (runPolicy.recovery InPlace): worker 1's
# process is SIGKILLed from the host in the middle of the all-reduces; the
# chief and worker 0 keep their processes (their pods' UIDs and restart
# counts do not change), the in-cluster operator replaces worker 1's pod
# alone and says Recovering naming it, the survivors form the group again
# with the new pod and give it their state. Then worker 0 is killed and, at
# once, the operator itself (SIGKILL, its container restarted by the
# kubelet): the restarted operator replaces worker 0, the others recover
# again. Every member verifies every step; the job Succeeds with 2 restarts.
. "$(dirname "$0")/lib_real.sh"
use_namespace rm-real-recovery
job=recovery
steps=300
RESTART=OnFailure RUN_POLICY='{backoffLimit: 4, cleanPodPolicy: None, recovery: InPlace}' \
  ARGS="--model 32x100000 --steps $steps" worker_job "$job" >"/tmp/$E2E_NAME.yaml"
apply_job "/tmp/$E2E_NAME.yaml"
wait_for 180 "the job's three pods" bash -c \
  "[ \"\$(kubectl -n $NS get pods -l ringmaster.io/job-name=$job -o name | wc -l)\" = 3 ]"
chief=$(job_pod "$job" chief 0); worker0=$(job_pod "$job" worker 0); worker1=$(job_pod "$job" worker 1)
uid() { k -n "$NS" get pod "$1" -o 'jsonpath={.metadata.uid}'; }
restarts() { k -n "$NS" get pod "$1" -o 'jsonpath={.status.containerStatuses[0].restartCount}'; }
chief_uid=$(uid "$chief"); w0_uid=$(uid "$worker0"); w1_uid=$(uid "$worker1")
recoveries() { k -n "$NS" logs "$1" 2>/dev/null | grep -c ': recovered: resuming after step' || true; }
# The time (s) from the kill ($2) to the first step POD ($1) finished after its recovery number $3.
after_kill() {
  k -n "$NS" logs "$1" --timestamps | awk -v n="$3" '
    / recovered: resuming after step / { seen++; next }
    seen >= n && / step [0-9]+: .* verified$/ { print $1; exit }' | { read -r at; [ -n "$at" ] || exit 1
      awk -v a="$(date -d "$at" +%s.%N)" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }
}
recovering_events() {
  k -n "$NS" get events --field-selector reason=Recovering -o 'jsonpath={range .items[*]}{.message}{"\n"}{end}'
}

wait_for 180 "the chief's step 5" bash -c "kubectl -n $NS logs $chief 2>/dev/null | grep -q ': step 5: '"
t0=$(kill_container "$NS" "$worker1")
note "killed worker 1's process at $(date -d "@$t0" -u +%H:%M:%S.%N)"
for pod in "$chief" "$worker0"; do
  wait_for 180 "$pod to recover in place" bash -c "[ \"\$(kubectl -n $NS logs $pod | grep -c ': recovered: ')\" -ge 1 ]"
  note "$pod: next step $(after_kill "$pod" "$t0" 1 || echo '?') s after the kill: $(k -n "$NS" logs "$pod" | grep -m1 ': recovered: ')"
done
wait_for 60 "a Recovering event naming Worker 1" bash -c \
  "kubectl -n $NS get events --field-selector reason=Recovering -o 'jsonpath={.items[*].message}' | grep -q 'replacing Worker 1 alone'"
[ "$(uid "$worker1")" != "$w1_uid" ] || fail "worker 1's pod was not replaced"
for pod in "$chief" "$worker0"; do
  expect_eq "$pod's restart count" "$(restarts "$pod")" 0
done
expect_eq "the chief's pod" "$(uid "$chief")" "$chief_uid"
expect_eq "worker 0's pod" "$(uid "$worker0")" "$w0_uid"
pass "worker 1 replaced alone (Recovering named it); the chief and worker 0 kept their processes and recovered"

# The operator SIGKILLed in the middle of the next recovery.
wait_for 120 "the chief's step 60" bash -c "kubectl -n $NS logs $chief 2>/dev/null | grep -q ': step 60: '"
op_pod=$(k -n "$OPERATOR_NS" get pods -l "app.kubernetes.io/name=ringmaster-operator,app.kubernetes.io/instance=$RELEASE" \
  -o 'jsonpath={.items[0].metadata.name}')
op_restarts=$(k -n "$OPERATOR_NS" get pod "$op_pod" -o 'jsonpath={.status.containerStatuses[0].restartCount}')
w0_uid=$(uid "$worker0"); worker1=$(job_pod "$job" worker 1)
t1=$(kill_container "$NS" "$worker0")
kill_container "$OPERATOR_NS" "$op_pod" >/dev/null
note "killed worker 0's process and then the operator's at $(date -d "@$t1" -u +%H:%M:%S.%N)"
wait_for 120 "the operator's container to restart" bash -c \
  "[ \"\$(kubectl -n $OPERATOR_NS get pod $op_pod -o 'jsonpath={.status.containerStatuses[0].restartCount}')\" -gt $op_restarts ]"
for pod in "$chief" "$worker1"; do
  want=$([ "$pod" = "$chief" ] && echo 2 || echo 1)
  wait_for 240 "$pod to recover in place again" bash -c "[ \"\$(kubectl -n $NS logs $pod | grep -c ': recovered: ')\" -ge $want ]"
  note "$pod: next step $(after_kill "$pod" "$t1" "$want" || echo '?') s after the kill"
done
[ "$(uid "$worker0")" != "$w0_uid" ] || fail "worker 0's pod was not replaced"
wait_job_state 300 "$job" Succeeded
grep -q 'replacing Worker 0 alone' <<<"$(recovering_events)" || fail "no Recovering event names Worker 0: $(recovering_events)"
expect_eq "the job's restartCount" "$(k -n "$NS" get djob "$job" -o 'jsonpath={.status.restartCount}')" 2
expect_eq "the chief's restart count" "$(restarts "$chief")" 0
expect_eq "the chief's pod" "$(uid "$chief")" "$chief_uid"
log_has "$chief" "$steps steps verified \\(2 recoveries in place\\)" || fail "the chief: $(k -n "$NS" logs "$chief" | tail -3)"
log_has "$worker1" "$steps steps verified \\(1 recoveries in place\\)" || fail "worker 1: $(k -n "$NS" logs "$worker1" | tail -3)"
log_has "$worker0" "$steps steps verified \\(0 recoveries in place\\)" || fail "worker 0: $(k -n "$NS" logs "$worker0" | tail -3)"
pass "the operator, killed in the middle of a recovery, replaced worker 0 after its restart; the job Succeeded with 2 restarts"
