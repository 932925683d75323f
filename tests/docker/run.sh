#!/usr/bin/env bash
# Validates the docker files without needing an engine (tests/run.sh step "docker"):
# `docker compose config -q` when the compose plugin works, then the static cross-checks of
# docker/compose.yaml, docker/Dockerfile and config/docker.toml in check_compose.py.
# The container's command and config are exercised by tests/rdkafka/tests/docker.rs.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
PY=${PYTHON:-tests/python/.venv/bin/python}
if docker compose version >/dev/null 2>&1; then
    echo "docker compose config -q"
    docker compose -f docker/compose.yaml config -q
    SKIFF_ADMIN_PASSWORD=check docker compose -f docker/compose.yaml -f docker/compose.sasl-ssl.yaml config -q
else
    echo "docker compose is not available: static checks only"
fi
"$PY" tests/docker/check_compose.py
