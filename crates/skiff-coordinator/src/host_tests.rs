//! Both coordinators over the in-memory host (`memory.rs`): what they write through the
//! [`crate::host`] traits is what they replay after a restart, a failed write fails the
//! request instead of being applied, and a transaction's markers reach its data partitions
//! and its offsets the group coordinator.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::ResponseError;
use skiff_config::BrokerConfig;
use skiff_log::{Clock, ControlType, ManualClock};
use skiff_records::Batches;

use crate::groups::records::{encode_key, encode_offset_value, Key, OffsetValue};
use crate::groups::{CommitEntry, Coordinator, OFFSETS_TOPIC};
use crate::host::{InternalPartition, Storage, TopicCatalog};
use crate::memory::{MemGroupConfigs, MemHost, MemStorage};
use crate::txn::state::TxnState;
use crate::txn::{self, TxnCoordinator, TXN_STATE_TOPIC};

mod tv2;

fn config() -> BrokerConfig {
    BrokerConfig {
        offsets_topic_num_partitions: 3,
        transaction_state_log_num_partitions: 2,
        ..BrokerConfig::default()
    }
}

fn clock() -> Arc<dyn Clock> {
    Arc::new(ManualClock::new(1_000_000))
}

fn start_groups(storage: &Arc<MemStorage>) -> Coordinator<MemStorage> {
    start_groups_with(storage, Arc::new(MemGroupConfigs::default()))
}

fn start_groups_with(
    storage: &Arc<MemStorage>,
    group_configs: Arc<MemGroupConfigs>,
) -> Coordinator<MemStorage> {
    start_groups_at(storage, group_configs, &config(), clock())
}

/// A group coordinator over `storage`, once loaded (also used by the migration and share
/// group tests).
pub(crate) fn start_groups_at(
    storage: &Arc<MemStorage>,
    group_configs: Arc<MemGroupConfigs>,
    config: &BrokerConfig,
    clock: Arc<dyn Clock>,
) -> Coordinator<MemStorage> {
    let catalog: Arc<dyn TopicCatalog> = storage.clone();
    let c = Coordinator::start(storage.clone(), catalog, config, group_configs, clock).unwrap();
    wait_for(|| c.is_loaded());
    c
}

fn start_host(storage: &Arc<MemStorage>) -> Arc<MemHost> {
    start_host_at(storage, &config(), clock())
}

fn start_host_at(
    storage: &Arc<MemStorage>,
    config: &BrokerConfig,
    clock: Arc<dyn Clock>,
) -> Arc<MemHost> {
    let configs = Arc::new(MemGroupConfigs::default());
    let host = Arc::new(MemHost {
        storage: storage.clone(),
        groups: start_groups_at(storage, configs, config, clock.clone()),
        txn: TxnCoordinator::start(storage.clone(), config, clock).unwrap(),
        next_producer_id: AtomicI64::new(7000),
    });
    txn::spawn(&host).unwrap();
    wait_for(|| host.txn.is_loaded());
    host
}

fn stop_host(host: Arc<MemHost>) {
    host.txn.stop();
    host.groups.stop();
}

fn wait_for(cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "condition never held");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn entry(topic: &str, partition: i32, offset: i64) -> CommitEntry {
    CommitEntry {
        topic: topic.to_string(),
        partition,
        offset,
        leader_epoch: 3,
        metadata: "m".to_string(),
        expire_timestamp: None,
    }
}

fn committed(c: &Coordinator<MemStorage>, group: &str, topic: &str, p: i32) -> Option<i64> {
    let wanted = Some(vec![(topic.to_string(), p)]);
    let rows = c.fetch_offsets(group, wanted).unwrap();
    rows[0].2.as_ref().map(|c| c.offset)
}

