#!/usr/bin/env bash
# The images built from the repository's Dockerfiles (scripts/images build,
# which the README's test command runs before ctest) are imported into the
# real node's containerd, and the kubelet reports them on the node.
. "$(dirname "$0")/lib_real.sh"
IMAGES="$REPO_ROOT/scripts/images"
"$IMAGES" load || fail "scripts/images load failed"
for img in ghcr.io/ringmaster/operator:0.1.0 ghcr.io/ringmaster/worker:0.1.0 ghcr.io/ringmaster/keras-example:0.1.0; do
  wait_for 60 "$img on node $REAL_NODE" bash -c \
    "kubectl get node $REAL_NODE -o jsonpath='{range .status.images[*]}{.names}{\"\\n\"}{end}' | grep -qF '\"$img\"'"
done
pass "the operator, worker and keras-example images are on $REAL_NODE"
