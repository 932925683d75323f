#!/usr/bin/env bash
# kcat smoke test against the real skiff binary (Debian's kcat 1.7.1 / librdkafka 2.0.2, the
# client that breaks on unexpected ApiVersions tagged fields).
#
# Starts its own broker on a free loopback port with a temp data dir, then:
#   kcat -L lists the broker; kcat -P writes 1000 keyed lines (-K:) to an auto-created topic;
#   kcat -C -e reads them back in order with their offsets and keys; a read from an offset in
#   the middle; one round trip per compression codec.
# Binary: $E2E_SKIFF_BIN, else ${CARGO_TARGET_DIR:-<repo>/target}/debug/skiff.
# MATRIX_RESULTS=<file>: appends one client-matrix line per scenario (client id kcat):
#   special = kcat -L (metadata), produce_consume = steps 2-3, compression = step 4.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=${E2E_SKIFF_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/skiff}
KCAT_TIMEOUT=30

[[ -x $BIN ]] || { echo "kcat smoke: skiff binary not found at $BIN (cargo build -p skiff)" >&2; exit 1; }
command -v kcat >/dev/null || { echo "kcat smoke: kcat is not installed (apt-get install -y kcat)" >&2; exit 1; }

WORK=$(mktemp -d -t skiff-kcat-XXXXXX)
BROKER_PID=
cleanup() {
    local rc=$?
    if [[ -n $BROKER_PID ]] && kill -0 "$BROKER_PID" 2>/dev/null; then
        kill -TERM "$BROKER_PID" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$BROKER_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$BROKER_PID" 2>/dev/null || true
    fi
    if [[ $rc -ne 0 ]]; then
        echo "----- skiff broker log (tail) -----" >&2
        tail -n 60 "$WORK/broker.log" >&2 || true
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT

# Client-matrix lines (issue 6): the scenario now running fails with the message of fail().
SCENARIO=
matrix() {
    [[ -n ${MATRIX_RESULTS:-} ]] || return 0
    printf 'kcat\t%s\t%s\t%s\n' "$1" "$2" "$(printf '%s' "$3" | tr '\t\n' '  ')" >>"$MATRIX_RESULTS"
}
fail() {
    echo "kcat smoke: FAIL: $*" >&2
    [[ -n $SCENARIO ]] && matrix "$SCENARIO" FAIL "$*"
    exit 1
}

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
B=127.0.0.1:$PORT

# SKIFF_* variables are broker config overrides: never leak the caller's into the broker.
mapfile -t UNSET < <(env | grep -o '^SKIFF_[A-Za-z0-9_]*' | sed 's/^/-u/' || true)
env "${UNSET[@]}" NO_COLOR=1 RUST_LOG="${RUST_LOG:-info}" "$BIN" \
    --set "listeners=PLAINTEXT://$B" --set "log.dirs=$WORK/data" --set node.id=1 \
    </dev/null >"$WORK/broker.log" 2>&1 &
BROKER_PID=$!

for i in $(seq 200); do
    kill -0 "$BROKER_PID" 2>/dev/null || fail "broker exited during start"
    if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then break; fi
    [[ $i -eq 200 ]] && fail "broker did not accept TCP on $B within 10 s"
    sleep 0.05
done

kc() { timeout "$KCAT_TIMEOUT" kcat -b "$B" "$@"; }

echo "kcat smoke: $(kcat -V 2>&1 | grep -o 'Version [^ ]*.*librdkafka [0-9.]*' || true)"

# 1. Metadata
SCENARIO=special
kc -L >"$WORK/meta.txt" 2>&1 || { cat "$WORK/meta.txt" >&2; fail "kcat -L failed"; }
grep -q "1 brokers:" "$WORK/meta.txt" || { cat "$WORK/meta.txt" >&2; fail "kcat -L does not list one broker"; }
grep -q "broker 1 at 127.0.0.1:$PORT" "$WORK/meta.txt" || { cat "$WORK/meta.txt" >&2; fail "kcat -L does not show broker 1 at $B"; }
echo "ok   kcat -L lists broker 1 at $B"

matrix special PASS "kcat -L metadata with Debian's librdkafka $(kcat -V 2>&1 | grep -o 'librdkafka [0-9.]*' | head -1 | cut -d' ' -f2)"

# 2. Produce 1000 keyed lines (topic auto-created), read back in order with offsets and keys.
SCENARIO=produce_consume
T=kcat-smoke
for i in $(seq 0 999); do echo "key-$i:value-$i"; done >"$WORK/in.txt"
kc -P -t "$T" -p 0 -K: -X acks=all <"$WORK/in.txt" 2>"$WORK/p.err" || { cat "$WORK/p.err" >&2; fail "kcat -P failed"; }
grep -qi "fail\|error" "$WORK/p.err" && { cat "$WORK/p.err" >&2; fail "kcat -P reported errors"; }
for i in $(seq 0 999); do echo "$i key-$i value-$i"; done >"$WORK/want.txt"
kc -C -t "$T" -p 0 -o beginning -e -f '%o %k %s\n' >"$WORK/got.txt" 2>"$WORK/c.err" \
    || { cat "$WORK/c.err" >&2; fail "kcat -C failed"; }
diff -q "$WORK/want.txt" "$WORK/got.txt" >/dev/null \
    || { diff "$WORK/want.txt" "$WORK/got.txt" | head -20 >&2; fail "kcat -C output differs from what was produced"; }
echo "ok   kcat -P 1000 keyed lines, kcat -C -e reads them back in order at offsets 0..999"

kc -L -t "$T" | grep -q "topic \"$T\" with 1 partitions" || fail "kcat -L -t $T does not show 1 partition"
echo "ok   auto-created topic $T has 1 partition"

# 3. Read from the middle.
kc -C -t "$T" -p 0 -o 500 -c 3 -e -f '%o %k %s\n' >"$WORK/mid.txt" 2>/dev/null || fail "kcat -C -o 500 failed"
printf '500 key-500 value-500\n501 key-501 value-501\n502 key-502 value-502\n' | diff - "$WORK/mid.txt" >&2 \
    || fail "kcat -C -o 500 -c 3 returned the wrong records"
echo "ok   kcat -C -o 500 -c 3"

matrix produce_consume PASS "1000 keyed lines in order with offsets, read from the middle (no headers)"

# 4. Every codec kcat's librdkafka has.
SCENARIO=compression
for codec in gzip snappy lz4 zstd; do
    t="kcat-$codec"
    for i in $(seq 0 99); do echo "$codec line $i $codec $codec $codec $codec"; done >"$WORK/$codec.txt"
    # linger.ms: librdkafka sends a batch uncompressed when compressing makes it larger, as it
    # does for a first batch of one short line; one lingering batch takes all 100 lines.
    kc -P -t "$t" -p 0 -z "$codec" -X linger.ms=1000 <"$WORK/$codec.txt" 2>"$WORK/p.err" \
        || { cat "$WORK/p.err" >&2; fail "kcat -P -z $codec failed"; }
    kc -C -t "$t" -p 0 -o beginning -e -f '%s\n' >"$WORK/$codec.got" 2>/dev/null || fail "kcat -C ($codec) failed"
    diff -q "$WORK/$codec.txt" "$WORK/$codec.got" >/dev/null || fail "$codec round trip differs"
    # librdkafka < 2.8 silently sends uncompressed batches unless ApiVersions lists Produce v0
    # (KAFKA-18659): check that every batch on disk really carries the codec (attributes are the
    # int16 at byte 21 of a RecordBatch, the low 3 bits the codec id; the record count at 57).
    want_id=$(case $codec in gzip) echo 1;; snappy) echo 2;; lz4) echo 3;; zstd) echo 4;; esac)
    batches=$(python3 - "$WORK/data/$t-0/00000000000000000000.log" <<'PY'
import struct, sys
log = open(sys.argv[1], "rb").read()
pos = 0
while pos + 61 <= len(log):
    length = struct.unpack(">i", log[pos + 8:pos + 12])[0]
    codec = struct.unpack(">h", log[pos + 21:pos + 23])[0] & 7
    records = struct.unpack(">i", log[pos + 57:pos + 61])[0]
    print(f"{codec}:{records}", end=" ")
    pos += 12 + length
PY
)
    got_ids=$(tr ' ' '\n' <<<"$batches" | sed -n 's/:.*//p' | sort -u | tr '\n' ' ')
    [[ $got_ids == "$want_id " ]] \
        || fail "kcat -z $codec: batches on disk (codec:records) are $batches; want codec $want_id in all"
    echo "ok   kcat -z $codec round trip (100 lines, stored with codec id $want_id: codec:records $batches)"
done

matrix compression PASS "codecs: gzip snappy lz4 zstd"
SCENARIO=
echo "kcat smoke: all checks passed"
