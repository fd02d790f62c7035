#!/usr/bin/env bash
# The agent's floors (docs/engine.md, "Layout"): an include may only reach
# down. Lists every include in agent/src (or the tree given) that runs
# against the order and fails if there is one.
#
#   0  clock.h, agent_log.h (the top level's shared headers), ringmaster/ (public)
#   1  transport/
#   2  bootstrap/, collectives/ (neither includes the other)
#   3  group/
#   4  gpu/
#   5  the rest of the top level: the communicator and the facades
#
# A file may include its own folder, and any floor below its own.
#
# And no include cycle, within a folder or across: a module is a header and
# its source (x.h and x.cc), and its includes are both files' includes; if
# module A includes B, nothing B includes may lead back to A. So a header
# that needs what two modules share gets it from a third one below both.
# (tsort finds the cycles.)
set -euo pipefail

src=${1:-$(cd "$(dirname "$0")/../../agent/src" && pwd)}
[[ -d $src ]] || { echo "include_order_test: no directory $src" >&2; exit 2; }

# The floors set REPLY (no subshell: the loops below fork nothing, so the
# test takes the same few hundred milliseconds on a loaded machine).
floor_of_folder() {
  case $1 in
    transport) REPLY=1 ;;
    bootstrap | collectives) REPLY=2 ;;
    group) REPLY=3 ;;
    gpu) REPLY=4 ;;
    *) REPLY=-1 ;;  # a folder the order does not know
  esac
}

floor_of_top() {  # a file or header at the top level
  case $1 in
    clock.h | clock.cc | agent_log.h | agent_log.cc) REPLY=0 ;;
    *) REPLY=5 ;;
  esac
}

# Every file, and every quoted include of each (one grep for the tree).
declare -A includes_of=()  # file -> "line:include" lines
files_found=()
while IFS= read -r -d '' path; do files_found+=("${path#"$src"/}"); done < <(
  find "$src" -type f \( -name '*.h' -o -name '*.cc' \) -print0 | sort -z)
include_re='^([0-9]+):[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]*)"'
if ((${#files_found[@]} > 0)); then
  while IFS= read -r hit; do
    rel=${hit#"$src"/}
    file=${rel%%:*}
    rest=${rel#*:}
    [[ $rest =~ $include_re ]] || continue
    includes_of[$file]+="${BASH_REMATCH[1]}:${BASH_REMATCH[2]}"$'\n'
  done < <(cd "$src" && grep -n -H '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "${files_found[@]}" |
    sed "s|^|$src/|" || true)
fi

violations=0 files=0
declare -A edge_at=()  # "module included" -> the first file:line that includes it
edges=""
for rel in "${files_found[@]}"; do
  files=$((files + 1))
  if [[ $rel == */* ]]; then
    own=${rel%%/*}
    floor_of_folder "$own"
    floor=$REPLY
    if ((floor < 0)); then
      echo "$rel: folder $own/ has no floor (add it to docs/engine.md's Layout and to this script)"
      violations=$((violations + 1))
      continue
    fi
  else
    own=""
    floor_of_top "$rel"
    floor=$REPLY
  fi
  module=${rel%.*}
  while IFS=: read -r line inc; do
    [[ -n $inc ]] || continue
    [[ $inc == ringmaster/* ]] && continue  # public headers and the generated protos: floor 0
    to=${inc%.*}
    if [[ -f $src/$inc && $to != "$module" && -z ${edge_at["$module $to"]:-} ]]; then
      edge_at["$module $to"]="$rel:$line"
      edges+="$module $to"$'\n'
    fi
    if [[ $inc == */* ]]; then
      folder=${inc%%/*}
      [[ $folder == "$own" ]] && continue
      floor_of_folder "$folder"
      target=$REPLY
      what="$folder/"
    else
      floor_of_top "$inc"
      target=$REPLY
      what="the top level's $inc"
      # The top level is one folder per floor: its files include each other.
      [[ -z $own ]] && ((target == floor)) && continue
    fi
    if ((target < 0 || target >= floor)); then
      echo "$rel:$line: includes \"$inc\": $what is not below ${own:-$rel} (floor $floor)"
      violations=$((violations + 1))
    fi
  done <<<"${includes_of[$rel]:-}"
done

if ((files == 0)); then
  echo "include_order_test: no source under $src" >&2
  exit 2
fi

# Cycles: tsort names every loop it breaks, its modules in include order.
cycles=0
loop=()
report_loop() {
  ((${#loop[@]} > 0)) || return 0
  local path="" i from to
  for ((i = 0; i < ${#loop[@]}; i++)); do
    from=${loop[i]} to=${loop[(i + 1) % ${#loop[@]}]}
    path+="$from -> "
    echo "  ${edge_at["$from $to"]:-?}: $from includes $to"
  done
  echo "include cycle: $path${loop[0]}"
  cycles=$((cycles + 1))
  loop=()
}
while IFS= read -r msg; do
  case $msg in
    "tsort: -: input contains a loop:") report_loop ;;
    "tsort: "*) loop+=("${msg#tsort: }") ;;
  esac
done < <(printf '%s' "$edges" | tsort 2>&1 >/dev/null)
report_loop
violations=$((violations + cycles))
if ((violations > 0)); then
  echo "include_order_test: $((violations - cycles)) include(s) against the order and $cycles include" \
    "cycle(s) in $files files" >&2
  exit 1
fi
echo "include_order_test: $files files, every include reaches down, no include cycle"
