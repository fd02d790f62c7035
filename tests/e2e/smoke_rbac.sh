#!/usr/bin/env bash
# RBAC is on: a service account (authenticated by a real token from the
# TokenRequest API) without rights is denied with 403; after a RoleBinding it
# is allowed exactly what the Role grants.
. "$(dirname "$0")/lib.sh"
new_namespace

k -n "$NS" create serviceaccount nobody >/dev/null
token=$(k -n "$NS" create token nobody --duration=10m) || fail "TokenRequest for $NS/nobody failed"
[ -n "$token" ] || fail "empty token for $NS/nobody"

server=$(kubectl config view --minify --raw -o jsonpath='{.clusters[0].cluster.server}')
ca=$(mktemp); on_exit 'rm -f "$ca"'
kubectl config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$ca"

# as_sa ARGS...: kubectl as the service account, with nothing but its token.
as_sa() {
  kubectl --kubeconfig=/dev/null --server="$server" --certificate-authority="$ca" \
    --token="$token" --request-timeout=30s -v=6 "$@"
}
status_of() { grep -oE '(status="|\] [A-Z]+ https://[^ ]+ )[0-9]{3}' <<<"$1" | grep -oE '[0-9]{3}$' | tail -1; }

who=$(kubectl --kubeconfig=/dev/null --server="$server" --certificate-authority="$ca" \
        --token="$token" --request-timeout=30s auth whoami -o jsonpath='{.status.userInfo.username}') ||
  fail "the API server did not authenticate the token"
expect_eq "the token's user" "$who" "system:serviceaccount:$NS:nobody"
pass "the token authenticates as $who"

out=$(as_sa -n "$NS" get configmaps 2>&1) && fail "a service account without rights could list configmaps"
expect_eq "HTTP status of the denied list" "$(status_of "$out")" 403
grep -q 'Forbidden\|forbidden' <<<"$out" || fail "the denial does not say forbidden: $out"
pass "without rights: list configmaps is denied with 403 Forbidden"

k -n "$NS" create role cm-reader --verb=get,list --resource=configmaps >/dev/null
k -n "$NS" create rolebinding nobody-reads --role=cm-reader --serviceaccount="$NS:nobody" >/dev/null
wait_for 30 "the RoleBinding to take effect" as_sa -n "$NS" get configmaps
out=$(as_sa -n "$NS" create configmap x --from-literal=a=b 2>&1) && fail "a read-only service account could create"
expect_eq "HTTP status of the denied create" "$(status_of "$out")" 403
out=$(as_sa -n default get configmaps 2>&1) && fail "a namespaced Role granted rights in another namespace"
expect_eq "HTTP status of the denied list in another namespace" "$(status_of "$out")" 403
pass "with a Role: get/list allowed; create, and other namespaces, still 403"
