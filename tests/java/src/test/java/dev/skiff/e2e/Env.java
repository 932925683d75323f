package dev.skiff.e2e;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Shared setup for the suite: the broker under test is at {@code $E2E_BOOTSTRAP} (host:port),
 * started by run.sh (Skiff, or the reference Kafka with {@code --kafka}). Not SKIFF_*: the
 * broker reads those as its own configuration.
 */
final class Env {
    static final Duration POLL = Duration.ofMillis(200);

    private Env() {}

    static String bootstrap() {
        String b = System.getenv("E2E_BOOTSTRAP");
        if (b == null || b.isBlank()) {
            fail("E2E_BOOTSTRAP is not set: run tests/java/run.sh, or export E2E_BOOTSTRAP=host:port");
        }
        return b;
    }

    /** A topic or group name no other test (or earlier run on the same broker) uses. */
    static String unique(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    static Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 15_000);
        return Admin.create(p);
    }

    /** A producer with the 4.x defaults (idempotence on, acks=all) plus the given overrides. */
    static KafkaProducer<String, String> producer(Map<String, Object> overrides) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30_000);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 15_000);
        p.putAll(overrides);
        return new KafkaProducer<>(p);
    }

    static KafkaProducer<String, String> producer() {
        return producer(Map.of());
    }

    /** A consumer; {@code group} may be null for assign()-only use. Auto commit is off. */
    static KafkaConsumer<String, String> consumer(String group, Map<String, Object> overrides) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000);
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        p.putAll(overrides);
        return new KafkaConsumer<>(p);
    }

    static KafkaConsumer<String, String> consumer(String group) {
        return consumer(group, Map.of());
    }

    static void createTopic(Admin admin, String name, int partitions, Map<String, String> configs)
            throws Exception {
        admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1).configs(configs)))
                .all()
                .get(30, TimeUnit.SECONDS);
    }

    /** Polls until {@code want} records arrived (or fails after {@code timeout}). */
    static List<ConsumerRecord<String, String>> pollUntil(
            KafkaConsumer<String, String> c, int want, Duration timeout) {
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        long deadline = System.nanoTime() + timeout.toNanos();
        while (got.size() < want && System.nanoTime() < deadline) {
            c.poll(POLL).forEach(got::add);
        }
        assertTrue(
                got.size() >= want,
                "consumed " + got.size() + " of " + want + " records within " + timeout);
        return got;
    }

    /** Keeps polling for a short while and returns everything, to check nothing extra came. */
    static List<ConsumerRecord<String, String>> drain(KafkaConsumer<String, String> c, Duration quiet) {
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        long deadline = System.nanoTime() + quiet.toNanos();
        while (System.nanoTime() < deadline) {
            c.poll(POLL).forEach(got::add);
        }
        return got;
    }

    static void waitFor(String what, Duration timeout, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out after " + timeout + " waiting for " + what);
            }
            Thread.sleep(100);
        }
    }

    static <T> T only(Collection<T> c) {
        assertTrue(c.size() == 1, "expected exactly one element, got " + c);
        return c.iterator().next();
    }
}
