//! Consumer groups end to end: librdkafka consumers with `subscribe()` against the real
//! broker — rebalances on join, leave and session expiry with every record read exactly once,
//! commits that survive a restart and a kill -9, cooperative-sticky, static membership, and
//! the records in `__consumer_offsets` decoded with Kafka's schemas.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use common::*;
use kafka_protocol::messages::{
    join_group_request::JoinGroupRequestProtocol, ApiKey, GroupId, JoinGroupRequest,
    JoinGroupResponse, SyncGroupRequest, SyncGroupResponse,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::message::Message;
use rdkafka::{ClientContext, Offset, TopicPartitionList};
use skiff_e2e::raw::RawClient;
use skiff_e2e::Broker;

const BROKER_PROPS: &[(&str, &str)] = &[("group.initial.rebalance.delay.ms", "300")];

fn group_consumer(
    b: &Broker,
    group: &str,
    extra: &[(&str, &str)],
) -> Result<BaseConsumer<Counting>> {
    let mut c = base_config(b);
    c.set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("session.timeout.ms", "6000")
        .set("heartbeat.interval.ms", "300")
        .set("fetch.wait.max.ms", "100")
        .set("enable.partition.eof", "false");
    for (k, v) in extra {
        c.set(*k, *v);
    }
    c.create_with_context(Counting::default())
        .context("creating the group consumer")
}

/// Counts rebalance callbacks so tests can tell whether a member saw a rebalance.
#[derive(Default)]
struct Counting {
    rebalances: AtomicUsize,
}
impl ClientContext for Counting {}
impl ConsumerContext for Counting {
    fn post_rebalance(&self, _c: &BaseConsumer<Self>, _r: &Rebalance<'_>) {
        self.rebalances.fetch_add(1, Ordering::SeqCst);
    }
}

type Seen = Arc<Mutex<Vec<(i32, i64, String)>>>;

/// A consumer on its own thread: records each message with the member's name and commits
/// it synchronously before polling again, so a revoked partition has nothing in flight.
struct Member {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<()>>>,
}

impl Member {
    fn spawn(
        b: &Broker,
        group: &str,
        topic: &str,
        name: &str,
        seen: Seen,
        extra: &[(&str, &str)],
    ) -> Result<Member> {
        Self::from_consumer(group_consumer(b, group, extra)?, topic, name, seen)
    }

    fn from_consumer(
        consumer: BaseConsumer<Counting>,
        topic: &str,
        name: &str,
        seen: Seen,
    ) -> Result<Member> {
        consumer.subscribe(&[topic])?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let name = name.to_string();
        let handle = std::thread::spawn(move || -> Result<()> {
            while !flag.load(Ordering::SeqCst) {
                match consumer.poll(Duration::from_millis(100)) {
                    None => {}
                    Some(Err(e)) => eprintln!("{name}: poll error {e}"),
                    Some(Ok(m)) => {
                        seen.lock()
                            .unwrap()
                            .push((m.partition(), m.offset(), name.clone()));
                        // A commit during CompletingRebalance gets REBALANCE_IN_PROGRESS (as
                        // in Kafka; cooperative members keep consuming then): retry briefly.
                        let mut attempt = 0;
                        while let Err(e) = consumer.commit_message(&m, CommitMode::Sync) {
                            attempt += 1;
                            if attempt > 100 {
                                bail!(
                                    "{name}: commit of {}:{} failed: {e}",
                                    m.partition(),
                                    m.offset()
                                );
                            }
                            std::thread::sleep(Duration::from_millis(50));
                        }
                    }
                }
            }
            // Dropping the consumer closes it: LeaveGroup, as an application would.
            drop(consumer);
            Ok(())
        });
        Ok(Member {
            stop,
            handle: Some(handle),
        })
    }

    fn leave(mut self) -> Result<()> {
        self.stop.store(true, Ordering::SeqCst);
        match self.handle.take() {
            Some(h) => h
                .join()
                .map_err(|_| anyhow::anyhow!("consumer thread panicked"))?,
            None => Ok(()),
        }
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

async fn produce_round(b: &Broker, topic: &str, round: usize, per_partition: usize) -> Result<()> {
    let p = producer(b, &[])?;
    for partition in 0..6 {
        produce_n(&p, topic, partition, per_partition, |i| {
            (
                format!("k{round}-{i}").into_bytes(),
                format!("v{round}-{partition}-{i}").into_bytes(),
            )
        })
        .await?;
    }
    Ok(())
}

fn wait_seen(seen: &Seen, n: usize, what: &str) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = seen.lock().unwrap().len();
        if got >= n {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{what}: consumed {got} of {n} records");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A member that joins through the raw protocol, syncs, and then never heartbeats: the
/// broker must expire it after its session timeout (a killed process, as the broker sees it).
fn join_and_die(b: &Broker, group: &str, topic: &str) -> Result<()> {
    let mut raw = RawClient::connect(&b.bootstrap())?;
    // ConsumerProtocolSubscription v0: version, topics, user data (null).
    let mut sub = vec![0u8, 0, 0, 0, 0, 1];
    sub.extend_from_slice(&(topic.len() as i16).to_be_bytes());
    sub.extend_from_slice(topic.as_bytes());
    sub.extend_from_slice(&(-1i32).to_be_bytes());
    let join = |member: &str| {
        JoinGroupRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
            .with_session_timeout_ms(6000)
            .with_rebalance_timeout_ms(30_000)
            .with_member_id(StrBytes::from_string(member.to_string()))
            .with_protocol_type(StrBytes::from_static_str("consumer"))
            .with_protocols(vec![JoinGroupRequestProtocol::default()
                .with_name(StrBytes::from_static_str("range"))
                .with_metadata(Bytes::from(sub.clone()))])
    };
    let first: JoinGroupResponse = raw.call(ApiKey::JoinGroup, 5, &join(""))?;
    if first.error_code != 79 {
        bail!("expected MEMBER_ID_REQUIRED, got {}", first.error_code);
    }
    let joined: JoinGroupResponse = raw.call(ApiKey::JoinGroup, 5, &join(&first.member_id))?;
    if joined.error_code != 0 {
        bail!("raw join failed: {}", joined.error_code);
    }
    let synced: SyncGroupResponse = raw.call(
        ApiKey::SyncGroup,
        3,
        &SyncGroupRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
            .with_generation_id(joined.generation_id)
            .with_member_id(joined.member_id.clone()),
    )?;
    if synced.error_code != 0 {
        bail!("raw sync failed: {}", synced.error_code);
    }
    if synced.assignment.is_empty() {
        bail!("the dying member got no assignment; the test would not prove a takeover");
    }
    Ok(())
}

fn assert_exactly_once(seen: &Seen, expected: usize) -> Result<()> {
    let seen = seen.lock().unwrap();
    let mut by_key: BTreeMap<(i32, i64), Vec<String>> = BTreeMap::new();
    for (p, o, who) in seen.iter() {
        by_key.entry((*p, *o)).or_default().push(who.clone());
    }
    let dups: Vec<_> = by_key.iter().filter(|(_, w)| w.len() > 1).take(5).collect();
    if !dups.is_empty() {
        bail!("records read more than once: {dups:?}");
    }
    if by_key.len() != expected {
        bail!(
            "read {} distinct records, expected {expected}",
            by_key.len()
        );
    }
    let readers: BTreeSet<&String> = seen.iter().map(|(_, _, w)| w).collect();
    eprintln!(
        "records per reader: {:?}",
        readers
            .iter()
            .map(|r| (r, seen.iter().filter(|s| &&s.2 == r).count()))
            .collect::<Vec<_>>()
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_consumers_rebalance_on_join_leave_and_kill_reading_each_record_once() -> Result<()> {
    let b = Broker::start_with(BROKER_PROPS)?;
    let topic = "orders";
    create_topic(&admin(&b)?, topic, 6, &[]).await?;
    let group = "g-three";
    let seen: Seen = Arc::default();
    let per = 20;
    let mut total = 0;

    produce_round(&b, topic, 0, per).await?;
    total += 6 * per;
    let c1 = Member::spawn(&b, group, topic, "c1", seen.clone(), &[])?;
    wait_seen(&seen, total, "c1 alone")?;

    let c2 = Member::spawn(&b, group, topic, "c2", seen.clone(), &[])?;
    std::thread::sleep(Duration::from_millis(1500));
    produce_round(&b, topic, 1, per).await?;
    total += 6 * per;
    let c3 = Member::spawn(&b, group, topic, "c3", seen.clone(), &[])?;
    wait_seen(&seen, total, "c1+c2 joined by c3")?;
    std::thread::sleep(Duration::from_millis(1500));
    produce_round(&b, topic, 2, per).await?;
    total += 6 * per;
    wait_seen(&seen, total, "three members")?;
    {
        let s = seen.lock().unwrap();
        let readers: BTreeSet<&str> = s[s.len() - 6 * per..]
            .iter()
            .map(|r| r.2.as_str())
            .collect();
        assert_eq!(
            readers.len(),
            3,
            "all three members read part of round 2: {readers:?}"
        );
    }

    // A member that joins and dies: its partitions come back after the session timeout.
    let group_owned = group.to_string();
    let bootstrap_broker = &b;
    join_and_die(bootstrap_broker, &group_owned, topic)?;
    produce_round(&b, topic, 3, per).await?;
    total += 6 * per;
    wait_seen(&seen, total, "after the dead member's session expired")?;

    // c2 leaves cleanly.
    c2.leave()?;
    produce_round(&b, topic, 4, per).await?;
    total += 6 * per;
    wait_seen(&seen, total, "after c2 left")?;
    std::thread::sleep(Duration::from_millis(500));
    c1.leave()?;
    c3.leave()?;
    assert_exactly_once(&seen, total)?;
    Ok(())
}

fn committed(c: &BaseConsumer<Counting>, topic: &str, partitions: i32) -> Result<Vec<i64>> {
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition(topic, p);
    }
    let got = c.committed_offsets(tpl, OP_TIMEOUT)?;
    Ok((0..partitions)
        .map(|p| match got.find_partition(topic, p).map(|e| e.offset()) {
            Some(Offset::Offset(o)) => o,
            _ => -1,
        })
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_survive_restart_and_kill9() -> Result<()> {
    let mut b = Broker::start_with(BROKER_PROPS)?;
    create_topic(&admin(&b)?, "t", 2, &[]).await?;
    let c = group_consumer(&b, "g-durable", &[])?;
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset("t", 0, Offset::Offset(41))?;
    tpl.add_partition_offset("t", 1, Offset::Offset(7))?;
    c.commit(&tpl, CommitMode::Sync)?;
    assert_eq!(committed(&c, "t", 2)?, vec![41, 7]);
    drop(c);

    b.restart()?;
    let c = group_consumer(&b, "g-durable", &[])?;
    assert_eq!(committed(&c, "t", 2)?, vec![41, 7], "after a clean restart");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset("t", 0, Offset::Offset(99))?;
    c.commit(&tpl, CommitMode::Sync)?;
    drop(c);

    b.kill9()?;
    b.restart()?;
    let c = group_consumer(&b, "g-durable", &[])?;
    assert_eq!(
        committed(&c, "t", 2)?,
        vec![99, 7],
        "an acknowledged commit survives kill -9"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_resumes_from_its_commits_after_restart() -> Result<()> {
    let mut b = Broker::start_with(BROKER_PROPS)?;
    create_topic(&admin(&b)?, "r", 6, &[]).await?;
    produce_round(&b, "r", 0, 10).await?;
    let seen: Seen = Arc::default();
    let m = Member::spawn(&b, "g-resume", "r", "first", seen.clone(), &[])?;
    wait_seen(&seen, 60, "first run")?;
    m.leave()?;
    b.restart()?;
    produce_round(&b, "r", 1, 10).await?;
    let m = Member::spawn(&b, "g-resume", "r", "second", seen.clone(), &[])?;
    wait_seen(&seen, 120, "second run")?;
    std::thread::sleep(Duration::from_millis(500));
    m.leave()?;
    assert_exactly_once(&seen, 120)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cooperative_sticky_members_share_and_keep_partitions() -> Result<()> {
    let b = Broker::start_with(BROKER_PROPS)?;
    create_topic(&admin(&b)?, "coop", 6, &[]).await?;
    produce_round(&b, "coop", 0, 10).await?;
    let seen: Seen = Arc::default();
    let coop = [("partition.assignment.strategy", "cooperative-sticky")];
    let c1 = Member::spawn(&b, "g-coop", "coop", "c1", seen.clone(), &coop)?;
    wait_seen(&seen, 60, "c1 alone")?;
    let c2 = Member::spawn(&b, "g-coop", "coop", "c2", seen.clone(), &coop)?;
    std::thread::sleep(Duration::from_secs(3));
    produce_round(&b, "coop", 1, 10).await?;
    wait_seen(&seen, 120, "two cooperative members")?;
    {
        let s = seen.lock().unwrap();
        let readers: BTreeSet<&str> = s[60..].iter().map(|r| r.2.as_str()).collect();
        assert_eq!(
            readers.len(),
            2,
            "both cooperative members read round 1: {readers:?}"
        );
    }
    c2.leave()?;
    produce_round(&b, "coop", 2, 10).await?;
    if let Err(e) = wait_seen(&seen, 180, "after c2 left") {
        eprintln!("{}", b.log_tail(60));
        return Err(e);
    }
    std::thread::sleep(Duration::from_millis(500));
    c1.leave()?;
    assert_exactly_once(&seen, 180)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_member_restart_does_not_rebalance_and_duplicates_are_fenced() -> Result<()> {
    let b = Broker::start_with(BROKER_PROPS)?;
    create_topic(&admin(&b)?, "st", 2, &[]).await?;
    let props = |id: &'static str| [("group.instance.id", id), ("session.timeout.ms", "10000")];
    let a = group_consumer(&b, "g-static", &props("a"))?;
    let other = group_consumer(&b, "g-static", &props("b"))?;
    a.subscribe(&["st"])?;
    other.subscribe(&["st"])?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while a.assignment()?.count() + other.assignment()?.count() < 2
        || a.assignment()?.count() == 0
        || other.assignment()?.count() == 0
    {
        if Instant::now() > deadline {
            bail!("static members never got both partitions");
        }
        a.poll(Duration::from_millis(50));
        other.poll(Duration::from_millis(50));
    }
    let before = other.context().rebalances.load(Ordering::SeqCst);
    // A static member that closes does not leave the group (librdkafka sends no LeaveGroup
    // for static members); its replacement takes its place without a rebalance.
    drop(a);
    let a2 = group_consumer(&b, "g-static", &props("a"))?;
    a2.subscribe(&["st"])?;
    let deadline = Instant::now() + Duration::from_secs(20);
    while a2.assignment()?.count() == 0 {
        if Instant::now() > deadline {
            bail!("restarted static member got no assignment");
        }
        a2.poll(Duration::from_millis(50));
        other.poll(Duration::from_millis(50));
    }
    for _ in 0..20 {
        other.poll(Duration::from_millis(50));
        a2.poll(Duration::from_millis(50));
    }
    assert_eq!(
        other.context().rebalances.load(Ordering::SeqCst),
        before,
        "the other static member saw no rebalance"
    );
    let groups = other.fetch_group_list(Some("g-static"), OP_TIMEOUT)?;
    let g = &groups.groups()[0];
    assert_eq!(g.state(), "Stable");
    assert_eq!(g.members().len(), 2);

    // A second process with the same instance id fences the first one.
    let a3 = group_consumer(&b, "g-static", &props("a"))?;
    a3.subscribe(&["st"])?;
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut fenced = false;
    while !fenced && Instant::now() < deadline {
        a3.poll(Duration::from_millis(50));
        other.poll(Duration::from_millis(50));
        if let Some(Err(e)) = a2.poll(Duration::from_millis(50)) {
            fenced = e.to_string().to_lowercase().contains("fenced");
        }
    }
    assert!(fenced, "the older static member was fenced");
    Ok(())
}

/// The commits are in `__consumer_offsets` in Kafka's key/value schema (decoded here
/// independently of the broker's codec).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_are_written_in_kafka_record_format() -> Result<()> {
    let b = Broker::start_with(BROKER_PROPS)?;
    create_topic(&admin(&b)?, "fmt", 1, &[]).await?;
    let c = group_consumer(&b, "burrow-readable", &[])?;
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset("fmt", 0, Offset::Offset(12))?;
    c.commit(&tpl, CommitMode::Sync)?;
    // Java's "burrow-readable".hashCode() placed on 50 partitions.
    let h = "burrow-readable"
        .encode_utf16()
        .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)));
    let partition = if h == i32::MIN { 0 } else { h.abs() % 50 };
    let mut raw = RawClient::connect(&b.bootstrap())?;
    let records = raw.read_all("__consumer_offsets", partition, 0)?;
    let rec = records
        .iter()
        .find(|r| r.key.as_deref().is_some_and(|k| k.starts_with(&[0, 1])))
        .context("no offset commit record in the group's partition")?;
    let key = rec.key.as_deref().unwrap();
    let mut want_key = vec![0u8, 1, 0, 15];
    want_key.extend_from_slice(b"burrow-readable");
    want_key.extend_from_slice(&[0, 3]);
    want_key.extend_from_slice(b"fmt");
    want_key.extend_from_slice(&0i32.to_be_bytes());
    assert_eq!(key, &want_key[..]);
    let value = rec.value.as_deref().context("offset record has a value")?;
    assert_eq!(&value[..2], &[0, 3], "OffsetCommitValue v3");
    assert_eq!(i64::from_be_bytes(value[2..10].try_into()?), 12);
    Ok(())
}

fn partition_of(group: &str) -> i32 {
    let h = group
        .encode_utf16()
        .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)));
    if h == i32::MIN {
        0
    } else {
        h.abs() % 50
    }
}

/// Generation, members and assignments are replayed from `__consumer_offsets` at start;
/// DeleteGroups leaves tombstones for the group's metadata and offsets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generation_survives_restart_and_delete_writes_tombstones() -> Result<()> {
    use kafka_protocol::messages::{
        sync_group_request::SyncGroupRequestAssignment, DeleteGroupsRequest, DeleteGroupsResponse,
        HeartbeatRequest, HeartbeatResponse, LeaveGroupRequest, LeaveGroupResponse,
    };
    let mut b = Broker::start_with(&[("group.initial.rebalance.delay.ms", "0")])?;
    let group = "g-replayed";
    let gid = || GroupId(StrBytes::from_static_str("g-replayed"));
    let mut raw = RawClient::connect(&b.bootstrap())?;
    let join = |member: &StrBytes| {
        JoinGroupRequest::default()
            .with_group_id(gid())
            .with_session_timeout_ms(10_000)
            .with_rebalance_timeout_ms(10_000)
            .with_member_id(member.clone())
            .with_protocol_type(StrBytes::from_static_str("consumer"))
            .with_protocols(vec![JoinGroupRequestProtocol::default()
                .with_name(StrBytes::from_static_str("range"))
                .with_metadata(Bytes::from_static(&[
                    0, 0, 0, 0, 0, 0, 255, 255, 255, 255,
                ]))])
    };
    let first: JoinGroupResponse = raw.call(ApiKey::JoinGroup, 5, &join(&StrBytes::default()))?;
    let joined: JoinGroupResponse = raw.call(ApiKey::JoinGroup, 5, &join(&first.member_id))?;
    assert_eq!(joined.error_code, 0);
    let member = joined.member_id.clone();
    let sync = SyncGroupRequest::default()
        .with_group_id(gid())
        .with_generation_id(joined.generation_id)
        .with_member_id(member.clone())
        .with_assignments(vec![SyncGroupRequestAssignment::default()
            .with_member_id(member.clone())
            .with_assignment(Bytes::from_static(b"assigned"))]);
    let synced: SyncGroupResponse = raw.call(ApiKey::SyncGroup, 3, &sync)?;
    assert_eq!(
        (synced.error_code, &synced.assignment[..]),
        (0, &b"assigned"[..])
    );
    drop(raw);

    b.restart()?;
    let mut raw = RawClient::connect(&b.bootstrap())?;
    let hb = HeartbeatRequest::default()
        .with_group_id(gid())
        .with_generation_id(joined.generation_id)
        .with_member_id(member.clone());
    let deadline = Instant::now() + Duration::from_secs(5);
    let code = loop {
        let r: HeartbeatResponse = raw.call(ApiKey::Heartbeat, 3, &hb)?;
        // 14: COORDINATOR_LOAD_IN_PROGRESS while the topic is replayed.
        if r.error_code != 14 || Instant::now() > deadline {
            break r.error_code;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(code, 0, "the member and its generation were replayed");
    let again: SyncGroupResponse =
        raw.call(ApiKey::SyncGroup, 3, &sync.clone().with_assignments(vec![]))?;
    assert_eq!(
        (again.error_code, &again.assignment[..]),
        (0, &b"assigned"[..])
    );

    let left: LeaveGroupResponse = raw.call(
        ApiKey::LeaveGroup,
        1,
        &LeaveGroupRequest::default()
            .with_group_id(gid())
            .with_member_id(member.clone()),
    )?;
    assert_eq!(left.error_code, 0);
    let c = group_consumer(&b, group, &[])?;
    let mut tpl = TopicPartitionList::new();
    create_topic(&admin(&b)?, "gone", 1, &[]).await?;
    tpl.add_partition_offset("gone", 0, Offset::Offset(3))?;
    c.commit(&tpl, CommitMode::Sync)?;
    drop(c);
    let deleted: DeleteGroupsResponse = raw.call(
        ApiKey::DeleteGroups,
        2,
        &DeleteGroupsRequest::default().with_groups_names(vec![gid()]),
    )?;
    assert_eq!(deleted.results[0].error_code, 0);
    let records = raw.read_all("__consumer_offsets", partition_of(group), 0)?;
    let last_group = records
        .iter()
        .rev()
        .find(|r| r.key.as_deref().is_some_and(|k| k.starts_with(&[0, 2])))
        .context("group metadata records")?;
    assert_eq!(last_group.value, None, "group metadata tombstone");
    let last_offset = records
        .iter()
        .rev()
        .find(|r| r.key.as_deref().is_some_and(|k| k.starts_with(&[0, 1])))
        .context("offset records")?;
    assert_eq!(last_offset.value, None, "offset tombstone");
    Ok(())
}

/// KIP-848: librdkafka with `group.protocol=consumer` — the broker computes the assignment
/// and moves partitions between members only after they are released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_protocol_group_shares_partitions_and_rebalances() -> Result<()> {
    consumer_protocol_group("uniform").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_protocol_group_with_the_range_assignor() -> Result<()> {
    consumer_protocol_group("range").await
}

async fn consumer_protocol_group(assignor: &str) -> Result<()> {
    let b = Broker::start_with(&[("group.consumer.heartbeat.interval.ms", "500")])?;
    create_topic(&admin(&b)?, "kip848", 6, &[]).await?;
    produce_round(&b, "kip848", 0, 10).await?;
    let seen: Seen = Arc::default();
    // librdkafka rejects the classic-only session/heartbeat settings with this protocol.
    let m = |name: &str| -> Result<Member> {
        let mut c = base_config(&b);
        c.set("group.id", "g-kip848")
            .set("group.protocol", "consumer")
            .set("group.remote.assignor", assignor)
            .set("enable.auto.commit", "false")
            .set("auto.offset.reset", "earliest")
            .set("fetch.wait.max.ms", "100")
            .set("enable.partition.eof", "false");
        let consumer: BaseConsumer<Counting> = c.create_with_context(Counting::default())?;
        Member::from_consumer(consumer, "kip848", name, seen.clone())
    };
    let c1 = m("c1")?;
    if let Err(e) = wait_seen(&seen, 60, "c1 alone") {
        eprintln!("{}", b.log_tail(40));
        return Err(e);
    }
    let c2 = m("c2")?;
    std::thread::sleep(Duration::from_secs(3));
    produce_round(&b, "kip848", 1, 10).await?;
    wait_seen(&seen, 120, "two members")?;
    {
        let s = seen.lock().unwrap();
        let readers: BTreeSet<&str> = s[60..].iter().map(|r| r.2.as_str()).collect();
        assert_eq!(readers.len(), 2, "both members read round 1: {readers:?}");
    }
    // The broker ran the group with the consumer protocol: ConsumerGroupDescribe sees it.
    use kafka_protocol::messages::{ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse};
    let mut raw = RawClient::connect(&b.bootstrap())?;
    let described: ConsumerGroupDescribeResponse = raw.call(
        ApiKey::ConsumerGroupDescribe,
        0,
        &ConsumerGroupDescribeRequest::default()
            .with_group_ids(vec![GroupId(StrBytes::from_static_str("g-kip848"))]),
    )?;
    let g = &described.groups[0];
    assert_eq!(g.error_code, 0);
    assert_eq!(g.members.len(), 2);
    assert_eq!(g.assignor_name.as_str(), assignor);
    let owned: usize = g
        .members
        .iter()
        .flat_map(|m| m.assignment.topic_partitions.iter())
        .map(|tp| tp.partitions.len())
        .sum();
    assert_eq!(owned, 6, "every partition assigned once: {g:?}");
    for m in &g.members {
        assert_eq!(
            m.client_host.as_str(),
            "/127.0.0.1",
            "member host as Kafka reports it"
        );
    }
    c2.leave()?;
    produce_round(&b, "kip848", 2, 10).await?;
    wait_seen(&seen, 180, "after c2 left")?;
    std::thread::sleep(Duration::from_millis(500));
    c1.leave()?;
    assert_exactly_once(&seen, 180)
}

/// KIP-848 regex subscription: librdkafka sends `^rx-.*` (as `(^rx-.*)`) in
/// SubscribedTopicRegex; the broker assigns every matching topic, including one created
/// after the member joined, and never the topic that does not match.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_protocol_regex_subscription_picks_up_new_topics() -> Result<()> {
    let b = Broker::start_with(&[("group.consumer.heartbeat.interval.ms", "500")])?;
    let admin = admin(&b)?;
    create_topic(&admin, "rx-first", 2, &[]).await?;
    create_topic(&admin, "nomatch-rx-", 1, &[]).await?;
    let p = producer(&b, &[])?;
    for partition in 0..2 {
        produce_n(&p, "rx-first", partition, 5, |i| {
            (format!("k{i}").into_bytes(), b"v".to_vec())
        })
        .await?;
    }
    produce_n(&p, "nomatch-rx-", 0, 5, |i| {
        (format!("k{i}").into_bytes(), b"v".to_vec())
    })
    .await?;
    let mut c = base_config(&b);
    c.set("group.id", "g-regex")
        .set("group.protocol", "consumer")
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", "100")
        .set("enable.partition.eof", "false");
    let consumer: BaseConsumer<Counting> = c.create_with_context(Counting::default())?;
    consumer.subscribe(&["^rx-.*"])?;
    let topics: Arc<Mutex<Vec<String>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let poller = {
        let (topics, stop) = (topics.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                match consumer.poll(Duration::from_millis(100)) {
                    Some(Ok(m)) => topics.lock().unwrap().push(m.topic().to_string()),
                    Some(Err(e)) => eprintln!("regex consumer: poll error {e}"),
                    None => {}
                }
            }
        })
    };
    let count = |name: &str| topics.lock().unwrap().iter().filter(|t| *t == name).count();
    let wait_for = |name: &str, n: usize| -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(60);
        while count(name) < n {
            if Instant::now() > deadline {
                eprintln!("{}", b.log_tail(40));
                bail!("{name}: consumed {} of {n} records", count(name));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    };
    let result = async {
        wait_for("rx-first", 10)?;
        // Created after the member joined: the regex must pick it up.
        create_topic(&admin, "rx-later", 1, &[]).await?;
        produce_n(&p, "rx-later", 0, 7, |i| {
            (format!("k{i}").into_bytes(), b"v".to_vec())
        })
        .await?;
        wait_for("rx-later", 7)?;
        std::thread::sleep(Duration::from_secs(1));
        assert_eq!(count("rx-first"), 10);
        assert_eq!(count("rx-later"), 7);
        assert_eq!(count("nomatch-rx-"), 0, "a non-matching topic was consumed");
        // The broker resolved the regex itself (librdkafka did not expand it client-side).
        use kafka_protocol::messages::{
            ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
        };
        let mut raw = RawClient::connect(&b.bootstrap())?;
        let described: ConsumerGroupDescribeResponse = raw.call(
            ApiKey::ConsumerGroupDescribe,
            0,
            &ConsumerGroupDescribeRequest::default()
                .with_group_ids(vec![GroupId(StrBytes::from_static_str("g-regex"))]),
        )?;
        let member = &described.groups[0].members[0];
        assert_eq!(
            member.subscribed_topic_regex.as_deref(),
            Some("(^rx-.*)"),
            "{member:?}"
        );
        Ok(())
    }
    .await;
    stop.store(true, Ordering::SeqCst);
    poller
        .join()
        .map_err(|_| anyhow::anyhow!("consumer thread panicked"))?;
    result
}

/// One ConsumerGroupDescribe: (group epoch, assignment epoch, member id -> member epoch).
fn describe_consumer_group(b: &Broker, group: &str) -> Result<(i32, i32, BTreeMap<String, i32>)> {
    use kafka_protocol::messages::{ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse};
    let mut raw = RawClient::connect(&b.bootstrap())?;
    let described: ConsumerGroupDescribeResponse = raw.call(
        ApiKey::ConsumerGroupDescribe,
        0,
        &ConsumerGroupDescribeRequest::default()
            .with_group_ids(vec![GroupId(StrBytes::from(group.to_string()))]),
    )?;
    let g = described.groups.first().context("no group in the answer")?;
    if g.error_code != 0 {
        bail!("ConsumerGroupDescribe error {}", g.error_code);
    }
    let members = g
        .members
        .iter()
        .map(|m| (m.member_id.to_string(), m.member_epoch))
        .collect();
    Ok((g.group_epoch, g.assignment_epoch, members))
}

/// Issue 4: a KIP-848 group survives a broker restart and a kill -9. The members keep heartbeating with
/// their ids and epochs and continue without rejoining (no UNKNOWN_MEMBER_ID, no new group
/// epoch), and every record is still read exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_protocol_group_and_epochs_survive_restart() -> Result<()> {
    let mut b = Broker::start_with(&[("group.consumer.heartbeat.interval.ms", "500")])?;
    create_topic(&admin(&b)?, "kip848r", 6, &[]).await?;
    produce_round(&b, "kip848r", 0, 10).await?;
    let seen: Seen = Arc::default();
    let m = |b: &Broker, name: &str| -> Result<Member> {
        let mut c = base_config(b);
        c.set("group.id", "g-kip848r")
            .set("group.protocol", "consumer")
            .set("enable.auto.commit", "false")
            .set("auto.offset.reset", "earliest")
            .set("fetch.wait.max.ms", "100")
            .set("enable.partition.eof", "false");
        let consumer: BaseConsumer<Counting> = c.create_with_context(Counting::default())?;
        Member::from_consumer(consumer, "kip848r", name, seen.clone())
    };
    let c1 = m(&b, "c1")?;
    let c2 = m(&b, "c2")?;
    wait_seen(&seen, 60, "before the restart")?;
    // Wait for a stable group: both members at the assignment epoch.
    let deadline = Instant::now() + Duration::from_secs(30);
    let before = loop {
        let d = describe_consumer_group(&b, "g-kip848r")?;
        if d.2.len() == 2 && d.0 == d.1 && d.2.values().all(|e| *e == d.1) {
            break d;
        }
        if Instant::now() > deadline {
            bail!("group never became stable: {d:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    b.restart()?;
    // Right after the load, before any member heartbeat could rejoin, the state is back.
    let deadline = Instant::now() + Duration::from_secs(30);
    let loaded = loop {
        // COORDINATOR_LOAD_IN_PROGRESS until `__consumer_offsets` is replayed.
        match describe_consumer_group(&b, "g-kip848r") {
            Ok(d) => break d,
            Err(e) if Instant::now() > deadline => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    assert_eq!(
        loaded, before,
        "group epoch, members and member epochs replayed"
    );
    produce_round(&b, "kip848r", 1, 10).await?;
    if let Err(e) = wait_seen(&seen, 120, "after the restart") {
        eprintln!("{}", b.log_tail(60));
        return Err(e);
    }
    // Several heartbeats later the members continued with the same ids and epochs: a
    // member that had to rejoin would have bumped the group epoch.
    std::thread::sleep(Duration::from_secs(2));
    let after = describe_consumer_group(&b, "g-kip848r")?;
    assert_eq!(after, before, "members continued without rejoining");
    // A crash (kill -9) keeps them too: the records were appended before the answers.
    b.kill9()?;
    b.restart()?;
    produce_round(&b, "kip848r", 2, 10).await?;
    if let Err(e) = wait_seen(&seen, 180, "after kill -9") {
        eprintln!("{}", b.log_tail(60));
        return Err(e);
    }
    std::thread::sleep(Duration::from_secs(2));
    let crashed = describe_consumer_group(&b, "g-kip848r")?;
    assert_eq!(crashed, before, "members continued after kill -9");
    c1.leave()?;
    c2.leave()?;
    assert_exactly_once(&seen, 180)
}

/// Benchmark, not a timed test (run with `--ignored --nocapture`): time from the first
/// JoinGroup to a stable group holding every member, for 1 and 50 raw-protocol members
/// (`group.initial.rebalance.delay.ms=0`, so the figure is the coordinator's own), and
/// OffsetCommit round trips per second (each waits for its fsync): 1 and 8 committers in one
/// group, and 8 committers in 8 groups (8 `__consumer_offsets` partitions to fsync).
#[test]
#[ignore]
fn bench_join_to_stable_and_commit_rate() -> Result<()> {
    use kafka_protocol::messages::{
        offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic},
        sync_group_request::SyncGroupRequestAssignment,
        HeartbeatRequest, HeartbeatResponse, OffsetCommitRequest, OffsetCommitResponse, TopicName,
    };
    use std::collections::HashMap;
    let b = Broker::start_with(&[("group.initial.rebalance.delay.ms", "0")])?;
    let mut raw = RawClient::connect(&b.bootstrap())?;
    raw.create_topic("bench", 1, &[])?;
    for n in [1usize, 50] {
        let group = format!("bench-{n}");
        let synced: Arc<Mutex<HashMap<usize, i32>>> = Arc::default();
        let sizes: Arc<Mutex<HashMap<i32, usize>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let barrier = Arc::new(std::sync::Barrier::new(n + 1));
        let mut handles = Vec::new();
        for i in 0..n {
            let (bootstrap, group) = (b.bootstrap(), group.clone());
            let (synced, sizes, stop, barrier) =
                (synced.clone(), sizes.clone(), stop.clone(), barrier.clone());
            handles.push(std::thread::spawn(move || -> Result<()> {
                let mut c = RawClient::connect(&bootstrap)?;
                let gid = GroupId(StrBytes::from_string(group));
                let mut member = StrBytes::default();
                barrier.wait();
                'rejoin: while !stop.load(Ordering::SeqCst) {
                    let j: JoinGroupResponse = c.call(
                        ApiKey::JoinGroup,
                        5,
                        &JoinGroupRequest::default()
                            .with_group_id(gid.clone())
                            .with_session_timeout_ms(30_000)
                            .with_rebalance_timeout_ms(30_000)
                            .with_member_id(member.clone())
                            .with_protocol_type(StrBytes::from_static_str("consumer"))
                            .with_protocols(vec![JoinGroupRequestProtocol::default()
                                .with_name(StrBytes::from_static_str("range"))
                                .with_metadata(Bytes::from_static(&[0, 0, 0, 0, 0, 0]))]),
                    )?;
                    member = j.member_id.clone();
                    if j.error_code != 0 {
                        continue;
                    }
                    let leader = j.leader == j.member_id;
                    if leader {
                        sizes
                            .lock()
                            .unwrap()
                            .insert(j.generation_id, j.members.len());
                    }
                    let assignments = j
                        .members
                        .iter()
                        .map(|m| {
                            SyncGroupRequestAssignment::default()
                                .with_member_id(m.member_id.clone())
                                .with_assignment(Bytes::from_static(b"a"))
                        })
                        .collect();
                    let s: SyncGroupResponse = c.call(
                        ApiKey::SyncGroup,
                        3,
                        &SyncGroupRequest::default()
                            .with_group_id(gid.clone())
                            .with_generation_id(j.generation_id)
                            .with_member_id(member.clone())
                            .with_assignments(assignments),
                    )?;
                    if s.error_code != 0 {
                        continue;
                    }
                    synced.lock().unwrap().insert(i, j.generation_id);
                    while !stop.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(50));
                        let h: HeartbeatResponse = c.call(
                            ApiKey::Heartbeat,
                            3,
                            &HeartbeatRequest::default()
                                .with_group_id(gid.clone())
                                .with_generation_id(j.generation_id)
                                .with_member_id(member.clone()),
                        )?;
                        if h.error_code != 0 {
                            continue 'rejoin;
                        }
                    }
                }
                Ok(())
            }));
        }
        barrier.wait();
        let start = Instant::now();
        loop {
            {
                let s = synced.lock().unwrap();
                let gens: BTreeSet<i32> = s.values().copied().collect();
                if s.len() == n && gens.len() == 1 {
                    let g = *gens.iter().next().unwrap();
                    if sizes.lock().unwrap().get(&g) == Some(&n) {
                        eprintln!(
                            "BENCH join to stable, {n} members: {:.1} ms (generation {g})",
                            start.elapsed().as_secs_f64() * 1000.0
                        );
                        break;
                    }
                }
            }
            if start.elapsed() > Duration::from_secs(60) {
                bail!("{n} members never became stable");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        stop.store(true, Ordering::SeqCst);
        for h in handles {
            let _ = h.join();
        }
    }
    for (committers, shared) in [(1usize, true), (8, true), (8, false)] {
        let count = Arc::new(AtomicUsize::new(0));
        let until = Instant::now() + Duration::from_secs(3);
        let handles: Vec<_> = (0..committers)
            .map(|i| {
                let (bootstrap, count) = (b.bootstrap(), count.clone());
                std::thread::spawn(move || -> Result<()> {
                    let mut c = RawClient::connect(&bootstrap)?;
                    let mut offset = 0;
                    while Instant::now() < until {
                        offset += 1;
                        let r: OffsetCommitResponse = c.call(
                            ApiKey::OffsetCommit,
                            8,
                            &OffsetCommitRequest::default()
                                .with_group_id(GroupId(StrBytes::from_string(if shared {
                                    "one-group".to_string()
                                } else {
                                    format!("group-{i}")
                                })))
                                .with_generation_id_or_member_epoch(-1)
                                .with_topics(vec![OffsetCommitRequestTopic::default()
                                    .with_name(TopicName(StrBytes::from_static_str("bench")))
                                    .with_partitions(vec![
                                        OffsetCommitRequestPartition::default()
                                            .with_partition_index(0)
                                            .with_committed_offset(offset),
                                    ])]),
                        )?;
                        if r.topics[0].partitions[0].error_code != 0 {
                            bail!("commit failed: {}", r.topics[0].partitions[0].error_code);
                        }
                        count.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join()
                .map_err(|_| anyhow::anyhow!("committer panicked"))??;
        }
        eprintln!(
            "BENCH OffsetCommit (acks=all, fsync), {committers} committer(s) in {}: {:.0} commits/s",
            if shared { "one group" } else { "one group each" },
            count.load(Ordering::SeqCst) as f64 / 3.0
        );
    }
    Ok(())
}
