#!/usr/bin/env bash
# kwok: the fake nodes are Ready; a pod is scheduled onto one and becomes
# Running; `scripts/testbed pod-exit` ends it with exit code 3 (Failed) or
# 0 (Succeeded), and kwok does not overwrite that.
. "$(dirname "$0")/lib.sh"
new_namespace

ready=$(k get nodes -l type=kwok \
  -o jsonpath='{range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}')
[ -n "$ready" ] || fail "no kwok nodes"
while IFS='=' read -r node status; do
  expect_eq "Ready condition of node $node" "$status" True
done <<<"$ready"
pass "$(wc -l <<<"$ready") kwok nodes are Ready"

for p in exit3 exit0; do
  k -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $p}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: example.invalid/worker:1
  - name: sidecar
    image: example.invalid/sidecar:1
EOF
done
for p in exit3 exit0; do
  wait_jsonpath 60 "pod/$p" '{.status.phase}' Running -n "$NS"
  node=$(k -n "$NS" get pod "$p" -o jsonpath='{.spec.nodeName}')
  [[ "$node" == kwok-node-* ]] || fail "pod $p is on node '$node', not a kwok node"
  ip=$(k -n "$NS" get pod "$p" -o jsonpath='{.status.podIP}')
  [ -n "$ip" ] || fail "pod $p is Running without a pod IP"
  pass "pod $p was scheduled onto $node and is Running (IP $ip)"
done

"$TESTBED" pod-exit "$NS" exit3 3 || fail "pod-exit $NS exit3 3 failed"
"$TESTBED" pod-exit "$NS" exit0 0 || fail "pod-exit $NS exit0 0 failed"

check_ended() {  # POD PHASE CODE REASON
  expect_eq "phase of $1" "$(k -n "$NS" get pod "$1" -o jsonpath='{.status.phase}')" "$2"
  expect_eq "exit codes of $1" \
    "$(k -n "$NS" get pod "$1" -o jsonpath='{range .status.containerStatuses[*]}{.state.terminated.exitCode},{end}')" "$3,$3,"
  expect_eq "reasons of $1" \
    "$(k -n "$NS" get pod "$1" -o jsonpath='{range .status.containerStatuses[*]}{.state.terminated.reason},{end}')" "$4,$4,"
  expect_eq "running state of $1" \
    "$(k -n "$NS" get pod "$1" -o jsonpath='{.status.containerStatuses[*].state.running}')" ""
  expect_eq "Ready condition of $1" \
    "$(k -n "$NS" get pod "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" False
}
check_ended exit3 Failed 3 Error
check_ended exit0 Succeeded 0 Completed
sleep 3   # give kwok the chance to (wrongly) rewrite the status
check_ended exit3 Failed 3 Error
check_ended exit0 Succeeded 0 Completed
pass "pod-exit: exit3 is Failed with exit code 3, exit0 Succeeded with 0; kwok keeps them"

k -n "$NS" delete pod exit3 exit0 --timeout=30s >/dev/null || fail "deleting the ended pods failed"
pass "ended pods are deleted"
