# scripts/testbed.d/kueue.sh: Kueue (pins in kueue/), the queueing controller
# that admits pod groups: `scripts/testbed kueue up|down|status` runs it
# against the testbed, with its CRDs, its webhooks on 127.0.0.1 and a sample
# ResourceFlavor, ClusterQueue and LocalQueue. Not part of `up` (it costs
# about 4 s): the tests that need it start it; the testbed's `down` removes
# it too. See docs/testing.md, "Kueue on the testbed".
ALL_COMPONENTS+=(kueue)

kueue_module() { echo sigs.k8s.io/kueue; }
kueue_outputs() { echo kueue webhooks.yaml crds/kueue.x-k8s.io_workloads.yaml; }
# The recipe below (the patch, the webhook and CRD rewrites) is part of the
# cache key: changing it rebuilds.
kueue_key() { declare -f kueue_build kueue_webhooks_template kueue_crd_conversion; }

# Without internal certificate management, Kueue reads its metrics serving
# certificate from a fixed /etc/kueue/metrics/certs (cmd/kueue/main.go), even
# with metrics off, and exits if it is not there. The build changes that one
# line to read the directory from $KUEUE_METRICS_CERT_DIR (default: the fixed
# path), so that nothing is written under /etc: its main.go as a package of
# this module, through a -overlay (the module cache itself cannot be
# overlaid), as for kubeflow.
kueue_build() {  # OUTDIR GO VERSION
  local out=$1 go=$2 ver=$3 src main work f
  src=$("$go" list -m -f '{{.Dir}}' sigs.k8s.io/kueue) || return 1
  main="$src/cmd/kueue/main.go"
  work=$(mktemp -d) || return 1
  sed 's#^\(\t*\)metricsCertPath := "/etc/kueue/metrics/certs"$#\1metricsCertPath := func() string { if d := os.Getenv("KUEUE_METRICS_CERT_DIR"); d != "" { return d }; return "/etc/kueue/metrics/certs" }()#' \
    "$main" >"$work/main.go" || return 1
  if ! grep -q 'os.Getenv("KUEUE_METRICS_CERT_DIR")' "$work/main.go"; then
    log "build: kueue: could not patch the metrics certificate path in $main"
    rm -rf "$work"; return 1
  fi
  printf '{"Replace":{"%s":"%s"}}\n' "$PINS_DIR/kueue/cmd/kueue/main.go" \
    "$work/main.go" >"$work/overlay.json"
  "$go" build -trimpath -overlay="$work/overlay.json" \
    -ldflags="-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$3" \
    -o "$out/kueue" ./cmd/kueue || { rm -rf "$work"; return 1; }
  rm -rf "$work"
  # Its CRDs as published in the module; those that upstream's kustomization
  # gives a conversion webhook get one here too (its URL and CA at up).
  mkdir -p "$out/crds" || return 1
  for f in "$src"/config/components/crd/bases/*.yaml; do
    if grep -qx "\- path: patches/webhook_in_$(basename "$f" .yaml | sed 's/^kueue.x-k8s.io_//').yaml" \
         "$src/config/components/crd/kustomization.yaml"; then
      kueue_crd_conversion <"$f" >"$out/crds/$(basename "$f")" || return 1
      grep -q '@KUEUE_CONVERT_URL@' "$out/crds/$(basename "$f")" ||
        { log "build: kueue: could not add the conversion webhook to $f"; return 1; }
    else
      cp "$f" "$out/crds/" || return 1
    fi
  done
  [ "$(grep -l '@KUEUE_CONVERT_URL@' "$out"/crds/*.yaml | wc -l)" -ge 4 ] ||
    { log "build: kueue: fewer CRDs with a conversion webhook than expected"; return 1; }
  # Its webhook registrations, rewritten for a webhook server on 127.0.0.1.
  kueue_webhooks_template <"$src/config/components/webhook/manifests.yaml" >"$out/webhooks.yaml" || return 1
  for f in mpod.kb.io vpod.kb.io mworkload.kb.io vworkload.kb.io vclusterqueue.kb.io; do
    grep -q "name: $f\$" "$out/webhooks.yaml" || { log "build: kueue: webhook $f missing"; return 1; }
  done
  if grep -q 'service:' "$out/webhooks.yaml" ||
     [ "$(grep -c 'kueue.x-k8s.io/queue-name' "$out/webhooks.yaml")" != 2 ]; then
    log "build: kueue: could not rewrite $src/config/components/webhook/manifests.yaml"; return 1
  fi
  chmod -R u+w "$out/crds" "$out/webhooks.yaml"
}

# kueue_crd_conversion <CRD >CRD: add upstream's conversion webhook
# (config/components/crd/patches/webhook_in_*.yaml) with a URL instead of a
# Service.
kueue_crd_conversion() {
  awk '{ print }
       /^spec:$/ && !done { done = 1
         print "  conversion:"
         print "    strategy: Webhook"
         print "    webhook:"
         print "      clientConfig:"
         print "        url: @KUEUE_CONVERT_URL@"
         print "        caBundle: @KUEUE_CA_BUNDLE@"
         print "      conversionReviewVersions:"
         print "      - v1" }'
}

# kueue_webhooks_template <manifests.yaml >webhooks.yaml: the webhooks of
# Kueue's own API group and of pods (the integration enabled here); the
# others (Jobs, Deployments, StatefulSets, Kubeflow's, Ray's...) are left
# out, so that nothing else in the testbed depends on Kueue running. Each
# clientConfig becomes url: @KUEUE_WEBHOOK_URL@/<path> with caBundle; the
# pod webhooks get upstream's namespaceSelector (not kube-system or
# kueue-system) and an objectSelector: only pods labelled
# kueue.x-k8s.io/queue-name reach Kueue, so no other pod depends on it.
kueue_webhooks_template() {
  awk '
    function flush(   i, keep) {
      if (n == 0) return
      keep = 0
      for (i = 1; i <= n; i++)
        if (buf[i] == "    - kueue.x-k8s.io" || buf[i] == "    - \"\"") keep = 1
      if (keep) for (i = 1; i <= n; i++) print buf[i]
      n = 0
    }
    /^- / || /^---/ || /^[a-z]/ { flush() }
    /^- / { n = 0; inentry = 1 }
    /^---/ || /^[a-z]/ { inentry = 0 }
    !inentry {
      if ($0 ~ /^  name: (mutating|validating)-webhook-configuration$/) sub(/name: /, "name: kueue-")
      print; next
    }
    /^    service:$/ || /^      name: webhook-service$/ || /^      namespace: system$/ { next }
    /^      path: / {
      buf[++n] = "    url: @KUEUE_WEBHOOK_URL@" $2
      buf[++n] = "    caBundle: @KUEUE_CA_BUNDLE@"
      next
    }
    /^  name: [mv]pod\.kb\.io$/ {
      buf[++n] = $0
      buf[++n] = "  namespaceSelector:"
      buf[++n] = "    matchExpressions:"
      buf[++n] = "    - key: kubernetes.io/metadata.name"
      buf[++n] = "      operator: NotIn"
      buf[++n] = "      values: [kube-system, kueue-system]"
      buf[++n] = "  objectSelector:"
      buf[++n] = "    matchExpressions:"
      buf[++n] = "    - key: kueue.x-k8s.io/queue-name"
      buf[++n] = "      operator: Exists"
      next
    }
    { buf[++n] = $0 }
    END { flush() }'
}

# ------------------------------------------------------------ up, down ---

KUEUE_WEBHOOKS=(kueue-mutating-webhook-configuration kueue-validating-webhook-configuration)
KUEUE_FINALIZER=kueue.x-k8s.io/managed   # on the pods it manages
kueue_dir() { echo "$RUN_DIR/kueue"; }
kueue_running() { is_ours kueue; }

# The sample queue: one flavor, one ClusterQueue with a small quota (so a
# test can exceed it), one LocalQueue pointing at it.
KUEUE_FLAVOR=default-flavor
KUEUE_CLUSTER_QUEUE=ringmaster-cq
KUEUE_LOCAL_QUEUE=ringmaster-queue
KUEUE_QUOTA_CPU=4
KUEUE_QUOTA_MEMORY=16Gi

kueue_ready() { curl -fsS --max-time 2 "http://127.0.0.1:$KUEUE_HEALTH_PORT/readyz" >/dev/null; }

# The pod webhook is in force once a server-side dry run of a labelled pod
# comes back gated (the API server picks up a new webhook configuration a
# moment after it is created).
kueue_webhook_in_force() {
  kctl -n "$1" create --dry-run=server -o jsonpath='{.spec.schedulingGates[*].name}' -f - <<EOF | grep -w kueue.x-k8s.io/admission >/dev/null
apiVersion: v1
kind: Pod
metadata:
  generateName: kueue-probe-
  labels: {kueue.x-k8s.io/queue-name: $KUEUE_LOCAL_QUEUE}
spec:
  containers: [{name: c, image: kueue.invalid/probe:1}]
EOF
}

# kueue_wait SECONDS WHAT COMMAND...: poll; fail (stopping Kueue again) if
# Kueue exits or the time runs out.
kueue_wait() {
  local secs=$1 what=$2; shift 2
  local deadline=$(( $(now_ms) + secs * 1000 ))
  until "$@" >/dev/null 2>&1; do
    if ! kueue_running || [ "$(now_ms)" -ge "$deadline" ]; then
      log "kueue: $(kueue_running && echo "timed out after ${secs}s waiting for" || echo "exited while waiting for") $what"
      log "kueue: last lines of $RUN_DIR/logs/kueue.log:"
      tail -n 25 "$RUN_DIR/logs/kueue.log" 2>/dev/null | sed 's/^/    /' >&2
      kueue_fail "up failed"
    fi
    sleep 0.2
  done
}

# kueue_fail MESSAGE: undo what up did so far, then die.
kueue_fail() { kueue_down >/dev/null 2>&1 || true; die "kueue: $1 (Kueue removed again)"; }

kueue_crds_established() {
  local n
  n=$(kctl get crd -o jsonpath='{range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Established")].status}{"\n"}{end}' 2>/dev/null |
        grep -c '\.kueue\.x-k8s\.io True$') || true
  [ "${n:-0}" -ge "$KUEUE_NCRDS" ]
}

kueue_up() {
  local ns=default start
  while [ $# -gt 0 ]; do
    case $1 in
      --namespace|-n) [ $# -ge 2 ] || die "kueue up: $1 needs a value"; ns=$2; shift 2 ;;
      *) die "usage: scripts/testbed kueue up [--namespace NS]" ;;
    esac
  done
  start=$(now_ms)
  require_up
  local qdir kdir; qdir=$(component_dir kueue); kdir=$(kueue_dir)
  is_built "$qdir" kueue || die "kueue is not built: run 'scripts/testbed build kueue'"
  KUBECTL="$(component_dir kubernetes)/kubectl"
  exec 9>"$RUN_DIR.kueue.lock"
  flock -w 120 9 || die "another 'scripts/testbed kueue up/down' holds $RUN_DIR.kueue.lock"
  if kueue_running && [ -f "$kdir/ready" ]; then
    . "$kdir/ports.env"
    if kueue_ready; then
      kueue_samples "$ns"
      log "kueue: already running; LocalQueue $KUEUE_LOCAL_QUEUE in $ns"
      return 0
    fi
  fi
  if [ -e "$kdir" ] || [ -f "$RUN_DIR/pids/kueue" ]; then
    log "kueue: cleaning up an earlier Kueue that is not healthy"
    kueue_down
  fi
  mkdir -p "$kdir/certs"; chmod 700 "$kdir"

  # Ports: free ones that the testbed has not handed out.
  load_ports
  PORTS_TAKEN=" $(sed -n 's/^[A-Z_]*_PORT=//p' "$RUN_DIR/ports.env" | tr '\n' ' ')"
  local p
  : >"$kdir/ports.env"
  for p in KUEUE_WEBHOOK_PORT KUEUE_METRICS_PORT KUEUE_HEALTH_PORT; do
    free_port >"$kdir/.port"; echo "$p=$(<"$kdir/.port")" >>"$kdir/ports.env"
    PORTS_TAKEN+="$(<"$kdir/.port") "
  done
  rm -f "$kdir/.port"
  . "$kdir/ports.env"

  # The webhook's (and metrics') serving certificate, from the testbed CA.
  sign kueue-webhook "/CN=kueue-webhook" serverAuth "IP:127.0.0.1,DNS:localhost"
  mv "$RUN_DIR/pki/kueue-webhook.crt" "$kdir/certs/tls.crt"
  mv "$RUN_DIR/pki/kueue-webhook.key" "$kdir/certs/tls.key"
  [ -s "$kdir/certs/tls.crt" ] || kueue_fail "certificate generation failed (openssl)"
  local url="https://127.0.0.1:$KUEUE_WEBHOOK_PORT" ca
  ca=$(base64 -w0 <"$RUN_DIR/pki/ca.crt")

  # The CRDs, conversion webhooks pointing at Kueue.
  KUEUE_NCRDS=$(find "$qdir/crds" -name '*.yaml' | wc -l)
  local f
  for f in "$qdir"/crds/*.yaml; do
    sed -e "s#@KUEUE_CONVERT_URL@#$url/convert#" -e "s#@KUEUE_CA_BUNDLE@#$ca#" "$f"
    echo "---"
  done | kctl apply --server-side --field-manager=ringmaster-testbed -f - >/dev/null ||
    kueue_fail "applying the CRDs failed"
  local deadline=$(( $(now_ms) + 60000 ))
  until kueue_crds_established; do
    [ "$(now_ms)" -lt "$deadline" ] || kueue_fail "the CRDs are not Established after 60s"
    sleep 0.2
  done
  log "kueue: $KUEUE_NCRDS CRDs Established ($(elapsed "$start"))"

  # The configuration: webhooks and metrics on 127.0.0.1, certificates ours,
  # no leader election, no visibility API server, pods as the integration.
  cat >"$kdir/config.yaml" <<EOF
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health:
  healthProbeBindAddress: 127.0.0.1:$KUEUE_HEALTH_PORT
metrics:
  bindAddress: 127.0.0.1:$KUEUE_METRICS_PORT
webhook:
  host: 127.0.0.1
  port: $KUEUE_WEBHOOK_PORT
  certDir: $kdir/certs
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
manageJobsWithoutQueueName: false
managedJobsNamespaceSelector:
  matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values: [kube-system, kueue-system]
featureGates:
  VisibilityOnDemand: false
integrations:
  frameworks:
  - pod
EOF
  kueue_start_process "$qdir" "$kdir"
  log "kueue: ready ($(elapsed "$start"))"

  # Its webhooks, then the sample queue (which Kueue's own webhooks check).
  sed -e "s#@KUEUE_WEBHOOK_URL@#$url#" -e "s#@KUEUE_CA_BUNDLE@#$ca#" "$qdir/webhooks.yaml" |
    kctl apply --server-side --field-manager=ringmaster-testbed -f - >/dev/null ||
    kueue_fail "registering its webhooks failed"
  kueue_samples "$ns" || kueue_fail "creating the sample queue failed"
  kueue_wait 60 "the ClusterQueue $KUEUE_CLUSTER_QUEUE to be Active" kueue_cq_active
  kueue_wait 60 "its pod webhook to gate a labelled pod (server-side dry run in $ns)" kueue_webhook_in_force "$ns"
  touch "$kdir/ready"
  log "kueue: up in $(elapsed "$start"): LocalQueue $KUEUE_LOCAL_QUEUE in $ns -> ClusterQueue $KUEUE_CLUSTER_QUEUE ($KUEUE_QUOTA_CPU cpu, $KUEUE_QUOTA_MEMORY); webhooks $url; log $RUN_DIR/logs/kueue.log"
}

# kueue_start_process QDIR KDIR: the controller with the configuration up
# wrote, until its /readyz answers.
kueue_start_process() {
  KUEUE_METRICS_CERT_DIR="$2/certs" start kueue "$1/kueue" --config "$2/config.yaml" --zap-log-level=2
  kueue_wait 90 "its /readyz on 127.0.0.1:$KUEUE_HEALTH_PORT" kueue_ready
}

# kueue_pause / kueue_resume: stop the controller alone, its webhooks still
# registered (failurePolicy Fail: creating a labelled pod then fails with
# the API server's InternalError, as on a cluster whose Kueue is down), and
# start it again with the same configuration.
kueue_pause() {
  kueue_running || die "kueue pause: Kueue is not running"
  stop kueue
  log "kueue: paused (its webhooks are still registered: labelled pods cannot be created)"
}
kueue_resume() {
  local kdir; kdir=$(kueue_dir)
  [ -f "$kdir/ready" ] || die "kueue resume: Kueue is not up (run 'scripts/testbed kueue up')"
  kueue_running && { log "kueue: already running"; return 0; }
  . "$kdir/ports.env"
  KUBECTL="$(component_dir kubernetes)/kubectl"
  kueue_start_process "$(component_dir kueue)" "$kdir"
  log "kueue: resumed"
}

kueue_cq_active() {
  [ "$(kctl get clusterqueue "$KUEUE_CLUSTER_QUEUE" \
        -o jsonpath='{.status.conditions[?(@.type=="Active")].status}')" = True ]
}

# kueue_samples NS: the flavor, the ClusterQueue and a LocalQueue in NS
# (idempotent: `kueue up -n OTHER` on a running Kueue adds a LocalQueue).
kueue_samples() {
  local ns=$1
  if ! kctl get namespace "$ns" >/dev/null 2>&1; then
    kctl create namespace "$ns" >/dev/null || return 1
    echo "$ns" >>"$(kueue_dir)/namespaces"   # down deletes it again
  fi
  kctl apply --server-side --field-manager=ringmaster-testbed -f - >/dev/null <<EOF
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: $KUEUE_FLAVOR
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: $KUEUE_CLUSTER_QUEUE
spec:
  namespaceSelector: {}
  queueingStrategy: BestEffortFIFO
  preemption:
    withinClusterQueue: LowerPriority
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: $KUEUE_FLAVOR
      resources:
      - name: cpu
        nominalQuota: "$KUEUE_QUOTA_CPU"
      - name: memory
        nominalQuota: $KUEUE_QUOTA_MEMORY
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: $KUEUE_LOCAL_QUEUE
  namespace: $ns
spec:
  clusterQueue: $KUEUE_CLUSTER_QUEUE
EOF
}

# kueue_down [teardown]: stop Kueue and remove all of it from the testbed:
# its webhook registrations first (so nothing waits on it any more), then
# the process, Kueue's finalizer on pods, every object of its CRDs
# (finalizers dropped) and the CRDs. Works with Kueue crashed, and is safe
# to repeat. With "teardown" (the testbed's own down, which removes etcd's
# data anyway) the CRDs and their objects are left to go with it; the pods'
# finalizers are still removed, so that the real node's pods can go.
kueue_down() {
  local mode=${1:-} kdir; kdir=$(kueue_dir)
  [ -e "$kdir" ] || [ -f "$RUN_DIR/pids/kueue" ] || return 0
  KUBECTL="$(component_dir kubernetes)/kubectl"
  local api=1
  load_ports
  api_ready >/dev/null 2>&1 || api=0
  if [ $api = 1 ]; then
    kctl delete mutatingwebhookconfiguration,validatingwebhookconfiguration \
      "${KUEUE_WEBHOOKS[@]}" --ignore-not-found --wait=false >/dev/null 2>&1 ||
      log "kueue: down: deleting the webhook configurations failed"
  fi
  stop kueue
  if [ $api = 1 ]; then
    # Pods keep Kueue's finalizer until Kueue removes it: remove it here, or
    # their deletion would wait forever.
    kctl get pods -A -o jsonpath='{range .items[*]}{.metadata.namespace} {.metadata.name} {.metadata.finalizers}{"\n"}{end}' 2>/dev/null |
      grep -F "\"$KUEUE_FINALIZER\"" | while read -r ns name _; do
        kueue_drop_finalizer "$ns" "$name" ||
          log "kueue: down: could not remove $KUEUE_FINALIZER from pod $ns/$name"
      done || true
    [ "$mode" != teardown ] || { rm -rf "$kdir"; return 0; }
    # Kueue's objects carry its finalizers: drop them, then the CRDs (which
    # delete what is left).
    local crds
    crds=$(kctl get crd -o name 2>/dev/null | sed -n 's#^customresourcedefinition.apiextensions.k8s.io/\(.*\.kueue\.x-k8s\.io\)$#\1#p' | paste -sd, -)
    if [ -n "$crds" ]; then
      kctl get "$crds" -A -o jsonpath='{range .items[*]}{.kind} {.metadata.namespace}/{.metadata.name} {.metadata.finalizers}{"\n"}{end}' 2>/dev/null |
        while read -r kind obj fin; do
          [ -n "$fin" ] || continue
          if [ -n "${obj%%/*}" ]; then set -- -n "${obj%%/*}"; else set --; fi
          kctl "$@" patch "${kind,,}.kueue.x-k8s.io" "${obj#*/}" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 ||
            log "kueue: down: could not remove the finalizers of $kind $obj"
        done || true
      # shellcheck disable=SC2086  # one name per CRD
      kctl delete crd ${crds//,/ } --wait=false >/dev/null 2>&1 || log "kueue: down: deleting Kueue's CRDs failed"
    fi
    local deadline=$(( $(now_ms) + 60000 ))
    # grep without -q: it reads to the end, so kubectl never dies of SIGPIPE,
    # which under pipefail would end the wait at once with the CRDs still there.
    while kctl get crd -o name 2>/dev/null | grep '\.kueue\.x-k8s\.io$' >/dev/null; do
      [ "$(now_ms)" -lt "$deadline" ] || { log "kueue: down: Kueue's CRDs are still there after 60s"; break; }
      sleep 0.2
    done
    if [ -f "$kdir/namespaces" ]; then
      kctl delete namespace $(cat "$kdir/namespaces") --ignore-not-found --wait=false >/dev/null 2>&1 ||
        log "kueue: down: deleting the namespaces it created failed"
    fi
  fi
  rm -rf "$kdir"
}

