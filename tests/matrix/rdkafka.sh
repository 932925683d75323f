#!/usr/bin/env bash
# Client-matrix lines for the rdkafka crate suite (tests/rdkafka, librdkafka bundled by
# rdkafka-sys): runs its cargo test targets with filters, one cargo invocation per scenario,
# and appends `rdkafka<TAB>scenario<TAB>PASS|FAIL<TAB>note` to $MATRIX_RESULTS (or stdout).
#
#   bash tests/matrix/rdkafka.sh [scenario ...]     # default: all of them
#
# Uses the skiff binary of E2E_SKIFF_BIN (else ${CARGO_TARGET_DIR:-<repo>/target}/debug/skiff,
# as the suite itself does). Exit status non-zero if any scenario failed.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
export E2E_SKIFF_BIN=${E2E_SKIFF_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/skiff}
OUT=${MATRIX_RESULTS:-/dev/stdout}
LOGDIR=$(mktemp -d -t skiff-matrix-rdkafka-XXXXXX)
trap 'rm -rf "$LOGDIR"' EXIT

# scenario | cargo test arguments (after `-p skiff-e2e`) | note on PASS
MAP=(
  "admin|--test admin -- --skip list_offsets_and_offsets_for_times|create/delete/create partitions/describe+alter configs/delete records (tests/rdkafka/tests/admin.rs)"
  "offsets_for_times|--test admin list_offsets_and_offsets_for_times|earliest/latest/offsets_for_times"
  "produce_consume|--test produce_consume -- --skip every_compression_codec_round_trips|keys+headers, acks 0/1/all, auto-create, long poll"
  "compression|--test produce_consume every_compression_codec_round_trips|codecs: none gzip snappy lz4 zstd"
  "groups|--test groups_classic --test groups_consumer_protocol --test groups_records|classic (eager, cooperative-sticky, static) and KIP-848 consumer groups, restart/kill -9"
  "compaction|--test compaction|latest value per key, tombstones, cleaner cases"
  "transactions|--test transactions|commit/abort, read_committed, consume-transform-produce, kill -9 timeout abort"
  "special|--test idempotence|idempotent producer: no duplicates across restart and kill -9"
)

want=("$@")
rc=0
for entry in "${MAP[@]}"; do
    IFS='|' read -r scenario args note <<<"$entry"
    if [[ ${#want[@]} -gt 0 ]] && [[ ! " ${want[*]} " == *" $scenario "* ]]; then continue; fi
    log=$LOGDIR/$scenario.log
    # shellcheck disable=SC2086
    if timeout 1800 cargo test -q -p skiff-e2e $args >"$log" 2>&1; then
        passed=$(grep -oE 'test result: ok\. [0-9]+ passed' "$log" | awk '{s += $4} END {print s + 0}')
        if [[ $passed -gt 0 ]]; then
            printf 'rdkafka\t%s\tPASS\t%s (%s tests)\n' "$scenario" "$note" "$passed" >>"$OUT"
        else
            printf 'rdkafka\t%s\tFAIL\tno test matched: cargo test -p skiff-e2e %s\n' "$scenario" "$args" >>"$OUT"
            rc=1
        fi
    else
        code=$?
        failing=$(grep -oE '^    [a-z0-9_:]+$' "$log" | tr -d ' ' | tr '\n' ' ' | cut -c1-200)
        [[ -n $failing ]] || failing="$(grep -m1 -E 'error(\[|:)' "$log" | cut -c1-200)"
        # The first panic: where, and the assertion message on the next line.
        why=$(grep -m1 -A1 'panicked at' "$log" | sed -E 's/^thread .* panicked at //' | tr '\n' ' ' | cut -c1-200 || true)
        [[ -z $why ]] || failing="$failing- $why"
        printf 'rdkafka\t%s\tFAIL\tcargo test exit %s: %s\n' "$scenario" "$code" "${failing:-see log}" >>"$OUT"
        echo "---- rdkafka $scenario (cargo test -p skiff-e2e $args) ----" >&2
        tail -n 40 "$log" >&2
        rc=1
    fi
done
exit "$rc"
