#!/usr/bin/env bash
# Kafka's own command-line tools (from tests/kafka's jars, Kafka 4.x) against a broker:
# kafka-topics, kafka-configs, kafka-console-producer/consumer, kafka-consumer-groups,
# kafka-get-offsets, kafka-producer-perf-test, and kafka-dump-log (DumpLogSegments) on the
# .log/.index/.timeindex files the broker wrote: Kafka's own reader checks the on-disk format.
# Share groups (kafka-share-groups, kafka-console-share-consumer) are in share_tools.sh.
#
#   tests/java/tools.sh            # starts Skiff on a free port (same binary rules as run.sh)
#   tests/java/tools.sh --kafka    # ... or the reference Kafka
#   E2E_BOOTSTRAP=h:p E2E_SEGMENTS_DIR=<log dir> tests/java/tools.sh   # an already running broker
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOOL="bash $HERE/../kafka/tool.sh"
T_TIMEOUT=90

if [[ -z ${E2E_BOOTSTRAP:-} ]]; then
    KIND=skiff
    [[ ${1:-} == --kafka ]] && KIND=kafka
    # shellcheck source=tests/java/broker.sh
    source "$HERE/broker.sh"
    bash "$HERE/../kafka/install.sh" >/dev/null
    start_broker "$KIND"
    E2E_BOOTSTRAP=$BOOTSTRAP E2E_SEGMENTS_DIR=$SEGMENTS_DIR E2E_BROKER=$KIND
    OUT=$WORK
else
    OUT=$(mktemp -d -t skiff-tools-XXXXXX)
    trap 'rm -rf "$OUT"' EXIT
fi
B=$E2E_BOOTSTRAP
SEG=${E2E_SEGMENTS_DIR:?E2E_SEGMENTS_DIR must name the broker log dir}
echo "tools: Kafka CLI tools against ${E2E_BROKER:-broker} at $B (log dir $SEG)"

PASSED=0 FAILED=0
# Client-matrix bookkeeping (issue 6): each check counts for the scenario in SCEN; with
# MATRIX_RESULTS set, one `kafka-cli` line per scenario is appended at the end.
SCEN=admin
declare -A SCEN_OK=() SCEN_BAD=()
ok() { echo "ok   $*"; PASSED=$((PASSED + 1)); SCEN_OK[$SCEN]=$(( ${SCEN_OK[$SCEN]:-0} + 1 )); }
bad() { echo "FAIL $*" >&2; FAILED=$((FAILED + 1)); SCEN_BAD[$SCEN]="${SCEN_BAD[$SCEN]:-}${SCEN_BAD[$SCEN]:+; }$*"; }
matrix_report() {
    [[ -n ${MATRIX_RESULTS:-} ]] || return 0
    local sc note
    for sc in admin produce_consume groups offsets_for_times special; do
        case $sc in
            admin) note="kafka-topics create/describe/alter/list, kafka-configs alter/describe (topics, dynamic broker configs per broker and default, group configs, client quotas)" ;;
            produce_consume) note="kafka-console-producer/consumer keyed round trip" ;;
            groups) note="kafka-consumer-groups list/describe/state/reset-offsets" ;;
            offsets_for_times) note="kafka-get-offsets latest/earliest (no by-time lookup)" ;;
            special) note="kafka-producer-perf-test; kafka-dump-log reads the broker's segments and indexes" ;;
        esac
        if [[ -n ${SCEN_BAD[$sc]:-} ]]; then
            printf 'kafka-cli\t%s\tFAIL\t%s\n' "$sc" "$(printf '%s' "${SCEN_BAD[$sc]}" | tr '\t\n' '  ' | cut -c1-300)"
        elif [[ -n ${SCEN_OK[$sc]:-} ]]; then
            printf 'kafka-cli\t%s\tPASS\t%s\n' "$sc" "$note"
        fi
    done >>"$MATRIX_RESULTS"
}
# t NAME ARGS... : runs a tool, output (stdout+stderr) in $OUT/last.txt; non-zero exit is a failure.
t() {
    local rc=0
    timeout "$T_TIMEOUT" $TOOL "$@" >"$OUT/last.txt" 2>&1 || rc=$?
    if [[ $rc -ne 0 ]]; then
        echo "---- $* (exit $rc) ----" >&2
        tail -n 30 "$OUT/last.txt" >&2
    fi
    return "$rc"
}
has() { grep -qE -- "$1" "$OUT/last.txt"; }
show() { echo "---- output ----" >&2; head -n 40 "$OUT/last.txt" >&2; }

