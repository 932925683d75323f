//! The broker's side of the coordinators' host traits (`skiff_coordinator::host` and
//! `skiff_coordinator::txn::TxnHost`): their internal topics are ordinary [`Topics`] whose
//! writes share the broker's flusher ([`Durability`]); the topic catalogue is [`Topics`];
//! group configs come from [`DynamicConfigs`]; producer ids from [`ProducerIds`] and
//! transaction markers go to the data partitions of [`Broker::topics`].
//!
//! Thread safety: everything here delegates to types that synchronise themselves.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use skiff_coordinator::groups::Coordinator;
use skiff_coordinator::host::{GroupConfigs, InternalPartition, Storage, TopicCatalog};
use skiff_coordinator::share_group::ShareGroupSettings;
use skiff_coordinator::streams_group::StreamsGroupSettings;
use skiff_coordinator::txn::TxnHost;
use skiff_log::{ControlType, LogError};
use uuid::Uuid;

use crate::broker::Broker;
use crate::durability::Durability;
use crate::dynamic_configs::DynamicConfigs;
use crate::partition::Partition;
use crate::topics::{TopicError, Topics};

/// The group coordinator as the broker runs it.
pub type GroupCoordinator = Coordinator<CoordinatorStorage>;
/// The transaction coordinator as the broker runs it.
pub type TxnCoordinator = skiff_coordinator::txn::TxnCoordinator<CoordinatorStorage>;

/// `__consumer_offsets` and `__transaction_state` as topics of the broker.
pub struct CoordinatorStorage {
    topics: Arc<Topics>,
    durability: Arc<Durability>,
}

impl CoordinatorStorage {
    pub fn new(topics: Arc<Topics>, durability: Arc<Durability>) -> CoordinatorStorage {
        CoordinatorStorage { topics, durability }
    }
}

impl Storage for CoordinatorStorage {
    type Partition = Partition;
    type Error = TopicError;

    fn topic_partitions(&self, topic: &str) -> Option<Vec<Arc<Partition>>> {
        self.topics.get(topic).map(|t| t.partitions())
    }

    fn create_topic(
        &self,
        topic: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
    ) -> Result<Vec<Arc<Partition>>, TopicError> {
        Ok(self
            .topics
            .create(topic, partitions, configs, false)?
            .partitions())
    }

    fn wait_durable(
        &self,
        partition: Arc<Partition>,
        end_offset: i64,
    ) -> impl Future<Output = Result<(), String>> + Send {
        let durability = self.durability.clone();
        async move { durability.wait_flushed(partition, end_offset).await }
    }
}

impl InternalPartition for Partition {
    fn index(&self) -> i32 {
        self.index
    }

    fn log_start_offset(&self) -> i64 {
        self.log.log_start_offset()
    }

    fn log_end_offset(&self) -> i64 {
        self.log.log_end_offset()
    }

    fn read(&self, offset: i64, max_bytes: usize) -> Result<Bytes, LogError> {
        Ok(self.log.read(offset, max_bytes, true)?.records)
    }

    fn append(&self, batch: &[u8], leader_epoch: i32, now_ms: i64) -> Result<i64, LogError> {
        let info = self.log.append_internal(batch, leader_epoch, now_ms)?;
        Ok(info.last_offset + 1)
    }

    fn write_txn_marker(
        &self,
        producer_id: i64,
        epoch: i16,
        coordinator_epoch: i32,
        control: ControlType,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<(), LogError> {
        self.log
            .write_txn_marker(
                producer_id,
                epoch,
                coordinator_epoch,
                control,
                leader_epoch,
                now_ms,
            )
            .map(|_| ())
    }

    /// The DeleteRecords path of the log itself (the handler's `delete_records_before`):
    /// the log start moves at once and is made durable with the broker's log-start
    /// checkpoints, segments wholly below it go.
    fn delete_records_before(&self, offset: i64) -> Result<i64, LogError> {
        self.log.delete_records_before(offset)
    }

    fn flush(&self) -> Result<(), LogError> {
        self.log.flush().map(|_| ())
    }

    fn wake_readers(&self) {
        self.wake_all();
    }
}

impl TopicCatalog for Topics {
    fn topic_id(&self, name: &str) -> Option<Uuid> {
        self.get(name).map(|t| t.id)
    }

    fn topic_name(&self, id: Uuid) -> Option<String> {
        self.get_by_id(id).map(|t| t.name.clone())
    }

