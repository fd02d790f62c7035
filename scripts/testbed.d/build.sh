# scripts/testbed.d/build.sh: building the pinned Go components into the
# cache. Each component's file (testbed.d/<c>.sh) registers itself in
# ALL_COMPONENTS and defines <c>_module (the main module, whose version in
# testbed.d/<c>/go.mod names the build), <c>_outputs (the files the build
# must produce) and <c>_build OUTDIR GO VERSION (the commands, run in its
# pins directory). Optional: <c>_pins (another component's pins directory
# to use) and <c>_key (more text for the cache key: tools beyond Go).

GO_MIN_MINOR=24   # the pins' go.mod files need Go >= 1.24
# Bumped when the way a component is built changes, so the cache is rebuilt.
RECIPE=1

find_go() {
  if [ -n "${GO:-}" ]; then echo "$GO"; return; fi
  if command -v go >/dev/null 2>&1; then command -v go; return; fi
  for g in /usr/local/go/bin/go /usr/lib/go/bin/go; do
    [ -x "$g" ] && { echo "$g"; return; }
  done
  die "no Go toolchain found: install Go >= 1.$GO_MIN_MINOR (set GO=/path/to/go)"
}

go_env() {
  # The pins are exact: never switch toolchains, never edit go.mod/go.sum,
  # ignore any go.work above this directory.
  export GOTOOLCHAIN=local GOWORK=off GOFLAGS="-mod=readonly -buildvcs=false"
  export CGO_ENABLED=0
}

check_go() {
  local go=$1 v minor
  v=$("$go" env GOVERSION 2>/dev/null) || die "'$go' does not run"
  minor=$(sed -E 's/^go1\.([0-9]+).*/\1/' <<<"$v")
  [[ "$minor" =~ ^[0-9]+$ ]] && [ "$minor" -ge "$GO_MIN_MINOR" ] ||
    die "$go is $v; the pinned modules need Go >= 1.$GO_MIN_MINOR"
  echo "$v"
}

# module_version DIR MODULE: the version of MODULE required in DIR/go.mod.
module_version() {
  awk -v m="$2" '($1 == m || ($1 == "require" && $2 == m)) && $0 !~ /=>/ {
      for (i = 1; i <= NF; i++) if ($i ~ /^v[0-9]/) { print $i; exit } }' "$1/go.mod"
}

known_component() {
  [[ " ${ALL_COMPONENTS[*]} " == *" $1 "* ]] || die "unknown component '$1' (one of: ${ALL_COMPONENTS[*]})"
}
main_module() { known_component "$1"; "$1_module"; }
outputs() { "$1_outputs"; }
# pins_dir COMPONENT: its pins directory (<c>_pins names another
# component's; RINGMASTER_KUBERNETES_PINS moves the kubernetes one).
pins_dir() {
  local c=$1
  if declare -F "${c}_pins" >/dev/null; then c=$("${c}_pins"); fi
  if [ "$c" = kubernetes ] && [ -n "${RINGMASTER_KUBERNETES_PINS:-}" ]; then
    echo "$RINGMASTER_KUBERNETES_PINS"
  else
    echo "$PINS_DIR/$c"
  fi
}

is_built() {  # DIR COMPONENT
  local f
  [ -f "$1/.complete" ] || return 1
  for f in $(outputs "$2"); do [ -s "$1/$f" ] || return 1; done
}

# The cache key of a component: its pinned version plus a hash of its pin
# files, the Go version, the build recipe (and its own key, if any).
component_dir() {
  local c=$1 go_version=${2:-} mod ver hash pins
  mod=$(main_module "$c"); pins=$(pins_dir "$c")
  ver=$(module_version "$pins" "$mod")
  [ -n "$ver" ] || die "no version of $mod in $pins/go.mod"
  if [ -z "$go_version" ]; then
    # Without a Go at hand (up/down), take the newest build of this version.
    local d
    d=$(ls -1dt "$BIN_ROOT/$c-$ver-"* 2>/dev/null | while read -r x; do
          is_built "$x" "$c" && { echo "$x"; break; }; done)
    echo "${d:-$BIN_ROOT/$c-$ver-missing}"
    return
  fi
  hash=$( (cd "$pins" && find . -type f | LC_ALL=C sort | xargs cat;
           echo "$go_version recipe=$RECIPE"
           if declare -F "${c}_key" >/dev/null; then "${c}_key"; fi) | sha256sum | cut -c1-12)
  echo "$BIN_ROOT/$c-$ver-$hash"
}

# build_commands COMPONENT GO VERSION OUTDIR: download the modules, then the
# component's own commands. Every step is checked explicitly (no reliance on
# set -e, which bash ignores in a function called as a condition).
build_commands() {
  local c=$1 go=$2 ver=$3 out=$4
  cd "$(pins_dir "$c")" || return 1
  local t0; t0=$(now_ms)
  "$go" mod download || return 1
  log "build: $c: modules downloaded ($(elapsed "$t0")); compiling"
  "${c}_build" "$out" "$go" "$ver"
}

build_one() {
  local c=$1 go=$2 go_version=$3 dir tmp mod ver start
  dir=$(component_dir "$c" "$go_version")
  if is_built "$dir" "$c"; then
    log "build: $c: cached in $dir"
    return 0
  fi
  mod=$(main_module "$c"); ver=$(module_version "$(pins_dir "$c")" "$mod")
  start=$(now_ms)
  log "build: $c: building $mod $ver with $go_version into $dir"
  mkdir -p "$BIN_ROOT"
  tmp=$(mktemp -d "$BIN_ROOT/.build-$c.XXXXXX")
  if ! (build_commands "$c" "$go" "$ver" "$tmp"); then
    rm -rf "$tmp"
    die "build: $c: failed (see the go output above)"
  fi
  local f
  for f in $(outputs "$c"); do
    [ -s "$tmp/$f" ] || { rm -rf "$tmp"; die "build: $c: $f was not produced"; }
  done
  printf '%s %s %s\n' "$mod" "$ver" "$go_version" >"$tmp/.complete"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  log "build: $c: done in $(elapsed "$start")"
}

cmd_build() {
  local -a comps=("$@")
  [ ${#comps[@]} -gt 0 ] || comps=("${ALL_COMPONENTS[@]}")
  local go go_version c start
  go=$(find_go); go_version=$(check_go "$go")
  go_env
  mkdir -p "$BIN_ROOT"
  exec 8>"$BIN_ROOT/.lock"
  flock -w 3600 8 || die "build: another build holds $BIN_ROOT/.lock"
  rm -rf "$BIN_ROOT"/.build-*   # left by an interrupted build
  start=$(now_ms)
  for c in "${comps[@]}"; do main_module "$c" >/dev/null; done
  for c in "${comps[@]}"; do build_one "$c" "$go" "$go_version"; done
  log "build: all of ${comps[*]} ready ($(elapsed "$start"))"
}

cmd_bin_dir() {
  local c=${1:-kubernetes}
  main_module "$c" >/dev/null
  local d; d=$(component_dir "$c")
  is_built "$d" "$c" || die "$c is not built: run scripts/testbed build"
  echo "$d"
}

# require_built COMPONENT...: die unless each is in the cache.
require_built() {
  local c
  for c in "$@"; do
    is_built "$(component_dir "$c")" "$c" ||
      die "$c is not built ($(basename "$(component_dir "$c")")): run 'scripts/testbed build' first"
  done
}
