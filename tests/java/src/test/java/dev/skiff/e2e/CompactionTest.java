package dev.skiff.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A compacted topic read from offset 0 after the cleaner ran: the latest value of each key,
 * once, in offset order, tombstones kept (delete.retention.ms is a day). Needs a broker whose
 * cleaner wakes up often (run.sh starts both brokers with log.cleaner.backoff.ms=100).
 */
@Timeout(120)
class CompactionTest {

    @Test
    void compactedTopicKeepsTheLatestValuePerKey() throws Exception {
        String topic = Env.unique("java-compact");
        TopicPartition tp = new TopicPartition(topic, 0);
        int keys = 20;
        int rounds = 5;
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, 1, Map.of(
                    "cleanup.policy", "compact",
                    "segment.ms", "100",
                    "min.cleanable.dirty.ratio", "0.01"));
        }
        try (KafkaProducer<String, String> p = Env.producer()) {
            // Each round is its own batch and (given segment.ms=100) mostly its own segment.
            for (int r = 0; r < rounds; r++) {
                for (int k = 0; k < keys; k++) {
                    p.send(new ProducerRecord<>(topic, 0, "key-" + k, "r" + r + "-key-" + k));
                }
                p.flush();
                Thread.sleep(150);
            }
            p.send(new ProducerRecord<>(topic, 0, "key-0", null)).get(30, TimeUnit.SECONDS); // tombstone
            Thread.sleep(150);
            // A later write rolls the segment holding everything above (Kafka rolls on append),
            // so all of it is below the active segment and cleanable.
            p.send(new ProducerRecord<>(topic, 0, "marker", "end")).get(30, TimeUnit.SECONDS);
        }
        long total = (long) keys * rounds + 2;

        // Expected after cleaning: key-0 -> tombstone, key-k -> last round, marker; offset order.
        Map<String, String> want = new HashMap<>();
        for (int k = 1; k < keys; k++) {
            want.put("key-" + k, "r" + (rounds - 1) + "-key-" + k);
        }
        want.put("key-0", null);
        want.put("marker", "end");

        List<ConsumerRecord<String, String>> last = List.of();
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            last = readAll(tp, total);
            if (last.size() == want.size()) {
                break;
            }
            Thread.sleep(300);
        }
        assertEquals(want.size(), last.size(),
                "records left after cleaning (" + total + " written): " + summary(last));
        Map<String, String> got = new HashMap<>();
        long prev = -1;
        for (ConsumerRecord<String, String> r : last) {
            assertEquals(true, r.offset() > prev, "offsets increase");
            prev = r.offset();
            assertEquals(false, got.containsKey(r.key()), "key " + r.key() + " appears once");
            got.put(r.key(), r.value());
        }
        assertEquals(want, got, "latest value per key");
        assertNull(got.get("key-0"), "tombstone kept");
        assertEquals(total - 1, last.get(last.size() - 1).offset(), "marker keeps its offset");
        // The last round kept its original offsets: round 4 of key-k was offset 4*keys + k.
        for (ConsumerRecord<String, String> r : last) {
            if (r.key().startsWith("key-") && r.value() != null) {
                int k = Integer.parseInt(r.key().substring(4));
                assertEquals((long) (rounds - 1) * keys + k, r.offset(), "offset of " + r.key());
            }
        }
    }

    /** Reads the partition from offset 0 up to its end offset, {@code total}. */
    private static List<ConsumerRecord<String, String>> readAll(TopicPartition tp, long total) {
        try (KafkaConsumer<String, String> c = Env.consumer(null)) {
            c.assign(List.of(tp));
            c.seek(tp, 0);
            List<ConsumerRecord<String, String>> got = new ArrayList<>();
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (c.position(tp) < total && System.nanoTime() < deadline) {
                c.poll(Env.POLL).forEach(got::add);
            }
            assertEquals(total, c.position(tp), "consumer reached the end offset");
            return got;
        }
    }

    private static String summary(List<ConsumerRecord<String, String>> rs) {
        StringBuilder sb = new StringBuilder();
        for (ConsumerRecord<String, String> r : rs) {
            sb.append(r.offset()).append(':').append(r.key()).append('=').append(r.value()).append(' ');
            if (sb.length() > 600) {
                sb.append("...");
                break;
            }
        }
        return sb.toString();
    }
}
