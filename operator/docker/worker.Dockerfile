# A base image for training containers: the agent (libringmaster, its headers
# and CMake/pkg-config files under /opt/ringmaster, self-contained: it needs
# libc and libstdc++ from the image, nothing else) and the ringmaster-worker
# program. It is made of the wheel's files: the agent's release archive
# (scripts/agent-archive) in dist/. Build from the repository root:
#   docker build -f operator/docker/worker.Dockerfile -t ghcr.io/ringmaster/worker:0.1.0 .
# scripts/images makes the archive, builds it the same way (buildah) and
# loads it into a cluster.

# ---- unpack: the archive to /opt/ringmaster (the tarball stays here) -------
FROM debian:12-slim AS unpack
COPY dist/ringmaster-agent-*-linux-x86_64.tar.gz /tmp/
RUN mkdir /opt/ringmaster \
    && tar -xzf /tmp/ringmaster-agent-*-linux-x86_64.tar.gz -C /opt/ringmaster --strip-components=1 --no-same-owner

# ---- the image --------------------------------------------------------------
FROM debian:12-slim
RUN useradd --uid 65532 --create-home --shell /usr/sbin/nologin trainer
COPY --from=unpack /opt/ringmaster /opt/ringmaster
ENV PATH=/opt/ringmaster/bin:$PATH
USER 65532:65532
# TF_CONFIG and RINGMASTER_* come from the operator.
EXPOSE 2222
ENTRYPOINT ["ringmaster-worker"]
