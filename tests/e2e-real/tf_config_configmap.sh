#!/usr/bin/env bash
# ringmaster.io/tf-config: ConfigMap on real pods: the operator (run on the
# host, in a namespace of its own) writes the job's TF_CONFIG cluster into one
# immutable ConfigMap and every pod's TF_CONFIG names it; the kubelet expands
# it. Then:
#   - TensorFlow's own TFConfigClusterResolver, in the keras-example image,
#     reads in each pod the TF_CONFIG that `ringmaster tfconfig` gives for the
#     same job inline, byte for byte, and resolves the cluster and its task;
#   - ringmaster-worker (the worker image) forms its group from it and
#     all-reduces with verification: the job is Succeeded.
# Usage: tf_config_configmap.sh OPERATOR_BINARY RINGMASTER_CLI
. "$(dirname "$0")/lib_real.sh"
OPERATOR=${1:?usage: $0 OPERATOR_BINARY RINGMASTER_CLI}
CLI=${2:?usage: $0 OPERATOR_BINARY RINGMASTER_CLI}
new_namespace
LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/ringmaster-e2e-real-tfcm.XXXXXX")
on_exit "rm -rf '$LOGDIR'"
if ! k get crd distributedjobs.ringmaster.io >/dev/null 2>&1; then
  k apply -f "$REPO_ROOT/manifests/00-crd.yaml" >/dev/null || fail "create the DistributedJob CRD"
fi
wait_for 60 "the DistributedJob CRD to be established" \
  k wait --for=condition=Established --timeout=5s crd/distributedjobs.ringmaster.io
host_operator "$LOGDIR"

# job NAME IMAGE CONTAINER-FIELDS: Chief 1 + Worker 2 on the real node,
# TF_CONFIG from the ConfigMap.
job() {
  local r
  cat <<YAML
apiVersion: ringmaster.io/v1alpha1
kind: DistributedJob
metadata:
  name: $1
  annotations: {ringmaster.io/tf-config: ConfigMap}
spec:
  runPolicy: {cleanPodPolicy: None}
  communication: {timeoutSeconds: 60}
  replicaSpecs:
YAML
  for r in "Chief 1" "Worker 2"; do
    set -- "$@" $r
    cat <<YAML
    ${*: -2:1}:
      replicas: ${*: -1}
      restartPolicy: Never
      template:
        spec:
          nodeSelector: {ringmaster.io/node: real}
          tolerations: [{key: ringmaster.io/real-node, operator: Exists, effect: NoSchedule}]
          containers: [{name: tensorflow, image: $2, $3}]
YAML
  done
}

# TensorFlow reads TF_CONFIG: each pod writes what it saw and what TF's
# resolver made of it as its termination message.
read_tf='import json, os, tensorflow as tf
r = tf.distribute.cluster_resolver.TFConfigClusterResolver()
msg = {"raw": os.environ["TF_CONFIG"], "cluster": r.cluster_spec().as_dict(), "task": [r.task_type, r.task_id]}
open("/dev/termination-log", "w").write(json.dumps(msg))'
job tfread ghcr.io/ringmaster/keras-example:0.1.0 \
  "command: [python, -c, $(jq -Rs . <<<"$read_tf")]" >"$LOGDIR/tfread.yaml"
k -n "$NS" apply -f "$LOGDIR/tfread.yaml" >/dev/null || fail "apply the tfread job"
wait_for 300 "the tfread job to succeed" bash -c \
  "[ \"\$(kubectl -n $NS get djob tfread -o 'jsonpath={.status.state}')\" = Succeeded ]"
cm=$(k -n "$NS" get configmaps -l ringmaster.io/job-name=tfread -o 'jsonpath={.items[*].metadata.name}')
[[ "$cm" == tfread-tf-cluster-* ]] || fail "no ConfigMap tfread-tf-cluster-*: '$cm'"
expect_eq "the ConfigMap immutable" "$(k -n "$NS" get configmap "$cm" -o 'jsonpath={.immutable}')" true
expect_eq "the ConfigMap's owner" "$(k -n "$NS" get configmap "$cm" -o 'jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}')" \
  DistributedJob/tfread
for r in chief:0 worker:0 worker:1; do
  pod=tfread-${r%%:*}-${r##*:}
  # The job succeeds with its chief; a worker may still be running then.
  wait_for 120 "$pod to succeed" bash -c \
    "[ \"\$(kubectl -n $NS get pod $pod -o 'jsonpath={.status.phase}')\" = Succeeded ]"
  want=$("$CLI" tfconfig "$LOGDIR/tfread.yaml" --replica "$r" --namespace "$NS") || fail "ringmaster tfconfig $r"
  spec=$(k -n "$NS" get pod "$pod" -o 'jsonpath={.spec.containers[0].env[?(@.name=="TF_CONFIG")].value}')
  [[ "$spec" == '{"cluster":$(RINGMASTER_TF_CLUSTER),"task":'* ]] || fail "$pod's spec holds the cluster: $spec"
  msg=$(k -n "$NS" get pod "$pod" -o 'jsonpath={.status.containerStatuses[0].state.terminated.message}')
  expect_eq "TF_CONFIG in $pod" "$(jq -r .raw <<<"$msg")" "$want"
  expect_eq "TF's task in $pod" "$(jq -c .task <<<"$msg")" "[\"${r%%:*}\",${r##*:}]"
  expect_eq "TF's cluster in $pod" "$(jq -cS .cluster <<<"$msg")" "$(jq -cS .cluster <<<"$want")"
done
pass "TensorFlow's TFConfigClusterResolver reads in 3 real pods the very TF_CONFIG of an inline job; the pods' specs name the ConfigMap"

job quick ghcr.io/ringmaster/worker:0.1.0 'args: [--model, tiny, --steps, "3"]' |
  k -n "$NS" apply -f - >/dev/null || fail "apply the worker job"
wait_for 240 "the worker job to succeed" bash -c \
  "[ \"\$(kubectl -n $NS get djob quick -o 'jsonpath={.status.state}')\" = Succeeded ]"
log=$(k -n "$NS" logs quick-chief-0)
grep -q "3 steps verified" <<<"$log" || fail "the chief did not verify 3 steps: $log"
pass "ringmaster-worker formed its group of 3 from the expanded TF_CONFIG, 3 steps verified, Succeeded"
