# Sourced by the client suites (tests/go, tests/node, tests/java) for their security part: one
# Skiff broker with a PLAINTEXT, an SSL (server auth only) and an MTLS listener
# (`ssl.client.auth = "required"`), certificates from `skiff dev-certs` in a temp dir, and (unless
# SKIFF_SASL_TESTS=0) SASL_PLAINTEXT and SASL_SSL listeners with PLAIN, SCRAM-SHA-256,
# SCRAM-SHA-512 and OAUTHBEARER (user alice / alice-secret; JWTs checked against a JWKS file).
#
#   start_secure_broker DIR [JWKS]  DIR: an empty temp dir (certs, data, log, config go there);
#                                   JWKS: the JSON Web Key Set file the suite wrote (its own
#                                   RSA key, kid "skiff-test"), needed for the SASL listeners
#   stop_secure_broker              SIGTERM, then SIGKILL after 10 s
# After start it exports (all 127.0.0.1:PORT):
#   SEC_PLAINTEXT SEC_SSL SEC_MTLS [SEC_SASL_PLAINTEXT SEC_SASL_SSL]
#   SEC_CA (the CA that signed the broker), SEC_CLIENT_CERT, SEC_CLIENT_KEY (client cert of
#   the same CA), SEC_CLIENT_KEYSTORE (key + certificate in one PEM, for Java),
#   SEC_UNTRUSTED_CA (a CA that did not sign the broker), SEC_SASL (1 when SASL listeners run)
# SKIFF_* variables are broker config overrides: they are not passed to the broker.
# The caller's EXIT trap must call stop_secure_broker.

SEC_BROKER_PID=
SEC_DIR=

sec_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

stop_secure_broker() {
    if [[ -n $SEC_BROKER_PID ]] && kill -0 "$SEC_BROKER_PID" 2>/dev/null; then
        kill -TERM "$SEC_BROKER_PID" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$SEC_BROKER_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$SEC_BROKER_PID" 2>/dev/null || true
    fi
    SEC_BROKER_PID=
}

# The broker's log tail (for a failing suite).
secure_broker_log_tail() {
    [[ -n $SEC_DIR && -f $SEC_DIR/broker.log ]] && tail -n "${1:-40}" "$SEC_DIR/broker.log" >&2
    return 0
}

start_secure_broker() {
    SEC_DIR=$1
    mkdir -p "$SEC_DIR"
    local jwks=${2:-}
    local root bin
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    bin=${E2E_SKIFF_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/skiff}
    [[ -x $bin ]] || { echo "skiff binary not found at $bin (cargo build -p skiff)" >&2; return 1; }
    local unset_args=()
    mapfile -t unset_args < <(env | grep -o '^SKIFF_[A-Za-z0-9_]*' | sed 's/^/-u/' || true)

    env "${unset_args[@]}" "$bin" dev-certs --dir "$SEC_DIR/certs" --host localhost --host 127.0.0.1 \
        >/dev/null 2>&1 || { echo "skiff dev-certs failed" >&2; return 1; }
    env "${unset_args[@]}" "$bin" dev-certs --dir "$SEC_DIR/untrusted" --host localhost --host 127.0.0.1 \
        >/dev/null 2>&1 || { echo "skiff dev-certs (untrusted) failed" >&2; return 1; }
    export SEC_CA=$SEC_DIR/certs/ca.pem SEC_CLIENT_CERT=$SEC_DIR/certs/client.pem
    export SEC_CLIENT_KEY=$SEC_DIR/certs/client-key.pem SEC_UNTRUSTED_CA=$SEC_DIR/untrusted/ca.pem
    export SEC_CLIENT_KEYSTORE=$SEC_DIR/certs/client-keystore.pem
    cat "$SEC_CLIENT_KEY" "$SEC_CLIENT_CERT" >"$SEC_CLIENT_KEYSTORE"

    local p_plain p_ssl p_mtls p_sp p_ss
    p_plain=$(sec_free_port) p_ssl=$(sec_free_port) p_mtls=$(sec_free_port)
    export SEC_PLAINTEXT=127.0.0.1:$p_plain SEC_SSL=127.0.0.1:$p_ssl SEC_MTLS=127.0.0.1:$p_mtls
    local listeners="PLAINTEXT://$SEC_PLAINTEXT,SSL://$SEC_SSL,MTLS://$SEC_MTLS"
    local ports=("$p_plain" "$p_ssl" "$p_mtls")
    export SEC_SASL=0
    if [[ ${SKIFF_SASL_TESTS:-1} == 1 ]]; then
        [[ -n $jwks && -f $jwks ]] || { echo "start_secure_broker: SASL needs the JWKS file" >&2; return 1; }
        p_sp=$(sec_free_port) p_ss=$(sec_free_port)
        export SEC_SASL_PLAINTEXT=127.0.0.1:$p_sp SEC_SASL_SSL=127.0.0.1:$p_ss SEC_SASL=1
        listeners+=",SASL_PLAINTEXT://$SEC_SASL_PLAINTEXT,SASL_SSL://$SEC_SASL_SSL"
        ports+=("$p_sp" "$p_ss")
    fi
    local cfg=$SEC_DIR/skiff.toml
    cat >"$cfg" <<EOF
[broker]
node.id = 1
log.dirs = "$SEC_DIR/data"
group.initial.rebalance.delay.ms = 0
listeners = "$listeners"
listener.security.protocol.map = "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
ssl.keystore.type = "PEM"
ssl.keystore.location = "$SEC_DIR/certs/server.pem"
ssl.truststore.type = "PEM"
ssl.truststore.location = "$SEC_CA"
"listener.name.mtls.ssl.client.auth" = "required"
EOF
    if [[ $SEC_SASL == 1 ]]; then
        cat >>"$cfg" <<EOF
sasl.enabled.mechanisms = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"
"listener.name.sasl_plaintext.plain.sasl.jaas.config" = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
"listener.name.sasl_ssl.plain.sasl.jaas.config" = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
sasl.scram.users = ["SCRAM-SHA-256=[name=alice,password=alice-secret]", "SCRAM-SHA-512=[name=alice,password=alice-secret]"]
"sasl.oauthbearer.jwks.endpoint.url" = "file://$jwks"
"sasl.oauthbearer.expected.audience" = "skiff"
"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class" = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
"listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class" = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
EOF
    fi
    env "${unset_args[@]}" NO_COLOR=1 RUST_LOG="${RUST_LOG:-info}" "$bin" --config "$cfg" \
        </dev/null >"$SEC_DIR/broker.log" 2>&1 &
    SEC_BROKER_PID=$!
    local port i
    for port in "${ports[@]}"; do
        for i in $(seq 200); do
            if ! kill -0 "$SEC_BROKER_PID" 2>/dev/null; then
                echo "secure skiff exited during start; its log:" >&2
                secure_broker_log_tail 20
                SEC_BROKER_PID=
                return 1
            fi
            if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
            [[ $i -eq 200 ]] && { echo "secure skiff did not accept TCP on port $port within 10 s" >&2; return 1; }
            sleep 0.05
        done
    done
    echo "secure broker: skiff on PLAINTEXT $SEC_PLAINTEXT, SSL $SEC_SSL, MTLS $SEC_MTLS$(
        [[ $SEC_SASL == 1 ]] && echo ", SASL_PLAINTEXT $SEC_SASL_PLAINTEXT, SASL_SSL $SEC_SASL_SSL")" >&2
}
