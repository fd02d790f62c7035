#!/usr/bin/env bash
# A watch that expires (410 Gone) is survived: the kube-apiserver is
# restarted under a running operator, so its watch cache starts afresh and
# the operator's informers, resuming from their last resourceVersion, get a
# real 410 from the real server. They must relist and go on reconciling: a
# job created after the restart gets its pods and reaches Running, and a job
# deleted while the apiserver was away is not resurrected.
. "$(dirname "$0")/lib_operator.sh"
setup
start_operator op --leader-elect=false

job_yaml before 2 Never | k -n "$NS" apply -f - >/dev/null
wait_pod_count 90 before 2
wait_pods_running 120 before 2
wait_state 60 before Running

# A write after the operator's last event, so the resourceVersion it resumes
# from is older than the restarted server's watch cache.
k -n "$NS" create configmap bump --from-literal=at="$(date +%s%N)" >/dev/null
"$TESTBED" restart-apiserver >/dev/null 2>&1 || fail "scripts/testbed restart-apiserver failed"
note "kube-apiserver restarted"

job_yaml after 3 Never | k -n "$NS" apply -f - >/dev/null
wait_pod_count 120 after 3
wait_pods_running 120 after 3
wait_state 60 after Running

# The 410 came from the server and the informers relisted (the operator's
# own log line, one per informer that saw it).
end=$(( SECONDS + 30 ))
until grep -q 'resourceVersion expired (410): relisting' "$LOGDIR/op.log"; do
  [ "$SECONDS" -lt "$end" ] || fail "the operator never logged a 410 relist after the apiserver restart"
  sleep 0.5
done
note "$(grep -c 'resourceVersion expired (410)' "$LOGDIR/op.log") informer(s) relisted after 410"
expect_eq "pods of 'before' after the relist" "$(pod_count before)" 2
expect_eq "state of 'before'" "$(djob_state before)" Running
pass "apiserver restart: real 410 Gone, informers relisted, reconciling went on"
