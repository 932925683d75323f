#!/usr/bin/env bash
# Java kafka-clients 4.x suite (Maven + JUnit 5, tests/java/src/test) and Kafka's own CLI tools
# (tools.sh) against a broker this script starts on a free loopback port with a temp data dir.
#
#   tests/java/run.sh            # against Skiff ($E2E_SKIFF_BIN or target/debug/skiff)
#   tests/java/run.sh --kafka    # the same against the reference Apache Kafka (tests/kafka)
#   tests/java/run.sh --no-tools # only the Maven suite
#   MVN_ARGS='-Dtest=AdminTest' tests/java/run.sh
#
# StreamsGroupTest (Kafka Streams with group.protocol=streams, KIP-1071) takes 1-2 minutes (a
# killed member is dropped after the 45 s streams session timeout):
#   MVN_ARGS='-Dtest=StreamsGroupTest' tests/java/run.sh --no-tools           # on Skiff
#   MVN_ARGS='-Dtest=StreamsGroupTest' tests/java/run.sh --kafka --no-tools   # on Kafka
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
# The security part (SecurityTest, and kafka-topics over SSL below): against Skiff, a second
# broker with SSL and mTLS listeners (tests/security/broker.sh), SASL ones unless
# SKIFF_SASL_TESTS=0; its addresses and PEM files reach the tests as SEC_*. Against Kafka
# SecurityTest skips itself.
# shellcheck source=tests/security/broker.sh
source "$REPO_ROOT/tests/security/broker.sh"
trap 'rc=$?; [[ $rc -ne 0 ]] && secure_broker_log_tail 30; stop_secure_broker; (exit $rc); broker_cleanup' EXIT
if [[ $KIND == skiff ]]; then
    mkdir "$WORK/security"
    # Jwt.java needs only the JDK: launched from source, it writes the key and the JWKS.
    java "$JAVA_SUITE_DIR/src/test/java/dev/skiff/e2e/Jwt.java" "$WORK/security"
    start_secure_broker "$WORK/security/broker" "$WORK/security/jwks.json"
    export SEC_JWT_KEY=$WORK/security/jwt-key.pem
fi

rc=0
mvn_started=$(date +%s)
# shellcheck disable=SC2086
E2E_BOOTSTRAP=$BOOTSTRAP E2E_BROKER=$KIND mvn -B -ntp -f "$JAVA_SUITE_DIR/pom.xml" ${MVN_ARGS:-} test || rc=1
if [[ -n ${MATRIX_RESULTS:-} ]]; then
    # Client-matrix lines (issue 6) for java and streams from this run's surefire reports.
    python3 "$REPO_ROOT/tests/matrix/junit_to_tsv.py" "$JAVA_SUITE_DIR/target/surefire-reports" \
        --since "$mvn_started" >>"$MATRIX_RESULTS" || rc=1
fi

# One Kafka CLI tool over TLS: kafka-topics with --command-config creates a topic over SSL
# and lists it over mTLS (PEM truststore/keystore in the properties files), and (unless
# SKIFF_SASL_TESTS=0) over SASL_SSL with SCRAM-SHA-512.
if [[ $TOOLS -eq 1 && $KIND == skiff ]]; then
    sec_props=$WORK/security
    printf 'security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=%s\n' "$SEC_CA" >"$sec_props/ssl.properties"
    cp "$sec_props/ssl.properties" "$sec_props/mtls.properties"
    printf 'ssl.keystore.type=PEM\nssl.keystore.location=%s\n' "$SEC_CLIENT_KEYSTORE" >>"$sec_props/mtls.properties"
    cli_topic=cli-sec-$RANDOM
    if timeout 90 bash "$REPO_ROOT/tests/kafka/tool.sh" kafka-topics --bootstrap-server "$SEC_SSL" \
            --command-config "$sec_props/ssl.properties" --create --topic "$cli_topic" --partitions 2 \
        && timeout 90 bash "$REPO_ROOT/tests/kafka/tool.sh" kafka-topics --bootstrap-server "$SEC_MTLS" \
            --command-config "$sec_props/mtls.properties" --list | grep -qx "$cli_topic"; then
        echo "ok   kafka-topics --command-config: create over SSL, list over mTLS"
    else
        echo "FAIL kafka-topics --command-config over SSL / mTLS" >&2
        rc=1
    fi
    if [[ $SEC_SASL == 1 ]]; then
        printf 'ssl.truststore.type=PEM\nssl.truststore.location=%s\n' "$SEC_CA" >"$sec_props/sasl.properties"
        printf '%s\n' 'security.protocol=SASL_SSL' 'sasl.mechanism=SCRAM-SHA-512' \
            'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";' \
            >>"$sec_props/sasl.properties"
        if timeout 90 bash "$REPO_ROOT/tests/kafka/tool.sh" kafka-topics --bootstrap-server "$SEC_SASL_SSL" \
                --command-config "$sec_props/sasl.properties" --list | grep -qx "$cli_topic"; then
            echo "ok   kafka-topics --command-config: list over SASL_SSL (SCRAM-SHA-512)"
        else
            echo "FAIL kafka-topics --command-config over SASL_SSL (SCRAM-SHA-512)" >&2
            rc=1
        fi
    fi
fi

if [[ $TOOLS -eq 1 ]]; then
    E2E_BOOTSTRAP=$BOOTSTRAP E2E_SEGMENTS_DIR=$SEGMENTS_DIR E2E_BROKER=$KIND \
        bash "$JAVA_SUITE_DIR/tools.sh" || rc=1
fi
exit "$rc"
