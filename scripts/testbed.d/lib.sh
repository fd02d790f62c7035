# scripts/testbed.d/lib.sh: what every part of the testbed shares: messages,
# time, ports, and the processes it starts (recorded by pid and start time,
# so that down signals exactly those and never a reused pid).
# Sourced by scripts/testbed; expects RUN_DIR and PROG.

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }

now_ms() { date +%s%3N; }
elapsed() { local s=$(( $(now_ms) - $1 )); printf '%d.%01ds' $((s / 1000)) $((s % 1000 / 100)); }

# ------------------------------------------------------------ processes ---

proc_starttime() {  # field 22 of /proc/PID/stat; fails for a zombie
  local stat rest
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
  rest=${stat##*) }
  # shellcheck disable=SC2086
  set -- $rest
  [ "$1" != Z ] || return 1
  echo "${20}"
}

# is_ours NAME: the process recorded for NAME is alive and is the very one
# we started (same pid and start time, so a reused pid is never touched).
is_ours() {
  local f="$RUN_DIR/pids/$1" pid st cur
  [ -f "$f" ] || return 1
  read -r pid st _ <"$f" || return 1
  cur=$(proc_starttime "$pid") || return 1
  [ "$cur" = "$st" ]
}

recorded_pid() { local pid; read -r pid _ <"$RUN_DIR/pids/$1"; echo "$pid"; }

any_recorded() { [ -d "$RUN_DIR/pids" ] && [ -n "$(ls -A "$RUN_DIR/pids" 2>/dev/null)" ]; }

# start NAME BINARY ARGS...: run detached, stdio to the log, record the pid.
start() {
  local name=$1; shift
  mkdir -p "$RUN_DIR/pids" "$RUN_DIR/logs"
  # fds 8 and 9 hold the build and up/down locks: the child must not inherit them.
  setsid "$@" </dev/null >>"$RUN_DIR/logs/$name.log" 2>&1 8>&- 9>&- &
  local pid=$! st
  st=$(proc_starttime "$pid") || { sleep 0.2; die "$name exited at once; see $RUN_DIR/logs/$name.log"; }
  echo "$pid $st $1" >"$RUN_DIR/pids/$name"
}

# stop NAME...: TERM the recorded processes together, wait up to 10 s for
# them to exit, then KILL what is left. Only processes that are still the
# very ones we started are signalled.
stop() {
  local name pid i left
  for name in "$@"; do
    if is_ours "$name"; then kill -TERM "$(recorded_pid "$name")" 2>/dev/null || true; fi
  done
  for i in $(seq 1 100); do
    left=()
    for name in "$@"; do is_ours "$name" && left+=("$name"); done
    [ ${#left[@]} -gt 0 ] || break
    sleep 0.1
  done
  for name in "${left[@]}"; do
    pid=$(recorded_pid "$name")
    log "down: $name (pid $pid) ignored TERM for 10s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  done
  for i in $(seq 1 50); do
    left=()
    for name in "$@"; do is_ours "$name" && left+=("$name"); done
    [ ${#left[@]} -gt 0 ] || break
    sleep 0.1
  done
  [ ${#left[@]} -eq 0 ] || log "down: could not stop ${left[*]}"
  for name in "$@"; do rm -f "$RUN_DIR/pids/$name"; done
}

fail_with_log() {  # NAME MESSAGE
  local f="$RUN_DIR/logs/$1.log"
  log "$2"
  if [ -f "$f" ]; then
    log "last lines of $f:"
    tail -n 25 "$f" | sed 's/^/    /' >&2
  fi
  teardown >/dev/null 2>&1 || true
  die "up failed; the logs are kept in $RUN_DIR.logs"
}

# wait_until NAME SECONDS COMMAND...: poll COMMAND every 0.2 s; fail if the
# process NAME dies or the time runs out.
wait_until() {
  local name=$1 secs=$2; shift 2
  local deadline=$(( $(now_ms) + secs * 1000 ))
  while :; do
    if "$@" >/dev/null 2>&1; then return 0; fi
    if [ -n "$name" ] && ! is_ours "$name"; then
      fail_with_log "$name" "$name exited while starting"
    fi
    if [ "$(now_ms)" -ge "$deadline" ]; then
      fail_with_log "${name:-kube-apiserver}" "timed out after ${secs}s waiting for: ${*}"
    fi
    sleep 0.2
  done
}

# ---------------------------------------------------------------- ports ---

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_port: print a port in 20000-31999 (below the ephemeral range) that
# nothing listens on and that this run has not handed out yet.
PORTS_TAKEN=" "
free_port() {
  local p
  while :; do
    p=$(( 20000 + RANDOM % 12000 ))
    [[ "$PORTS_TAKEN" == *" $p "* ]] && continue
    port_in_use "$p" && continue
    PORTS_TAKEN+="$p "
    echo "$p"; return
  done
}

# pick_ports NAME...: a free port for each NAME, written to ports.env.
pick_ports() {
  local n
  : >"$RUN_DIR/ports.env"
  for n in "$@"; do
    # Not $(free_port): the subshell would lose PORTS_TAKEN.
    free_port >"$RUN_DIR/.port"; echo "$n=$(<"$RUN_DIR/.port")" >>"$RUN_DIR/ports.env"
    PORTS_TAKEN+="$(<"$RUN_DIR/.port") "
  done
  rm -f "$RUN_DIR/.port"
}

# API_HOST, where the API server listens, is in ports.env when it is not
# 127.0.0.1 (the real node's bridge address).
load_ports() { API_HOST=127.0.0.1; [ -f "$RUN_DIR/ports.env" ] && . "$RUN_DIR/ports.env"; }

kctl() { "$KUBECTL" --kubeconfig "$RUN_DIR/kubeconfig" --request-timeout=20s "$@"; }
