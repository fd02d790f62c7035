#!/usr/bin/env bash
# Kueue on the testbed (`scripts/testbed kueue up|down`): plain pods that
# carry Kueue's pod-group labels are gated by its webhook, become one
# Workload once the whole group exists, and are admitted together (every
# gate removed, the Workload Admitted) within the sample ClusterQueue's
# quota; a group over the quota stays gated with no pod scheduled; a pod
# without the queue label is not touched. `kueue down` leaves no CRD, no
# webhook registration, no process and no finalizer behind.
. "$(dirname "$(dirname "$0")")/e2e/lib.sh"
new_namespace
on_exit '"$TESTBED" kueue down'

# Kueue's webhook gates every pod of a group: its admission gate and, with
# TopologyAwareScheduling (on by default in v0.17), its topology gate;
# admission without a topology request removes both.
GATES="kueue.x-k8s.io/admission kueue.x-k8s.io/topology"
IMAGE=${RINGMASTER_BUSYBOX_IMAGE:-localhost/ringmaster/busybox:1.35.0}   # kwok runs nothing

t0=$SECONDS
"$TESTBED" kueue up --namespace "$NS" || fail "scripts/testbed kueue up failed"
pass "kueue up in $((SECONDS - t0)) s (LocalQueue ringmaster-queue in $NS)"
"$TESTBED" kueue status >/dev/null || fail "kueue status says it is not up"

# group_pod NAME GROUP COUNT CPU: one member of a pod group, for a kwok node.
group_pod() {
  k -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  labels:
    kueue.x-k8s.io/queue-name: ringmaster-queue
    kueue.x-k8s.io/pod-group-name: $2
  annotations:
    kueue.x-k8s.io/pod-group-total-count: "$3"
spec:
  restartPolicy: Never
  nodeSelector: {type: kwok}
  containers:
  - name: main
    image: $IMAGE
    imagePullPolicy: Never
    resources:
      requests: {cpu: "$4", memory: 1Gi}
EOF
}
jp() { k -n "$NS" get "$1" "$2" -o "jsonpath=$3"; }
wl_cond() { jp workloads.kueue.x-k8s.io "$1" "{.status.conditions[?(@.type==\"$2\")].status}"; }

# --- a group of 2 within quota: gated, one Workload, admitted together ---
group_pod a-0 group-a 2 1 || fail "creating pod a-0"
expect_eq "scheduling gates of a-0" "$(jp pod a-0 '{.spec.schedulingGates[*].name}')" "$GATES"
expect_eq "managed label of a-0" "$(jp pod a-0 '{.metadata.labels.kueue\.x-k8s\.io/managed}')" true
expect_eq "finalizers of a-0" "$(jp pod a-0 '{.metadata.finalizers[*]}')" kueue.x-k8s.io/managed
# Kueue says so when it sees a group with fewer pods than its total
# (ErrWorkloadCompose on the pod): it has looked, and made no Workload.
wait_for 60 "Kueue to see a-0 alone (ErrWorkloadCompose)" bash -c "[ \"\$(kubectl -n $NS get events --field-selector involvedObject.name=a-0,reason=ErrWorkloadCompose -o name | grep -c .)\" -ge 1 ]"
k -n "$NS" get workloads.kueue.x-k8s.io group-a >/dev/null 2>&1 && fail "a Workload exists with 1 of the group's 2 pods"
expect_eq "a-0 alone: gates" "$(jp pod a-0 '{.spec.schedulingGates[*].name}')" "$GATES"
expect_eq "a-0 alone: node" "$(jp pod a-0 '{.spec.nodeName}')" ""
pass "a-0 is gated ($GATES), labelled managed, has Kueue's finalizer; no Workload for half a group"

group_pod a-1 group-a 2 1 || fail "creating pod a-1"
wait_jsonpath 60 workloads.kueue.x-k8s.io/group-a '{.status.conditions[?(@.type=="Admitted")].status}' True -n "$NS"
expect_eq "ClusterQueue of group-a" "$(jp workloads.kueue.x-k8s.io group-a '{.status.admission.clusterQueue}')" ringmaster-cq
expect_eq "pods of group-a's Workload" "$(jp workloads.kueue.x-k8s.io group-a '{.spec.podSets[*].count}')" 2
expect_eq "queue of group-a's Workload" "$(jp workloads.kueue.x-k8s.io group-a '{.spec.queueName}')" ringmaster-queue
for p in a-0 a-1; do
  wait_jsonpath 30 "pod/$p" '{.spec.schedulingGates[*].name}' "" -n "$NS"
  wait_jsonpath 60 "pod/$p" '{.status.phase}' Running -n "$NS"
  node=$(jp pod "$p" '{.spec.nodeName}')
  [[ "$node" == kwok-node-* ]] || fail "pod $p is on node '$node', not a kwok node"
done
# The pods own their group's Workload (so it goes when they all do).
expect_eq "owners of Workload group-a" \
  "$(jp workloads.kueue.x-k8s.io group-a '{range .metadata.ownerReferences[*]}{.kind}/{.name} {end}' | tr ' ' '\n' | sort | xargs)" "Pod/a-0 Pod/a-1"
