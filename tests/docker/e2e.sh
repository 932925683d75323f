#!/usr/bin/env bash
# Builds the Skiff image and runs it with docker/compose.yaml the way a user would, against a
# real docker engine (tests/run.sh step "docker image" starts one with the shared
# docker-engine.sh when it can; run by hand wherever `docker compose` works):
#
#   bash tests/docker/e2e.sh
#
# Checks, one PASS/FAIL line each: the image builds (from a private copy of the checkout, as
# with umask 077: the image must not depend on the checkout's permissions), its size and the
# binary's, the container becomes healthy, runs as uid 10001, publishes on 127.0.0.1 only,
# kcat from the host (HOST listener) and from another container on the compose network
# (DOCKER listener) lists, produces and consumes, /metrics answers, `docker compose restart`
# keeps the data, `docker compose stop` is a clean shutdown (exit 0, "clean shutdown complete")
# well within the grace period and the next start skips recovery (clean_start=true); then
# docker/compose.sasl-ssl.yaml on top, as a second project: kcat over SASL_SSL with SCRAM-SHA-512
# as the admin user it creates, and a wrong password and a plaintext client refused.
# Tears everything down at the end (compose down -v, the image, the copy).
#
# Needs: docker with the compose v2 plugin and BuildKit, kcat, curl, python3, git, and the
# images the Dockerfile names plus edenhill/kcat:1.7.1.
# Env: SKIFF_E2E_KEEP_IMAGE=1 keeps the image; SKIFF_E2E_BUILD_TIMEOUT (s, default 2400);
# SKIFF_E2E_PROJECT (compose project name); SKIFF_E2E_IMAGE (tag, default skiff:e2e);
# SKIFF_HOST_PORT / SKIFF_METRICS_PORT (host ports; default: free ones).
# Exit status: 0 when every check passed, 1 otherwise, 2 when the build or start failed.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

PROJECT=${SKIFF_E2E_PROJECT:-skiff-e2e-$$}
export SKIFF_IMAGE=${SKIFF_E2E_IMAGE:-skiff:e2e}
BUILD_TIMEOUT=${SKIFF_E2E_BUILD_TIMEOUT:-2400}
KCAT_IMAGE=edenhill/kcat:1.7.1
TOPIC=e2e
GRACE=30          # stop_grace_period in docker/compose.yaml
STOP_BUDGET=25    # a clean stop must take less than this (the broker's own budget is 20 s)

