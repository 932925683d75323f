package dev.skiff.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Classic consumer groups: commit, leave, resume from the committed offsets, group admin APIs. */
@Timeout(120)
class GroupTest {

    @Test
    void commitThenResumeInANewConsumer() throws Exception {
        String topic = Env.unique("java-group");
        String group = Env.unique("java-g");
        int partitions = 2;
        int n = 100;
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, partitions, Map.of());
            try (KafkaProducer<String, String> p = Env.producer()) {
                for (int i = 0; i < n; i++) {
                    p.send(new ProducerRecord<>(topic, i % partitions, "k" + i, "v" + i));
                }
                p.flush();
            }

            // First member: read everything, commit offset 20 on partition 0 and 30 on partition 1
            // with metadata, while it is a member check the group is Stable with it.
            try (KafkaConsumer<String, String> c = Env.consumer(group)) {
                c.subscribe(List.of(topic));
                Env.pollUntil(c, n, Duration.ofSeconds(60));
                Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
                commit.put(new TopicPartition(topic, 0), new OffsetAndMetadata(20, "first"));
                commit.put(new TopicPartition(topic, 1), new OffsetAndMetadata(30, "second"));
                c.commitSync(commit);

                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all()
                        .get(30, TimeUnit.SECONDS).get(group);
                assertEquals(GroupState.STABLE, d.groupState(), "state with one member");
                assertEquals("range", d.partitionAssignor(), "assignor chosen by the protocol");
                MemberDescription m = Env.only(d.members());
                assertEquals(Set.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1)),
                        m.assignment().topicPartitions(), "assignment as the coordinator stored it");
                assertEquals(1, d.coordinator().id());
            }

            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            assertEquals(20, committed.get(new TopicPartition(topic, 0)).offset());
            assertEquals("first", committed.get(new TopicPartition(topic, 0)).metadata());
            assertEquals(30, committed.get(new TopicPartition(topic, 1)).offset());

            ConsumerGroupDescription empty = admin.describeConsumerGroups(List.of(group)).all()
                    .get(30, TimeUnit.SECONDS).get(group);
            assertEquals(GroupState.EMPTY, empty.groupState(), "state after the member left");
            assertTrue(empty.members().isEmpty());
            Set<String> listed = new HashSet<>();
            for (GroupListing g : admin.listGroups(ListGroupsOptions.forConsumerGroups()).all()
                    .get(30, TimeUnit.SECONDS)) {
                listed.add(g.groupId());
            }
            assertTrue(listed.contains(group), "listGroups shows " + group);

            // Second member resumes exactly at the committed offsets.
            try (KafkaConsumer<String, String> c = Env.consumer(group)) {
                c.subscribe(List.of(topic));
                int want = (n / partitions - 20) + (n / partitions - 30);
                List<ConsumerRecord<String, String>> got = Env.pollUntil(c, want, Duration.ofSeconds(60));
                got.addAll(Env.drain(c, Duration.ofMillis(500)));
                assertEquals(want, got.size(), "records after the committed offsets");
                long min0 = got.stream().filter(r -> r.partition() == 0).mapToLong(ConsumerRecord::offset).min()
                        .orElse(-1);
                long min1 = got.stream().filter(r -> r.partition() == 1).mapToLong(ConsumerRecord::offset).min()
                        .orElse(-1);
                assertEquals(20, min0, "resumed at the committed offset on partition 0");
                assertEquals(30, min1, "resumed at the committed offset on partition 1");
                c.commitSync();
            }
            committed = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
                    .get(30, TimeUnit.SECONDS);
            assertEquals(50, committed.get(new TopicPartition(topic, 0)).offset());
            assertEquals(50, committed.get(new TopicPartition(topic, 1)).offset());

            // An empty group can be deleted; then it has no offsets.
            admin.deleteConsumerGroups(List.of(group)).all().get(30, TimeUnit.SECONDS);
            Map<TopicPartition, OffsetAndMetadata> after = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            assertTrue(after.isEmpty(), "offsets after DeleteGroups: " + after);
        }
    }

    /** DescribeGroups names each member's client host as the broker saw it ("/127.0.0.1"). */
    @Test
    void describeGroupsShowsMemberClientHost() throws Exception {
        String topic = Env.unique("java-host");
        String group = Env.unique("java-host-g");
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, 1, Map.of());
            try (KafkaConsumer<String, String> c = Env.consumer(group)) {
                c.subscribe(List.of(topic));
                Env.waitFor("assignment", Duration.ofSeconds(30), () -> {
                    c.poll(Env.POLL);
                    return !c.assignment().isEmpty();
                });
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all()
                        .get(30, TimeUnit.SECONDS).get(group);
                MemberDescription m = Env.only(d.members());
                assertEquals("/127.0.0.1", m.host(), "member client host");
                assertTrue(m.clientId().startsWith("consumer-" + group), "member client id " + m.clientId());
            }
        }
    }

    @Test
    void twoMembersSplitThePartitions() throws Exception {
        String topic = Env.unique("java-split");
        String group = Env.unique("java-split-g");
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, 2, Map.of());
        }
        try (KafkaConsumer<String, String> a = Env.consumer(group);
                KafkaConsumer<String, String> b = Env.consumer(group)) {
            a.subscribe(List.of(topic));
            b.subscribe(List.of(topic));
            Env.waitFor("each member owns one partition", Duration.ofSeconds(60), () -> {
                a.poll(Env.POLL);
                b.poll(Env.POLL);
                return a.assignment().size() == 1 && b.assignment().size() == 1;
            });
            Set<TopicPartition> all = new HashSet<>(a.assignment());
            all.addAll(b.assignment());
            assertEquals(2, all.size(), "the two assignments are disjoint and cover the topic");
        }
    }
}
