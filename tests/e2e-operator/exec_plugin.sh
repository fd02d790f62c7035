#!/usr/bin/env bash
# --kubeconfig with an exec credential plugin, as EKS, GKE and AKS issue
# them: a fake plugin (a script) prints manifests/' service-account token as
# an ExecCredential that expires 15 s later. The operator runs it at start,
# reconciles a job with its token, and runs it again once the token expires;
# the plugin sees KUBERNETES_EXEC_INFO and its env. A plugin that fails
# stops the operator at start with an error naming the plugin and quoting it.
. "$(dirname "$0")/lib_operator.sh"
setup

token=$(sa_token) || fail "cannot create a token"
echo "$token" >"$LOGDIR/token"
cat >"$LOGDIR/get-token" <<'SH'
#!/bin/sh
# Counts its runs, keeps what it was given, prints the credential.
echo "$KUBERNETES_EXEC_INFO $PLUGIN_MODE" >>"$(dirname "$0")/runs"
expiry=$(date -u -d "+15 seconds" +%Y-%m-%dT%H:%M:%SZ)
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"%s"}}\n' \
  "$(cat "$(dirname "$0")/token")" "$expiry"
SH
chmod +x "$LOGDIR/get-token"
testbed_kubeconfig "$LOGDIR/exec.kubeconfig" "{exec: {apiVersion: client.authentication.k8s.io/v1, command: ./get-token,
  args: [--cluster, testbed], env: [{name: PLUGIN_MODE, value: e2e}], provideClusterInfo: true,
  interactiveMode: Never}}"

start_operator op --leader-elect=false --kubeconfig "$LOGDIR/exec.kubeconfig"
job_yaml plugged 1 Never | k -n "$NS" apply -f - >/dev/null
wait_pods_running 90 plugged 1
wait_state 60 plugged Running
grep -q '"kind":"ExecCredential"' "$LOGDIR/runs" || fail "the plugin got no KUBERNETES_EXEC_INFO: $(cat "$LOGDIR/runs")"
grep -q '"cluster":{.*"server":"https' "$LOGDIR/runs" || fail "provideClusterInfo sent no cluster: $(cat "$LOGDIR/runs")"
grep -q ' e2e$' "$LOGDIR/runs" || fail "the plugin did not get its env PLUGIN_MODE"
pass "the operator authenticates with the exec plugin's token and reconciles a job"

first=$(wc -l <"$LOGDIR/runs")
k -n "$NS" delete djob plugged --wait=false >/dev/null
sleep 20  # past the token's expiry: the next request runs the plugin again
job_yaml replugged 1 Never | k -n "$NS" apply -f - >/dev/null
wait_pods_running 90 replugged 1
[ "$(wc -l <"$LOGDIR/runs")" -gt "$first" ] || fail "the plugin did not run again after its token expired"
grep -q "exec credential plugin: new credential" "$LOGDIR/op.log" || fail "no log line for the refreshed credential"
pass "an expired exec credential is refreshed by running the plugin again"
kill_operator op TERM

cat >"$LOGDIR/broken" <<'SH'
#!/bin/sh
echo "error: SSO session expired; run 'cloud login'" >&2
exit 3
SH
chmod +x "$LOGDIR/broken"
testbed_kubeconfig "$LOGDIR/broken.kubeconfig" "{exec: {apiVersion: client.authentication.k8s.io/v1, command: ./broken}}"
start_operator broken --leader-elect=false --kubeconfig "$LOGDIR/broken.kubeconfig"
await_operator_exit broken "with a failing exec plugin"
[ "$OP_RC" != 0 ] || fail "the operator with a failing exec plugin exited 0"
grep -qF "exec plugin '$LOGDIR/broken' of kubeconfig user 'sa' failed with exit code 3" "$LOGDIR/broken.log" ||
  fail "the error does not name the plugin: $(cat "$LOGDIR/broken.log")"
grep -qF "SSO session expired" "$LOGDIR/broken.log" || fail "the error does not quote the plugin's stderr"
pass "a failing exec plugin stops the operator at start with an error naming it"