FAILED=0
pass() { echo "PASS $1${2:+ ($2)}"; }
fail() { echo "FAIL $1${2:+ ($2)}"; FAILED=1; }
check() { # check NAME DETAIL CONDITION...
    local name=$1 detail=$2; shift 2
    if "$@"; then pass "$name" "$detail"; else fail "$name" "$detail"; fi
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

for tool in docker kcat curl python3 git timeout; do
    command -v "$tool" >/dev/null || { echo "FAIL setup (no $tool on PATH)"; exit 2; }
done
docker compose version >/dev/null 2>&1 || { echo "FAIL setup (no docker compose v2 plugin)"; exit 2; }

export SKIFF_HOST_PORT=${SKIFF_HOST_PORT:-$(free_port)}
export SKIFF_METRICS_PORT=${SKIFF_METRICS_PORT:-$(free_port)}
# The HOST listener must advertise the published host port (compose.yaml's default says 19092).
export SKIFF_ADVERTISED_LISTENERS="DOCKER://skiff:9092,HOST://localhost:$SKIFF_HOST_PORT"
unset SKIFF_PUBLISH_ADDRESS

echo "== versions"
docker version -f 'docker client {{.Client.Version}}, engine {{.Server.Version}} (API {{.Server.APIVersion}})'
docker compose version
docker buildx version 2>/dev/null || echo "docker buildx: not installed"
kcat -V 2>&1 | sed -nE 's/^Version ([^ ]+).*(librdkafka [^ ]+).*/kcat \1 (\2)/p'
echo "project $PROJECT, image $SKIFF_IMAGE, host ports: kafka $SKIFF_HOST_PORT, metrics $SKIFF_METRICS_PORT"

# A private copy of the checkout (tracked and untracked-but-not-ignored files, mtimes kept so
# cargo's cache mount stays warm), made under umask 077 like a user's private checkout.
CTX=$(mktemp -d /tmp/skiff-e2e-ctx.XXXXXX)
CID=
cleanup() {
    if [[ $FAILED -ne 0 && -n $CID ]]; then
        echo "== container log (last 40 lines)"
        docker logs --tail 40 "$CID" 2>&1
    fi
    echo "== teardown"
    timeout 120 "${DC[@]}" down -v --remove-orphans -t 10 >/dev/null 2>&1 || echo "compose down failed"
    if [[ ${SKIFF_E2E_KEEP_IMAGE:-0} != 1 ]]; then
        docker image rm "$SKIFF_IMAGE" >/dev/null 2>&1
    else
        echo "kept image $SKIFF_IMAGE"
    fi
    rm -rf "$CTX"
}
DC=(docker compose -p "$PROJECT" -f "$CTX/docker/compose.yaml")
trap cleanup EXIT
(
    umask 077
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files -z -co --exclude-standard | tar --null -T - -cf - | tar -C "$CTX" -xpf -
    else
        tar --exclude=./target --exclude=./tests/python/.venv -cf - . | tar -C "$CTX" -xpf -
    fi
    chmod -R go-rwx "$CTX"
) || { echo "FAIL setup (copying the checkout to $CTX)"; exit 2; }
check "private checkout" "config/docker.toml is mode $(stat -c %a "$CTX/config/docker.toml")" \
    test "$(stat -c %a "$CTX/config/docker.toml")" = 600

# ---- build --------------------------------------------------------------------------------
echo "== build"
t0=$SECONDS
if timeout "$BUILD_TIMEOUT" "${DC[@]}" build > "$CTX.build.log" 2>&1; then
    pass "build" "$((SECONDS - t0)) s"
    rm -f "$CTX.build.log"
else
    tail -40 "$CTX.build.log"; rm -f "$CTX.build.log"
    fail "build" "$((SECONDS - t0)) s, exit or timeout after ${BUILD_TIMEOUT} s"
    exit 2
fi
size=$(docker image inspect -f '{{.Size}}' "$SKIFF_IMAGE")
base=$(docker image inspect -f '{{.Size}}' debian:bookworm-slim 2>/dev/null || echo 0)
bin=$(docker run --rm --entrypoint stat "$SKIFF_IMAGE" -c %s /usr/local/bin/skiff)
echo "image $SKIFF_IMAGE: $((size / 1000000)) MB (base debian:bookworm-slim $((base / 1000000)) MB, binary $((bin / 1000000)) MB)"
check "binary size" "$((bin / 1000000)) MB, limit 30 MB (no debug info)" test "$bin" -lt 30000000
check "image size" "$((size / 1000000)) MB = base + $(((size - base) / 1000000)) MB, limit base + 40 MB" \
    test "$((size - base))" -lt 40000000

# ---- start --------------------------------------------------------------------------------
# wait_healthy SECONDS: waits for the service's container to report healthy.
wait_healthy() {
    local deadline=$((SECONDS + $1)) status=
    while ((SECONDS < deadline)); do
        CID=$("${DC[@]}" ps -q skiff 2>/dev/null)
        status=$([[ -n $CID ]] && docker inspect -f '{{.State.Health.Status}}' "$CID" 2>/dev/null)
        [[ $status == healthy ]] && return 0
        sleep 1
    done
    echo "health: ${status:-no container}"
    return 1
}
# compose_healthy TIMEOUT ARGS...: `docker compose ARGS` within TIMEOUT s, then healthy within 90 s.
compose_healthy() {
    local limit=$1
    shift
    timeout "$limit" "${DC[@]}" "$@" >/dev/null 2>&1 && wait_healthy 90
}
echo "== up"
t0=$SECONDS
if compose_healthy 120 up -d --no-build; then
    pass "healthy" "$((SECONDS - t0)) s after up -d"
else
    fail "healthy" "not healthy within 90 s"
    exit 2
fi
uid=$(timeout 30 docker exec "$CID" id -u)
check "uid" "id -u in the container: $uid" test "$uid" = 10001
mounts=$(docker inspect -f '{{range .Mounts}}{{.Type}}:{{.Destination}} {{end}}' "$CID")
check "no config bind mount" "mounts: $mounts" test "$mounts" = "volume:/var/lib/skiff "
published=$(docker port "$CID" | sort | tr '\n' ' ')
check "loopback only" "$published" \
    test "$published" = "19092/tcp -> 127.0.0.1:$SKIFF_HOST_PORT 9644/tcp -> 127.0.0.1:$SKIFF_METRICS_PORT "

# ---- clients ------------------------------------------------------------------------------
HOSTB=localhost:$SKIFF_HOST_PORT
NET=${PROJECT}_default
kc_host() { timeout 60 kcat -b "$HOSTB" -m 20 "$@"; }
kc_net() { timeout 90 docker run --rm -i --network "$NET" "$KCAT_IMAGE" -b skiff:9092 -m 20 "$@"; }
# consume CLIENT: every record of the topic, as key:value lines.
consume() { "$1" -C -t "$TOPIC" -p 0 -o beginning -e -f '%k:%s\n' 2>/dev/null; }
HOST_RECORDS=$(printf 'h%d:from-host-%d\n' 1 1 2 2 3 3)
NET_RECORDS=$(printf 'n%d:from-container-%d\n' 1 1 2 2)
ALL_RECORDS=$(printf '%s\n%s' "$HOST_RECORDS" "$NET_RECORDS")

# kcat_round LABEL CLIENT ADVERTISED RECORDS EXPECTED NOTE: three checks through one client:
# metadata advertises ADVERTISED, RECORDS produce, and a consume from the start gives EXPECTED.
kcat_round() {
    local label=$1 client=$2 advertised=$3 records=$4 expected=$5 note=$6 meta rc got
    meta=$("$client" -L 2>&1)
    check "$label metadata" "$(grep -m1 'broker 1 at' <<<"$meta" | xargs)" grep -q "broker 1 at $advertised" <<<"$meta"
    printf '%s\n' "$records" | "$client" -P -t "$TOPIC" -p 0 -K: 2>/dev/null
    rc=$?
    check "$label produce" "exit $rc" test "$rc" -eq 0
    got=$(consume "$client")
    check "$label consume" "$(wc -l <<<"$got") records$note" test "$got" = "$expected"
}
# check_data NAME NOTE: a consume from the host gives every record produced above.
check_data() {
    local got
    got=$(consume kc_host)
    check "$1" "$(wc -l <<<"$got") records$2" test "$got" = "$ALL_RECORDS"
}

echo "== kcat from the host ($HOSTB)"
kcat_round host kc_host "localhost:$SKIFF_HOST_PORT" "$HOST_RECORDS" "$HOST_RECORDS" ""
echo "== kcat from a container on $NET (skiff:9092)"
kcat_round network kc_net skiff:9092 "$NET_RECORDS" "$ALL_RECORDS" ", the host's first"

echo "== metrics (127.0.0.1:$SKIFF_METRICS_PORT)"
metrics=$(curl -fsS -m 10 "http://127.0.0.1:$SKIFF_METRICS_PORT/metrics")
line="skiff_log_end_offset{topic=\"$TOPIC\",partition=\"0\"} 5"
check "metrics" "$line" grep -qxF "$line" <<<"$metrics"

# ---- restart, stop ------------------------------------------------------------------------
echo "== restart"
t0=$SECONDS
if compose_healthy 120 restart; then
    pass "restart" "healthy again after $((SECONDS - t0)) s"
else
    fail "restart" "not healthy within 90 s"
fi
check_data "data kept" " after restart"

echo "== stop"
t0=$SECONDS
timeout $((GRACE + 30)) "${DC[@]}" stop >/dev/null 2>&1
took=$((SECONDS - t0))
state=$(docker inspect -f '{{.State.Status}} exit {{.State.ExitCode}}' "$CID")
check "stop" "$state after $took s; grace period $GRACE s" test "$state" = "exited exit 0" -a "$took" -lt "$STOP_BUDGET"
logs=$(docker logs "$CID" 2>&1)
clean=$(grep -c "clean shutdown complete" <<<"$logs")
check "clean shutdown" "\"clean shutdown complete\" logged $clean times (restart and stop)" test "$clean" -eq 2
echo "== start after stop"
if compose_healthy 60 start; then
    ready=$(docker logs "$CID" 2>&1 | grep "storage ready" | tail -1)
    check "skips recovery" "$(grep -o 'clean_start=[a-z]*' <<<"$ready")" grep -q "clean_start=true" <<<"$ready"
    check_data "data kept after stop" ""
else
    fail "start after stop" "not healthy within 90 s"
fi

# ---- SASL_SSL (docker/compose.sasl-ssl.yaml on top) -----------------------------------------
# A second project from the same image: the HOST listener speaks SASL_SSL with SCRAM, the
# certificates come from the certs service, the admin user from SKIFF_ADMIN_PASSWORD.
echo "== SASL_SSL compose file"
SASL_PORT=$(free_port)
SASL_METRICS=$(free_port)
DCS=(docker compose -p "$PROJECT-sasl" -f "$CTX/docker/compose.yaml" -f "$CTX/docker/compose.sasl-ssl.yaml")
ADMIN_PASSWORD=e2e-admin-$$
sasl_env=(env SKIFF_HOST_PORT="$SASL_PORT" SKIFF_METRICS_PORT="$SASL_METRICS" SKIFF_ADMIN_PASSWORD="$ADMIN_PASSWORD"
    SKIFF_ADVERTISED_LISTENERS="DOCKER://skiff:9092,HOST://localhost:$SASL_PORT")
sasl_down() { timeout 120 "${sasl_env[@]}" "${DCS[@]}" down -v --remove-orphans -t 10 >/dev/null 2>&1; }
t0=$SECONDS
if timeout 120 "${sasl_env[@]}" "${DCS[@]}" up -d --no-build >/dev/null 2>&1; then
    SCID=
    for _ in $(seq 90); do
        SCID=$("${sasl_env[@]}" "${DCS[@]}" ps -q skiff 2>/dev/null)
        [[ -n $SCID && $(docker inspect -f '{{.State.Health.Status}}' "$SCID" 2>/dev/null) == healthy ]] && break
        sleep 1
    done
    check "sasl-ssl healthy" "$((SECONDS - t0)) s after up -d" test "$(docker inspect -f '{{.State.Health.Status}}' "$SCID" 2>/dev/null)" = healthy
    CA=$CTX.ca.pem
    timeout 30 "${sasl_env[@]}" "${DCS[@]}" cp skiff:/certs/ca.pem "$CA" >/dev/null 2>&1
    check "sasl-ssl CA copied out" "$CA" test -s "$CA"
    kc_sasl() { # kc_sasl PASSWORD ARGS...
        local pw=$1; shift
        timeout 60 kcat -b "localhost:$SASL_PORT" -m 20 -X security.protocol=sasl_ssl -X ssl.ca.location="$CA" \
            -X sasl.mechanisms=SCRAM-SHA-512 -X sasl.username=admin -X sasl.password="$pw" "$@"
    }
    kc_admin() { kc_sasl "$ADMIN_PASSWORD" "$@"; }
    kcat_round "sasl-ssl" kc_admin "localhost:$SASL_PORT" "$HOST_RECORDS" "$HOST_RECORDS" " (SCRAM-SHA-512 over TLS)"
    t1=$SECONDS
    kc_sasl wrong-password -L >/dev/null 2>&1
    rc=$?
    check "sasl-ssl wrong password refused" "exit $rc after $((SECONDS - t1)) s" test "$rc" -ne 0 -a "$rc" -ne 124
    timeout 60 kcat -b "localhost:$SASL_PORT" -m 10 -L >/dev/null 2>&1
    rc=$?
    check "sasl-ssl plaintext client refused" "exit $rc" test "$rc" -ne 0 -a "$rc" -ne 124
    rm -f "$CA"
else
    fail "sasl-ssl up" "compose up with docker/compose.sasl-ssl.yaml failed"
fi
sasl_down || echo "compose down (sasl-ssl) failed"

echo
if [[ $FAILED -eq 0 ]]; then echo "docker e2e: ALL PASSED (image $((size / 1000000)) MB)"; else echo "docker e2e: SOME CHECKS FAILED"; fi
exit "$FAILED"
