#!/usr/bin/env bash
# The wheel users install (scripts/python-wheel) against the manylinux
# policy: auditwheel show's verdict must be manylinux_2_34 or an older
# policy (glibc 2.34: RHEL 9, Ubuntu 22.04, Debian 12 and later), which
# needs both its symbol versions within the policy and no library from
# outside itself and the policy's list (the prebuilt ops name none of
# TensorFlow's), and its file name must carry that tag.
#   wheel_policy.sh WHEEL_PATH_FILE
set -euo pipefail
wheel=$(cat "$1")
tools=${RINGMASTER_CACHE:-$HOME/.cache/ringmaster}/venv-wheel-tools
out=$(PATH="$tools/bin:$PATH" "$tools/bin/auditwheel" show "$wheel" 2>&1)
echo "$out"
status=0
# The verdict: "... is consistent with the following platform tag: "TAG"."
tag=$(tr '\n' ' ' <<<"$out" | grep -oE 'consistent with the following platform tag: +"[0-9a-z_]+"' \
  | grep -oE '"[^"]+"' | tr -d '"' | head -n 1 || true)
minor=${tag#manylinux_2_}
minor=${minor%_x86_64}
if [[ ! "$tag" =~ ^manylinux_2_[0-9]+_x86_64$ ]] || [ "$minor" -gt 34 ]; then
  echo "wheel_policy: auditwheel puts $(basename "$wheel") at '${tag:-no manylinux policy}', above manylinux_2_34" >&2
  status=1
fi
name_tag=$(basename "$wheel" | grep -oE 'manylinux_2_[0-9]+_x86_64' | head -n 1)
name_minor=$(grep -oE '_2_[0-9]+' <<<"$name_tag" | cut -d_ -f3)
if [ -z "$name_tag" ] || [ "$name_minor" -gt 34 ]; then
  echo "wheel_policy: the wheel's name carries '${name_tag:-no manylinux tag}', not manylinux_2_34 or older" >&2
  status=1
fi
# "The following external shared libraries are required by the wheel:" and
# its list, one per line, until a blank line.
external=$(awk '/external shared libraries are required/{on=1; next} on && NF==0{on=0} on' <<<"$out" \
  | grep -oE '^[[:space:]]*"?[A-Za-z0-9_.+-]+\.so[.0-9]*' | tr -d ' "' | sort -u || true)
for lib in $external; do
  echo "wheel_policy: the wheel needs $lib from the system, outside the manylinux policy" >&2
  status=1
done
[ "$status" = 0 ] && echo "wheel_policy: $(basename "$wheel"): auditwheel's verdict $tag; no external library"
exit "$status"
