//! Classic consumer groups end to end: librdkafka consumers with `subscribe()` against the
//! real broker — rebalances on join, leave and session expiry with every record read exactly
//! once, commits that survive a restart and a kill -9, cooperative-sticky, and static
//! membership. Shared helpers: `common/groups.rs`.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use common::groups::*;
use common::*;
use rdkafka::consumer::{CommitMode, Consumer};
use rdkafka::{Offset, TopicPartitionList};
use skiff_e2e::Broker;

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
