#!/usr/bin/env bash
# A worker that starts late (an init container that sleeps 20 s): the others
# wait for it at formation and then form; the job succeeds.
. "$(dirname "$0")/lib_real.sh"
use_namespace rm-real-late
job=late
WORKER_POD_EXTRA='          initContainers:
            - name: late
              image: '"$WORKER_IMAGE"'
              command: ["sh", "-c", "case $HOSTNAME in *-worker-1) sleep 20 ;; esac"]' \
  worker_job "$job" >"/tmp/$E2E_NAME.yaml"
apply_job "/tmp/$E2E_NAME.yaml"
wait_job_state 240 "$job" Succeeded
expect_on_real_node "$job"
started() {  # POD: when its trainer container started (seconds since the epoch)
  date -d "$(k -n "$NS" get pod "$1" -o 'jsonpath={.status.containerStatuses[0].state.terminated.startedAt}')" +%s
}
chief=$(job_pod "$job" chief 0); late=$(job_pod "$job" worker 1)
gap=$(( $(started "$late") - $(started "$chief") ))
[ "$gap" -ge 15 ] || fail "worker 1 started only ${gap}s after the chief: its init container did not hold it back"
for pod in "$chief" "$(job_pod "$job" worker 0)" "$late"; do
  log_has "$pod" "3 steps verified" || fail "$pod did not verify its steps: $(k -n "$NS" logs "$pod" | tail -5)"
done
pass "worker 1 started ${gap}s after the chief; the others waited, formed with it, and the job Succeeded"