    fn partition_count(&self, name: &str) -> Option<i32> {
        self.get(name).map(|t| t.partition_count())
    }
}

impl GroupConfigs for DynamicConfigs {
    fn consumer_timeouts(&self, group_id: &str) -> (Option<i32>, Option<i32>) {
        self.group_consumer_timeouts(group_id)
    }

    fn share_group_settings(&self, group_id: &str) -> ShareGroupSettings {
        let values = self.share_group_values(group_id);
        ShareGroupSettings {
            heartbeat_interval_ms: values.heartbeat_interval_ms,
            session_timeout_ms: values.session_timeout_ms,
            // Broker-wide only, as in Kafka.
            max_size: usize::try_from(self.live().group_share_max_size).unwrap_or(0),
            assignment_interval_ms: values.assignment_interval_ms,
        }
    }

    fn streams_group_settings(&self, group_id: &str) -> StreamsGroupSettings {
        let values = self.streams_group_values(group_id);
        StreamsGroupSettings {
            session_timeout_ms: values.session_timeout_ms,
            heartbeat_interval_ms: values.heartbeat_interval_ms,
            // Broker-wide only, as in Kafka.
            max_size: usize::try_from(self.live().group_streams_max_size).unwrap_or(0),
            // Validated at least 0 when set; a negative value cannot reach here.
            standby_replicas: u32::try_from(values.num_standby_replicas).unwrap_or(0),
            initial_rebalance_delay_ms: values.initial_rebalance_delay_ms,
            assignment_interval_ms: values.assignment_interval_ms,
            task_offset_interval_ms: values.task_offset_interval_ms,
            acceptable_recovery_lag: values.acceptable_recovery_lag,
            rack_aware_assignment_tags: values.rack_aware_assignment_tags,
        }
    }
}

impl TxnHost for Broker {
    type Storage = CoordinatorStorage;

    fn allocate_producer_id(&self) -> Result<i64, LogError> {
        self.producer_ids.allocate()
    }

    fn data_partition(&self, topic: &str, index: i32) -> Option<Arc<Partition>> {
        self.topics.get(topic).and_then(|t| t.partition(index))
    }

    fn groups(&self) -> &GroupCoordinator {
        &self.coordinator
    }

    fn txn(&self) -> &TxnCoordinator {
        &self.txn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A group's `streams.*` overrides reach the coordinator's settings; what it does not
    /// override comes from the broker's `group.streams.*` configs in force.
    #[test]
    fn streams_group_settings_take_the_group_over_the_broker() {
        let dir = tempfile::tempdir().unwrap();
        let (broker, _) = skiff_config::load_str(
            "[broker]\n\"group.streams.num.standby.replicas\" = 1\n\"group.streams.max.size\" = 7\n",
            std::path::Path::new("t.toml"),
            &[],
            Vec::<(String, String)>::new(),
        )
        .unwrap();
        let store = DynamicConfigs::open(dir.path(), Arc::new(broker)).unwrap();
        let unset = store.streams_group_settings("g");
        assert_eq!(unset.standby_replicas, 1);
        assert_eq!(unset.max_size, 7);
        assert_eq!(unset.session_timeout_ms, 45_000);
        assert_eq!(unset.acceptable_recovery_lag, 10_000);
        assert!(unset.rack_aware_assignment_tags.is_empty());

        let mut next = (*store.stored()).clone();
        let group = next.groups.entry("g".into()).or_default();
        for (k, v) in [
            ("streams.session.timeout.ms", "50000"),
            ("streams.heartbeat.interval.ms", "6000"),
            ("streams.num.standby.replicas", "2"),
            ("streams.initial.rebalance.delay.ms", "0"),
            ("streams.assignment.interval.ms", "500"),
            ("streams.task.offset.interval.ms", "20000"),
            ("streams.acceptable.recovery.lag", "123"),
            ("streams.rack.aware.assignment.tags", " zone , rack"),
        ] {
            group.insert(k.into(), v.into());
        }
        skiff_config::validate_group_configs(group, &store.live()).unwrap();
        {
            let _u = store.lock_updates();
            store.commit(next, None).unwrap();
        }
        assert_eq!(
            store.streams_group_settings("g"),
            StreamsGroupSettings {
                session_timeout_ms: 50_000,
                heartbeat_interval_ms: 6_000,
                max_size: 7,
                standby_replicas: 2,
                initial_rebalance_delay_ms: 0,
                assignment_interval_ms: 500,
                task_offset_interval_ms: 20_000,
                acceptable_recovery_lag: 123,
                rack_aware_assignment_tags: vec!["zone".to_string(), "rack".to_string()],
            }
        );
        // Another group still runs with the broker's values.
        assert_eq!(store.streams_group_settings("other"), unset);
    }
}
