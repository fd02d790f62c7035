#!/usr/bin/env bash
# examples/timeout.yaml on real pods behaves as under `ringmaster run`:
# worker 1 stalls at step 2; the chief and worker 0 fail that all-reduce with
# DeadlineExceeded naming /job:worker/task:1 as the one that never entered
# it; the stalled worker ends too; the job fails with that verdict.
. "$(dirname "$0")/lib_real.sh"
use_namespace rm-real-timeout
job=timeout
apply_job "$REPO_ROOT/examples/timeout.yaml"
wait_job_state 180 "$job" Failed
expect_on_real_node "$job"
culprit="/job:worker/task:1 never entered it (its last finished collective is #2)"
# cleanPodPolicy Running deletes the pods still running when the job fails;
# the three fail within milliseconds of each other, so which are kept
# varies: every kept one must name the stalled worker.
checked=0
for who in "chief 0 /job:chief/task:0 step 2: DeadlineExceeded: " \
           "worker 0 /job:worker/task:0 step 2: DeadlineExceeded: " \
           "worker 1 /job:worker/task:1 stalled; the group ended: DeadlineExceeded: "; do
  read -r type index task what <<<"$who"
  pod=$(job_pod "$job" "$type" "$index")
  [ -n "$pod" ] || continue
  [ "$(k -n "$NS" get pod "$pod" -o 'jsonpath={.status.phase}{.metadata.deletionTimestamp}')" = Failed ] || continue
  line=$(k -n "$NS" logs "$pod" | grep -F "ringmaster-worker $task: $what" || true)
  [ -n "$line" ] || fail "$pod: no '$what': $(k -n "$NS" logs "$pod" | tail -5)"
  grep -qF "$culprit" <<<"$line" || fail "$pod does not name the stalled task: $line"
  checked=$((checked + 1))
done
[ "$checked" -ge 1 ] || fail "no pod of the job is left to read"
msg=$(condition_message "$job" Failed)
grep -qF "$culprit" <<<"$msg" || fail "the job's Failed condition lacks the verdict: $msg"
pass "DeadlineExceeded naming the stalled worker in every kept pod ($checked); the job Failed with: $msg"
