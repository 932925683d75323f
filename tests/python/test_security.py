"""Security with real clients (issue 14): confluent-kafka and kafka-python against one Skiff
broker with a PLAINTEXT, an SSL (server auth only) and an MTLS listener (client certificate
required), certificates from `skiff dev-certs`.

For each client: create a topic, produce and consume over SSL and over mTLS; then the
failures, each of which must be an error within a bounded time (a hang fails the test) and
leave the broker serving a fresh client: a CA that did not sign the broker (the client
refuses), mTLS without a client certificate (the broker refuses), a plaintext client on the
TLS port.

SASL (on by default; SKIFF_SASL_TESTS=0 skips them): SASL_PLAINTEXT and SASL_SSL listeners
with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (alice / alice-secret) and OAUTHBEARER (JWTs signed
here with an RSA key whose JWKS file the broker reads); a wrong password and an expired token
fail cleanly.
"""

import json
import os
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import Broker, skiff_bin

SASL = os.environ.get("SKIFF_SASL_TESTS", "1") == "1"
needs_sasl = pytest.mark.skipif(not SASL, reason="SASL rows switched off (SKIFF_SASL_TESTS=0)")
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
KID = "skiff-test"
AUDIENCE = "skiff"
# A failure must show within this many seconds; the whole attempt is cut off at HANG_S.
FAIL_WITHIN_S = 15
HANG_S = 30
KAFKA_PYTHON_BOOTSTRAP_MS = 6000


class SecureBroker(Broker):
    """A broker started from a TOML file with PLAINTEXT, SSL and MTLS listeners (plus the
    SASL ones when SASL tests are on); `addr[name]` is each listener's host:port."""

    def __init__(self, root: Path, jwks: Path):
        super().__init__(root)
        self.certs = root / "certs"
        self.untrusted = root / "untrusted"
        self.jwks = jwks
        names = ["PLAINTEXT", "SSL", "MTLS"] + (["SASL_PLAINTEXT", "SASL_SSL"] if SASL else [])
        self.addr = {}
        for n in names:
            self.addr[n] = f"127.0.0.1:{self.port if n == 'PLAINTEXT' else _port()}"

    def write_config(self) -> Path:
        for d in (self.certs, self.untrusted):
            out = subprocess.run(
                [str(skiff_bin()), "dev-certs", "--dir", str(d), "--host", "localhost", "--host", "127.0.0.1"],
                capture_output=True, text=True, timeout=60,
                env={k: v for k, v in os.environ.items() if not k.startswith("SKIFF_")},
            )
            assert out.returncode == 0, out.stderr
        listeners = ",".join(f"{n}://{a}" for n, a in self.addr.items())
        lines = [
            "[broker]",
            "node.id = 1",
            f'log.dirs = "{self.data_dir}"',
            "group.initial.rebalance.delay.ms = 0",
            f'listeners = "{listeners}"',
            'listener.security.protocol.map = "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,'
            'SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"',
            'ssl.keystore.type = "PEM"',
            f'ssl.keystore.location = "{self.certs / "server.pem"}"',
            'ssl.truststore.type = "PEM"',
            f'ssl.truststore.location = "{self.certs / "ca.pem"}"',
            '"listener.name.mtls.ssl.client.auth" = "required"',
        ]
        if SASL:
            jaas = ("'org.apache.kafka.common.security.plain.PlainLoginModule required "
                    "user_alice=\"alice-secret\";'")
            handler = '"org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"'
            lines += [
                'sasl.enabled.mechanisms = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"',
                f'"listener.name.sasl_plaintext.plain.sasl.jaas.config" = {jaas}',
                f'"listener.name.sasl_ssl.plain.sasl.jaas.config" = {jaas}',
                'sasl.scram.users = ["SCRAM-SHA-256=[name=alice,password=alice-secret]", '
                '"SCRAM-SHA-512=[name=alice,password=alice-secret]"]',
                f'"sasl.oauthbearer.jwks.endpoint.url" = "file://{self.jwks}"',
                f'"sasl.oauthbearer.expected.audience" = "{AUDIENCE}"',
                f'"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class" = {handler}',
                f'"listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class" = {handler}',
            ]
        cfg = self.root / "skiff.toml"
        cfg.write_text("\n".join(lines) + "\n")
        return cfg

    def command(self, binary: Path) -> list:
        return [str(binary), "--config", str(self.config_path)]

    def start(self):
        self.config_path = self.write_config()
        super().start()
        # The PLAINTEXT port answers first; wait for the others too.
        deadline = time.monotonic() + 10
        for a in self.addr.values():
            host, port = a.split(":")
            while True:
                try:
                    with socket.create_connection((host, int(port)), timeout=0.2):
                        break
                except OSError:
                    assert time.monotonic() < deadline, f"{a} not listening:\n{self.log_tail()}"
                    time.sleep(0.05)


