#!/usr/bin/env bash
# A CRD becomes Established; its schema and CEL rules are enforced; a custom
# resource is created, watched, updated through the status subresource,
# refused with 409 on a stale resourceVersion, and deleted.
. "$(dirname "$0")/lib.sh"
new_namespace

crd=widgets.e2e.ringmaster.io
k apply -f - >/dev/null <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.e2e.ringmaster.io
spec:
  group: e2e.ringmaster.io
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [replicas]
            properties:
              replicas: {type: integer, minimum: 0}
              maxReplicas: {type: integer}
            x-kubernetes-validations:
            - rule: "!has(self.maxReplicas) || self.replicas <= self.maxReplicas"
              message: "replicas must not exceed maxReplicas"
          status:
            type: object
            properties:
              phase: {type: string}
EOF
on_exit "kubectl --request-timeout=10s delete crd $crd --wait=false"
k wait --for=condition=Established --timeout=30s "crd/$crd" >/dev/null ||
  fail "CRD $crd did not become Established in 30s"
pass "CRD $crd is Established"
wait_for 30 "the Widget kind to be served" k -n "$NS" get widgets

# Schema and CEL validation happen in the API server.
out=$(k -n "$NS" apply -f - 2>&1 <<'EOF'
apiVersion: e2e.ringmaster.io/v1
kind: Widget
metadata: {name: bad}
spec: {replicas: 5, maxReplicas: 2}
EOF
) && fail "a Widget breaking the CEL rule was accepted"
grep -q "replicas must not exceed maxReplicas" <<<"$out" || fail "CEL rejection lacks its message: $out"
out=$(k -n "$NS" apply -f - 2>&1 <<'EOF'
apiVersion: e2e.ringmaster.io/v1
kind: Widget
metadata: {name: bad}
spec: {replicas: -1}
EOF
) && fail "a Widget with replicas -1 was accepted"
grep -q "should be greater than or equal to 0" <<<"$out" || fail "schema rejection unexpected: $out"
pass "schema (minimum) and CEL (x-kubernetes-validations) rules are enforced"

# Watch from before the creation; collect events into a file.
events=$(mktemp); on_exit 'rm -f "$events"'
timeout 60 kubectl -n "$NS" get widgets --watch --output-watch-events \
  -o 'custom-columns=EVENT:.type,NAME:.object.metadata.name,PHASE:.object.status.phase' \
  --no-headers >"$events" 2>&1 &
on_exit "kill $! 2>/dev/null"
sleep 1   # let the watch start before the first change

k -n "$NS" apply -f - >/dev/null <<'EOF'
apiVersion: e2e.ringmaster.io/v1
kind: Widget
metadata: {name: w1}
spec: {replicas: 1, maxReplicas: 4}
EOF
wait_for 20 "an ADDED watch event for w1" grep -qE '^ADDED +w1' "$events"
pass "created w1; the watch saw ADDED"

# The status subresource: a status patch changes status only, and a spec
# update through the main resource does not change status.
k -n "$NS" patch widget w1 --subresource=status --type=merge -p '{"status":{"phase":"Ready"}}' >/dev/null ||
  fail "status patch failed"
wait_for 20 "a MODIFIED watch event with phase Ready" grep -qE '^MODIFIED +w1 +Ready' "$events"
k -n "$NS" patch widget w1 --type=merge -p '{"spec":{"replicas":2},"status":{"phase":"Ignored"}}' >/dev/null
expect_eq "status after a main-resource patch" "$(k -n "$NS" get widget w1 -o jsonpath='{.status.phase}')" Ready
expect_eq "spec.replicas" "$(k -n "$NS" get widget w1 -o jsonpath='{.spec.replicas}')" 2
pass "status subresource: status and spec are written separately; the watch saw MODIFIED"

# Optimistic concurrency: an update carrying a stale resourceVersion is a 409.
stale=$(k -n "$NS" get widget w1 -o json)
k -n "$NS" patch widget w1 --type=merge -p '{"spec":{"replicas":3}}' >/dev/null
stale=$(sed 's/"replicas": 2/"replicas": 4/' <<<"$stale")
out=$(kubectl --request-timeout=30s -v=6 -n "$NS" replace -f - 2>&1 <<<"$stale") &&
  fail "an update with a stale resourceVersion succeeded"
# kubectl -v=6 logs each response: verb="PUT" url="..." status="409 Conflict".
grep -qE 'PUT.*https://[0-9.]+:[0-9]+/apis/e2e\.ringmaster\.io/v1/namespaces/[^/]+/widgets/w1.*409 Conflict' <<<"$out" ||
  fail "the stale update was not answered 409 Conflict: $(grep -E 'PUT|rror' <<<"$out" | tail -3)"
grep -q 'the object has been modified' <<<"$out" || fail "409 without the conflict message: $out"
expect_eq "spec.replicas after the refused update" "$(k -n "$NS" get widget w1 -o jsonpath='{.spec.replicas}')" 3
pass "an update with a stale resourceVersion is refused with 409 Conflict"

k -n "$NS" delete widget w1 --timeout=30s >/dev/null || fail "delete of w1 failed"
wait_for 20 "a DELETED watch event for w1" grep -qE '^DELETED +w1' "$events"
k -n "$NS" get widget w1 >/dev/null 2>&1 && fail "w1 still exists after delete"
pass "deleted w1; the watch saw DELETED"

