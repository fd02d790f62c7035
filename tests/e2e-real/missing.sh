#!/usr/bin/env bash
# A worker that never starts (its image does not exist): formation fails
# after the formation timeout with an error naming the missing task, and the
# job fails with that message in its conditions.
. "$(dirname "$0")/lib_real.sh"
use_namespace rm-real-missing
job=missing
RUN_POLICY='{backoffLimit: 0, cleanPodPolicy: Running}' WORKERS=1 \
  CHIEF_EXTRA='              env: [{name: RINGMASTER_FORMATION_TIMEOUT_SECONDS, value: "20"}]' \
  WORKER_IMG=ringmaster.invalid/does-not-exist:1 worker_job "$job" >"/tmp/$E2E_NAME.yaml"
apply_job "/tmp/$E2E_NAME.yaml"
wait_job_state 180 "$job" Failed
msg=$(condition_message "$job" Failed)
grep -q "/job:worker/task:0" <<<"$msg" || fail "the job's Failed condition does not name the missing task: $msg"
grep -qiE "formation|never joined|did not join|missing" <<<"$msg" || fail "the Failed condition does not say formation failed: $msg"
pass "formation failed naming the missing task; the job's condition: $msg"
chief=$(job_pod "$job" chief 0)
[ -z "$chief" ] || log_has "$chief" "/job:worker/task:0" ||
  fail "the chief's log does not name the missing task"
