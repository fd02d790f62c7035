#!/usr/bin/env bash
# A Kubeflow TFJob on real pods: Ringmaster's operator with --tfjob (run on
# the host, in a namespace of its own, beside the in-cluster operator, which
# does not watch it) creates the pods and per-replica Services as
# training-operator does; each pod's ringmaster-worker forms the group from
# the TF_CONFIG Kubeflow gives it (one Service name per replica), through
# CoreDNS, and all-reduces with verification; the chief exits 0 and the
# TFJob is Succeeded (TFJobSucceeded). Then Kubeflow's own dist-mnist
# example (kubeflow/dist-mnist.yaml, as released), with only its image
# replaced by ours: every pod's TF_CONFIG is the one Kubeflow gives it
# (`ringmaster tfconfig`'s, PS included), the chief and workers all-reduce,
# the PS task has nothing to do, and the TFJob is Succeeded.
# Usage: tfjob.sh OPERATOR_BINARY RINGMASTER_CLI
. "$(dirname "$0")/lib_real.sh"
OPERATOR=${1:?usage: $0 OPERATOR_BINARY RINGMASTER_CLI}
CLI=${2:?usage: $0 OPERATOR_BINARY RINGMASTER_CLI}
new_namespace
LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/ringmaster-e2e-real-tfjob.XXXXXX")
on_exit "rm -rf '$LOGDIR'"
use_tfjob_crd
"$OPERATOR" --kubeconfig "$KUBECONFIG" --namespace "$NS" --leader-elect=false --tfjob \
  --metrics-address 0 --health-probe-address 0 >"$LOGDIR/op.log" 2>&1 &
op=$!
on_exit "kill $op"
# On failure, the operator's last words too.
fail() {
  tail -n 30 "$LOGDIR/op.log" >&2
  printf 'FAIL %s: %s\n' "$E2E_NAME" "$*" >&2
  exit 1
}

k -n "$NS" apply -f - >/dev/null <<YAML || fail "apply the TFJob"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: mnist
  annotations: {ringmaster.io/timeout-seconds: "60"}
spec:
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
