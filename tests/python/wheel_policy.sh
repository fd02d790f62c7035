#!/usr/bin/env bash
# The wheel users install (scripts/python-wheel) against the manylinux
# policy: auditwheel show must find its symbol versions within
# manylinux_2_34 or an older policy (glibc 2.34: RHEL 9, Ubuntu 22.04,
# Debian 12 and later), its file name must carry that tag, and the only
# library it needs from outside itself and the policy's list is TensorFlow's
# framework library, which the prebuilt ops link and the user's TensorFlow
# has loaded before them. (auditwheel's first line, the verdict over both,
# says linux_x86_64 for that one library.)
#   wheel_policy.sh WHEEL_PATH_FILE
set -euo pipefail
wheel=$(cat "$1")
tools=${RINGMASTER_CACHE:-$HOME/.cache/ringmaster}/venv-wheel-tools
out=$(PATH="$tools/bin:$PATH" "$tools/bin/auditwheel" show "$wheel" 2>&1)
echo "$out"
status=0
# What the symbol versions allow: "This constrains the platform tag to "TAG"",
# or, with no library outside the policy, the verdict itself.
tag=$(tr '\n' ' ' <<<"$out" | grep -oE '(constrains the platform tag to|consistent with the following platform tag:) +"manylinux_[0-9a-z_]+"' \
  | grep -oE '"[^"]+"' | tr -d '"' | sort -t_ -k3 -n | tail -n 1 || true)
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
  [ "$lib" = libtensorflow_framework.so.2 ] && continue
  echo "wheel_policy: the wheel needs $lib from the system, outside the manylinux policy" >&2
  status=1
done
[ "$status" = 0 ] && echo "wheel_policy: $(basename "$wheel"): symbol versions within $tag; libraries auditwheel names as external: ${external:-none}"
exit "$status"
