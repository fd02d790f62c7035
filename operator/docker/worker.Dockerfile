# A base image for training containers: the agent (libringmaster and the
# ringmaster-worker program). Build from the repository root:
#   docker build -f operator/docker/worker.Dockerfile -t ghcr.io/ringmaster/worker:0.1.0 .
# (Not built in this repository's CI: the build machines have no container runtime.)
FROM debian:12 AS build
RUN apt-get update && apt-get install -y --no-install-recommends \
      cmake ninja-build g++ libcpprest-dev libssl-dev libyaml-cpp-dev nlohmann-json3-dev \
      libgtest-dev libgmock-dev protobuf-compiler libprotobuf-dev libgrpc++-dev protobuf-compiler-grpc \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DRINGMASTER_BUILD_TESTS=OFF -DRINGMASTER_E2E=OFF \
    && cmake --build /build \
    && cmake --install /build --prefix /opt/ringmaster

FROM debian:12-slim
RUN apt-get update && apt-get install -y --no-install-recommends \
      libyaml-cpp0.7 libprotobuf32 libgrpc++1.51 ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --uid 65532 --create-home --shell /usr/sbin/nologin trainer
COPY --from=build /opt/ringmaster /opt/ringmaster
COPY --from=build /build/bin/ringmaster-worker /usr/local/bin/ringmaster-worker
ENV PATH=/opt/ringmaster/bin:$PATH LD_LIBRARY_PATH=/opt/ringmaster/lib
USER 65532:65532
# TF_CONFIG and RINGMASTER_* come from the operator.
EXPOSE 2222
ENTRYPOINT ["ringmaster-worker"]
