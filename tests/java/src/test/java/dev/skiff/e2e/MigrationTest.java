package dev.skiff.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Online migration (KIP-848): three consumers of one group are moved one at a time from
 * {@code group.protocol=classic} to {@code consumer} and back while a producer writes. Commits
 * happen after processing (auto commit off, and in onPartitionsRevoked). Every record must be
 * consumed at least once, the final committed offsets must equal the end offsets, and the Admin
 * client must report the group type Kafka does at each step.
 */
@Timeout(600)
class MigrationTest {
    private static final int PARTITIONS = 3;
    private static final Duration STEP = Duration.ofSeconds(90);

    /** One consumer on its own thread: poll, record what it saw, commit. */
    private static final class Worker {
        final String protocol;
        final Thread thread;
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicReference<Set<TopicPartition>> assigned = new AtomicReference<>(Set.of());
        final AtomicLong polledAfterAssign = new AtomicLong();
        final AtomicReference<Throwable> failure = new AtomicReference<>();

        Worker(String group, String topic, String protocol, Map<String, Set<Long>> seen,
                AtomicLong duplicates) {
            this.protocol = protocol;
            this.thread = new Thread(() -> run(group, topic, seen, duplicates), "worker-" + protocol);
            thread.start();
        }

        private void run(String group, String topic, Map<String, Set<Long>> seen, AtomicLong duplicates) {
            Map<String, Object> cfg = new HashMap<>();
            cfg.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
            cfg.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 50);
            try (KafkaConsumer<String, String> c = Env.consumer(group, cfg)) {
                c.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                    @Override
                    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                        // Commit what was processed before the partitions move on.
                        try {
                            c.commitSync();
                        } catch (RuntimeException e) {
                            System.err.println("commit on revoke failed: " + e);
                        }
                    }

