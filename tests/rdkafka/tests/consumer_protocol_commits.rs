//! KIP-848 (`group.protocol=consumer`) with two librdkafka consumers committing every record
//! while the second one joins (issue 12, item 1). librdkafka sends RebalanceTimeoutMs only
//! on its first heartbeat and -1 ("unchanged") afterwards; a broker that took the -1
//! literally gave the first member's revocation a deadline in the past, expired it at the
//! next tick and failed its commits with UNKNOWN_MEMBER_ID. Here c1 takes 1.5 s over each
//! revocation and commits from its revocation callback, as applications do.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use common::*;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::RDKafkaErrorCode;
use rdkafka::message::Message;
use rdkafka::{ClientContext, Offset, TopicPartitionList};
use skiff_e2e::Broker;

const TOPIC: &str = "kip848-commits";
const PARTITIONS: i32 = 4;

/// Who read which record, and every failed commit (none may fail).
#[derive(Default)]
struct Log {
    seen: Mutex<Vec<(String, String)>>,
    commit_errors: Mutex<Vec<String>>,
    /// Commits made from the revocation callback.
    revoke_commits: AtomicUsize,
}

/// An application that takes its time when partitions are revoked (flushing state, say)
/// and then commits its positions on them, as rebalance listeners do.
struct CommitOnRevoke {
    name: String,
    log: Arc<Log>,
}

impl ClientContext for CommitOnRevoke {}

impl ConsumerContext for CommitOnRevoke {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let Rebalance::Revoke(revoked) = rebalance else {
            return;
        };
        if revoked.count() == 0 {
            return;
        }
        // Longer than the broker's deadline tick, shorter than max.poll.interval.ms.
        std::thread::sleep(Duration::from_millis(1500));
        let Ok(positions) = consumer.position() else {
            return;
        };
        let mut commit = TopicPartitionList::new();
        for e in revoked.elements() {
            if let Some(Offset::Offset(o)) = positions
                .find_partition(e.topic(), e.partition())
                .map(|p| p.offset())
            {
                let _ = commit.add_partition_offset(e.topic(), e.partition(), Offset::Offset(o));
            }
        }
        if commit.count() == 0 {
            return;
        }
        self.log.revoke_commits.fetch_add(1, Ordering::SeqCst);
        if let Err(e) = consumer.commit(&commit, CommitMode::Sync) {
            self.log
                .commit_errors
                .lock()
                .unwrap()
                .push(format!("{} (on revoke): {e}", self.name));
        }
    }
}

fn member(b: &Broker, name: &str, log: Arc<Log>, stop: Arc<AtomicBool>) -> Result<JoinHandle<()>> {
    let mut c = base_config(b);
    c.set("group.id", "g-kip848-commits")
        .set("group.protocol", "consumer")
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", "100")
        .set("enable.partition.eof", "false");
    let consumer: BaseConsumer<CommitOnRevoke> = c.create_with_context(CommitOnRevoke {
        name: name.to_string(),
        log: log.clone(),
    })?;
    consumer.subscribe(&[TOPIC])?;
    let name = name.to_string();
    Ok(std::thread::spawn(move || {
        while !stop.load(Ordering::SeqCst) {
            if let Some(Ok(m)) = consumer.poll(Duration::from_millis(50)) {
                let value = String::from_utf8_lossy(m.payload().unwrap_or_default()).to_string();
                log.seen.lock().unwrap().push((name.clone(), value));
                // A commit racing a heartbeat that just bumped the member's epoch is
                // STALE_MEMBER_EPOCH (in Kafka too): retried with the epoch librdkafka learns
                // next. Any other failure (UNKNOWN_MEMBER_ID from an expired member) counts.
                let mut attempt = 0;
                while let Err(e) = consumer.commit_message(&m, CommitMode::Sync) {
                    attempt += 1;
                    let stale = e.rdkafka_error_code() == Some(RDKafkaErrorCode::StaleMemberEpoch);
                    if !stale || attempt > 20 {
                        log.commit_errors.lock().unwrap().push(format!(
                            "{name}: {}:{}: {e}",
                            m.partition(),
                            m.offset()
                        ));
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_consumer_protocol_members_commit_without_errors_while_partitions_move() -> Result<()> {
    let b = Broker::start_with(&[("group.consumer.heartbeat.interval.ms", "300")])?;
    create_topic(&admin(&b)?, TOPIC, PARTITIONS, &[]).await?;
    let p = producer(&b, &[])?;
    let log = Arc::new(Log::default());
    let stop = Arc::new(AtomicBool::new(false));
    let c1 = member(&b, "c1", log.clone(), stop.clone())?;
    // Records keep arriving all along, so c1 commits while it is revoking partitions.
    let mut produced = 0usize;
    let mut produce_some = |p: &rdkafka::producer::FutureProducer| {
        let round = produced;
        produced += 1;
        let p = p.clone();
        async move {
            for partition in 0..PARTITIONS {
                produce_n(&p, TOPIC, partition, 1, |_| {
                    (b"k".to_vec(), format!("{round}-{partition}").into_bytes())
                })
                .await?;
            }
            anyhow::Ok(())
        }
    };
    let started = Instant::now();
    let mut c2 = None;
    while started.elapsed() < Duration::from_secs(8) {
        produce_some(&p).await?;
        if c2.is_none() && started.elapsed() > Duration::from_secs(2) {
            c2 = Some(member(&b, "c2", log.clone(), stop.clone())?);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let expected = produced * PARTITIONS as usize;
    let deadline = Instant::now() + Duration::from_secs(30);
    let distinct = || {
        let seen = log.seen.lock().unwrap();
        seen.iter()
            .map(|(_, v)| v.clone())
            .collect::<BTreeSet<_>>()
            .len()
    };
    while distinct() < expected {
        if Instant::now() > deadline {
            stop.store(true, Ordering::SeqCst);
            eprintln!("{}", b.log_tail(40));
            bail!("read {} of {expected} records", distinct());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::SeqCst);
    c1.join().unwrap();
    if let Some(c2) = c2 {
        c2.join().unwrap();
    }
    let errors = log.commit_errors.lock().unwrap().clone();
    let logs = b.logs();
    assert!(
        errors.is_empty(),
        "failed commits: {errors:?}\n{}",
        b.log_tail(40)
    );
    assert!(
        !logs.contains("consumer group member expired"),
        "a live member was expired:\n{}",
        b.log_tail(40)
    );
    let readers: BTreeSet<String> = log
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|(n, _)| n.clone())
        .collect();
    assert_eq!(readers.len(), 2, "both members read records: {readers:?}");
    assert!(
        log.revoke_commits.load(Ordering::SeqCst) > 0,
        "c1 committed from its revocation callback"
    );
    Ok(())
}
