#!/usr/bin/env bash
# The Helm chart, without a cluster (ctest label chart):
#  1. helm lint --strict is clean;
#  2. values.schema.json refuses wrong values (helm template and helm lint
#     fail, naming the value) and accepts the ones the docs and the e2e
#     tests pass;
#  3. the PodDisruptionBudget is rendered only with replicaCount > 1 and
#     podDisruptionBudget.enabled;
#  4. the chart's defaults render the objects of manifests/, field by field
#     (compare.py: Helm's labels ignored, the differences on purpose listed
#     there with their reasons), and manifests/Kustomization builds them all.
# helm and kubectl are the testbed's pinned ones (scripts/testbed build,
# which scripts/test runs before ctest); RINGMASTER_HELM / RINGMASTER_KUBECTL
# name others. Nothing here talks to a cluster.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CHART="$REPO_ROOT/charts/ringmaster"
NAME=chart_render
FAILED=0

fail() { printf 'FAIL %s: %s\n' "$NAME" "$*"; FAILED=1; }
pass() { printf 'ok   %s: %s\n' "$NAME" "$*"; }
die() { printf 'FAIL %s: %s\n' "$NAME" "$*" >&2; exit 1; }

# testbed_bin VAR COMPONENT FILE: VAR = the testbed's binary FILE of COMPONENT
# (unless VAR is set already); fails naming what to build.
testbed_bin() {
  local dir
  [ -n "${!1:-}" ] && return 0
  dir=$("$REPO_ROOT/scripts/testbed" bin-dir "$2" 2>&1) ||
    die "no $3: $dir (or set $1 to a $3 binary)"
  printf -v "$1" '%s' "$dir/$3"
}
testbed_bin RINGMASTER_HELM helm helm
testbed_bin RINGMASTER_KUBECTL kubernetes kubectl
HELM=$RINGMASTER_HELM
KUBECTL=$RINGMASTER_KUBECTL
[ -x "$HELM" ] || die "helm is not executable: $HELM"
[ -x "$KUBECTL" ] || die "kubectl is not executable: $KUBECTL"
# PyYAML: the python3 on PATH, else Debian's (python3-yaml).
PYTHON=""
for py in python3 /usr/bin/python3; do
  if "$py" -c 'import yaml' 2>/dev/null; then PYTHON=$py; break; fi
done
[ -n "$PYTHON" ] || die "no python3 with PyYAML (apt-get install python3-yaml)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ringmaster-chart.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# The Kubernetes version the chart is rendered for: the testbed's (kubectl is
# built with the control plane). Given explicitly because a helm built
# without Helm's release ldflags assumes v1.20, below the chart's kubeVersion.
KUBE_VERSION=$("$KUBECTL" version --client -o json | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["clientVersion"]["gitVersion"])') ||
  die "cannot read the version of $KUBECTL"

render() {  # RELEASE [helm template args...]: the chart's YAML on stdout
  local release=$1; shift
  "$HELM" template "$release" "$CHART" --kube-version "$KUBE_VERSION" "$@"
}

# 1. lint
if "$HELM" lint --strict "$CHART" >"$WORK/lint.log" 2>&1 && grep -q "0 chart(s) failed" "$WORK/lint.log"; then
  pass "helm lint --strict"
else
  cat "$WORK/lint.log"; fail "helm lint --strict"
fi

# 2. The schema refuses these, naming the value (EXPECTED must be in helm's message).
refused() {  # EXPECTED WHAT --set...
  local expected=$1 what=$2; shift 2
  if render rm "$@" >/dev/null 2>"$WORK/err.log"; then
    fail "helm template accepted $what ($*)"
  elif ! grep -qF -- "$expected" "$WORK/err.log"; then
    fail "helm template refused $what ($*) without naming '$expected': $(cat "$WORK/err.log")"
  else
    pass "refused: $what: $(grep -F -- "$expected" "$WORK/err.log" | head -1 | sed 's/^ *//')"
  fi
}
refused "'/replicaCount'" "a string for replicaCount" --set replicaCount=two
refused "'replicaCountt'" "an unknown top-level key" --set replicaCountt=3
refused "'/resources/limits/cpu'" "a boolean for a CPU limit" --set resources.limits.cpu=true
refused "'/resources/requests'" "a string for resources.requests" --set resources.requests=lots
refused "'/resources/limits/memory'" "a malformed quantity" --set resources.limits.memory=256MB
refused "'readOnlyRootFileSystem'" "a typo in securityContext" --set securityContext.readOnlyRootFileSystem=true
refused "'/logLevel'" "a log level the operator does not know" --set logLevel=verbose
refused "'/workers'" "more workers than the operator takes" --set workers=1000
refused "'/image/tag'" "a numeric image tag" --set image.tag=1
refused "'/extraEnv/0'" "an env var without a name" --set 'extraEnv[0].value=x'
refused "'/podAnnotations/a'" "a non-string annotation" --set podAnnotations.a=1
# helm lint applies the same schema.
if "$HELM" lint "$CHART" --set replicaCount=two >"$WORK/lint-bad.log" 2>&1; then
  fail "helm lint accepted replicaCount=two"
elif ! grep -qF "'/replicaCount'" "$WORK/lint-bad.log"; then
  fail "helm lint refused replicaCount=two without naming it: $(cat "$WORK/lint-bad.log")"