# kueue_drop_finalizer NS POD: the pod's finalizers less Kueue's.
kueue_drop_finalizer() {
  local f list="" sep=""
  for f in $(kctl -n "$1" get pod "$2" -o jsonpath='{range .metadata.finalizers[*]}{@}{"\n"}{end}'); do
    [ "$f" = "$KUEUE_FINALIZER" ] && continue
    list+="$sep\"$f\""; sep=,
  done
  kctl -n "$1" patch pod "$2" --type=merge -p "{\"metadata\":{\"finalizers\":[$list]}}" >/dev/null
}

kueue_status() {
  local kdir; kdir=$(kueue_dir)
  if kueue_running; then
    . "$kdir/ports.env"
    if [ -f "$kdir/ready" ] && kueue_ready; then
      echo "kueue: up (pid $(recorded_pid kueue)), webhooks https://127.0.0.1:$KUEUE_WEBHOOK_PORT, log $RUN_DIR/logs/kueue.log"
      return 0
    fi
    echo "kueue: running (pid $(recorded_pid kueue)) but not ready"; return 1
  elif [ -f "$RUN_DIR/pids/kueue" ]; then echo "kueue: DEAD (see $RUN_DIR/logs/kueue.log)"; return 1
  else echo "kueue: down"; return 1
  fi
}

cmd_kueue() {
  local sub=${1:-}
  [ $# -eq 0 ] || shift
  case $sub in
    up) kueue_up "$@" ;;
    down)
      require_up
      exec 9>"$RUN_DIR.kueue.lock"
      flock -w 120 9 || die "another 'scripts/testbed kueue up/down' holds $RUN_DIR.kueue.lock"
      kueue_down; log "kueue: down" ;;
    status) kueue_status ;;
    pause|resume)
      require_up
      exec 9>"$RUN_DIR.kueue.lock"
      flock -w 120 9 || die "another 'scripts/testbed kueue' command holds $RUN_DIR.kueue.lock"
      "kueue_$sub" ;;
    *) die "usage: scripts/testbed kueue up [--namespace NS] | down | status | pause | resume" ;;
  esac
}
