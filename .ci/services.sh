#!/usr/bin/env bash
# `make services`: install and start what the full test suite needs beyond Python (Docker with the sandbox
# image, PostgreSQL's binaries, the sqlite3 shell, Debian's chromium). Needs root; as another user it says what to run.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v debootstrap >/dev/null || need+=(debootstrap)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v sqlite3 >/dev/null || need+=(sqlite3)
command -v chromium >/dev/null || need+=(chromium)  # the rollout viewer's browser tests

if [ "$(id -u)" -ne 0 ]; then
    echo "make services needs root to install packages and start dockerd. Run:" >&2
    [ ${#need[@]} -gt 0 ] && echo "  sudo apt-get install -y ${need[*]}" >&2
    echo "  sudo bash .ci/setup-docker.sh" >&2
    echo "or add your user to the docker group where a daemon already runs." >&2
    exit 1
fi
if [ ${#need[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${need[@]}" >/dev/null
fi
bash .ci/setup-docker.sh
echo "services: Docker and PostgreSQL are ready; make test now runs every test"
