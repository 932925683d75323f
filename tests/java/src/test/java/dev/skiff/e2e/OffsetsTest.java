package dev.skiff.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** ListOffsets through the consumer (offsetsForTimes, beginning/end) and the admin (max timestamp). */
@Timeout(60)
class OffsetsTest {

    @Test
    void offsetsForTimesAndListOffsets() throws Exception {
        String topic = Env.unique("java-times");
        TopicPartition tp = new TopicPartition(topic, 0);
        long t0 = System.currentTimeMillis() - 3_600_000L;
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, topic, 1, Map.of());
            // Offsets 0..9 with CreateTime t0 + i s, except offset 7 carries the largest time.
            try (KafkaProducer<String, String> p = Env.producer()) {
                for (int i = 0; i < 10; i++) {
                    long ts = i == 7 ? t0 + 100_000 : t0 + i * 1000L;
                    p.send(new ProducerRecord<>(topic, 0, ts, "k" + i, "v" + i)).get(30, TimeUnit.SECONDS);
                }
            }
            try (KafkaConsumer<String, String> c = Env.consumer(null)) {
                Map<TopicPartition, Long> query = new HashMap<>();
                query.put(tp, t0 + 2500);
                OffsetAndTimestamp at = c.offsetsForTimes(query).get(tp);
                assertEquals(3, at.offset(), "first offset with timestamp >= t0+2.5s");
                assertEquals(t0 + 3000, at.timestamp());

                query.put(tp, t0 + 3000);
                assertEquals(3, c.offsetsForTimes(query).get(tp).offset(), "exact timestamp match");
                query.put(tp, t0 - 1);
                assertEquals(0, c.offsetsForTimes(query).get(tp).offset(), "before everything");
                query.put(tp, t0 + 9000);
                assertEquals(7, c.offsetsForTimes(query).get(tp).offset(), "offset 7 has the max time");
                query.put(tp, t0 + 200_000);
                assertNull(c.offsetsForTimes(query).get(tp), "after everything: no offset");

                assertEquals(0L, c.beginningOffsets(List.of(tp)).get(tp));
                assertEquals(10L, c.endOffsets(List.of(tp)).get(tp));
            }
            ListOffsetsResultInfo max = admin.listOffsets(Map.of(tp, OffsetSpec.maxTimestamp()))
                    .partitionResult(tp).get(30, TimeUnit.SECONDS);
            assertEquals(7, max.offset(), "max timestamp offset");
            assertEquals(t0 + 100_000, max.timestamp(), "max timestamp");
            ListOffsetsResultInfo byTime = admin.listOffsets(Map.of(tp, OffsetSpec.forTimestamp(t0 + 4000)))
                    .partitionResult(tp).get(30, TimeUnit.SECONDS);
            assertEquals(4, byTime.offset(), "admin forTimestamp");
            ListOffsetsResultInfo earliestLocal = admin.listOffsets(Map.of(tp, OffsetSpec.earliest()))
                    .partitionResult(tp).get(30, TimeUnit.SECONDS);
            assertEquals(0, earliestLocal.offset());
        }
    }
}
