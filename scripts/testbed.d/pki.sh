# scripts/testbed.d/pki.sh: the testbed's certificate authority, the
# certificates of its components and their kubeconfigs, all in $RUN_DIR/pki.

gen_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

# sign NAME SUBJECT EXTENDED_KEY_USAGE [SUBJECT_ALT_NAMES]
sign() {
  local name=$1 subj=$2 eku=$3 san=${4:-} pki="$RUN_DIR/pki"
  gen_key "$pki/$name.key"
  {
    echo "[v3]"
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$eku"
    [ -z "$san" ] || echo "subjectAltName=$san"
  } >"$pki/$name.ext"
  openssl req -new -key "$pki/$name.key" -subj "$subj" -config "$pki/req.cnf" 2>/dev/null |
    openssl x509 -req -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -set_serial "0x$(openssl rand -hex 12)" \
      -days 365 -extfile "$pki/$name.ext" -extensions v3 -out "$pki/$name.crt" 2>/dev/null
  rm -f "$pki/$name.ext"
}

gen_pki() {
  local pki="$RUN_DIR/pki"
  mkdir -p "$pki"; chmod 700 "$pki"
  printf '[req]\ndistinguished_name=dn\n[dn]\n[v3_ca]\nbasicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign,digitalSignature\nsubjectKeyIdentifier=hash\n' >"$pki/req.cnf"
  gen_key "$pki/ca.key"
  openssl req -x509 -new -key "$pki/ca.key" -subj "/CN=ringmaster-testbed-ca" -days 365 \
    -config "$pki/req.cnf" -extensions v3_ca -out "$pki/ca.crt" 2>/dev/null
  sign apiserver "/CN=kube-apiserver" serverAuth \
    "IP:$API_HOST,IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  sign admin "/O=system:masters/CN=ringmaster-admin" clientAuth
  sign controller-manager "/CN=system:kube-controller-manager" clientAuth
  sign scheduler "/CN=system:kube-scheduler" clientAuth
  sign kwok "/O=system:masters/CN=kwok-controller" clientAuth
  gen_key "$pki/sa.key"
  openssl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  [ -s "$pki/kwok.crt" ] && [ -s "$pki/sa.pub" ] || die "certificate generation failed (openssl)"
}

# write_kubeconfig FILE CERT_NAME: a kubeconfig with embedded credentials.
write_kubeconfig() {
  local file=$1 who=$2 pki="$RUN_DIR/pki"
  cat >"$file" <<EOK
apiVersion: v1
kind: Config
clusters:
- name: ringmaster-testbed
  cluster:
    server: https://$API_HOST:$API_PORT
    certificate-authority-data: $(base64 -w0 <"$pki/ca.crt")
users:
- name: $who
  user:
    client-certificate-data: $(base64 -w0 <"$pki/$who.crt")
    client-key-data: $(base64 -w0 <"$pki/$who.key")
contexts:
- name: ringmaster-testbed
  context:
    cluster: ringmaster-testbed
    user: $who
current-context: ringmaster-testbed
EOK
  chmod 600 "$file"
}
