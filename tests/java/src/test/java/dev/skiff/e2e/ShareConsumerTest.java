package dev.skiff.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Share groups (KIP-932) through kafka-clients' KafkaShareConsumer and the share-group Admin
 * calls: records shared by several consumers and each processed once, RELEASE / REJECT /
 * ACCEPT, acquisition locks of a consumer that leaves or stops polling, the delivery count
 * limit, explicit and implicit acknowledgement, read_committed, share.auto.offset.reset and
 * the admin side (list, describe, offsets, delete).
 *
 * <p>Group behaviour is set with group configs (Admin incrementalAlterConfigs on the GROUP
 * resource), as a share-group operator would. A share group starts at the latest offset unless
 * {@code share.auto.offset.reset=earliest} is set, so every test that produces before its
 * consumers join sets it first. Each test has its own topic and group; every wait is bounded.
 *
 * <p>Both Skiff and the reference Kafka must advertise ShareGroupHeartbeat (API key 76).
 */
@Timeout(180)
class ShareConsumerTest {

    /** Kafka's lower bound for share.record.lock.duration.ms (group.share.min.record.lock.duration.ms). */
    private static final int MIN_LOCK_MS = 15_000;

    /** API key -> max version from an ApiVersions v0 exchange on a plain socket. */
    static Map<Integer, Integer> apiVersions() throws Exception {
        String[] hp = Env.bootstrap().split(":");
        try (Socket s = new Socket(hp[0], Integer.parseInt(hp[1]))) {
            s.setSoTimeout(15_000);
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            byte[] clientId = "share-probe".getBytes(StandardCharsets.UTF_8);
            out.writeInt(2 + 2 + 4 + 2 + clientId.length);
            out.writeShort(18); // ApiVersions
            out.writeShort(0);
            out.writeInt(1);
            out.writeShort(clientId.length);
            out.write(clientId);
            out.flush();
            DataInputStream in = new DataInputStream(s.getInputStream());
            in.readInt(); // size
            in.readInt(); // correlation id
            short error = in.readShort();
            assertEquals(0, error, "ApiVersions error");
            int n = in.readInt();
            Map<Integer, Integer> out2 = new HashMap<>();
            for (int i = 0; i < n; i++) {
                int key = in.readShort();
                in.readShort(); // min
                out2.put(key, (int) in.readShort());
            }
            return out2;
        }
    }

    @BeforeAll
    static void shareGroupsServed() throws Exception {
        assertTrue(apiVersions().containsKey(76), "the broker does not advertise ShareGroupHeartbeat (API 76)");
    }