#[tokio::test]
async fn offsets_topic_is_created_compacted_on_first_use_and_commits_survive_a_restart() {
    let storage = Arc::new(MemStorage::default());
    let groups = start_groups(&storage);
    // As Kafka: no group has been used, so there is no __consumer_offsets yet.
    assert!(storage.topic_partitions(OFFSETS_TOPIC).is_none());
    assert_eq!(committed(&groups, "g", "t", 0), None);
    assert!(storage.topic_partitions(OFFSETS_TOPIC).is_none());

    let entries = vec![entry("t", 0, 42), entry("t", 1, 7)];
    groups.commit("g", "", None, -1, entries).await.unwrap();
    let configs = storage.configs(OFFSETS_TOPIC).unwrap();
    assert_eq!(configs["cleanup.policy"], "compact");
    assert_eq!(storage.topic_partitions(OFFSETS_TOPIC).unwrap().len(), 3);
    assert_eq!(committed(&groups, "g", "t", 0), Some(42));
    groups
        .commit("h", "", None, -1, vec![entry("t", 0, 40)])
        .await
        .unwrap();
    assert_eq!(
        groups.committed_by_groups("t", 0),
        Some(vec![("g".to_string(), 42), ("h".to_string(), 40)])
    );
    assert_eq!(groups.committed_by_groups("t", 9), Some(vec![]));
    // The commit was answered only once its records were durable.
    let p = groups.offsets_partition("g").unwrap();
    assert!(p.log_end_offset() >= 2);
    assert_eq!(p.flushed.load(Ordering::Acquire), p.log_end_offset());
    groups.stop();

    let again = start_groups(&storage);
    assert_eq!(committed(&again, "g", "t", 0), Some(42));
    assert_eq!(committed(&again, "g", "t", 1), Some(7));
    let rows = again.fetch_offsets("g", None).unwrap();
    let c = rows[0].2.as_ref().unwrap();
    assert_eq!((c.leader_epoch, c.metadata.as_str()), (3, "m"));
    again.stop();
}

#[tokio::test]
async fn a_failed_write_fails_the_commit_and_is_not_applied() {
    let storage = Arc::new(MemStorage::default());
    let groups = start_groups(&storage);
    let p = groups.offsets_partition("g").unwrap();
    p.fail_appends.store(true, Ordering::Release);
    let err = groups
        .commit("g", "", None, -1, vec![entry("t", 0, 42)])
        .await
        .unwrap_err();
    assert_eq!(err, ResponseError::KafkaStorageError);
    assert_eq!(committed(&groups, "g", "t", 0), None);
    groups.stop();
}

#[test]
fn end_txn_writes_markers_and_the_state_survives_a_restart() {
    let storage = Arc::new(MemStorage::default());
    let data = storage.add_topic("t", 2);
    let host = start_host(&storage);
    assert!(storage.topic_partitions(TXN_STATE_TOPIC).is_none());

    let (pid, epoch) = host
        .txn
        .init_producer_id(&host, "tx", 60_000, None)
        .unwrap();
    assert_eq!((pid, epoch), (7000, 0));
    // The first transactional write created the topic, compacted.
    assert_eq!(
        storage.configs(TXN_STATE_TOPIC).unwrap()["cleanup.policy"],
        "compact"
    );
    let parts = [("t".to_string(), 1)];
    host.txn.add_partitions("tx", pid, epoch, &parts).unwrap();
    host.txn.end_txn(&host, "tx", pid, epoch, true).unwrap();

    // One COMMIT marker of the producer in the transaction's partition, durable; none in
    // the other.
    assert!(data[0].batches().is_empty());
    let batches = data[1].batches();
    assert_eq!(batches.len(), 1);
    let (header, bytes) = Batches::new(&batches[0]).next().unwrap().unwrap();
    assert!(header.is_control());
    assert_eq!(header.producer_id, pid);
    let (control, _) = skiff_log::parse_marker(bytes).unwrap();
    assert_eq!(control, ControlType::Commit);
    assert_eq!(data[1].flushed.load(Ordering::Acquire), 1);
    let m = host.txn.describe("tx").unwrap().unwrap();
    assert_eq!(m.state, TxnState::CompleteCommit);
    stop_host(host);

    let host = start_host(&storage);
    let m = host.txn.describe("tx").unwrap().unwrap();
    assert_eq!((m.producer_id, m.state), (pid, TxnState::CompleteCommit));
    // The same transactional id continues with the next epoch of the same producer id.
    let next = host
        .txn
        .init_producer_id(&*host, "tx", 60_000, None)
        .unwrap();
    assert_eq!(next, (pid, 1));
    stop_host(host);
}

