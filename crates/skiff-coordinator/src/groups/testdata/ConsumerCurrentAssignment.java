// Prints Apache Kafka's own encoding of a consumer group current-assignment value (record 8)
// with per-partition assignment epochs (KIP-1251), as hex, for consumer_records.rs. Run with
// the reference Kafka's jars:
//   java -cp "$(tests/kafka/install.sh)/libs/*" \
//     crates/skiff-coordinator/src/groups/testdata/ConsumerCurrentAssignment.java
import java.nio.ByteBuffer;
import java.util.List;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupCurrentMemberAssignmentValue;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions;

public class ConsumerCurrentAssignment {
    public static void main(String[] args) {
        Uuid id = new Uuid(0x0101010101010101L, 0x0101010101010101L);
        ByteBuffer b = MessageUtil.toVersionPrefixedByteBuffer((short) 0,
            new ConsumerGroupCurrentMemberAssignmentValue()
                .setMemberEpoch(5).setPreviousMemberEpoch(4).setState((byte) 1)
                .setAssignedPartitions(List.of(new TopicPartitions().setTopicId(id)
                    .setPartitions(List.of(0, 2)).setAssignmentEpochs(List.of(3, 5))))
                .setPartitionsPendingRevocation(List.of(new TopicPartitions().setTopicId(id)
                    .setPartitions(List.of(1)).setAssignmentEpochs(List.of(4)))));
        StringBuilder sb = new StringBuilder();
        while (b.hasRemaining()) sb.append(String.format("%02x", b.get()));
        System.out.println(sb);
    }
}
