#!/usr/bin/env bash
# Kubernetes' default user roles cover DistributedJobs (the aggregated
# ClusterRoles of manifests/02-rbac.yaml): a namespace's editor (the `edit`
# ClusterRole bound in that namespace) creates and deletes a job, a viewer
# (`view`) reads it and may not create, change or delete one. Users are
# impersonated (kubectl --as) with the testbed's admin credentials.
. "$(dirname "$0")/lib_operator.sh"
setup
editor="ringmaster-e2e-editor-$RANDOM" viewer="ringmaster-e2e-viewer-$RANDOM"
k -n "$NS" create rolebinding editor --clusterrole=edit --user="$editor" >/dev/null || fail "cannot bind edit"
k -n "$NS" create rolebinding viewer --clusterrole=view --user="$viewer" >/dev/null || fail "cannot bind view"
# The controller-manager aggregates the rules into edit/view asynchronously.
wait_for 60 "edit to include distributedjobs" \
  bash -c "[ \"\$(kubectl auth can-i create distributedjobs.ringmaster.io -n $NS --as $editor)\" = yes ]"
wait_for 60 "view to include distributedjobs" \
  bash -c "[ \"\$(kubectl auth can-i list distributedjobs.ringmaster.io -n $NS --as $viewer)\" = yes ]"

job_yaml edited 1 Never 0 '{}' | k -n "$NS" --as "$editor" create -f - >/dev/null ||
  fail "the namespace editor cannot create a DistributedJob"
pass "a namespace editor creates a job"

expect_eq "the viewer reads the job" "$(k -n "$NS" --as "$viewer" get djob edited -o 'jsonpath={.metadata.name}')" edited
out=$(job_yaml viewed 1 Never 0 '{}' | k -n "$NS" --as "$viewer" create -f - 2>&1) &&
  fail "the viewer created a job: $out"
grep -q "Forbidden\|forbidden" <<<"$out" || fail "the viewer's create failed without Forbidden: $out"
expect_eq "viewer may delete" "$(kubectl auth can-i delete distributedjobs.ringmaster.io -n "$NS" --as "$viewer")" no
expect_eq "viewer may patch" "$(kubectl auth can-i patch distributedjobs.ringmaster.io -n "$NS" --as "$viewer")" no
expect_eq "editor may edit elsewhere" \
  "$(kubectl auth can-i create distributedjobs.ringmaster.io -n default --as "$editor")" no
pass "a viewer reads jobs and may not create, change or delete them; the editor's rights stop at the namespace"

k -n "$NS" --as "$editor" delete djob edited --wait=false >/dev/null || fail "the editor cannot delete its job"
pass "the namespace editor deletes a job"
