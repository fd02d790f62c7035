#!/usr/bin/env bash
# Two operators share one Lease: one leads and reconciles, the other stands
# by; the leader is SIGKILLed and the standby takes over within the lease
# duration; SIGTERM releases the lease. Without its lease namespace the
# operator stops at once with an error naming it, not a silent wait.
. "$(dirname "$0")/lib_operator.sh"
setup

missing="$NS-absent"
start_operator lost --leader-election-namespace "$missing"
await_operator_exit lost "without its lease namespace"
expect_eq "exit code without the lease namespace" "$OP_RC" 1
grep '"level":"error"' "$LOGDIR/lost.log" | grep -qF "namespace \\\"$missing\\\" does not exist" ||
  fail "no error naming the namespace $missing: $(cat "$LOGDIR/lost.log")"
grep -q -- "--leader-elect=false" "$LOGDIR/lost.log" || fail "the error does not name --leader-elect=false"
pass "without its lease namespace the operator exits with an error naming it"

lease_flags=(--lease-duration 6 --renew-deadline 4 --retry-period 1 --leader-election-id e2e-lease)
start_operator alpha "${lease_flags[@]}"
wait_jsonpath 60 lease/e2e-lease '{.spec.holderIdentity}' alpha -n "$NS"
start_operator beta "${lease_flags[@]}"
sleep 3
expect_eq "lease holder with two operators" "$(k -n "$NS" get lease e2e-lease -o 'jsonpath={.spec.holderIdentity}')" alpha

job_yaml first 2 Never 0 '{}' | k -n "$NS" apply -f - >/dev/null
wait_pods_running 90 first 2
wait_state 60 first Running
grep -q '"reason":"SuccessfulCreatePod"' "$LOGDIR/beta.log" && fail "the standby created pods"
grep -q 'became the leader' "$LOGDIR/beta.log" && fail "the standby became leader while alpha led"
pass "one leader reconciles, the standby does not"

kill_operator alpha KILL
killed_at=$SECONDS
job_yaml second 2 Never 0 '{}' | k -n "$NS" apply -f - >/dev/null
wait_jsonpath 60 lease/e2e-lease '{.spec.holderIdentity}' beta -n "$NS"
wait_pods_running 90 second 2
wait_state 60 second Running
note "beta took over $(( SECONDS - killed_at ))s after alpha was killed"
pass "failover: the standby leads and reconciles"

kill_operator beta TERM
expect_eq "exit code after SIGTERM" "$OP_RC" 0
expect_eq "holder after SIGTERM" "$(k -n "$NS" get lease e2e-lease -o 'jsonpath={.spec.holderIdentity}')" ""
pass "SIGTERM releases the lease"
