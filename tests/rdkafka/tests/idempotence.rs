//! Idempotent producers through librdkafka (`enable.idempotence=true`) against the real
//! binary: every record stored exactly once and in order; batches in flight across a graceful
//! restart and across a kill -9 are retried by the client and still stored once (the broker
//! keeps producer state in `.snapshot` files and rebuilds it from the log tail).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use common::*;
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::Offset;
use skiff_e2e::{unique_topic, Broker};

fn idempotent_producer(b: &Broker) -> FutureProducer {
    producer(
        b,
        &[
            ("enable.idempotence", "true"),
            ("acks", "all"),
            ("max.in.flight.requests.per.connection", "5"),
            ("linger.ms", "2"),
            ("batch.num.messages", "50"),
            // Long enough for the client to ride out a broker restart.
            ("message.timeout.ms", "60000"),
        ],
    )
    .unwrap()
}

/// Values read from partition 0 of `topic`, in offset order.
fn read_all(b: &Broker, topic: &str, n: usize) -> Vec<String> {
    let c = consumer(b, &[]).unwrap();
    consume_n(&c, topic, 0, Offset::Beginning, n, Duration::from_secs(30))
        .unwrap()
        .into_iter()
        .map(|r| String::from_utf8(r.value.unwrap_or_default()).unwrap())
        .collect()
}

fn value(i: usize) -> String {
    format!("rec-{i:06}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotent_producer_stores_every_record_once_in_order() {
    let b = Broker::start().unwrap();
    let topic = unique_topic("idem");
    create_topic(&admin(&b).unwrap(), &topic, 1, &[])
        .await
        .unwrap();
    let p = idempotent_producer(&b);
    const N: usize = 3000;
    let offsets = produce_n(&p, &topic, 0, N, |i| (b"k".to_vec(), value(i).into_bytes()))
        .await
        .unwrap();
    assert_eq!(offsets, (0..N as i64).collect::<Vec<_>>());
    let got = read_all(&b, &topic, N);
    assert_eq!(got, (0..N).map(value).collect::<Vec<_>>());
}

/// Sends `total` records, calling `disrupt` once `at` of them were enqueued; returns after
/// every delivery report, with the number of records acknowledged.
async fn produce_through(
    b: &mut Broker,
    topic: &str,
    total: usize,
    at: usize,
    disrupt: impl FnOnce(&mut Broker),
) -> usize {
    let p = idempotent_producer(b);
    let mut futs = Vec::with_capacity(total);
    let mut disrupt = Some(disrupt);
    for i in 0..total {
        if i == at {
            // Let some batches be in flight when the broker goes away.
            tokio::time::sleep(Duration::from_millis(3)).await;
            if let Some(f) = disrupt.take() {
                f(b);
            }
        }
        let v = value(i);
        let rec = FutureRecord::to(topic).partition(0).key("k").payload(&v);
        futs.push(p.send_result(rec).map_err(|(e, _)| e).unwrap());
        if i % 100 == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut acked = 0;
    for f in futs {
        let left = deadline.saturating_duration_since(Instant::now());
        let r = tokio::time::timeout(left, f)
            .await
            .expect("delivery report");
        if let Ok(Ok(_)) = r {
            acked += 1;
        }
    }
    p.flush(Duration::from_secs(5)).unwrap();
    acked
}

/// Every acknowledged record is present, none twice, in send order.
fn assert_exactly_once(b: &Broker, topic: &str, total: usize, acked: usize) {
    let c = consumer(b, &[]).unwrap();
    let got: Vec<String> = consume_to_end(&c, topic, 0, Duration::from_secs(30))
        .unwrap()
        .into_iter()
        .map(|r| String::from_utf8(r.value.unwrap_or_default()).unwrap())
        .collect();
    let unique: HashSet<&String> = got.iter().collect();
    assert_eq!(
        unique.len(),
        got.len(),
        "duplicates stored: {} of {}",
        got.len() - unique.len(),
        got.len()
    );
    let mut sorted = got.clone();
    sorted.sort();
    assert_eq!(sorted, got, "records out of send order");
    assert!(got.len() >= acked, "acked {acked} but stored {}", got.len());
    assert!(got.len() <= total);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_across_a_restart_store_no_duplicates() {
    let mut b = Broker::start().unwrap();
    let topic = unique_topic("idem-restart");
    create_topic(&admin(&b).unwrap(), &topic, 1, &[])
        .await
        .unwrap();
    const N: usize = 4000;
    let acked = produce_through(&mut b, &topic, N, N / 2, |b| b.restart().unwrap()).await;
    assert_eq!(acked, N, "every record is delivered after the restart");
    assert_exactly_once(&b, &topic, N, acked);
    // A clean stop writes the producer state at the log end. Whether the first stop had
    // any to write depends on whether a batch arrived before it (a log still empty has no
    // producer state, and, as in Kafka, gets no snapshot), so stop once more after the
    // second half was stored.
    b.restart().unwrap();
    let dir = b.data_dir().join(format!("{topic}-0"));
    let snapshots = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "snapshot")
        })
        .count();
    assert!(snapshots >= 1, "no producer snapshot in {}", dir.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_across_a_kill_9_store_no_duplicates() {
    let mut b = Broker::start().unwrap();
    let topic = unique_topic("idem-kill");
    create_topic(&admin(&b).unwrap(), &topic, 1, &[])
        .await
        .unwrap();
    const N: usize = 4000;
    let acked = produce_through(&mut b, &topic, N, N / 2, |b| {
        b.kill9().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        b.restart().unwrap();
    })
    .await;
    assert_exactly_once(&b, &topic, N, acked);
    assert_eq!(acked, N, "every record is delivered after the crash");
}
