#!/usr/bin/env bash
# examples/quickstart.yaml on real pods: the in-cluster operator creates the
# pods and the headless Service; each pod's ringmaster-worker forms the group
# through the Service's DNS names and all-reduces with verification; the
# chief exits 0, the job is Succeeded and cleanPodPolicy Running applied.
# The TF_CONFIG and RINGMASTER_* each process saw are the operator's, byte
# for byte (--print-env against the pod's spec).
. "$(dirname "$0")/lib_real.sh"
use_namespace rm-real-quickstart
job=quickstart
# The example, on the real node, and each process printing what it was given.
sed 's/args: \["--model"/args: ["--print-env", "--model"/' "$REPO_ROOT/examples/quickstart.yaml" >"/tmp/$E2E_NAME.yaml"
grep -q -- '--print-env' "/tmp/$E2E_NAME.yaml" || fail "could not add --print-env to the example"
apply_job "/tmp/$E2E_NAME.yaml"
wait_job_state 240 "$job" Succeeded
expect_on_real_node "$job"
pass "examples/quickstart.yaml: Succeeded on real pods"

# cleanPodPolicy Running deleted the workers still running when the chief
# succeeded; the chief's pod, finished, is kept, and so is any finished worker.
# The deletions follow the Succeeded status, and a worker that finished just
# as the operator saw it running is deleted too: read the pods once the
# cleanup is over (no pod Running or being deleted), not while it runs.
wait_for 60 "the job's pods to finish or go after the chief succeeded" pods_settled "$job"
[ -n "$(job_pod "$job" chief 0)" ] || fail "the chief's pod is gone (cleanPodPolicy Running keeps finished pods)"
pods=$(k -n "$NS" get pods -l "ringmaster.io/job-name=$job" --field-selector=status.phase=Succeeded -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}')
for pod in $pods; do
  log=$(k -n "$NS" logs "$pod")
  grep -q "3 steps verified" <<<"$log" || fail "$pod did not verify 3 steps: $log"
  # The environment the process saw, against the one in the pod's spec.
  saw=$(grep '^env ' <<<"$log" | sed 's/^env //')
  spec=$(k -n "$NS" get pod "$pod" -o json | python3 -c '
import json, sys
pod = json.load(sys.stdin)
env = pod["spec"]["containers"][0].get("env", [])
print("\n".join(sorted(e["name"] + "=" + e.get("value", "") for e in env
      if e["name"] == "TF_CONFIG" or e["name"].startswith("RINGMASTER_"))))')
  [ -n "$spec" ] || fail "$pod: no TF_CONFIG in its spec"
  if [ "$saw" != "$spec" ]; then
    diff <(echo "$spec") <(echo "$saw") >&2 || true
    fail "$pod: the environment it saw differs from its spec (- spec, + seen)"
  fi
done
# The members found each other by the headless Service's DNS names.
grep -q "\"$job-worker-1.$job.$NS.svc" <<<"$spec" || grep -q "$job-worker-1.$job.$NS" <<<"$spec" ||
  fail "TF_CONFIG does not name the pods by DNS: $spec"
pass "$(wc -w <<<"$pods") finished pods: each process saw exactly the operator's TF_CONFIG and RINGMASTER_* (DNS names of the headless Service)"

# cleanPodPolicy Running: nothing of the job is still running.
running=$(k -n "$NS" get pods -l "ringmaster.io/job-name=$job" --field-selector=status.phase=Running -o name)
[ -z "$running" ] || fail "cleanPodPolicy Running left running pods: $running"
pass "cleanPodPolicy Running: no pod of the job is left running"
