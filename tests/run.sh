#!/usr/bin/env bash
# The one test command (README, .ci/run): installs what the suites need on a fresh Debian
# machine (idempotent, quick when already installed), then runs every check in order:
#   fmt, docs (tests/docs_links.sh), clippy, build, cargo test --workspace (unit tests + the rdkafka e2e crate,
#   whose console tests drive a headless Chromium),
#   pytest tests/python (confluent-kafka, kafka-python), tests/kcat/run.sh, the power-cut
#   test (tests/powercut, FUSE; skipped without root or /dev/fuse), the benchmark
#   smoke (`skiff-bench compare --smoke`), tests/docker/run.sh
#   (compose file checks), tests/docker/e2e.sh (the image built and run; as root, with the shared
#   docker-engine.sh; skipped when there is neither), tests/go/run.sh (franz-go), tests/node/run.sh (kafkajs,
#   @platformatic/kafka), and (when java and mvn are on PATH) tests/java/run.sh: kafka-clients
#   4.x via Maven + Kafka's CLI tools, tests/connect/run.sh (Connect distributed + MirrorMaker 2
#   to the reference Kafka) and tests/diff (differential suite: Skiff vs the reference Kafka
#   4.4), whose jars Maven fetches from Maven Central into ~/.m2 and the tests/kafka caches.
#   The whole client matrix with its report is `bash tests/matrix.sh` (not part of this run).
# Works without a terminal (CI=true, no stdin). Exit status is non-zero if any step fails;
# later steps still run so one report shows everything, and a summary closes the output.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
export DEBIAN_FRONTEND=noninteractive
# A run builds from scratch or nearly so; incremental caches only cost disk (gigabytes) here.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
exec </dev/null

SUDO=
if [[ $(id -u) -ne 0 ]] && command -v sudo >/dev/null; then SUDO="sudo -n"; fi

log() { printf '\n==> %s\n' "$*"; }

