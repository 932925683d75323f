package dev.skiff.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Path;
import java.security.PrivateKey;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.config.SslConfigs;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Security with the Java client (issue 14) against the broker of tests/security/broker.sh
 * (run.sh starts it; its listeners and certificates come in SEC_*, PEM files used as PEM
 * stores, no keytool): produce and consume over SSL and mTLS; a CA that did not sign the
 * broker (the client refuses), mTLS without a client certificate (the broker refuses) and a
 * plaintext client on the TLS port fail within a bounded time and leave the broker serving a
 * fresh mTLS client. SASL rows (SEC_SASL=1; SKIFF_SASL_TESTS=0 leaves them out): SASL_PLAINTEXT and
 * SASL_SSL with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER (JWTs signed by {@link
 * Jwt}, handed to the client by {@link TokenLoginHandler}), wrong password, expired token.
 * Without SEC_SSL (e.g. run.sh --kafka) every test is skipped.
 */
class SecurityTest {
    private static final long FAIL_WITHIN_S = 20;

    private static String env(String name) {
        return System.getenv(name);
    }

    @BeforeAll
    static void needsSecureBroker() {
        assumeTrue(env("SEC_SSL") != null && env("SEC_MTLS") != null,
                "no secure broker (SEC_SSL/SEC_MTLS unset): run tests/java/run.sh against Skiff");
    }

    private static void needsSasl() {
        assumeTrue("1".equals(env("SEC_SASL")), "SASL rows switched off (SKIFF_SASL_TESTS=0)");
    }

    /** Client properties for one way of connecting. */
    static final class Conn {
        String addr;
        boolean tls;
        String ca = env("SEC_CA");
        boolean cert;
        String mechanism;
        String password = "alice-secret";
        boolean expired;
        String protocol; // what the client speaks; null: from tls/mechanism

        Conn(String addr) {
            this.addr = addr;
        }