SUF=$RANDOM$RANDOM
TOPIC=tools-$SUF
RT=tools-rt-$SUF
PERF=tools-perf-$SUF
GROUP=tools-group-$SUF

# ---- kafka-topics ----
SCEN=admin
if t kafka-topics --bootstrap-server "$B" --create --topic "$TOPIC" --partitions 2 --replication-factor 1 \
        --config retention.ms=3600000 && has "Created topic $TOPIC"; then
    ok "kafka-topics --create $TOPIC (2 partitions, retention.ms)"
else show; bad "kafka-topics --create"; fi
if t kafka-topics --bootstrap-server "$B" --describe --topic "$TOPIC" \
        && has "PartitionCount: 2" && has "ReplicationFactor: 1" && has "retention.ms=3600000" \
        && has "Partition: 0[[:space:]]+Leader: 1[[:space:]]+Replicas: 1[[:space:]]+Isr: 1" \
        && has "Partition: 1[[:space:]]+Leader: 1"; then
    ok "kafka-topics --describe shows 2 partitions led by node 1 and the retention.ms override"
else show; bad "kafka-topics --describe"; fi
if t kafka-topics --bootstrap-server "$B" --alter --topic "$TOPIC" --partitions 3 \
        && t kafka-topics --bootstrap-server "$B" --describe --topic "$TOPIC" && has "PartitionCount: 3"; then
    ok "kafka-topics --alter --partitions 3"
else show; bad "kafka-topics --alter --partitions"; fi
if t kafka-topics --bootstrap-server "$B" --list && has "^$TOPIC\$"; then
    ok "kafka-topics --list"
else show; bad "kafka-topics --list"; fi

# ---- kafka-configs ----
if t kafka-configs --bootstrap-server "$B" --alter --entity-type topics --entity-name "$TOPIC" \
        --add-config max.message.bytes=2000000 \
        && has "Completed updating config for topic $TOPIC"; then
    ok "kafka-configs --alter --add-config max.message.bytes"
else show; bad "kafka-configs --alter"; fi
# The alter is applied asynchronously by Kafka's broker: retry the describe for a few seconds.
found=0
for _ in $(seq 20); do
    if t kafka-configs --bootstrap-server "$B" --describe --entity-type topics --entity-name "$TOPIC" \
            && has "retention.ms=3600000 sensitive=false synonyms=\{DYNAMIC_TOPIC_CONFIG:retention.ms=3600000" \
            && has "max.message.bytes=2000000"; then found=1; break; fi
    sleep 0.5
done
if [[ $found -eq 1 ]]; then ok "kafka-configs --describe (topic): both overrides, source DYNAMIC_TOPIC_CONFIG"
else show; bad "kafka-configs --describe (topic)"; fi
if t kafka-configs --bootstrap-server "$B" --describe --all --entity-type topics --entity-name "$TOPIC" \
        && has "segment.bytes=1073741824 sensitive=false synonyms=\{DEFAULT_CONFIG:log.segment.bytes=1073741824\}" \
        && has "cleanup.policy=delete sensitive=false synonyms=\{DEFAULT_CONFIG:log.cleanup.policy=delete\}"; then
    ok "kafka-configs --describe --all (topic): defaults with their broker synonyms"
else show; bad "kafka-configs --describe --all (topic)"; fi
if t kafka-configs --bootstrap-server "$B" --describe --all --entity-type brokers --entity-name 1 \
        && has "log.dirs=$SEG sensitive=false synonyms=\{STATIC_BROKER_CONFIG:log.dirs=$SEG"; then
    ok "kafka-configs --describe --all (broker 1): log.dirs is a static broker config"
else show; bad "kafka-configs --describe --all (broker)"; fi

# Dynamic broker configs, per broker and cluster default (Kafka applies them asynchronously:
# retry the describe), and a non-dynamic key refused with Kafka's text.
described() { # ENTITY-ARGS... -- PATTERN: describe until PATTERN shows up (10 s)
    local args=() pat
    while [[ $1 != -- ]]; do args+=("$1"); shift; done
    pat=$2
    for _ in $(seq 20); do
        if t kafka-configs --bootstrap-server "$B" --describe "${args[@]}" && has "$pat"; then return 0; fi
        sleep 0.5
    done
    return 1
}
if t kafka-configs --bootstrap-server "$B" --alter --entity-type brokers --entity-name 1 \
        --add-config log.cleaner.threads=2 && has "Completed updating config for broker 1" \
        && described --entity-type brokers --entity-name 1 -- \
            "log.cleaner.threads=2 sensitive=false synonyms=\{DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2, DEFAULT_CONFIG:log.cleaner.threads=1\}" \
        && t kafka-configs --bootstrap-server "$B" --alter --entity-type brokers --entity-name 1 \
            --delete-config log.cleaner.threads; then
    ok "kafka-configs --alter brokers 1 log.cleaner.threads=2: DYNAMIC_BROKER_CONFIG, then deleted"
