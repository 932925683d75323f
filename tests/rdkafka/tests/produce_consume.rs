//! Produce and consume through librdkafka (rdkafka crate) against the real binary:
//! round trip with keys and headers, every compression codec, acks 0/1/all, topic
//! auto-creation by a producer, and the Fetch long poll woken by an append.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use rdkafka::consumer::Consumer;
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::FutureRecord;
use rdkafka::Offset;
use skiff_e2e::{unique_topic, Broker};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trip_1000_records_with_keys_and_headers() {
    let b = Broker::start().unwrap();
    let topic = unique_topic("roundtrip");
    create_topic(&admin(&b).unwrap(), &topic, 1, &[])
        .await
        .unwrap();
    let p = producer(&b, &[("acks", "all")]).unwrap();

    let mut futs = Vec::new();
    for i in 0..1000u32 {
        let key = format!("key-{i}");
        let value = format!("value-{i}-{}", "x".repeat((i % 50) as usize));
        let headers = OwnedHeaders::new()
            .insert(Header {
                key: "seq",
                value: Some(&i.to_be_bytes()),
            })
            .insert(Header {
                key: "empty",
                value: None::<&[u8]>,
            });
        let rec = FutureRecord::to(&topic)
            .partition(0)
            .key(&key)
            .payload(&value)
            .headers(headers);
        futs.push(p.send_result(rec).map_err(|(e, _)| e).unwrap());
    }
    for (i, f) in futs.into_iter().enumerate() {
        let d = tokio::time::timeout(OP_TIMEOUT, f).await.unwrap().unwrap();
        let d = d.map_err(|(e, _)| e).unwrap();
        assert_eq!(d.offset, i as i64, "delivery offset of record {i}");
    }

    let c = consumer(&b, &[]).unwrap();
    let recs = consume_n(&c, &topic, 0, Offset::Beginning, 1000, OP_TIMEOUT).unwrap();
    for (i, r) in recs.iter().enumerate() {
        assert_eq!(r.offset, i as i64);
        assert_eq!(r.key.as_deref(), Some(format!("key-{i}").as_bytes()));
        let want = format!("value-{i}-{}", "x".repeat(i % 50));
        assert_eq!(r.value.as_deref(), Some(want.as_bytes()));
        assert_eq!(
            r.headers,
            vec![
                ("seq".to_string(), Some((i as u32).to_be_bytes().to_vec())),
                ("empty".to_string(), None)
            ]
        );
        assert!(
            r.timestamp.is_some_and(|t| t > 0),
            "record {i} has no timestamp"
        );
    }
    let (low, high) = c.fetch_watermarks(&topic, 0, OP_TIMEOUT).unwrap();
    assert_eq!((low, high), (0, 1000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_compression_codec_round_trips() {
    let b = Broker::start().unwrap();
    let a = admin(&b).unwrap();
    let c = consumer(&b, &[]).unwrap();
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let topic = unique_topic(&format!("codec-{codec}"));
        create_topic(&a, &topic, 1, &[]).await.unwrap();
        let p = producer(&b, &[("compression.type", codec), ("linger.ms", "20")]).unwrap();
        let make = |i: usize| {
            (
                format!("k{i}").into_bytes(),
                format!("{codec} record {i} {}", "compressible ".repeat(20)).into_bytes(),
            )
        };
        let offsets = produce_n(&p, &topic, 0, 300, make)
            .await
            .unwrap_or_else(|e| panic!("produce with {codec}: {e:#}"));
        assert_eq!(offsets, (0..300).collect::<Vec<i64>>(), "{codec} offsets");
        let recs = consume_n(&c, &topic, 0, Offset::Beginning, 300, OP_TIMEOUT)
            .unwrap_or_else(|e| panic!("consume with {codec}: {e:#}"));
        for (i, r) in recs.iter().enumerate() {
            let (k, v) = make(i);
            assert_eq!(r.offset, i as i64, "{codec}");
            assert_eq!(r.key.as_deref(), Some(&k[..]), "{codec} key {i}");
            assert_eq!(r.value.as_deref(), Some(&v[..]), "{codec} value {i}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_0_1_and_all() {
    let b = Broker::start().unwrap();
    let a = admin(&b).unwrap();
    let c = consumer(&b, &[]).unwrap();
    for acks in ["0", "1", "all"] {
        let topic = unique_topic(&format!("acks-{acks}"));
        create_topic(&a, &topic, 1, &[]).await.unwrap();
        let p = producer(&b, &[("acks", acks)]).unwrap();
        let make = |i: usize| {
            (
                format!("k{i}").into_bytes(),
                format!("acks={acks} #{i}").into_bytes(),
            )
        };
        let offsets = produce_n(&p, &topic, 0, 200, make)
            .await
            .unwrap_or_else(|e| panic!("produce acks={acks}: {e:#}"));
        if acks == "0" {
            // With acks=0 the broker sends no response, so librdkafka cannot know offsets.
            assert!(
                offsets.iter().all(|&o| o < 0),
                "acks=0 offsets: {:?}",
                &offsets[..5]
            );
        } else {
            assert_eq!(offsets, (0..200).collect::<Vec<i64>>(), "acks={acks}");
        }
        let recs = consume_n(&c, &topic, 0, Offset::Beginning, 200, OP_TIMEOUT)
            .unwrap_or_else(|e| panic!("consume acks={acks}: {e:#}"));
        for (i, r) in recs.iter().enumerate() {
            assert_eq!(r.offset, i as i64, "acks={acks}");
            assert_eq!(
                r.value.as_deref(),
                Some(make(i).1.as_slice()),
                "acks={acks}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producing_to_an_unknown_topic_auto_creates_it() {
    let b = Broker::start().unwrap();
    let topic = unique_topic("autocreate");
    let p = producer(&b, &[]).unwrap();
    let offsets = produce_n(&p, &topic, 0, 10, |i| {
        (vec![i as u8], format!("auto {i}").into_bytes())
    })
    .await
    .unwrap();
    assert_eq!(offsets, (0..10).collect::<Vec<i64>>());
    let c = consumer(&b, &[]).unwrap();
    // num.partitions defaults to 1, like Kafka.
    wait_topic_partitions(&c, &topic, 1).unwrap();
    let recs = consume_n(&c, &topic, 0, Offset::Beginning, 10, OP_TIMEOUT).unwrap();
    assert_eq!(recs[9].value.as_deref(), Some(&b"auto 9"[..]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_create_honours_num_partitions() {
    let b = Broker::start_with(&[("num.partitions", "3")]).unwrap();
    let topic = unique_topic("autocreate3");
    let p = producer(&b, &[]).unwrap();
    produce_n(&p, &topic, 2, 1, |_| (b"k".to_vec(), b"v".to_vec()))
        .await
        .unwrap();
    let c = consumer(&b, &[]).unwrap();
    wait_topic_partitions(&c, &topic, 3).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_long_poll_is_woken_by_a_produce() {
    let b = Broker::start().unwrap();
    let topic = unique_topic("longpoll");
    create_topic(&admin(&b).unwrap(), &topic, 1, &[])
        .await
        .unwrap();
    let c = consumer(&b, &[("fetch.wait.max.ms", "5000")]).unwrap();
    let mut tpl = rdkafka::TopicPartitionList::new();
    tpl.add_partition_offset(&topic, 0, Offset::Offset(0))
        .unwrap();
    c.assign(&tpl).unwrap();
    // Let the consumer reach the end of the empty partition and park a Fetch.
    assert!(c.poll(Duration::from_millis(1000)).is_none());

    let bs = b.bootstrap();
    let t2 = topic.clone();
    let produced_at = std::sync::Arc::new(std::sync::Mutex::new(None));
    let pa = produced_at.clone();
    let producer_task = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let mut cfg = rdkafka::ClientConfig::new();
        cfg.set("bootstrap.servers", bs).set("linger.ms", "0");
        let p: rdkafka::producer::FutureProducer = cfg.create().unwrap();
        *pa.lock().unwrap() = Some(Instant::now());
        p.send(
            FutureRecord::to(&t2).partition(0).key("k").payload("woken"),
            OP_TIMEOUT,
        )
        .await
        .map_err(|(e, _)| e)
        .unwrap();
    });

    let deadline = Instant::now() + Duration::from_secs(15);
    let got = loop {
        assert!(
            Instant::now() < deadline,
            "record produced while a Fetch was parked never arrived"
        );
        match c.poll(Duration::from_millis(200)) {
            None => {}
            Some(Err(e)) => panic!("consumer error while long-polling: {e}"),
            Some(Ok(m)) => break (detach(&m), Instant::now()),
        }
    };
    let (got, arrived) = got;
    producer_task.await.unwrap();
    assert_eq!(got.offset, 0);
    assert_eq!(got.value.as_deref(), Some(&b"woken"[..]));
    let at = produced_at.lock().unwrap().unwrap();
    eprintln!(
        "long poll: record arrived {:?} after the produce started",
        arrived.saturating_duration_since(at)
    );
}
