#!/usr/bin/env bash
# SIGKILL drills in real pods, without and with recovery in place:
# N times, a job of a chief and two workers (ringmaster-worker, ResNet-50's
# gradients, 60 steps) on the testbed's real node; once the chief has done
# step 3, worker 1's process is killed with SIGKILL from the host (its
# container's task, found with ctr: what the OOM killer or a node's loss
# does, not a signal the process sends itself, which as a container's PID 1
# it would ignore). Each survivor's report is counted (a line `ringmaster:
# /job:...: Unavailable|Aborted: ...` naming /job:worker/task:1) and its
# delay measured from the kill, read with `kubectl logs --timestamps`
# (containerd stamps each line with the host's clock, the clock of the
# kill). The jobs are reconciled by the operator binary given, run on the
# host against the testbed.
#
# RECOVERY=InPlace: the jobs have runPolicy.recovery InPlace (restartPolicy
# OnFailure): the operator replaces worker 1's pod alone and the survivors
# recover in place; each drill also measures, per survivor, the time from
# the kill to its first step after the recovery, and the completed steps it
# threw away (its last step before the recovery minus the step it resumed
# after), and waits for the job to succeed.
#
#   scripts/testbed up && scripts/testbed exec scripts/images load worker
#   [RECOVERY=InPlace] scripts/testbed exec bash bench/drills/pods.sh build/bin/ringmaster-operator build/bin/ringmaster [N]
# (STEPS: the job's steps, default 60.)
#
# Prints one line per drill and a summary (reports / 2N, delays' median,
# 95th percentile and maximum; with recovery, the same of the recovery
# times and the steps lost). Exit 1 if a survivor did not report (or did
# not recover).
. "$(dirname "$0")/../../tests/e2e-operator/lib_operator.sh"
N=${3:-30}
setup
# install_crd applies manifests/, whose Deployment would run a second
# operator beside this one (it watches every namespace): not here.
k -n ringmaster-system delete deployment ringmaster-operator --ignore-not-found >/dev/null
start_operator op --leader-elect=false
IMAGE=ghcr.io/ringmaster/worker:0.1.0
ARGS="\"--model\", \"resnet50\", \"--steps\", \"${STEPS:-60}\""
RUN_POLICY='{backoffLimit: 0, cleanPodPolicy: None}' RESTART=Never
if [ "${RECOVERY:-}" = InPlace ]; then
  RUN_POLICY='{backoffLimit: 3, cleanPodPolicy: None, recovery: InPlace}' RESTART=OnFailure
fi
replica() {  # TYPE N
  cat <<YAML
    $1:
      replicas: $2
      restartPolicy: $RESTART
      template:
        spec:
          nodeSelector: {ringmaster.io/node: real}
          tolerations: [{key: ringmaster.io/real-node, operator: Exists, effect: NoSchedule}]
          containers: [{name: trainer, image: $IMAGE, imagePullPolicy: Never, args: [$ARGS]}]
YAML
}
ts() { date -d "$1" +%s.%N; }
delays=() reported=0 lost=0 recoveries=() thrown=() unrecovered=0
for i in $(seq 1 "$N"); do
  job=drill-$i
  { cat <<YAML
apiVersion: ringmaster.io/v1alpha1
kind: DistributedJob
metadata: {name: $job}
spec:
  communication: {timeoutSeconds: 60}
  runPolicy: $RUN_POLICY
  replicaSpecs:
YAML
    replica Chief 1; replica Worker 2; } | k -n "$NS" apply -f - >/dev/null || fail "creating $job failed"
  wait_for 180 "$job's chief at step 3" bash -c "kubectl -n $NS logs $job-chief-0 2>/dev/null | grep -q ': step 3: '"
  cid=$(k -n "$NS" get pod "$job-worker-1" -o 'jsonpath={.status.containerStatuses[0].containerID}')
  pid=$(ctr --address "$RINGMASTER_CONTAINERD_ADDRESS" -n k8s.io task ls | awk -v c="${cid#containerd://}" '$1 == c { print $2 }')
  [ -n "$pid" ] || fail "$job: no task for worker 1's container ${cid:-?}"
  t0=$(date +%s.%N)
  kill -KILL "$pid" || fail "$job: kill -KILL $pid failed"
  if [ "${RECOVERY:-}" = InPlace ]; then wait_state 240 "$job" Succeeded; else wait_state 120 "$job" Failed; fi
  line_out="drill $i:"
  for pod in "$job-chief-0" "$job-worker-0"; do
    line=$(k -n "$NS" logs "$pod" --timestamps | grep -m1 -E ' ringmaster: /job:[a-z]+/task:[0-9]+: (Unavailable|Aborted): .*/job:worker/task:1' || true)
    if [ -z "$line" ]; then
      lost=$((lost + 1)); line_out+=" ${pod#"$job"-}=none"
      continue
    fi
    d=$(awk -v a="$(ts "${line%% *}")" -v b="$t0" 'BEGIN { printf "%.3f", a - b }')
    delays+=("$d"); reported=$((reported + 1)); line_out+=" ${pod#"$job"-}=${d}s"
    [ "${RECOVERY:-}" = InPlace ] || continue
    # The last step before the recovery, the step it resumed after, the first step after it.
    read -r before resumed at < <(k -n "$NS" logs "$pod" --timestamps | awk '
      / recovered: resuming after step / { for (i = 1; i <= NF; i++) if ($i == "step") r = $(i + 1); seen = 1; next }
      / step [0-9]+: .* verified$/ { for (i = 1; i <= NF; i++) if ($i == "step") s = $(i + 1) + 0
                                     if (!seen) last = s; else { print last, r, $1; exit } }')
    if [ -z "${at:-}" ]; then
      unrecovered=$((unrecovered + 1)); line_out+=" (no recovery)"
      continue
    fi
    r=$(awk -v a="$(ts "$at")" -v b="$t0" 'BEGIN { printf "%.3f", a - b }')
    recoveries+=("$r"); thrown+=("$((before - resumed))"); line_out+=" recovered ${r}s, $((before - resumed)) lost"
  done
  echo "$line_out"
  k -n "$NS" delete djob "$job" --wait=false >/dev/null
  wait_pod_count 120 "$job" 0
done
printf '%s\n' "${delays[@]}" | sort -n | awk -v n="$N" -v r="$reported" '
  { d[NR] = $1 } END {
    printf "reports naming /job:worker/task:1: %d of %d; delay from the kill: median %.3f s, p95 %.3f s, max %.3f s\n",
      r, 2 * n, d[int((NR + 1) / 2)], d[int(NR * 0.95 + 0.999)], d[NR] }'
if [ "${RECOVERY:-}" = InPlace ]; then
  printf '%s\n' "${recoveries[@]}" | sort -n | awk '
    { d[NR] = $1 } END {
      printf "recovered in place: %d; from the kill to the next step: median %.3f s, p95 %.3f s, max %.3f s\n",
        NR, d[int((NR + 1) / 2)], d[int(NR * 0.95 + 0.999)], d[NR] }'
  printf '%s\n' "${thrown[@]}" | sort -n | uniq -c | awk '{ printf "completed steps thrown away: %s in %d survivors\n", $2, $1 }'
fi
[ "$lost" = 0 ] || fail "$lost survivor(s) did not report the victim"
[ "$unrecovered" = 0 ] || fail "$unrecovered survivor(s) did not recover in place"
