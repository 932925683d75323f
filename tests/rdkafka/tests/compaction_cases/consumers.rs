//! Skiff's tombstones that wait for consumers (docs/compaction.md §5.10) over the wire: the
//! `skiff.tombstone.wait.*` topic configs set through CreateTopics, committed offsets from
//! librdkafka consumers. Kafka has no such config; these are not §6 scenarios.
#![allow(clippy::unwrap_used)]

use std::thread::sleep;
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};

use crate::compaction_support::*;

/// Commits `offset` (the next offset the group would read) on partition 0 for `group`.
fn commit(env: &Env, group: &str, topic: &str, offset: i64) {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", env.broker.bootstrap())
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Offset(offset))
        .unwrap();
    consumer.commit(&tpl, CommitMode::Sync).unwrap();
}

/// Writes two values of `x` and waits until a pass has left one: proof that a pass ran.
fn one_more_pass(env: &mut Env, topic: &str, round: usize) {
    let (a, b) = (format!("a{round}"), format!("b{round}"));
    env.put_all(topic, &[("x", &a), ("x", &b)]);
    env.roll(topic);
    env.await_records(topic, AWAIT, "x compacted by a pass", |r| {
        let x = of_key(r, b"x");
        x.len() == 1 && x[0].value.as_deref() == Some(b.as_bytes())
    });
}

#[test]
fn tombstone_waits_for_the_slow_group_then_goes() {
    let mut env = Env::start(&[]);
    let t = env.topic("twait", &[("skiff.tombstone.wait.for.consumers", "true")]);
    env.put(&t, Some(b"k"), Some(b"v1"));
    let tomb = env.put(&t, Some(b"k"), None);
    commit(&env, "fast", &t, tomb + 1);
    commit(&env, "slow", &t, tomb);
    env.roll(&t);
    env.await_records(&t, AWAIT, "v1 gone", |r| of_key(r, b"k").len() == 1);
    // Past delete.retention.ms (1 s), passes keep the tombstone: "slow" has not read it.
    sleep(Duration::from_millis(1500));
    for round in 0..3 {
        one_more_pass(&mut env, &t, round);
        let recs = env.read(&t);
        assert_eq!(
            of_key(&recs, b"k").len(),
            1,
            "tombstone held for the slow group (round {round}): {}",
            show(&recs)
        );
    }
    commit(&env, "slow", &t, tomb + 1);
    env.await_rolling(&t, AWAIT, "tombstone gone once slow read it", |r| {
        of_key(r, b"k").is_empty()
    });
}

#[test]
fn tombstone_wait_is_bounded_for_a_dead_group() {
    let mut env = Env::start(&[]);
    let t = env.topic(
        "twaitmax",
        &[
            ("skiff.tombstone.wait.for.consumers", "true"),
            ("skiff.tombstone.wait.max.ms", "2000"),
        ],
    );
    env.put(&t, Some(b"k"), Some(b"v1"));
    let tomb = env.put(&t, Some(b"k"), None);
    commit(&env, "dead", &t, tomb);
    env.roll(&t);
    env.await_records(&t, AWAIT, "v1 gone", |r| of_key(r, b"k").len() == 1);
    // Horizon (1 s) passed, the bound (1 s + 2 s) not yet: still held.
    sleep(Duration::from_millis(1500));
    one_more_pass(&mut env, &t, 0);
    let recs = env.read(&t);
    assert_eq!(
        of_key(&recs, b"k").len(),
        1,
        "held within the bound: {}",
        show(&recs)
    );
    // After the bound the dead group no longer holds it.
    env.await_rolling(&t, AWAIT, "tombstone gone after the bound", |r| {
        of_key(r, b"k").is_empty()
    });
}

#[test]
fn without_the_config_groups_do_not_hold_tombstones() {
    let mut env = Env::start(&[]);
    let t = env.topic("tnowait", &[]);
    env.put(&t, Some(b"k"), Some(b"v1"));
    let tomb = env.put(&t, Some(b"k"), None);
    commit(&env, "slow", &t, tomb);
    env.roll(&t);
    env.await_records(&t, AWAIT, "v1 gone", |r| of_key(r, b"k").len() == 1);
    sleep(Duration::from_millis(1500));
    env.await_rolling(&t, AWAIT, "tombstone gone after delete.retention.ms", |r| {
        of_key(r, b"k").is_empty()
    });
}
