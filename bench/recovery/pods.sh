#!/usr/bin/env bash
# Recovery in place against a whole-job restart from a checkpoint, in real
# pods: the Keras job of tests/python/tf/elastic_worker.py
# (from a ConfigMap, in the keras-example image; a chief and two workers on
# the testbed's real node, 4 epochs of 6 steps, each step followed by a
# 0.3 s sleep so that the kill lands near its mark), worker 1's process
# SIGKILLed from the host (containerd's task) once the chief has finished
# batch 2 of epoch 1. Two modes, ROUNDS (3) rounds each:
#   in place    runPolicy.recovery InPlace, @hvd.elastic.run: the operator
#               replaces worker 1's pod alone, the others keep running;
#   checkpoint  what TFJob users have: restartPolicy OnFailure (the kubelet
#               restarts each failed container in its pod, with its
#               crash-loop backoff), a checkpoint at each epoch's end on the
#               chief's emptyDir, every rank restoring it at start.
# Per round: the recovery time (from the kill to the next finished step on
# every rank) and the completed steps thrown away. The jobs are reconciled
# by the operator binary given, run on the host against the testbed.
#
#   scripts/testbed up && scripts/testbed exec scripts/images load operator keras
#   scripts/testbed exec bash bench/recovery/pods.sh build/bin/ringmaster-operator build/bin/ringmaster [ROUNDS]
. "$(dirname "$0")/../../tests/e2e-operator/lib_operator.sh"
ROUNDS=${3:-3}
setup
# install_crd applies manifests/, whose Deployment would run a second
# operator beside this one (it watches every namespace): not here.
k -n ringmaster-system delete deployment ringmaster-operator --ignore-not-found >/dev/null
start_operator op --leader-elect=false
k -n "$NS" create configmap elastic-worker --from-file="$REPO_ROOT/tests/python/tf/elastic_worker.py" >/dev/null ||
  fail "cannot create the ConfigMap"
