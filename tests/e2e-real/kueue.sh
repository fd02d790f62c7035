#!/usr/bin/env bash
# One job through Kueue on the real node: examples/quickstart.yaml with
# Kueue's own convention (the kueue.x-k8s.io/queue-name label on the job).
# The in-cluster operator makes its pods one pod group; Kueue gates them,
# admits the group whole, and the pods form the group through the headless
# Service and all-reduce with verification. Once the job has succeeded the
# group's Workload is Finished (its quota released) and no pod is left held
# by Kueue's finalizer (cleanPodPolicy Running deletes the workers still
# running, on a real kubelet, where a finalizer really holds a pod).
. "$(dirname "$0")/lib_real.sh"
use_namespace rm-real-kueue
on_exit '"$TESTBED" kueue down'
"$TESTBED" kueue up --namespace "$NS" >/dev/null || fail "scripts/testbed kueue up failed"
job=quickstart
sed '/^  name: quickstart$/a\  labels: {kueue.x-k8s.io/queue-name: ringmaster-queue}' \
  "$REPO_ROOT/examples/quickstart.yaml" >"/tmp/$E2E_NAME.yaml"
grep -q 'kueue.x-k8s.io/queue-name' "/tmp/$E2E_NAME.yaml" || fail "could not add the queue label to the example"
apply_job "/tmp/$E2E_NAME.yaml"
wait_for 60 "the chief's pod" bash -c "kubectl -n $NS get pod $job-chief-0"
group=$(k -n "$NS" get pod "$job-chief-0" -o 'jsonpath={.metadata.labels.kueue\.x-k8s\.io/pod-group-name}')
[ -n "$group" ] || fail "the chief's pod carries no pod-group label"
wait_job_state 240 "$job" Succeeded
expect_on_real_node "$job"
expect_eq "ClusterQueue of $group" "$(k -n "$NS" get workload "$group" -o 'jsonpath={.status.admission.clusterQueue}')" ringmaster-cq
expect_eq "pods in $group's Workload" "$(k -n "$NS" get workload "$group" -o 'jsonpath={.spec.podSets[*].count}')" 3
for reason in Queued Admitted; do
  [ -n "$(k -n "$NS" get events --field-selector "involvedObject.name=$job,reason=$reason" -o name)" ] ||
    fail "no $reason event on the job"
done
log=$(k -n "$NS" logs "$job-chief-0")
grep -q "3 steps verified" <<<"$log" || fail "the chief did not verify 3 steps: $log"
pass "quickstart through Kueue ($group, 3 pods admitted whole in ringmaster-cq): Succeeded on the real node, 3 steps verified"

wait_jsonpath 60 "workload/$group" '{.status.conditions[?(@.type=="Finished")].status}' True -n "$NS"
# Nothing held: every pod left is finished, none is being deleted.
settled() {
  local rows
  rows=$(k -n "$NS" get pods -l "ringmaster.io/job-name=$job" \
    -o 'jsonpath={range .items[*]}{.metadata.deletionTimestamp}{.status.phase}{"\n"}{end}') || return 1
  [ -z "$(grep -v -x -e Succeeded -e Failed <<<"$rows")" ]
}
wait_for 60 "the job's pods to finish or go (no pod held by a finalizer)" settled
pass "the group's Workload is Finished (quota released); no pod of the job is left terminating"
