#!/usr/bin/env bash
# Installs the agent from a build tree into a scratch prefix, then builds
# examples/link against it (CMake's find_package, shared and static, and
# pkg-config) and
# runs the results as a one-member group.
# usage: link_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --component agent --prefix "$work/prefix" >/dev/null
cmake -S "$src/examples/link" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
ports=$(python3 -c 'import socket
ss=[socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1",0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
read -r p0 p1 <<<"$ports"
cluster="{\"worker\":[\"127.0.0.1:$p0\",\"127.0.0.1:$p1\"]}"
export RINGMASTER_FORMATION_TIMEOUT_SECONDS=60
# Two members, two processes: the C++ example, the C one, then the C++ one
# linked against libringmaster.a.
for exe in allreduce_example allreduce_example_c allreduce_example_static; do
  TF_CONFIG="{\"cluster\":$cluster,\"task\":{\"type\":\"worker\",\"index\":1}}" "$work/build/$exe" &
  other=$!
  TF_CONFIG="{\"cluster\":$cluster,\"task\":{\"type\":\"worker\",\"index\":0}}" "$work/build/$exe"
  wait "$other"
done
export TF_CONFIG="{\"cluster\":{\"worker\":[\"127.0.0.1:$p0\"]},\"task\":{\"type\":\"worker\",\"index\":0}}"
# pkg-config, as a Makefile-based build would do it.
libdir=$(find "$work/prefix" -type d -name pkgconfig | head -1)
export PKG_CONFIG_PATH=$libdir
flags=$(pkg-config --cflags --libs ringmaster)
# shellcheck disable=SC2086
c++ -o "$work/pc_example" "$src/examples/link/main.cc" $flags -Wl,-rpath,"$(dirname "$libdir")"
"$work/pc_example"
echo "link test: ok"
