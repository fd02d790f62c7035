#!/usr/bin/env bash
# examples/keras/ in real pods (the image from examples/keras/Dockerfile):
# Keras 3 model.fit with Ringmaster's all-reduce on a chief and two workers;
# every rank ends with identical weights.
. "$(dirname "$0")/lib_real.sh"
use_namespace rm-real-keras
job=keras-digits
# cleanPodPolicy None, so that every rank's log is still there to compare.
sed 's/cleanPodPolicy: Running/cleanPodPolicy: None/' "$REPO_ROOT/examples/keras/job.yaml" >"/tmp/$E2E_NAME.yaml"
grep -q 'cleanPodPolicy: None' "/tmp/$E2E_NAME.yaml" || fail "could not set cleanPodPolicy None"
apply_job "/tmp/$E2E_NAME.yaml"
wait_job_state 480 "$job" Succeeded
expect_on_real_node "$job"
digests=""
for who in "chief 0" "worker 0" "worker 1"; do
  set -- $who
  pod=$(job_pod "$job" "$1" "$2")
  d=$(k -n "$NS" logs "$pod" | sed -n 's/.*weights sha256 \([0-9a-f]*\).*/\1/p' | tail -1)
  [ -n "$d" ] || fail "$pod printed no weights digest: $(k -n "$NS" logs "$pod" | tail -5)"
  digests+="$d"$'\n'
done
[ "$(sort -u <<<"${digests%$'\n'}" | wc -l)" = 1 ] || fail "the ranks ended with different weights: $digests"
pass "Keras trained in 3 real pods; identical weights on every rank ($(head -c 16 <<<"$digests")...)"
