# scripts/testbed.d/helm.sh: helm, for the chart's tests (pins in helm/).
# Built only; nothing runs.
ALL_COMPONENTS+=(helm)

helm_module() { echo helm.sh/helm/v3; }
helm_outputs() { echo helm; }
helm_build() {  # OUTDIR GO VERSION
  "$2" build -trimpath -ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$3" \
    -o "$1/helm" helm.sh/helm/v3/cmd/helm || return 1
}