else
  pass "refused by helm lint: replicaCount=two"
fi

# ...and accepts what docs/operator.md and the e2e tests pass (helm.sh, install.sh).
accepted() {  # WHAT --set...
  local what=$1; shift
  if render rm "$@" >"$WORK/ok.yaml" 2>"$WORK/err.log"; then
    pass "accepted: $what"
  else
    fail "helm template refused $what ($*): $(cat "$WORK/err.log")"
  fi
}
accepted "the e2e tests' values" --set replicaCount=1 --set image.pullPolicy=Never \
  --set 'watchNamespaces={rm-a,rm-b}' --set 'nodeSelector.ringmaster\.io/node=real' \
  --set 'tolerations[0].key=ringmaster.io/real-node' --set 'tolerations[0].operator=Exists' \
  --set 'tolerations[0].effect=NoSchedule' --set metrics.serviceMonitor.enabled=false --set networkPolicy.enabled=true
accepted "a pinned UID, a removed default, extra args and env" \
  --set podSecurityContext.runAsUser=65532 --set podSecurityContext.runAsGroup=65532 \
  --set podSecurityContext.seccompProfile=null --set 'extraArgs={--resync-seconds=120}' \
  --set 'extraEnv[0].name=RINGMASTER_QPS' --set-string 'extraEnv[0].value=200' \
  --set priorityClassName=system-cluster-critical --set podLabels.team=ml \
  --set-string 'podAnnotations.prometheus\.io/port=9090' --set resources.limits.cpu=2 \
  --set podDisruptionBudget.maxUnavailable=50% --set fullnameOverride=rm-op
grep -q -- '- "--resync-seconds=120"' "$WORK/ok.yaml" || fail "extraArgs are not appended to the operator's args"
grep -q 'name: RINGMASTER_QPS' "$WORK/ok.yaml" || fail "extraEnv is not in the operator's env"
grep -q 'runAsUser: 65532' "$WORK/ok.yaml" || fail "podSecurityContext.runAsUser=65532 is not rendered"
grep -q 'seccompProfile' "$WORK/ok.yaml" && fail "podSecurityContext.seccompProfile=null did not remove the default"
grep -q 'prometheus.io/port: "9090"' "$WORK/ok.yaml" || fail "podAnnotations do not win over the chart's prometheus.io/port"
grep -q 'name: rm-op$' "$WORK/ok.yaml" || fail "fullnameOverride is not the objects' name"

# tfjob.enabled: the flag and the rules for TFJobs, only then.
render rm --set tfjob.enabled=true >"$WORK/tfjob.yaml" || fail "helm template --set tfjob.enabled=true failed"
grep -q -- '- --tfjob=true' "$WORK/tfjob.yaml" || fail "tfjob.enabled=true does not pass --tfjob=true"
grep -q 'resources: \["tfjobs/status"\]' "$WORK/tfjob.yaml" || fail "tfjob.enabled=true grants no tfjobs/status rule"
if render rm | grep -q -e '--tfjob' -e 'tfjobs'; then
  fail "the defaults pass --tfjob or grant tfjobs rules"
else
  pass "tfjob.enabled: --tfjob and the tfjobs rules, only then"
fi

# 3. The PodDisruptionBudget.
pdbs() { render rm "$@" | grep -c '^kind: PodDisruptionBudget$' || true; }
[ "$(pdbs)" = 1 ] || fail "no PodDisruptionBudget with the defaults (replicaCount 2)"
[ "$(pdbs --set replicaCount=1)" = 0 ] || fail "a PodDisruptionBudget with replicaCount=1 (it would block node drains)"
[ "$(pdbs --set podDisruptionBudget.enabled=false)" = 0 ] || fail "a PodDisruptionBudget with podDisruptionBudget.enabled=false"
pass "PodDisruptionBudget: with replicaCount > 1 and podDisruptionBudget.enabled only"

# 4. The chart's defaults against manifests/. The release name and namespace
# that make the names equal: fullname = the release name (it contains the
# chart's name) = ringmaster-operator, in ringmaster-system.
render ringmaster-operator -n ringmaster-system --include-crds >"$WORK/chart.yaml" || die "helm template of the defaults failed"
render ringmaster-operator -n ringmaster-system --include-crds --set networkPolicy.enabled=true >"$WORK/chart-np.yaml" ||
  die "helm template --set networkPolicy.enabled=true failed"
"$KUBECTL" kustomize "$REPO_ROOT/manifests" >"$WORK/kustomized.yaml" 2>"$WORK/err.log" ||
  { fail "kubectl kustomize manifests/: $(cat "$WORK/err.log")"; : >"$WORK/kustomized.yaml"; }
if "$PYTHON" "$REPO_ROOT/tests/chart/compare.py" "$WORK/chart.yaml" "$WORK/chart-np.yaml" "$WORK/kustomized.yaml" \
    "$REPO_ROOT/manifests"; then
  pass "helm template ringmaster-operator -n ringmaster-system renders manifests/"
else
  fail "the chart's defaults and manifests/ differ (above)"
fi

[ "$FAILED" = 0 ] || { printf 'FAIL %s: see the FAIL lines above\n' "$NAME"; exit 1; }
pass "all"
