package dev.skiff.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Transactional producers (transactional.id): aborted data is hidden from read_committed
 * consumers and visible to read_uncommitted ones, committed data is visible to both,
 * consume-transform-produce commits the group's offsets only with the transaction, and a
 * second producer with the same transactional.id fences the first.
 */
@Timeout(120)
class TransactionTest {

    private static KafkaProducer<String, String> txProducer(String txId) {
        return Env.producer(Map.of(
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, txId,
                ProducerConfig.MAX_BLOCK_MS_CONFIG, 30_000,
                ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 60_000));
    }

    private static KafkaConsumer<String, String> reader(String group, String isolation) {
        return Env.consumer(group, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation));
    }

    /**
     * Everything in partition 0 of {@code topic} as "key=value" strings, read from offset 0:
     * polls until {@code atLeast} records came (30 s at most), then a little longer.
     */
    private static List<String> readAll(String topic, String isolation, int atLeast) {
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> c = reader(null, isolation)) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            List<String> out = new ArrayList<>();
            List<Long> offsets = new ArrayList<>();
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (out.size() < atLeast && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Env.POLL)) {
                    out.add(r.key() + "=" + r.value());
                    offsets.add(r.offset());
                }
            }
            for (ConsumerRecord<String, String> r : Env.drain(c, Duration.ofMillis(500))) {
                out.add(r.key() + "=" + r.value());
                offsets.add(r.offset());
            }
            assertTrue(out.size() >= atLeast, isolation + " read " + out.size() + " of " + atLeast
                    + " records of " + topic + " within 30 s: " + out + " at offsets " + offsets
                    + ", end offset " + c.endOffsets(List.of(tp)).get(tp) + ", position " + c.position(tp));
            return out;
        }
    }

    @Test
    void abortedIsHiddenFromReadCommittedAndCommitIsVisible() throws Exception {
        String topic = Env.unique("java-txn");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, 1, Map.of());
        }
        try (KafkaProducer<String, String> p = txProducer(Env.unique("java-txid"))) {
            p.initTransactions();

            p.beginTransaction();
            for (int i = 0; i < 5; i++) {
                p.send(new ProducerRecord<>(topic, 0, "a" + i, "aborted-" + i));
            }
            p.flush();
            p.abortTransaction();

            // Only aborted data so far: read_committed sees nothing, read_uncommitted all five.
            assertEquals(List.of(), readAll(topic, "read_committed", 0), "read_committed after abort");
            List<String> uncommitted = readAll(topic, "read_uncommitted", 5);
            assertEquals(List.of("a0=aborted-0", "a1=aborted-1", "a2=aborted-2", "a3=aborted-3",
                    "a4=aborted-4"), uncommitted, "read_uncommitted after abort");

            p.beginTransaction();
            for (int i = 0; i < 3; i++) {
                p.send(new ProducerRecord<>(topic, 0, "c" + i, "committed-" + i));
            }
            p.commitTransaction();
        }

        List<String> committed = List.of("c0=committed-0", "c1=committed-1", "c2=committed-2");
        assertEquals(committed, readAll(topic, "read_committed", 3), "read_committed after commit");
        List<String> all = readAll(topic, "read_uncommitted", 8);
        assertEquals(8, all.size(), "read_uncommitted sees both transactions: " + all);
        assertEquals(committed, all.subList(5, 8), "committed records follow the aborted ones");

        // LSO = high watermark once nothing is open: 5 aborted + marker + 3 committed + marker.
        try (KafkaConsumer<String, String> c = reader(null, "read_committed")) {
            Map<TopicPartition, Long> end = c.endOffsets(List.of(tp));
            assertEquals(10L, end.get(tp), "read_committed end offset (LSO) after both markers");
        }
    }

    /** An open transaction's data stays hidden from read_committed until the commit. */
    @Test
    void openTransactionIsHiddenUntilCommit() throws Exception {
        String topic = Env.unique("java-txn-open");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, 1, Map.of());
        }
        try (KafkaProducer<String, String> p = txProducer(Env.unique("java-txid"));
                KafkaConsumer<String, String> rc = reader(null, "read_committed")) {
            rc.assign(List.of(tp));
            rc.seekToBeginning(List.of(tp));
            p.initTransactions();
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, "k", "pending")).get(30, TimeUnit.SECONDS);

            assertEquals(List.of(), Env.drain(rc, Duration.ofMillis(800)), "open transaction visible");
            assertEquals(0L, rc.endOffsets(List.of(tp)).get(tp), "LSO while the transaction is open");
            assertEquals(List.of("k=pending"), readAll(topic, "read_uncommitted", 1));

            p.commitTransaction();
            List<ConsumerRecord<String, String>> got = Env.pollUntil(rc, 1, Duration.ofSeconds(30));
            assertEquals("pending", Env.only(got).value());
        }
    }

    /**
     * Consume-transform-produce: the output and the group's offsets go in one transaction. An
     * aborted round leaves the committed offset where it was; a committed round moves it.
     */
    @Test
    void sendOffsetsToTransactionCommitsOffsetsOnlyOnCommit() throws Exception {
        String in = Env.unique("java-ctp-in");
        String out = Env.unique("java-ctp-out");
        String group = Env.unique("java-ctp-g");
        TopicPartition inTp = new TopicPartition(in, 0);
        int n = 10;
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, in, 1, Map.of());
            Env.createTopic(admin, out, 1, Map.of());
            try (KafkaProducer<String, String> p = Env.producer()) {
                for (int i = 0; i < n; i++) {
                    p.send(new ProducerRecord<>(in, 0, "k" + i, "v" + i));
                }
                p.flush();
            }

            try (KafkaProducer<String, String> p = txProducer(Env.unique("java-ctp-txid"));
                    KafkaConsumer<String, String> c = reader(group, "read_committed")) {
                p.initTransactions();
                c.subscribe(List.of(in));
                List<ConsumerRecord<String, String>> got = Env.pollUntil(c, n, Duration.ofSeconds(60));
                assertEquals(n, got.size());

                // Round 1: transform the first half, send offsets, abort.
                p.beginTransaction();
                for (int i = 0; i < n / 2; i++) {
                    ConsumerRecord<String, String> r = got.get(i);
                    p.send(new ProducerRecord<>(out, 0, r.key(), r.value().toUpperCase()));
                }
                // Flush first: abortTransaction drops batches still in the producer's buffer,
                // and the check below wants the aborted records in the log.
                p.flush();
                p.sendOffsetsToTransaction(Map.of(inTp, new OffsetAndMetadata(n / 2)), c.groupMetadata());
                p.abortTransaction();
                assertNull(committedOffset(admin, group, inTp), "offset committed by an aborted transaction");

                // Round 2: transform everything, send offsets, commit.
                p.beginTransaction();
                for (ConsumerRecord<String, String> r : got) {
                    p.send(new ProducerRecord<>(out, 0, r.key(), r.value().toUpperCase()));
                }
                p.sendOffsetsToTransaction(Map.of(inTp, new OffsetAndMetadata(n, "ctp")), c.groupMetadata());
                p.commitTransaction();

                OffsetAndMetadata om = committedOffset(admin, group, inTp);
                assertEquals(n, om == null ? -1 : om.offset(), "offset after the committed transaction");
                assertEquals("ctp", om.metadata());
                Map<TopicPartition, OffsetAndMetadata> seen = c.committed(Set.of(inTp));
                assertEquals(n, seen.get(inTp).offset(), "the consumer sees the transactional commit");
            }
        }

        List<String> want = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            want.add("k" + i + "=V" + i);
        }
        assertEquals(want, readAll(out, "read_committed", n), "output of the committed round only");
        assertEquals(n / 2 + n, readAll(out, "read_uncommitted", n / 2 + n).size(),
                "read_uncommitted sees both rounds");
    }

    private static OffsetAndMetadata committedOffset(Admin admin, String group, TopicPartition tp)
            throws Exception {
        return admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
                .get(30, TimeUnit.SECONDS).get(tp);
    }

    /**
     * A second producer with the same transactional.id bumps the epoch: the first one's open
     * transaction is aborted and its next transactional call fails with ProducerFencedException.
     */
    @Test
    void sameTransactionalIdFencesTheFirstProducer() throws Exception {
        String topic = Env.unique("java-fence");
        String txId = Env.unique("java-fence-txid");
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, 1, Map.of());
        }
        try (KafkaProducer<String, String> first = txProducer(txId)) {
            first.initTransactions();
            first.beginTransaction();
            first.send(new ProducerRecord<>(topic, 0, "first", "zombie")).get(30, TimeUnit.SECONDS);

            try (KafkaProducer<String, String> second = txProducer(txId)) {
                // Fences `first` and aborts its open transaction.
                second.initTransactions();

                // The first producer's commit carries the old epoch: the coordinator refuses it.
                assertThrows(ProducerFencedException.class, first::commitTransaction,
                        "commit by the fenced producer");

                second.beginTransaction();
                second.send(new ProducerRecord<>(topic, 0, "second", "ok"));
                second.commitTransaction();
            }
        }
        List<String> visible = readAll(topic, "read_committed", 1);
        assertEquals(List.of("second=ok"), visible, "only the second producer's transaction is committed");
    }
}
