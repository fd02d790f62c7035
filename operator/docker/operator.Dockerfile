# The operator image. Build from the repository root:
#   docker build -f operator/docker/operator.Dockerfile -t ghcr.io/ringmaster/operator:0.1.0 .
# scripts/images builds it the same way (buildah) and loads it into a cluster.

# ---- build: the C++ programs and the Python wheel -------------------------
# This stage's text is identical in operator/docker/operator.Dockerfile,
# operator/docker/worker.Dockerfile and examples/keras/Dockerfile (which stops
# before its last RUN): a builder's layer cache (docker, or buildah --layers as
# scripts/images runs it) builds it once for all three images. Keep them in
# step. The agent compiles once: the wheel's CMake tree (/build) then builds
# ringmaster-operator and ringmaster-worker from the same objects. Tests,
# benchmarks, fuzzers and the NCCL/CUDA backend are off (the images are for
# CPU; docs/gpu.md says how to build the agent in a CUDA image).
FROM debian:12 AS build
RUN apt-get update && apt-get install -y --no-install-recommends \
      cmake ninja-build g++ python3-dev python3-venv \
      libcpprest-dev libssl-dev libyaml-cpp-dev nlohmann-json3-dev prometheus-cpp-dev libcli11-dev \
      protobuf-compiler libprotobuf-dev libgrpc++-dev protobuf-compiler-grpc \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/build \
    && /opt/build/bin/pip install --no-cache-dir --disable-pip-version-check scikit-build-core==1.1.2 nanobind==3.1.0 nanobind-backend==1.0.0
WORKDIR /src
# Only what the build reads (so an edit to examples/ or tests/ rebuilds nothing here).
COPY CMakeLists.txt pyproject.toml ./
COPY cmake cmake/
COPY api api/
COPY proto proto/
COPY agent agent/
COPY bench/common bench/common/
COPY cli cli/
COPY operator operator/
COPY python python/
COPY docs/python.md docs/
RUN /opt/build/bin/pip wheel . --no-deps --no-build-isolation --disable-pip-version-check -w /wheels \
      --config-settings=build-dir=/build --config-settings=cmake.build-type=Release \
      --config-settings=cmake.define.RINGMASTER_WITH_NCCL=OFF
RUN cmake --build /build --target ringmaster-operator ringmaster-worker ringmaster_static \
    && strip /build/bin/ringmaster-operator \
    && cmake --install /build --component agent --prefix /opt/ringmaster --strip

# ---- the image: the operator and the shared libraries it links ------------
FROM debian:12-slim
RUN apt-get update && apt-get install -y --no-install-recommends libcpprest2.10 libyaml-cpp0.7 \
      libprometheus-cpp-pull1.0 ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/bin/ringmaster-operator /usr/local/bin/ringmaster-operator
# The Deployment runs it as 65532 with a read-only root file system.
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/ringmaster-operator"]
