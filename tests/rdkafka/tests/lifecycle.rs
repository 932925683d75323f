//! Process lifecycle: SIGTERM in the middle of acks=all produces loses nothing acknowledged
//! and the next start is clean (no recovery); SIGTERM exits 0 within `shutdown.timeout.ms`;
//! a second broker on a locked data directory refuses to start and says why.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use rdkafka::client::ClientContext;
use rdkafka::consumer::BaseConsumer;
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::Offset;
use rdkafka::TopicPartitionList;
use skiff_e2e::{free_port, skiff_bin, unique_topic, Broker};

/// Sequence number -> offset of every acknowledged record.
#[derive(Default, Clone)]
struct Acks(Arc<Mutex<HashMap<u64, i64>>>);

impl ClientContext for Acks {}

impl ProducerContext for Acks {
    type DeliveryOpaque = Box<u64>;
    fn delivery(&self, result: &DeliveryResult<'_>, seq: Box<u64>) {
        if let Ok(m) = result {
            if let Ok(mut a) = self.0.lock() {
                a.insert(*seq, m.offset());
            }
        }
    }
}

/// The broker output of its latest run (the harness separates runs with a marker line).
fn last_run(logs: &str) -> &str {
    logs.rsplit("===== e2e harness: starting")
        .next()
        .unwrap_or(logs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_acks_all_produce_keeps_every_ack_and_restarts_clean() {
    let mut b = Broker::start().unwrap();
    let topic = unique_topic("sigterm");
    create_topic(&admin(&b).unwrap(), &topic, 1, &[])
        .await
        .unwrap();
    let acks = Acks::default();
    let mut cfg = base_config(&b);
    cfg.set("acks", "all")
        .set("linger.ms", "2")
        // No retries: a record must be acknowledged by the run that stored it.
        .set("retries", "0")
        .set("enable.idempotence", "false")
        .set("message.timeout.ms", "5000");
    let p: ThreadedProducer<Acks> = cfg.create_with_context(acks.clone()).unwrap();

    // Keep producing; SIGTERM once enough is acknowledged, with requests still in flight.
    let started = Instant::now();
    let mut sent: u64 = 0;
    let mut stopped = None;
    while stopped.is_none() && started.elapsed() < Duration::from_secs(20) {
        let acked = acks.0.lock().unwrap().len();
        if acked >= 1000 || started.elapsed() > Duration::from_secs(8) {
            stopped = Some(b.stop().unwrap());
            break;
        }
        let value = format!("seq-{sent:08}");
        let rec = BaseRecord::with_opaque_to(&topic, Box::new(sent))
            .partition(0)
            .key("k")
            .payload(&value);
        match p.send(rec) {
            Ok(()) => sent += 1,
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let status = stopped.expect("the broker was never stopped");
    assert!(status.success(), "exit status after SIGTERM: {status}");
    assert!(
        b.logs().contains("clean shutdown complete"),
        "{}",
        b.log_tail(30)
    );
    let _ = p.flush(Duration::from_secs(10));
    drop(p);
    let acked = acks.0.lock().unwrap().clone();
    assert!(acked.len() >= 100, "only {} records acked", acked.len());

    b.restart().unwrap();
    let run = last_run(&b.logs()).to_string();
    assert!(
        run.contains("storage ready") && run.contains("clean_start=true"),
        "the start after SIGTERM must be clean (no recovery scan): {run}"
    );
    assert!(
        !run.contains("rebuilding") && !run.contains("truncat"),
        "no recovery work after a clean shutdown: {run}"
    );
    let c = consumer(&b, &[]).unwrap();
    let recs = consume_to_end(&c, &topic, 0, Duration::from_secs(30)).unwrap();
    let by_offset: HashMap<i64, String> = recs
        .iter()
        .map(|r| {
            (
                r.offset,
                String::from_utf8(r.value.clone().unwrap_or_default()).unwrap(),
            )
        })
        .collect();
    let mut lost = Vec::new();
    for (seq, off) in &acked {
        let want = format!("seq-{seq:08}");
        if by_offset.get(off) != Some(&want) {
            lost.push(format!("{want}@{off} -> {:?}", by_offset.get(off)));
        }
    }
    lost.sort();
    assert!(
        lost.is_empty(),
        "{} acked records lost after SIGTERM, e.g. {:?}",
        lost.len(),
        &lost[..lost.len().min(10)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_exits_zero_within_shutdown_timeout() {
    const BUDGET_MS: u64 = 3000;
    let mut b = Broker::start_with(&[("shutdown.timeout.ms", "3000")]).unwrap();
    let topic = unique_topic("budget");
    let p = producer(&b, &[("acks", "all")]).unwrap();
    produce_n(&p, &topic, 0, 200, |i| {
        (vec![], format!("r{i}").into_bytes())
    })
    .await
    .unwrap();
    // A consumer in a fetch long poll: an open connection with a request in hand.
    let c: BaseConsumer = consumer(&b, &[("fetch.wait.max.ms", "1000")]).unwrap();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(&topic, 0, Offset::End).unwrap();
    rdkafka::consumer::Consumer::assign(&c, &tpl).unwrap();
    let _ = c.poll(Duration::from_millis(300));

    let t0 = Instant::now();
    let st = b.stop().unwrap();
    let took = t0.elapsed();
    assert!(st.success(), "exit status after SIGTERM: {st}");
    assert!(
        took < Duration::from_millis(BUDGET_MS),
        "SIGTERM to exit took {took:?}, budget {BUDGET_MS} ms"
    );
    drop(c);
    drop(p);
    b.restart().unwrap();
    assert!(last_run(&b.logs()).contains("clean_start=true"));
}

#[test]
fn second_broker_on_the_same_data_dir_refuses_to_start() {
    let mut b = Broker::start().unwrap();
    let port = free_port().unwrap();
    let out = Command::new(skiff_bin())
        .arg("--set")
        .arg(format!("listeners=PLAINTEXT://127.0.0.1:{port}"))
        .arg("--set")
        .arg(format!("log.dirs={}", b.data_dir().display()))
        .env_remove("SKIFF_CONFIG")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "second broker started: {stderr}");
    assert!(
        stderr.contains("is locked by another process")
            && stderr.contains(&b.data_dir().display().to_string()),
        "the error must name the locked directory: {stderr}"
    );
    // It never bound its port, and the first broker is unharmed.
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    assert!(b.is_running());
    let st = b.stop().unwrap();
    assert!(st.success(), "{st}");
}
