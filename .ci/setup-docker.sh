#!/usr/bin/env bash
# Make the Docker sandbox usable: install docker.io and debootstrap if missing, start dockerd if no daemon answers
# (no bridge network and no iptables: containers get no network at all), wait for it, then build or reuse the
# offline sandbox image. Idempotent: a second run finds everything in place and returns in about a second.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3

need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v debootstrap >/dev/null || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
    echo "setup-docker: installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${need[@]}" >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
    echo "setup-docker: starting dockerd (log: /tmp/dockerd.log)"
    nohup dockerd --bridge=none --iptables=false >>/tmp/dockerd.log 2>&1 &
    for _ in $(seq 60); do
        docker info >/dev/null 2>&1 && break
        sleep 1
    done
    if ! docker info >/dev/null 2>&1; then
        echo "setup-docker: dockerd did not answer within 60 s; last lines of /tmp/dockerd.log:" >&2
        tail -20 /tmp/dockerd.log >&2
        exit 1
    fi
fi
echo "setup-docker: daemon up ($(docker info --format '{{.ServerVersion}}'))"

echo "setup-docker: sandbox image $("$PY" -m agentgym.sandbox.image)"
