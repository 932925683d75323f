//! Share groups inside the group coordinator, over the in-memory host: what a heartbeat
//! writes is what a restart replays, expiry runs on the coordinator's tick, the listener
//! hears of departures and deletions, and the group types refuse each other's requests as
//! Kafka does.

use std::sync::{Arc, Mutex};

use kafka_protocol::messages::{ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse};
use kafka_protocol::ResponseError;
use skiff_config::BrokerConfig;
use skiff_log::ManualClock;

use super::group::{JoinOutcome, JoinRequest};
use super::{consumer, CommitEntry, Coordinator, OFFSETS_TOPIC};
use crate::host::ShareGroupListener;
use crate::memory::{MemGroupConfigs, MemStorage};
use crate::share_group::test_support::request;

fn start(storage: &Arc<MemStorage>, clock: &Arc<ManualClock>) -> Coordinator<MemStorage> {
    let config = BrokerConfig {
        offsets_topic_num_partitions: 3,
        ..BrokerConfig::default()
    };
    let configs = Arc::new(MemGroupConfigs::default());
    crate::host_tests::start_groups_at(storage, configs, &config, clock.clone())
}

fn setup() -> (Arc<MemStorage>, Arc<ManualClock>, Coordinator<MemStorage>) {
    let storage = Arc::new(MemStorage::default());
    storage.add_topic("t", 4);
    let clock = Arc::new(ManualClock::new(1_000_000));
    let c = start(&storage, &clock);
    (storage, clock, c)
}

fn beat(
    c: &Coordinator<MemStorage>,
    req: ShareGroupHeartbeatRequest,
) -> ShareGroupHeartbeatResponse {
    c.share_heartbeat(&req, "client", "/127.0.0.1").unwrap()
}

fn partitions(r: &ShareGroupHeartbeatResponse) -> Vec<i32> {
    let mut v: Vec<i32> = r
        .assignment
        .iter()
        .flat_map(|a| &a.topic_partitions)
        .flat_map(|tp| tp.partitions.iter().copied())
        .collect();
    v.sort();
    v
}

/// Records appended to the group's `__consumer_offsets` partition, as (type, tombstone).
fn written(storage: &MemStorage, c: &Coordinator<MemStorage>, group: &str) -> Vec<(i16, bool)> {
    let p = storage
        .partition(OFFSETS_TOPIC, c.partition_for(group))
        .unwrap();
    let mut out = Vec::new();
    for batch in p.batches() {
        for (_, bytes) in skiff_records::Batches::new(&batch).flatten() {
            for r in skiff_records::records(bytes, 1 << 20).unwrap() {
                let k = r.key.unwrap();
                out.push((i16::from_be_bytes([k[0], k[1]]), r.value.is_none()));
            }
        }
    }
    out
}

/// Writes are asynchronous (the coordinator thread): a tick pass runs after what was queued.
fn settle(c: &Coordinator<MemStorage>) {
    c.tick_now();
}

#[derive(Default)]
struct Heard(Mutex<Vec<String>>);

impl ShareGroupListener for Heard {
    fn member_removed(&self, group_id: &str, member_id: &str) {
        self.0
            .lock()
            .unwrap()
            .push(format!("removed {group_id}/{member_id}"));
    }
    fn group_deleted(&self, group_id: &str) {
        self.0.lock().unwrap().push(format!("deleted {group_id}"));
    }
}

#[test]
fn a_restart_keeps_the_share_group_its_members_epochs_and_assignments() {
    let (storage, clock, c) = setup();
    let a = beat(&c, request("sg", "a", 0, Some(&["t"])));
    assert_eq!(a.error_code, 0, "{:?}", a.error_message);
    assert_eq!(partitions(&a), vec![0, 1, 2, 3]);
    clock.advance(2_000);
    let b = beat(&c, request("sg", "b", 0, Some(&["t"])));
    assert_eq!(b.error_code, 0, "{:?}", b.error_message);
    let a = beat(&c, request("sg", "a", a.member_epoch, None));
    assert_eq!(a.error_code, 0, "{:?}", a.error_message);
    assert_eq!(partitions(&a).len() + partitions(&b).len(), 4);
    settle(&c);
    assert!(written(&storage, &c, "sg").contains(&(10, false)));
    c.stop();

    let c = start(&storage, &clock);
    assert!(c.is_share_group("sg"));
    assert!(c.share_member_exists("sg", "a") && c.share_member_exists("sg", "b"));
    let d = c.share_describe("sg").unwrap();
    assert_eq!(d.error_code, 0);
    assert_eq!(d.group_state.as_str(), "Stable");
    assert_eq!(d.members.len(), 2);
    // The members carry on at their epochs, with no rebalance.
    let again = beat(&c, request("sg", "a", a.member_epoch, None));
    assert_eq!(again.error_code, 0, "{:?}", again.error_message);
    assert_eq!(again.member_epoch, a.member_epoch);
    assert!(
        again.assignment.is_none(),
        "unchanged assignment is not resent"
    );
    c.stop();
}

