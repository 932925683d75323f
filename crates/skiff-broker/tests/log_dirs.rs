//! DescribeLogDirs reports each partition's size and the filesystem's space.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use kafka_protocol::messages::{
    ApiKey, DescribeLogDirsRequest, RequestHeader, RequestKind, ResponseKind,
};
use skiff_broker::dispatch::{dispatch, Reply};
use skiff_broker::Broker;
use skiff_protocol::DecodedRequest;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sizes_and_space_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let broker: Arc<Broker> = common::broker(dir.path()).start().await;
    let b = broker.clone();
    let size = tokio::task::spawn_blocking(move || {
        let topic = b
            .topics
            .create("sized", 2, Default::default(), false)
            .unwrap();
        let mut builder = skiff_records::BatchBuilder::new(0, skiff_records::Compression::None);
        builder.push(1_700_000_000_000, Some(b"k"), Some(&[7u8; 1000]), &[]);
        let batch = builder.build().unwrap();
        let log = &topic.partition(1).unwrap().log;
        log.append(
            &batch,
            0,
            &skiff_log::AppendValidation {
                now_ms: 1_700_000_000_000,
            },
        )
        .unwrap();
        log.size_bytes()
    })
    .await
    .unwrap();
    assert!(size > 1000);
    let request = DecodedRequest {
        api_key: ApiKey::DescribeLogDirs.into(),
        api_version: 4,
        header: RequestHeader::default(),
        body: RequestKind::DescribeLogDirs(DescribeLogDirsRequest::default().with_topics(None))
            .into(),
    };
    let Reply::Respond(ResponseKind::DescribeLogDirs(response)) =
        dispatch(&broker, request, "/127.0.0.1").await
    else {
        panic!("unexpected reply");
    };
    assert_eq!(response.results.len(), 1);
    let result = &response.results[0];
    assert_eq!(result.error_code, 0);
    assert!(
        result.total_bytes > 0
            && result.usable_bytes > 0
            && result.usable_bytes <= result.total_bytes
    );
    let topic = result
        .topics
        .iter()
        .find(|t| t.name.0.as_str() == "sized")
        .unwrap();
    let sizes: Vec<(i32, i64)> = topic
        .partitions
        .iter()
        .map(|p| (p.partition_index, p.partition_size))
        .collect();
    assert!(sizes.contains(&(0, 0)), "{sizes:?}");
    assert!(
        sizes.contains(&(1, i64::try_from(size).unwrap())),
        "{sizes:?}"
    );
}
