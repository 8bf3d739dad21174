#!/bin/sh
# Stands in for the docker CLI in tests (no engine here): logs every call to
# $DOCKER_CONFIG/calls.log, and `run` blocks like an attached container until killed.
log="${DOCKER_CONFIG:?DOCKER_CONFIG must name a directory}/calls.log"
printf '%s\n' "$*" >> "$log"
if [ -e "$DOCKER_CONFIG/daemon-down" ]; then  # a client with no daemon to talk to
    echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?' >&2
    [ "$1" = version ] && echo 'Client: Docker Engine' && exit 1
    exit 125
fi
if [ "$1" = image ] && [ -e "$DOCKER_CONFIG/no-image" ]; then
    echo "Error: No such image: $6" >&2
    exit 1
fi
if [ "$1" = run ]; then
    printf 'ARENA_SEAT_TOKEN=%s\n' "$ARENA_SEAT_TOKEN" >> "$log"
    printf 'env: %s\n' "$(env | cut -d= -f1 | sort | tr '\n' ' ')" >> "$log"
    printf 'container starting\n' >&2
    exec sleep 1000
fi
exit 0
