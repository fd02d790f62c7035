#!/usr/bin/env bash
# A Kubeflow TFJob on real pods: Ringmaster's operator with --tfjob (run on
# the host, in a namespace of its own, beside the in-cluster operator, which
# does not watch it) creates the pods and per-replica Services as
# training-operator does; each pod's ringmaster-worker forms the group from
# the TF_CONFIG Kubeflow gives it (one Service name per replica), through
# CoreDNS, and all-reduces with verification; the chief exits 0 and the
# TFJob is Succeeded (TFJobSucceeded).
# Usage: tfjob.sh OPERATOR_BINARY
. "$(dirname "$0")/lib_real.sh"
OPERATOR=${1:?usage: $0 OPERATOR_BINARY}
new_namespace
LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/ringmaster-e2e-real-tfjob.XXXXXX")
on_exit "rm -rf '$LOGDIR'"
if ! k get crd tfjobs.kubeflow.org >/dev/null 2>&1; then
  k create -f "$REPO_ROOT/charts/ringmaster/crds/tfjobs.kubeflow.org.yaml" >/dev/null || fail "create the TFJob CRD"
fi
wait_for 60 "the TFJob CRD to be established" \
  k wait --for=condition=Established --timeout=5s crd/tfjobs.kubeflow.org
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
