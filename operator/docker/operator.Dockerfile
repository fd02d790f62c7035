# The operator image. Build from the repository root:
#   docker build -f operator/docker/operator.Dockerfile -t ghcr.io/ringmaster/operator:0.1.0 .
# (Not built in this repository's CI: the build machines have no container runtime.)
FROM debian:12 AS build
RUN apt-get update && apt-get install -y --no-install-recommends \
      cmake ninja-build g++ libcpprest-dev libssl-dev libyaml-cpp-dev nlohmann-json3-dev \
      libgtest-dev libgmock-dev protobuf-compiler libprotobuf-dev libgrpc++-dev protobuf-compiler-grpc \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DRINGMASTER_BUILD_TESTS=OFF -DRINGMASTER_E2E=OFF \
    && cmake --build /build --target ringmaster-operator

FROM debian:12-slim
RUN apt-get update && apt-get install -y --no-install-recommends libcpprest2.10 libyaml-cpp0.7 ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/bin/ringmaster-operator /usr/local/bin/ringmaster-operator
# The Deployment runs it as 65532 with a read-only root file system.
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/ringmaster-operator"]
