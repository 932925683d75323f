//! The overview: what this broker is (version, uptime, listeners), how full its data
//! directory is (DescribeLogDirs), and live charts of produce and fetch traffic, connections
//! and request time. The figures and charts need DESCRIBE on the cluster, as `/metrics` and
//! DescribeLogDirs do; without it the page says so.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use kafka_protocol::messages::{ApiKey, DescribeLogDirsRequest, RequestKind};

use super::call::{expect_response, Caller};
use super::chart::{line_chart, Line};
use super::format;
use super::history::{Rates, INTERVAL, KEEP};
use super::page::{esc, html_response, Page, PageError, Section};
use crate::authz::AclOperation;
use crate::http::HttpApi;

pub fn routes() -> Router<Arc<HttpApi>> {
    Router::new()
        .route("/console", get(overview))
        .route("/console/fragments/overview-charts", get(charts_fragment))
}

async fn overview(caller: Caller) -> Result<Response, PageError> {
    let broker = caller.broker().clone();
    let console = caller.console()?;
    let mut page = Page::new(Section::Overview, "Overview");
    let listeners: Vec<String> = broker
        .config
        .listeners
        .iter()
        .map(|l| esc(&l.to_string()))
        .collect();
    let mut cards = vec![
        ("Version", esc(env!("CARGO_PKG_VERSION"))),
        ("Cluster id", esc(&broker.cluster_id)),
        ("Node id", broker.node_id().to_string()),
        (
            "Uptime",
            esc(&format::duration_ms(
                i64::try_from(console.started.elapsed().as_millis()).unwrap_or(i64::MAX),
            )),
        ),
        ("Listeners", listeners.join("<br>")),
    ];
    let may_describe = caller.may_cluster(AclOperation::Describe);
    if may_describe {
        let topics = broker.topics.list();
        let partitions: i32 = topics.iter().map(|t| t.partition_count()).sum();
        cards.push(("Topics", format::count(topics.len() as i64)));
        cards.push(("Partitions", format::count(i64::from(partitions))));
        cards.push((
            "Open connections",
            format::count(broker.metrics.connections_open()),
        ));
        for dir in log_dirs(&caller).await? {
            cards.push(("Data directory", esc(&dir.path)));
            cards.push(("Data stored", esc(&format::bytes(dir.used))));
            if dir.total > 0 {
                cards.push((
                    "Disk free",
                    esc(&format!(
                        "{} of {}",
                        format::bytes(dir.free),
                        format::bytes(dir.total)
                    )),
                ));
            }
        }
    }
    let mut html = String::from("<dl class=\"cards\">");
    for (name, value) in cards {
        let _ = write!(html, "<div><dt>{name}</dt><dd>{value}</dd></div>");
    }
    html.push_str("</dl><h2>Last minutes</h2>");
    if may_describe {
        let _ = write!(
            html,
            "<div class=\"charts\" data-refresh=\"/console/fragments/overview-charts\" \
             data-interval=\"{}\">{}</div>",
            INTERVAL.as_millis(),
            charts(&caller)
        );
    } else {
        html.push_str(
            "<p class=\"muted\">Traffic, storage and charts need DESCRIBE on the cluster.</p>",
        );
    }
    page.push(&html);
    Ok(page.render(&caller))
}

/// The charts alone, for the script's periodic reload.
async fn charts_fragment(caller: Caller) -> Result<Response, PageError> {
    if !caller.may_cluster(AclOperation::Describe) {
        return Err(PageError::forbidden(
            "not authorized to describe the cluster",
        ));
    }
    Ok(html_response(axum::http::StatusCode::OK, charts(&caller)).into_response())
}

/// One data directory as DescribeLogDirs reports it.
struct LogDirFigures {
    path: String,
    used: u64,
    free: u64,
    total: u64,
}

async fn log_dirs(caller: &Caller) -> Result<Vec<LogDirFigures>, PageError> {
    let request = DescribeLogDirsRequest::default().with_topics(None);
    let response = expect_response!(
        caller
            .kafka(
                ApiKey::DescribeLogDirs,
                4,
                RequestKind::DescribeLogDirs(request)
            )
            .await?,
        DescribeLogDirs
    )?;
    Ok(response
        .results
        .iter()
        .filter(|r| r.error_code == 0)
        .map(|r| LogDirFigures {
            path: r.log_dir.to_string(),
            used: r
                .topics
                .iter()
                .flat_map(|t| t.partitions.iter())
                .map(|p| u64::try_from(p.partition_size).unwrap_or(0))
                .sum(),
            free: u64::try_from(r.usable_bytes).unwrap_or(0),
            total: u64::try_from(r.total_bytes).unwrap_or(0),
        })
        .collect())
}

fn charts(caller: &Caller) -> String {
    let Ok(console) = caller.console() else {
        return String::new();
    };
    let rates = console.history.rates();
    let now = caller.broker().clock.now_ms();
    let span = i64::try_from(INTERVAL.as_millis()).unwrap_or(5000) * KEEP as i64;
    let series = |f: fn(&Rates) -> f64| -> Vec<(i64, f64)> {
        rates.iter().map(|r| (r.t_ms, f(r))).collect()
    };
    let (pb, fb) = (series(|r| r.produce_bytes), series(|r| r.fetch_bytes));
    let (pr, fr) = (series(|r| r.produce_records), series(|r| r.fetch_records));
    let (conns, latency) = (series(|r| r.connections), series(|r| r.request_ms));
    let bytes_rate = |v: f64| format!("{}/s", format::bytes(v as u64));
    let mut out = String::new();
    out.push_str(&line_chart(
        "Bytes produced and fetched",
        &[
            Line {
                name: "produce",
                points: &pb,
            },
            Line {
                name: "fetch",
                points: &fb,
            },
        ],
        now,
        span,
        bytes_rate,
    ));
    out.push_str(&line_chart(
        "Records produced and fetched",
        &[
            Line {
                name: "produce",
                points: &pr,
            },
            Line {
                name: "fetch",
                points: &fr,
            },
        ],
        now,
        span,
        format::rate,
    ));
    out.push_str(&line_chart(
        "Open connections",
        &[Line {
            name: "connections",
            points: &conns,
        }],
        now,
        span,
        |v| format!("{v:.0}"),
    ));
    out.push_str(&line_chart(
        "Mean request time",
        &[Line {
            name: "all requests",
            points: &latency,
        }],
        now,
        span,
        |v| format!("{v:.2} ms"),
    ));
    if rates.is_empty() {
        out.push_str("<p class=\"muted\">The charts fill in as samples are taken (every 5 s).</p>");
    }
    out
}