# ---------- setup (idempotent) ----------
need_apt=()
command -v kcat >/dev/null || need_apt+=(kcat)
command -v python3 >/dev/null || need_apt+=(python3)
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then need_apt+=(python3-venv); fi
# skiff-bench's librdkafka is built with TLS (rdkafka `ssl` feature) against the system OpenSSL.
if ! pkg-config --exists openssl 2>/dev/null; then need_apt+=(pkg-config libssl-dev); fi
# The web console's browser tests (tests/rdkafka/tests/console.rs) drive Debian's headless
# Chromium through its chromedriver.
command -v chromium >/dev/null || need_apt+=(chromium)
command -v chromedriver >/dev/null || need_apt+=(chromium-driver)
if [[ ${#need_apt[@]} -gt 0 ]]; then
    log "installing ${need_apt[*]} (apt)"
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq "${need_apt[@]}"
fi
command -v cargo >/dev/null || { echo "cargo not found: install Rust (https://rustup.rs) first" >&2; exit 1; }

VENV=tests/python/.venv
REQ=tests/python/requirements.txt
STAMP=$VENV/.requirements.sha256
want_sum=$(sha256sum "$REQ" | cut -d' ' -f1)
if [[ ! -x $VENV/bin/python ]] || [[ ! -f $STAMP ]] || [[ $(cat "$STAMP") != "$want_sum" ]]; then
    log "python venv at $VENV ($REQ)"
    [[ -x $VENV/bin/python ]] || python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQ"
    echo "$want_sum" >"$STAMP"
fi

# A full disk shows up later as unrelated-looking failures (the linker dies, the cleaner cannot
# write, an image build stops), so say up front how much room the run has. A run took 14 GB on a
# machine with the registries' caches already filled: 8 GB of build output in target/ (debug
# builds keep line tables only, see Cargo.toml), the rest the docker image build, the brokers'
# data and the client suites.
free_gb=$(df -Pk . | awk 'NR==2 {print int($4 / 1048576)}')
echo "free disk at $ROOT: ${free_gb} GB"
if [[ $free_gb -lt 16 ]]; then
    echo "WARNING: less than 16 GB free; builds, the docker image and compaction tests may fail for lack of space"
fi

# ---------- checks ----------
declare -a NAMES=() RESULTS=() TIMES=()
FAILED=0
step() {
    local name=$1; shift
    log "$name: $*"
    local t0=$SECONDS rc=0
    "$@" || rc=$?
    NAMES+=("$name"); TIMES+=("$((SECONDS - t0))s")
    if [[ $rc -eq 0 ]]; then RESULTS+=("PASS"); else RESULTS+=("FAIL (exit $rc)"); FAILED=1; fi
    return 0
}

step "fmt" cargo fmt --all -- --check
# Code and test references into docs/ (docs/<file>.md §N) must name sections that exist.
step "docs" bash tests/docs_links.sh
step "clippy" cargo clippy --workspace --all-targets -- -D warnings
step "build" cargo build -p skiff
BUILD_OK=${RESULTS[-1]}
# The e2e suites need the binary built just above; point them at it explicitly.
export E2E_SKIFF_BIN=${E2E_SKIFF_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/skiff}
# skiff-powercut runs in its own step below (it needs root and /dev/fuse).
step "cargo test" cargo test --workspace --exclude skiff-powercut
# Compose file and Dockerfile checks (no engine needed; the binary side is in cargo test).
step "docker" bash tests/docker/run.sh
# The image built and run for real (tests/docker/e2e.sh), as root, with a docker engine started
# by the shared docker-engine.sh (it reuses an engine that is already running, and is stopped
# again only if this step started it). The script is SKIFF_DOCKER_ENGINE_SCRIPT, else
# ../shared/tools/docker-engine.sh beside the checkout, else /work/shared/tools/docker-engine.sh.
# SKIFF_DOCKER_E2E=0 skips the step.
docker_image_e2e() (
    script=$1 log=${TMPDIR:-/tmp}/skiff-docker-engine-start.log before=0 rc=0 t0=$SECONDS
    $SUDO docker info >/dev/null 2>&1 && before=1
    if ! exports=$($SUDO bash "$script" start 2>"$log"); then
        tail -20 "$log"
        echo "the docker engine did not start (whole log: $log)"
        return 1
    fi
    eval "$exports" # export DOCKER_CONFIG=... (where the compose and buildx plugins are)
    echo "docker engine ready in $((SECONDS - t0)) s ($script; log: $log)"
    $SUDO env DOCKER_CONFIG="$DOCKER_CONFIG" bash tests/docker/e2e.sh || rc=$?
    if [[ $before -eq 0 ]]; then $SUDO bash "$script" stop || rc=1; fi
    return $rc
)
engine_script=
for candidate in "${SKIFF_DOCKER_ENGINE_SCRIPT:-}" "$ROOT/../shared/tools/docker-engine.sh" \
    /work/shared/tools/docker-engine.sh; do
    if [[ -n $candidate && -f $candidate ]]; then engine_script=$candidate; break; fi
done
if [[ ${SKIFF_DOCKER_E2E:-1} == 0 ]]; then
    NAMES+=("docker image"); RESULTS+=("SKIPPED (SKIFF_DOCKER_E2E=0)"); TIMES+=("-")
elif [[ -z $engine_script ]]; then
    echo "docker image: skipped: no docker engine script"
    NAMES+=("docker image"); RESULTS+=("SKIPPED (no engine script)"); TIMES+=("-")
elif [[ $(id -u) -ne 0 ]] && ! { [[ -n $SUDO ]] && $SUDO true 2>/dev/null; }; then
    echo "docker image: skipped: needs root or passwordless sudo to start the engine"
    NAMES+=("docker image"); RESULTS+=("SKIPPED (not root)"); TIMES+=("-")
else
    step "docker image" docker_image_e2e "$engine_script"
fi
if [[ $BUILD_OK == PASS ]]; then
    step "pytest" "$VENV/bin/python" -m pytest -q tests/python
    step "kcat" bash tests/kcat/run.sh
    # Issue 12: the broker on a FUSE filesystem that drops whatever was not fsynced, power
    # cut at random moments and chosen operations (POWERCUT_CUTS, default 10, ~2 min).
    if [[ -e /dev/fuse && $(id -u) -eq 0 ]]; then
        step "power cut" cargo test -p skiff-powercut -- --nocapture
    else
        echo "skipped: power cut (needs root and /dev/fuse)"
        NAMES+=("power cut"); RESULTS+=("SKIPPED (no root/fuse)"); TIMES+=("-")
    fi
    # Issue 7's benchmark suite, Skiff only, a few seconds (the debug binary: it proves the
    # suite runs, not the figures; the full comparison is `skiff-bench compare`, see README).
    step "bench smoke" cargo run -q -p skiff-bench -- compare --smoke --broker-bin "$E2E_SKIFF_BIN"
    if command -v go >/dev/null || [[ -x /usr/local/go/bin/go ]]; then
        step "franz-go" bash tests/go/run.sh
    else
        NAMES+=("franz-go"); RESULTS+=("SKIPPED (no go)"); TIMES+=("-")
    fi
    if command -v node >/dev/null && command -v npm >/dev/null; then
        step "node" bash tests/node/run.sh
    else
        NAMES+=("node"); RESULTS+=("SKIPPED (no node/npm)"); TIMES+=("-")
    fi
    if command -v java >/dev/null && command -v mvn >/dev/null; then
        step "java" bash tests/java/run.sh
        step "connect+mm2" bash tests/connect/run.sh
        step "diff" "$VENV/bin/python" -m pytest -q tests/diff
    else
        NAMES+=("java" "connect+mm2" "diff"); RESULTS+=("SKIPPED (no java/mvn)" "SKIPPED (no java/mvn)" "SKIPPED (no java/mvn)")
        TIMES+=("-" "-" "-")
    fi
else
    for name in pytest kcat "power cut" "bench smoke" franz-go node java connect+mm2 diff; do
        NAMES+=("$name"); RESULTS+=("SKIPPED (no binary)"); TIMES+=("-")
    done
    FAILED=1
fi

printf '\n==================== summary ====================\n'
for i in "${!NAMES[@]}"; do
    printf '  %-12s %-22s %s\n' "${NAMES[$i]}" "${RESULTS[$i]}" "${TIMES[$i]}"
done
echo "  free disk at the end: $(df -Pk . | awk 'NR==2 {print int($4 / 1048576)}') GB (target/: $(du -sh "${CARGO_TARGET_DIR:-$ROOT/target}" 2>/dev/null | cut -f1))"
if [[ $FAILED -eq 0 ]]; then
    echo "ALL PASSED"
else
    echo "SOME CHECKS FAILED"
fi
exit "$FAILED"
