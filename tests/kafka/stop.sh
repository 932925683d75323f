#!/usr/bin/env bash
# Stops the reference Kafka broker started by start.sh for DATA_DIR (SIGTERM, then SIGKILL
# after 30 s). Leaves DATA_DIR in place; `rm -rf` it yourself if it was a temp dir.
#   tests/kafka/stop.sh DATA_DIR
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 DATA_DIR" >&2; exit 2; }
PIDFILE=$1/kafka.pid
[[ -f $PIDFILE ]] || { echo "kafka stop: no $PIDFILE" >&2; exit 0; }
PID=$(cat "$PIDFILE")
if kill -0 "$PID" 2>/dev/null; then
    kill -TERM "$PID"
    for _ in $(seq 300); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$PID" 2>/dev/null; then
        echo "kafka stop: pid $PID still alive after 30 s, SIGKILL" >&2
        kill -KILL "$PID" 2>/dev/null || true
    fi
fi
rm -f "$PIDFILE"
