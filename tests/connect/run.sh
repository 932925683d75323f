#!/usr/bin/env bash
# Kafka Connect (distributed mode) and MirrorMaker 2 (dedicated mode) against a broker.
#
#   tests/connect/run.sh            # against Skiff (E2E_SKIFF_BIN, else <target>/debug/skiff)
#   tests/connect/run.sh --kafka    # against the reference Kafka (validates the scenario)
#   MATRIX_RESULTS=file tests/connect/run.sh   # also appends client-matrix TSV lines
#   CONNECT_LOG_DIR=dir   keep the worker / MirrorMaker logs and configs there (WORK is deleted)
#   CONNECT_LINES=n       lines / records per phase (default 200)
#
# 1. Connect: a distributed worker (REST on a free loopback port) whose config/offset/status
#    topics Connect creates itself (replication factor 1; it checks through DescribeConfigs
#    that they are compacted). FileStreamSource reads a file of N lines into a topic,
#    FileStreamSink writes that topic to another file: the files must match. The worker is
#    stopped (SIGTERM), M lines are appended, the worker is started again: it must re-read its
#    connectors from the config topic and its source offset from the offsets topic, so exactly
#    the M new lines arrive (no duplicates). The worker logs must hold no ERROR line.
# 2. MirrorMaker 2: clusters `skiff` (the broker under test) and `kafka` (a second, reference
#    Kafka started here), skiff->kafka only. N keyed records on the broker must appear in
#    order, exactly once, in `skiff.<topic>` on the reference Kafka, and a consumer group's
#    committed offset on the broker must be translated (checkpoints) and synced onto the
#    reference Kafka (sync.group.offsets.enabled). The source topic's retention.ms must be
#    copied (topic config sync), and topic ACL sync (on by default: DescribeAcls on the
#    source) must end in "no authorizer" (SECURITY_DISABLED), not in an ERROR.
# Matrix lines: connect special (round trip, internal topics verified compacted), connect
# compaction (restart resumes from the compacted offsets/config topics), mirrormaker2
# produce_consume, groups (checkpoint + offset sync) and special (config + ACL sync).
# The Connect/MirrorMaker jars come from tests/connect/install.sh (see there why they are a
# separate, self-consistent version); the CLI tools used for checks from tests/kafka. Every
# wait has a deadline; every JVM started here is killed on exit.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KIND=skiff
[[ ${1:-} == --kafka ]] && KIND=kafka
TOOL="bash $HERE/../kafka/tool.sh"
N=${CONNECT_LINES:-200}   # lines / records per phase
M=50                      # lines appended while the worker is down
T0=$SECONDS

# shellcheck source=tests/java/broker.sh
source "$HERE/../java/broker.sh"
CONNECT_HOME=$(bash "$HERE/install.sh")
bash "$HERE/../kafka/install.sh" >/dev/null
CP="$CONNECT_HOME/libs/*"
JVM_OPTS=(-Xms128m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true)

# ---------- bookkeeping: results, JVMs, cleanup ----------
PASSED=0 FAILED=0
declare -a SUMMARY=()
ok() { echo "ok   $*"; PASSED=$((PASSED + 1)); }
CONNECT_WHY=   # the first failure of phase 1, for its matrix notes
bad() { echo "FAIL $*" >&2; FAILED=$((FAILED + 1)); [[ -n $CONNECT_WHY ]] || CONNECT_WHY="$*"; }
# result CLIENT SCENARIO PASS|FAIL|SKIP NOTE
result() {
    SUMMARY+=("$1 $2 $3: $4")
    if [[ -n ${MATRIX_RESULTS:-} ]]; then
        printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4//$'\t'/ }" >>"$MATRIX_RESULTS"
    fi
}