def _port() -> int:
    from conftest import free_port
    return free_port()


# ---------- OAUTHBEARER: our own RSA key, its JWKS, tokens signed here ----------

class Jwt:
    def __init__(self, path: Path):
        from cryptography.hazmat.primitives.asymmetric import rsa
        from jwt.algorithms import RSAAlgorithm

        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        jwk.update({"kid": KID, "alg": "RS256", "use": "sig"})
        path.write_text(json.dumps({"keys": [jwk]}))

    def token(self, sub="alice", lifetime_s=300, aud=AUDIENCE) -> str:
        import jwt

        now = int(time.time())
        iat = now if lifetime_s > 0 else now + lifetime_s - 600
        claims = {"sub": sub, "iat": iat, "exp": now + lifetime_s, "aud": aud}
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": KID})


@pytest.fixture(scope="module")
def secure():
    with tempfile.TemporaryDirectory(prefix="skiff-pytest-sec-") as d:
        root = Path(d)
        jwks = root / "jwks.json"
        signer = Jwt(jwks) if SASL else None
        b = SecureBroker(root, jwks)
        b.signer = signer
        b.start()
        try:
            yield b
        finally:
            b.kill9()


# ---------- per-client adapters: a neutral security description -> client config ----------
# sec: {"listener": name, "ca": path|None, "cert": bool, "mechanism": str|None,
#       "password": str, "token": callable|None}

def _sec(broker, listener, ca="trusted", cert=False, mechanism=None, password="alice-secret", expired=False):
    return {
        "bootstrap": broker.addr[listener],
        "tls": listener in ("SSL", "MTLS", "SASL_SSL"),
        "sasl": listener.startswith("SASL"),
        "ca": str((broker.certs if ca == "trusted" else broker.untrusted) / "ca.pem"),
        "cert": str(broker.certs / "client.pem") if cert else None,
        "key": str(broker.certs / "client-key.pem") if cert else None,
        "mechanism": mechanism,
        "password": password,
        "token": (lambda: broker.signer.token(lifetime_s=-300 if expired else 300)) if mechanism == "OAUTHBEARER" else None,
        # The protocol the client speaks, which is not always the listener's (plaintext-to-TLS).
        "protocol": ("SASL_" if listener.startswith("SASL") else "")
        + ("SSL" if listener in ("SSL", "MTLS", "SASL_SSL") else ("PLAINTEXT" if listener.startswith("SASL") else "PLAINTEXT")),
    }


