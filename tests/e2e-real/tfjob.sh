#!/usr/bin/env bash
# A Kubeflow TFJob on real pods: Ringmaster's operator with --tfjob (run on
# the host, in a namespace of its own, beside the in-cluster operator, which
# does not watch it) creates the pods and per-replica Services as
# training-operator does; each pod's ringmaster-worker forms the group from
# the TF_CONFIG Kubeflow gives it (one Service name per replica), through
# CoreDNS, and all-reduces with verification; the chief exits 0 and the
# TFJob is Succeeded (TFJobSucceeded); Kubeflow's SDK reads its logs and
# events (tfjob_logs.py). Then Kubeflow's own examples, as released
# (kubeflow/), with only their image replaced by ours: dist-mnist, where
# every pod's TF_CONFIG is the one Kubeflow gives it (`ringmaster
# tfconfig`'s, PS included), the chief and workers all-reduce, the PS task
# has nothing to do; and simple, whose two workers run
# examples/kubeflow/mnist.py from the Keras example image and end with the
# same weights. Each TFJob is Succeeded.
# Usage: tfjob.sh OPERATOR_BINARY RINGMASTER_CLI
. "$(dirname "$0")/lib_real.sh"
OPERATOR=${1:?usage: $0 OPERATOR_BINARY RINGMASTER_CLI}
CLI=${2:?usage: $0 OPERATOR_BINARY RINGMASTER_CLI}
new_namespace
LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/ringmaster-e2e-real-tfjob.XXXXXX")
on_exit "rm -rf '$LOGDIR'"
use_tfjob_crd
host_operator "$LOGDIR" --tfjob

k -n "$NS" apply -f - >/dev/null <<YAML || fail "apply the TFJob"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: mnist
  annotations: {ringmaster.io/timeout-seconds: "60"}
spec:
  # The default, written out: Kubeflow's SDK cannot read a TFJob without a
  # runPolicy (get_job raises), under training-operator as here.
  runPolicy: {cleanPodPolicy: None}
  tfReplicaSpecs:
    Chief:
      replicas: 1
      template:
        spec:
          nodeSelector: {ringmaster.io/node: real}
          tolerations: [{key: ringmaster.io/real-node, operator: Exists, effect: NoSchedule}]
          containers: [{name: tensorflow, image: $WORKER_IMAGE, args: [--model, tiny, --steps, "3"]}]
    Worker:
      replicas: 2
      template:
        spec:
          nodeSelector: {ringmaster.io/node: real}
          tolerations: [{key: ringmaster.io/real-node, operator: Exists, effect: NoSchedule}]
          containers: [{name: tensorflow, image: $WORKER_IMAGE, args: [--model, tiny, --steps, "3"]}]
YAML
wait_for 240 "the TFJob to succeed" bash -c \
  "[ \"\$(kubectl -n $NS get tfjob mnist -o 'jsonpath={.status.conditions[?(@.type==\"Succeeded\")].status}')\" = True ]"
expect_eq "Succeeded reason" \
  "$(k -n "$NS" get tfjob mnist -o 'jsonpath={.status.conditions[?(@.type=="Succeeded")].reason}')" TFJobSucceeded
for pod in mnist-chief-0 mnist-worker-0 mnist-worker-1; do
  expect_eq "node of $pod" "$(k -n "$NS" get pod "$pod" -o 'jsonpath={.spec.nodeName}')" "$REAL_NODE"
done
log=$(k -n "$NS" logs mnist-chief-0)
grep -q "3 steps verified" <<<"$log" || fail "the chief did not verify 3 steps: $log"
pass "a TFJob (Chief 1, Worker 2) on real pods: the group formed from Kubeflow's TF_CONFIG, 3 steps verified, Succeeded"

# Kubeflow's SDK reads the finished TFJob's logs and events.
kubeflow_sdk_venv
NS="$NS" JOB=mnist WANT="3 steps verified" "$KUBEFLOW_SDK_PYTHON" "$(dirname "$0")/tfjob_logs.py" ||
  fail "Kubeflow's SDK on the TFJob's logs (above)"
pass "Kubeflow's SDK: get_job_logs of the chief, of the workers, of one worker, and the job's events"

