// Prints Apache Kafka's own encoding of one filled example of every streams group record of
// __consumer_offsets, as hex, for records_tests.rs. Run with the reference Kafka's jars:
//   java -cp "$(tests/kafka/install.sh)/libs/*" \
//     crates/skiff-coordinator/src/streams_group/testdata/StreamsRecords.java
import java.nio.ByteBuffer;
import java.util.List;

import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.coordinator.group.generated.*;

public class StreamsRecords {
    static void print(String name, short version, ApiMessage m) {
        ByteBuffer b = MessageUtil.toVersionPrefixedByteBuffer(version, m);
        StringBuilder sb = new StringBuilder();
        while (b.hasRemaining()) sb.append(String.format("%02x", b.get()));
        System.out.println(name + " " + sb);
    }

    public static void main(String[] args) {
        print("metadata_key", (short) 17, new StreamsGroupMetadataKey().setGroupId("wc"));
        print("member_key", (short) 19,
            new StreamsGroupMemberMetadataKey().setGroupId("wc").setMemberId("m1"));
        print("metadata", (short) 0, new StreamsGroupMetadataValue()
            .setEpoch(7).setMetadataHash(0).setValidatedTopologyEpoch(2)
            .setLastAssignmentConfigs(List.of(new StreamsGroupMetadataValue.LastAssignmentConfig()
                .setKey("num.standby.replicas").setValue("1"))));
        print("member", (short) 0, new StreamsGroupMemberMetadataValue()
            .setInstanceId(null).setRackId("r1").setClientId("c").setClientHost("/127.0.0.1")
            .setRebalanceTimeoutMs(30000).setTopologyEpoch(2).setProcessId("p1")
            .setUserEndpoint(new StreamsGroupMemberMetadataValue.Endpoint().setHost("h").setPort(65000))
            .setClientTags(List.of(new StreamsGroupMemberMetadataValue.KeyValue().setKey("az").setValue("a"))));
        print("member_no_endpoint", (short) 0, new StreamsGroupMemberMetadataValue()
            .setInstanceId("i1").setRackId(null).setClientId("c").setClientHost("h")
            .setRebalanceTimeoutMs(-1).setTopologyEpoch(0).setProcessId("p").setUserEndpoint(null)
            .setClientTags(List.of()));
        print("target_metadata", (short) 0,
            new StreamsGroupTargetAssignmentMetadataValue().setAssignmentEpoch(7).setAssignmentTimestamp(1234567890123L));
        print("target_member", (short) 0, new StreamsGroupTargetAssignmentMemberValue()
            .setActiveTasks(List.of(new StreamsGroupTargetAssignmentMemberValue.TaskIds().setSubtopologyId("0").setPartitions(List.of(0, 2))))
            .setStandbyTasks(List.of(new StreamsGroupTargetAssignmentMemberValue.TaskIds().setSubtopologyId("1").setPartitions(List.of(1))))
            .setWarmupTasks(List.of()));
        print("current", (short) 0, new StreamsGroupCurrentMemberAssignmentValue()
            .setMemberEpoch(7).setPreviousMemberEpoch(6).setState((byte) 1)
            .setActiveTasks(List.of(new StreamsGroupCurrentMemberAssignmentValue.TaskIds().setSubtopologyId("0").setPartitions(List.of(0))))
            .setStandbyTasks(List.of())
            .setWarmupTasks(List.of())
            .setActiveTasksPendingRevocation(List.of(new StreamsGroupCurrentMemberAssignmentValue.TaskIds().setSubtopologyId("0").setPartitions(List.of(1, 2))))
            .setStandbyTasksPendingRevocation(List.of())
            .setWarmupTasksPendingRevocation(List.of()));
        print("current_epochs", (short) 0, new StreamsGroupCurrentMemberAssignmentValue()
            .setMemberEpoch(7).setPreviousMemberEpoch(6).setState((byte) 1)
            .setActiveTasks(List.of(new StreamsGroupCurrentMemberAssignmentValue.TaskIds().setSubtopologyId("0")
                .setPartitions(List.of(0)).setAssignmentEpochs(List.of(5))))
            .setStandbyTasks(List.of(new StreamsGroupCurrentMemberAssignmentValue.TaskIds().setSubtopologyId("1").setPartitions(List.of(3))))
            .setWarmupTasks(List.of())
            .setActiveTasksPendingRevocation(List.of(new StreamsGroupCurrentMemberAssignmentValue.TaskIds().setSubtopologyId("0")
                .setPartitions(List.of(1, 2)).setAssignmentEpochs(List.of(3, 7))))
            .setStandbyTasksPendingRevocation(List.of())
            .setWarmupTasksPendingRevocation(List.of()));
        print("topology", (short) 0, new StreamsGroupTopologyValue().setEpoch(2).setSubtopologies(List.of(
            new StreamsGroupTopologyValue.Subtopology().setSubtopologyId("0")
                .setSourceTopics(List.of("left", "right")).setSourceTopicRegex(List.of())
                .setStateChangelogTopics(List.of(new StreamsGroupTopologyValue.TopicInfo().setName("app-store-changelog")
                    .setPartitions(0).setReplicationFactor((short) 0)
                    .setTopicConfigs(List.of(new StreamsGroupTopologyValue.TopicConfig().setKey("cleanup.policy").setValue("compact")))))
                .setRepartitionSinkTopics(List.of("app-rep"))
                .setRepartitionSourceTopics(List.of())
                .setCopartitionGroups(List.of(new StreamsGroupTopologyValue.CopartitionGroup()
                    .setSourceTopics(List.of((short) 0, (short) 1)).setSourceTopicRegex(List.of()).setRepartitionSourceTopics(List.of()))),
            new StreamsGroupTopologyValue.Subtopology().setSubtopologyId("1")
                .setSourceTopics(List.of()).setSourceTopicRegex(List.of())
                .setStateChangelogTopics(List.of())
                .setRepartitionSinkTopics(List.of())
                .setRepartitionSourceTopics(List.of(new StreamsGroupTopologyValue.TopicInfo().setName("app-rep")
                    .setPartitions(4).setReplicationFactor((short) 1).setTopicConfigs(List.of())))
                .setCopartitionGroups(List.of()))));
    }
}
