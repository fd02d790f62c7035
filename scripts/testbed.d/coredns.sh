# scripts/testbed.d/coredns.sh: CoreDNS for the real node's pods (pins and
# main.go in coredns/: only the plugins the node needs). A host process that
# serves cluster.local from the API server on the bridge's address, port 53;
# the kubelet's clusterDNS points there.
ALL_COMPONENTS+=(coredns)

coredns_module() { echo github.com/coredns/coredns; }
coredns_outputs() { echo coredns; }
coredns_build() {  # OUTDIR GO VERSION
  "$2" build -trimpath -ldflags="-s -w -X github.com/coredns/coredns/coremain.GitCommit=$3" \
    -o "$1/coredns" . || return 1
}

coredns_ready() { curl -fsS --max-time 2 "http://127.0.0.1:$DNS_READY_PORT/ready" >/dev/null; }

coredns_up() {
  local cdir; cdir=$(component_dir coredns)
  node_render Corefile >"$NODE_DIR/Corefile"
  start coredns "$cdir/coredns" -conf "$NODE_DIR/Corefile"
}

coredns_wait() { wait_until coredns 60 coredns_ready; }

coredns_down() { stop coredns; }
