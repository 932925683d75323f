#!/usr/bin/env bash
# Installs a Kafka Connect distribution (connect-runtime, the FileStream connectors from
# connect-file, MirrorMaker 2 from connect-mirror + connect-mirror-client, and a log4j2
# backend) from Maven Central into its own cache dir and prints that dir; run.sh puts
# <dir>/libs/* on the class path.
#
#   tests/connect/install.sh                      # installs if missing, prints the cache dir
#   CONNECT_VERSION=4.3.1 tests/connect/install.sh
#
# Why not the reference Kafka's jars (tests/kafka/install.sh, 4.4.0): Maven Central has
# connect-runtime 4.4.0 but no connect-file / connect-mirror / connect-mirror-client 4.4.0
# (their newest is 4.3.1), and MirrorMaker 2 drives the runtime's internals, so a mixed
# 4.4.0 runtime + 4.3.1 plugins class path is not a combination Apache ships. This is one
# self-consistent set at CONNECT_VERSION instead.
#
# Cache: ${KAFKA_CACHE_ROOT:-~/.cache/skiff-kafka}/connect-<version>/{libs/*.jar,.complete},
# separate from tests/kafka's <version>/ dir and stamp (so a machine whose Kafka cache is
# already complete still gets these jars). The stamp holds the sha256 of the generated pom:
# adding an artifact here re-resolves on machines with an older install. Needs java and mvn.
set -euo pipefail

CONNECT_VERSION=${CONNECT_VERSION:-4.3.1}
LOG4J_VERSION=${LOG4J_VERSION:-2.24.3}
SLF4J_VERSION=${SLF4J_VERSION:-2.0.17}
CACHE_ROOT=${KAFKA_CACHE_ROOT:-${HOME}/.cache/skiff-kafka}
DIR=$CACHE_ROOT/connect-$CONNECT_VERSION
ARTIFACTS=(connect-runtime connect-file connect-mirror connect-mirror-client kafka-clients)

pom() {
    cat <<POM
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 http://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.skiff.tests</groupId>
  <artifactId>kafka-connect-dist</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
POM
    for a in "${ARTIFACTS[@]}"; do
        echo "    <dependency><groupId>org.apache.kafka</groupId><artifactId>$a</artifactId><version>$CONNECT_VERSION</version></dependency>"
    done
    cat <<POM
    <!-- kafka 4.x logs through slf4j 2; without this pin an older slf4j-api 1.7 wins -->
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>$SLF4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>$LOG4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j2-impl</artifactId><version>$LOG4J_VERSION</version></dependency>
  </dependencies>
</project>
POM
}

WANT=$(pom | sha256sum | cut -d' ' -f1)
if [[ -f $DIR/.complete ]] && [[ $(cat "$DIR/.complete") == "$WANT" ]]; then
    echo "$DIR"
    exit 0
fi

command -v mvn >/dev/null || { echo "connect install: mvn not found (apt-get install -y maven)" >&2; exit 1; }
command -v java >/dev/null || { echo "connect install: java not found (apt-get install -y openjdk-17-jdk-headless)" >&2; exit 1; }
mkdir -p "$DIR"
BUILD=$(mktemp -d "$DIR/.build-XXXXXX")
trap 'rm -rf "$BUILD"' EXIT
pom >"$BUILD/pom.xml"

echo "connect install: resolving ${ARTIFACTS[*]} $CONNECT_VERSION from Maven Central into $DIR" >&2
mvn -B -q -Dstyle.color=never -f "$BUILD/pom.xml" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$BUILD/libs" >&2
for a in "${ARTIFACTS[@]}"; do
    [[ -f $BUILD/libs/$a-$CONNECT_VERSION.jar ]] \
        || { echo "connect install: $a-$CONNECT_VERSION.jar missing after mvn" >&2; exit 1; }
done

rm -rf "$DIR/libs"
mv "$BUILD/libs" "$DIR/libs"
echo "$WANT" >"$DIR/.complete"
echo "connect install: $(ls "$DIR/libs" | wc -l) jars in $DIR/libs" >&2
echo "$DIR"
