#!/usr/bin/env bash
# The real node: ringmaster-real-0 is Ready beside the kwok nodes, labelled
# and tainted; pods really run there (Pending -> Running -> Succeeded or
# Failed with the container's exit code); kubectl logs and exec work; a
# headless Service's pods resolve by <hostname>.<subdomain>.<ns>.svc.cluster.local
# from another pod, a never-ready one too (publishNotReadyAddresses); a
# ClusterIP Service and kubernetes.default are reachable from a pod.
. "$(dirname "$0")/lib.sh"
: "${RINGMASTER_REAL_NODE:?no real node in this testbed (RINGMASTER_REAL_NODE is not set)}"
: "${RINGMASTER_BUSYBOX_IMAGE:?RINGMASTER_BUSYBOX_IMAGE is not set}"
node=$RINGMASTER_REAL_NODE
new_namespace

wait_jsonpath 60 "node/$node" '{.status.conditions[?(@.type=="Ready")].status}' True
expect_eq "label ringmaster.io/node" "$(k get node "$node" -o jsonpath='{.metadata.labels.ringmaster\.io/node}')" real
expect_eq "taint" "$(k get node "$node" -o jsonpath='{range .spec.taints[*]}{.key}={.value}:{.effect}{end}')" \
  "ringmaster.io/real-node=true:NoSchedule"
pass "$node is Ready, labelled ringmaster.io/node=real, tainted ringmaster.io/real-node=true:NoSchedule"

# pod NAME [READINESS_COMMAND] COMMAND...: a busybox pod on the real node.
pod() {
  local name=$1 ready=$2; shift 2
  local cmd="" a probe=""
  for a in "$@"; do cmd+="\"$a\", "; done
  [ -z "$ready" ] || probe="    readinessProbe: {exec: {command: [$ready]}, periodSeconds: 1}"
  k -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $name, labels: {app: grp}}
spec:
  hostname: $name
  subdomain: grp
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  nodeSelector: {ringmaster.io/node: real}
  tolerations: [{key: ringmaster.io/real-node, operator: Exists, effect: NoSchedule}]
  containers:
  - name: main
    image: $RINGMASTER_BUSYBOX_IMAGE
    imagePullPolicy: Never
    command: [${cmd%, }]
$probe
EOF
}

# Exit codes, and the phases on the way (watched, not polled).
phases_log=$(mktemp)
on_exit "rm -f $phases_log"
# kubectl itself in the background (not k, a function: killing its subshell
# would leave kubectl and its watch behind).
kubectl --request-timeout=120s -n "$NS" get pods --watch-only \
  -o 'jsonpath={.metadata.name}={.status.phase}{"\n"}' >"$phases_log" 2>/dev/null &
watcher=$!
on_exit "kill $watcher"
sleep 1
pod exit0 "" sh -c 'echo hello from $(hostname); sleep 3'
pod exit7 "" sh -c 'echo failing; sleep 3; exit 7'
wait_jsonpath 60 pod/exit0 '{.status.phase}' Succeeded -n "$NS"
wait_jsonpath 60 pod/exit7 '{.status.phase}' Failed -n "$NS"
expect_eq "exit0's exit code" "$(k -n "$NS" get pod exit0 -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}')" 0
expect_eq "exit7's exit code" "$(k -n "$NS" get pod exit7 -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}')" 7
sleep 1
for p in exit0 exit7; do
  phases=$(grep "^$p=" "$phases_log" | cut -d= -f2 | uniq | paste -sd' ')
  want="Pending Running Succeeded"; [ $p = exit0 ] || want="Pending Running Failed"
  expect_eq "phases of $p" "$phases" "$want"
done
pass "exit0: Pending -> Running -> Succeeded, exit code 0; exit7: Pending -> Running -> Failed, exit code 7"
expect_eq "kubectl logs exit0" "$(k -n "$NS" logs exit0)" "hello from exit0"
expect_eq "kubectl logs exit7" "$(k -n "$NS" logs exit7)" "failing"
pass "kubectl logs"

# A headless Service with publishNotReadyAddresses, a ready pod (w0, which
# answers on 2222), a never-ready one (w1); a ClusterIP Service in front.
k -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata: {name: grp}
spec:
  clusterIP: None
  publishNotReadyAddresses: true
  selector: {app: grp}
  ports: [{name: p, port: 2222}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: grp}
  ports: [{name: p, port: 80, targetPort: 2222}]
EOF
pod w0 "" sh -c 'while :; do echo served-by-w0 | nc -l -p 2222; done'
pod w1 '"false"' sleep 3600
pod client "" sleep 3600
for p in w0 w1 client; do wait_jsonpath 60 "pod/$p" '{.status.phase}' Running -n "$NS"; done
wait_jsonpath 30 pod/w0 '{.status.conditions[?(@.type=="Ready")].status}' True -n "$NS"
expect_eq "w1's Ready" "$(k -n "$NS" get pod w1 -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" False
expect_eq "kubectl exec" "$(k -n "$NS" exec client -- sh -c 'echo $((6 * 7))')" 42
pass "kubectl exec"

for p in w0 w1; do
  ip=$(k -n "$NS" get pod $p -o jsonpath='{.status.podIP}')
  name="$p.grp.$NS.svc.cluster.local"
  wait_for 30 "$name to resolve from a pod" \
    bash -c "kubectl -n $NS exec client -- nslookup $name | grep -qx 'Address: $ip'"
done
pass "DNS from a pod: w0.grp.$NS.svc.cluster.local (ready) and w1.grp... (never ready) resolve to their pod IPs"

wait_for 30 "Service web (ClusterIP) from a pod" \
  bash -c "kubectl -n $NS exec client -- nc -w 3 web 80 </dev/null | grep -qx served-by-w0"
version=$(k -n "$NS" exec client -- wget -q -O- --no-check-certificate https://kubernetes.default/version) ||
  fail "kubernetes.default from a pod"
grep -q '"gitVersion"' <<<"$version" || fail "kubernetes.default/version from a pod: $version"
api=$(k -n "$NS" exec client -- sh -c 'wget -q -O- --no-check-certificate \
  --header "Authorization: Bearer $(cat /var/run/secrets/kubernetes.io/serviceaccount/token)" \
  https://kubernetes.default.svc.cluster.local/api') || fail "the API with the pod's token"
grep -q '"kind": "APIVersions"' <<<"$api" || fail "/api from a pod: $api"
pass "ClusterIP Services from a pod: web -> w0, kubernetes.default (with the pod's service-account token)"
