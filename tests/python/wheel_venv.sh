#!/usr/bin/env bash
# ctest fixture python_wheel: builds the wheel (scripts/python-wheel) and
# installs it into a clean venv at $1 with numpy, pytest and ml_dtypes
# (NumPy's bfloat16), so the tests import the installed package, never the
# source tree. Writes the wheel's path to $1.wheel.
set -euo pipefail
venv=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
python=${PYTHON:-python3}
wheel=$(PYTHON="$python" "$root/scripts/python-wheel" | tail -n 1)
[ -f "$wheel" ] || { echo "wheel_venv: no wheel at '$wheel'" >&2; exit 1; }
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet numpy pytest ml_dtypes
"$venv/bin/python" -m pip install --quiet "$wheel"  # with its dependencies (nanobind-backend)
echo "$wheel" > "$venv.wheel"
echo "wheel_venv: $wheel in $venv"
