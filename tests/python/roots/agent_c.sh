#!/usr/bin/env bash
# The agent's release archive (scripts/agent-archive) in a minimal Debian
# root with gcc added as `apt-get install gcc` adds it (with libc6-dev, the C
# library's headers; no -dev package of ours or of gRPC's): a C
# program compiles against it, links only libc (and, through the library,
# libstdc++) from the system, and two members of it all-reduce under the
# archive's own `ringmaster run`.
#   agent_c.sh SUITE WHEEL_PATH_FILE
set -euo pipefail
suite=$1
wheel=$(cat "$2")
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ringmaster-agent-c.XXXXXX")
trap 'rm -rf "$work"' EXIT
archive=$("$repo/scripts/agent-archive" "$wheel" "$work" | tail -n 1)
mkdir -p "$work/out"
cp "$here/allreduce.c" "$here/allreduce-job.yaml" "$work/"
rc=0
"$repo/scripts/roots" run "$suite" "$work" -- '
  set -e
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc >/dev/null
  tar -xzf '"$(basename "$archive")"'
  A=/work/$(ls -d ringmaster-agent-*/ | head -n 1)
  gcc -std=c11 -Wall -Wextra -Werror -I"$A/include" allreduce.c -o allreduce -L"$A/lib" -lringmaster -Wl,-rpath,"$A/lib"
  ldd ./allreduce >out/ldd.txt
  set +e
  "$A/bin/ringmaster" run allreduce-job.yaml >out/job.log 2>&1; echo $? >out/job.rc
' || rc=$?
[ "$rc" = 0 ] || { echo "agent_c: the commands in the $suite root failed (exit $rc)" >&2; exit 1; }
status=0
cat "$work/out/job.log"
if [ "$(cat "$work/out/job.rc")" != 0 ] || [ "$(grep -c 'the sums are right' "$work/out/job.log" || true)" != 2 ]; then
  echo "agent_c: the 2-member job did not succeed with the right sums on both" >&2
  status=1
fi
# What the program loads from the system: libc's family and libstdc++ alone;
# everything else from the archive.
echo "ldd ./allreduce:"; cat "$work/out/ldd.txt"
while read -r line; do
  name=$(awk '{print $1}' <<<"$line")
  path=$(awk '$2 == "=>" {print $3}' <<<"$line")
  case "$name" in
    linux-vdso.so.*|/lib64/ld-linux-x86-64.so.2|libc.so.6|libm.so.6|libstdc++.so.6|libgcc_s.so.1) continue ;;
  esac
  if [[ "$path" != /work/ringmaster-agent-*/lib/* ]]; then
    echo "agent_c: $name comes from ${path:-nowhere} (not the archive, not libc/libstdc++)" >&2
    status=1
  fi
done <"$work/out/ldd.txt"
# find_package(Ringmaster) and pkg-config on the unpacked archive (on this
# machine: the root has neither cmake nor pkg-config).
tar -C "$work" -xzf "$archive"
a=$(ls -d "$work"/ringmaster-agent-*/ | head -n 1)
pc=$(PKG_CONFIG_PATH="$a/lib/pkgconfig" pkg-config --cflags --libs ringmaster)
[[ "$pc" == *"-lringmaster"* && "$pc" == *"/include"* ]] || { echo "agent_c: pkg-config says '$pc'" >&2; status=1; }
mkdir -p "$work/cm"
cat >"$work/cm/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(use_ringmaster C)
find_package(Ringmaster 0.1 REQUIRED)
add_executable(allreduce ../allreduce.c)
target_link_libraries(allreduce PRIVATE Ringmaster::agent)
CM
if ! { cmake -S "$work/cm" -B "$work/cm/build" -DRingmaster_DIR="$a/lib/cmake/Ringmaster" >"$work/cm.log" 2>&1 \
       && cmake --build "$work/cm/build" >>"$work/cm.log" 2>&1; }; then
  cat "$work/cm.log" >&2
  echo "agent_c: a CMake project could not find_package(Ringmaster) and link it" >&2
  status=1
fi
[ "$status" = 0 ] && echo "agent_c: $(basename "$archive"): built, linked and ran in $suite"
exit "$status"
