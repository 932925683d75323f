//! The overview page: broker figures, live charts that refresh without a reload.

use crate::console_support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overview_shows_the_broker_and_its_charts_refresh_live() -> Result<()> {
    let (b, http) = start(&[]);
    let topic = unique_topic("console-overview");
    create_topic(&admin(&b)?, &topic, 3, &[]).await?;
    write(&b, &topic, 300, 30).await;

    let browser = Browser::start(&http).await?;
    browser.open("/console").await?;
    assert_eq!(browser.text("h1").await?, "Overview");
    let cards = browser.text("dl.cards").await?;
    assert!(cards.contains(env!("CARGO_PKG_VERSION")), "{cards}");
    // The chart region is reloaded by the script every 5 s: wait until a sample with
    // traffic shows up in its text alternative, without reloading the page.
    let charts = browser.find("[data-refresh]").await?;
    let first = charts.text().await?;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut now;
    loop {
        // Keep traffic flowing so the rates are not zero.
        write(&b, &topic, 50, 10).await;
        tokio::time::sleep(Duration::from_millis(700)).await;
        now = browser.find("[data-refresh]").await?.text().await?;
        if now != first && !now.contains("no data yet") {
            break;
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "charts did not refresh: {now}"
        );
    }
    let labels: Vec<String> = browser
        .client
        .execute(
            "return Array.from(document.querySelectorAll('svg[role=img]')).map(s => s.getAttribute('aria-label'))",
            vec![],
        )
        .await
        .map(|v| serde_json::from_value(v).unwrap())?;
    assert_eq!(labels.len(), 4, "{labels:?}");
    assert!(
        labels[0].starts_with("Bytes produced and fetched: now produce "),
        "{labels:?}"
    );
    check_page(&browser, "overview").await?;
    browser.screenshot("overview").await?;
    browser.resize(PHONE).await?;
    browser.screenshot("overview-phone").await?;
    browser.close().await
}
