#!/usr/bin/env bash
# The garbage collector deletes a child whose owner is deleted (background
# and foreground propagation), and leaves an orphaned child alone.
. "$(dirname "$0")/lib.sh"
new_namespace

# make_child OWNER CHILD: a ConfigMap CHILD owned by ConfigMap OWNER.
make_child() {
  local uid
  uid=$(k -n "$NS" get configmap "$1" -o jsonpath='{.metadata.uid}')
  [ -n "$uid" ] || fail "no uid for configmap $1"
  k -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: $2
  ownerReferences:
  - apiVersion: v1
    kind: ConfigMap
    name: $1
    uid: $uid
    blockOwnerDeletion: true
data: {role: child}
EOF
}
gone() { ! k -n "$NS" get configmap "$1" >/dev/null 2>&1; }

for policy in background foreground orphan; do
  k -n "$NS" create configmap "owner-$policy" --from-literal=role=owner >/dev/null
  make_child "owner-$policy" "child-$policy"
  k -n "$NS" delete configmap "owner-$policy" --cascade="$policy" --wait=false >/dev/null ||
    fail "delete of owner-$policy failed"
done

wait_for 60 "child-background to be garbage-collected" gone child-background
pass "background: the child was garbage-collected after its owner was deleted"
wait_for 60 "child-foreground to be garbage-collected" gone child-foreground
wait_for 60 "owner-foreground to be deleted after its child" gone owner-foreground
pass "foreground: the child, then its owner, were deleted"

wait_for 30 "owner-orphan to be deleted" gone owner-orphan
sleep 2
k -n "$NS" get configmap child-orphan >/dev/null 2>&1 || fail "the orphaned child was deleted"
refs=$(k -n "$NS" get configmap child-orphan -o jsonpath='{.metadata.ownerReferences}')
[ -z "$refs" ] || fail "the orphaned child still has ownerReferences: $refs"
pass "orphan: the child stays, without its ownerReference"
