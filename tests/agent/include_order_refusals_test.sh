#!/usr/bin/env bash
# Shows that include_order_test.sh can fail: it is run on small trees made
# here, one flaw planted in each, and must refuse each one, naming it; the
# same tree without a flaw must pass.
#
#   a cycle within a folder   bootstrap/a.h includes bootstrap/b.h, and
#                             bootstrap/b.cc includes bootstrap/a.h
#   a cycle of three at the   x.h -> y.h, y.cc -> z.h, z.cc -> x.h
#   top level
#   an upward include         transport/up.cc includes group/g.h
set -euo pipefail

check=${1:-$(cd "$(dirname "$0")" && pwd)/include_order_test.sh}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# A tree that keeps the order: every floor, includes only downward.
plant_clean() {  # DIR
  mkdir -p "$1"/transport "$1"/bootstrap "$1"/group
  printf '#pragma once\n' >"$1"/clock.h
  printf '#pragma once\n#include "clock.h"\n' >"$1"/transport/t.h
  printf '#pragma once\n#include "transport/t.h"\n' >"$1"/bootstrap/a.h
  printf '#pragma once\n#include "bootstrap/a.h"\n' >"$1"/bootstrap/b.h
  printf '#include "bootstrap/b.h"\n' >"$1"/bootstrap/b.cc
  printf '#pragma once\n#include "bootstrap/b.h"\n' >"$1"/group/g.h
  printf '#include "group/g.h"\n' >"$1"/x.cc
}

# expect NAME WANT_RC PATTERN: runs the check on $work/NAME; its exit status
# must be WANT_RC and its output must match the extended regex PATTERN.
expect() {
  local name=$1 want=$2 pattern=$3 out rc=0
  out=$("$check" "$work/$name" 2>&1) || rc=$?
  if [[ $rc != "$want" ]] || ! grep -Eq -- "$pattern" <<<"$out"; then
    echo "FAIL $name: exit $rc (want $want), output must match: $pattern"
    sed 's/^/    /' <<<"$out"
    failures=$((failures + 1))
  else
    echo "ok   $name: exit $rc"
  fi
}

plant_clean "$work/clean"
expect clean 0 'every include reaches down, no include cycle'

plant_clean "$work/cycle_in_folder"
printf '#pragma once\n#include "transport/t.h"\n#include "bootstrap/b.h"\n' >"$work/cycle_in_folder/bootstrap/a.h"
printf '#include "bootstrap/b.h"\n#include "bootstrap/a.h"\n' >"$work/cycle_in_folder/bootstrap/b.cc"
expect cycle_in_folder 1 \
  'include cycle: bootstrap/(a -> bootstrap/b -> bootstrap/a|b -> bootstrap/a -> bootstrap/b)$'
expect cycle_in_folder 1 'bootstrap/b.cc:2: bootstrap/b includes bootstrap/a'

plant_clean "$work/cycle_of_three"
printf '#pragma once\n#include "y.h"\n' >"$work/cycle_of_three/x.h"
printf '#pragma once\n' >"$work/cycle_of_three/y.h"
printf '#include "y.h"\n#include "z.h"\n' >"$work/cycle_of_three/y.cc"
printf '#pragma once\n' >"$work/cycle_of_three/z.h"
printf '#include "z.h"\n#include "x.h"\n' >"$work/cycle_of_three/z.cc"
expect cycle_of_three 1 'include cycle: (x -> y -> z -> x|y -> z -> x -> y|z -> x -> y -> z)$'
expect cycle_of_three 1 '0 include\(s\) against the order and 1 include cycle\(s\)'

plant_clean "$work/upward"
printf '#include "group/g.h"\n' >"$work/upward/transport/up.cc"
expect upward 1 'transport/up.cc:1: includes "group/g.h": group/ is not below transport \(floor 1\)'

if ((failures > 0)); then
  echo "include_order_refusals_test: $failures case(s) not refused as they must be" >&2
  exit 1
fi
echo "include_order_refusals_test: every planted flaw refused, the clean tree passed"
