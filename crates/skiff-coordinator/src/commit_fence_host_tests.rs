//! KIP-1251 through the coordinator over the in-memory host: a consumer group member's commit
//! at the epoch before its last rebalance is written when it names only partitions the member
//! kept, and refused whole (nothing written) when it names one it gave up; the assignment
//! epochs behind that survive a restart.

use std::collections::BTreeSet;
use std::sync::Arc;

use kafka_protocol::ResponseError;
use skiff_config::BrokerConfig;
use skiff_log::ManualClock;

use crate::groups::consumer::{Assignment, Heartbeat, HeartbeatResult};
use crate::groups::{CommitEntry, Coordinator, OffsetCommit};
use crate::memory::{MemGroupConfigs, MemStorage};

fn start(storage: &Arc<MemStorage>, clock: &Arc<ManualClock>) -> Coordinator<MemStorage> {
    let config = BrokerConfig {
        offsets_topic_num_partitions: 1,
        ..BrokerConfig::default()
    };
    let configs = Arc::new(MemGroupConfigs::default());
    crate::host_tests::start_groups_at(storage, configs, &config, clock.clone())
}

fn heartbeat(
    c: &Coordinator<MemStorage>,
    id: &str,
    epoch: i32,
    owned: &Assignment,
) -> HeartbeatResult {
    let hb = Heartbeat {
        member_id: id.into(),
        member_epoch: epoch,
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        rebalance_timeout_ms: 60_000,
        subscribed: (epoch == 0).then(|| vec!["t".to_string()]),
        owned: Some(owned.clone()),
        ..Heartbeat::default()
    };
    let partitions = |t: &str| (t == "t").then_some(4);
    c.consumer_heartbeat("g", hb, partitions, BTreeSet::new)
        .unwrap()
}

fn entries(partitions: &BTreeSet<i32>, offset: i64) -> Vec<CommitEntry> {
    partitions
        .iter()
        .map(|p| CommitEntry {
            topic: "t".into(),
            partition: *p,
            offset,
            leader_epoch: 0,
            metadata: String::new(),
            expire_timestamp: None,
        })
        .collect()
}

fn committed(c: &Coordinator<MemStorage>) -> Vec<Option<i64>> {
    let rows = c.fetch_offsets("g", None).unwrap();
    (0..4)
        .map(|p| {
            rows.iter()
                .find(|r| r.0 == "t" && r.1 == p)
                .and_then(|r| r.2.as_ref().map(|c| c.offset))
        })
        .collect()
}

fn partitions(a: &HeartbeatResult) -> BTreeSet<i32> {
    partitions_of(a.assignment.as_ref().unwrap())
}

fn partitions_of(a: &Assignment) -> BTreeSet<i32> {
    a["t"].clone()
}

#[tokio::test]
async fn a_commit_at_the_epoch_before_writes_the_kept_partitions_across_a_restart() {
    let storage = Arc::new(MemStorage::default());
    storage.add_topic("t", 4);
    let clock = Arc::new(ManualClock::new(1_000_000));
    let c = start(&storage, &clock);

    let a = heartbeat(&c, "a", 0, &Assignment::new());
    let all = a.assignment.clone().unwrap();
    let first = a.member_epoch;
    let b = heartbeat(&c, "b", 0, &Assignment::new());
    let kept = heartbeat(&c, "a", first, &all).assignment.unwrap();
    let second = heartbeat(&c, "a", first, &kept).member_epoch;
    assert!(second > first);
    let b = heartbeat(&c, "b", b.member_epoch, &Assignment::new());
    let given_up = partitions(&b);
    assert_eq!(given_up.len(), 2);

    let at = |epoch, version| OffsetCommit {
        group_id: "g",
        member_id: "a",
        instance_id: None,
        generation: epoch,
        version,
    };
    let all: BTreeSet<i32> = (0..4).collect();
    let kept = partitions_of(&kept);
    let only_kept = |offset| -> Vec<Option<i64>> {
        (0..4)
            .map(|p| kept.contains(&p).then_some(offset))
            .collect()
    };
    assert_eq!(
        c.commit_offsets(at(first, 9), entries(&all, 10)).await,
        Err(ResponseError::StaleMemberEpoch),
        "a partition given up refuses the whole commit"
    );
    assert_eq!(committed(&c), vec![None; 4], "nothing was written");
    c.commit_offsets(at(first, 9), entries(&kept, 10))
        .await
        .unwrap();
    assert_eq!(committed(&c), only_kept(10));
    assert_eq!(
        c.commit_offsets(at(second, 8), entries(&kept, 11)).await,
        Err(ResponseError::UnsupportedVersion)
    );
    c.stop();

    // After a restart the kept partitions still date from the first epoch.
    let c = start(&storage, &clock);
    assert_eq!(
        c.commit_offsets(at(first, 9), entries(&given_up, 20)).await,
        Err(ResponseError::StaleMemberEpoch)
    );
    c.commit_offsets(at(first, 9), entries(&kept, 20))
        .await
        .unwrap();
    assert_eq!(committed(&c), only_kept(20));
    c.commit_offsets(at(second, 10), entries(&all, 30))
        .await
        .unwrap();
    assert_eq!(
        committed(&c),
        vec![Some(30); 4],
        "the current epoch writes anything"
    );
    c.stop();
}
