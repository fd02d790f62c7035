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