class Confluent:
    name = "confluent-kafka"

    def __init__(self):
        self.errors = []

    def conf(self, sec):
        c = {
            "bootstrap.servers": sec["bootstrap"],
            "security.protocol": sec["protocol"],
            "error_cb": lambda e: self.errors.append(str(e)),
            "socket.connection.setup.timeout.ms": 5000,
        }
        if sec["protocol"].endswith("SSL"):
            c["ssl.ca.location"] = sec["ca"]
            if sec["cert"]:
                c["ssl.certificate.location"] = sec["cert"]
                c["ssl.key.location"] = sec["key"]
        if sec["protocol"].startswith("SASL"):
            c["sasl.mechanism"] = sec["mechanism"]
            if sec["mechanism"] == "OAUTHBEARER":
                token = sec["token"]
                # librdkafka refuses a lifetime in the past locally, so the expiry it is told is
                # always ahead; the JWT's own exp is what the broker must check.
                c["oauth_cb"] = lambda _cfg: (token(), time.time() + 300)
            else:
                c["sasl.username"] = "alice"
                c["sasl.password"] = sec["password"]
        return c

    def roundtrip(self, sec, topic, n=3):
        admin = AdminClient(self.conf(sec))
        for f in admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=10).values():
            f.result(timeout=20)
        p = Producer({**self.conf(sec), "linger.ms": 5})
        failed = []
        for i in range(n):
            p.produce(topic, key=f"k{i}", value=f"v{i}",
                      on_delivery=lambda err, _m: err and failed.append(str(err)))
        assert p.flush(20) == 0, f"undelivered after 20 s; errors {self.errors}"
        assert not failed, failed
        c = Consumer({**self.conf(sec), "group.id": f"g-{uuid.uuid4().hex[:8]}",
                      "enable.auto.commit": False, "fetch.wait.max.ms": 100})
        try:
            c.assign([TopicPartition(topic, 0, 0)])
            got = []
            deadline = time.monotonic() + 20
            while len(got) < n and time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is not None and m.error() is None:
                    got.append(m.value().decode())
            assert got == [f"v{i}" for i in range(n)], (got, self.errors)
        finally:
            c.close()

    def attempt(self, sec):
        """Try to reach the broker; returns (ok, what happened)."""
        self.errors.clear()
        admin = AdminClient(self.conf(sec))
        deadline = time.monotonic() + FAIL_WITHIN_S
        while not self.errors and time.monotonic() < deadline:
            admin.poll(0.2)  # error_cb runs from poll
            try:
                md = admin.list_topics(timeout=0.5)
                return True, f"metadata from {len(md.brokers)} broker(s)"
            except KafkaException:
                pass
        distinct = list(dict.fromkeys(self.errors))[:3]
        return False, "; ".join(distinct) or "no error reported"


class KafkaPython:
    name = "kafka-python"

    def kwargs(self, sec):
        kw = {"bootstrap_servers": sec["bootstrap"], "security_protocol": sec["protocol"],
              "request_timeout_ms": 10000}
        if sec["protocol"].endswith("SSL"):
            kw["ssl_cafile"] = sec["ca"]
            if sec["cert"]:
                kw["ssl_certfile"] = sec["cert"]
                kw["ssl_keyfile"] = sec["key"]
        if sec["protocol"].startswith("SASL"):
            kw["sasl_mechanism"] = sec["mechanism"]
            if sec["mechanism"] == "OAUTHBEARER":
                from kafka.net.sasl.oauth import AbstractTokenProvider

                token_fn = sec["token"]

                class Provider(AbstractTokenProvider):
                    def token(self):
                        return token_fn()

                kw["sasl_oauth_token_provider"] = Provider()
            else:
                kw["sasl_plain_username"] = "alice"
                kw["sasl_plain_password"] = sec["password"]
        return kw

    def roundtrip(self, sec, topic, n=3):
        from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
        from kafka.admin import NewTopic as KNewTopic
        from kafka import TopicPartition as KTP

        admin = KafkaAdminClient(**self.kwargs(sec))
        try:
            admin.create_topics([KNewTopic(topic, 1, 1)])
        finally:
            admin.close()
        p = KafkaProducer(**self.kwargs(sec), enable_idempotence=False, linger_ms=5)
        try:
            for i in range(n):
                p.send(topic, key=f"k{i}".encode(), value=f"v{i}".encode()).get(timeout=20)
        finally:
            p.close()
        c = KafkaConsumer(**self.kwargs(sec), group_id=None, enable_auto_commit=False,
                          auto_offset_reset="earliest", fetch_max_wait_ms=100)
        try:
            tp = KTP(topic, 0)
            c.assign([tp])
            c.seek_to_beginning(tp)
            got = []
            deadline = time.monotonic() + 20
            while len(got) < n and time.monotonic() < deadline:
                for recs in c.poll(timeout_ms=500).values():
                    got.extend(r.value.decode() for r in recs)
            assert got == [f"v{i}" for i in range(n)], got
        finally:
            c.close()

    def attempt(self, sec):
        from kafka import KafkaAdminClient

        try:
            # kafka-python retries the bootstrap with backoff for bootstrap_timeout_ms (30 s by
            # default) and then reports only "Unable to bootstrap", whatever the cause.
            admin = KafkaAdminClient(**self.kwargs(sec), bootstrap_timeout_ms=KAFKA_PYTHON_BOOTSTRAP_MS)
        except Exception as e:  # noqa: BLE001 - any client error is the expected failure
            return False, f"{type(e).__name__}: {e}"
        try:
            admin.list_topics()
            return True, "listed topics"
        except Exception as e:  # noqa: BLE001
            return False, f"{type(e).__name__}: {e}"
        finally:
            admin.close()


