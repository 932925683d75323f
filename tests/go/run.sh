#!/usr/bin/env bash
# franz-go (kgo + kadm + kmsg) client-matrix suite (issue 6).
#
#   tests/go/run.sh              start Skiff on a free loopback port, run every scenario, stop it
#   tests/go/run.sh --kafka      the same against the reference Apache Kafka (tests/kafka)
#   tests/go/run.sh HOST:PORT    run against a broker that is already up
#   ONLY=groups,special tests/go/run.sh   run some scenarios only (ONLY=security: only the
#                                         security part)
# Against Skiff it then runs the security scenarios (security.go) against a second broker
# with SSL and mTLS listeners (tests/security/broker.sh); SASL rows too (SKIFF_SASL_TESTS=0 leaves them out).
#
# Skiff's binary: $E2E_SKIFF_BIN, else ${CARGO_TARGET_DIR:-<repo>/target}/debug/skiff.
# With MATRIX_RESULTS=FILE each scenario appends "franz-go<TAB>scenario<TAB>PASS|FAIL<TAB>note".
# Exits non-zero when any scenario fails. The Go module is in this folder (go.mod + go.sum);
# modules come from the Go module proxy on first use and the build cache is Go's default.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SUITE_TIMEOUT=${FRANZ_SUITE_TIMEOUT:-900}

command -v go >/dev/null || export PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || { echo "franz-go suite: go is not installed" >&2; exit 1; }
export GOFLAGS=-mod=mod

target=skiff
bootstrap=
case ${1:-} in
    "") ;;
    --kafka) target=kafka ;;
    --skiff) ;;
    -*) echo "usage: $0 [--kafka | HOST:PORT]" >&2; exit 2 ;;
    *) target=external bootstrap=$1 ;;
esac

# Build first so compile time does not count against the broker run.
BIN_DIR=$(mktemp -d -t skiff-franz-XXXXXX)
(cd "$HERE" && go build -o "$BIN_DIR/franzmatrix" .)

args=()
[[ -n ${MATRIX_RESULTS:-} ]] && args+=(-results "$MATRIX_RESULTS")
[[ -n ${ONLY:-} ]] && args+=(-only "$ONLY")

if [[ $target == external ]]; then
    trap 'rm -rf "$BIN_DIR"' EXIT
    timeout "$SUITE_TIMEOUT" "$BIN_DIR/franzmatrix" -bootstrap "$bootstrap" "${args[@]}"
    exit
fi

# broker.sh's EXIT trap stops the broker and removes its WORK dir; remove our binary too.
# shellcheck source=../java/broker.sh
source "$HERE/../java/broker.sh"
# broker_cleanup exits with the status it finds in $?, so hand it ours.
# shellcheck source=../security/broker.sh
source "$HERE/../security/broker.sh"
suite_cleanup() {
    local rc=$?
    [[ $rc -ne 0 ]] && secure_broker_log_tail 30
    stop_secure_broker
    rm -rf "$BIN_DIR"
    set +e
    (exit "$rc")
    broker_cleanup
}
trap suite_cleanup EXIT
rc=0
if [[ ${ONLY:-} != security ]]; then
    start_broker "$target"
    [[ $target == kafka ]] && args+=(-kafka)
    echo "franz-go suite: $(cd "$HERE" && go list -m -f '{{.Path}} {{.Version}}' github.com/twmb/franz-go) against $target at $BOOTSTRAP" >&2
    timeout "$SUITE_TIMEOUT" "$BIN_DIR/franzmatrix" -bootstrap "$BOOTSTRAP" "${args[@]}" || rc=$?
    stop_broker
fi
if [[ $target == skiff && ( -z ${ONLY:-} || ,$ONLY, == *,security,* ) ]]; then
    sec_args=()
    [[ -n ${MATRIX_RESULTS:-} ]] && sec_args+=(-results "$MATRIX_RESULTS")
    mkdir "$WORK/security"
    "$BIN_DIR/franzmatrix" -write-jwks "$WORK/security"
    start_secure_broker "$WORK/security/broker" "$WORK/security/jwks.json"
    echo "franz-go security scenarios (SASL rows: $([[ $SEC_SASL == 1 ]] && echo on || echo 'off: SKIFF_SASL_TESTS=0'))" >&2
    timeout 600 "$BIN_DIR/franzmatrix" -security -jwt-key "$WORK/security/jwt-key.pem" "${sec_args[@]}" || rc=$?
    stop_secure_broker
fi
exit "$rc"