    private static KafkaShareConsumer<String, String> shareConsumer(String group, Map<String, Object> overrides) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, Env.bootstrap());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000);
        p.putAll(overrides);
        return new KafkaShareConsumer<>(p);
    }

    private static KafkaShareConsumer<String, String> shareConsumer(String group) {
        return shareConsumer(group, Map.of());
    }

    private static KafkaShareConsumer<String, String> explicitConsumer(String group) {
        return shareConsumer(group, Map.of(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit"));
    }

    /**
     * Sets group configs on {@code group} and waits until DescribeConfigs shows them (Kafka
     * applies config changes asynchronously through its metadata log).
     */
    private static void groupConfig(Admin admin, String group, Map<String, String> configs) throws Exception {
        ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
        List<AlterConfigOp> ops = new ArrayList<>();
        configs.forEach((k, v) -> ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
        admin.incrementalAlterConfigs(Map.of(res, ops)).all().get(30, TimeUnit.SECONDS);
        Env.waitFor("group configs " + configs + " on " + group, Duration.ofSeconds(30), () -> {
            try {
                Config c = admin.describeConfigs(List.of(res)).all().get(30, TimeUnit.SECONDS).get(res);
                for (Map.Entry<String, String> e : configs.entrySet()) {
                    ConfigEntry got = c.get(e.getKey());
                    if (got == null || !e.getValue().equals(got.value())) {
                        return false;
                    }
                }
                return true;
            } catch (Exception ex) {
                return false;
            }
        });
    }

    private static void earliest(Admin admin, String group) throws Exception {
        groupConfig(admin, group, Map.of("share.auto.offset.reset", "earliest"));
    }

    /** Produces values {@code prefix0..prefix(n-1)} (key = value) round robin over {@code partitions}. */
    private static void produce(String topic, int partitions, String prefix, int n) {
        try (KafkaProducer<String, String> p = Env.producer()) {
            for (int i = 0; i < n; i++) {
                p.send(new ProducerRecord<>(topic, i % partitions, prefix + i, prefix + i));
            }
            p.flush();
        }
    }

    /** Polls until {@code want} records came (fails after {@code timeout}); no acknowledgement here. */
    private static List<ConsumerRecord<String, String>> pollUntil(
            KafkaShareConsumer<String, String> c, int want, Duration timeout) {
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        long deadline = System.nanoTime() + timeout.toNanos();
        while (got.size() < want && System.nanoTime() < deadline) {
            c.poll(Env.POLL).forEach(got::add);
        }
        assertTrue(got.size() >= want, "got " + got.size() + " of " + want + " records within " + timeout
                + ": " + values(got));
        return got;
    }

    /**
     * Polls for {@code quiet}, accepting whatever comes (explicit mode) or relying on implicit
     * acknowledgement, and returns it: used to show that nothing (more) is delivered.
     */
    private static List<ConsumerRecord<String, String>> drain(
            KafkaShareConsumer<String, String> c, Duration quiet, boolean explicit) {
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        long deadline = System.nanoTime() + quiet.toNanos();
        while (System.nanoTime() < deadline) {
            for (ConsumerRecord<String, String> r : c.poll(Env.POLL)) {
                got.add(r);
                if (explicit) {
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                }
            }
        }
        if (explicit) {
            c.commitSync();
        }
        return got;
    }

    private static List<String> values(Collection<ConsumerRecord<String, String>> rs) {
        return rs.stream().map(ConsumerRecord::value).collect(Collectors.toList());
    }

    private static int deliveryCount(ConsumerRecord<String, String> r) {
        Optional<Short> dc = r.deliveryCount();
        assertTrue(dc.isPresent(), "a share consumer's record carries its delivery count: " + r);
        return dc.get();
    }

    /** Acknowledgement results of a commitSync: every partition must have succeeded. */
    private static void commitOk(KafkaShareConsumer<String, String> c) {
        c.commitSync(Duration.ofSeconds(30)).forEach((tp, err) ->
                assertTrue(err.isEmpty(), "acknowledgement of " + tp + " failed: " + err));
    }

    private static ShareGroupDescription describe(Admin admin, String group) throws Exception {
        return admin.describeShareGroups(List.of(group)).all().get(30, TimeUnit.SECONDS).get(group);
    }

    private static Map<TopicPartition, SharePartitionOffsetInfo> offsets(Admin admin, String group) throws Exception {
        Map<TopicPartition, SharePartitionOffsetInfo> m = admin
                .listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
                .partitionsToOffsetInfo(group).get(30, TimeUnit.SECONDS);
        Map<TopicPartition, SharePartitionOffsetInfo> out = new HashMap<>();
        m.forEach((tp, info) -> {
            if (info != null) {
                out.put(tp, info);
            }
        });
        return out;
    }

    private static long startOffset(Admin admin, String group, TopicPartition tp) {
        try {
            SharePartitionOffsetInfo i = offsets(admin, group).get(tp);
            return i == null ? -1 : i.startOffset();
        } catch (Exception e) {
            return -2;
        }
    }

    /**
     * The lag DescribeShareGroupOffsets reports for {@code tp} (-1 when there is none). Kafka
     * persists the share-partition start offset lazily (it may stay at the first unacknowledged
     * offset it wrote), so "everything up to the log end was acknowledged" shows as lag 0.
     */
    private static long lag(Admin admin, String group, TopicPartition tp) {
        try {
            SharePartitionOffsetInfo i = offsets(admin, group).get(tp);
            return i == null || i.lag().isEmpty() ? -1 : i.lag().get();
        } catch (Exception e) {
            return -2;
        }
    }

    /**
     * Whether DescribeShareGroupOffsets shows {@code tp} acknowledged up to {@code end}: lag 0
     * where the broker reports a lag (DescribeShareGroupOffsets v1, Kafka 4.4). Version 0 (what
     * Skiff serves) has no lag; then only that the share-partition has a start offset in
     * [0, end] (Kafka persists the start offset lazily, so it need not be {@code end}).
     */
    private static boolean acknowledgedUpTo(Admin admin, String group, TopicPartition tp, long end) {
        try {
            SharePartitionOffsetInfo i = offsets(admin, group).get(tp);
            if (i == null) {
                return false;
            }
            if (i.lag().isPresent()) {
                return i.lag().get() == 0;
            }
            return i.startOffset() >= 0 && i.startOffset() <= end;
        } catch (Exception e) {
            return false;
        }
    }

    // ---------------------------------------------------------------------------------------

    /** Three consumers in one share group on a 3-partition topic: every record exactly once. */
    @Test
    void severalConsumersProcessEveryRecordOnce() throws Exception {
        String topic = Env.unique("java-share");
        String group = Env.unique("java-share-g");
        int partitions = 3;
        int n = 300;
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, partitions, Map.of());
            earliest(admin, group);
        }
        produce(topic, partitions, "v", n);
        List<KafkaShareConsumer<String, String>> cs = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                KafkaShareConsumer<String, String> c = shareConsumer(group,
                        Map.of(ConsumerConfig.CLIENT_ID_CONFIG, group + "-c" + i));
                c.subscribe(List.of(topic));
                cs.add(c);
            }
            Map<String, Integer> seen = new HashMap<>();
            int[] perConsumer = new int[cs.size()];
            long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
            while (seen.size() < n && System.nanoTime() < deadline) {
                for (int i = 0; i < cs.size(); i++) {
                    for (ConsumerRecord<String, String> r : cs.get(i).poll(Duration.ofMillis(100))) {
                        seen.merge(r.value(), 1, Integer::sum);
                        perConsumer[i]++;
                        assertEquals(1, deliveryCount(r), "first delivery of " + r.value());
                    }
                }
            }
            assertEquals(n, seen.size(), "distinct records processed");
            // Implicit mode: the next poll accepts what the previous one returned; keep polling a
            // little to see that nothing is handed out a second time.
            for (int round = 0; round < 10; round++) {
                for (int i = 0; i < cs.size(); i++) {
                    for (ConsumerRecord<String, String> r : cs.get(i).poll(Duration.ofMillis(100))) {
                        seen.merge(r.value(), 1, Integer::sum);
                    }
                }
            }
            for (KafkaShareConsumer<String, String> c : cs) {
                commitOk(c);
            }
            Map<String, Integer> dups = seen.entrySet().stream().filter(e -> e.getValue() != 1)
                    .collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue));
            assertTrue(dups.isEmpty(), "records processed more than once: " + dups);
            int total = 0;
            for (int x : perConsumer) {
                total += x;
            }
            assertEquals(n, total, "records handed out across consumers "
                    + java.util.Arrays.toString(perConsumer));
        } finally {
            for (KafkaShareConsumer<String, String> c : cs) {
                c.close(Duration.ofSeconds(30));
            }
        }
        // Everything accepted: a new member of the group gets nothing.
        try (KafkaShareConsumer<String, String> c = shareConsumer(group)) {
            c.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> again = drain(c, Duration.ofSeconds(3), false);
            assertTrue(again.isEmpty(), "accepted records delivered again: " + values(again));
        }
    }

    /** RELEASE hands the record out again with delivery count 2; ACCEPT ends it. */
    @Test
    void releaseRedeliversWithAHigherDeliveryCount() throws Exception {
        String topic = Env.unique("java-share-rel");
        String group = Env.unique("java-share-rel-g");
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, 1, Map.of());
            earliest(admin, group);
        }
        produce(topic, 1, "r", 3);
        try (KafkaShareConsumer<String, String> c = explicitConsumer(group)) {
            c.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> first = pollUntil(c, 3, Duration.ofSeconds(60));
            assertEquals(List.of("r0", "r1", "r2"), values(first));
            for (ConsumerRecord<String, String> r : first) {
                assertEquals(1, deliveryCount(r));
                c.acknowledge(r, r.offset() == 1 ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT);
            }
            commitOk(c);
            List<ConsumerRecord<String, String>> second = pollUntil(c, 1, Duration.ofSeconds(30));
            assertEquals(List.of("r1"), values(second), "only the released record comes back");
            assertEquals(1, second.get(0).offset());
            assertEquals(2, deliveryCount(second.get(0)), "delivery count of the redelivered record");
            c.acknowledge(second.get(0), AcknowledgeType.ACCEPT);
            commitOk(c);
            List<ConsumerRecord<String, String>> rest = drain(c, Duration.ofSeconds(3), true);
            assertTrue(rest.isEmpty(), "nothing after the accept: " + values(rest));
        }
        try (Admin admin = Env.admin()) {
            Env.waitFor("lag 0 once every record was acknowledged", Duration.ofSeconds(30),
                    () -> acknowledgedUpTo(admin, group, new TopicPartition(topic, 0), 3));
        }
    }

    /** REJECT archives the record: it never comes back, to this consumer or another. */
    @Test
    void rejectArchivesTheRecord() throws Exception {
        String topic = Env.unique("java-share-rej");
        String group = Env.unique("java-share-rej-g");
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, 1, Map.of());
            earliest(admin, group);
        }
        produce(topic, 1, "x", 2);
        try (KafkaShareConsumer<String, String> c = explicitConsumer(group)) {
            c.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> got = pollUntil(c, 2, Duration.ofSeconds(60));
            c.acknowledge(got.get(0), AcknowledgeType.REJECT);
            c.acknowledge(got.get(1), AcknowledgeType.ACCEPT);
            commitOk(c);
            assertTrue(drain(c, Duration.ofSeconds(3), true).isEmpty(), "rejected record redelivered");
            // The consumer still works: a new record arrives, the rejected one does not.
            produce(topic, 1, "y", 1);
            List<ConsumerRecord<String, String>> next = pollUntil(c, 1, Duration.ofSeconds(30));
            assertEquals(List.of("y0"), values(next));
            c.acknowledge(next.get(0));
            commitOk(c);
        }
        try (KafkaShareConsumer<String, String> other = shareConsumer(group)) {
            other.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> again = drain(other, Duration.ofSeconds(3), false);
            assertTrue(again.isEmpty(), "a second consumer got " + values(again));
        }
    }

    /** A consumer closed while it holds acquired, unacknowledged records gives them back at once. */
    @Test
    void closeWithoutAcknowledgingReleasesTheLocks() throws Exception {
        String topic = Env.unique("java-share-close");
        String group = Env.unique("java-share-close-g");
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, 1, Map.of());
            // Long locks: the records must come back because of the close, not a lock timeout.
            groupConfig(admin, group, Map.of("share.auto.offset.reset", "earliest",
                    "share.record.lock.duration.ms", "60000"));
        }
        produce(topic, 1, "c", 5);
        KafkaShareConsumer<String, String> first = explicitConsumer(group);
        first.subscribe(List.of(topic));
        List<ConsumerRecord<String, String>> held = pollUntil(first, 5, Duration.ofSeconds(60));
        long closedAt = System.nanoTime();
        first.close(Duration.ofSeconds(30));
        try (KafkaShareConsumer<String, String> second = explicitConsumer(group)) {
            second.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> got = pollUntil(second, 5, Duration.ofSeconds(40));
            long waitedMs = (System.nanoTime() - closedAt) / 1_000_000;
            assertEquals(values(held), values(got), "the closed consumer's records, in offset order");
            for (ConsumerRecord<String, String> r : got) {
                assertEquals(2, deliveryCount(r), "second delivery of " + r.value());
                second.acknowledge(r);
            }
            commitOk(second);
            assertTrue(waitedMs < 55_000, "redelivered after " + waitedMs + " ms: the close, not the 60 s lock");
        }
    }

    /**
     * A consumer that acquired records and then stops polling (abandoned, never acknowledging)
     * loses them when the acquisition lock (share.record.lock.duration.ms) runs out; another
     * member of the group then gets them.
     */
    @Test
    void abandonedConsumersRecordsGoToAnotherAfterTheLock() throws Exception {
        String topic = Env.unique("java-share-lock");
        String group = Env.unique("java-share-lock-g");
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, 1, Map.of());
            groupConfig(admin, group, Map.of("share.auto.offset.reset", "earliest",
                    "share.record.lock.duration.ms", String.valueOf(MIN_LOCK_MS)));
        }
        produce(topic, 1, "a", 4);
        KafkaShareConsumer<String, String> abandoned = explicitConsumer(group);
        try (KafkaShareConsumer<String, String> taker = explicitConsumer(group)) {
            abandoned.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> held = pollUntil(abandoned, 4, Duration.ofSeconds(60));
            assertTrue(abandoned.acquisitionLockTimeoutMs().isPresent(), "lock timeout reported with the records");
            assertEquals(MIN_LOCK_MS, abandoned.acquisitionLockTimeoutMs().get(), "lock duration of the group config");
            long acquiredAt = System.nanoTime();
            // `abandoned` is not polled again.
            taker.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> got = pollUntil(taker, 4, Duration.ofSeconds(MIN_LOCK_MS / 1000 + 45));
            long waitedMs = (System.nanoTime() - acquiredAt) / 1_000_000;
            assertEquals(values(held), values(got));
            for (ConsumerRecord<String, String> r : got) {
                assertEquals(2, deliveryCount(r), "second delivery of " + r.value());
                taker.acknowledge(r);
            }
            commitOk(taker);
            assertTrue(waitedMs >= MIN_LOCK_MS - 2_000, "records moved after " + waitedMs
                    + " ms, before the " + MIN_LOCK_MS + " ms lock ran out");
        } finally {
            abandoned.close(Duration.ofSeconds(10));
        }
    }

    /** share.delivery.count.limit=2: a record released twice is archived, not delivered a third time. */
    @Test
    void deliveryCountLimitArchivesAPoisonRecord() throws Exception {
        String topic = Env.unique("java-share-poison");
        String group = Env.unique("java-share-poison-g");
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, 1, Map.of());
            groupConfig(admin, group, Map.of("share.auto.offset.reset", "earliest",
                    "share.delivery.count.limit", "2"));
        }
        try (KafkaProducer<String, String> p = Env.producer()) {
            p.send(new ProducerRecord<>(topic, 0, "poison", "poison"));
            p.send(new ProducerRecord<>(topic, 0, "ok", "ok"));
            p.flush();
        }
        List<Integer> poisonCounts = new ArrayList<>();
        List<String> accepted = new ArrayList<>();
        try (KafkaShareConsumer<String, String> c = explicitConsumer(group)) {
            c.subscribe(List.of(topic));
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (poisonCounts.size() < 2 && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Env.POLL)) {
                    if (r.value().equals("poison")) {
                        poisonCounts.add(deliveryCount(r));
                        c.acknowledge(r, AcknowledgeType.RELEASE);
                    } else {
                        accepted.add(r.value());
                        c.acknowledge(r, AcknowledgeType.ACCEPT);
                    }
                }
                commitOk(c);
            }
            assertEquals(List.of(1, 2), poisonCounts, "delivery counts of the poison record");
            List<ConsumerRecord<String, String>> more = drain(c, Duration.ofSeconds(3), true);
            assertTrue(more.isEmpty(), "delivered after the limit: " + values(more));
            assertEquals(List.of("ok"), accepted);
        }
        try (Admin admin = Env.admin()) {
            Env.waitFor("lag 0 (poison archived, ok accepted)", Duration.ofSeconds(30),
                    () -> acknowledgedUpTo(admin, group, new TopicPartition(topic, 0), 2));
        }
    }

    /**
     * Explicit mode: a poll with records not yet acknowledged is refused; implicit mode (the
     * default): the next poll accepts the previous batch and acknowledge() is refused.
     */
    @Test
    void explicitAndImplicitAcknowledgement() throws Exception {
        String topic = Env.unique("java-share-mode");
        String gExplicit = Env.unique("java-share-exp-g");
        String gImplicit = Env.unique("java-share-imp-g");
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, 1, Map.of());
            earliest(admin, gExplicit);
            earliest(admin, gImplicit);
        }
        produce(topic, 1, "m", 3);
        try (KafkaShareConsumer<String, String> c = explicitConsumer(gExplicit)) {
            c.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> got = pollUntil(c, 3, Duration.ofSeconds(60));
            c.acknowledge(got.get(0));
            assertThrows(IllegalStateException.class, () -> c.poll(Env.POLL),
                    "poll with two records of the last batch unacknowledged (explicit mode)");
            c.acknowledge(got.get(1));
            c.acknowledge(got.get(2), AcknowledgeType.ACCEPT);
            commitOk(c);
            assertTrue(drain(c, Duration.ofSeconds(2), true).isEmpty());
        }
        try (KafkaShareConsumer<String, String> c = shareConsumer(gImplicit)) {
            c.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> got = pollUntil(c, 3, Duration.ofSeconds(60));
            assertThrows(IllegalStateException.class, () -> c.acknowledge(got.get(0)),
                    "acknowledge() in implicit mode");
            assertTrue(drain(c, Duration.ofSeconds(2), false).isEmpty(), "implicitly accepted records came back");
            commitOk(c);
        }
        try (Admin admin = Env.admin()) {
            TopicPartition tp = new TopicPartition(topic, 0);
            Env.waitFor("both groups past the 3 records", Duration.ofSeconds(30),
                    () -> acknowledgedUpTo(admin, gExplicit, tp, 3) && acknowledgedUpTo(admin, gImplicit, tp, 3));
        }
    }

    /** share.isolation.level=read_committed skips aborted transactional records; read_uncommitted shows them. */
    @Test
    void readCommittedSkipsAbortedRecords() throws Exception {
        String topic = Env.unique("java-share-tx");
        String gCommitted = Env.unique("java-share-rc-g");
        String gUncommitted = Env.unique("java-share-ru-g");
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, 1, Map.of());
            groupConfig(admin, gCommitted, Map.of("share.auto.offset.reset", "earliest",
                    "share.isolation.level", "read_committed"));
            earliest(admin, gUncommitted);
        }
        try (KafkaProducer<String, String> p = Env.producer(Map.of(
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, Env.unique("java-share-txid"),
                ProducerConfig.MAX_BLOCK_MS_CONFIG, 30_000))) {
            p.initTransactions();
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, "aborted0", "aborted0"));
            p.send(new ProducerRecord<>(topic, 0, "aborted1", "aborted1"));
            p.flush();
            p.abortTransaction();
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, "committed0", "committed0"));
            p.send(new ProducerRecord<>(topic, 0, "committed1", "committed1"));
            p.commitTransaction();
        }
        try (KafkaShareConsumer<String, String> c = shareConsumer(gCommitted)) {
            c.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> got = pollUntil(c, 2, Duration.ofSeconds(60));
            got.addAll(drain(c, Duration.ofSeconds(2), false));
            assertEquals(List.of("committed0", "committed1"), values(got), "read_committed share group");
            commitOk(c);
        }
        try (KafkaShareConsumer<String, String> c = shareConsumer(gUncommitted)) {
            c.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> got = pollUntil(c, 4, Duration.ofSeconds(60));
            got.addAll(drain(c, Duration.ofSeconds(2), false));
            assertEquals(List.of("aborted0", "aborted1", "committed0", "committed1"), values(got),
                    "read_uncommitted share group (the default)");
            commitOk(c);
        }
    }

    /**
     * share.auto.offset.reset: with `earliest` a new group reads what was there before it
     * joined; by default (latest) it starts at the end of the partition it found.
     */
    @Test
    void autoOffsetResetEarliestAndLatest() throws Exception {
        String topic = Env.unique("java-share-reset");
        String gEarliest = Env.unique("java-share-early-g");
        String gLatest = Env.unique("java-share-late-g");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, 1, Map.of());
            earliest(admin, gEarliest);
            produce(topic, 1, "old", 5);
            try (KafkaShareConsumer<String, String> c = shareConsumer(gLatest)) {
                c.subscribe(List.of(topic));
                // The share-partition starts at the log end when the member first fetches it,
                // which the client does not signal: produce a marker per round until one arrives.
                // No "old" record may ever arrive.
                List<String> markers = new ArrayList<>();
                long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
                int round = 0;
                while (markers.isEmpty() && System.nanoTime() < deadline) {
                    produce(topic, 1, "marker" + round++ + "-", 1);
                    long until = System.nanoTime() + Duration.ofSeconds(2).toNanos();
                    while (markers.isEmpty() && System.nanoTime() < until) {
                        for (ConsumerRecord<String, String> r : c.poll(Env.POLL)) {
                            assertTrue(r.value().startsWith("marker"), "a latest group got " + r.value());
                            markers.add(r.value());
                        }
                    }
                }
                assertFalse(markers.isEmpty(), "no marker within 60 s");
                markers.addAll(values(drain(c, Duration.ofSeconds(1), false)));
                assertTrue(markers.stream().allMatch(v -> v.startsWith("marker")), "latest group got " + markers);
                produce(topic, 1, "new", 3);
                List<ConsumerRecord<String, String>> got = pollUntil(c, 3, Duration.ofSeconds(30));
                got.addAll(drain(c, Duration.ofSeconds(2), false));
                assertEquals(List.of("new0", "new1", "new2"), values(got), "latest (the default)");
                commitOk(c);
            }
        }
        try (KafkaShareConsumer<String, String> c = shareConsumer(gEarliest)) {
            c.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> got = pollUntil(c, 9, Duration.ofSeconds(60));
            got.addAll(drain(c, Duration.ofSeconds(2), false));
            List<String> vs = values(got).stream().filter(v -> !v.startsWith("marker")).collect(Collectors.toList());
            assertEquals(List.of("old0", "old1", "old2", "old3", "old4", "new0", "new1", "new2"), vs,
                    "earliest (markers left out)");
            commitOk(c);
        }
    }

    /**
     * Admin: listGroups shows the share group with type SHARE, describeShareGroups its member
     * and assignment, listShareGroupOffsets its start offsets; an empty group's offsets can be
     * altered and deleted, and the group deleted.
     */
    @Test
    void adminListDescribeOffsetsAndDelete() throws Exception {
        String topic = Env.unique("java-share-admin");
        String group = Env.unique("java-share-admin-g");
        String clientId = group + "-client";
        int partitions = 2;
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, partitions, Map.of());
            earliest(admin, group);
            produce(topic, partitions, "d", 10);
            TopicPartition p0 = new TopicPartition(topic, 0);
            TopicPartition p1 = new TopicPartition(topic, 1);

            try (KafkaShareConsumer<String, String> c = shareConsumer(group,
                    Map.of(ConsumerConfig.CLIENT_ID_CONFIG, clientId))) {
                c.subscribe(List.of(topic));
                pollUntil(c, 10, Duration.ofSeconds(60));
                assertTrue(drain(c, Duration.ofSeconds(1), false).isEmpty());
                commitOk(c);

                GroupListing listing = admin.listGroups(ListGroupsOptions.forShareGroups()).all()
                        .get(30, TimeUnit.SECONDS).stream().filter(g -> g.groupId().equals(group))
                        .findFirst().orElseThrow(() -> new AssertionError(group + " not in listGroups(SHARE)"));
                assertEquals(Optional.of(GroupType.SHARE), listing.type());
                assertEquals("share", listing.protocol());
                assertEquals(Optional.of(GroupState.STABLE), listing.groupState());
                assertFalse(listing.isSimpleConsumerGroup());
                boolean inConsumerList = admin.listGroups(ListGroupsOptions.forConsumerGroups()).all()
                        .get(30, TimeUnit.SECONDS).stream().anyMatch(g -> g.groupId().equals(group));
                assertFalse(inConsumerList, "a share group is not listed as a consumer group");

                ShareGroupDescription d = describe(admin, group);
                assertEquals(group, d.groupId());
                assertEquals(GroupState.STABLE, d.groupState());
                assertEquals(1, d.coordinator().id());
                assertTrue(d.groupEpoch() >= 1, "group epoch " + d.groupEpoch());
                ShareMemberDescription m = Env.only(d.members());
                assertEquals(clientId, m.clientId());
                assertEquals("/127.0.0.1", m.host());
                assertFalse(m.consumerId().isEmpty());
                assertTrue(m.memberEpoch() >= 1, "member epoch " + m.memberEpoch());
                assertEquals(Set.of(p0, p1), m.assignment().topicPartitions());

                Map<TopicPartition, SharePartitionOffsetInfo> o = offsets(admin, group);
                assertEquals(Set.of(p0, p1), o.keySet(), "share-partitions with state: " + o);
                Env.waitFor("lag 0 on both partitions", Duration.ofSeconds(30),
                        () -> acknowledgedUpTo(admin, group, p0, 5) && acknowledgedUpTo(admin, group, p1, 5));

                // Offsets of a group with members cannot be changed.
                ExecutionException busy = assertThrows(ExecutionException.class, () -> admin
                        .alterShareGroupOffsets(group, Map.of(p0, 0L)).all().get(30, TimeUnit.SECONDS));
                assertInstanceOf(GroupNotEmptyException.class, busy.getCause());
            }

            Env.waitFor("group Empty after the member left", Duration.ofSeconds(30), () -> {
                try {
                    return describe(admin, group).groupState() == GroupState.EMPTY;
                } catch (Exception e) {
                    return false;
                }
            });
            assertTrue(describe(admin, group).members().isEmpty());

            // Empty group: move partition 0 back to offset 2; the next member reads d-records 2..4 of p0.
            admin.alterShareGroupOffsets(group, Map.of(p0, 2L)).all().get(30, TimeUnit.SECONDS);
            assertEquals(2, startOffset(admin, group, p0), "start offset after alterShareGroupOffsets");
            if (lag(admin, group, p0) != -1) { // DescribeShareGroupOffsets v1 only
                assertEquals(3, lag(admin, group, p0), "lag after alterShareGroupOffsets");
                assertEquals(0, lag(admin, group, p1), "partition 1 untouched");
            }
            try (KafkaShareConsumer<String, String> c = shareConsumer(group)) {
                c.subscribe(List.of(topic));
                List<ConsumerRecord<String, String>> got = pollUntil(c, 3, Duration.ofSeconds(60));
                got.addAll(drain(c, Duration.ofSeconds(2), false));
                assertEquals(List.of(2L, 3L, 4L), got.stream().map(ConsumerRecord::offset).collect(Collectors.toList()));
                assertTrue(got.stream().allMatch(r -> r.partition() == 0), "only partition 0 was reset");
                commitOk(c);
            }
            Env.waitFor("group Empty again", Duration.ofSeconds(30), () -> {
                try {
                    return describe(admin, group).groupState() == GroupState.EMPTY;
                } catch (Exception e) {
                    return false;
                }
            });

            // Delete the topic's offsets from the group, then the group itself.
            admin.deleteShareGroupOffsets(group, Set.of(topic)).all().get(30, TimeUnit.SECONDS);
            assertTrue(offsets(admin, group).isEmpty(), "offsets after deleteShareGroupOffsets: "
                    + offsets(admin, group));
            admin.deleteShareGroups(List.of(group)).all().get(30, TimeUnit.SECONDS);
            ExecutionException gone = assertThrows(ExecutionException.class, () -> describe(admin, group));
            assertInstanceOf(GroupIdNotFoundException.class, gone.getCause(), "describe after delete");
            boolean listed = admin.listGroups(ListGroupsOptions.forShareGroups()).all().get(30, TimeUnit.SECONDS)
                    .stream().anyMatch(g -> g.groupId().equals(group));
            assertFalse(listed, "deleted group still listed");
        }
    }

    /** describeShareGroups of a group that does not exist, and of a consumer group. */
    @Test
    void describeUnknownAndNonShareGroups() throws Exception {
        String topic = Env.unique("java-share-cg");
        String consumerGroup = Env.unique("java-share-cg-g");
        try (Admin admin = Env.admin()) {
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> describe(admin, Env.unique("java-share-none")));
            assertInstanceOf(GroupIdNotFoundException.class, e.getCause());

            Env.createTopic(admin, topic, 1, Map.of());
            try (org.apache.kafka.clients.consumer.KafkaConsumer<String, String> c = Env.consumer(consumerGroup,
                    Map.of(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer"))) {
                c.subscribe(List.of(topic));
                Env.waitFor("consumer-group assignment", Duration.ofSeconds(30), () -> {
                    c.poll(Env.POLL);
                    return !c.assignment().isEmpty();
                });
                ExecutionException notShare = assertThrows(ExecutionException.class,
                        () -> describe(admin, consumerGroup));
                System.err.println("describeShareGroups(consumer group): " + notShare.getCause());
                assertInstanceOf(GroupIdNotFoundException.class, notShare.getCause(),
                        "describeShareGroups of a consumer group");
            }
        }
    }
}
