//! Durability across restarts: kill -9 in the middle of acks=all produces loses nothing
//! that was acknowledged; SIGTERM and kill -9 restarts keep topics, ids, configs and data.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use rdkafka::admin::{ConfigSource, ResourceSpecifier};
use rdkafka::client::ClientContext;
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use skiff_e2e::{unique_topic, Broker};

/// Records every successful delivery: sequence number → (partition, offset).
#[derive(Default, Clone)]
struct AckLog {
    acked: Arc<Mutex<HashMap<u64, (i32, i64)>>>,
    failed: Arc<Mutex<Vec<(u64, String)>>>,
}

impl ClientContext for AckLog {}

impl ProducerContext for AckLog {
    type DeliveryOpaque = Box<u64>;
    fn delivery(&self, result: &DeliveryResult<'_>, seq: Box<u64>) {
        match result {
            Ok(m) => {
                if let Ok(mut a) = self.acked.lock() {
                    a.insert(*seq, (m.partition(), m.offset()));
                }
            }
            Err((e, _)) => {
                if let Ok(mut f) = self.failed.lock() {
                    f.push((*seq, e.to_string()));
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_acked_produces_loses_nothing_acked() {
    let mut b = Broker::start().unwrap();
    let topic = unique_topic("crash");
    const PARTS: i32 = 2;
    create_topic(&admin(&b).unwrap(), &topic, PARTS, &[])
        .await
        .unwrap();

    let ctx = AckLog::default();
    let mut cfg = base_config(&b);
    cfg.set("acks", "all")
        .set("linger.ms", "2")
        // No retries: a retry after the crash could legitimately duplicate a record that was
        // written but not acknowledged, which would hide real duplicates.
        .set("retries", "0")
        .set("enable.idempotence", "false")
        .set("message.timeout.ms", "5000");
    let p: ThreadedProducer<AckLog> = cfg.create_with_context(ctx.clone()).unwrap();

    // Produce continuously; kill -9 the broker once a healthy number of records are acked
    // (or after 8 s on a slow machine), keep sending for 300 ms so requests are in flight.
    let started = Instant::now();
    let mut sent: u64 = 0;
    let mut killed_at: Option<Instant> = None;
    while started.elapsed() < Duration::from_secs(20) {
        match killed_at {
            None => {
                let acked = ctx.acked.lock().unwrap().len();
                if acked >= 2000 || started.elapsed() > Duration::from_secs(8) {
                    b.kill9().unwrap();
                    killed_at = Some(Instant::now());
                }
            }
            Some(t) if t.elapsed() > Duration::from_millis(300) => break,
            Some(_) => {}
        }
        let value = format!("seq-{sent:08}");
        let part = (sent % PARTS as u64) as i32;
        let rec = BaseRecord::with_opaque_to(&topic, Box::new(sent))
            .partition(part)
            .key("k")
            .payload(&value);
        match p.send(rec) {
            Ok(()) => sent += 1,
            // Local queue full: let deliveries drain.
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let killed = killed_at.is_some();
    assert!(killed, "broker was never killed");
    // Wait (bounded) for every outstanding delivery to resolve.
    let _ = p.flush(Duration::from_secs(10));
    drop(p);
    let acked = ctx.acked.lock().unwrap().clone();
    let failed = ctx.failed.lock().unwrap().len();
    eprintln!("sent {sent}, acked {}, failed {failed}", acked.len());
    assert!(
        acked.len() >= 100,
        "too few acked records ({}) to mean anything",
        acked.len()
    );

    b.restart().unwrap();
    let c = consumer(&b, &[]).unwrap();
    let mut seen_values = HashSet::new();
    let mut by_pos: HashMap<(i32, i64), String> = HashMap::new();
    for part in 0..PARTS {
        let recs = consume_to_end(&c, &topic, part, Duration::from_secs(30)).unwrap();
        for (i, r) in recs.iter().enumerate() {
            assert_eq!(
                r.offset, i as i64,
                "partition {part}: offsets must be consecutive from 0"
            );
            let v = String::from_utf8(r.value.clone().unwrap()).unwrap();
            assert!(
                seen_values.insert(v.clone()),
                "duplicated record {v} at {part}/{}",
                r.offset
            );
            by_pos.insert((part, r.offset), v);
        }
    }
    let mut missing = Vec::new();
    for (seq, (part, off)) in &acked {
        let want = format!("seq-{seq:08}");
        match by_pos.get(&(*part, *off)) {
            Some(v) if *v == want => {}
            other => missing.push(format!("{want} acked at {part}/{off}, found {other:?}")),
        }
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "{} acked records lost or moved after kill -9, e.g. {:?}",
        missing.len(),
        &missing[..missing.len().min(10)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_keeps_topic_ids_configs_and_data() {
    let mut b = Broker::start().unwrap();
    let a = admin(&b).unwrap();
    let topic = unique_topic("persist");
    create_topic(&a, &topic, 3, &[("retention.ms", "7200000")])
        .await
        .unwrap();
    let p = producer(&b, &[("acks", "all")]).unwrap();
    for part in 0..3 {
        produce_n(&p, &topic, part, 50, |i| {
            (vec![], format!("p{part}-{i}").into_bytes())
        })
        .await
        .unwrap();
    }
    drop(p);
    drop(a);
    let ids_before = topic_ids(&b).unwrap();
    let id = ids_before.get(&topic).cloned().unwrap();

    let mut counts = [50usize; 3];
    for how in ["SIGTERM", "kill -9"] {
        if how == "SIGTERM" {
            let st = b.stop().unwrap();
            assert!(st.success(), "broker exit status after SIGTERM: {st}");
        } else {
            b.kill9().unwrap();
        }
        b.restart().unwrap();

        let ids_after = topic_ids(&b).unwrap();
        assert_eq!(
            ids_after.get(&topic),
            Some(&id),
            "topic id after {how} restart"
        );

        let a = admin(&b).unwrap();
        let res = a
            .describe_configs([&ResourceSpecifier::Topic(&topic)], &admin_opts())
            .await
            .unwrap();
        let cfg = res.into_iter().next().unwrap().unwrap();
        let r = cfg.get("retention.ms").unwrap();
        assert_eq!(
            r.value.as_deref(),
            Some("7200000"),
            "retention.ms after {how} restart"
        );
        assert_eq!(r.source, ConfigSource::DynamicTopic);

        let c = consumer(&b, &[]).unwrap();
        wait_topic_partitions(&c, &topic, 3).unwrap();
        for part in 0..3 {
            let recs = consume_to_end(&c, &topic, part, OP_TIMEOUT).unwrap();
            assert_eq!(
                recs.len(),
                counts[part as usize],
                "partition {part} after {how} restart"
            );
            assert_eq!(
                recs[49].value.as_deref(),
                Some(format!("p{part}-49").as_bytes())
            );
        }
        // The log keeps growing from where it was.
        let p = producer(&b, &[("acks", "all")]).unwrap();
        let offs = produce_n(&p, &topic, 0, 1, |_| (vec![], b"after".to_vec()))
            .await
            .unwrap();
        assert_eq!(
            offs,
            vec![counts[0] as i64],
            "next offset after {how} restart"
        );
        counts[0] += 1;
    }
}
