#!/usr/bin/env bash
# The operator in-cluster: `helm install` of charts/ringmaster with the image
# built from operator/docker/operator.Dockerfile runs the operator in a pod
# on the real node, with the chart's service account and RBAC, in a namespace
# where the restricted Pod Security Standard is enforced by the API server's
# own admission plugin. Its RBAC is exactly what it needs: `kubectl auth
# can-i --list` of its service account against rbac-expected.txt.
# The fixture of the real-pod tests: uninstall.sh removes it all.
. "$(dirname "$0")/lib_real.sh"
HELM="$("$TESTBED" bin-dir helm)/helm"
DIR=$(dirname "$0")

k create namespace "$OPERATOR_NS" --dry-run=client -o yaml | k apply -f - >/dev/null
k label namespace "$OPERATOR_NS" --overwrite pod-security.kubernetes.io/enforce=restricted \
  pod-security.kubernetes.io/enforce-version=latest >/dev/null || fail "cannot label $OPERATOR_NS"
for ns in "${REAL_NAMESPACES[@]}"; do
  k create namespace "$ns" --dry-run=client -o yaml | k apply -f - >/dev/null || fail "cannot create $ns"
done

# The admission plugin enforces it: a root, privileged pod is refused.
out=$(k -n "$OPERATOR_NS" run pss-probe --image="$WORKER_IMAGE" --image-pull-policy=Never --restart=Never \
        --overrides='{"spec":{"containers":[{"name":"pss-probe","image":"'"$WORKER_IMAGE"'","securityContext":{"privileged":true}}]}}' 2>&1) &&
  fail "a privileged pod was admitted in $OPERATOR_NS: $out"
grep -q 'violates PodSecurity "restricted' <<<"$out" || fail "the privileged pod was refused, but not by PodSecurity: $out"
pass "PodSecurity restricted is enforced in $OPERATOR_NS"

ns_list=$(IFS=,; echo "${REAL_NAMESPACES[*]}")
"$HELM" upgrade --install "$RELEASE" "$REPO_ROOT/charts/ringmaster" -n "$OPERATOR_NS" --wait --timeout 180s \
  --set replicaCount=1 --set image.pullPolicy=Never --set "watchNamespaces={$ns_list}" \
  --set 'nodeSelector.ringmaster\.io/node=real' \
  --set 'tolerations[0].key=ringmaster.io/real-node' --set 'tolerations[0].operator=Exists' \
  --set 'tolerations[0].effect=NoSchedule' --set metrics.serviceMonitor.enabled=false >"/tmp/$E2E_NAME.helm.log" 2>&1 ||
  { cat "/tmp/$E2E_NAME.helm.log" >&2; k -n "$OPERATOR_NS" get pods,events >&2 || true
    k -n "$OPERATOR_NS" logs -l app.kubernetes.io/name=ringmaster-operator,app.kubernetes.io/instance=$RELEASE --tail=40 >&2 || true
    fail "helm install of charts/ringmaster"; }
pod=$(k -n "$OPERATOR_NS" get pods -l app.kubernetes.io/name=ringmaster-operator,app.kubernetes.io/instance=$RELEASE -o 'jsonpath={.items[0].metadata.name}')
[ -n "$pod" ] || fail "no operator pod"
wait_jsonpath 120 "pod/$pod" '{.status.conditions[?(@.type=="Ready")].status}' True -n "$OPERATOR_NS"
expect_eq "the operator pod's node" "$(k -n "$OPERATOR_NS" get pod "$pod" -o 'jsonpath={.spec.nodeName}')" "$REAL_NODE"
# The image has no shell and no `id`: the process's own uid, from the host.
opid=$(container_pid "$OPERATOR_NS" "$pod") || exit 1
expect_eq "its user (the process's real and effective uid)" "$(awk '/^Uid:/ {print $2 ":" $3}' "/proc/$opid/status")" 65532:65532
# It reached the API server through the kubernetes Service (ClusterIP, kube-proxy) with its token.
wait_for 60 "the operator to take the lead" bash -c \
  "kubectl -n $OPERATOR_NS logs $pod | grep -qiE 'leader|acquired'"
pass "helm install: the operator runs in pod $pod on $REAL_NODE as uid 65532 and leads"

# RBAC: enough (every test below runs with it; the operator's log has no
# 403) and not more: what its service account may do, exactly.
sa="system:serviceaccount:$OPERATOR_NS:$RELEASE-ringmaster"
# A service account with no binding of its own: what the cluster lets every
# one do, which changes between releases (1.37 lets any read
# clustertrustbundles), is not the chart's to grant.
nobody="system:serviceaccount:$OPERATOR_NS:rm-no-bindings"
can_i() {  # SUBJECT NAMESPACE: "resource verbs" lines
  k auth can-i --list --as="$1" -n "$2" | awk 'NR > 1 && $1 !~ /^self/ && $1 !~ /^\[/ {
      match($0, /\[[^][]*\]$/)  # the verbs: the last column
      print $1, substr($0, RSTART) }' | LC_ALL=C sort
}
rights() {  # NAMESPACE: the operator's lines, less what every service account may do
  LC_ALL=C comm -23 <(can_i "$sa" "$1") <(can_i "$nobody" "$1")
}
got=$( { echo "# in a watched namespace"; rights rm-real-quickstart;
         echo "# in its own namespace"; rights "$OPERATOR_NS";
         echo "# in a namespace it does not watch"; rights default; } )
want=$(grep -v '^##' "$DIR/rbac-expected.txt")
if [ "$got" != "$want" ]; then
  diff <(echo "$want") <(echo "$got") >&2 || true
  fail "the operator's rights differ from rbac-expected.txt (above: - expected, + granted)"
fi
pass "RBAC: the service account may do exactly what rbac-expected.txt lists"
