#!/usr/bin/env bash
# A stranger on the cluster network: while a job runs (its three members
# formed, all-reduced 2 steps and idle, alive), a pod in another namespace
# runs ringmaster-worker with the job's own TF_CONFIG and settings, posing as
# worker 1, with a key of its own (the job's is a Secret it cannot mount;
# with none at all the stranger gives up before it asks: the leader's
# challenge says a key is required). The leader refuses its join as
# Unauthenticated and logs the refusal with the stranger's address (once
# per address; the count is GetStatus.refused, which this test does not
# read); the stranger fails naming it; the job is
# unaffected: still Running, no container restarted, no member reporting an
# abort. Nothing but the key keeps the stranger out (the testbed enforces no
# NetworkPolicy).
. "$(dirname "$0")/lib_real.sh"
use_namespace rm-real-intruder
job=guarded
OUTSIDER=rm-real-outsider-$$
k create namespace "$OUTSIDER" >/dev/null || fail "cannot create namespace $OUTSIDER"
on_exit 'kubectl --request-timeout=10s delete namespace "$OUTSIDER" --wait=false'
on_exit 'kubectl --request-timeout=10s -n "$NS" delete djob "$job" --wait=false'

RESTART=OnFailure RUN_POLICY='{backoffLimit: 2, cleanPodPolicy: All}' ARGS="--model tiny --steps 10 --stall-at-step 2" \
  worker_job "$job" >"/tmp/$E2E_NAME.yaml"
apply_job "/tmp/$E2E_NAME.yaml"
wait_for 180 "the chief's pod" bash -c "[ -n \"\$(kubectl -n $NS get pods -l ringmaster.io/job-name=$job,ringmaster.io/replica-type=chief -o name)\" ]"
chief=$(job_pod "$job" chief 0); worker0=$(job_pod "$job" worker 0); worker1=$(job_pod "$job" worker 1)
for pod in "$chief" "$worker0" "$worker1"; do
  wait_for 180 "$pod's step 1" bash -c "kubectl -n $NS logs $pod 2>/dev/null | grep -q ': step 1: '"
done
wait_job_state 60 "$job" Running
pass "job $job formed and all-reduced; its members idle from step 2, alive"

# The stranger: worker 1's environment on the real node, its key file where
# the job's is, holding 32 random bytes of a Secret in its own namespace.
head -c 32 /dev/urandom >"/tmp/$E2E_NAME-key"
k -n "$OUTSIDER" create secret generic stranger-key --from-file=key="/tmp/$E2E_NAME-key" >/dev/null ||
  fail "cannot create the stranger's key Secret"
rm -f "/tmp/$E2E_NAME-key"
k -n "$NS" get pod "$worker1" -o json | python3 -c '
import json, os, sys
src = json.load(sys.stdin)
env = [e for e in src["spec"]["containers"][0].get("env", []) if "value" in e]
key_file = next(e["value"] for e in env if e["name"] == "RINGMASTER_JOB_KEY_FILE")
env.append({"name": "RINGMASTER_FORMATION_TIMEOUT_SECONDS", "value": "20"})
pod = {
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "stranger"},
  "spec": {
    "restartPolicy": "Never",
    "nodeSelector": {"ringmaster.io/node": "real"},
    "tolerations": [{"key": "ringmaster.io/real-node", "operator": "Exists", "effect": "NoSchedule"}],
    "securityContext": {"runAsNonRoot": True, "runAsUser": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
    "volumes": [{"name": "key", "secret": {"secretName": "stranger-key",
                                           "items": [{"key": "key", "path": os.path.basename(key_file)}]}}],
    "containers": [{
      "name": "stranger", "image": src["spec"]["containers"][0]["image"], "imagePullPolicy": "Never",
      "args": ["--model", "tiny", "--steps", "1"], "env": env,
      "volumeMounts": [{"name": "key", "mountPath": os.path.dirname(key_file), "readOnly": True}],
      "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }],
  },
}
print(json.dumps(pod))' >"/tmp/$E2E_NAME-stranger.json" || fail "cannot read $worker1's spec"
grep -q TF_CONFIG "/tmp/$E2E_NAME-stranger.json" || fail "no TF_CONFIG in $worker1's spec"
k -n "$OUTSIDER" apply -f "/tmp/$E2E_NAME-stranger.json" >/dev/null || fail "cannot create the stranger's pod"
wait_jsonpath 120 pod/stranger '{.status.phase}' Failed -n "$OUTSIDER"
ip=$(k -n "$OUTSIDER" get pod stranger -o 'jsonpath={.status.podIP}')
[ -n "$ip" ] || fail "the stranger's pod has no IP"
said=$(k -n "$OUTSIDER" logs stranger)
grep -q "Unauthenticated" <<<"$said" || fail "the stranger did not fail as Unauthenticated: $(tail -5 <<<"$said")"
refusals=$(k -n "$NS" logs "$chief" | grep -c "ringmaster: /job:chief/task:0: refused $ip" || true)
[ "$refusals" -ge 1 ] || fail "the leader logged no refusal of $ip: $(k -n "$NS" logs "$chief" | grep refused | tail -3); the stranger said: $(tail -5 <<<"$said")"
pass "the stranger ($ip, namespace $OUTSIDER, posing as worker 1 with a key of its own) was refused: the leader logged it ($refusals line), the stranger failed Unauthenticated: $(grep -m1 Unauthenticated <<<"$said")"

# The job is unaffected.
expect_eq "the job's state" "$(job_state "$job")" Running
expect_eq "the job's restarts" "$(k -n "$NS" get djob "$job" -o 'jsonpath={.status.restartCount}')" 0
for pod in "$chief" "$worker0" "$worker1"; do
  expect_eq "$pod's container restarts" "$(k -n "$NS" get pod "$pod" -o 'jsonpath={.status.containerStatuses[0].restartCount}')" 0
  expect_eq "$pod's phase" "$(k -n "$NS" get pod "$pod" -o 'jsonpath={.status.phase}')" Running
  if k -n "$NS" logs "$pod" | grep -E ': (Unavailable|Aborted|DeadlineExceeded): ' >&2; then
    fail "$pod reported a failure after the stranger's attempt"
  fi
done
pass "job $job unaffected: Running, no restart, no member reported a failure"
