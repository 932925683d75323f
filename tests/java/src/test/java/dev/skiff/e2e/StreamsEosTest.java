package dev.skiff.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Kafka Streams word count with processing.guarantee=exactly_once_v2: the app creates its
 * repartition and compacted changelog topics through CreateTopics, runs its tasks inside
 * transactions (AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn) and the output,
 * read with read_committed, converges to the exact count of each word.
 */
@Timeout(120)
class StreamsEosTest {

    private static final String STORE = "word-counts";
    private static final long LINES = 60;

    @Test
    void wordCountExactlyOnce(@TempDir Path stateDir) throws Exception {
        String input = Env.unique("java-streams-in");
        String output = Env.unique("java-streams-out");
        String appId = Env.unique("java-streams-app");
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, input, 2, Map.of());
            Env.createTopic(admin, output, 1, Map.of());
        }

        // A bounded input with known counts: LINES lines of 1 to 5 words, mixed case.
        String[] vocabulary = {"alpha", "beta", "gamma", "delta", "epsilon"};
        Map<String, Long> expected = new TreeMap<>();
        try (KafkaProducer<String, String> p = Env.producer()) {
            for (int i = 0; i < LINES; i++) {
                StringBuilder line = new StringBuilder();
                for (int w = 0; w <= i % vocabulary.length; w++) {
                    String word = vocabulary[(i + w) % vocabulary.length];
                    line.append(w == 0 ? "" : " ").append(w % 2 == 0 ? word : word.toUpperCase(Locale.ROOT));
                    expected.merge(word, 1L, Long::sum);
                }
                p.send(new ProducerRecord<>(input, "line-" + i, line.toString()));
            }
            p.flush();
        }

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\s+")))
                .groupBy((key, word) -> word)
                .count(Materialized.as(STORE))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));

        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, Env.bootstrap());
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");

        AtomicReference<Throwable> streamsError = new AtomicReference<>();
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setUncaughtExceptionHandler(e -> {
            streamsError.compareAndSet(null, e);
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        try {
            streams.start();

            Map<String, Long> latest = new HashMap<>();
            try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(outputConsumerProps())) {
                c.subscribe(List.of(output));
                long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
                while (!latest.equals(expected) && System.nanoTime() < deadline) {
                    assertNull(streamsError.get(), "streams thread died: " + streamsError.get());
                    for (ConsumerRecord<String, Long> r : c.poll(Env.POLL)) {
                        latest.put(r.key(), r.value());
                    }
                }
            }
            assertNull(streamsError.get(), "streams thread died: " + streamsError.get());
            assertEquals(expected, new TreeMap<>(latest),
                    "latest committed count per word (streams state " + streams.state() + ")");
            assertEquals(KafkaStreams.State.RUNNING, streams.state(), "streams state");

            // The store's changelog is an internal topic Streams created as compacted.
            String changelog = appId + "-" + STORE + "-changelog";
            try (Admin admin = Env.admin()) {
                Set<String> topics = admin.listTopics().names().get(30, TimeUnit.SECONDS);
                assertTrue(topics.contains(changelog), "changelog topic " + changelog + " in " + topics);
                ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, changelog);
                Config cfg = admin.describeConfigs(List.of(res)).all().get(30, TimeUnit.SECONDS).get(res);
                assertNotNull(cfg.get("cleanup.policy"), "cleanup.policy of " + changelog);
                assertEquals("compact", cfg.get("cleanup.policy").value(), "changelog cleanup.policy");

                // The input offsets went into the same transactions (TxnOffsetCommit): all 60
                // lines are committed for the application's group once the output converged.
                Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(appId)
                        .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
                long consumed = 0;
                for (int part = 0; part < 2; part++) {
                    OffsetAndMetadata om = offsets.get(new TopicPartition(input, part));
                    assertNotNull(om, "committed offset of " + input + "-" + part + " in " + offsets);
                    consumed += om.offset();
                }
                assertEquals(LINES, consumed, "input offsets committed by the application");
            }
        } finally {
            boolean closed = streams.close(Duration.ofSeconds(30));
            assertTrue(closed, "streams closed within 30 s");
        }
        assertEquals(KafkaStreams.State.NOT_RUNNING, streams.state(), "state after close");
        assertNull(streamsError.get(), "streams thread error: " + streamsError.get());
    }

    private static Properties outputConsumerProps() {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, Env.bootstrap());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, Env.unique("java-streams-reader"));
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, LongDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        return p;
    }
}
