#!/usr/bin/env bash
# The wheel in a user's own image, stood in for by a minimal Debian root
# (scripts/roots): python3, venv and pip only, no compiler, no -dev
# package, and a venv with what `pip install tensorflow-cpu==2.21.0` gives.
# There, as a user would:
#   pip install WHEEL
#   ringmaster run examples/keras/job.yaml   3 members, Horovod's API (ringmaster.tensorflow.keras)
#   ringmaster run examples/mwms/job.yaml    3 members, ringmaster.tensorflow.MultiWorkerMirroredStrategy
#   ringmaster run examples/quickstart.yaml  3 members of the wheel's own ringmaster-worker
# The first two must succeed with the same weights on every rank (the third
# with every member's steps verified), and every Python member's
# /proc/self/maps must show only the root's libraries and the venv's
# (check_maps.py).
#
#   root_jobs.sh SUITE WHEEL_PATH_FILE     (the file python_wheel writes: the wheel's path)
set -euo pipefail
suite=$1
wheel=$(cat "$2")
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
[ -f "$wheel" ] || { echo "root_jobs: no wheel at '$wheel'" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ringmaster-root-jobs.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/examples" "$work/out"
cp -r "$repo/examples/keras" "$repo/examples/mwms" "$repo/examples/quickstart.yaml" "$work/examples/"
cp "$wheel" "$here/with_maps.py" "$work/"
printf '#!/bin/sh\nexec /opt/venv/bin/python /work/with_maps.py "$@"\n' >"$work/python-with-maps"
chmod +x "$work/python-with-maps"

echo "== $suite: pip install $(basename "$wheel"), then the three jobs (3 members each)"
rc=0
"$repo/scripts/roots" run "$suite" "$work" -- '
  set -e
  for tool in gcc g++ cc c++; do
    if command -v $tool >/dev/null; then echo "root_jobs: the root has a compiler ($tool)"; exit 3; fi
  done
  pip install --quiet /work/'"$(basename "$wheel")"'
  python -c "import ringmaster, sys; print(\"root_jobs: ringmaster\", ringmaster.__version__, \"on Python\", sys.version.split()[0])"
  export RINGMASTER_PYTHON=/work/python-with-maps MAPS_DIR=/work/out
  set +e
  ringmaster run examples/keras/job.yaml >/work/out/keras.log 2>&1; echo $? >/work/out/keras.rc
  ringmaster run examples/mwms/job.yaml >/work/out/mwms.log 2>&1; echo $? >/work/out/mwms.rc
  ringmaster run examples/quickstart.yaml >/work/out/quickstart.log 2>&1; echo $? >/work/out/quickstart.rc
' || rc=$?
[ "$rc" = 0 ] || { echo "root_jobs: the commands in the $suite root failed (exit $rc)" >&2; exit 1; }

status=0
for job in keras mwms; do
  job_rc=$(cat "$work/out/$job.rc")
  digests=$(grep -oE 'rank [0-9]+: weights sha256 [0-9a-f]+' "$work/out/$job.log" | sort -u || true)
  ranks=$(grep -c . <<<"$digests" || true)
  distinct=$(awk '{print $5}' <<<"$digests" | sort -u | grep -c . || true)
  echo "$job: exit $job_rc, $ranks ranks printed their weights' digest, $distinct distinct"
  if [ "$job_rc" != 0 ] || [ "$ranks" != 3 ] || [ "$distinct" != 1 ]; then
    echo "root_jobs: $job did not succeed with identical weights on 3 ranks; its output:" >&2
    tail -n 60 "$work/out/$job.log" >&2
    status=1
  fi
done
verified=$(grep -cE '^\[(chief|worker)-[0-9]+\] ringmaster-worker .*: 3 steps verified$' "$work/out/quickstart.log" || true)
echo "quickstart: exit $(cat "$work/out/quickstart.rc"), $verified members verified their steps"
if [ "$(cat "$work/out/quickstart.rc")" != 0 ] || [ "$verified" != 3 ]; then
  echo "root_jobs: quickstart did not succeed with 3 verified members; its output:" >&2
  tail -n 40 "$work/out/quickstart.log" >&2
  status=1
fi
python3 "$here/check_maps.py" "$work/out" 6 || status=1
exit "$status"
