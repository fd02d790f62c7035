# The operator image: ringmaster-operator, the shared libraries it loads and
# the CA bundle, on an empty base (no shell, no package manager). Build from
# the repository root:
#   docker build -f operator/docker/operator.Dockerfile -t ghcr.io/ringmaster/operator:0.1.0 .
# scripts/images builds it the same way (buildah) and loads it into a cluster.

# ---- build: the operator alone (no agent, no Python, no tests) -------------
FROM debian:12 AS build
RUN apt-get update && apt-get install -y --no-install-recommends \
      cmake ninja-build g++ ca-certificates \
      libcpprest-dev libssl-dev libyaml-cpp-dev nlohmann-json3-dev prometheus-cpp-dev libcli11-dev \
      protobuf-compiler libprotobuf-dev libgrpc++-dev protobuf-compiler-grpc \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Only what the build reads (so an edit to examples/ or tests/ rebuilds nothing here).
COPY CMakeLists.txt ./
COPY cmake cmake/
COPY api api/
COPY proto proto/
COPY common common/
COPY agent agent/
COPY cli cli/
COPY operator operator/
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DRINGMASTER_BUILD_TESTS=OFF -DRINGMASTER_E2E=OFF \
      -DRINGMASTER_WITH_NCCL=OFF \
    && cmake --build /build --target ringmaster-operator \
    && strip /build/bin/ringmaster-operator
# The image's whole file system: the program, every library ldd names (at
# the same paths), and the CA bundle (a kubeconfig's server may be a public
# endpoint; in a pod the service account's own CA is used).
RUN mkdir -p /rootfs/usr/local/bin /rootfs/etc/ssl/certs /rootfs/tmp \
    && cp /build/bin/ringmaster-operator /rootfs/usr/local/bin/ \
    && ldd /build/bin/ringmaster-operator | grep -oE '/[^ ]+' | sort -u \
       | while read -r lib; do cp --parents -L "$lib" /rootfs/; done \
    && cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ \
    && chmod 1777 /rootfs/tmp \
    && ! ldd /build/bin/ringmaster-operator | grep 'not found'

# ---- the image --------------------------------------------------------------
FROM scratch
COPY --from=build /rootfs/ /
# The Deployment runs it as 65532 with a read-only root file system.
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/ringmaster-operator"]
