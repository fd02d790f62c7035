#!/usr/bin/env bash
# examples/quickstart.yaml -> the headless Service and three pods whose
# TF_CONFIG is byte-for-byte `ringmaster tfconfig`'s -> pods Running -> job
# Running (kubectl get djob shows State/Workers/Age) -> the chief exits 0 ->
# Succeeded, running workers deleted (cleanPodPolicy Running), events in
# `kubectl describe`, /metrics and /healthz served.
. "$(dirname "$0")/lib_operator.sh"
setup
start_operator op --leader-elect=false

k -n "$NS" apply -f "$REPO_ROOT/examples/quickstart.yaml" >/dev/null || fail "apply quickstart"
wait_for 60 "the headless Service" k -n "$NS" get service quickstart
expect_eq "service clusterIP" "$(k -n "$NS" get svc quickstart -o 'jsonpath={.spec.clusterIP}')" None
expect_eq "publishNotReadyAddresses" "$(k -n "$NS" get svc quickstart -o 'jsonpath={.spec.publishNotReadyAddresses}')" true
wait_pod_count 60 quickstart 3
for r in chief:0 worker:0 worker:1; do
  pod="quickstart-${r%%:*}-${r##*:}"
  want=$("$CLI" tfconfig "$REPO_ROOT/examples/quickstart.yaml" --replica "$r" --namespace "$NS") || fail "ringmaster tfconfig $r"
  got=$(k -n "$NS" get pod "$pod" -o 'jsonpath={.spec.containers[0].env[?(@.name=="TF_CONFIG")].value}')
  expect_eq "TF_CONFIG of $pod" "$got" "$want"
  expect_eq "hostname of $pod" "$(k -n "$NS" get pod "$pod" -o 'jsonpath={.spec.hostname}')" "$pod"
  expect_eq "subdomain of $pod" "$(k -n "$NS" get pod "$pod" -o 'jsonpath={.spec.subdomain}')" quickstart
  expect_eq "owner of $pod" "$(k -n "$NS" get pod "$pod" -o 'jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].controller}')" "DistributedJob/true"
  expect_eq "timeout env of $pod" \
    "$(k -n "$NS" get pod "$pod" -o 'jsonpath={.spec.containers[0].env[?(@.name=="RINGMASTER_TIMEOUT_SECONDS")].value}')" 60
  # The agent's own port beside TensorFlow's server (TF_CONFIG's 2222).
  expect_eq "agent port env of $pod" \
    "$(k -n "$NS" get pod "$pod" -o 'jsonpath={.spec.containers[0].env[?(@.name=="RINGMASTER_PORT")].value}')" 2223
  expect_eq "agent port of $pod" \
    "$(k -n "$NS" get pod "$pod" -o 'jsonpath={.spec.containers[0].ports[?(@.name=="rm-agent")].containerPort}')" 2223
done
pass "service and pods with the exact TF_CONFIG"

wait_pods_running 90 quickstart 3
wait_state 60 quickstart Running
table=$(k -n "$NS" get djob)
grep -q "STATE *WORKERS *RESTARTS *STARTED *FINISHED *AGE" <<<"$table" || fail "kubectl get djob header: $table"
grep -Eq "^quickstart +Running +2/2 " <<<"$table" || fail "kubectl get djob row (WORKERS is active/wanted): $table"
pass "pods Running -> job Running; kubectl get djob: $(tail -1 <<<"$table")"

pod_exit quickstart-chief-0 0
wait_state 60 quickstart Succeeded
wait_for 60 "the running workers to be deleted" bash -c "[ \$(kubectl -n $NS get pods -l ringmaster.io/job-name=quickstart -o name | wc -l) = 1 ]"
k -n "$NS" get pod quickstart-chief-0 >/dev/null || fail "the succeeded chief was deleted (cleanPodPolicy Running keeps it)"
desc=$(k -n "$NS" describe djob quickstart)
for reason in SuccessfulCreatePod JobSucceeded SuccessfulDeletePod; do
  grep -q "$reason" <<<"$desc" || fail "kubectl describe djob shows no $reason event"
done
[ -n "$(k -n "$NS" get djob quickstart -o 'jsonpath={.status.completionTime}')" ] || fail "no completionTime"
pass "chief exit 0 -> Succeeded, workers cleaned, events shown"

port=$(metrics_port op)
metrics=$(curl -sf --max-time 10 "http://127.0.0.1:$port/metrics") || fail "GET /metrics"
grep -q '^ringmaster_reconciles_total [1-9]' <<<"$metrics" || fail "no reconciles counted"
grep -q '^ringmaster_reconcile_duration_seconds_count' <<<"$metrics" || fail "no latency histogram"
# By Prometheus' conventions and client-go's names (dashboards for
# controller-runtime operators read them unchanged).
for line in '^workqueue_depth{name="distributedjobs"} ' '^workqueue_adds_total{name="distributedjobs"} [1-9]' \
  '^workqueue_work_duration_seconds_count{name="distributedjobs"} [1-9]' \
  '^rest_client_requests_total{code="201",host="[^"]*",method="POST"} [1-9]' \
  '^ringmaster_build_info{version="[0-9.]*"} 1$' '^process_cpu_seconds_total ' '^process_resident_memory_bytes [1-9]' \
  '^process_open_fds [1-9]' "^ringmaster_jobs_created_total{namespace=\"$NS\"} 1$" \
  "^ringmaster_jobs_succeeded_total{namespace=\"$NS\"} 1$"; do
  grep -q "$line" <<<"$metrics" || fail "/metrics has no line like $line"
done
wait_for 30 "ringmaster_jobs{condition=\"Succeeded\"} 1" \
  bash -c "curl -sf --max-time 5 http://127.0.0.1:$port/metrics | grep -qx 'ringmaster_jobs{condition=\"Succeeded\"} 1'"
probes=$(probe_port op)
[ "$probes" != "$port" ] || fail "the probes share the metrics port"
expect_eq "/healthz" "$(curl -sf --max-time 10 "http://127.0.0.1:$probes/healthz")" ok
expect_eq "/readyz" "$(curl -sf --max-time 10 "http://127.0.0.1:$probes/readyz")" ok
curl -sf --max-time 10 "http://127.0.0.1:$port/healthz" >/dev/null && fail "/healthz is served on the metrics port too"
kill_operator op TERM
expect_eq "exit code after SIGTERM" "$OP_RC" 0
pass "metrics by convention, probes on their own port, and a clean SIGTERM"