declare -a JVM_PIDS=()
TARGET_DIR=$WORK/target
TARGET_STARTED=0
stop_pid() {
    local pid=$1
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    echo "pid $pid still alive 15 s after SIGTERM: SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
connect_cleanup() {
    local rc=$?
    for pid in "${JVM_PIDS[@]}"; do stop_pid "$pid"; done
    [[ -n ${TARGET_BG:-} ]] && { kill "$TARGET_BG" 2>/dev/null || true; wait "$TARGET_BG" 2>/dev/null || true; }
    [[ $TARGET_STARTED == 1 || -f $TARGET_DIR/kafka.pid ]] && bash "$HERE/../kafka/stop.sh" "$TARGET_DIR" || true
    if [[ -n ${CONNECT_LOG_DIR:-} ]]; then
        mkdir -p "$CONNECT_LOG_DIR" && cp "$WORK"/*.log "$WORK"/*.out "$WORK"/*.properties "$CONNECT_LOG_DIR"/ 2>/dev/null || true
    fi
    if [[ $rc -ne 0 ]]; then
        for f in "$WORK"/worker1.log "$WORK"/worker2.log "$WORK"/mm2.log; do
            [[ -f $f ]] && { echo "----- $f (WARN/ERROR, last 30) -----" >&2; grep -E '\] (WARN|ERROR) ' "$f" | tail -n 30 >&2; }
        done
    fi
    # broker_cleanup reads the exit status from $?; errexit must not fire on re-raising it.
    set +e
    (exit "$rc")
    broker_cleanup
}
trap connect_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Log4j2 for the Connect/MM2 JVMs: everything at INFO into the file named by -Dskiff.log.
cat >"$WORK/log4j2.properties" <<'LOG'
status = warn
appender.f.type = File
appender.f.name = F
appender.f.fileName = ${sys:skiff.log}
appender.f.layout.type = PatternLayout
appender.f.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.f.ref = F
logger.reflections.name = org.reflections
logger.reflections.level = error
logger.topicadmin.name = org.apache.kafka.connect.util.TopicAdmin
logger.topicadmin.level = debug
LOG

# start_jvm LOGFILE CLASS ARGS... : background JVM; sets LAST_PID.
start_jvm() {
    local log=$1; shift
    java "${JVM_OPTS[@]}" -Dlog4j2.configurationFile="$WORK/log4j2.properties" -Dskiff.log="$log" \
        -cp "$CP" "$@" </dev/null >"$log.out" 2>&1 &
    LAST_PID=$!
    JVM_PIDS+=("$LAST_PID")
}

# t ARGS... : a Kafka CLI tool (tests/kafka/tool.sh), output in $WORK/last.txt.
t() {
    local rc=0
    timeout 90 $TOOL "$@" >"$WORK/last.txt" 2>&1 || rc=$?
    [[ $rc -eq 0 ]] || { echo "---- $1 (exit $rc) ----" >&2; tail -n 20 "$WORK/last.txt" >&2; }
    return "$rc"
}

# Lines in a worker log that are ERRORs, and WARNs that mention the broker side.
log_errors() { grep -h '^\[[^]]*\] ERROR' "$@" 2>/dev/null || true; }
broker_warns() {
    grep -h '^\[[^]]*\] WARN' "$@" 2>/dev/null \
        | grep -v 'runtime.isolation' \
        | grep -iE 'broker|node|error|exception|topic|partition|coordinator|unsupported|version|config|acl' \
        | sed -E 's/^\[[^]]*\] //' || true
}

start_broker "$KIND"
B=$BOOTSTRAP
SUF=$RANDOM$RANDOM

# The MirrorMaker 2 target (always a reference Kafka) starts in the background meanwhile.
TARGET_PORT=$(free_port)
TB=127.0.0.1:$TARGET_PORT
bash "$HERE/../kafka/start.sh" "$TARGET_PORT" "$TARGET_DIR" >"$WORK/target-start.out" 2>&1 &
TARGET_BG=$!

# ================= 1. Kafka Connect, distributed mode =================
REST_PORT=$(free_port)
REST=http://127.0.0.1:$REST_PORT
CTOPIC=connect-lines-$SUF
SRC_FILE=$WORK/source.txt
SINK_FILE=$WORK/sink.txt
cat >"$WORK/worker.properties" <<PROPS
bootstrap.servers=$B
group.id=connect-cluster-$SUF
key.converter=org.apache.kafka.connect.storage.StringConverter
value.converter=org.apache.kafka.connect.storage.StringConverter
config.storage.topic=connect-configs-$SUF
offset.storage.topic=connect-offsets-$SUF
status.storage.topic=connect-status-$SUF
config.storage.replication.factor=1
offset.storage.replication.factor=1
status.storage.replication.factor=1
offset.flush.interval.ms=1000
listeners=http://127.0.0.1:$REST_PORT
rest.advertised.host.name=127.0.0.1
rest.advertised.port=$REST_PORT
PROPS
for i in $(seq 1 "$N"); do echo "line $i of the first batch $SUF"; done >"$SRC_FILE"
: >"$SINK_FILE"

# http METHOD PATH [BODY] : prints the body, returns non-zero unless 2xx.
http() {
    local code
    code=$(curl -s --max-time 10 -o "$WORK/http.txt" -w '%{http_code}' -X "$1" \
        -H 'Content-Type: application/json' ${3:+--data "$3"} "$REST$2" || echo 000)
    [[ $code == 2* ]]
}
# put_connector NAME JSON : retries while the worker is still joining (bounded).
put_connector() {
    local deadline=$((SECONDS + 60))
    until http PUT "/connectors/$1/config" "$2"; do
        (( SECONDS < deadline )) || { echo "PUT /connectors/$1/config: $(cat "$WORK/http.txt")" >&2; return 1; }
        sleep 0.5
    done
}
# wait_running NAME : connector and its task(s) RUNNING (bounded); prints the status on failure.
wait_running() {
    local deadline=$((SECONDS + 60)) st=
    while (( SECONDS < deadline )); do
        if http GET "/connectors/$1/status"; then
            st=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); t=d.get("tasks",[]);
print("RUNNING" if d["connector"]["state"]=="RUNNING" and t and all(x["state"]=="RUNNING" for x in t) else
 ("FAILED" if d["connector"]["state"]=="FAILED" or any(x["state"]=="FAILED" for x in t) else "WAIT"))' "$WORK/http.txt")
            [[ $st == RUNNING ]] && return 0
            [[ $st == FAILED ]] && break
        fi
        sleep 0.5
    done
    echo "connector $1 not RUNNING: $(cat "$WORK/http.txt" 2>/dev/null)" >&2
    return 1
}
# wait_sink_lines COUNT : sink file reaches COUNT lines (bounded), then stays for 3 s more so
# duplicates arriving late are seen.
wait_sink_lines() {
    local deadline=$((SECONDS + 60))
    while (( $(wc -l <"$SINK_FILE") < $1 )) && (( SECONDS < deadline )); do sleep 0.5; done
    (( $(wc -l <"$SINK_FILE") >= $1 )) || return 1
    sleep 3
}
wait_worker_rest() {
    local deadline=$((SECONDS + 90))
    until http GET /connectors; do
        kill -0 "$LAST_PID" 2>/dev/null || { echo "worker exited" >&2; return 1; }
        (( SECONDS < deadline )) || { echo "worker REST did not answer within 90 s" >&2; return 1; }
        sleep 0.5
    done
}

connect_ok=1 restart_ok=1
start_jvm "$WORK/worker1.log" org.apache.kafka.connect.cli.ConnectDistributed "$WORK/worker.properties"
W1=$LAST_PID
if wait_worker_rest \
    && put_connector file-source "{\"connector.class\":\"org.apache.kafka.connect.file.FileStreamSourceConnector\",\"tasks.max\":\"1\",\"file\":\"$SRC_FILE\",\"topic\":\"$CTOPIC\"}" \
    && put_connector file-sink "{\"connector.class\":\"org.apache.kafka.connect.file.FileStreamSinkConnector\",\"tasks.max\":\"1\",\"file\":\"$SINK_FILE\",\"topics\":\"$CTOPIC\"}" \
    && wait_running file-source && wait_running file-sink; then
    ok "connect: worker up at $REST after $((SECONDS - T0)) s, file-source and file-sink RUNNING"
else
    bad "connect: worker or connectors did not start"; connect_ok=0
fi
if [[ $connect_ok == 1 ]]; then
    if wait_sink_lines "$N" && cmp -s "$SRC_FILE" "$SINK_FILE"; then
        ok "connect: $N lines file -> $CTOPIC -> file, identical"
    else
        bad "connect: sink file has $(wc -l <"$SINK_FILE") lines, want the $N source lines"
        diff "$SRC_FILE" "$SINK_FILE" | head -n 5 >&2 || true
        connect_ok=0
    fi
fi
stop_pid "$W1"

# Restart: connectors come back from the config topic, the source resumes at its stored offset.
if [[ $connect_ok == 1 ]]; then
    for i in $(seq 1 "$M"); do echo "line $i of the second batch $SUF"; done >>"$SRC_FILE"
    start_jvm "$WORK/worker2.log" org.apache.kafka.connect.cli.ConnectDistributed "$WORK/worker.properties"
    W2=$LAST_PID
    if wait_worker_rest && wait_running file-source && wait_running file-sink; then
        if wait_sink_lines $((N + M)) && cmp -s "$SRC_FILE" "$SINK_FILE"; then
            ok "connect: after a restart exactly the $M appended lines arrived (source offset from connect-offsets-$SUF)"
        else
            bad "connect: after restart the sink file has $(wc -l <"$SINK_FILE") lines, want $((N + M)) identical to the source"
            diff "$SRC_FILE" "$SINK_FILE" | head -n 5 >&2 || true
            restart_ok=0
        fi
    else
        bad "connect: connectors not RUNNING after worker restart"; restart_ok=0
    fi
    stop_pid "$W2"
else
    restart_ok=0
fi
# The restarted worker found its internal topics (created by the first one) and verified through
# DescribeConfigs that they are compacted: Connect checks topics that already exist (TopicAdmin
# logs what it found at DEBUG; when DescribeConfigs fails it says "Unable to use admin client
# to verify the cleanup policy" and carries on unverified).
if [[ $restart_ok == 1 ]]; then
    bad_topics=
    for kind in configs offsets status; do
        grep -q "Found cleanup.policy=compact for topic 'connect-$kind-$SUF'" "$WORK/worker2.log" \
            || bad_topics+=" connect-$kind-$SUF"
    done
    if grep -q 'Unable to use admin client to verify the cleanup policy' "$WORK/worker2.log"; then
        bad_topics+=" (DescribeConfigs failed: $(grep -o 'Unable to use admin client to verify[^(]*' "$WORK/worker2.log" | head -n 1))"
    fi
    if [[ -z $bad_topics ]]; then
        ok "connect: config/offset/status topics verified compacted by Connect (DescribeConfigs: cleanup.policy=compact)"
    else
        bad "connect: cleanup policy not verified as compact for:$bad_topics"; connect_ok=0
    fi
else
    connect_ok=0   # the check happens on the restart, which failed
fi
errs=$(log_errors "$WORK"/worker1.log "$WORK"/worker2.log)
if [[ -n $errs ]]; then
    bad "connect: worker logs have ERROR lines:"; echo "$errs" | head -n 20 >&2
    connect_ok=0
else
    ok "connect: no ERROR line in the worker logs"
fi
CONNECT_WARNS=$(broker_warns "$WORK"/worker1.log "$WORK"/worker2.log)

if [[ $connect_ok == 1 ]]; then
    result connect special PASS "distributed worker; config/offset/status topics created by Connect (RF 1) and compacted (DescribeConfigs); FileStreamSource -> topic -> FileStreamSink $N lines identical; no ERROR in worker log"
else
    result connect special FAIL "$CONNECT_WHY"
fi
if [[ $restart_ok == 1 ]]; then
    result connect compaction PASS "worker restart: connectors re-read from the compacted config topic, FileStreamSource resumed from its offset in the compacted offsets topic, $M new lines arrived exactly once"
else
    result connect compaction FAIL "$CONNECT_WHY"
fi

# ================= 2. MirrorMaker 2, dedicated mode =================
MTOPIC=mm2-src-$SUF
MGROUP=mm2-group-$SUF
mm2_copy=FAIL mm2_groups=FAIL mm2_special=FAIL mm2_copy_note= mm2_groups_note= mm2_special_note=
RETENTION=123456789   # a topic config MirrorMaker 2 must copy (DescribeConfigs on the source)
for i in $(seq 1 "$N"); do printf 'key-%d\tvalue %d %s\n' $((i % 17)) "$i" "$SUF"; done >"$WORK/mm2-in.tsv"
if t kafka-topics --bootstrap-server "$B" --create --topic "$MTOPIC" --partitions 1 --replication-factor 1 \
        --config retention.ms=$RETENTION \
    && timeout 90 $TOOL kafka-console-producer --bootstrap-server "$B" --topic "$MTOPIC" \
        --reader-property parse.key=true --reader-property key.separator=$'\t' <"$WORK/mm2-in.tsv" >"$WORK/last.txt" 2>&1 \
    && t kafka-console-consumer --bootstrap-server "$B" --topic "$MTOPIC" --group "$MGROUP" \
        --from-beginning --max-messages "$N" --timeout-ms 30000; then
    ok "mm2: $N keyed records on $MTOPIC at the source, read by group $MGROUP (commits on close)"
else
    bad "mm2: could not prepare the source topic / group"; cat "$WORK/last.txt" | tail -n 5 >&2
fi

wait "$TARGET_BG" && TARGET_STARTED=1 || { cat "$WORK/target-start.out" >&2; bad "mm2: reference Kafka target did not start"; }
TARGET_BG=
cat >"$WORK/mm2.properties" <<PROPS
clusters=skiff, kafka
skiff.bootstrap.servers=$B
kafka.bootstrap.servers=$TB
skiff->kafka.enabled=true
kafka->skiff.enabled=false
skiff->kafka.topics=$MTOPIC
skiff->kafka.groups=$MGROUP
skiff->kafka.offset.lag.max=0
replication.factor=1
checkpoints.topic.replication.factor=1
heartbeats.topic.replication.factor=1
offset-syncs.topic.replication.factor=1
offset.storage.replication.factor=1
status.storage.replication.factor=1
config.storage.replication.factor=1
refresh.topics.interval.seconds=5
refresh.groups.interval.seconds=5
sync.topic.configs.interval.seconds=5
sync.topic.acls.interval.seconds=5
emit.heartbeats.interval.seconds=2
emit.checkpoints.interval.seconds=2
sync.group.offsets.enabled=true
sync.group.offsets.interval.seconds=2
offset.flush.interval.ms=1000
PROPS
if [[ $TARGET_STARTED == 1 ]]; then
    start_jvm "$WORK/mm2.log" org.apache.kafka.connect.mirror.MirrorMaker "$WORK/mm2.properties"
    MM2=$LAST_PID
    # Wait (bounded, by its log: no JVM per poll) until MirrorMaker created the remote topic,
    # then read N records back; the group check below also proves the topic holds no more.
    deadline=$((SECONDS + 120))
    until grep -q "Created remote topic skiff.$MTOPIC " "$WORK/mm2.log" 2>/dev/null; do
        kill -0 "$MM2" 2>/dev/null || { echo "mm2 exited" >&2; break; }
        (( SECONDS < deadline )) || { echo "mm2 did not create skiff.$MTOPIC within 120 s" >&2; break; }
        sleep 1
    done
    : >"$WORK/mm2-out.tsv"
    timeout 120 $TOOL kafka-console-consumer --bootstrap-server "$TB" --topic "skiff.$MTOPIC" \
        --from-beginning --max-messages "$N" --timeout-ms 60000 --formatter-property print.key=true \
        --formatter-property key.separator=$'\t' >"$WORK/mm2-out.tsv" 2>"$WORK/last.txt" || true
    if cmp -s "$WORK/mm2-out.tsv" "$WORK/mm2-in.tsv"; then
        ok "mm2: skiff.$MTOPIC on the reference Kafka starts with the $N keyed records in order (after $((SECONDS - T0)) s)"
        mm2_copy=PASS
    else
        bad "mm2: skiff.$MTOPIC gave $(wc -l <"$WORK/mm2-out.tsv") records, want the $N source records in order"
        diff "$WORK/mm2-out.tsv" "$WORK/mm2-in.tsv" | head -n 5 >&2 || true
        mm2_copy_note="skiff.$MTOPIC gave $(wc -l <"$WORK/mm2-out.tsv") records within the deadline, want the $N source records in order"
    fi
    # Checkpoints: the group's offset N on the source, translated and synced to the target;
    # the same output's LOG-END-OFFSET says the target topic holds exactly N records.
    deadline=$((SECONDS + 60)) synced= end=
    while [[ $mm2_copy == PASS ]] && (( SECONDS < deadline )); do
        if timeout 60 $TOOL kafka-consumer-groups --bootstrap-server "$TB" --describe --group "$MGROUP" >"$WORK/last.txt" 2>&1; then
            read -r synced end < <(awk -v t="skiff.$MTOPIC" '$2 == t { print $4, $5 }' "$WORK/last.txt") || true
            [[ $synced == "$N" ]] && break
        fi
        sleep 2
    done
    if [[ $mm2_copy == PASS ]]; then
        if [[ $end == "$N" ]]; then
            ok "mm2: skiff.$MTOPIC holds exactly $N records (log end offset)"
            mm2_copy_note="skiff->kafka: $N keyed records mirrored into skiff.$MTOPIC exactly once, in order"
        else
            bad "mm2: skiff.$MTOPIC log end offset '${end:-?}', want $N"
            mm2_copy=FAIL mm2_copy_note="skiff.$MTOPIC log end offset '${end:-?}', want $N (duplicates?)"
        fi
    fi
    if [[ $synced == "$N" ]]; then
        ok "mm2: group $MGROUP offset $N on the source was checkpointed and synced to skiff.$MTOPIC on the target"
        mm2_groups=PASS mm2_groups_note="group $MGROUP committed offset $N on the source: checkpoint emitted and offset synced to the target (sync.group.offsets.enabled)"
    else
        bad "mm2: group $MGROUP offset on the target is '${synced:-none}', want $N"
        tail -n 5 "$WORK/last.txt" >&2
        mm2_groups_note="group offset on the target '${synced:-none}' within 60 s, want $N"
    fi
    # Topic config sync: the target topic carries the source topic's retention.ms.
    target_retention=
    if [[ $mm2_copy == PASS ]] && t kafka-configs --bootstrap-server "$TB" --describe --entity-type topics \
            --entity-name "skiff.$MTOPIC"; then
        target_retention=$(grep -o "retention.ms=[0-9]*" "$WORK/last.txt" | head -n 1 | cut -d= -f2)
    fi
    stop_pid "$MM2"
    # Topic ACL sync (sync.topic.acls.enabled, on by default) calls DescribeAcls on the source.
    # MirrorSourceConnector accepts only SECURITY_DISABLED ("no authorizer": it logs an INFO
    # once and skips ACL sync); any other failure is an ERROR from its scheduler, repeated
    # every sync.topic.acls.interval.seconds. Those ERRORs are judged here, all others below.
    acl_errs=$(grep -A1 '\] ERROR .*syncing topic ACLs' "$WORK/mm2.log" | grep -v '^--$' || true)
    # MirrorCheckpointTask logs "Error querying for consumer group G on cluster kafka" when its
    # Admin calls to the target of the skiff->kafka flow fail (describeConsumerGroups and
    # listConsumerGroupOffsets on its target admin client). That target is the reference
    # Kafka, so the failure is in the reference broker's answer, not Skiff's (seen once, in a
    # CI run on a loaded machine; the line names no cause). It is shown, not counted.
    # The same error about "cluster skiff" (the kafka->skiff flow's target) still fails.
    ref_query='Error querying for consumer group .* on cluster kafka\.'
    ref_errs=$(log_errors "$WORK/mm2.log" | grep -E "$ref_query" || true)
    [[ -z $ref_errs ]] || { echo "note: MirrorMaker's queries of the reference Kafka failed (not answers of Skiff's):"; echo "$ref_errs" | head -n 5; }
    errs=$(log_errors "$WORK/mm2.log" | grep -v 'syncing topic ACLs' | grep -Ev "$ref_query" || true)
    if [[ -n $errs ]]; then
        bad "mm2: log has ERROR lines:"; echo "$errs" | head -n 20 >&2
        [[ $mm2_copy == PASS ]] && mm2_copy=FAIL mm2_copy_note+="; but ERROR lines in the MirrorMaker log"
    else
        ok "mm2: no ERROR line in the MirrorMaker log (other than topic ACL sync, judged next)"
    fi
    if [[ $target_retention == "$RETENTION" ]]; then
        ok "mm2: topic config retention.ms=$RETENTION copied from the source topic to skiff.$MTOPIC"
    else
        bad "mm2: skiff.$MTOPIC has retention.ms '${target_retention:-?}', want $RETENTION (topic config sync)"
    fi
    if [[ -n $acl_errs ]]; then
        cause=$(echo "$acl_errs" | grep -o 'Exception: .*' | head -n 1)
        bad "mm2: topic ACL sync fails against the source: ${cause:-see mm2 log}"
        echo "$acl_errs" | head -n 2 >&2
        mm2_special_note="topic ACL sync (DescribeAcls on the source) fails: ${cause:-ERROR in log}; MirrorSourceConnector logs it as ERROR every sync.topic.acls.interval.seconds (only SECURITY_DISABLED is accepted as no authorizer)"
    elif grep -q 'No ACL authorizer is configured on the source' "$WORK/mm2.log"; then
        ok "mm2: topic ACL sync sees 'no authorizer' on the source (SECURITY_DISABLED) and skips ACL sync"
        [[ $target_retention == "$RETENTION" ]] && mm2_special=PASS
        mm2_special_note="topic config sync (retention.ms copied: ${target_retention:-no}); DescribeAcls answered SECURITY_DISABLED so ACL sync is skipped quietly"
    else
        bad "mm2: topic ACL sync neither failed nor reported 'no authorizer' (did it run?)"
        mm2_special_note="topic ACL sync did not report its outcome within the run"
    fi
    [[ $mm2_special == FAIL && $target_retention != "$RETENTION" ]] && mm2_special_note+="; topic config retention.ms not copied (got '${target_retention:-?}')"
else
    mm2_copy_note="reference Kafka target did not start" mm2_groups_note=$mm2_copy_note mm2_special_note=$mm2_copy_note
fi
MM2_WARNS=$(broker_warns "$WORK/mm2.log")
result mirrormaker2 produce_consume "$mm2_copy" "$mm2_copy_note"
result mirrormaker2 groups "$mm2_groups" "$mm2_groups_note"
result mirrormaker2 special "$mm2_special" "$mm2_special_note"

# ---------- report ----------
echo
echo "WARN lines mentioning the broker side (Connect worker):"
[[ -n $CONNECT_WARNS ]] && echo "$CONNECT_WARNS" | sort | uniq -c | sort -rn | head -n 20 || echo "  none"
echo "WARN lines mentioning the broker side (MirrorMaker 2):"
[[ -n $MM2_WARNS ]] && echo "$MM2_WARNS" | sort | uniq -c | sort -rn | head -n 20 || echo "  none"
echo
printf '%s\n' "${SUMMARY[@]}"
echo "connect: $PASSED passed, $FAILED failed against $KIND in $((SECONDS - T0)) s"
[[ $FAILED -eq 0 ]]
