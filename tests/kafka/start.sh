#!/usr/bin/env bash
# Starts the reference Apache Kafka broker (single node, KRaft, broker+controller in one JVM)
# in the background, installing it first if needed (install.sh), and waits until its client
# port answers.
#
#   tests/kafka/start.sh PORT DATA_DIR [key=value ...]   # extra broker properties, e.g.
#                                                        #   log.cleaner.backoff.ms=100
#   tests/kafka/stop.sh DATA_DIR
#
# DATA_DIR gets server.properties, logs/ (the KRaft log dir, formatted with a random cluster
# id), kafka.out (the broker's stdout/stderr) and kafka.pid. Everything listens on 127.0.0.1
# only: the client listener on PORT, the controller listener on a second free port.
# KAFKA_EXTRA_LISTENERS (optional, e.g. SSL://127.0.0.1:9093) adds client listeners next to the
# PLAINTEXT one (advertised as given; their ssl.* settings go in the key=value arguments).
set -euo pipefail

[[ $# -ge 2 ]] || { echo "usage: $0 PORT DATA_DIR [key=value ...]" >&2; exit 2; }
PORT=$1 DATA=$2; shift 2
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KAFKA_HOME=$(bash "$HERE/install.sh")

mkdir -p "$DATA"
DATA=$(cd "$DATA" && pwd)
if [[ -f $DATA/kafka.pid ]] && kill -0 "$(cat "$DATA/kafka.pid")" 2>/dev/null; then
    echo "kafka start: already running (pid $(cat "$DATA/kafka.pid")) for $DATA" >&2; exit 1
fi

EXTRA=${KAFKA_EXTRA_LISTENERS:+,$KAFKA_EXTRA_LISTENERS}
CPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$DATA/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CPORT
listeners=PLAINTEXT://127.0.0.1:$PORT$EXTRA,CONTROLLER://127.0.0.1:$CPORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT$EXTRA
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
log.dirs=$DATA/logs
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
PROPS
for kv in "$@"; do
    [[ $kv == *=* ]] || { echo "kafka start: extra argument '$kv' is not key=value" >&2; exit 2; }
    echo "$kv" >>"$DATA/server.properties"
done

CP="$KAFKA_HOME/libs/*"
JAVA_OPTS=(-Xms256m -Xmx1g -XX:+UseG1GC -Djava.awt.headless=true)
if [[ ! -f $DATA/logs/meta.properties ]]; then
    # A random cluster id: 16 random bytes, URL-safe base64 without padding (Kafka's Uuid form),
    # drawn again when it starts with '-', which kafka-storage would read as an option.
    CLUSTER_ID=$(python3 -c '
import base64, os
while True:
    cid = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
    if not cid.startswith("-"):
        print(cid)
        break')
    java "${JAVA_OPTS[@]}" -Dlog4j2.configurationFile="$KAFKA_HOME/log4j2.properties" -cp "$CP" \
        kafka.tools.StorageTool format -t "$CLUSTER_ID" -c "$DATA/server.properties" >"$DATA/format.out" 2>&1 \
        || { cat "$DATA/format.out" >&2; echo "kafka start: kafka-storage format failed" >&2; exit 1; }
fi

nohup java "${JAVA_OPTS[@]}" -Dlog4j2.configurationFile="$KAFKA_HOME/log4j2-broker.properties" \
    -Dkafka.logs.dir="$DATA" -cp "$CP" kafka.Kafka "$DATA/server.properties" \
    </dev/null >"$DATA/kafka.out" 2>&1 &
PID=$!
echo "$PID" >"$DATA/kafka.pid"

# Wait for the client port, then for the broker to be registered and unfenced (it answers
# Metadata with itself); the port opens a little before that.
for i in $(seq 600); do
    kill -0 "$PID" 2>/dev/null || { tail -n 40 "$DATA/kafka.out" >&2; echo "kafka start: broker exited" >&2; exit 1; }
    if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && grep -q "Kafka Server started\|\[KafkaRaftServer nodeId=1\] Kafka Server started" "$DATA/kafka.out"; then
        echo "kafka start: Apache Kafka $(basename "$KAFKA_HOME") pid $PID on 127.0.0.1:$PORT (controller $CPORT, data $DATA)" >&2
        exit 0
    fi
    sleep 0.1
done
tail -n 40 "$DATA/kafka.out" >&2
echo "kafka start: no answer on 127.0.0.1:$PORT within 60 s" >&2
exit 1
