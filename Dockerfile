# Switchboard in a container: the release binary, the embedded models, nothing else.
#
#   docker build -t switchboard .
#   docker run -p 8080:8080 -v switchboard-data:/data switchboard
#
# The first start on an empty /data prints the first API key to the log. Two nodes with
# PostgreSQL and nginx in front: compose.yaml. scripts/container-check builds this image and
# probes it.

# The build: the Debian packages the crates link against, then the release binary.
FROM rust:1.95-bookworm AS build
RUN apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends \
        pkg-config cmake libopus-dev libespeak-ng-dev libclang-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin switchboard \
    && install -D target/release/switchboard /out/switchboard

# The models: the pinned packages, checked against their sha256 (scripts/fetch-models).
FROM debian:bookworm-slim AS models
RUN apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends python3 python3-pip ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY scripts/fetch-models /fetch-models
RUN SWITCHBOARD_MODELS_DIR=/models /fetch-models

# The runtime: the shared libraries the binary opens, a user of its own, /data for state.
FROM debian:bookworm-slim
RUN apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends \
        libopus0 libespeak-ng1 espeak-ng-data ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin switchboard \
    && install -d -o switchboard -g switchboard -m 0700 /data
COPY --from=build /out/switchboard /usr/local/bin/switchboard
COPY --from=models /models /models
ENV SWITCHBOARD_BIND=0.0.0.0:8080 \
    SWITCHBOARD_DATA_DIR=/data \
    SWITCHBOARD_MODELS_DIR=/models
USER switchboard
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8080/health >/dev/null || exit 1
STOPSIGNAL SIGTERM
ENTRYPOINT ["switchboard"]
CMD ["serve"]
