//! `throttle_time_ms` of any response (KIP-219: every response that has the field carries the
//! time the client is throttled for, and the broker mutes the connection that long once the
//! response is sent): read it ([`throttle_time_ms`]) and raise it ([`raise_throttle`]) over
//! the generated response types, as Kafka's `AbstractResponse.maybeSetThrottleTimeMs` does.
//!
//! The list covers every response type of the kafka-protocol crate that has the field; the
//! encoder leaves it out for versions that lack it.

use kafka_protocol::messages::ResponseKind;

/// The response's `throttle_time_ms`; `None` for a response type without one.
pub fn throttle_time_ms(response: &ResponseKind) -> Option<i32> {
    match response {
        ResponseKind::AddOffsetsToTxn(r) => Some(r.throttle_time_ms),
        ResponseKind::AddPartitionsToTxn(r) => Some(r.throttle_time_ms),
        ResponseKind::AddRaftVoter(r) => Some(r.throttle_time_ms),
        ResponseKind::AllocateProducerIds(r) => Some(r.throttle_time_ms),
        ResponseKind::AlterClientQuotas(r) => Some(r.throttle_time_ms),
        ResponseKind::AlterConfigs(r) => Some(r.throttle_time_ms),
        ResponseKind::AlterPartitionReassignments(r) => Some(r.throttle_time_ms),
        ResponseKind::AlterPartition(r) => Some(r.throttle_time_ms),
        ResponseKind::AlterReplicaLogDirs(r) => Some(r.throttle_time_ms),
        ResponseKind::AlterShareGroupOffsets(r) => Some(r.throttle_time_ms),
        ResponseKind::AlterUserScramCredentials(r) => Some(r.throttle_time_ms),
        ResponseKind::ApiVersions(r) => Some(r.throttle_time_ms),
        ResponseKind::AssignReplicasToDirs(r) => Some(r.throttle_time_ms),
        ResponseKind::BrokerHeartbeat(r) => Some(r.throttle_time_ms),
        ResponseKind::BrokerRegistration(r) => Some(r.throttle_time_ms),
        ResponseKind::ConsumerGroupDescribe(r) => Some(r.throttle_time_ms),
        ResponseKind::ConsumerGroupHeartbeat(r) => Some(r.throttle_time_ms),
        ResponseKind::ControllerRegistration(r) => Some(r.throttle_time_ms),
        ResponseKind::CreateAcls(r) => Some(r.throttle_time_ms),
        ResponseKind::CreateDelegationToken(r) => Some(r.throttle_time_ms),
        ResponseKind::CreatePartitions(r) => Some(r.throttle_time_ms),
        ResponseKind::CreateTopics(r) => Some(r.throttle_time_ms),
        ResponseKind::DeleteAcls(r) => Some(r.throttle_time_ms),
        ResponseKind::DeleteGroups(r) => Some(r.throttle_time_ms),
        ResponseKind::DeleteRecords(r) => Some(r.throttle_time_ms),
        ResponseKind::DeleteShareGroupOffsets(r) => Some(r.throttle_time_ms),
        ResponseKind::DeleteTopics(r) => Some(r.throttle_time_ms),
        ResponseKind::DescribeAcls(r) => Some(r.throttle_time_ms),
        ResponseKind::DescribeClientQuotas(r) => Some(r.throttle_time_ms),
        ResponseKind::DescribeCluster(r) => Some(r.throttle_time_ms),
        ResponseKind::DescribeConfigs(r) => Some(r.throttle_time_ms),
        ResponseKind::DescribeDelegationToken(r) => Some(r.throttle_time_ms),
        ResponseKind::DescribeGroups(r) => Some(r.throttle_time_ms),
        ResponseKind::DescribeLogDirs(r) => Some(r.throttle_time_ms),
        ResponseKind::DescribeProducers(r) => Some(r.throttle_time_ms),
        ResponseKind::DescribeShareGroupOffsets(r) => Some(r.throttle_time_ms),
        ResponseKind::DescribeTopicPartitions(r) => Some(r.throttle_time_ms),
        ResponseKind::DescribeTransactions(r) => Some(r.throttle_time_ms),
        ResponseKind::DescribeUserScramCredentials(r) => Some(r.throttle_time_ms),
        ResponseKind::ElectLeaders(r) => Some(r.throttle_time_ms),
        ResponseKind::EndTxn(r) => Some(r.throttle_time_ms),
        ResponseKind::ExpireDelegationToken(r) => Some(r.throttle_time_ms),
        ResponseKind::Fetch(r) => Some(r.throttle_time_ms),
        ResponseKind::FetchSnapshot(r) => Some(r.throttle_time_ms),
        ResponseKind::FindCoordinator(r) => Some(r.throttle_time_ms),
        ResponseKind::GetTelemetrySubscriptions(r) => Some(r.throttle_time_ms),
        ResponseKind::Heartbeat(r) => Some(r.throttle_time_ms),
        ResponseKind::IncrementalAlterConfigs(r) => Some(r.throttle_time_ms),
        ResponseKind::InitProducerId(r) => Some(r.throttle_time_ms),
        ResponseKind::JoinGroup(r) => Some(r.throttle_time_ms),
        ResponseKind::LeaveGroup(r) => Some(r.throttle_time_ms),
        ResponseKind::ListConfigResources(r) => Some(r.throttle_time_ms),
        ResponseKind::ListGroups(r) => Some(r.throttle_time_ms),
        ResponseKind::ListOffsets(r) => Some(r.throttle_time_ms),
        ResponseKind::ListPartitionReassignments(r) => Some(r.throttle_time_ms),
        ResponseKind::ListTransactions(r) => Some(r.throttle_time_ms),
        ResponseKind::Metadata(r) => Some(r.throttle_time_ms),
        ResponseKind::OffsetCommit(r) => Some(r.throttle_time_ms),
        ResponseKind::OffsetDelete(r) => Some(r.throttle_time_ms),
        ResponseKind::OffsetFetch(r) => Some(r.throttle_time_ms),
        ResponseKind::OffsetForLeaderEpoch(r) => Some(r.throttle_time_ms),
        ResponseKind::Produce(r) => Some(r.throttle_time_ms),
        ResponseKind::PushTelemetry(r) => Some(r.throttle_time_ms),
        ResponseKind::RemoveRaftVoter(r) => Some(r.throttle_time_ms),
        ResponseKind::RenewDelegationToken(r) => Some(r.throttle_time_ms),
        ResponseKind::ShareAcknowledge(r) => Some(r.throttle_time_ms),
        ResponseKind::ShareFetch(r) => Some(r.throttle_time_ms),
        ResponseKind::ShareGroupDescribe(r) => Some(r.throttle_time_ms),
        ResponseKind::ShareGroupHeartbeat(r) => Some(r.throttle_time_ms),
        ResponseKind::SyncGroup(r) => Some(r.throttle_time_ms),
        ResponseKind::TxnOffsetCommit(r) => Some(r.throttle_time_ms),
        ResponseKind::UnregisterBroker(r) => Some(r.throttle_time_ms),
        ResponseKind::UpdateFeatures(r) => Some(r.throttle_time_ms),
        ResponseKind::UpdateRaftVoter(r) => Some(r.throttle_time_ms),
        _ => None,
    }
}