else show; bad "kafka-configs dynamic broker config"; fi
if t kafka-configs --bootstrap-server "$B" --alter --entity-type brokers --entity-default \
        --add-config log.cleaner.backoff.ms=15001 && has "Completed updating default config for brokers" \
        && described --entity-type brokers --entity-default -- \
            "log.cleaner.backoff.ms=15001 sensitive=false synonyms=\{DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.backoff.ms=15001\}" \
        && t kafka-configs --bootstrap-server "$B" --alter --entity-type brokers --entity-default \
            --delete-config log.cleaner.backoff.ms; then
    ok "kafka-configs --alter --entity-default log.cleaner.backoff.ms: DYNAMIC_DEFAULT_BROKER_CONFIG, then deleted"
else show; bad "kafka-configs dynamic default broker config"; fi
if ! t kafka-configs --bootstrap-server "$B" --alter --entity-type brokers --entity-name 1 \
        --add-config log.retention.hours=10 2>/dev/null \
        && has "InvalidRequestException: Cannot update these configs dynamically: \[log.retention.hours\]"; then
    ok "kafka-configs --alter brokers 1 log.retention.hours refused: Cannot update these configs dynamically"
else show; bad "kafka-configs non-dynamic broker config"; fi
# Group configs (KIP-848).
GCFG=tools-gcfg-$SUF
if t kafka-configs --bootstrap-server "$B" --alter --entity-type groups --entity-name "$GCFG" \
        --add-config consumer.session.timeout.ms=50000 && has "Completed updating config for group $GCFG" \
        && described --entity-type groups --entity-name "$GCFG" -- \
            "consumer.session.timeout.ms=50000 sensitive=false synonyms=\{DYNAMIC_GROUP_CONFIG:consumer.session.timeout.ms=50000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000\}" \
        && ! t kafka-configs --bootstrap-server "$B" --alter --entity-type groups --entity-name "$GCFG" \
            --add-config consumer.session.timeout.ms=5000 2>/dev/null \
        && has "InvalidConfigurationException: consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."; then
    ok "kafka-configs --alter groups consumer.session.timeout.ms: DYNAMIC_GROUP_CONFIG; out of range refused"
else show; bad "kafka-configs group config"; fi

# Client quotas (users, clients, their pairs and defaults); `--describe --entity-type users`
# also asks for SCRAM credentials. Every quota set here is deleted again, so the rest of the
# script runs unthrottled.
QU=tools-quser-$SUF QC=tools-qclient-$SUF
if t kafka-configs --bootstrap-server "$B" --alter --add-config 'producer_byte_rate=1024' \
        --entity-type users --entity-name "$QU" && has "Completed updating config for user $QU." \
        && t kafka-configs --bootstrap-server "$B" --describe --entity-type users \
        && has "Quota configs for user-principal '$QU' are producer_byte_rate=1024.0"; then
    ok "kafka-configs --alter/--describe --entity-type users: producer_byte_rate=1024"
else show; bad "kafka-configs user quota"; fi
if t kafka-configs --bootstrap-server "$B" --alter --add-config 'request_percentage=50,consumer_byte_rate=2048' \
        --entity-type clients --entity-name "$QC" && has "Completed updating config for client $QC." \
        && t kafka-configs --bootstrap-server "$B" --describe --entity-type clients \
        && has "Quota configs for client-id '$QC' are consumer_byte_rate=2048.0, request_percentage=50.0"; then
    ok "kafka-configs --alter/--describe --entity-type clients: two quotas"
else show; bad "kafka-configs client quota"; fi
if t kafka-configs --bootstrap-server "$B" --alter --add-config 'consumer_byte_rate=1000000000' \
        --entity-type clients --entity-default && has "Completed updating default config for clients in the cluster." \
        && t kafka-configs --bootstrap-server "$B" --describe --entity-type clients --entity-default \
        && has "Quota configs for the default client-id are consumer_byte_rate=1.0E9"; then
    ok "kafka-configs --entity-type clients --entity-default"
