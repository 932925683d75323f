//! Shared setup of the console's browser tests: a broker with the HTTP listener (and the
//! console) on a free port, data written by librdkafka clients, and the headless browser
//! ([`browser`]). Each case file has one `use crate::console_support::*;`.

pub mod browser;

pub(crate) use std::time::Duration;

pub(crate) use anyhow::Result;
pub(crate) use rdkafka::consumer::{BaseConsumer, Consumer};
pub(crate) use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
pub(crate) use rdkafka::{Offset, TopicPartitionList};
pub(crate) use skiff_e2e::{free_port, unique_topic, Broker};

pub(crate) use self::browser::{Browser, LAPTOP, PHONE};
pub(crate) use crate::common;
pub(crate) use crate::common::{admin, consumer, create_topic, producer, OP_TIMEOUT};

pub(crate) const T: Duration = Duration::from_secs(30);

/// A broker with the HTTP API and console on a second free loopback port; returns it and
/// that address.
pub(crate) fn start(extra: &[(&str, &str)]) -> (Broker, String) {
    let addr = format!("127.0.0.1:{}", free_port().unwrap());
    let mut props: Vec<(&str, &str)> = vec![
        ("skiff.http.listener", &addr),
        ("log.cleaner.backoff.ms", "100"),
    ];
    props.extend_from_slice(extra);
    (Broker::start_with(&props).unwrap(), addr)
}

/// Writes `count` records `key-i` → `value-i` (keys cycling over `keys`) with librdkafka and
/// waits for every delivery.
pub(crate) async fn write(b: &Broker, topic: &str, count: usize, keys: usize) {
    let p: FutureProducer = producer(b, &[("linger.ms", "5")]).unwrap();
    let mut pending = Vec::with_capacity(count);
    for i in 0..count {
        let key = format!("key-{}", i % keys.max(1));
        let value = format!("{{\"n\":{i},\"key\":\"{key}\"}}");
        pending.push(
            p.send_result(FutureRecord::to(topic).key(&key).payload(&value))
                .unwrap(),
        );
    }
    for d in pending {
        d.await.unwrap().map_err(|(e, _)| e).unwrap();
    }
    p.flush(T).unwrap();
}

/// The (low, high) watermarks librdkafka reports for a partition.
pub(crate) fn watermarks(b: &Broker, topic: &str, partition: i32) -> (i64, i64) {
    let c: BaseConsumer = consumer(b, &[]).unwrap();
    c.fetch_watermarks(topic, partition, OP_TIMEOUT).unwrap()
}

/// Checks a page as every page is checked: it loaded without browser console errors and
/// passes the accessibility checks, at laptop and at phone width (no sideways page scroll).
pub(crate) async fn check_page(browser: &Browser, name: &str) -> Result<()> {
    browser.assert_no_console_errors(name).await?;
    let problems = browser.accessibility_problems().await?;
    anyhow::ensure!(problems.is_empty(), "{name}: accessibility: {problems:#?}");
    browser.resize(PHONE).await?;
    let overflows = browser.overflows_sideways().await?;
    browser.resize(LAPTOP).await?;
    anyhow::ensure!(!overflows, "{name}: the page scrolls sideways on a phone");
    Ok(())
}

/// [`check_page`] for a refusal page: the browser logs the page's own 403 as an error, so
/// those entries (and only those) are expected before the usual checks.
pub(crate) async fn check_refusal_page(browser: &Browser, name: &str) -> Result<()> {
    let unexpected: Vec<String> = browser
        .console_errors()
        .await?
        .into_iter()
        .filter(|e| !e.contains("status of 403"))
        .collect();
    anyhow::ensure!(
        unexpected.is_empty(),
        "{name}: browser console errors: {unexpected:#?}"
    );
    check_page(browser, name).await
}
