//! Compacted topics filled directly through the topic registry (no Kafka client), for the
//! table snapshot and HTTP API tests.

use std::collections::BTreeMap;
use std::sync::Arc;

use skiff_broker::Broker;
use skiff_log::AppendValidation;
use skiff_records::{BatchBuilder, Compression};

/// Creates `name` with `partitions` partitions and `cleanup.policy=policy`.
pub async fn compacted_topic(broker: &Arc<Broker>, name: &str, partitions: i32, policy: &str) {
    topic_with(broker, name, partitions, &[("cleanup.policy", policy)]).await;
}

/// Creates `name` with `partitions` partitions and the given topic configs.
pub async fn topic_with(
    broker: &Arc<Broker>,
    name: &str,
    partitions: i32,
    configs: &[(&str, &str)],
) {
    let b = broker.clone();
    let name = name.to_string();
    let overrides: BTreeMap<String, String> = configs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    tokio::task::spawn_blocking(move || {
        b.topics
            .create(&name, partitions, overrides, false)
            .unwrap();
    })
    .await
    .unwrap();
}

/// Appends one batch of `(key, value)` records to `topic`-`partition`.
pub async fn produce(
    broker: &Arc<Broker>,
    topic: &str,
    partition: i32,
    recs: &[(&[u8], Option<&[u8]>)],
) {
    let b = broker.clone();
    let topic = topic.to_string();
    let recs: Vec<(Vec<u8>, Option<Vec<u8>>)> = recs
        .iter()
        .map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec)))
        .collect();
    tokio::task::spawn_blocking(move || {
        let mut builder = BatchBuilder::new(0, Compression::None);
        for (k, v) in &recs {
            builder.push(1000, Some(k), v.as_deref(), &[(b"h", Some(b"\xff"))]);
        }
        let p = b.topics.get(&topic).unwrap().partition(partition).unwrap();
        p.log
            .append(
                &builder.build().unwrap(),
                0,
                &AppendValidation { now_ms: 1000 },
            )
            .unwrap();
    })
    .await
    .unwrap();
}
