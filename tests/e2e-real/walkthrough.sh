#!/usr/bin/env bash
# docs/operator.md's "From zero to a job", run as it is written: the shell
# block after its `<!-- walkthrough: ... -->` marker, line by line, from the
# repository's root, on the testbed's real node as the cluster. Step 1 of
# the page (a kind or minikube cluster, docker build and load) is what the
# real_images fixture does here with the same Dockerfiles (scripts/images
# build and load); this test checks the page names the same images.
#
# For the page's commands to run unchanged, the testbed looks like a
# one-node cluster while it runs: the kwok nodes are cordoned and the real
# node's taint is lifted (both restored on exit), and the operator of
# manifests/ starts from zero (no earlier install of it, no helm release:
# it runs after e2e_real_uninstall).
. "$(dirname "$0")/lib_real.sh"
DOC="$REPO_ROOT/docs/operator.md"
block=$(awk '/^<!-- walkthrough:/ { marked = 1; next }
             marked && /^```sh$/ { inside = 1; next }
             inside && /^```$/ { exit }
             inside { print }' "$DOC")
[ -n "$block" ] || fail "no walkthrough block after a '<!-- walkthrough:' marker in docs/operator.md"
# The page's steps are all there (so the test cannot pass on a shortened page).
for want in "kubectl apply -f manifests/" "kubectl apply -f examples/quickstart.yaml" "kubectl wait djob/quickstart" \
  "kubectl delete -f manifests/"; do
  grep -qF -- "$want" <<<"$block" || fail "the walkthrough block lost '$want'"
done
# Step 1 loads the images the fixture loaded, by the names the manifests use.
for img in ghcr.io/ringmaster/operator:0.1.0 ghcr.io/ringmaster/worker:0.1.0; do
  grep -q "kind load docker-image.*$img" "$DOC" || fail "docs/operator.md's step 1 does not load $img"
  grep -rqF "$img" "$REPO_ROOT/manifests/" "$REPO_ROOT/examples/quickstart.yaml" ||
    fail "$img is named by neither manifests/ nor examples/quickstart.yaml"
done

# From zero: no manifests/ install left by an earlier test (its namespace,
# its CRD and cluster roles), and the helm release's namespace fully gone.
k delete -f "$REPO_ROOT/manifests/" --ignore-not-found --wait=true --timeout=180s >/dev/null 2>&1 || true
wait_for 180 "namespace ringmaster-system to be gone" bash -c "! kubectl get namespace ringmaster-system >/dev/null 2>&1"

# A one-node cluster: only the real node schedules, without a toleration.
kwok_nodes=$(k get nodes -l type=kwok -o name)
restore() {
  # shellcheck disable=SC2086
  [ -z "$kwok_nodes" ] || kubectl uncordon $kwok_nodes >/dev/null 2>&1 || true
  kubectl taint node "$REAL_NODE" "ringmaster.io/real-node=${taint:-true}:NoSchedule" --overwrite >/dev/null 2>&1 || true
  # What the page's last line removed, for the tests that follow.
  kubectl apply -f "$REPO_ROOT/manifests/00-crd.yaml" >/dev/null 2>&1 || true
}
trap '_E2E_RC=$?; set +e; restore; [ $_E2E_RC = 0 ] || dump_on_failure; _e2e_exit $_E2E_RC' EXIT
taint=$(k get node "$REAL_NODE" -o 'jsonpath={.spec.taints[?(@.key=="ringmaster.io/real-node")].value}')
# shellcheck disable=SC2086
[ -z "$kwok_nodes" ] || k cordon $kwok_nodes >/dev/null || fail "cannot cordon the kwok nodes"
k taint node "$REAL_NODE" ringmaster.io/real-node- >/dev/null 2>&1 || true
note "kwok nodes cordoned, $REAL_NODE untainted (its taint's value was '$taint')"

NS=default  # where the page's job runs: dump_on_failure shows it
out="/tmp/$E2E_NAME.out"
: >"$out"
cd "$REPO_ROOT"
while IFS= read -r line; do
  [ -n "$line" ] || continue
  note "\$ $line"
  # Each line as the reader types it: a shell, from the repository's root.
  bash -c "$line" >>"$out" 2>&1 || { tail -30 "$out" >&2; fail "the walkthrough's line failed: $line"; }
  # The pods ran on the real node, not on a cordoned fake one.
  if [ "$line" = "kubectl get djob quickstart" ]; then
    expect_on_real_node quickstart
    grep -q "Succeeded" "$out" || fail "kubectl get djob quickstart does not show Succeeded: $(tail -3 "$out")"
  fi
done <<<"$block"
grep -q "3 steps verified" "$out" ||
  fail "the chief's log (kubectl logs quickstart-chief-0) does not end with its 3 verified steps: $(tail -5 "$out")"
k get crd distributedjobs.ringmaster.io >/dev/null 2>&1 && fail "the page's last line left the CRD installed"
pass "docs/operator.md's walkthrough ran as written: operator installed from manifests/, quickstart Succeeded on $REAL_NODE, uninstalled"
