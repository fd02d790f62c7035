#!/usr/bin/env bash
# Native gang scheduling against the testbed's real Workload API
# (scheduling.k8s.io/v1beta1 and the scheduler's GangScheduling plugin,
# Kubernetes 1.37 with GenericWorkload on): a job's Workload and PodGroup,
# all-or-nothing placement, a job that does not fit waiting whole, its pods
# bound when room appears, and a restart inside a placed gang. The pods land
# on kwok nodes of this test's own (labelled and tainted for it), so no other
# test's pods change the room there is.
# On a testbed whose Kubernetes has no Workload API (scripts/kubernetes-version
# 1.34), it checks instead that `--gang-scheduling auto` uses none.
. "$(dirname "$0")/lib_operator.sh"
setup

minor=$(k get --raw /version | python3 -c 'import json, sys; print(json.load(sys.stdin)["minor"].rstrip("+"))')
start_operator op --leader-elect=false
wait_for 30 "the operator's start line" grep -q '"gang_scheduling":' "$LOGDIR/op.log"
api=$(sed -n 's/.*"gang_scheduling":"\([^"]*\)".*/\1/p' "$LOGDIR/op.log" | head -1)

# gang_job NAME WORKERS: a job whose pods need 3 of a node's 4 cpus (one pod
# a node), on this test's nodes only.
gang_job() {
  cat <<YAML
apiVersion: ringmaster.io/v1alpha1
kind: DistributedJob
metadata:
  name: $1
spec:
  replicaSpecs:
    Worker:
      replicas: $2
      restartPolicy: ExitCode
      template:
        spec:
          nodeSelector: {ringmaster.io/e2e-gang: "$NS"}
          tolerations: [{key: ringmaster.io/e2e-gang, operator: Equal, value: "$NS", effect: NoSchedule}]
          containers:
          - name: trainer
            image: ghcr.io/ringmaster/worker:0.1.0
            command: [ringmaster-worker]
            resources: {requests: {cpu: "3"}}
YAML
}

if [ "$minor" -lt 37 ]; then
  expect_eq "the Workload API the operator found on Kubernetes 1.$minor" "$api" none
  gang_job plain 1 | k -n "$NS" apply -f - >/dev/null
  wait_pod_count 60 plain 1
  expect_eq "the pod's schedulingGroup" \
    "$(k -n "$NS" get pod plain-worker-0 -o 'jsonpath={.spec.schedulingGroup}')" ""
  pass "Kubernetes 1.$minor has no Workload API: auto gives no gang"
  exit 0
fi
expect_eq "the Workload API the operator found" "$api" scheduling.k8s.io/v1beta1

# add_node I: one more kwok node of this test's (4 cpus), Ready.
add_node() {
  local name="gang-$NS-$1"
  k apply -f - >/dev/null <<YAML || fail "creating node $name failed"
apiVersion: v1
kind: Node
metadata:
  name: $name
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels: {type: kwok-gang, kubernetes.io/hostname: $name, kubernetes.io/os: linux, ringmaster.io/e2e-gang: "$NS"}
spec:
  taints: [{key: ringmaster.io/e2e-gang, value: "$NS", effect: NoSchedule}]
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "10"}
  capacity: {cpu: "4", memory: 8Gi, pods: "10"}
YAML
  on_exit "kubectl --request-timeout=10s delete node $name --ignore-not-found"
  wait_jsonpath 60 "node/$name" '{.status.conditions[?(@.type=="Ready")].status}' True
}
# bound JOB: how many of its pods the scheduler has bound to a node.
bound() {
  k -n "$NS" get pods -l "ringmaster.io/job-name=$1" -o 'jsonpath={range .items[*]}{.spec.nodeName}{"\n"}{end}' |
    grep -c . || true
}
add_node 0
add_node 1

# A job that fits: its gang, and every pod placed.
gang_job fits 2 | k -n "$NS" apply -f - >/dev/null
wait_pods_running 90 fits 2
uid=$(k -n "$NS" get djob fits -o 'jsonpath={.metadata.uid}')
expect_eq "the Workload's owner" \
  "$(k -n "$NS" get workloads.v1beta1.scheduling.k8s.io fits -o 'jsonpath={.metadata.ownerReferences[0].uid}')" "$uid"
expect_eq "the Workload's gang" \
  "$(k -n "$NS" get workloads.v1beta1.scheduling.k8s.io fits -o 'jsonpath={.spec.podGroupTemplates[0].schedulingPolicy.gang.minCount}')" 2
expect_eq "the PodGroup's owner" \
  "$(k -n "$NS" get podgroups.v1beta1.scheduling.k8s.io fits -o 'jsonpath={.metadata.ownerReferences[0].uid}')" "$uid"
expect_eq "the PodGroup's Workload" \
  "$(k -n "$NS" get podgroups.v1beta1.scheduling.k8s.io fits -o 'jsonpath={.spec.workloadRef.workloadName}/{.spec.workloadRef.templateName}/{.spec.schedulingPolicy.gang.minCount}')" "fits/job/2"
for p in fits-worker-0 fits-worker-1; do
  expect_eq "$p's schedulingGroup" "$(k -n "$NS" get pod "$p" -o 'jsonpath={.spec.schedulingGroup.podGroupName}')" fits
done
pass "a job that fits: its Workload and PodGroup (minCount 2), both pods placed"

# Three pods on two nodes: without a gang two would bind; with one, none.
k -n "$NS" delete djob fits --wait=false >/dev/null
wait_pod_count 90 fits 0
gang_job waits 3 | k -n "$NS" apply -f - >/dev/null
wait_pod_count 60 waits 3
for _ in $(seq 1 60); do  # 15 s of the scheduler's retries
  n=$(bound waits)
  [ "$n" = 0 ] || fail "a gang of 3 with room for 2: $n pod(s) bound, want none until all fit"
  sleep 0.25
done
expect_eq "the job's state while it waits" "$(djob_state waits)" Created
pass "a gang that does not fit waits whole: 0 of 3 pods bound over 15 s"

# Room for the third: the whole gang binds.
add_node 2
wait_pods_running 90 waits 3
expect_eq "nodes used" "$(k -n "$NS" get pods -l ringmaster.io/job-name=waits -o 'jsonpath={range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | wc -l)" 3
wait_state 60 waits Running
pass "room appears: all 3 pods bound, the job Running"

# A failed pod of a placed gang is replaced alone: the gang's quorum holds.
uid=$(pod_uid waits-worker-1)
pod_exit waits-worker-1 137
wait_for 60 "worker 1 to be recreated" bash -c "u=\$(kubectl -n $NS get pod waits-worker-1 -o jsonpath={.metadata.uid} 2>/dev/null); [ -n \"\$u\" ] && [ \"\$u\" != $uid ]"
wait_jsonpath 60 djob/waits '{.status.restartCount}' 1 -n "$NS"
wait_pods_running 90 waits 3
wait_state 60 waits Running
pass "a restart inside a placed gang: the new pod binds, restartCount 1"
