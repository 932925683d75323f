//! KIP-848 consumer groups end to end (`group.protocol=consumer`): the broker's assignment
//! with the uniform and range assignors, regex subscriptions that pick up new topics, and
//! member ids and epochs that survive a restart and a kill -9. Shared helpers:
//! `common/groups.rs`.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use common::groups::*;
use common::*;
use kafka_protocol::messages::{ApiKey, GroupId};
use kafka_protocol::protocol::StrBytes;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use skiff_e2e::raw::RawClient;
use skiff_e2e::Broker;

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
