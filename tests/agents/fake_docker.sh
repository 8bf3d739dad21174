#!/bin/sh
# Stands in for the docker CLI in tests (no engine here): logs every call to
# $DOCKER_CONFIG/calls.log, and `run` blocks like an attached container until killed.
log="${DOCKER_CONFIG:?DOCKER_CONFIG must name a directory}/calls.log"
printf '%s\n' "$*" >> "$log"
if [ "$1" = run ]; then
    printf 'ARENA_SEAT_TOKEN=%s\n' "$ARENA_SEAT_TOKEN" >> "$log"
    printf 'env: %s\n' "$(env | cut -d= -f1 | sort | tr '\n' ' ')" >> "$log"
    printf 'container starting\n' >&2
    exec sleep 1000
fi
exit 0
