# shellcheck shell=bash disable=SC2034  # (TESTBED, REPO_ROOT: for the tests)
# Helpers for the end-to-end tests (sourced, bash). Every wait is bounded;
# every failed expectation exits non-zero with a message naming what failed.
#
# A test runs under `scripts/testbed exec`, so KUBECONFIG and PATH (the
# pinned kubectl) are set. Each test works in a namespace of its own, which
# it deletes when it exits.

set -euo pipefail

E2E_NAME=$(basename "$0" .sh)
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TESTBED="$REPO_ROOT/scripts/testbed"

: "${KUBECONFIG:?KUBECONFIG is not set: run under 'scripts/testbed exec' or eval \"\$(scripts/testbed env)\"}"

fail() { printf 'FAIL %s: %s\n' "$E2E_NAME" "$*" >&2; exit 1; }
pass() { printf 'ok   %s: %s\n' "$E2E_NAME" "$*"; }
note() { printf '     %s: %s\n' "$E2E_NAME" "$*"; }

# k ARGS...: kubectl against the testbed, every request bounded.
k() { kubectl --request-timeout=30s "$@"; }

expect_eq() {  # WHAT ACTUAL EXPECTED
  [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}

# wait_for SECONDS WHAT COMMAND...: poll until COMMAND succeeds.
wait_for() {
  local secs=$1 what=$2; shift 2
  local end=$(( SECONDS + secs ))
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$end" ] || fail "timed out after ${secs}s waiting for $what"
    sleep 0.25
  done
}

# use_tfjob_crd: the chart's TFJob CRD, unless one (training-operator's) is
# there, as Helm's crds/ does; then until it is Established.
use_tfjob_crd() {
  if ! k get crd tfjobs.kubeflow.org >/dev/null 2>&1; then
    k create -f "$REPO_ROOT/charts/ringmaster/crds/tfjobs.kubeflow.org.yaml" >/dev/null || fail "create the TFJob CRD"
  fi
  wait_for 60 "the TFJob CRD to be established" \
    k wait --for=condition=Established --timeout=5s crd/tfjobs.kubeflow.org
}

# kubeflow_sdk_venv: sets KUBEFLOW_SDK_PYTHON to the python of a venv with
# Kubeflow's SDK from PyPI (pinned), made once under ~/.cache/ringmaster
# (RINGMASTER_KUBEFLOW_SDK_VENV elsewhere); a lock keeps two tests from
# making it at once.
kubeflow_sdk_venv() {
  local pins="kubeflow-training==1.9.4 kubernetes==35.0.0"
  local venv=${RINGMASTER_KUBEFLOW_SDK_VENV:-$HOME/.cache/ringmaster/venv-kubeflow-sdk}
  mkdir -p "$(dirname "$venv")"
  (
    flock 9
    if [ "$(cat "$venv/.ringmaster-pins" 2>/dev/null)" != "$pins" ]; then
      rm -rf "$venv"
      python3 -m venv "$venv" || exit 1
      # shellcheck disable=SC2086  # the pins are words
      "$venv/bin/python" -m pip install --quiet $pins >"$venv.log" 2>&1 || { cat "$venv.log" >&2; exit 1; }
      echo "$pins" >"$venv/.ringmaster-pins"
    fi
  ) 9>"$venv.lock" || fail "the Kubeflow SDK's venv ($pins) in $venv"
  KUBEFLOW_SDK_PYTHON=$venv/bin/python
}

# wait_jsonpath SECONDS RESOURCE JSONPATH WANT [kubectl args...]
wait_jsonpath() {
  local secs=$1 res=$2 jp=$3 want=$4; shift 4
  local end=$(( SECONDS + secs )) got=""
  while :; do
    got=$(k get "$res" "$@" -o "jsonpath=$jp" 2>/dev/null) || true
    [ "$got" = "$want" ] && return 0
    [ "$SECONDS" -lt "$end" ] || fail "timed out after ${secs}s: $res $jp is '$got', want '$want'"
    sleep 0.25
  done
}

# on_exit COMMAND: run COMMAND (a string) when the test exits, keeping the
# test's exit status. _e2e_exit [RC]: RC (default $?) is the test's status;
# a trap of its own passes it rather than re-raising it with `(exit RC)`,
# which under set -e ends the shell there, before any cleanup ran.
E2E_ON_EXIT=()
on_exit() { E2E_ON_EXIT+=("$1"); }
_e2e_exit() {
  local rc=${1:-$?} c
  set +e
  for c in "${E2E_ON_EXIT[@]}"; do eval "$c" >/dev/null 2>&1 || true; done
  exit "$rc"
}
trap _e2e_exit EXIT

# new_namespace: create this test's namespace (deleted on exit) and wait for
# its default service account, which pods need. Sets NS.
new_namespace() {
  NS="e2e-${E2E_NAME//_/-}-$$"
  k create namespace "$NS" >/dev/null || fail "cannot create namespace $NS"
  on_exit 'kubectl --request-timeout=10s delete namespace "$NS" --wait=false'
  wait_for 60 "the default service account in $NS" k -n "$NS" get serviceaccount default
}

# priority_classes LOW HIGH: two PriorityClasses (values 100 and 1000) that
# Kueue orders and preempts by, deleted when the test exits. Cluster-scoped:
# give names no other test uses.
priority_classes() {
  k apply -f - >/dev/null <<EOF || fail "creating the PriorityClasses $1 and $2 failed"
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: $1}
value: 100
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: $2}
value: 1000
EOF
  on_exit "kubectl --request-timeout=10s delete priorityclass $1 $2 --ignore-not-found"
}
