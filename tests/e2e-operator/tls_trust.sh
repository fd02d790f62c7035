#!/usr/bin/env bash
# The operator trusts the kubeconfig's CA alone, as client-go does: not the
# system's CA bundle too. Here the system trust (OpenSSL's default file,
# SSL_CERT_FILE, and hashed directory, SSL_CERT_DIR) holds the testbed's
# real CA and the kubeconfig names an unrelated one: the operator must refuse
# the API server and create nothing. With the real CA in the kubeconfig and
# an empty system bundle, it reconciles.
. "$(dirname "$0")/lib_operator.sh"
setup
command -v openssl >/dev/null || fail "openssl is needed (scripts/setup installs it)"

dir="$LOGDIR/tls"
mkdir -p "$dir"
ca_data=$(k config view --raw --minify -o 'jsonpath={.clusters[0].cluster.certificate-authority-data}')
if [ -n "$ca_data" ]; then
  base64 -d <<<"$ca_data" >"$dir/real-ca.pem"
else
  ca_file=$(k config view --raw --minify -o 'jsonpath={.clusters[0].cluster.certificate-authority}')
  [ -n "$ca_file" ] || fail "the testbed's kubeconfig names no CA"
  cp "$ca_file" "$dir/real-ca.pem"
fi
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/other-ca.key" -out "$dir/other-ca.pem" \
  -days 1 -subj "/CN=not-the-cluster-ca" >/dev/null 2>&1 || fail "openssl could not make a CA"
: >"$dir/empty.pem"

# A kubeconfig that differs from the testbed's in its CA only.
k config view --raw --minify --flatten >"$dir/wrong-ca.kubeconfig"
cluster=$(KUBECONFIG="$dir/wrong-ca.kubeconfig" kubectl config view -o 'jsonpath={.clusters[0].name}')
KUBECONFIG="$dir/wrong-ca.kubeconfig" kubectl config set-cluster "$cluster" \
  --certificate-authority="$dir/other-ca.pem" --embed-certs=true >/dev/null || fail "cannot edit the kubeconfig copy"

cat <<EOF | k -n "$NS" apply -f - >/dev/null || fail "cannot create the job"
apiVersion: ringmaster.io/v1alpha1
kind: DistributedJob
metadata: {name: trust}
spec:
  replicaSpecs:
    Worker:
      replicas: 1
      template: {spec: {containers: [{name: w, image: busybox, command: [sh, -c, "sleep 30"]}]}}
EOF

# The "system" trust: OpenSSL's default file and its hashed directory.
mkdir -p "$dir/system-certs"
cp "$dir/real-ca.pem" "$dir/system-certs/"
openssl rehash "$dir/system-certs" >/dev/null 2>&1 || fail "openssl rehash failed"
KUBECONFIG="$dir/wrong-ca.kubeconfig" SSL_CERT_FILE="$dir/real-ca.pem" SSL_CERT_DIR="$dir/system-certs" \
  start_operator wrong-ca --leader-elect=false
wait_for 60 "the operator to log a refused API server certificate, pointing at the CA" \
  grep -q "SSL handshake (does the kubeconfig's certificate-authority" "$LOGDIR/wrong-ca.log"
k -n "$NS" get service trust >/dev/null 2>&1 && fail "the operator reached the API server through the system CA bundle"
kill_operator wrong-ca TERM
pass "a kubeconfig CA that did not sign the server's certificate is refused, whatever the system trusts"

SSL_CERT_FILE="$dir/empty.pem" start_operator right-ca --leader-elect=false
wait_for 60 "the job's headless Service" k -n "$NS" get service trust
wait_pod_count 60 trust 1
pass "the kubeconfig's CA alone is enough (empty system bundle)"
