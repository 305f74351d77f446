# Dockerfile -- ai-scheduler image: build on Debian bookworm, run on bookworm-slim.
#   docker build -t ai-scheduler:0.1.0 .
# The runtime image holds the binary, its shared libraries and CA certificates;
# it runs as an unprivileged user and needs no writable root filesystem.

FROM debian:bookworm AS build
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      gcc make pkg-config libc6-dev ca-certificates \
      libcurl4-openssl-dev libjansson-dev libyaml-dev libssl-dev libmicrohttpd-dev libgnutls28-dev libcmocka-dev libjemalloc-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# test/ is needed by the Makefile (deps.sh, bench tools), not by the image.
COPY Makefile ./
COPY pkg/ pkg/
COPY cmd/ cmd/
COPY test/ test/
RUN make -j"$(nproc)" bin/ai-scheduler CFLAGS="-O2 -g" \
 && cp bin/ai-scheduler /ai-scheduler \
 && strip --strip-debug /ai-scheduler \
 && /ai-scheduler --help >/dev/null

FROM debian:bookworm-slim
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates libcurl4 libjansson4 libyaml-0-2 libssl3 libmicrohttpd12 libgnutls30 libjemalloc2 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /ai-scheduler /usr/local/bin/ai-scheduler
RUN ln -s ai-scheduler /usr/local/bin/kubectl-pool && ln -s ai-scheduler /usr/local/bin/kubectl-queue
USER 65532:65532
EXPOSE 10261
ENTRYPOINT ["/usr/local/bin/ai-scheduler"]
CMD ["--config=/etc/ai-scheduler/config.yaml"]