else show; bad "kafka-configs default client quota"; fi
if t kafka-configs --bootstrap-server "$B" --alter --add-config 'controller_mutation_rate=10' \
        --entity-type users --entity-name "$QU" --entity-type clients --entity-default \
        && t kafka-configs --bootstrap-server "$B" --describe --entity-type users --entity-name "$QU" --entity-type clients \
        && has "Quota configs for user-principal '$QU', the default client-id are controller_mutation_rate=10.0"; then
    ok "kafka-configs user + default client-id quota"
else show; bad "kafka-configs user/client quota"; fi
if ! t kafka-configs --bootstrap-server "$B" --alter --add-config 'consumer_byte_rate=1.5' \
        --entity-type users --entity-name "$QU" 2>/dev/null \
        && has "InvalidRequestException: consumer_byte_rate cannot be a fractional value."; then
    ok "kafka-configs fractional consumer_byte_rate refused with Kafka's message"
else show; bad "kafka-configs fractional quota"; fi
if t kafka-configs --bootstrap-server "$B" --alter --delete-config producer_byte_rate --entity-type users --entity-name "$QU" \
        && t kafka-configs --bootstrap-server "$B" --alter --delete-config controller_mutation_rate \
            --entity-type users --entity-name "$QU" --entity-type clients --entity-default \
        && t kafka-configs --bootstrap-server "$B" --alter --delete-config 'request_percentage,consumer_byte_rate' \
            --entity-type clients --entity-name "$QC" \
        && t kafka-configs --bootstrap-server "$B" --alter --delete-config consumer_byte_rate --entity-type clients --entity-default \
        && t kafka-configs --bootstrap-server "$B" --describe --entity-type clients && ! has "$QC|default client-id" \
        && t kafka-configs --bootstrap-server "$B" --describe --entity-type users && ! has "$QU"; then
    ok "kafka-configs --delete-config removes the quotas"
else show; bad "kafka-configs quota deletion"; fi

# ---- console producer / consumer round trip, consumer groups, get-offsets ----
SCEN=produce_consume
N=200
for i in $(seq 1 $N); do echo "key-$i:value-$i"; done >"$OUT/in.txt"
if t kafka-topics --bootstrap-server "$B" --create --topic "$RT" --partitions 1 --replication-factor 1 \
        && timeout "$T_TIMEOUT" $TOOL kafka-console-producer --bootstrap-server "$B" --topic "$RT" \
            --reader-property parse.key=true --reader-property key.separator=: \
            --producer-property acks=all <"$OUT/in.txt" >"$OUT/last.txt" 2>&1; then
    ok "kafka-console-producer wrote $N keyed lines"
else show; bad "kafka-console-producer"; fi
if t kafka-console-consumer --bootstrap-server "$B" --topic "$RT" --group "$GROUP" --from-beginning \
        --max-messages "$N" --timeout-ms 30000 \
        --formatter-property print.key=true --formatter-property key.separator=: \
        && { grep -E "^key-[0-9]+:" "$OUT/last.txt" >"$OUT/out.txt" || true; } \
        && diff -q "$OUT/in.txt" "$OUT/out.txt" >/dev/null; then
    ok "kafka-console-consumer --group read the $N lines back in order with their keys"
else show; { diff "$OUT/in.txt" "$OUT/out.txt" 2>/dev/null | head -5 >&2 || true; }; bad "kafka-console-consumer round trip"; fi
SCEN=groups
if t kafka-consumer-groups --bootstrap-server "$B" --list && has "^$GROUP\$"; then
    ok "kafka-consumer-groups --list"
else show; bad "kafka-consumer-groups --list"; fi
if t kafka-consumer-groups --bootstrap-server "$B" --describe --group "$GROUP" \
        && has "$GROUP[[:space:]]+$RT[[:space:]]+0[[:space:]]+$N[[:space:]]+$N[[:space:]]+0"; then
    ok "kafka-consumer-groups --describe: committed $N, log end $N, lag 0"
else show; bad "kafka-consumer-groups --describe"; fi
if t kafka-consumer-groups --bootstrap-server "$B" --describe --group "$GROUP" --state \
        && has "Empty"; then
    ok "kafka-consumer-groups --describe --state: Empty after the consumer left"