        Map<String, Object> props() throws Exception {
            Map<String, Object> p = new HashMap<>();
            p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, addr);
            String proto = protocol != null ? protocol
                    : (mechanism != null ? "SASL_" : "") + (tls ? "SSL" : "PLAINTEXT");
            p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, proto);
            if (tls) {
                p.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PEM");
                p.put(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, ca);
                if (cert) {
                    p.put(SslConfigs.SSL_KEYSTORE_TYPE_CONFIG, "PEM");
                    p.put(SslConfigs.SSL_KEYSTORE_LOCATION_CONFIG, env("SEC_CLIENT_KEYSTORE"));
                }
            }
            if (mechanism != null) {
                p.put(SaslConfigs.SASL_MECHANISM, mechanism);
                switch (mechanism) {
                    case "PLAIN" -> p.put(SaslConfigs.SASL_JAAS_CONFIG,
                            "org.apache.kafka.common.security.plain.PlainLoginModule required "
                                    + "username=\"alice\" password=\"" + password + "\";");
                    case "SCRAM-SHA-256", "SCRAM-SHA-512" -> p.put(SaslConfigs.SASL_JAAS_CONFIG,
                            "org.apache.kafka.common.security.scram.ScramLoginModule required "
                                    + "username=\"alice\" password=\"" + password + "\";");
                    case "OAUTHBEARER" -> {
                        PrivateKey key = Jwt.load(Path.of(env("SEC_JWT_KEY")));
                        p.put(SaslConfigs.SASL_LOGIN_CALLBACK_HANDLER_CLASS, TokenLoginHandler.class.getName());
                        p.put(SaslConfigs.SASL_JAAS_CONFIG,
                                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                                        + "token=\"" + Jwt.sign(key, expired ? -300 : 300) + "\";");
                    }
                    default -> throw new IllegalArgumentException(mechanism);
                }
            }
            return p;
        }
    }

    private static Conn ssl() {
        Conn c = new Conn(env("SEC_SSL"));
        c.tls = true;
        return c;
    }

    private static Conn mtls() {
        Conn c = new Conn(env("SEC_MTLS"));
        c.tls = true;
        c.cert = true;
        return c;
    }

    private static Conn sasl(String listener, String mechanism) {
        Conn c = new Conn(env("SASL_SSL".equals(listener) ? "SEC_SASL_SSL" : "SEC_SASL_PLAINTEXT"));
        c.tls = "SASL_SSL".equals(listener);
        c.mechanism = mechanism;
        return c;
    }

    private static Admin admin(Conn c, int apiTimeoutMs) throws Exception {
        Properties p = new Properties();
        p.putAll(c.props());
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, apiTimeoutMs);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, Math.min(apiTimeoutMs, 15_000));
        return Admin.create(p);
    }

    private static void roundTrip(Conn c, String tag) throws Exception {
        String topic = Env.unique("java-sec-" + tag);
        try (Admin a = admin(c, 30_000)) {
            Env.createTopic(a, topic, 1, Map.of());
        }
        try (KafkaProducer<String, String> p = Env.producer(c.props())) {
            for (int i = 0; i < 3; i++) {
                p.send(new ProducerRecord<>(topic, "k" + i, "v" + i)).get(30, TimeUnit.SECONDS);
            }
        }
        try (KafkaConsumer<String, String> cons = Env.consumer(null, c.props())) {
            TopicPartition tp = new TopicPartition(topic, 0);
            cons.assign(List.of(tp));
            cons.seekToBeginning(List.of(tp));
            List<String> got = new ArrayList<>();
            for (ConsumerRecord<String, String> r : Env.pollUntil(cons, 3, Duration.ofSeconds(30))) {
                got.add(r.value());
            }
            assertEquals(List.of("v0", "v1", "v2"), got);
        }
    }

    /** One listTopics; returns the failure (null when it worked). */
    private static Throwable attempt(Conn c) throws Exception {
        try (Admin a = admin(c, 10_000)) {
            a.listTopics().names().get(FAIL_WITHIN_S, TimeUnit.SECONDS);
            return null;
        } catch (java.util.concurrent.ExecutionException e) {
            return e.getCause();
        } catch (java.util.concurrent.TimeoutException e) {
            fail("no answer within " + FAIL_WITHIN_S + " s (hang)");
            return e;
        }
    }

    private static void expectRefused(Conn c, Class<? extends Throwable> want) throws Exception {
        long t0 = System.nanoTime();
        Throwable err = attempt(c);
        double took = (System.nanoTime() - t0) / 1e9;
        assertTrue(err != null, "the client got through");
        System.out.printf("refused in %.1f s: %s%n", took, err);
        if (want != null) {
            assertTrue(want.isInstance(err), "expected " + want.getSimpleName() + ", got " + err);
        }
        Throwable after = attempt(mtls());
        assertTrue(after == null, "after the refusal a good mTLS client failed: " + after);
    }

    @Test
    void sslProduceConsume() throws Exception {
        roundTrip(ssl(), "ssl");
    }

    @Test
    void mtlsProduceConsume() throws Exception {
        roundTrip(mtls(), "mtls");
    }

    @Test
    void untrustedServerCaIsRefusedByTheClient() throws Exception {
        Conn c = ssl();
        c.ca = env("SEC_UNTRUSTED_CA");
        expectRefused(c, org.apache.kafka.common.errors.SslAuthenticationException.class);
    }

    @Test
    void mtlsWithoutClientCertificateIsRefusedByTheBroker() throws Exception {
        Conn c = mtls();
        c.cert = false;
        expectRefused(c, org.apache.kafka.common.errors.SslAuthenticationException.class);
    }

    @Test
    void plaintextClientOnTheTlsPortFails() throws Exception {
        Conn c = ssl();
        c.tls = false;
        expectRefused(c, null);
    }

    @ParameterizedTest
    @CsvSource({
        "SASL_PLAINTEXT,PLAIN", "SASL_PLAINTEXT,SCRAM-SHA-256", "SASL_PLAINTEXT,SCRAM-SHA-512", "SASL_PLAINTEXT,OAUTHBEARER",
        "SASL_SSL,PLAIN", "SASL_SSL,SCRAM-SHA-256", "SASL_SSL,SCRAM-SHA-512", "SASL_SSL,OAUTHBEARER"
    })
    void saslProduceConsume(String listener, String mechanism) throws Exception {
        needsSasl();
        roundTrip(sasl(listener, mechanism), (listener + "-" + mechanism).toLowerCase());
    }

    @ParameterizedTest
    @ValueSource(strings = {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"})
    void saslWrongPasswordFails(String mechanism) throws Exception {
        needsSasl();
        Conn c = sasl("SASL_PLAINTEXT", mechanism);
        c.password = "not-the-password";
        expectRefused(c, org.apache.kafka.common.errors.SaslAuthenticationException.class);
    }

    @ParameterizedTest
    @ValueSource(strings = {"SASL_PLAINTEXT", "SASL_SSL"})
    void saslExpiredTokenFails(String listener) throws Exception {
        needsSasl();
        Conn c = sasl(listener, "OAUTHBEARER");
        c.expired = true;
        expectRefused(c, org.apache.kafka.common.errors.SaslAuthenticationException.class);
    }
}
