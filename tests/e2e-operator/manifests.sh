#!/usr/bin/env bash
# kubectl apply -f manifests/ installs the operator's objects (server-side
# validated), and the chart's CRD is the same as manifests/'.
. "$(dirname "$0")/lib_operator.sh"
setup
for obj in crd/distributedjobs.ringmaster.io namespace/ringmaster-system clusterrole/ringmaster-operator \
  clusterrolebinding/ringmaster-operator; do
  k get "$obj" >/dev/null || fail "manifests/ did not create $obj"
done
for obj in serviceaccount/ringmaster-operator deployment/ringmaster-operator role/ringmaster-operator-leader-election \
  rolebinding/ringmaster-operator-leader-election; do
  k -n ringmaster-system get "$obj" >/dev/null || fail "manifests/ did not create $obj"
done
diff <(grep -v '^#' "$REPO_ROOT/manifests/00-crd.yaml") <(grep -v '^#' "$REPO_ROOT/charts/ringmaster/crds/distributedjobs.yaml") >&2 ||
  fail "charts/ringmaster/crds/distributedjobs.yaml differs from manifests/00-crd.yaml"
expect_eq "short name" "$(k get crd distributedjobs.ringmaster.io -o 'jsonpath={.spec.names.shortNames[0]}')" djob
# The service account may do what the operator does, and no more.
sa=system:serviceaccount:ringmaster-system:ringmaster-operator
for verb_res in "create pods" "delete pods" "watch distributedjobs.ringmaster.io" "create events"; do
  expect_eq "can-i $verb_res" "$(k auth can-i $verb_res --as "$sa" -n default)" yes
done
expect_eq "can-i update the status" "$(k auth can-i update distributedjobs.ringmaster.io --subresource=status --as "$sa" -n default)" yes
expect_eq "can-i create leases (ringmaster-system)" "$(k auth can-i create leases.coordination.k8s.io --as "$sa" -n ringmaster-system)" yes
# The job key Secrets: create, and get (on AlreadyExists); nothing more.
for verb in create get; do
  expect_eq "can-i $verb secrets" "$(k auth can-i $verb secrets --as "$sa" -n default)" yes
done
for verb in list watch update delete; do
  expect_eq "can-i $verb secrets" "$(k auth can-i $verb secrets --as "$sa" -n default 2>/dev/null || true)" no
done
# The TF_CONFIG cluster's ConfigMaps (ringmaster.io/tf-config: ConfigMap):
# create, and get (on AlreadyExists); immutable, so nothing more.
for verb in create get; do
  expect_eq "can-i $verb configmaps" "$(k auth can-i $verb configmaps --as "$sa" -n default)" yes
done
for verb in list watch update delete; do
  expect_eq "can-i $verb configmaps" "$(k auth can-i $verb configmaps --as "$sa" -n default 2>/dev/null || true)" no
done
# NetworkPolicies (only used with --network-policy): create and get.
for verb in create get; do
  expect_eq "can-i $verb networkpolicies" "$(k auth can-i $verb networkpolicies.networking.k8s.io --as "$sa" -n default)" yes
done
expect_eq "can-i delete networkpolicies" "$(k auth can-i delete networkpolicies.networking.k8s.io --as "$sa" -n default 2>/dev/null || true)" no
expect_eq "can-i create leases (default)" "$(k auth can-i create leases.coordination.k8s.io --as "$sa" -n default 2>/dev/null || true)" no
pass "manifests/ install the CRD, RBAC and Deployment; least privilege holds"
