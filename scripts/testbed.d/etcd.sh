# scripts/testbed.d/etcd.sh: etcd, the API server's store (pins in etcd/).
ALL_COMPONENTS+=(etcd)

etcd_module() { echo go.etcd.io/etcd/server/v3; }
etcd_outputs() { echo etcd; }
etcd_build() {  # OUTDIR GO VERSION
  "$2" build -trimpath -ldflags="-s -w" -o "$1/etcd" go.etcd.io/etcd/server/v3 || return 1
}

etcd_ok() { curl -fsS --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'; }

etcd_up() {
  local edir; edir=$(component_dir etcd)
  start etcd "$edir/etcd" \
    --name testbed --data-dir "$RUN_DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "testbed=http://127.0.0.1:$ETCD_PEER_PORT" \
    --unsafe-no-fsync --log-level warn
  wait_until etcd 30 etcd_ok
}

etcd_down() { stop etcd; }

# restart-etcd [SECONDS]: etcd SIGKILLed, as a crash, kept away SECONDS
# (default 2) and started again on its data; returns once etcd is healthy and
# the API server ready again (it reconnects by itself).
cmd_restart_etcd() {
  local away=${1:-2}
  [[ "$away" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "restart-etcd: SECONDS must be a number, not '$away'"
  require_up
  exec 9>"$RUN_DIR.lock"
  flock -w 120 9 || die "another 'scripts/testbed up/down' holds $RUN_DIR.lock"
  load_ports
  local start i; start=$(now_ms)
  if is_ours etcd; then kill -KILL "$(recorded_pid etcd)" 2>/dev/null || true; fi
  for i in $(seq 1 50); do is_ours etcd || break; sleep 0.1; done
  is_ours etcd && die "restart-etcd: etcd (pid $(recorded_pid etcd)) outlived SIGKILL for 5 s"
  rm -f "$RUN_DIR/pids/etcd"
  sleep "$away"
  etcd_up
  wait_until kube-apiserver 60 api_ready
  log "restart-etcd: away ${away}s; etcd and the API server ready again ($(elapsed "$start"))"
}

# compact-etcd: etcd's history compacted (physically) up to its current
# revision, as the API server's own compaction does every few minutes; a
# read or watch from an older revision then gets "compacted" (the API's 410
# Gone). Prints the revision.
cmd_compact_etcd() {
  require_up
  load_ports
  local url="http://127.0.0.1:$ETCD_PORT/v3/kv" rev
  rev=$(curl -fsS --max-time 5 -X POST "$url/range" -d '{"key":"AA==","limit":1}' |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["header"]["revision"])') ||
    die "compact-etcd: could not read etcd's revision from $url/range"
  # Nothing written since the last compaction leaves the revision where it
  # was, and etcd answers 400 "required revision has been compacted": the
  # history is already gone, which is what was asked.
  local answer
  answer=$(curl -sS --max-time 30 -X POST "$url/compaction" -d "{\"revision\":\"$rev\",\"physical\":true}" 2>&1) ||
    die "compact-etcd: compaction to revision $rev failed: $answer"
  case $answer in
    *"required revision has been compacted"*)
      log "compact-etcd: revision $rev was already compacted" ;;
    *'"error"'* | *'"code"'*)
      die "compact-etcd: compaction to revision $rev failed: $answer" ;;
    *)
      log "compact-etcd: compacted to revision $rev" ;;
  esac
  echo "$rev"
}
