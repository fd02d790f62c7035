#!/usr/bin/env bash
# A worker pod deleted with --grace-period=0 --force in the middle of the
# all-reduces: every survivor reports it, naming it, within 5 s (Aborted by
# its SIGTERM, which the kubelet still sends, or Unavailable); with
# restartPolicy OnFailure the survivors restart, the operator recreates the
# deleted pod, the group forms again and the job succeeds.
. "$(dirname "$0")/lib_real.sh"
use_namespace rm-real-kill
job=kill
steps=40
RESTART=OnFailure RUN_POLICY='{backoffLimit: 6, cleanPodPolicy: None}' ARGS="--model resnet50 --steps $steps" \
  worker_job "$job" >"/tmp/$E2E_NAME.yaml"
apply_job "/tmp/$E2E_NAME.yaml"
chief=$(job_pod "$job" chief 0)
wait_for 180 "the chief's pod" bash -c "[ -n \"\$(kubectl -n $NS get pods -l ringmaster.io/job-name=$job,ringmaster.io/replica-type=chief -o name)\" ]"
chief=$(job_pod "$job" chief 0); worker0=$(job_pod "$job" worker 0); victim=$(job_pod "$job" worker 1)
wait_for 180 "the chief's step 3" bash -c "kubectl -n $NS logs $chief 2>/dev/null | grep -q ': step 3: '"
uid=$(k -n "$NS" get pod "$victim" -o 'jsonpath={.metadata.uid}')
t0=$(date +%s.%N)
k -n "$NS" delete pod "$victim" --grace-period=0 --force >/dev/null 2>&1 || fail "cannot delete $victim"
note "deleted $victim at $(date -d "@$t0" -u +%H:%M:%S.%N)"

# Each survivor's container ended with a report naming the deleted task.
for pod in "$chief" "$worker0"; do
  wait_for 60 "$pod to restart its container" bash -c \
    "[ \"\$(kubectl -n $NS get pod $pod -o 'jsonpath={.status.containerStatuses[0].restartCount}')\" -ge 1 ]"
  # The kubelet stops a force-deleted pod's container with SIGTERM, which the
  # agent tells the group: Aborted "by /job:worker/task:1: terminated
  # (SIGTERM)"; had it died without a word, Unavailable naming it.
  line=$(k -n "$NS" logs "$pod" --previous --timestamps |
           grep -m1 -E ' ringmaster: /job:[a-z]+/task:[0-9]+: (Unavailable|Aborted): ' || true)
  [ -n "$line" ] || fail "$pod reported neither Unavailable nor Aborted: $(k -n "$NS" logs "$pod" --previous | tail -5)"
  grep -q "/job:worker/task:1" <<<"$line" || fail "$pod's report does not name /job:worker/task:1: $line"
  at=$(date -d "$(cut -d' ' -f1 <<<"$line")" +%s.%N)
  delay=$(awk -v a="$at" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')
  awk -v d="$delay" 'BEGIN { exit !(d < 5) }' || fail "$pod reported it ${delay}s after the deletion, not within 5 s: $line"
  note "$pod: ${delay}s after the deletion: ${line#* }"
done
pass "every survivor reported the loss of /job:worker/task:1 within 5 s"

wait_for 120 "the operator to recreate $victim" bash -c \
  "u=\$(kubectl -n $NS get pod $victim -o 'jsonpath={.metadata.uid}' 2>/dev/null); [ -n \"\$u\" ] && [ \"\$u\" != $uid ]"
wait_job_state 300 "$job" Succeeded
for pod in "$chief" "$worker0" "$victim"; do
  log_has "$pod" "$steps steps verified" || fail "$pod did not verify $steps steps after the restart"
done
pass "the operator recreated $victim; the group formed again and the job Succeeded"
