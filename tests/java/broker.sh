# Sourced by run.sh and tools.sh: starts the broker under test on a free loopback port with a
# temp data dir and stops it on exit.
#   start_broker skiff|kafka   -> sets BOOTSTRAP (127.0.0.1:PORT) and SEGMENTS_DIR (where the
#                                 broker keeps <topic>-<partition>/ folders); WORK is the temp dir
# Skiff's binary: $E2E_SKIFF_BIN, else ${CARGO_TARGET_DIR:-<repo>/target}/debug/skiff.
# Both brokers run with log.cleaner.backoff.ms=100 (compaction tests settle quickly) and
# group.initial.rebalance.delay.ms=0 (tests/kafka/start.sh sets that one for Kafka).

JAVA_SUITE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$JAVA_SUITE_DIR/../.." && pwd)
WORK=$(mktemp -d -t skiff-java-XXXXXX)
BROKER_KIND=
BROKER_PID=

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

stop_broker() {
    if [[ $BROKER_KIND == kafka ]]; then
        bash "$REPO_ROOT/tests/kafka/stop.sh" "$WORK/kafka" || true
    elif [[ -n $BROKER_PID ]] && kill -0 "$BROKER_PID" 2>/dev/null; then
        kill -TERM "$BROKER_PID" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$BROKER_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$BROKER_PID" 2>/dev/null || true
    fi
    BROKER_KIND=
}

broker_cleanup() {
    local rc=$?
    stop_broker
    if [[ $rc -ne 0 ]]; then
        local log=$WORK/broker.log
        [[ -f $WORK/kafka/kafka.out ]] && log=$WORK/kafka/kafka.out
        echo "----- broker log (tail) -----" >&2
        tail -n 40 "$log" >&2 || true
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap broker_cleanup EXIT

start_broker() {
    local kind=$1 port
    port=$(free_port)
    BOOTSTRAP=127.0.0.1:$port
    case $kind in
        skiff)
            local bin=${E2E_SKIFF_BIN:-${CARGO_TARGET_DIR:-$REPO_ROOT/target}/debug/skiff}
            [[ -x $bin ]] || { echo "skiff binary not found at $bin (cargo build -p skiff)" >&2; return 1; }
            SEGMENTS_DIR=$WORK/data
            # SKIFF_* variables are broker config overrides: never leak the caller's into the broker.
            local unset_args=()
            mapfile -t unset_args < <(env | grep -o '^SKIFF_[A-Za-z0-9_]*' | sed 's/^/-u/' || true)
            env "${unset_args[@]}" NO_COLOR=1 RUST_LOG="${RUST_LOG:-info}" "$bin" \
                --set "listeners=PLAINTEXT://$BOOTSTRAP" --set "log.dirs=$SEGMENTS_DIR" --set node.id=1 \
                --set log.cleaner.backoff.ms=100 --set group.initial.rebalance.delay.ms=0 \
                </dev/null >"$WORK/broker.log" 2>&1 &
            BROKER_PID=$!
            BROKER_KIND=skiff
            for i in $(seq 200); do
                kill -0 "$BROKER_PID" 2>/dev/null || { echo "skiff exited during start" >&2; return 1; }
                if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
                [[ $i -eq 200 ]] && { echo "skiff did not accept TCP on $BOOTSTRAP within 10 s" >&2; return 1; }
                sleep 0.05
            done
            echo "broker: skiff $bin on $BOOTSTRAP" >&2
            ;;
        kafka)
            SEGMENTS_DIR=$WORK/kafka/logs
            BROKER_KIND=kafka
            bash "$REPO_ROOT/tests/kafka/start.sh" "$port" "$WORK/kafka" log.cleaner.backoff.ms=100
            ;;
        *) echo "start_broker: skiff or kafka, not '$kind'" >&2; return 2 ;;
    esac
}
