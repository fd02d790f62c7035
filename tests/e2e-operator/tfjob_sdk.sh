#!/usr/bin/env bash
# Kubeflow's Python SDK, kubeflow-training 1.9.4 from PyPI, unchanged,
# against the operator with --tfjob: tfjob_sdk.py says what it drives. The
# SDK's venv is made once (pinned) under ~/.cache/ringmaster (lib.sh).
. "$(dirname "$0")/lib_operator.sh"
setup
use_tfjob_crd

kubeflow_sdk_venv
start_operator op --leader-elect=false --tfjob
NS="$NS" TESTBED="$TESTBED" "$KUBEFLOW_SDK_PYTHON" "$(dirname "$0")/tfjob_sdk.py" || fail "the SDK's test (above)"
