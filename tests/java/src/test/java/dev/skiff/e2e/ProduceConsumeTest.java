package dev.skiff.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Producer (4.x defaults: idempotent, acks=all) and a subscribed group consumer, end to end. */
@Timeout(120)
class ProduceConsumeTest {

    @Test
    void idempotentProducerAndGroupConsumerRoundTrip() throws Exception {
        String topic = Env.unique("java-rt");
        int partitions = 3;
        int n = 600;
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, partitions, Map.of());
        }

        // Records per partition, in send order, with what the broker said about each.
        Map<Integer, List<RecordMetadata>> acked = new HashMap<>();
        try (KafkaProducer<String, String> p = Env.producer(Map.of(ProducerConfig.LINGER_MS_CONFIG, 5))) {
            List<Future<RecordMetadata>> fs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                ProducerRecord<String, String> r =
                        new ProducerRecord<>(topic, i % partitions, "k" + i, "v" + i);
                r.headers().add("seq", Integer.toString(i).getBytes(StandardCharsets.UTF_8));
                fs.add(p.send(r));
            }
            p.flush();
            for (Future<RecordMetadata> f : fs) {
                RecordMetadata md = f.get(30, TimeUnit.SECONDS);
                acked.computeIfAbsent(md.partition(), k -> new ArrayList<>()).add(md);
            }
        }
        for (int part = 0; part < partitions; part++) {
            List<RecordMetadata> mds = acked.get(part);
            assertEquals(n / partitions, mds.size(), "acks for partition " + part);
            for (int j = 0; j < mds.size(); j++) {
                assertEquals(j, mds.get(j).offset(), "offset of the " + j + "th send to partition " + part);
                assertTrue(mds.get(j).timestamp() > 0, "broker returned a timestamp");
            }
        }

        String group = Env.unique("java-rt-group");
        try (KafkaConsumer<String, String> c = Env.consumer(group)) {
            c.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> got = Env.pollUntil(c, n, Duration.ofSeconds(60));
            got.addAll(Env.drain(c, Duration.ofMillis(500)));
            assertEquals(n, got.size(), "records consumed (no duplicates)");
            Map<Integer, Long> next = new HashMap<>();
            for (ConsumerRecord<String, String> r : got) {
                int i = Integer.parseInt(r.key().substring(1));
                assertEquals("v" + i, r.value());
                assertEquals(i % partitions, r.partition(), "partition of k" + i);
                long want = next.getOrDefault(r.partition(), 0L);
                assertEquals(want, r.offset(), "offsets are consecutive within partition " + r.partition());
                assertEquals(i, r.offset() * partitions + r.partition(), "k" + i + " is in send order");
                next.put(r.partition(), want + 1);
                Header h = r.headers().lastHeader("seq");
                assertEquals(Integer.toString(i), new String(h.value(), StandardCharsets.UTF_8), "header");
            }
            assertEquals(partitions, c.assignment().size(), "one member owns every partition");
            c.commitSync();
            Map<TopicPartition, Long> end = c.endOffsets(c.assignment());
            for (TopicPartition tp : c.assignment()) {
                assertEquals((long) n / partitions, end.get(tp), "end offset of " + tp);
                assertEquals((long) n / partitions, c.committed(java.util.Set.of(tp)).get(tp).offset(),
                        "committed offset of " + tp);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"none", "gzip", "snappy", "lz4", "zstd"})
    void compressionCodecRoundTrip(String codec) throws Exception {
        String topic = Env.unique("java-codec-" + codec);
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, 1, Map.of());
        }
        int n = 200;
        String pad = "x".repeat(100);
        try (KafkaProducer<String, String> p = Env.producer(Map.of(
                ProducerConfig.COMPRESSION_TYPE_CONFIG, codec,
                ProducerConfig.LINGER_MS_CONFIG, 20))) {
            for (int i = 0; i < n; i++) {
                p.send(new ProducerRecord<>(topic, 0, "k" + i, i + pad));
            }
            p.flush();
        }
        try (KafkaConsumer<String, String> c = Env.consumer(null)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            List<ConsumerRecord<String, String>> got = Env.pollUntil(c, n, Duration.ofSeconds(30));
            assertEquals(n, got.size());
            for (int i = 0; i < n; i++) {
                assertEquals(i, got.get(i).offset());
                assertEquals("k" + i, got.get(i).key());
                assertEquals(i + pad, got.get(i).value());
            }
        }
    }
}