#[test]
fn a_silent_member_is_expired_on_the_tick_written_and_reported() {
    let (storage, clock, c) = setup();
    let heard = Arc::new(Heard::default());
    c.set_share_listener(heard.clone());
    beat(&c, request("sg", "a", 0, Some(&["t"])));
    let b = beat(&c, request("sg", "b", 0, Some(&["t"])));
    settle(&c);
    clock.advance(30_000);
    beat(&c, request("sg", "b", b.member_epoch, None));
    clock.advance(20_000); // a: 50 s silent, past the 45 s session; b: 20 s.
    c.tick_now();
    assert!(!c.share_member_exists("sg", "a"));
    assert!(c.share_member_exists("sg", "b"));
    assert_eq!(*heard.0.lock().unwrap(), vec!["removed sg/a".to_string()]);
    // a's current assignment, target and metadata tombstoned, then the new epoch.
    let w = written(&storage, &c, "sg");
    let tail = &w[w.len() - 4..];
    assert_eq!(tail, &[(14, true), (13, true), (10, true), (11, false)]);
    // And it stays gone after a restart.
    c.stop();
    let c = start(&storage, &clock);
    assert!(!c.share_member_exists("sg", "a"));
    assert!(c.share_member_exists("sg", "b"));
    c.stop();
}

#[tokio::test]
async fn leaving_and_deleting_tell_the_listener_and_deletion_tombstones_the_group() {
    let (storage, clock, c) = setup();
    let heard = Arc::new(Heard::default());
    c.set_share_listener(heard.clone());
    beat(&c, request("sg", "a", 0, Some(&["t"])));
    assert_eq!(
        c.delete_groups(&["sg".to_string()]).await,
        vec![Err(ResponseError::NonEmptyGroup)]
    );
    let left = beat(&c, request("sg", "a", -1, None));
    assert_eq!((left.error_code, left.member_epoch), (0, -1));
    let listed = c.list().unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|l| (
                l.id.as_str(),
                l.protocol_type.as_str(),
                l.state,
                l.group_type
            ))
            .collect::<Vec<_>>(),
        vec![("sg", "share", "Empty", "share")]
    );
    assert_eq!(c.delete_groups(&["sg".to_string()]).await, vec![Ok(())]);
    assert!(!c.is_share_group("sg"));
    assert_eq!(
        *heard.0.lock().unwrap(),
        vec!["removed sg/a".to_string(), "deleted sg".to_string()]
    );
    let w = written(&storage, &c, "sg");
    assert_eq!(&w[w.len() - 3..], &[(12, true), (15, true), (11, true)]);
    c.stop();
    let c = start(&storage, &clock);
    assert!(!c.is_share_group("sg"));
    assert!(c.list().unwrap().is_empty());
    c.stop();
}

fn join_request() -> JoinRequest {
    JoinRequest {
        member_id: String::new(),
        group_instance_id: None,
        client_id: "c".into(),
        client_host: "/h".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 10_000,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), Default::default())],
        require_known_member_id: false,
        supports_skip_assignment: false,
    }
}

#[tokio::test]
async fn share_and_other_groups_refuse_each_others_ids_as_kafka_does() {
    let (_storage, _clock, c) = setup();
    beat(&c, request("sg", "a", 0, Some(&["t"])));

    // Classic requests to a share group's id.
    let Ok(JoinOutcome::Ready(joined)) = c.join("sg", join_request()) else {
        panic!("a join to a share group's id is answered at once")
    };
    assert_eq!(
        (joined.error, joined.member_id.as_str()),
        (ResponseError::InconsistentGroupProtocol.code(), "")
    );
    let mut bad_timeout = join_request();
    bad_timeout.session_timeout_ms = 1;
    assert_eq!(
        c.join("sg", bad_timeout).err(),
        Some(ResponseError::InvalidSessionTimeout)
    );
    assert_eq!(
        c.heartbeat("sg", "a", None, 1).err(),
        Some(ResponseError::UnknownMemberId)
    );
    assert_eq!(
        c.sync("sg", "a", None, 1, None, None, vec![]).err(),
        Some(ResponseError::UnknownMemberId)
    );
    let commit = CommitEntry {
        topic: "t".into(),
        partition: 0,
        offset: 1,
        leader_epoch: -1,
        metadata: String::new(),
        expire_timestamp: None,
    };
    assert_eq!(
        c.commit("sg", "", None, -1, vec![commit]).await.err(),
        Some(ResponseError::GroupIdNotFound)
    );
    assert_eq!(
        c.check_txn_commit("sg", "", None, -1, []).err(),
        Some(ResponseError::GroupIdNotFound)
    );
    let fetched = c.fetch_offsets("sg", Some(vec![("t".into(), 0)])).unwrap();
    assert!(fetched[0].2.is_none());
    assert_eq!(
        c.delete_offsets("sg", &[("t".into(), 0)]).await.err(),
        Some(ResponseError::GroupIdNotFound)
    );
    let hb848 = consumer::Heartbeat {
        member_id: "m".into(),
        member_epoch: 0,
        rebalance_timeout_ms: 10_000,
        subscribed: Some(vec!["t".into()]),
        ..consumer::Heartbeat::default()
    };
    assert_eq!(
        c.consumer_heartbeat("sg", hb848, |_| Some(4), Default::default)
            .err(),
        Some(ResponseError::GroupIdNotFound)
    );
    assert!(c.with_group("sg", |g| g.is_none()).unwrap());
    // The share group is untouched by all of that.
    assert!(c.share_member_exists("sg", "a"));

    // A share heartbeat to a classic (or consumer) group's id.
    c.commit("classic", "", None, -1, vec![]).await.unwrap();
    let _ = c.join("classic", join_request()).unwrap();
    let r = beat(&c, request("classic", "x", 0, Some(&["t"])));
    assert_eq!(r.error_code, ResponseError::GroupIdNotFound.code());
    assert!(!c.is_share_group("classic"));
    let d = c.share_describe("classic").unwrap();
    assert_eq!(d.error_code, ResponseError::GroupIdNotFound.code());
    c.stop();
}