CLIENTS = [Confluent, KafkaPython]


def bounded(fn, what):
    """Runs fn in a thread; a call that does not return within HANG_S is a hang (a failure)."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - reported to the test thread
            box["error"] = e

    t0 = time.monotonic()
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(HANG_S)
    assert not t.is_alive(), f"{what}: no answer within {HANG_S} s (hang)"
    if "error" in box:
        raise box["error"]
    return box["value"], time.monotonic() - t0


def expect_refused(client, sec, what, broker):
    (ok, detail), took = bounded(lambda: client.attempt(sec), what)
    assert not ok, f"{what}: the client got through ({detail})"
    assert took < HANG_S, f"{what}: took {took:.1f} s"
    print(f"{client.name}: {what}: refused in {took:.1f} s: {detail}")
    # The broker still serves a well-configured client afterwards.
    good = _sec(broker, "MTLS", cert=True)
    (ok, after), _ = bounded(lambda: client.attempt(good), "mTLS client after the failure")
    assert ok, f"after {what}, a good mTLS client failed: {after}\n{broker.log_tail()}"
    return detail


def _topic(client, tag):
    return f"py-sec-{client.name}-{tag}-{uuid.uuid4().hex[:8]}"


# ---------- TLS ----------

@pytest.mark.parametrize("client_cls", CLIENTS, ids=lambda c: c.name)
@pytest.mark.parametrize("listener", ["SSL", "MTLS"])
def test_tls_produce_consume(secure, client_cls, listener):
    client = client_cls()
    sec = _sec(secure, listener, cert=listener == "MTLS")
    bounded(lambda: client.roundtrip(sec, _topic(client, listener.lower())), f"{listener} round trip")


@pytest.mark.parametrize("client_cls", CLIENTS, ids=lambda c: c.name)
def test_untrusted_server_ca_is_refused_by_the_client(secure, client_cls):
    client = client_cls()
    detail = expect_refused(client, _sec(secure, "SSL", ca="untrusted"), "untrusted server CA", secure)
    if client_cls is Confluent:
        assert "certificate verify failed" in detail, detail


@pytest.mark.parametrize("client_cls", CLIENTS, ids=lambda c: c.name)
def test_mtls_without_client_certificate_is_refused_by_the_broker(secure, client_cls):
    client = client_cls()
    detail = expect_refused(client, _sec(secure, "MTLS", cert=False), "mTLS without a client certificate", secure)
    if client_cls is Confluent:
        # TLS 1.3: the broker's alert 116 reaches the client after its handshake.
        assert "certificate required" in detail, detail


@pytest.mark.parametrize("client_cls", CLIENTS, ids=lambda c: c.name)
def test_plaintext_client_on_the_tls_port_fails(secure, client_cls):
    client = client_cls()
    sec = {**_sec(secure, "SSL"), "protocol": "PLAINTEXT"}
    expect_refused(client, sec, "plaintext client on the SSL port", secure)


# ---------- SASL (SKIFF_SASL_TESTS=0 skips) ----------

@needs_sasl
@pytest.mark.parametrize("client_cls", CLIENTS, ids=lambda c: c.name)
@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_sasl_produce_consume(secure, client_cls, listener, mechanism):
    client = client_cls()
    sec = _sec(secure, listener, mechanism=mechanism)
    tag = f"{listener}-{mechanism}".lower()
    bounded(lambda: client.roundtrip(sec, _topic(client, tag)), f"{listener} {mechanism} round trip")


@needs_sasl
@pytest.mark.parametrize("client_cls", CLIENTS, ids=lambda c: c.name)
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_wrong_password_fails(secure, client_cls, mechanism):
    client = client_cls()
    sec = _sec(secure, "SASL_PLAINTEXT", mechanism=mechanism, password="not-the-password")
    expect_refused(client, sec, f"{mechanism} with a wrong password", secure)


@needs_sasl
@pytest.mark.parametrize("client_cls", CLIENTS, ids=lambda c: c.name)
@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_sasl_expired_token_fails(secure, client_cls, listener):
    client = client_cls()
    sec = _sec(secure, listener, mechanism="OAUTHBEARER", expired=True)
    expect_refused(client, sec, f"expired OAUTHBEARER token on {listener}", secure)
