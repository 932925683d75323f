#!/usr/bin/env bash
# Runs one of Kafka's command-line tools from the jars install.sh put in the cache (the
# equivalent of bin/kafka-*.sh / kafka-run-class.sh), installing them first if needed.
#
#   tests/kafka/tool.sh NAME|CLASS ARGS...
#   tests/kafka/tool.sh kafka-topics --bootstrap-server 127.0.0.1:9092 --list
#   tests/kafka/tool.sh org.apache.kafka.tools.GetOffsetShell --bootstrap-server ...
#
# Short names (Kafka 4.x classes): kafka-topics, kafka-configs, kafka-console-producer,
# kafka-console-consumer, kafka-consumer-groups, kafka-share-groups, kafka-streams-groups,
# kafka-console-share-consumer,
# kafka-broker-api-versions, kafka-get-offsets, kafka-dump-log,
# kafka-producer-perf-test, kafka-consumer-perf-test, kafka-storage. Logs go to stderr at WARN.
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 NAME|CLASS ARGS..." >&2; exit 2; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KAFKA_HOME=$(bash "$HERE/install.sh")
NAME=$1; shift
case $NAME in
    kafka-topics) CLASS=org.apache.kafka.tools.TopicCommand ;;
    kafka-configs) CLASS=org.apache.kafka.tools.ConfigCommand ;;
    kafka-console-producer) CLASS=org.apache.kafka.tools.ConsoleProducer ;;
    kafka-console-consumer) CLASS=org.apache.kafka.tools.consumer.ConsoleConsumer ;;
    kafka-consumer-groups) CLASS=org.apache.kafka.tools.consumer.group.ConsumerGroupCommand ;;
    kafka-share-groups) CLASS=org.apache.kafka.tools.consumer.group.ShareGroupCommand ;;
    kafka-streams-groups) CLASS=org.apache.kafka.tools.streams.StreamsGroupCommand ;;
    kafka-console-share-consumer) CLASS=org.apache.kafka.tools.consumer.ConsoleShareConsumer ;;
    kafka-broker-api-versions) CLASS=org.apache.kafka.tools.BrokerApiVersionsCommand ;;
    kafka-get-offsets) CLASS=org.apache.kafka.tools.GetOffsetShell ;;
    kafka-dump-log) CLASS=org.apache.kafka.tools.DumpLogSegments ;;
    kafka-producer-perf-test) CLASS=org.apache.kafka.tools.ProducerPerformance ;;
    kafka-consumer-perf-test) CLASS=org.apache.kafka.tools.ConsumerPerformance ;;
    kafka-storage) CLASS=kafka.tools.StorageTool ;;
    *.*) CLASS=$NAME ;;
    *) echo "tool.sh: unknown tool '$NAME' (give a short name or a fully qualified class)" >&2; exit 2 ;;
esac
exec java -Xmx512m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$KAFKA_HOME/log4j2.properties" \
    -cp "$KAFKA_HOME/libs/*" "$CLASS" "$@"
