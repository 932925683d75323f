#!/usr/bin/env bash
# The full client matrix (issue 6) and the differential suite in one command.
#
#   bash tests/matrix.sh [--kafka] [--no-diff] [--update-readme] [--only SUITE[,SUITE..]]
#
# Runs every client suite with MATRIX_RESULTS pointing at one TSV (each appends
# `<client>\t<scenario>\t<PASS|FAIL|SKIP>\t<note>` per scenario it ran), then
# tests/matrix/report.py renders the markdown compatibility table (clients x scenarios).
#   suites: rdkafka (tests/matrix/rdkafka.sh: the rdkafka crate's cargo tests, by scenario),
#           python (pytest tests/python: confluent-kafka, kafka-python), kcat (tests/kcat/run.sh),
#           java (tests/java/run.sh: kafka-clients, Streams, Kafka CLI tools), and when present
#           go (tests/go/run.sh), node (tests/node/run.sh), connect (tests/connect/run.sh);
#           a suite that is not in the checkout is reported as missing, not failed.
#   diff:   pytest tests/diff, Skiff against the reference Kafka 4.4 (needs java); its result
#           is in the suite table (it has no client row). --no-diff leaves it out.
#   --kafka          run the client suites against the reference Apache Kafka instead of Skiff
#                    (a baseline that validates the suites; only suites with a --kafka mode run)
#   --update-readme  write the table into README.md between <!-- compat-matrix:begin --> and
#                    <!-- compat-matrix:end --> (ignored with --kafka)
#   --only           e.g. --only python,kcat
# Output: $MATRIX_OUT (default ${CARGO_TARGET_DIR:-<repo>/target}/matrix): results.tsv,
# suites.tsv, diff-differences.tsv (tests/diff's unexplained differences), report.md,
# logs/<suite>.log. Exit status non-zero if any suite or scenario failed.
# Skiff's binary: $E2E_SKIFF_BIN, else ${CARGO_TARGET_DIR:-<repo>/target}/debug/skiff (built
# with `cargo build -p skiff` when neither exists).
set -euo pipefail
exec </dev/null

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
KAFKA=0 DIFF=1 UPDATE=0 ONLY=
while [[ $# -gt 0 ]]; do
    case $1 in
        --kafka) KAFKA=1 ;;
        --no-diff) DIFF=0 ;;
        --update-readme) UPDATE=1 ;;
        --only) ONLY=,$2,; shift ;;
        *) echo "usage: $0 [--kafka] [--no-diff] [--update-readme] [--only SUITE,..]" >&2; exit 2 ;;
    esac
    shift
done

OUT=${MATRIX_OUT:-${CARGO_TARGET_DIR:-$ROOT/target}/matrix}
mkdir -p "$OUT/logs"
RESULTS=$OUT/results.tsv SUITES=$OUT/suites.tsv
: >"$RESULTS"; : >"$SUITES"
export MATRIX_RESULTS=$RESULTS
export E2E_SKIFF_BIN=${E2E_SKIFF_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/skiff}
if [[ ! -x $E2E_SKIFF_BIN ]]; then
    echo "==> building skiff (no binary at $E2E_SKIFF_BIN)"
    cargo build -p skiff
fi

VENV=tests/python/.venv
if [[ ! -x $VENV/bin/python ]]; then
    echo "==> python venv at $VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r tests/python/requirements.txt
fi

FAILED=0
t_all=$SECONDS
# suite NAME FOLDER TIMEOUT_S SUPPORTS_KAFKA(0|1) CMD... ; FOLDER names the suite in the report.
suite() {
    local name=$1 folder=$2 limit=$3 kafka_ok=$4; shift 4
    if [[ -n $ONLY && $ONLY != *",$name,"* ]]; then return 0; fi
    if [[ ! -e $folder ]]; then
        printf '%s\tmissing\t-\t-\tnot in this checkout\n' "$folder" >>"$SUITES"
        echo "==> $name: missing ($folder)"
        return 0
    fi
    if [[ $KAFKA -eq 1 && $kafka_ok -eq 0 ]]; then
        printf '%s\tskipped\t-\t-\tno --kafka mode\n' "$folder" >>"$SUITES"
        echo "==> $name: skipped (no --kafka mode)"
        return 0
    fi
    local t0=$SECONDS rc=0 log=$OUT/logs/$name.log
    echo "==> $name: $* (log $log)"
    timeout --kill-after=30 "$limit" "$@" >"$log" 2>&1 || rc=$?
    local note=
    [[ $rc -eq 124 ]] && note="timed out after ${limit}s"
    if [[ $name == diff ]]; then
        note=$(grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed)' "$log" | tail -1 | tr -d '=' | xargs || true)
    fi
    printf '%s\tran\t%s\t%s\t%s\n' "$folder" "$rc" "$((SECONDS - t0))" "$note" >>"$SUITES"
    echo "    exit $rc in $((SECONDS - t0))s"
    [[ $rc -eq 0 ]] || FAILED=1
}

K=()
[[ $KAFKA -eq 1 ]] && K=(--kafka)
suite rdkafka tests/rdkafka 2400 0 bash tests/matrix/rdkafka.sh
suite python tests/python 1200 0 "$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/python
suite kcat tests/kcat 300 0 bash tests/kcat/run.sh
if command -v java >/dev/null && command -v mvn >/dev/null; then
    suite java tests/java 2400 1 bash tests/java/run.sh "${K[@]}"
else
    printf 'tests/java\tskipped\t-\t-\tno java/mvn on PATH\n' >>"$SUITES"
fi
suite go tests/go/run.sh 1200 1 bash tests/go/run.sh "${K[@]}"
suite node tests/node/run.sh 1200 1 bash tests/node/run.sh "${K[@]}"
suite connect tests/connect/run.sh 2400 1 bash tests/connect/run.sh "${K[@]}"
if [[ $DIFF -eq 1 ]]; then
    if command -v java >/dev/null; then
        # The differential suite writes no matrix lines; keep MATRIX_RESULTS out of its way.
        KAFKA_SAVE=$KAFKA; KAFKA=0
        : >"$OUT/diff-differences.tsv"
        MATRIX_RESULTS= DIFF_REPORT=$OUT/diff-differences.tsv suite diff tests/diff 1200 1 "$VENV/bin/python" -m pytest -q -p no:cacheprovider -rf tests/diff
        KAFKA=$KAFKA_SAVE
    else
        printf 'tests/diff\tskipped\t-\t-\tno java for the reference Kafka\n' >>"$SUITES"
    fi
fi
# Suite folders in suites.tsv are the folder names the report knows (tests/go, not run.sh).
sed -i -E 's#^tests/(go|node|connect)/run\.sh\t#tests/\1\t#' "$SUITES"

grep -q $'\tFAIL\t' "$RESULTS" && FAILED=1
title="Client compatibility matrix (against $([[ $KAFKA -eq 1 ]] && echo 'the reference Apache Kafka 4.4.0' || echo Skiff), $(date -u +%Y-%m-%d), $((SECONDS - t_all))s)"
args=("$RESULTS" --suites "$SUITES" --title "$title")
[[ $DIFF -eq 1 && -f $OUT/diff-differences.tsv ]] && args+=(--diff "$OUT/diff-differences.tsv")
if [[ $UPDATE -eq 1 && $KAFKA -eq 0 ]]; then args+=(--update-readme "$ROOT/README.md"); fi
python3 tests/matrix/report.py "${args[@]}" | tee "$OUT/report.md"
echo "matrix: results $RESULTS, report $OUT/report.md, $((SECONDS - t_all))s"
exit "$FAILED"
