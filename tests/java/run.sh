#!/usr/bin/env bash
# Java kafka-clients 4.x suite (Maven + JUnit 5, tests/java/src/test) and Kafka's own CLI tools
# (tools.sh) against a broker this script starts on a free loopback port with a temp data dir.
#
#   tests/java/run.sh            # against Skiff ($E2E_SKIFF_BIN or target/debug/skiff)
#   tests/java/run.sh --kafka    # the same against the reference Apache Kafka (tests/kafka)
#   tests/java/run.sh --no-tools # only the Maven suite
#   MVN_ARGS='-Dtest=AdminTest' tests/java/run.sh
#
# Needs java 17+, mvn and python3; Maven fetches kafka-clients/JUnit into ~/.m2 on first use,
# the CLI tools come from tests/kafka/install.sh's cache. The suite finds the broker in
# $E2E_BOOTSTRAP (not SKIFF_*: the broker reads those as its own config).
set -euo pipefail

KIND=skiff TOOLS=1
for a in "$@"; do
    case $a in
        --kafka) KIND=kafka ;;
        --no-tools) TOOLS=0 ;;
        *) echo "usage: $0 [--kafka] [--no-tools]" >&2; exit 2 ;;
    esac
done
for c in java mvn python3; do
    command -v "$c" >/dev/null || { echo "java suite: '$c' not found" >&2; exit 1; }
done

# shellcheck source=tests/java/broker.sh
source "$(dirname "${BASH_SOURCE[0]}")/broker.sh"
if [[ $TOOLS -eq 1 ]]; then
    # Install the CLI tools before the broker starts, so a slow first download is not a timeout.
    bash "$REPO_ROOT/tests/kafka/install.sh" >/dev/null
fi
start_broker "$KIND"

rc=0
mvn_started=$(date +%s)
# shellcheck disable=SC2086
E2E_BOOTSTRAP=$BOOTSTRAP E2E_BROKER=$KIND mvn -B -ntp -f "$JAVA_SUITE_DIR/pom.xml" ${MVN_ARGS:-} test || rc=1
if [[ -n ${MATRIX_RESULTS:-} ]]; then
    # Client-matrix lines (issue 6) for java and streams from this run's surefire reports.
    python3 "$REPO_ROOT/tests/matrix/junit_to_tsv.py" "$JAVA_SUITE_DIR/target/surefire-reports" \
        --since "$mvn_started" >>"$MATRIX_RESULTS" || rc=1
fi

if [[ $TOOLS -eq 1 ]]; then
    E2E_BOOTSTRAP=$BOOTSTRAP E2E_SEGMENTS_DIR=$SEGMENTS_DIR E2E_BROKER=$KIND \
        bash "$JAVA_SUITE_DIR/tools.sh" || rc=1
fi
exit "$rc"
