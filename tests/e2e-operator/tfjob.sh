#!/usr/bin/env bash
# The operator with --tfjob on Kubeflow's TFJob (kubeflow.org/v1): what it
# creates is what training-operator v1.9 creates: a pod and a headless
# Service per replica named <job>-<type>-<index>, training-operator's
# labels (job-role on the master), controller ownerReferences to the TFJob,
# TF_CONFIG byte for byte `ringmaster tfconfig`'s, in the tensorflow
# container; the status in Kubeflow's form (TFJobCreated, TFJobRunning,
# TFJobSucceeded, replicaStatuses with selectors); restarts counted in the
# state annotation, backoffLimit -> TFJobFailed. A TFJob the loader
# refuses fails with TFJobFailedValidation naming the field, and the
# operator goes on. Without --tfjob, TFJobs are left alone.
. "$(dirname "$0")/lib_operator.sh"
setup
use_tfjob_crd

JOB="$LOGDIR/mnist.yaml"
cat >"$JOB" <<YAML
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: mnist
  namespace: $NS
  annotations:
    ringmaster.io/implementation: RING
spec:
  tfReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - {name: tensorflow, image: ghcr.io/ringmaster/worker:0.1.0, command: [ringmaster-worker]}
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - {name: tensorflow, image: ghcr.io/ringmaster/worker:0.1.0, command: [ringmaster-worker]}
            - {name: sidecar, image: ghcr.io/ringmaster/worker:0.1.0, command: [sleep, "3600"]}
    PS:
      replicas: 1
      template:
        spec:
          containers:
            - name: tensorflow
              image: ghcr.io/ringmaster/worker:0.1.0
              command: [ringmaster-worker]
              ports: [{name: tfjob-port, containerPort: 3333}]
YAML

# Without --tfjob the operator does not touch TFJobs.
start_operator plain --leader-elect=false
k apply -f "$JOB" >/dev/null || fail "apply the TFJob"
sleep 3
expect_eq "pods of a TFJob without --tfjob" "$(k -n "$NS" get pods -o name | wc -l)" 0
kill_operator plain TERM
pass "without --tfjob: no pods, no status"

