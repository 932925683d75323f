//! A tour of the whole console: from `/console`, every same-origin console link reachable is
//! opened in the browser and checked as every page is (no console errors, accessibility,
//! no sideways scroll on a phone), and none of them is an error page.

use std::collections::{BTreeSet, VecDeque};

use rdkafka::consumer::CommitMode;

use crate::console_support::*;

/// Pages the tour opens at most.
pub(crate) const MAX_PAGES: usize = 60;

/// Query parameters that only page through the same view (older/newer records, a chosen
/// start, one partition of the fifty of `__consumer_offsets`): two links differing only in
/// their values are the same page for the tour.
const PAGING: [&str; 5] = ["offset", "timestamp", "limit", "done", "partition"];

/// The console links of the current page: same origin, under `/console`, not the assets,
/// without the fragment.
pub(crate) async fn console_links(browser: &Browser) -> Result<Vec<String>> {
    let hrefs = browser
        .client
        .execute(
            "return Array.from(document.querySelectorAll('a[href]')).map(a => a.href)",
            vec![],
        )
        .await?;
    let hrefs: Vec<String> = serde_json::from_value(hrefs)?;
    let mut out = Vec::new();
    for h in hrefs {
        let Some(rest) = h.strip_prefix(&browser.origin) else {
            continue;
        };
        let rest = rest.split('#').next().unwrap_or_default();
        let path = rest.split('?').next().unwrap_or_default();
        if (path == "/console" || path.starts_with("/console/"))
            && !path.starts_with("/console/assets/")
        {
            out.push(rest.to_string());
        }
    }
    Ok(out)
}

/// What makes two links the same page for the tour: the path and the query without its
/// paging parameters (their names are kept, not their values).
fn tour_key(link: &str) -> String {
    let (path, query) = link.split_once('?').unwrap_or((link, ""));
    let mut params: Vec<String> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            if PAGING.contains(&k) {
                k.to_string()
            } else {
                format!("{k}={v}")
            }
        })
        .collect();
    params.sort();
    format!("{path}?{}", params.join("&"))
}

/// One page the tour opened: its path and query, and how many `<form method=post>` it has.
pub(crate) struct Visit {
    pub path: String,
    pub post_forms: usize,
}

/// Crawls from `start`: opens every reachable console link once (by [`tour_key`]), at most
/// `max` pages, checks each with [`check_page`] and fails on an error page; returns the pages
/// opened, in order.
pub(crate) async fn crawl(browser: &Browser, start: &str, max: usize) -> Result<Vec<Visit>> {
    let mut queue = VecDeque::from([start.to_string()]);
    let mut seen = BTreeSet::from([tour_key(start)]);
    let mut visited = Vec::new();
    while let Some(link) = queue.pop_front() {
        if visited.len() >= max {
            break;
        }
        browser.open(&link).await?;
        browser.wait_loaded().await?;
        let h1 = browser.text("h1").await?;
        // An error page's heading is its status ("403 Forbidden"): no link may lead there.
        anyhow::ensure!(
            !h1.chars().take(3).all(|c| c.is_ascii_digit()),
            "{link} is an error page: {h1}: {}",
            browser.text("main").await.unwrap_or_default()
        );
        check_page(browser, &link).await?;
        let post_forms = browser.find_all("form[method=post i]").await?.len();
        for next in console_links(browser).await? {
            if seen.insert(tour_key(&next)) {
                queue.push_back(next);
            }
        }
        visited.push(Visit {
            path: link,
            post_forms,
        });
    }
    Ok(visited)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_console_page_reachable_from_the_overview_is_clean() -> Result<()> {
    let started = std::time::Instant::now();
    let (b, http) = start(&[]);
    let plain = unique_topic("console-tour-plain");
    let table = unique_topic("console-tour-table");
    let a = admin(&b)?;
    create_topic(&a, &plain, 2, &[]).await?;
    create_topic(
        &a,
        &table,
        1,
        &[
            ("cleanup.policy", "compact"),
            ("min.cleanable.dirty.ratio", "0.01"),
        ],
    )
    .await?;
    write(&b, &plain, 120, 12).await;
    write(&b, &table, 300, 5).await;

    // A consumer group with committed offsets (librdkafka, manual assignment, no members
    // left: the group is Empty).
    let group = format!("{plain}-group");
    let c: BaseConsumer = consumer(&b, &[("group.id", &group)])?;
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(&plain, 0, Offset::Offset(7))?;
    tpl.add_partition_offset(&plain, 1, Offset::Offset(3))?;
    c.commit(&tpl, CommitMode::Sync)?;
    let committed = c.committed_offsets(tpl.clone(), OP_TIMEOUT)?;
    assert_eq!(
        committed.find_partition(&plain, 0).map(|p| p.offset()),
        Some(Offset::Offset(7))
    );
    drop(c);

    let browser = Browser::start(&http).await?;
    let visits = crawl(&browser, "/console", MAX_PAGES).await?;
    let visited: Vec<String> = visits.into_iter().map(|v| v.path).collect();
    eprintln!(
        "tour: {} pages in {:?}: {visited:#?}",
        visited.len(),
        started.elapsed()
    );
    assert_reached(&visited, &plain, &table, &group)?;
    browser.close().await
}

/// Fails unless the tour opened the overview, the topics, `plain`'s page and messages, the
/// groups, `group`'s page, the compaction overview and `table`'s compaction page.
pub(crate) fn assert_reached(
    visited: &[String],
    plain: &str,
    table: &str,
    group: &str,
) -> Result<()> {
    let has = |pred: &dyn Fn(&str) -> bool| visited.iter().any(|p| pred(p));
    let path = |p: &str| p.split('?').next().unwrap_or_default().to_string();
    let plain_page = format!("/console/topics/{plain}");
    let messages = format!("/console/topics/{plain}/messages");
    let group_page = format!("/console/groups/{group}");
    let table_compaction = format!("/console/topics/{table}/compaction");
    for (what, ok) in [
        ("the overview", has(&|p| p == "/console")),
        ("the topics", has(&|p| p == "/console/topics")),
        ("a topic page", has(&|p| path(p) == plain_page)),
        ("the messages", has(&|p| path(p) == messages)),
        ("the groups", has(&|p| p == "/console/groups")),
        ("the group page", has(&|p| path(p) == group_page)),
        (
            "the compaction overview",
            has(&|p| p == "/console/compaction"),
        ),
        (
            "a topic's compaction page",
            has(&|p| path(p) == table_compaction),
        ),
    ] {
        anyhow::ensure!(ok, "the tour did not reach {what}: {visited:#?}");
    }
    Ok(())
}
