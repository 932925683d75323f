#!/usr/bin/env bash
# Node client suites of the client matrix (issue 6): kafkajs 2.2.4 (kafkajs.mjs) and
# @platformatic/kafka (platformatic.mjs), each running the scenarios of lib.mjs.
#   bash tests/node/run.sh                 start Skiff (tests/java/broker.sh), run, stop it
#   bash tests/node/run.sh --kafka         same against the reference Apache Kafka 4.4.0
#   bash tests/node/run.sh HOST:PORT       use a running broker
# Extra words after that are scenario ids (default: all; `security`: only the security part,
# which runs after the others against Skiff and is skipped when scenario ids are given). MATRIX_RESULTS=<file> appends one
# TSV line per scenario (client ids kafkajs, platformatic-kafka). Exit status is non-zero if
# any scenario failed. Needs node >= 20 and npm (dependencies come from package-lock.json).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
kind=skiff
bootstrap=
if [[ ${1:-} == --kafka ]]; then kind=kafka; shift
elif [[ ${1:-} == *:* ]]; then bootstrap=$1; shift
fi

command -v node >/dev/null || { echo "node not found (apt-get install nodejs npm)" >&2; exit 1; }
node_major=$(node -p 'process.versions.node.split(".")[0]')
[[ $node_major -ge 20 ]] || { echo "node >= 20 needed, have $(node --version)" >&2; exit 1; }

# npm ci only when the lock file changed since the last install.
stamp=$HERE/node_modules/.lock.sha256
want=$(sha256sum "$HERE/package-lock.json" | cut -d' ' -f1)
if [[ ! -f $stamp ]] || [[ $(cat "$stamp") != "$want" ]]; then
    (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$want" >"$stamp"
fi

security=0
if [[ -z $bootstrap ]]; then
    # shellcheck source=../java/broker.sh
    source "$HERE/../java/broker.sh"
    # shellcheck source=../security/broker.sh
    source "$HERE/../security/broker.sh"
    trap 'rc=$?; [[ $rc -ne 0 ]] && secure_broker_log_tail 30; stop_secure_broker; (exit $rc); broker_cleanup' EXIT
    [[ $kind == skiff ]] && security=1
fi

rc=0
t0=$SECONDS
if [[ ${1:-} != security ]]; then
    if [[ -z $bootstrap ]]; then
        start_broker "$kind"
        bootstrap=$BOOTSTRAP
    fi
    node "$HERE/kafkajs.mjs" "$bootstrap" "$@" || rc=1
    node "$HERE/platformatic.mjs" "$bootstrap" "$@" || rc=1
    [[ $security -eq 1 ]] && stop_broker
fi
# The security scenarios (security.mjs): against Skiff only, a second broker with SSL and mTLS
# listeners (tests/security/broker.sh); SASL rows too (SKIFF_SASL_TESTS=0 leaves them out). `run.sh security`
# runs only them.
if [[ $security -eq 1 && ( $# -eq 0 || ${1:-} == security ) ]]; then
    mkdir "$WORK/security"
    node "$HERE/security.mjs" --write-jwks "$WORK/security"
    start_secure_broker "$WORK/security/broker" "$WORK/security/jwks.json"
    SEC_JWT_KEY=$WORK/security/jwt-key.pem node "$HERE/security.mjs" || rc=1
    stop_secure_broker
fi
echo "node suites against $kind ($bootstrap): $((SECONDS - t0)) s, $([[ $rc -eq 0 ]] && echo 'all passed' || echo 'SOME FAILED')"
exit "$rc"
