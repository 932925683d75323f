package dev.skiff.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Transaction version 2 (KIP-890 part 2) as the 4.x Java producer negotiates it from the
 * finalized {@code transaction.version} feature: the coordinator bumps the producer epoch at
 * every commit and abort (visible through DescribeTransactions), and a producer left at an
 * older epoch by a newer instance cannot get a record into the log.
 */
@Timeout(120)
class TransactionV2Test {

    private static KafkaProducer<String, String> txProducer(String txId) {
        return Env.producer(Map.of(
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, txId,
                ProducerConfig.MAX_BLOCK_MS_CONFIG, 30_000,
                ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 60_000));
    }

    private static TransactionDescription describe(Admin admin, String txId) throws Exception {
        return admin.describeTransactions(List.of(txId)).description(txId).get(30, TimeUnit.SECONDS);
    }

    /** Every record of partition 0 of {@code topic} as "key=value", read_uncommitted. */
    private static List<String> everything(String topic, int atLeast) {
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> c = Env.consumer(null,
                Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted"))) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            List<String> out = new ArrayList<>();
            for (ConsumerRecord<String, String> r : Env.pollUntil(c, atLeast, Duration.ofSeconds(30))) {
                out.add(r.key() + "=" + r.value());
            }
            for (ConsumerRecord<String, String> r : Env.drain(c, Duration.ofMillis(500))) {
                out.add(r.key() + "=" + r.value());
            }
            return out;
        }
    }

    /**
     * Each commit and each abort moves the epoch on by one while the producer id stays: the
     * EndTxn v5 epoch bump, which transaction version 0 never does.
     */
    @Test
    void everyCommitAndAbortBumpsTheEpoch() throws Exception {
        String topic = Env.unique("java-tv2");
        String txId = Env.unique("java-tv2-txid");
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, 1, Map.of());
            try (KafkaProducer<String, String> p = txProducer(txId)) {
                p.initTransactions();
                TransactionDescription start = describe(admin, txId);
                long pid = start.producerId();
                int epoch = start.producerEpoch();

                p.beginTransaction();
                p.send(new ProducerRecord<>(topic, 0, "a", "1"));
                p.commitTransaction();
                TransactionDescription afterCommit = describe(admin, txId);
                assertEquals(pid, afterCommit.producerId());
                assertEquals(epoch + 1, afterCommit.producerEpoch(), "epoch after a commit");

                p.beginTransaction();
                p.send(new ProducerRecord<>(topic, 0, "b", "2"));
                p.flush();
                p.abortTransaction();
                assertEquals(epoch + 2, describe(admin, txId).producerEpoch(), "epoch after an abort");

                // The producer goes on with the epoch EndTxn gave it.
                p.beginTransaction();
                p.send(new ProducerRecord<>(topic, 0, "c", "3"));
                p.commitTransaction();
                TransactionDescription last = describe(admin, txId);
                assertEquals(epoch + 3, last.producerEpoch(), "epoch after the second commit");
                assertEquals(pid, last.producerId());
            }
            assertEquals(List.of("a=1", "b=2", "c=3"), everything(topic, 3));
        }
    }

    /**
     * A zombie: the first producer committed once (epoch bumped), then a second instance with
     * the same transactional.id took over. The zombie's next transaction sends no
     * AddPartitionsToTxn under transaction version 2; the broker adds the partition itself
     * and refuses the zombie's epoch there, so its record never reaches the log and its commit
     * fails, while the new instance commits.
     */
    @Test
    void aZombieCannotWriteAfterANewInstanceTookOver() throws Exception {
        String topic = Env.unique("java-tv2-zombie");
        String txId = Env.unique("java-tv2-zombie-txid");
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, 1, Map.of());
        }
        try (KafkaProducer<String, String> zombie = txProducer(txId)) {
            zombie.initTransactions();
            zombie.beginTransaction();
            zombie.send(new ProducerRecord<>(topic, 0, "zombie", "committed"));
            zombie.commitTransaction();

            try (KafkaProducer<String, String> fresh = txProducer(txId)) {
                fresh.initTransactions();

                zombie.beginTransaction();
                Exception sent = assertThrows(Exception.class, () ->
                        zombie.send(new ProducerRecord<>(topic, 0, "zombie", "late")).get(30, TimeUnit.SECONDS),
                        "the zombie's record was acknowledged");
                assertTrue(sent.getCause() != null, "send failed without a cause: " + sent);
                assertThrows(Exception.class, zombie::commitTransaction, "the zombie committed");

                fresh.beginTransaction();
                fresh.send(new ProducerRecord<>(topic, 0, "fresh", "ok"));
                fresh.commitTransaction();
            }
        }
        // read_uncommitted: the late record is nowhere in the log, not even aborted.
        assertEquals(List.of("zombie=committed", "fresh=ok"), everything(topic, 2));
    }
}