start_operator op --leader-elect=false --tfjob --network-policy
tfpods() { k -n "$NS" get pods -l training.kubeflow.org/job-name=mnist -o name 2>/dev/null | wc -l; }
wait_for 60 "the TFJob's 4 pods" bash -c "[ \$(kubectl -n $NS get pods -l training.kubeflow.org/job-name=mnist -o name | wc -l) = 4 ]"
for r in master:0 worker:0 worker:1 ps:0; do
  type=${r%%:*} index=${r##*:} name="mnist-${r%%:*}-${r##*:}"
  want=$("$CLI" tfconfig "$JOB" --replica "$r" --namespace "$NS") || fail "ringmaster tfconfig $r"
  got=$(k -n "$NS" get pod "$name" -o 'jsonpath={.spec.containers[?(@.name=="tensorflow")].env[?(@.name=="TF_CONFIG")].value}')
  expect_eq "TF_CONFIG of $name" "$got" "$want"
  expect_eq "labels of $name" \
    "$(k -n "$NS" get pod "$name" -o 'jsonpath={.metadata.labels.training\.kubeflow\.org/job-name},{.metadata.labels.training\.kubeflow\.org/replica-type},{.metadata.labels.training\.kubeflow\.org/replica-index},{.metadata.labels.training\.kubeflow\.org/operator-name}')" \
    "mnist,$type,$index,tfjob-controller"
  role=$(k -n "$NS" get pod "$name" -o 'jsonpath={.metadata.labels.training\.kubeflow\.org/job-role}')
  expect_eq "job-role of $name" "$role" "$([ "$type" = master ] && echo master)"
  expect_eq "owner of $name" \
    "$(k -n "$NS" get pod "$name" -o 'jsonpath={.metadata.ownerReferences[0].apiVersion}/{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}/{.metadata.ownerReferences[0].controller}')" \
    "kubeflow.org/v1/TFJob/mnist/true"
  expect_eq "implementation env of $name" \
    "$(k -n "$NS" get pod "$name" -o 'jsonpath={.spec.containers[?(@.name=="tensorflow")].env[?(@.name=="RINGMASTER_IMPLEMENTATION")].value}')" RING
  wait_for 30 "the Service $name" k -n "$NS" get service "$name"
  expect_eq "Service $name" \
    "$(k -n "$NS" get service "$name" -o 'jsonpath={.spec.clusterIP} {.spec.selector.training\.kubeflow\.org/replica-type}-{.spec.selector.training\.kubeflow\.org/replica-index} {.spec.ports[0].name}:{.spec.ports[0].port} {.metadata.ownerReferences[0].kind}')" \
    "None $type-$index tfjob-port:$([ "$type" = ps ] && echo 3333 || echo 2222) TFJob"
done
expect_eq "the sidecar's TF_CONFIG (training-operator gives it to tensorflow alone)" \
  "$(k -n "$NS" get pod mnist-worker-0 -o 'jsonpath={.spec.containers[?(@.name=="sidecar")].env[?(@.name=="TF_CONFIG")].value}')" ""
expect_eq "Services of the job" "$(k -n "$NS" get services -l training.kubeflow.org/job-name=mnist -o name | wc -l)" 4
expect_eq "pod restartPolicy of a worker (OnFailure)" "$(k -n "$NS" get pod mnist-worker-1 -o 'jsonpath={.spec.restartPolicy}')" OnFailure
expect_eq "pod restartPolicy of the master (Never)" "$(k -n "$NS" get pod mnist-master-0 -o 'jsonpath={.spec.restartPolicy}')" Never
pass "4 pods and 4 Services, named, labelled and owned as training-operator does; TF_CONFIG byte for byte"
expect_eq "the NetworkPolicy (--network-policy)" \
  "$(k -n "$NS" get networkpolicy mnist-ringmaster -o 'jsonpath={.spec.podSelector.matchLabels.training\.kubeflow\.org/job-name} {.spec.ingress[0].from[0].podSelector.matchLabels.training\.kubeflow\.org/job-name} {.metadata.ownerReferences[0].kind}')" \
  "mnist mnist TFJob"
pass "--network-policy: the TFJob's pods admit ingress from its own pods only"

cond() {  # TYPE FIELD
  k -n "$NS" get tfjob mnist -o "jsonpath={.status.conditions[?(@.type==\"$1\")].$2}"
}
wait_for 60 "the TFJob to be Created" bash -c "[ \"\$(kubectl -n $NS get tfjob mnist -o 'jsonpath={.status.conditions[?(@.type==\"Created\")].reason}')\" = TFJobCreated ]"
wait_for 90 "the TFJob to be Running" bash -c "[ \"\$(kubectl -n $NS get tfjob mnist -o 'jsonpath={.status.conditions[?(@.type==\"Running\")].status}')\" = True ]"
expect_eq "Running reason" "$(cond Running reason)" TFJobRunning
expect_eq "Running message" "$(cond Running message)" "TFJob $NS/mnist is running."
expect_eq "replicaStatuses.Worker" \
  "$(k -n "$NS" get tfjob mnist -o 'jsonpath={.status.replicaStatuses.Worker.active}/{.status.replicaStatuses.Worker.succeeded}/{.status.replicaStatuses.Worker.failed}')" "2//" # zero counts are left out, as Go's omitempty does
expect_eq "replicaStatuses.Master.selector" "$(k -n "$NS" get tfjob mnist -o 'jsonpath={.status.replicaStatuses.Master.selector}')" \
  "training.kubeflow.org/job-name=mnist,training.kubeflow.org/operator-name=tfjob-controller,training.kubeflow.org/replica-type=master"
[ -n "$(k -n "$NS" get tfjob mnist -o 'jsonpath={.status.startTime}')" ] || fail "no startTime"
[ -n "$(k -n "$NS" get tfjob mnist -o 'jsonpath={.status.lastReconcileTime}')" ] || fail "no lastReconcileTime"
state=$(k -n "$NS" get tfjob mnist --no-headers | awk '{print $2}')
expect_eq "kubectl get tfjob's State (the last condition)" "$state" Running
pass "status: Created and Running with training-operator's reasons, replicaStatuses, startTime"

pod_exit mnist-master-0 0
wait_for 60 "the TFJob to succeed" bash -c "[ \"\$(kubectl -n $NS get tfjob mnist -o 'jsonpath={.status.conditions[?(@.type==\"Succeeded\")].status}')\" = True ]"
expect_eq "Succeeded reason" "$(cond Succeeded reason)" TFJobSucceeded
expect_eq "Running after success" "$(cond Running status)" False
[ -n "$(k -n "$NS" get tfjob mnist -o 'jsonpath={.status.completionTime}')" ] || fail "no completionTime"
expect_eq "replicaStatuses.Master after success" \
  "$(k -n "$NS" get tfjob mnist -o 'jsonpath={.status.replicaStatuses.Master.active}/{.status.replicaStatuses.Master.succeeded}')" /1
grep -q "TFJobSucceeded" <<<"$(k -n "$NS" describe tfjob mnist)" || fail "no TFJobSucceeded event"
# cleanPodPolicy None (TFJob's default): the other pods are left as they are.
expect_eq "pods left (cleanPodPolicy None)" "$(tfpods)" 4
pass "the master exits 0 -> Succeeded (TFJobSucceeded), completionTime, event; pods kept (cleanPodPolicy None)"
port=$(metrics_port op)
wait_for 30 "/metrics to count the TFJob Succeeded" \
  bash -c "curl -sf --max-time 5 http://127.0.0.1:$port/metrics | grep -qx 'ringmaster_jobs{condition=\"Succeeded\"} 1'"
metrics=$(curl -sf --max-time 10 "http://127.0.0.1:$port/metrics") || fail "GET /metrics"
for line in "ringmaster_jobs_created_total{namespace=\"$NS\"} 1" "ringmaster_jobs_succeeded_total{namespace=\"$NS\"} 1"; do
  grep -qxF "$line" <<<"$metrics" || fail "/metrics has no '$line'"
done
pass "/metrics counts the TFJob: created, Succeeded"

k -n "$NS" apply -f - >/dev/null <<'YAML' || fail "apply the refused TFJob"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: refused
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers: [{name: trainer, image: ghcr.io/ringmaster/worker:0.1.0}]
YAML
wait_for 60 "the refused TFJob to fail" bash -c "[ \"\$(kubectl -n $NS get tfjob refused -o 'jsonpath={.status.conditions[?(@.type==\"Failed\")].reason}')\" = TFJobFailedValidation ]"
msg=$(k -n "$NS" get tfjob refused -o 'jsonpath={.status.conditions[?(@.type=="Failed")].message}')
grep -q "spec.tfReplicaSpecs.Worker.template.spec.containers: needs a container named tensorflow" <<<"$msg" ||
  fail "the Failed condition does not name the field: $msg"
expect_eq "pods of the refused TFJob" "$(k -n "$NS" get pods -l training.kubeflow.org/job-name=refused -o name | wc -l)" 0
kill -0 "${OP_PIDS[op]}" || fail "the operator exited"
pass "a refused TFJob: Failed TFJobFailedValidation naming the field, no pods, the operator goes on"

# Restarts: ExitCode, a signal restarts the replica as a new pod
# (TFJobRestarting), counted in the status and in the state annotation that
# training-operator's CRD would not prune; past backoffLimit, TFJobFailed.
k -n "$NS" apply -f - >/dev/null <<'YAML' || fail "apply the TFJob retry"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: retry
spec:
  runPolicy: {backoffLimit: 1, cleanPodPolicy: All}
  tfReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: ExitCode
      template:
        spec:
          containers: [{name: tensorflow, image: ghcr.io/ringmaster/worker:0.1.0, command: [ringmaster-worker]}]
YAML
wait_for 90 "the TFJob retry to be Running" bash -c "[ \"\$(kubectl -n $NS get tfjob retry -o 'jsonpath={.status.conditions[?(@.type==\"Running\")].status}')\" = True ]"
uid=$(pod_uid retry-worker-1)
pod_exit retry-worker-1 137
wait_for 60 "worker 1 to be recreated" bash -c "u=\$(kubectl -n $NS get pod retry-worker-1 -o jsonpath={.metadata.uid} 2>/dev/null); [ -n \"\$u\" ] && [ \"\$u\" != $uid ]"
expect_eq "the state annotation" \
  "$(k -n "$NS" get tfjob retry -o 'jsonpath={.metadata.annotations.status\.ringmaster\.io/state}')" '{"restartCount":1}'
grep -q "TFJobRestarting" <<<"$(k -n "$NS" describe tfjob retry)" || fail "no TFJobRestarting event"
wait_for 90 "the TFJob retry to run again" bash -c "[ \"\$(kubectl -n $NS get tfjob retry -o 'jsonpath={.status.conditions[?(@.type==\"Running\")].status}')\" = True ]"
pod_exit retry-worker-0 143
wait_for 60 "the TFJob retry to fail" bash -c "[ \"\$(kubectl -n $NS get tfjob retry -o 'jsonpath={.status.conditions[?(@.type==\"Failed\")].status}')\" = True ]"
expect_eq "Failed reason" "$(k -n "$NS" get tfjob retry -o 'jsonpath={.status.conditions[?(@.type=="Failed")].reason}')" TFJobFailed
grep -q "more than backoffLimit 1" <<<"$(k -n "$NS" get tfjob retry -o 'jsonpath={.status.conditions[?(@.type=="Failed")].message}')" ||
  fail "the Failed condition does not say backoffLimit"
wait_for 60 "the failed TFJob's pods to be cleaned (All)" bash -c "[ \$(kubectl -n $NS get pods -l training.kubeflow.org/job-name=retry -o name | wc -l) = 0 ]"
wait_for 60 "their Services to go with them" bash -c "[ \$(kubectl -n $NS get services -l training.kubeflow.org/job-name=retry -o name | wc -l) = 0 ]"
pass "exit 137 -> recreated (TFJobRestarting, state annotation restartCount 1); a second restart past backoffLimit 1 -> TFJobFailed, pods and their Services cleaned"
