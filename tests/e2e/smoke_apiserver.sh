#!/usr/bin/env bash
# The API server answers /version and /readyz, and only on 127.0.0.1 or, in a
# testbed with a real node, on the node's bridge address (where pods reach it).
. "$(dirname "$0")/lib.sh"

version=$(k get --raw /version) || fail "GET /version failed"
git_version=$(sed -nE 's/.*"gitVersion": *"([^"]+)".*/\1/p' <<<"$(tr -d '\n' <<<"$version")")
[[ "$git_version" =~ ^v1\.[0-9]+\.[0-9]+$ ]] || fail "/version has no release gitVersion: $version"
pass "/version answers $git_version"

readyz=$(k get --raw /readyz) || fail "GET /readyz failed"
expect_eq "/readyz" "$readyz" ok
verbose=$(k get --raw '/readyz?verbose') || fail "GET /readyz?verbose failed"
grep -q '\[+\]etcd ok' <<<"$verbose" || fail "/readyz?verbose does not report etcd ok: $verbose"
pass "/readyz is ok (etcd ok)"

# The server in the kubeconfig is a loopback address, or the bridge's.
server=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
host=${RINGMASTER_NODE_IP:-127.0.0.1}
[[ "$server" == "https://$host:"* ]] || fail "the API server is not on $host: $server"
pass "the API server is $server"
