#!/usr/bin/env bash
# Installs the reference Apache Kafka broker and its CLI tools from Maven Central into a cache
# dir and prints that dir. No download from anywhere else: a small generated pom asks Maven for
# org.apache.kafka:kafka_2.13 (broker, KRaft), kafka-tools (CLI tools) and kafka-clients, plus a
# log4j2 backend, and `mvn dependency:copy-dependencies` puts every runtime jar in one folder.
#
#   tests/kafka/install.sh            # installs if missing, prints the cache dir
#   KAFKA_VERSION=4.1.1 tests/kafka/install.sh
#
# Cache: ${SKIFF_KAFKA_CACHE:-~/.cache/skiff-kafka}/<version>/{libs/*.jar,.complete}; reused
# between runs (a run that finds .complete does nothing). Maven's own cache is ~/.m2.
# Needs java (17+) and mvn on PATH.
set -euo pipefail

KAFKA_VERSION=${KAFKA_VERSION:-4.4.0}
LOG4J_VERSION=${LOG4J_VERSION:-2.24.3}
SLF4J_VERSION=${SLF4J_VERSION:-2.0.17}
CACHE_ROOT=${KAFKA_CACHE_ROOT:-${HOME}/.cache/skiff-kafka}
DIR=$CACHE_ROOT/$KAFKA_VERSION

if [[ -f $DIR/.complete ]] && compgen -G "$DIR/libs/kafka_2.13-*.jar" >/dev/null; then
    echo "$DIR"
    exit 0
fi

command -v mvn >/dev/null || { echo "kafka install: mvn not found (apt-get install -y maven)" >&2; exit 1; }
command -v java >/dev/null || { echo "kafka install: java not found (apt-get install -y openjdk-17-jdk-headless)" >&2; exit 1; }

mkdir -p "$DIR"
BUILD=$(mktemp -d "$DIR/.build-XXXXXX")
trap 'rm -rf "$BUILD"' EXIT

cat >"$BUILD/pom.xml" <<POM
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 http://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.skiff.tests</groupId>
  <artifactId>kafka-dist</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-clients</artifactId><version>$KAFKA_VERSION</version></dependency>
    <!-- kafka 4.x logs through slf4j 2; without this pin an older slf4j-api 1.7 wins -->
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>$SLF4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>$LOG4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j2-impl</artifactId><version>$LOG4J_VERSION</version></dependency>
  </dependencies>
</project>
POM

echo "kafka install: resolving Apache Kafka $KAFKA_VERSION from Maven Central into $DIR" >&2
mvn -B -q -Dstyle.color=never -f "$BUILD/pom.xml" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$BUILD/libs" >&2
compgen -G "$BUILD/libs/kafka_2.13-$KAFKA_VERSION.jar" >/dev/null \
    || { echo "kafka install: kafka_2.13-$KAFKA_VERSION.jar missing after mvn" >&2; exit 1; }

# Quiet logging for the tools and the broker (the broker start script passes its own file).
cat >"$BUILD/log4j2.properties" <<'LOG'
status = warn
appender.err.type = Console
appender.err.name = STDERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.err.ref = STDERR
LOG
cat >"$BUILD/log4j2-broker.properties" <<'LOG'
status = warn
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.out.ref = STDOUT
LOG

rm -rf "$DIR/libs"
mv "$BUILD/libs" "$DIR/libs"
mv "$BUILD/log4j2.properties" "$BUILD/log4j2-broker.properties" "$DIR/"
echo "$KAFKA_VERSION" >"$DIR/.complete"
echo "kafka install: $(ls "$DIR/libs" | wc -l) jars in $DIR/libs" >&2
echo "$DIR"
