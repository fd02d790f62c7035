#!/usr/bin/env bash
# The cleanup of install.sh: the operator made no request its RBAC refused
# during all the real-pod tests; then helm uninstall and the namespaces go.
. "$(dirname "$0")/lib_real.sh"
HELM="$("$TESTBED" bin-dir helm)/helm"
logs=$(k -n "$OPERATOR_NS" logs -l app.kubernetes.io/name=ringmaster-operator,app.kubernetes.io/instance=$RELEASE --tail=-1 2>/dev/null || true)
forbidden=$(grep -iE 'forbidden|" 403|code=403|status 403' <<<"$logs" | head -5 || true)
"$HELM" uninstall "$RELEASE" -n "$OPERATOR_NS" --wait --timeout 120s >/dev/null 2>&1 || note "helm uninstall failed"
for ns in "$OPERATOR_NS" "${REAL_NAMESPACES[@]}"; do k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true; done
[ -z "$forbidden" ] || fail "the operator was refused by RBAC: $forbidden"
pass "the operator made no request its RBAC refused; uninstalled"