#[test]
fn committing_a_transaction_applies_its_offsets_and_aborting_drops_them() {
    let storage = Arc::new(MemStorage::default());
    let host = start_host(&storage);
    for (id, group, commit) in [("tx-c", "gc", true), ("tx-a", "ga", false)] {
        let (pid, epoch) = host.txn.init_producer_id(&host, id, 60_000, None).unwrap();
        let offsets_partition = host.groups.partition_for(group);
        let parts = [(OFFSETS_TOPIC.to_string(), offsets_partition)];
        host.txn.add_partitions(id, pid, epoch, &parts).unwrap();
        let key = encode_key(&Key::Offset {
            group: group.to_string(),
            topic: "t".to_string(),
            partition: 0,
        });
        let value = encode_offset_value(&OffsetValue {
            offset: 99,
            leader_epoch: 0,
            metadata: String::new(),
            commit_timestamp: 1,
            expire_timestamp: -1,
        });
        host.groups
            .add_pending_txn_offsets(pid, vec![(key, Some(value))]);
        assert!(host.groups.has_pending_txn_offset(group, "t", 0));
        assert_eq!(committed(&host.groups, group, "t", 0), None);
        host.txn.end_txn(&host, id, pid, epoch, commit).unwrap();
        assert!(!host.groups.has_pending_txn_offset(group, "t", 0));
    }
    assert_eq!(committed(&host.groups, "gc", "t", 0), Some(99));
    assert_eq!(committed(&host.groups, "ga", "t", 0), None);
    stop_host(host);
}

#[test]
fn a_group_config_overrides_the_broker_heartbeat_interval() {
    let storage = Arc::new(MemStorage::default());
    let configs = Arc::new(MemGroupConfigs::default());
    configs
        .timeouts
        .lock()
        .unwrap()
        .insert("g".to_string(), (None, Some(1234)));
    let groups = start_groups_with(&storage, configs);
    let broker_default = config().group_consumer_heartbeat_interval_ms;
    assert_ne!(broker_default, 1234);
    assert_eq!(groups.consumer_heartbeat_interval_ms("g"), 1234);
    assert_eq!(
        groups.consumer_heartbeat_interval_ms("other"),
        broker_default
    );
    groups.stop();
}

/// `offsets.retention.minutes` is judged on the injected clock, and so is the
/// `offsets.retention.check.interval.ms` between checks: however many passes the thread runs,
/// nothing expires while the clock stands still; once it has moved past the retention, the
/// next pass (asked for with `tick_now`, no sleep) expires the offset and writes the
/// tombstones before answering.
#[tokio::test]
async fn offsets_expire_at_the_next_tick_once_the_clock_passes_the_retention() {
    let storage = Arc::new(MemStorage::default());
    let manual = Arc::new(ManualClock::new(1_000_000));
    let config = BrokerConfig {
        offsets_retention_minutes: 1,
        offsets_retention_check_interval_ms: 1_000,
        ..config()
    };
    let configs = Arc::new(MemGroupConfigs::default());
    let groups = start_groups_at(&storage, configs, &config, manual.clone());
    groups
        .commit("g", "", None, -1, vec![entry("t", 0, 42)])
        .await
        .unwrap();
    let p = groups.offsets_partition("g").unwrap();
    let written = p.log_end_offset();

    for _ in 0..3 {
        groups.tick_now();
    }
    assert_eq!(committed(&groups, "g", "t", 0), Some(42));
    // The check is due (a minute of checks passed), the retention is not.
    manual.advance(59_999);
    groups.tick_now();
    assert_eq!(committed(&groups, "g", "t", 0), Some(42));
    assert_eq!(p.log_end_offset(), written);

    manual.advance(1_000);
    groups.tick_now();
    assert_eq!(committed(&groups, "g", "t", 0), None);
    // The offset's tombstone and the emptied group's, appended by the time tick_now returned
    // (expiry does not wait for the fsync; the log's flush policy applies).
    assert_eq!(p.log_end_offset(), written + 2);
    groups.stop();
}

