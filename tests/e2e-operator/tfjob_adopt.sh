#!/usr/bin/env bash
# Switching over with a TFJob running: Kubeflow's training-operator (the
# testbed's peer, its own TFJob CRD installed) starts a TFJob's pods; it is
# stopped; Ringmaster's operator with --tfjob takes the TFJob over as it is:
# the same pods and Services (training-operator's labels and owner are
# ours), none restarted or created, its status carried on in Kubeflow's
# form; the chief exits 0 and the TFJob is Succeeded.
. "$(dirname "$0")/lib_operator.sh"
setup
on_exit "'$TESTBED' peer-kubeflow down"
"$TESTBED" peer-kubeflow up >"$LOGDIR/peer.log" 2>&1 || { cat "$LOGDIR/peer.log" >&2; fail "peer-kubeflow up"; }

k -n "$NS" apply -f - >/dev/null <<'YAML' || fail "apply the TFJob"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: mnist
spec:
  tfReplicaSpecs:
    Chief:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers: [{name: tensorflow, image: ghcr.io/ringmaster/worker:0.1.0, command: [ringmaster-worker]}]
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers: [{name: tensorflow, image: ghcr.io/ringmaster/worker:0.1.0, command: [ringmaster-worker]}]
YAML
running() { k -n "$NS" get pods -l training.kubeflow.org/job-name=mnist --field-selector=status.phase=Running -o name | wc -l; }
wait_for 90 "training-operator's 3 Running pods" bash -c "[ \$(kubectl -n $NS get pods -l training.kubeflow.org/job-name=mnist --field-selector=status.phase=Running -o name | wc -l) = 3 ]"
wait_for 60 "training-operator to say Running" bash -c "[ \"\$(kubectl -n $NS get tfjob mnist -o 'jsonpath={.status.conditions[?(@.type==\"Running\")].status}')\" = True ]"
uids() {  # KIND: the job's objects of that kind, name=uid, sorted
  k -n "$NS" get "$1" -l training.kubeflow.org/job-name=mnist \
    -o 'jsonpath={range .items[*]}{.metadata.name}={.metadata.uid}{"\n"}{end}' | sort
}
pods_before=$(uids pods) services_before=$(uids services)
expect_eq "training-operator's Services" "$(wc -l <<<"$services_before")" 3
"$TESTBED" peer-kubeflow down >>"$LOGDIR/peer.log" 2>&1 || fail "peer-kubeflow down"
pass "training-operator ran the TFJob's 3 pods and Services, and is stopped"

start_operator op --leader-elect=false --tfjob
# Ours once it has written the status (selectors are ours).
wait_for 60 "the operator to take the TFJob over" bash -c \
  "[ -n \"\$(kubectl -n $NS get tfjob mnist -o 'jsonpath={.status.replicaStatuses.Worker.selector}')\" ]"
sleep 2  # a moment for anything it would wrongly do
expect_eq "the pods (name=uid)" "$(uids pods)" "$pods_before"
expect_eq "the Services (name=uid)" "$(uids services)" "$services_before"
expect_eq "Running pods" "$(running)" 3
expect_eq "Running" "$(k -n "$NS" get tfjob mnist -o 'jsonpath={.status.conditions[?(@.type=="Running")].status}/{.status.conditions[?(@.type=="Running")].reason}')" True/TFJobRunning
expect_eq "replicaStatuses.Worker.active" "$(k -n "$NS" get tfjob mnist -o 'jsonpath={.status.replicaStatuses.Worker.active}')" 2
grep -q '"reason":"SuccessfulCreatePod"' "$LOGDIR/op.log" && fail "the operator created pods"
pass "taken over: the same pods and Services, nothing restarted or created, Running carried on"

pod_exit mnist-chief-0 0
wait_for 60 "the TFJob to succeed" bash -c "[ \"\$(kubectl -n $NS get tfjob mnist -o 'jsonpath={.status.conditions[?(@.type==\"Succeeded\")].status}')\" = True ]"
expect_eq "Succeeded reason" "$(k -n "$NS" get tfjob mnist -o 'jsonpath={.status.conditions[?(@.type=="Succeeded")].reason}')" TFJobSucceeded
pass "the chief exits 0 -> Succeeded (TFJobSucceeded) under Ringmaster"