job_yaml_for() {  # NAME MODE
  local policy="{backoffLimit: 3, cleanPodPolicy: None, recovery: InPlace}" env="" r
  [ "$2" = checkpoint ] && policy="{backoffLimit: 6, cleanPodPolicy: None}" &&
    env=", {name: ELASTIC_MODE, value: checkpoint}, {name: RINGMASTER_CHECKPOINT_DIR, value: /scratch/ckpt}"
  printf 'apiVersion: ringmaster.io/v1alpha1\nkind: DistributedJob\nmetadata: {name: %s}\nspec:\n' "$1"
  printf '  communication: {timeoutSeconds: 120}\n  runPolicy: %s\n  replicaSpecs:\n' "$policy"
  for r in "Chief 1" "Worker 2"; do
    set -- $r
    cat <<YAML
    $1:
      replicas: $2
      restartPolicy: OnFailure
      template:
        spec:
          nodeSelector: {ringmaster.io/node: real}
          tolerations: [{key: ringmaster.io/real-node, operator: Exists, effect: NoSchedule}]
          volumes: [{name: elastic, configMap: {name: elastic-worker}}, {name: scratch, emptyDir: {}}]
          containers:
            - name: trainer
              image: ghcr.io/ringmaster/keras-example:0.1.0
              imagePullPolicy: Never
              command: ["sh", "-c", 'exec python3 /elastic/elastic_worker.py']
              env: [{name: PYTHONUNBUFFERED, value: "1"}, {name: ELASTIC_STEP_SLEEP, value: "0.3"}$env]
              volumeMounts: [{name: elastic, mountPath: /elastic}, {name: scratch, mountPath: /scratch}]
YAML
  done
}
results=()
for i in $(seq 1 "$ROUNDS"); do
  for mode in inplace checkpoint; do
    job=rec-$mode-$i
    job_yaml_for "$job" "$mode" | k -n "$NS" apply -f - >/dev/null || fail "creating $job failed"
    wait_for 300 "$job's chief at epoch 1 batch 2" bash -c \
      "kubectl -n $NS logs $job-chief-0 2>/dev/null | grep -q '^step rank 0 pid [0-9]* epoch 1 batch 2 '"
    cid=$(k -n "$NS" get pod "$job-worker-1" -o 'jsonpath={.status.containerStatuses[0].containerID}')
    pid=$(ctr --address "$RINGMASTER_CONTAINERD_ADDRESS" -n k8s.io task ls | awk -v c="${cid#containerd://}" '$1 == c { print $2 }')
    [ -n "$pid" ] || fail "$job: no task for worker 1's container"
    # Where the chief stands as it is killed (each step sleeps 0.3 s after its line): a
    # container the kubelet restarts more than once keeps only its last --previous log.
    at=$(k -n "$NS" logs "$job-chief-0" | sed -n 's/^step rank 0 pid [0-9]* epoch \([0-9]*\) batch \([0-9]*\) .*/\1 \2/p' | tail -1)
    t0=$(date +%s.%N)
    kill -KILL "$pid" || fail "$job: kill -KILL $pid failed"
    kill_pos=$(( ${at% *} * 6 + ${at#* } ))
    wait_state 600 "$job" Succeeded
    logs=""
    for p in "$job-chief-0" "$job-worker-0" "$job-worker-1"; do  # a container the kubelet restarted: both
      logs+=$(k -n "$NS" logs "$p" --previous 2>/dev/null || true)$'\n'$(k -n "$NS" logs "$p")$'\n'
    done
    # From the kill: the first step each rank finished after its recovery began (its reset, or
    # its new process's start); the steps lost: the furthest step finished before the kill minus
    # the position training resumed from.
    printf '%s' "$logs" >"$LOGDIR/$job.logs"
    res=$(python3 - "$t0" "$LOGDIR/$job.logs" "$kill_pos" <<'PY'
import re, sys
t0, steps = float(sys.argv[1]), 6
text = open(sys.argv[2]).read()
began, first, last_before = {}, {}, int(sys.argv[3])
for m in re.finditer(r"^(reset|start) rank (\d) (?:size \d+ )?pid \d+ (?:restart \S+ )?at ([\d.]+)$", text, re.M):
    if float(m[3]) > t0:
        began.setdefault(m[2], float(m[3]))
for m in re.finditer(r"^step rank (\d) pid \d+ epoch (\d+) batch (\d+) at ([\d.]+)$", text, re.M):
    r, pos, at = m[1], int(m[2]) * steps + int(m[3]), float(m[4])
    if at < t0:  # the kill's position: the furthest any rank had come
        last_before = max(last_before, pos)
    if r in began and at > began[r] and r not in first:
        first[r] = (at - t0, pos - 1)
assert sorted(first) == ["0", "1", "2"], (began, first)
print(f"{max(t for t, _ in first.values()):.2f} {last_before - min(p for _, p in first.values())}")
PY
)
    [ -n "$res" ] || fail "$job: could not read the recovery from the logs"
    echo "round $i $mode: ${res% *} s, ${res#* } steps lost"
    results+=("$mode $res")
    k -n "$NS" delete djob "$job" --wait=false >/dev/null
    wait_pod_count 120 "$job" 0
  done
done
printf '%s\n' "${results[@]}" | awk '
  { t[$1] = t[$1] " " $2; l[$1] = l[$1] " " $3; n[$1]++; v[$1, n[$1]] = $2 }
  END {
    for (m in n) {
      c = n[m]; for (i = 1; i <= c; i++) s[i] = v[m, i]
      for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (s[j] < s[i]) { x = s[i]; s[i] = s[j]; s[j] = x }
      med[m] = s[int((c + 1) / 2)]
      printf "| %s | %.2f |%s |%s |\n", m, med[m], t[m], l[m]
    }
    if (med["inplace"] > 0) printf "whole-job restart / recovery in place: %.1fx\n", med["checkpoint"] / med["inplace"]
  }'
