package dev.skiff.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** AdminClient: topics (create, describe, partitions, delete), configs and their sources, cluster. */
@Timeout(120)
class AdminTest {

    private static Config topicConfig(Admin admin, String topic) throws Exception {
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        return admin.describeConfigs(List.of(r)).all().get(30, TimeUnit.SECONDS).get(r);
    }

    /**
     * Describes the topic's configs until {@code name} has {@code value}: an alter is acknowledged
     * by Kafka's controller before its broker applies it, so reads right after may be stale.
     */
    private static Config awaitConfig(Admin admin, String topic, String name, String value) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        Config c = topicConfig(admin, topic);
        while (!value.equals(c.get(name).value()) && System.nanoTime() < deadline) {
            Thread.sleep(100);
            c = topicConfig(admin, topic);
        }
        return c;
    }

    private static Throwable cause(ExecutionException e) {
        return e.getCause();
    }

    @Test
    void describeClusterShowsOneNode() throws Exception {
        try (Admin admin = Env.admin()) {
            DescribeClusterResult dc = admin.describeCluster();
            Collection<Node> nodes = dc.nodes().get(30, TimeUnit.SECONDS);
            Node n = Env.only(nodes);
            assertEquals(1, n.id(), "node id");
            assertEquals("127.0.0.1", n.host());
            assertEquals(Env.bootstrap(), n.host() + ":" + n.port(), "advertised address is the bootstrap");
            assertNotNull(dc.clusterId().get(30, TimeUnit.SECONDS), "cluster id");
            assertEquals(1, dc.controller().get(30, TimeUnit.SECONDS).id(), "controller (as clients see it)");
        }
    }

    @Test
    void createDescribeAlterDeleteTopic() throws Exception {
        String topic = Env.unique("java-admin");
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, 2, Map.of("retention.ms", "3600000", "cleanup.policy", "delete"));
            assertTrue(admin.listTopics().names().get(30, TimeUnit.SECONDS).contains(topic), "listTopics");

            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS)
                    .get(topic);
            assertEquals(topic, d.name());
            assertFalse(d.isInternal());
            assertNotEquals(Uuid.ZERO_UUID, d.topicId(), "topic id");
            assertEquals(2, d.partitions().size(), "partitions");
            for (int i = 0; i < 2; i++) {
                TopicPartitionInfo p = d.partitions().get(i);
                assertEquals(i, p.partition());
                assertEquals(1, p.leader().id(), "leader of partition " + i);
                assertEquals(List.of(1), p.replicas().stream().map(Node::id).toList(), "replicas");
                assertEquals(List.of(1), p.isr().stream().map(Node::id).toList(), "isr");
            }
            // The same topic again is refused; so is a bad config value on a new topic.
            ExecutionException dup = assertThrows(ExecutionException.class,
                    () -> Env.createTopic(admin, topic, 1, Map.of()));
            assertInstanceOf(TopicExistsException.class, cause(dup));
            ExecutionException bad = assertThrows(ExecutionException.class,
                    () -> Env.createTopic(admin, Env.unique("java-bad"), 1, Map.of("retention.ms", "soon")));
            assertInstanceOf(InvalidConfigurationException.class, cause(bad));

            ExecutionException rf = assertThrows(ExecutionException.class, () -> admin.createTopics(
                    List.of(new NewTopic(Env.unique("java-rf"), 1, (short) 2))).all().get(30, TimeUnit.SECONDS));
            assertInstanceOf(InvalidReplicationFactorException.class, cause(rf), "replication factor 2 on one node");
            ExecutionException name = assertThrows(ExecutionException.class, () -> admin.createTopics(
                    List.of(new NewTopic("bad/name", 1, (short) 1))).all().get(30, TimeUnit.SECONDS));
            assertInstanceOf(InvalidTopicException.class, cause(name), "topic name with '/'");

            // CreatePartitions: 2 -> 4; shrinking is refused.
            admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(4))).all().get(30, TimeUnit.SECONDS);
            Env.waitFor("4 partitions in metadata", Duration.ofSeconds(20), () -> {
                try {
                    return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic)
                            .partitions().size() == 4;
                } catch (Exception e) {
                    return false;
                }
            });
            ExecutionException shrink = assertThrows(ExecutionException.class,
                    () -> admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(1))).all()
                            .get(30, TimeUnit.SECONDS));
            assertInstanceOf(InvalidPartitionsException.class, cause(shrink));

            // Delete: gone from listTopics and from describe.
            admin.deleteTopics(List.of(topic)).all().get(30, TimeUnit.SECONDS);
            Env.waitFor("topic gone from listTopics", Duration.ofSeconds(20), () -> {
                try {
                    return !admin.listTopics().names().get().contains(topic);
                } catch (Exception e) {
                    return false;
                }
            });
            ExecutionException gone = assertThrows(ExecutionException.class,
                    () -> admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS));
            assertInstanceOf(UnknownTopicOrPartitionException.class, cause(gone));
            ExecutionException again = assertThrows(ExecutionException.class,
                    () -> admin.deleteTopics(List.of(topic)).all().get(30, TimeUnit.SECONDS));
            assertInstanceOf(UnknownTopicOrPartitionException.class, cause(again));
        }
    }

    @Test
    void describeConfigsSourcesAndIncrementalAlter() throws Exception {
        String topic = Env.unique("java-configs");
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, 1, Map.of("retention.ms", "3600000"));
            Config c = topicConfig(admin, topic);

            ConfigEntry retention = c.get("retention.ms");
            assertEquals("3600000", retention.value());
            assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, retention.source(), "retention.ms source");
            assertFalse(retention.isDefault());
            assertFalse(retention.isReadOnly());

            ConfigEntry segBytes = c.get("segment.bytes");
            assertNotNull(segBytes, "segment.bytes is described");
            assertEquals("1073741824", segBytes.value(), "segment.bytes default");
            assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG, segBytes.source(), "segment.bytes source");
            assertTrue(segBytes.isDefault());

            ConfigEntry policy = c.get("cleanup.policy");
            assertEquals("delete", policy.value());
            assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG, policy.source());
            assertEquals(ConfigEntry.ConfigType.LIST, policy.type(), "cleanup.policy type");
            assertEquals(ConfigEntry.ConfigType.LONG, retention.type(), "retention.ms type");

            // SET one, SET another, then DELETE the first: it falls back to the default.
            ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            admin.incrementalAlterConfigs(Map.of(r, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "7200000"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("max.message.bytes", "2000000"), AlterConfigOp.OpType.SET))))
                    .all().get(30, TimeUnit.SECONDS);
            c = awaitConfig(admin, topic, "max.message.bytes", "2000000");
            assertEquals("7200000", c.get("retention.ms").value());
            assertEquals("2000000", c.get("max.message.bytes").value());
            assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, c.get("max.message.bytes").source());

            admin.incrementalAlterConfigs(Map.of(r, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", ""), AlterConfigOp.OpType.DELETE))))
                    .all().get(30, TimeUnit.SECONDS);
            c = awaitConfig(admin, topic, "retention.ms", "604800000");
            assertEquals("604800000", c.get("retention.ms").value(), "retention.ms default after DELETE");
            assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG, c.get("retention.ms").source());
            assertEquals("2000000", c.get("max.message.bytes").value(), "untouched override stays");

            // APPEND to a list config.
            admin.incrementalAlterConfigs(Map.of(r, List.of(
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND))))
                    .all().get(30, TimeUnit.SECONDS);
            String pol = awaitConfig(admin, topic, "cleanup.policy", "delete,compact").get("cleanup.policy").value();
            assertEquals(Set.of("delete", "compact"), Set.of(pol.split(",")), "cleanup.policy after APPEND");

            // A bad value and an unknown name are refused, and nothing changes.
            ExecutionException bad = assertThrows(ExecutionException.class, () -> admin.incrementalAlterConfigs(
                    Map.of(r, List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "forever"),
                            AlterConfigOp.OpType.SET)))).all().get(30, TimeUnit.SECONDS));
            assertInstanceOf(InvalidConfigurationException.class, cause(bad));
            ExecutionException unknown = assertThrows(ExecutionException.class, () -> admin.incrementalAlterConfigs(
                    Map.of(r, List.of(new AlterConfigOp(new ConfigEntry("no.such.config", "1"),
                            AlterConfigOp.OpType.SET)))).all().get(30, TimeUnit.SECONDS));
            assertInstanceOf(InvalidConfigurationException.class, cause(unknown));
            assertEquals("604800000", topicConfig(admin, topic).get("retention.ms").value());

            // The broker's own configs: log.dirs is static (set at start), read-only.
            ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, "1");
            Config bc = admin.describeConfigs(List.of(broker)).all().get(30, TimeUnit.SECONDS).get(broker);
            ConfigEntry logDirs = bc.get("log.dirs");
            assertNotNull(logDirs, "broker config log.dirs is described");
            assertEquals(ConfigEntry.ConfigSource.STATIC_BROKER_CONFIG, logDirs.source(), "log.dirs source");
            assertTrue(logDirs.isReadOnly(), "log.dirs is read-only");
            ConfigEntry nodeId = bc.get("node.id");
            assertEquals("1", nodeId.value());
        }
    }

    @Test
    void deleteRecordsMovesLogStartOffset() throws Exception {
        String topic = Env.unique("java-delrec");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, 1, Map.of());
            try (KafkaProducer<String, String> p = Env.producer()) {
                for (int i = 0; i < 10; i++) {
                    p.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i));
                }
                p.flush();
            }
            long low = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(6))).lowWatermarks().get(tp)
                    .get(30, TimeUnit.SECONDS).lowWatermark();
            assertEquals(6, low, "low watermark after DeleteRecords");
            assertEquals(6, admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).partitionResult(tp)
                    .get(30, TimeUnit.SECONDS).offset(), "earliest offset");
            assertEquals(10, admin.listOffsets(Map.of(tp, OffsetSpec.latest())).partitionResult(tp)
                    .get(30, TimeUnit.SECONDS).offset(), "latest offset");

            // A fetch below the log start is out of range: with reset=none the consumer says so,
            // with reset=earliest it continues at offset 6.
            try (KafkaConsumer<String, String> c = Env.consumer(null, Map.of("auto.offset.reset", "none"))) {
                c.assign(List.of(tp));
                c.seek(tp, 2);
                OffsetOutOfRangeException oor = assertThrows(OffsetOutOfRangeException.class, () -> {
                    for (int i = 0; i < 100; i++) {
                        c.poll(Env.POLL);
                    }
                });
                assertEquals(2L, oor.offsetOutOfRangePartitions().get(tp), "offset reported out of range");
            }
            try (KafkaConsumer<String, String> c = Env.consumer(null)) {
                c.assign(List.of(tp));
                c.seek(tp, 2);
                List<ConsumerRecord<String, String>> got = Env.pollUntil(c, 4, Duration.ofSeconds(20));
                assertEquals(6, got.get(0).offset(), "first offset after reset to earliest");
                assertEquals("k6", got.get(0).key());
            }
        }
    }
}