/// The transaction coordinator's thread decides on the injected clock too: a transaction
/// past its `transaction.timeout.ms` is aborted, and an idle transactional id past
/// `transactional.id.expiration.ms` removed, at the first pass after the clock moved past
/// the deadline (asked for with `tick_now`, no sleep), and never while it stands still.
#[test]
fn transactions_time_out_and_ids_expire_at_the_next_pass_once_the_clock_moves() {
    let storage = Arc::new(MemStorage::default());
    let data = storage.add_topic("t", 1);
    let manual = Arc::new(ManualClock::new(1_000_000));
    let config = BrokerConfig {
        transactional_id_expiration_ms: 5_000,
        transaction_abort_timed_out_transaction_cleanup_interval_ms: 1_000,
        transaction_remove_expired_transaction_cleanup_interval_ms: 1_000,
        ..config()
    };
    let host = start_host_at(&storage, &config, manual.clone());
    host.txn
        .init_producer_id(&host, "idle", 60_000, None)
        .unwrap();
    let (pid, epoch) = host
        .txn
        .init_producer_id(&host, "busy", 2_000, None)
        .unwrap();
    host.txn
        .add_partitions("busy", pid, epoch, &[("t".to_string(), 0)])
        .unwrap();
    let state = |id: &str| host.txn.describe(id).unwrap().map(|m| m.state);

    for _ in 0..3 {
        assert!(host.txn.tick_now());
    }
    assert_eq!(state("busy"), Some(TxnState::Ongoing));
    assert_eq!(state("idle"), Some(TxnState::Empty));
    // Checks run every second of clock time: this one is just short of the timeout.
    manual.advance(1_999);
    assert!(host.txn.tick_now());
    assert_eq!(state("busy"), Some(TxnState::Ongoing));
    assert!(data[0].batches().is_empty());

    // Past the transaction's timeout and the check interval: aborted (its ABORT marker
    // written) at the next pass.
    manual.advance(1_000);
    assert!(host.txn.tick_now());
    assert_eq!(state("busy"), Some(TxnState::CompleteAbort));
    let batches = data[0].batches();
    assert_eq!(batches.len(), 1);
    let (header, bytes) = Batches::new(&batches[0]).next().unwrap().unwrap();
    assert_eq!(header.producer_id, pid);
    assert_eq!(
        skiff_log::parse_marker(bytes).unwrap().0,
        ControlType::Abort
    );

    // The idle id, untouched since the start, expires once 5 s have passed on the clock;
    // the just-aborted one does not yet.
    manual.advance(1_999);
    assert!(host.txn.tick_now());
    assert_eq!(state("idle"), Some(TxnState::Empty));
    manual.advance(1_000);
    assert!(host.txn.tick_now());
    assert_eq!(state("idle"), None);
    assert_eq!(state("busy"), Some(TxnState::CompleteAbort));
    stop_host(host);
}

#[test]
fn tick_now_does_not_wait_for_a_txn_thread_that_is_not_running() {
    let storage = Arc::new(MemStorage::default());
    let txn = TxnCoordinator::start(storage.clone(), &config(), clock()).unwrap();
    assert!(!txn.tick_now());
}
