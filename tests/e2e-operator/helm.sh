#!/usr/bin/env bash
# helm lint is clean, and helm install creates the operator's objects; its
# pods are scheduled onto kwok nodes and Running (the image is never pulled
# there: the operator under test runs on the host).
. "$(dirname "$0")/lib_operator.sh"
setup
HELM="$("$TESTBED" bin-dir helm)/helm"
[ -x "$HELM" ] || fail "no helm at $HELM (scripts/testbed build helm)"
"$HELM" lint "$REPO_ROOT/charts/ringmaster" >"$LOGDIR/lint.log" 2>&1 || { cat "$LOGDIR/lint.log" >&2; fail "helm lint"; }
grep -q "0 chart(s) failed" "$LOGDIR/lint.log" || fail "helm lint: $(cat "$LOGDIR/lint.log")"
pass "helm lint"
# networkPolicy.enabled: the flag, and the RBAC rule for NetworkPolicies only then.
# helm template renders for the testbed's Kubernetes version: the chart's
# kubeVersion (>=1.34.0-0) refuses the v1.20 that a helm built without Helm's
# release ldflags assumes. (tests/chart/render.sh checks the rest offline.)
kube_version=$(k get --raw /version | sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p')
[ -n "$kube_version" ] || fail "no gitVersion in the API server's /version"
"$HELM" template rm "$REPO_ROOT/charts/ringmaster" --kube-version "$kube_version" >"$LOGDIR/default.yaml" || fail "helm template"
"$HELM" template rm "$REPO_ROOT/charts/ringmaster" --kube-version "$kube_version" --set networkPolicy.enabled=true >"$LOGDIR/np.yaml" ||
  fail "helm template --set networkPolicy.enabled=true"
grep -q -- '--network-policy=true' "$LOGDIR/np.yaml" || fail "networkPolicy.enabled does not pass --network-policy=true"
grep -q 'networkpolicies' "$LOGDIR/np.yaml" || fail "networkPolicy.enabled grants no networkpolicies rule"
grep -q -- '--network-policy' "$LOGDIR/default.yaml" && fail "--network-policy without networkPolicy.enabled"
grep -q 'networkpolicies' "$LOGDIR/default.yaml" && fail "a networkpolicies rule without networkPolicy.enabled"
grep -q '"secrets"' "$LOGDIR/default.yaml" || fail "no rule for the job key Secrets"
pass "helm template: networkPolicy.enabled adds --network-policy=true and its RBAC rule, off by default"

# kwok's fake nodes carry a taint: tolerate it so the pods land there, and
# only there (the real node has no operator image). The release's name is
# its own: the chart's user ClusterRoles are cluster-scoped and named after
# the release, and the real-pod tests' release (rm) may be installed.
rel=rm-e2e name=rm-e2e-ringmaster
# The TFJob CRD of crds/: installed where there is none, an existing one
# (training-operator's, or an earlier install's) left as it is.
tfjob_crd_before=$(k get crd tfjobs.kubeflow.org -o 'jsonpath={.metadata.uid}/{.metadata.resourceVersion}' 2>/dev/null || true)
"$HELM" install "$rel" "$REPO_ROOT/charts/ringmaster" -n "$NS" --wait=false --timeout 60s \
  --set 'tolerations[0].operator=Exists' --set nodeSelector.type=kwok --set "watchNamespaces={$NS}" \
  --set metrics.serviceMonitor.enabled=false >"$LOGDIR/install.log" 2>&1 ||
  { cat "$LOGDIR/install.log" >&2; fail "helm install"; }
k -n "$NS" get deployment "$name" >/dev/null || fail "no Deployment"
k -n "$NS" get serviceaccount "$name" >/dev/null || fail "no ServiceAccount"
k -n "$NS" get role "$name" "$name-leader-election" >/dev/null || fail "no Roles"
k -n "$NS" get rolebinding "$name" "$name-leader-election" >/dev/null || fail "no RoleBindings"
k -n "$NS" get service "$name-metrics" >/dev/null || fail "no metrics Service"
k -n "$NS" get poddisruptionbudget "$name" >/dev/null || fail "no PodDisruptionBudget (replicaCount 2)"
expect_eq "aggregated user role" \
  "$(k get clusterrole "$name-edit" -o 'jsonpath={.metadata.labels.rbac\.authorization\.k8s\.io/aggregate-to-edit}')" true
k get crd distributedjobs.ringmaster.io >/dev/null || fail "no CRD"
tfjob_crd_after=$(k get crd tfjobs.kubeflow.org -o 'jsonpath={.metadata.uid}/{.metadata.resourceVersion}' 2>/dev/null) ||
  fail "no TFJob CRD after helm install"
if [ -n "$tfjob_crd_before" ]; then
  expect_eq "the TFJob CRD that was there (uid/resourceVersion)" "$tfjob_crd_after" "$tfjob_crd_before"
  note "the TFJob CRD was there already: kept as it was"
else
  expect_eq "the chart's TFJob CRD" "$(k get crd tfjobs.kubeflow.org -o 'jsonpath={.spec.versions[0].schema.openAPIV3Schema.description}')" \
    "A TFJob runs a distributed TensorFlow job (Kubeflow's kubeflow.org/v1 TFJob)."
fi
wait_for 120 "2 operator pods Running" bash -c \
  "[ \$(kubectl -n $NS get pods -l app.kubernetes.io/name=ringmaster-operator --field-selector=status.phase=Running -o name | wc -l) = 2 ]"
node=$(k -n "$NS" get pods -l app.kubernetes.io/name=ringmaster-operator -o 'jsonpath={.items[0].spec.nodeName}')
[ -n "$node" ] || fail "operator pod not scheduled"
pass "helm install: Deployment, RBAC (user roles included), Service, PodDisruptionBudget; pods Running on node $node"
"$HELM" uninstall "$rel" -n "$NS" --timeout 60s >/dev/null 2>&1 || fail "helm uninstall"
k get clusterrole "$name-edit" >/dev/null 2>&1 && fail "helm uninstall left ClusterRole $name-edit"
pass "helm uninstall"
