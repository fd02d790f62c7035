#!/usr/bin/env bash
# examples/keras/ in real pods (the image from examples/keras/Dockerfile):
# Keras 3 model.fit with Ringmaster's all-reduce on a chief and two workers;
# every rank ends with identical weights.
. "$(dirname "$0")/lib_real.sh"
use_namespace rm-real-keras
job=keras-digits
# cleanPodPolicy None, so that every rank's log is still there to compare.
sed 's/cleanPodPolicy: Running/cleanPodPolicy: None/' "$REPO_ROOT/examples/keras/job.yaml" >"/tmp/$E2E_NAME.yaml"
grep -q 'cleanPodPolicy: None' "/tmp/$E2E_NAME.yaml" || fail "could not set cleanPodPolicy None"
apply_job "/tmp/$E2E_NAME.yaml"
wait_job_state 480 "$job" Succeeded
expect_on_real_node "$job"
digests=""
for who in "chief 0" "worker 0" "worker 1"; do
  set -- $who
  pod=$(job_pod "$job" "$1" "$2")
  d=$(k -n "$NS" logs "$pod" | sed -n 's/.*weights sha256 \([0-9a-f]*\).*/\1/p' | tail -1)
  [ -n "$d" ] || fail "$pod printed no weights digest: $(k -n "$NS" logs "$pod" | tail -5)"
  digests+="$d"$'\n'
done
[ "$(sort -u <<<"${digests%$'\n'}" | wc -l)" = 1 ] || fail "the ranks ended with different weights: $digests"
pass "Keras trained in 3 real pods; identical weights on every rank ($(head -c 16 <<<"$digests")...)"

# Recovery in place with Keras in real pods (runPolicy.recovery InPlace):
# tests/python/tf/elastic_worker.py (Horovod's elastic API, a commit every
# batch) from a ConfigMap, in the same image. Worker 1 (rank 2) SIGKILLs
# itself as batch 2 of epoch 1 begins; the operator replaces its pod alone;
# the chief and worker 0 keep their processes and pods and give the new
# one their state. Every rank ends with the weights of the same job run
# without a failure.
elastic_worker_configmap
all_logs() {  # every elastic-kill pod's whole log (a failure's evidence)
  local p
  for p in "$chief" "$worker0" "$victim"; do printf '\n--- %s\n%s' "$p" "$(k -n "$NS" logs "$p" 2>&1)"; done
}
elastic_job elastic-clean "" >"/tmp/$E2E_NAME-clean.yaml"
elastic_job elastic-kill "1:2:2" >"/tmp/$E2E_NAME-kill.yaml"
# Both at once (the cold run's minutes): they share nothing but the node.
apply_job "/tmp/$E2E_NAME-kill.yaml"
apply_job "/tmp/$E2E_NAME-clean.yaml"
wait_for 240 "the elastic job's three pods" bash -c \
  "[ \"\$(kubectl -n $NS get pods -l ringmaster.io/job-name=elastic-kill -o name | wc -l)\" = 3 ]"
chief=$(job_pod elastic-kill chief 0); worker0=$(job_pod elastic-kill worker 0); victim=$(job_pod elastic-kill worker 1)
uids=$(k -n "$NS" get pod "$chief" "$worker0" "$victim" -o 'jsonpath={range .items[*]}{.metadata.uid} {end}')
read -r chief_uid w0_uid victim_uid <<<"$uids"
log_has "$victim" '^kill rank' && fail "worker 1 was killed before its pod's UID was read"
wait_job_state 480 elastic-clean Succeeded
want=$(done_line "$(job_pod elastic-clean chief 0)" | sed -n 's/.*weights sha256 //p')
[ -n "$want" ] || fail "the uninterrupted job printed no weights: $(k -n "$NS" logs "$(job_pod elastic-clean chief 0)" | tail -5)"
wait_job_state 480 elastic-kill Succeeded
[ "$(k -n "$NS" get pod "$victim" -o 'jsonpath={.metadata.uid}')" != "$victim_uid" ] || fail "worker 1's pod was not replaced"
expect_eq "the job's restartCount" "$(k -n "$NS" get djob elastic-kill -o 'jsonpath={.status.restartCount}')" 1
for pod in "$chief" "$worker0"; do
  expect_eq "$pod's restart count" "$(k -n "$NS" get pod "$pod" -o 'jsonpath={.status.containerStatuses[0].restartCount}')" 0
  expect_eq "$pod's starts" "$(k -n "$NS" logs "$pod" | grep -c '^start rank ')" 1
  log_has "$pod" '^reset rank ' || fail "$pod did not recover in place; the logs: $(all_logs)"
  steps=$(done_line "$pod" | sed -n 's/.* steps \([0-9]*\) .*/\1/p')
  [ -n "$steps" ] && [ "$steps" -le 25 ] || fail "$pod trained ${steps:-?} steps, want at most 24 + the one in flight"
done
expect_eq "the chief's pod" "$(k -n "$NS" get pod "$chief" -o 'jsonpath={.metadata.uid}')" "$chief_uid"
expect_eq "worker 0's pod" "$(k -n "$NS" get pod "$worker0" -o 'jsonpath={.metadata.uid}')" "$w0_uid"
for pod in "$chief" "$worker0" "$victim"; do
  expect_eq "$pod's weights" "$(done_line "$pod" | sed -n 's/.*weights sha256 //p')" "$want"
done
pass "Keras recovered in place in real pods: worker 1 alone replaced, the others kept their pods and processes, weights equal to an uninterrupted run's on every rank"
