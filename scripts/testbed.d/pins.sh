# scripts/testbed.d/pins.sh: writing the pins of the Kubernetes control
# plane for a release (`scripts/testbed pin-kubernetes VERSION DIR`). The
# README's test command builds the one release pinned in kubernetes/; another
# (scripts/kubernetes-version) is pinned into a directory of its own.
#
# k8s.io/kubernetes points its staging modules at ./staging/src/... with
# replace directives, which only resolve inside its own repository. The pins
# replace each one by the published staging module of the same release
# (v0.MINOR.PATCH); the ones no built command imports (the code generator
# and the samples, not all published) by empty local stubs in unused/.

PIN_STUBS="code-generator sample-apiserver sample-cli-plugin sample-controller"

cmd_pin_kubernetes() {
  local ver=${1:-} dir=${2:-}
  [[ "$ver" =~ ^v?1\.([0-9]+)\.([0-9]+)$ ]] ||
    die "pin-kubernetes: VERSION must look like 1.37.2 (got '${ver}')"
  [ -n "$dir" ] || die "pin-kubernetes: say the pins' DIR"
  ver=v${ver#v}
  local staging=v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]} go go_version m src
  go=$(find_go); go_version=$(check_go "$go")
  mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
  export GOTOOLCHAIN=local GOWORK=off GOFLAGS="-mod=mod -buildvcs=false"
  src=$("$go" mod download -json "k8s.io/kubernetes@$ver" | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])') ||
    die "pin-kubernetes: the Go proxy has no k8s.io/kubernetes $ver"
  local godir; godir=$(awk '$1 == "go" { print $2; exit }' "$src/go.mod")
  rm -rf "$dir/unused" "$dir/go.sum"
  {
    echo "// Pins for scripts/testbed: the Kubernetes control plane (kube-apiserver,"
    echo "// kube-controller-manager, kube-scheduler, kubectl) and the real node's"
    echo "// kubelet and kube-proxy, built from k8s.io/kubernetes $ver."
    echo "// Written by \`scripts/testbed pin-kubernetes ${ver#v} DIR\` (testbed.d/pins.sh):"
    echo "// each staging module is the published one of the same release ($staging),"
    echo "// those no built command imports are empty stubs in unused/."
    echo "module ringmaster.local/testbed/kubernetes"
    echo
    echo "go $godir"
    echo
    echo "godebug default=go$(cut -d. -f1,2 <<<"$godir")"
    echo
    echo "require k8s.io/kubernetes $ver"
    echo
    echo "replace ("
    for m in $(sed -n '/^replace (/,/^)/p' "$src/go.mod" | awk '$2 == "=>" { print $1 }'); do
      local short=${m#k8s.io/}
      if [[ " $PIN_STUBS " == *" $short "* ]]; then
        mkdir -p "$dir/unused/$short"
        printf 'module %s\n\ngo %s\n' "$m" "$godir" >"$dir/unused/$short/go.mod"
        echo "	$m => ./unused/$short"
      else
        echo "	$m => $m $staging"
      fi
    done
    echo ")"
  } >"$dir/go.mod"
  cat >"$dir/tools.go" <<'EOF'
//go:build tools

// Package tools names the commands scripts/testbed builds, so that
// `go mod tidy` keeps their dependencies in go.mod and go.sum.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
EOF
  log "pin-kubernetes: resolving $ver's modules with $go_version (go mod tidy)"
  (cd "$dir" && "$go" mod tidy) || die "pin-kubernetes: go mod tidy failed in $dir"
  log "pin-kubernetes: $ver pinned in $dir"
}
