#!/usr/bin/env bash
# bench/operator/kubeflow-qps.sh: print the path of a training-operator
# (the testbed's pin) that takes its kube client's QPS and burst from
# --kube-api-qps and --kube-api-burst; build it first if it is not cached.
# v1.9 and later have both flags: their build is the testbed's (webhook on
# 127.0.0.1). Before v1.9 they are added, as follows.
#
# v1.8.1's main.go has no such flags: it passes ctrl.GetConfigOrDie() to the
# manager, and controller-runtime (v0.17.2, pkg/client/config/config.go)
# sets QPS 20 / burst 30 when the kubeconfig leaves them at zero. The
# benchmark runs Kubeflow both ways: with those defaults (the testbed's own
# binary) and with the QPS and burst Ringmaster uses. main.go is built with
# two changes only, through a -overlay as the testbed does (the module
# cache itself cannot be overlaid): the testbed's (webhook server on
# 127.0.0.1) and the manager's rest.Config taking the two flags when they
# are set (> 0). Nothing else differs from the testbed's build.
#
#   bench/operator/kubeflow-qps.sh        (prints the binary's path)
# Needs the Go module cache the testbed's build filled (no network).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PINS="$ROOT/scripts/testbed.d/kubeflow"
CACHE_ROOT=${RINGMASTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ringmaster}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
SELF_HASH=$(cat "$0" "$PINS/go.mod" "$PINS/go.sum" | sha256sum | cut -c1-12)
OUT="$CACHE_ROOT/bench-operator/training-operator-qps-$SELF_HASH"
if [ -x "$OUT/training-operator" ]; then echo "$OUT/training-operator"; exit 0; fi

export GOTOOLCHAIN=local GOWORK=off GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0
cd "$PINS"
src=$("$GO" list -m -f '{{.Dir}}' github.com/kubeflow/training-operator) ||
  { echo "kubeflow-qps: the training-operator module is not in the Go module cache (run scripts/testbed build kubeflow)" >&2; exit 1; }
main="$src/cmd/training-operator.v1/main.go"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if grep -qF '"kube-api-qps"' "$main"; then
  # v1.9 and later have both flags of their own: only the testbed's change.
  sed -e 's/^\(\t*\)Port: webhookServerPort,$/\1Host: "127.0.0.1", Port: webhookServerPort,/' "$main" >"$work/main.go"
  grep -qF 'Host: "127.0.0.1", Port: webhookServerPort,' "$work/main.go" ||
    { echo "kubeflow-qps: could not patch the webhook host into $main" >&2; exit 1; }
else
sed -e 's/^\(\t*\)Port: webhookServerPort,$/\1Host: "127.0.0.1", Port: webhookServerPort,/' \
    -e 's/ctrl\.NewManager(ctrl\.GetConfigOrDie(), /ctrl.NewManager(benchRestConfig(), /' \
    -e 's|^\(\t\)clientgoscheme "k8s.io/client-go/kubernetes/scheme"$|&\n\1"k8s.io/client-go/rest"|' \
    "$main" >"$work/main.go"
for want in 'Host: "127.0.0.1", Port: webhookServerPort,' 'ctrl.NewManager(benchRestConfig(), ' '"k8s.io/client-go/rest"'; do
  grep -qF "$want" "$work/main.go" || { echo "kubeflow-qps: could not patch '$want' into $main" >&2; exit 1; }
done
cat >>"$work/main.go" <<'GO'

// Added by bench/operator/kubeflow-qps.sh: the kube client's QPS and burst.
var (
	benchKubeAPIQPS   = flag.Float64("kube-api-qps", 0, "kube client QPS (0: controller-runtime's default, 20)")
	benchKubeAPIBurst = flag.Int("kube-api-burst", 0, "kube client burst (0: controller-runtime's default, 30)")
)

func benchRestConfig() *rest.Config {
	cfg := ctrl.GetConfigOrDie()
	if *benchKubeAPIQPS > 0 {
		cfg.QPS = float32(*benchKubeAPIQPS)
	}
	if *benchKubeAPIBurst > 0 {
		cfg.Burst = *benchKubeAPIBurst
	}
	setupLog.Info("kube client rate limits", "qps", cfg.QPS, "burst", cfg.Burst)
	return cfg
}
GO
fi
printf '{"Replace":{"%s":"%s"}}\n' "$PINS/cmd/training-operator.v1/main.go" "$work/main.go" >"$work/overlay.json"
mkdir -p "$OUT.tmp"
echo "kubeflow-qps: building the training-operator with --kube-api-qps/--kube-api-burst into $OUT" >&2
"$GO" build -trimpath -overlay="$work/overlay.json" -ldflags="-s -w" \
  -o "$OUT.tmp/training-operator" ./cmd/training-operator.v1 ||
  { rm -rf "$OUT.tmp"; echo "kubeflow-qps: go build failed" >&2; exit 1; }
rm -rf "$OUT"; mv "$OUT.tmp" "$OUT"
echo "$OUT/training-operator"
