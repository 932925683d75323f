//! The console's overview page and its guards over real HTTP: the page, its live-chart
//! fragment, the assets, `/` redirecting to it, the security headers, and the console being
//! absent when `skiff.console.enable=false`. Browser tests are in tests/rdkafka/tests/console.rs.
#![allow(clippy::unwrap_used)]

mod common;

use common::http::{get, post_form, serve_api};
use hyper::header::{CONTENT_SECURITY_POLICY, CONTENT_TYPE, LOCATION};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overview_page_fragment_and_assets() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    common::tables::compacted_topic(&broker, "orders", 3, "delete").await;
    let api = serve_api(broker.clone()).await;

    let r = get(&api, "/console").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers[CONTENT_TYPE], "text/html; charset=utf-8");
    assert!(r.headers[CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap()
        .contains("script-src 'self'"));
    let html = r.text();
    assert!(html.contains("<h1>Overview</h1>"), "{html}");
    assert!(
        html.contains(&format!("<dd>{}</dd>", broker.cluster_id)),
        "{html}"
    );
    // One user topic of three partitions (internal topics are created on first use or not).
    let topics = broker.topics.list().len();
    assert!(
        html.contains(&format!("<dt>Topics</dt><dd>{topics}</dd>")),
        "{html}"
    );
    assert!(html.contains("data-refresh=\"/console/fragments/overview-charts\""));

    let r = get(&api, "/console/fragments/overview-charts").await;
    assert_eq!(r.status, 200);
    assert!(r.text().contains("<svg"));

    let css = format!("/console/assets/{}/console.css", env!("CARGO_PKG_VERSION"));
    assert!(html.contains(&css));
    let r = get(&api, &css).await;
    assert_eq!(
        (r.status, r.headers[CONTENT_TYPE].to_str().unwrap()),
        (200, "text/css; charset=utf-8")
    );
    assert_eq!(get(&api, "/console/assets/x/nope.js").await.status, 404);

    let r = get(&api, "/").await;
    assert_eq!(r.status, 303);
    assert_eq!(r.headers[LOCATION], "/console");
    // Unknown console paths and methods keep the API's answers.
    assert_eq!(get(&api, "/console/nope").await.status, 404);
    assert_eq!(
        post_form(&api, "/console", &[], true, None).await.status,
        405
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_off_serves_only_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path())
        .sets(&["skiff.console.enable=false"])
        .start()
        .await;
    let api = serve_api(broker.clone()).await;
    assert_eq!(get(&api, "/console").await.status, 404);
    assert_eq!(get(&api, "/").await.status, 404);
    assert_eq!(get(&api, "/metrics").await.status, 200);
}