# Kubeflow's dist-mnist example, only the image replaced (and the pods sent
# to the real node, as every real-pod test does).
EXAMPLE="$LOGDIR/dist-mnist.yaml"
sed "s|kubeflow/tf-dist-mnist-test:latest|$WORKER_IMAGE|" "$(dirname "$0")/kubeflow/dist-mnist.yaml" >"$EXAMPLE"
[ "$(grep -c "image: $WORKER_IMAGE" "$EXAMPLE")" = 3 ] || fail "the example's three images were not replaced"
on_real_node <"$EXAMPLE" | k -n "$NS" apply -f - >/dev/null || fail "apply Kubeflow's dist-mnist example"
job=dist-mnist-for-e2e-test
wait_for 60 "the example's 4 pods" bash -c \
  "[ \$(kubectl -n $NS get pods -l training.kubeflow.org/job-name=$job -o name | wc -l) = 4 ]"
for r in chief:0 ps:0 worker:0 worker:1; do
  want=$("$CLI" tfconfig "$EXAMPLE" --replica "$r" --namespace "$NS") || fail "ringmaster tfconfig $r"
  got=$(k -n "$NS" get pod "$job-${r%%:*}-${r##*:}" -o 'jsonpath={.spec.containers[?(@.name=="tensorflow")].env[?(@.name=="TF_CONFIG")].value}')
  expect_eq "TF_CONFIG of $job-${r%%:*}-${r##*:}" "$got" "$want"
done
wait_for 300 "the example to succeed" bash -c \
  "[ \"\$(kubectl -n $NS get tfjob $job -o 'jsonpath={.status.conditions[?(@.type==\"Succeeded\")].status}')\" = True ]"
log=$(k -n "$NS" logs "$job-chief-0")
grep -q "10 steps verified" <<<"$log" || fail "the example's chief did not verify its steps: $log"
expect_eq "the PS pod" "$(k -n "$NS" get pod "$job-ps-0" -o 'jsonpath={.status.phase}')" Succeeded
pass "Kubeflow's dist-mnist example, only the image ours: Kubeflow's TF_CONFIG in every pod, 10 steps verified, Succeeded"

# Kubeflow's simple example, only the image replaced (by the Keras example
# image, which has our mnist.py at the path its command names), in this
# test's namespace, the pods sent to the real node: two workers train one
# model together and end with the same weights.
EXAMPLE="$LOGDIR/simple.yaml"
sed -e "s|docker.io/kubeflowkatib/tf-mnist-with-summaries:latest|$KERAS_IMAGE|" \
  -e "s|^  namespace: kubeflow\$|  namespace: $NS|" "$(dirname "$0")/kubeflow/simple.yaml" >"$EXAMPLE"
[ "$(grep -c "image: $KERAS_IMAGE" "$EXAMPLE")" = 1 ] && grep -q "namespace: $NS\$" "$EXAMPLE" ||
  fail "the simple example's image and namespace were not replaced"
on_real_node <"$EXAMPLE" | k apply -f - >/dev/null || fail "apply Kubeflow's simple example"
job=tfjob-simple
wait_for 420 "the simple example to succeed" bash -c \
  "[ \"\$(kubectl -n $NS get tfjob $job -o 'jsonpath={.status.conditions[?(@.type==\"Succeeded\")].status}')\" = True ]"
digests=""
for i in 0 1; do
  log=$(k -n "$NS" logs "$job-worker-$i")
  grep -q "^Test Loss: .*, Test Accuracy: " <<<"$log" || fail "$job-worker-$i printed no test line: ${log: -400}"
  d=$(sed -n 's/.*weights sha256 \([0-9a-f]*\).*/\1/p' <<<"$log" | tail -1)
  [ -n "$d" ] || fail "$job-worker-$i printed no weights digest: ${log: -400}"
  digests+="$d "
done
[ "${digests%% *}" = "$(cut -d' ' -f2 <<<"$digests")" ] || fail "the two workers ended with different weights: $digests"
pass "Kubeflow's simple example, only the image ours: 2 workers trained one model (weights ${digests:0:16}...), Succeeded"