pass "group-a (2 pods, 1 cpu each): Workload Admitted in ringmaster-cq, both gates removed, both Running"

# --- a group over the quota (2 x 3 cpu > 4): stays gated, nothing scheduled ---
group_pod b-0 group-b 2 3 || fail "creating pod b-0"
group_pod b-1 group-b 2 3 || fail "creating pod b-1"
wait_jsonpath 60 workloads.kueue.x-k8s.io/group-b '{.status.conditions[?(@.type=="QuotaReserved")].status}' False -n "$NS"
msg=$(jp workloads.kueue.x-k8s.io group-b '{.status.conditions[?(@.type=="QuotaReserved")].message}')
grep -q "insufficient" <<<"$msg" || fail "group-b not admitted, but not for quota: '$msg'"
# Kueue counts it pending in the ClusterQueue: it has been through a
# scheduling cycle, not merely not yet looked at.
wait_for 60 "ringmaster-cq to count group-b pending" bash -c "[ \"\$(kubectl get clusterqueue ringmaster-cq -o 'jsonpath={.status.pendingWorkloads}')\" -ge 1 ]"
[ "$(wl_cond group-b Admitted)" != True ] || fail "group-b (6 cpu) was admitted by a 4-cpu ClusterQueue"
for p in b-0 b-1; do
  expect_eq "gates of $p" "$(jp pod "$p" '{.spec.schedulingGates[*].name}')" "$GATES"
  expect_eq "node of $p" "$(jp pod "$p" '{.spec.nodeName}')" ""
  expect_eq "phase of $p" "$(jp pod "$p" '{.status.phase}')" Pending
done
expect_eq "group-a still admitted" "$(wl_cond group-a Admitted)" True
pass "group-b (2 x 3 cpu): QuotaReserved False ($msg); both pods gated, unscheduled"

# --- pods without the queue label are not Kueue's ---
k -n "$NS" run plain --image="$IMAGE" --image-pull-policy=Never --restart=Never \
  --overrides='{"spec":{"nodeSelector":{"type":"kwok"}}}' >/dev/null || fail "creating an unlabelled pod"
expect_eq "gates of an unlabelled pod" "$(jp pod plain '{.spec.schedulingGates}')" ""
expect_eq "finalizers of an unlabelled pod" "$(jp pod plain '{.metadata.finalizers}')" ""
wait_jsonpath 60 pod/plain '{.status.phase}' Running -n "$NS"
managed=$(k -n "$NS" get pods -l kueue.x-k8s.io/managed -o jsonpath='{range .items[*]}{.metadata.name} {end}')
expect_eq "pods managed by Kueue in $NS" "$managed" "a-0 a-1 b-0 b-1 "
# Anywhere in the cluster, Kueue manages only pods that ask for a queue
# (other tests' queued jobs may still be there: their pods carry the label).
unqueued=$(k get pods -A -l 'kueue.x-k8s.io/managed,!kueue.x-k8s.io/queue-name' \
  -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name} {end}')
expect_eq "pods managed by Kueue without a queue-name label, in the whole cluster" "$unqueued" ""
pass "an unlabelled pod runs ungated; only the 4 labelled pods are Kueue's"

# --- down leaves nothing of Kueue behind ---
t0=$SECONDS
"$TESTBED" kueue down || fail "scripts/testbed kueue down failed"
pass "kueue down in $((SECONDS - t0)) s"
crds=$(k get crd -o name | grep 'kueue\.x-k8s\.io' || true)
expect_eq "Kueue CRDs after down" "$crds" ""
hooks=$(k get mutatingwebhookconfiguration,validatingwebhookconfiguration -o name | grep -i kueue || true)
expect_eq "Kueue webhook configurations after down" "$hooks" ""
fins=$(k get pods -A -o jsonpath='{range .items[*]}{.metadata.finalizers}{"\n"}{end}' | grep -c 'kueue\.x-k8s\.io' || true)
expect_eq "pods with Kueue's finalizer after down" "$fins" 0
"$TESTBED" kueue status >/dev/null 2>&1 && fail "kueue status says it is up after down"
pgrep -f "$RINGMASTER_TESTBED_DIR/kueue/config.yaml" >/dev/null && fail "a kueue process is left after down"
[ ! -e "$RINGMASTER_TESTBED_DIR/kueue" ] || fail "$RINGMASTER_TESTBED_DIR/kueue is left after down"
# With no webhook left, a pod with the queue label is an ordinary pod again.
group_pod c-0 group-c 1 1 || fail "a labelled pod cannot be created after kueue down"
expect_eq "gates of a labelled pod after down" "$(jp pod c-0 '{.spec.schedulingGates}')" ""
k -n "$NS" delete pod a-0 a-1 b-0 b-1 c-0 plain --wait=true --timeout=30s >/dev/null ||
  fail "the group's pods cannot be deleted after kueue down"
pass "no CRD, webhook, process, run files or pod finalizer left; pods are deletable"