/// Sets the response's `throttle_time_ms` to `ms` when that is larger (the throttle of a
/// request is the largest of its quotas'); no effect on a response type without the field.
pub fn raise_throttle(response: &mut ResponseKind, ms: i32) {
    if throttle_time_ms(response).is_some_and(|now| now >= ms) {
        return;
    }
    match response {
        ResponseKind::AddOffsetsToTxn(r) => r.throttle_time_ms = ms,
        ResponseKind::AddPartitionsToTxn(r) => r.throttle_time_ms = ms,
        ResponseKind::AddRaftVoter(r) => r.throttle_time_ms = ms,
        ResponseKind::AllocateProducerIds(r) => r.throttle_time_ms = ms,
        ResponseKind::AlterClientQuotas(r) => r.throttle_time_ms = ms,
        ResponseKind::AlterConfigs(r) => r.throttle_time_ms = ms,
        ResponseKind::AlterPartitionReassignments(r) => r.throttle_time_ms = ms,
        ResponseKind::AlterPartition(r) => r.throttle_time_ms = ms,
        ResponseKind::AlterReplicaLogDirs(r) => r.throttle_time_ms = ms,
        ResponseKind::AlterShareGroupOffsets(r) => r.throttle_time_ms = ms,
        ResponseKind::AlterUserScramCredentials(r) => r.throttle_time_ms = ms,
        ResponseKind::ApiVersions(r) => r.throttle_time_ms = ms,
        ResponseKind::AssignReplicasToDirs(r) => r.throttle_time_ms = ms,
        ResponseKind::BrokerHeartbeat(r) => r.throttle_time_ms = ms,
        ResponseKind::BrokerRegistration(r) => r.throttle_time_ms = ms,
        ResponseKind::ConsumerGroupDescribe(r) => r.throttle_time_ms = ms,
        ResponseKind::ConsumerGroupHeartbeat(r) => r.throttle_time_ms = ms,
        ResponseKind::ControllerRegistration(r) => r.throttle_time_ms = ms,
        ResponseKind::CreateAcls(r) => r.throttle_time_ms = ms,
        ResponseKind::CreateDelegationToken(r) => r.throttle_time_ms = ms,
        ResponseKind::CreatePartitions(r) => r.throttle_time_ms = ms,
        ResponseKind::CreateTopics(r) => r.throttle_time_ms = ms,
        ResponseKind::DeleteAcls(r) => r.throttle_time_ms = ms,
        ResponseKind::DeleteGroups(r) => r.throttle_time_ms = ms,
        ResponseKind::DeleteRecords(r) => r.throttle_time_ms = ms,
        ResponseKind::DeleteShareGroupOffsets(r) => r.throttle_time_ms = ms,
        ResponseKind::DeleteTopics(r) => r.throttle_time_ms = ms,
        ResponseKind::DescribeAcls(r) => r.throttle_time_ms = ms,
        ResponseKind::DescribeClientQuotas(r) => r.throttle_time_ms = ms,
        ResponseKind::DescribeCluster(r) => r.throttle_time_ms = ms,
        ResponseKind::DescribeConfigs(r) => r.throttle_time_ms = ms,
        ResponseKind::DescribeDelegationToken(r) => r.throttle_time_ms = ms,
        ResponseKind::DescribeGroups(r) => r.throttle_time_ms = ms,
        ResponseKind::DescribeLogDirs(r) => r.throttle_time_ms = ms,
        ResponseKind::DescribeProducers(r) => r.throttle_time_ms = ms,
        ResponseKind::DescribeShareGroupOffsets(r) => r.throttle_time_ms = ms,
        ResponseKind::DescribeTopicPartitions(r) => r.throttle_time_ms = ms,
        ResponseKind::DescribeTransactions(r) => r.throttle_time_ms = ms,
        ResponseKind::DescribeUserScramCredentials(r) => r.throttle_time_ms = ms,
        ResponseKind::ElectLeaders(r) => r.throttle_time_ms = ms,
        ResponseKind::EndTxn(r) => r.throttle_time_ms = ms,
        ResponseKind::ExpireDelegationToken(r) => r.throttle_time_ms = ms,
        ResponseKind::Fetch(r) => r.throttle_time_ms = ms,
        ResponseKind::FetchSnapshot(r) => r.throttle_time_ms = ms,
        ResponseKind::FindCoordinator(r) => r.throttle_time_ms = ms,
        ResponseKind::GetTelemetrySubscriptions(r) => r.throttle_time_ms = ms,
        ResponseKind::Heartbeat(r) => r.throttle_time_ms = ms,
        ResponseKind::IncrementalAlterConfigs(r) => r.throttle_time_ms = ms,
        ResponseKind::InitProducerId(r) => r.throttle_time_ms = ms,
        ResponseKind::JoinGroup(r) => r.throttle_time_ms = ms,
        ResponseKind::LeaveGroup(r) => r.throttle_time_ms = ms,
        ResponseKind::ListConfigResources(r) => r.throttle_time_ms = ms,
        ResponseKind::ListGroups(r) => r.throttle_time_ms = ms,
        ResponseKind::ListOffsets(r) => r.throttle_time_ms = ms,
        ResponseKind::ListPartitionReassignments(r) => r.throttle_time_ms = ms,
        ResponseKind::ListTransactions(r) => r.throttle_time_ms = ms,
        ResponseKind::Metadata(r) => r.throttle_time_ms = ms,
        ResponseKind::OffsetCommit(r) => r.throttle_time_ms = ms,
        ResponseKind::OffsetDelete(r) => r.throttle_time_ms = ms,
        ResponseKind::OffsetFetch(r) => r.throttle_time_ms = ms,
        ResponseKind::OffsetForLeaderEpoch(r) => r.throttle_time_ms = ms,
        ResponseKind::Produce(r) => r.throttle_time_ms = ms,
        ResponseKind::PushTelemetry(r) => r.throttle_time_ms = ms,
        ResponseKind::RemoveRaftVoter(r) => r.throttle_time_ms = ms,
        ResponseKind::RenewDelegationToken(r) => r.throttle_time_ms = ms,
        ResponseKind::ShareAcknowledge(r) => r.throttle_time_ms = ms,
        ResponseKind::ShareFetch(r) => r.throttle_time_ms = ms,
        ResponseKind::ShareGroupDescribe(r) => r.throttle_time_ms = ms,
        ResponseKind::ShareGroupHeartbeat(r) => r.throttle_time_ms = ms,
        ResponseKind::SyncGroup(r) => r.throttle_time_ms = ms,
        ResponseKind::TxnOffsetCommit(r) => r.throttle_time_ms = ms,
        ResponseKind::UnregisterBroker(r) => r.throttle_time_ms = ms,
        ResponseKind::UpdateFeatures(r) => r.throttle_time_ms = ms,
        ResponseKind::UpdateRaftVoter(r) => r.throttle_time_ms = ms,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::{FetchResponse, ProduceResponse};

    #[test]
    fn raises_but_never_lowers() {
        let mut r = ResponseKind::Produce(ProduceResponse::default());
        assert_eq!(throttle_time_ms(&r), Some(0));
        raise_throttle(&mut r, 250);
        assert_eq!(throttle_time_ms(&r), Some(250));
        raise_throttle(&mut r, 100);
        assert_eq!(throttle_time_ms(&r), Some(250));
        let mut f = ResponseKind::Fetch(FetchResponse::default().with_throttle_time_ms(7));
        raise_throttle(&mut f, 9);
        assert_eq!(throttle_time_ms(&f), Some(9));
    }
}