                    @Override
                    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {}
                });
                while (!stop.get()) {
                    ConsumerRecords<String, String> records = c.poll(Env.POLL);
                    for (ConsumerRecord<String, String> r : records) {
                        Set<Long> offsets = seen.computeIfAbsent(
                                r.topic() + "-" + r.partition(), k -> ConcurrentHashMap.newKeySet());
                        if (!offsets.add(r.offset())) {
                            duplicates.incrementAndGet();
                        }
                    }
                    if (!records.isEmpty()) {
                        try {
                            c.commitSync();
                        } catch (RuntimeException e) {
                            // A rebalance is running: onPartitionsRevoked commits again.
                            System.err.println("commit after poll failed: " + e);
                        }
                    }
                    assigned.set(Set.copyOf(c.assignment()));
                    if (!c.assignment().isEmpty()) {
                        polledAfterAssign.incrementAndGet();
                    }
                }
                try {
                    c.commitSync();
                } catch (RuntimeException e) {
                    System.err.println("final commit failed: " + e);
                }
            } catch (WakeupException e) {
                // closing
            } catch (Throwable t) {
                failure.set(t);
            }
        }

        void close() throws InterruptedException {
            stop.set(true);
            thread.join(60_000);
            assertTrue(!thread.isAlive(), "worker " + protocol + " did not stop");
            if (failure.get() != null) {
                throw new AssertionError("worker " + protocol + " failed", failure.get());
            }
        }
    }

    private static Optional<GroupType> listedType(Admin admin, String group) throws Exception {
        for (GroupListing g : admin.listGroups().all().get(30, TimeUnit.SECONDS)) {
            if (g.groupId().equals(group)) {
                return g.type();
            }
        }
        return Optional.empty();
    }

    private static void expectType(Admin admin, String group, GroupType want, String step) throws Exception {
        Env.waitFor(step + ": group type " + want, Duration.ofSeconds(30),
                () -> {
                    try {
                        return listedType(admin, group).equals(Optional.of(want));
                    } catch (Exception e) {
                        return false;
                    }
                });
        ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all()
                .get(30, TimeUnit.SECONDS).get(group);
        assertEquals(want, d.type(), step + ": describeConsumerGroups type");
    }

    /** Members the describe reports as using the consumer protocol (member type 1). */
    private static int upgraded(ConsumerGroupDescription d) {
        int n = 0;
        for (var m : d.members()) {
            if (m.upgraded().orElse(false)) {
                n++;
            }
        }
        System.out.printf("group %s: %d members, %d on the consumer protocol%n", d.type(), d.members().size(), n);
        return n;
    }

    /** Every worker holds a partition, together all of them, and has polled since. */
    private static void waitConverged(Worker[] workers, String step) throws InterruptedException {
        long[] before = new long[workers.length];
        Env.waitFor(step + ": all partitions assigned once", STEP, () -> {
            Set<TopicPartition> all = new HashSet<>();
            int total = 0;
            for (Worker w : workers) {
                Set<TopicPartition> a = w.assigned.get();
                if (a.isEmpty()) {
                    return false;
                }
                all.addAll(a);
                total += a.size();
            }
            return all.size() == PARTITIONS && total == PARTITIONS;
        });
        for (int i = 0; i < workers.length; i++) {
            before[i] = workers[i].polledAfterAssign.get();
        }
        Env.waitFor(step + ": workers polling", STEP, () -> {
            for (int i = 0; i < workers.length; i++) {
                if (workers[i].polledAfterAssign.get() < before[i] + 3) {
                    return false;
                }
            }
            return true;
        });
    }

    @Test
    void rollingUpgradeToConsumerProtocolAndBack() throws Exception {
        String topic = Env.unique("java-migrate");
        String group = Env.unique("java-migrate-g");
        Map<String, Set<Long>> seen = new ConcurrentHashMap<>();
        AtomicLong duplicates = new AtomicLong();
        AtomicBoolean producing = new AtomicBoolean(true);
        AtomicReference<Throwable> producerFailure = new AtomicReference<>();
        AtomicLong produced = new AtomicLong();
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, PARTITIONS, Map.of());
            Thread producer = new Thread(() -> {
                try (KafkaProducer<String, String> p = Env.producer()) {
                    long i = 0;
                    while (producing.get()) {
                        p.send(new ProducerRecord<>(topic, (int) (i % PARTITIONS), "k" + i, "v" + i)).get();
                        produced.incrementAndGet();
                        i++;
                        if (i % 20 == 0) {
                            Thread.sleep(10);
                        }
                    }
                } catch (Throwable t) {
                    producerFailure.set(t);
                }
            }, "producer");
            producer.start();

            Worker[] workers = new Worker[3];
            for (int i = 0; i < 3; i++) {
                workers[i] = new Worker(group, topic, "classic", seen, duplicates);
            }
            waitConverged(workers, "three classic members");
            expectType(admin, group, GroupType.CLASSIC, "start");

            // Upgrade, one consumer at a time.
            for (int i = 0; i < 3; i++) {
                workers[i].close();
                workers[i] = new Worker(group, topic, "consumer", seen, duplicates);
                waitConverged(workers, "upgrade step " + (i + 1));
                expectType(admin, group, GroupType.CONSUMER, "upgrade step " + (i + 1));
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all()
                        .get(30, TimeUnit.SECONDS).get(group);
                assertEquals(3, d.members().size(), "upgrade step " + (i + 1) + ": classic members listed too");
                assertEquals(i + 1, upgraded(d), "upgrade step " + (i + 1) + ": consumer-protocol members");
            }

            // Downgrade, one consumer at a time: the group stays a consumer group while one
            // consumer-protocol member is left, and is classic again once the last one leaves.
            for (int i = 0; i < 3; i++) {
                workers[i].close();
                workers[i] = new Worker(group, topic, "classic", seen, duplicates);
                waitConverged(workers, "downgrade step " + (i + 1));
                GroupType want = i < 2 ? GroupType.CONSUMER : GroupType.CLASSIC;
                expectType(admin, group, want, "downgrade step " + (i + 1));
                if (want == GroupType.CONSUMER) {
                    ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all()
                            .get(30, TimeUnit.SECONDS).get(group);
                    assertEquals(3, d.members().size(), "downgrade step " + (i + 1));
                    assertEquals(2 - i, upgraded(d), "downgrade step " + (i + 1) + ": consumer-protocol members");
                }
            }

            producing.set(false);
            producer.join(60_000);
            if (producerFailure.get() != null) {
                throw new AssertionError("producer failed", producerFailure.get());
            }
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (int p = 0; p < PARTITIONS; p++) {
                latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
            }
            Map<TopicPartition, Long> ends = new HashMap<>();
            admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS)
                    .forEach((tp, info) -> ends.put(tp, info.offset()));
            Env.waitFor("every record consumed and committed", STEP, () -> {
                try {
                    Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                            .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
                    for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
                        OffsetAndMetadata c = committed.get(e.getKey());
                        if (c == null || c.offset() != e.getValue()) {
                            return false;
                        }
                    }
                    return true;
                } catch (Exception e) {
                    return false;
                }
            });
            for (Worker w : workers) {
                w.close();
            }
            long total = 0;
            List<String> missing = new ArrayList<>();
            for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
                Set<Long> got = seen.getOrDefault(e.getKey().topic() + "-" + e.getKey().partition(), Set.of());
                for (long o = 0; o < e.getValue(); o++) {
                    if (!got.contains(o)) {
                        missing.add(e.getKey() + "@" + o);
                    }
                }
                total += e.getValue();
            }
            assertTrue(missing.isEmpty(), "records never consumed: " + missing.subList(0, Math.min(20, missing.size())));
            assertEquals(produced.get(), total, "end offsets match what was acknowledged");
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
                assertEquals(e.getValue(), committed.get(e.getKey()).offset(), "committed offset of " + e.getKey());
            }
            System.out.printf("migration: %d records, %d consumed twice%n", total, duplicates.get());
            // Commits happen after processing and on revocation, so a record is only read twice
            // when a member loses partitions without a revocation; bound it by one poll batch
            // per partition per step (7 steps).
            assertTrue(duplicates.get() <= 7L * PARTITIONS * 50, "duplicates: " + duplicates.get());
            expectType(admin, group, GroupType.CLASSIC, "end");
        }
    }
}