else show; bad "kafka-consumer-groups --describe --state"; fi
if t kafka-consumer-groups --bootstrap-server "$B" --reset-offsets --group "$GROUP" --topic "$RT" \
        --to-offset 50 --execute \
        && t kafka-consumer-groups --bootstrap-server "$B" --describe --group "$GROUP" \
        && has "$GROUP[[:space:]]+$RT[[:space:]]+0[[:space:]]+50[[:space:]]+$N[[:space:]]+$((N - 50))"; then
    ok "kafka-consumer-groups --reset-offsets --to-offset 50: lag $((N - 50))"
else show; bad "kafka-consumer-groups --reset-offsets"; fi
SCEN=offsets_for_times
if t kafka-get-offsets --bootstrap-server "$B" --topic "$RT" && has "^$RT:0:$N\$" \
        && t kafka-get-offsets --bootstrap-server "$B" --topic "$RT" --time -2 && has "^$RT:0:0\$"; then
    ok "kafka-get-offsets: latest $N, earliest 0"
else show; bad "kafka-get-offsets"; fi

# ---- producer perf test on a topic with 1 MiB segments (several segments, index entries) ----
SCEN=special
if t kafka-topics --bootstrap-server "$B" --create --topic "$PERF" --partitions 1 --replication-factor 1 \
        --config segment.bytes=1048576 \
        && t kafka-producer-perf-test --topic "$PERF" --num-records 30000 --record-size 100 --throughput -1 \
            --producer-props bootstrap.servers="$B" acks=all linger.ms=5 \
        && has "30000 records sent"; then
    ok "kafka-producer-perf-test: 30000 records sent ($(grep -o '[0-9.]* records/sec' "$OUT/last.txt" | tail -1))"
else show; bad "kafka-producer-perf-test"; fi

# ---- DumpLogSegments on the segments this broker wrote ----
RT_LOG=$SEG/$RT-0/00000000000000000000.log
if t kafka-dump-log --files "$RT_LOG" --print-data-log --deep-iteration \
        && ! has "Non-consecutive|Exception|[Ee]rror" \
        && has "baseOffset: 0 " && has "magic: 2" \
        && [[ $(grep -cE "\| offset: [0-9]+ .*key: key-[0-9]+ payload: value-[0-9]+" "$OUT/last.txt") -eq $N ]] \
        && has "\| offset: 0 .*key: key-1 payload: value-1" \
        && has "\| offset: $((N - 1)) .*key: key-$N payload: value-$N"; then
    ok "kafka-dump-log --deep-iteration reads all $N records (keys, payloads, offsets) from $RT-0's segment"
else show; bad "kafka-dump-log on $RT_LOG"; fi

mapfile -t PERF_LOGS < <(ls "$SEG/$PERF-0/"*.log 2>/dev/null | sort)
if [[ ${#PERF_LOGS[@]} -ge 2 ]]; then
    ok "$PERF-0 has ${#PERF_LOGS[@]} segments"
else bad "$PERF-0 should have rolled into several 1 MiB segments, has ${#PERF_LOGS[@]}"; fi
FIRST=${PERF_LOGS[0]:-$SEG/$PERF-0/00000000000000000000.log}
BASE=${FIRST%.log}
if t kafka-dump-log --files "$FIRST" --deep-iteration && ! has "Non-consecutive|Exception|[Ee]rror" \
        && has "baseOffset: 0 "; then
    ok "kafka-dump-log --deep-iteration: $(basename "$FIRST") of $PERF-0 has consecutive offsets"
else show; bad "kafka-dump-log on $FIRST"; fi
for f in "$BASE.index" "$BASE.timeindex"; do
    if t kafka-dump-log --files "$f" --index-sanity-check && has "passed sanity check"; then
        ok "kafka-dump-log --index-sanity-check $(basename "$f")"
    else show; bad "kafka-dump-log --index-sanity-check $f"; fi
    if t kafka-dump-log --files "$f" --verify-index-only \
            && ! has "Mismatch|mismatch|not found|out of order|Exception|is empty"; then
        ok "kafka-dump-log --verify-index-only $(basename "$f"): every entry matches the log"
    else show; bad "kafka-dump-log --verify-index-only $f"; fi
    if t kafka-dump-log --files "$f" && has "^(timestamp: [0-9]+ )?offset: [0-9]+"; then
        ok "kafka-dump-log $(basename "$f"): $(grep -cE '^(timestamp: [0-9]+ )?offset: ' "$OUT/last.txt") entries"
    else show; bad "kafka-dump-log $f"; fi
done

# ---- share groups (KIP-932): kafka-share-groups, kafka-console-share-consumer ----
# shellcheck source=tests/java/share_tools.sh
source "$HERE/share_tools.sh"

matrix_report
echo "tools: $PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 ]]
