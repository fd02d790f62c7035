#!/usr/bin/env bash
# Kubeflow's Python SDK, kubeflow-training 1.9.4 from PyPI, unchanged,
# against the operator with --tfjob: tfjob_sdk.py says what it drives. The
# SDK's venv is made once (pinned) under ~/.cache/ringmaster.
. "$(dirname "$0")/lib_operator.sh"
setup
use_tfjob_crd

pins="kubeflow-training==1.9.4 kubernetes==35.0.0"
venv=${RINGMASTER_KUBEFLOW_SDK_VENV:-$HOME/.cache/ringmaster/venv-kubeflow-sdk}
if [ "$(cat "$venv/.ringmaster-pins" 2>/dev/null)" != "$pins" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv" || fail "python3 -m venv $venv"
  # shellcheck disable=SC2086  # the pins are words
  "$venv/bin/python" -m pip install --quiet $pins >"$LOGDIR/pip.log" 2>&1 || { cat "$LOGDIR/pip.log" >&2; fail "pip install $pins"; }
  echo "$pins" >"$venv/.ringmaster-pins"
fi

start_operator op --leader-elect=false --tfjob
NS="$NS" TESTBED="$TESTBED" "$venv/bin/python" "$(dirname "$0")/tfjob_sdk.py" || fail "the SDK's test (above)"
