//! The Topics pages: the list of the topics the caller may describe (partitions, records,
//! size, growth, cleanup.policy and the configs that differ from the defaults), one topic's
//! partitions (offsets, sizes, segments), size chart and configs, and the actions create,
//! delete and (in [`topic_configs`]) change a config.
//!
//! Every figure and action is a Kafka request run as the caller (Metadata, ListOffsets,
//! DescribeLogDirs, DescribeConfigs, CreateTopics, DeleteTopics), so the page lists exactly
//! what a Kafka client of that principal would see and refuses what its ACLs refuse, with
//! the Kafka error names. Only the segment counts and the size history, which no Kafka
//! request reports, are read from the broker, behind the same DESCRIBE check.

#[path = "topic_configs.rs"]
mod topic_configs;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_log_dirs_request::DescribableLogDirTopic;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreateTopicsRequest, DeleteTopicsRequest, DescribeLogDirsRequest,
    ListOffsetsRequest, MetadataRequest, MetadataResponse, RequestKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use serde::Deserialize;

use super::call::{expect_response, Caller};
use super::chart::{line_chart, Line};
use super::format;
use super::forms::{self, Action};
use super::history::{
    topic_record_rate, topic_records_series, topic_size_series, History, INTERVAL, KEEP,
};
use super::page::{esc, html_response, notice, table, url, Page, PageError, Section};
use crate::authz::{AclOperation, ResourceType};
use crate::http::HttpApi;

use topic_configs::describe_configs;

pub fn routes() -> Router<Arc<HttpApi>> {
    Router::new()
        .route("/console/topics", get(list).post(create))
        .route("/console/topics/{topic}", get(detail))
        .route("/console/topics/{topic}/charts", get(charts_fragment))
        .route("/console/topics/{topic}/config", post(topic_configs::alter))
        .route("/console/topics/{topic}/delete", post(delete))
}

/// `?done=`: the notice of the action that redirected here.
#[derive(Deserialize, Default)]
pub struct Done {
    pub done: Option<String>,
}

// ---------------------------------------------------------------------------------------
// Helpers the topic and message pages share.

pub fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

pub fn topic_name(s: &str) -> TopicName {
    TopicName(str_bytes(s))
}

/// Kafka's name of an error code: `TOPIC_AUTHORIZATION_FAILED`.
pub fn error_name(code: i16) -> String {
    match ResponseError::try_from_code(code) {
        None => "NONE".to_string(),
        Some(ResponseError::Unknown(c)) => format!("UNKNOWN_ERROR_CODE_{c}"),
        Some(e) => {
            let camel = format!("{e:?}");
            let mut out = String::with_capacity(camel.len() + 8);
            for (i, c) in camel.chars().enumerate() {
                if c.is_ascii_uppercase() && i > 0 {
                    out.push('_');
                }
                out.push(c.to_ascii_uppercase());
            }
            out
        }
    }
}

/// A Kafka error code (non-zero) as the page the user sees: the error name and the
/// response's message (or Kafka's description of the code), with an HTTP status that says
/// whose fault it is.
pub fn kafka_failure(code: i16, message: Option<&str>) -> PageError {
    let status = match code {
        29 | 30 | 31 | 53 => StatusCode::FORBIDDEN,
        36 => StatusCode::CONFLICT,
        3 | 100 => StatusCode::NOT_FOUND,
        -1 | 56 => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::BAD_REQUEST,
    };
    let detail = match message.filter(|m| !m.is_empty()) {
        Some(m) => m.to_string(),
        None => ResponseError::try_from_code(code)
            .map(|e| e.to_string())
            .unwrap_or_default(),
    };
    PageError::new(status, format!("{}: {detail}", error_name(code)))
}

/// The refusal of a topic the caller may not describe: Kafka's error name and the same
/// text whether or not the topic exists (as the HTTP API's `topic_denied`).
pub fn topic_denied() -> PageError {
    PageError::forbidden("TOPIC_AUTHORIZATION_FAILED: not authorized to access this topic")
}

/// The caller may do `op` on `topic`, or the refusal of [`topic_denied`].
pub fn require_topic(caller: &Caller, op: AclOperation, topic: &str) -> Result<(), PageError> {
    if caller.may(op, ResourceType::Topic, topic) {
        Ok(())
    } else {
        Err(topic_denied())
    }
}

/// `page::table` with an id on the `<table>` (the browser tests find tables by id).
pub fn table_with_id(
    id: &str,
    caption: &str,
    headers: &[&str],
    numeric: &[bool],
    rows: &[Vec<String>],
) -> String {
    table(caption, headers, numeric, rows).replacen("<table>", &format!("<table id=\"{id}\">"), 1)
}

/// Metadata of all the topics the caller may describe (`None`) or of the named ones.
pub async fn metadata(
    caller: &Caller,
    topics: Option<&[&str]>,
) -> Result<MetadataResponse, PageError> {
    let request = MetadataRequest::default()
        .with_topics(topics.map(|names| {
            names
                .iter()
                .map(|n| MetadataRequestTopic::default().with_name(Some(topic_name(n))))
                .collect()
        }))
        .with_allow_auto_topic_creation(false);
    expect_response!(
        caller
            .kafka(ApiKey::Metadata, 12, RequestKind::Metadata(request))
            .await?,
        Metadata
    )
}

/// The partition count of `topic` from Metadata, or the page for its error (403 for a
/// topic the caller may not describe, the same whether or not it exists).
pub async fn partition_count(caller: &Caller, topic: &str) -> Result<i32, PageError> {
    require_topic(caller, AclOperation::Describe, topic)?;
    let response = metadata(caller, Some(&[topic])).await?;
    let t = response
        .topics
        .first()
        .ok_or_else(|| PageError::internal("Metadata answered no topic"))?;
    match t.error_code {
        0 => Ok(i32::try_from(t.partitions.len()).unwrap_or(i32::MAX)),
        29 => Err(topic_denied()),
        3 => Err(PageError::not_found(format!(
            "UNKNOWN_TOPIC_OR_PARTITION: no topic named {topic}"
        ))),
        code => Err(kafka_failure(code, None)),
    }
}

/// ListOffsets special timestamps.
pub const LATEST: i64 = -1;
pub const EARLIEST: i64 = -2;

/// One ListOffsets v8 lookup (read_uncommitted; `timestamp`: [`LATEST`], [`EARLIEST`] or
/// epoch ms) for each `(topic, partition)`: the offset (−1 when no record is that recent),
/// or the Kafka error code. One request, none when there is nothing to look up.
pub async fn list_offsets<'a>(
    caller: &Caller,
    partitions: impl IntoIterator<Item = &'a (String, i32)>,
    timestamp: i64,
) -> Result<HashMap<(String, i32), Result<i64, i16>>, PageError> {
    let mut by_topic: Vec<(String, Vec<i32>)> = Vec::new();
    for (t, p) in partitions {
        match by_topic.iter_mut().find(|(name, _)| name == t) {
            Some((_, ps)) => ps.push(*p),
            None => by_topic.push((t.clone(), vec![*p])),
        }
    }
    if by_topic.is_empty() {
        return Ok(HashMap::new());
    }
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_isolation_level(0)
        .with_timeout_ms(30_000)
        .with_topics(
            by_topic
                .iter()
                .map(|(t, ps)| {
                    ListOffsetsTopic::default()
                        .with_name(topic_name(t))
                        .with_partitions(
                            ps.iter()
                                .map(|p| {
                                    ListOffsetsPartition::default()
                                        .with_partition_index(*p)
                                        .with_timestamp(timestamp)
                                })
                                .collect(),
                        )
                })
                .collect(),
        );
    let response = expect_response!(
        caller
            .kafka(ApiKey::ListOffsets, 8, RequestKind::ListOffsets(request))
            .await?,
        ListOffsets
    )?;
    let mut out = HashMap::new();
    for t in &response.topics {
        for p in &t.partitions {
            let value = if p.error_code == 0 {
                Ok(p.offset)
            } else {
                Err(p.error_code)
            };
            out.insert((t.name.0.to_string(), p.partition_index), value);
        }
    }
    Ok(out)
}

/// Log start and end offsets of each partition: `(start, end)`, or None when ListOffsets
/// refused the partition.
async fn offset_ranges(
    caller: &Caller,
    partitions: &[(String, i32)],
) -> Result<HashMap<(String, i32), (i64, i64)>, PageError> {
    let earliest = list_offsets(caller, partitions, EARLIEST).await?;
    let latest = list_offsets(caller, partitions, LATEST).await?;
    Ok(earliest
        .into_iter()
        .filter_map(|(k, start)| {
            let end = latest.get(&k).copied()?.ok()?;
            Some((k, (start.ok()?, end)))
        })
        .collect())
}

/// Partition sizes in bytes: from DescribeLogDirs (which needs DESCRIBE on the cluster), or,
/// when the caller lacks it, from the partitions' logs (the size chart shows the same
/// figures to anyone who may describe the topic, and only such topics are asked for).
async fn partition_sizes(
    caller: &Caller,
    partitions: &[(String, i32)],
) -> Result<HashMap<(String, i32), u64>, PageError> {
    let mut out = HashMap::new();
    if caller.may_cluster(AclOperation::Describe) {
        let mut topics: Vec<DescribableLogDirTopic> = Vec::new();
        for (t, p) in partitions {
            match topics.iter_mut().find(|d| d.topic.0.as_str() == t) {
                Some(d) => d.partitions.push(*p),
                None => topics.push(
                    DescribableLogDirTopic::default()
                        .with_topic(topic_name(t))
                        .with_partitions(vec![*p]),
                ),
            }
        }
        let request = DescribeLogDirsRequest::default().with_topics(Some(topics));
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
        if response.error_code == 0 {
            for dir in response.results.iter().filter(|r| r.error_code == 0) {
                for t in &dir.topics {
                    for p in &t.partitions {
                        *out.entry((t.name.0.to_string(), p.partition_index))
                            .or_insert(0) += u64::try_from(p.partition_size).unwrap_or(0);
                    }
                }
            }
            return Ok(out);
        }
    }
    let broker = caller.broker();
    for (t, p) in partitions {
        if caller.may(AclOperation::Describe, ResourceType::Topic, t) {
            if let Some(part) = broker.topics.get(t).and_then(|topic| topic.partition(*p)) {
                out.insert((t.clone(), *p), part.log.size_bytes());
            }
        }
    }
    Ok(out)
}

/// The cleanup.policy select and its options.
const POLICIES: [&str; 3] = ["delete", "compact", "delete,compact"];

// ---------------------------------------------------------------------------------------
// The list.

/// GET /console/topics.
async fn list(caller: Caller, Query(q): Query<Done>) -> Result<Response, PageError> {
    let read_only = caller.console()?.read_only;
    let meta = metadata(&caller, None).await?;
    let mut topics: Vec<_> = meta
        .topics
        .iter()
        .filter(|t| t.error_code == 0)
        .filter_map(|t| {
            let name = t.name.as_ref()?.0.to_string();
            let mut parts: Vec<i32> = t.partitions.iter().map(|p| p.partition_index).collect();
            parts.sort_unstable();
            Some((name, t.is_internal, parts))
        })
        .collect();
    topics.sort_by(|a, b| a.0.cmp(&b.0));
    let all: Vec<(String, i32)> = topics
        .iter()
        .flat_map(|(n, _, ps)| ps.iter().map(move |p| (n.clone(), *p)))
        .collect();
    let (ranges, sizes) = if all.is_empty() {
        (HashMap::new(), HashMap::new())
    } else {
        (
            offset_ranges(&caller, &all).await?,
            partition_sizes(&caller, &all).await?,
        )
    };
    let names: Vec<&str> = topics.iter().map(|t| t.0.as_str()).collect();
    let configs = describe_configs(&caller, &names).await?;
    let history = caller.console()?.history.clone();

    let mut rows = Vec::with_capacity(topics.len());
    for (name, internal, parts) in &topics {
        let mut records = 0i64;
        let mut size = 0u64;
        let mut known = true;
        for p in parts {
            match ranges.get(&(name.clone(), *p)) {
                Some((start, end)) => records += (end - start).max(0),
                None => known = false,
            }
            size += sizes.get(&(name.clone(), *p)).copied().unwrap_or(0);
        }
        let link = format!(
            "<a href=\"/console/topics/{}\">{}</a>{}",
            url(name),
            esc(name),
            if *internal {
                " <span class=\"badge\">internal</span>"
            } else {
                ""
            }
        );
        let rate = topic_record_rate(&history, name)
            .map(format::rate)
            .unwrap_or_else(|| "-".to_string());
        let (policy, overrides) = match configs.get(name) {
            Some(Ok(entries)) => {
                let policy = entries
                    .iter()
                    .find(|c| c.name == "cleanup.policy")
                    .and_then(|c| c.value.clone())
                    .unwrap_or_default();
                let changed: Vec<String> = entries
                    .iter()
                    .filter(|c| c.non_default() && c.name != "cleanup.policy")
                    .map(|c| format!("<code>{}={}</code>", esc(&c.name), esc(&c.shown())))
                    .collect();
                (esc(&policy), changed.join("<br>"))
            }
            Some(Err(code)) => {
                let e = format!("<span class=\"muted\">{}</span>", esc(&error_name(*code)));
                (e.clone(), e)
            }
            None => (String::new(), String::new()),
        };
        rows.push(vec![
            link,
            format::count(i64::from(i32::try_from(parts.len()).unwrap_or(i32::MAX))),
            if known {
                format::count(records)
            } else {
                "-".to_string()
            },
            esc(&format::bytes(size)),
            esc(&rate),
            policy,
            overrides,
        ]);
    }

    let mut page = Page::new(Section::Topics, "Topics");
    page.push(&notice(q.done.as_deref()));
    page.push(&table_with_id(
        "topics",
        "Topics you may describe; records are end offsets minus log start offsets, the rate is of records produced in the last sample interval",
        &[
            "Topic",
            "Partitions",
            "Records",
            "Size",
            "Records produced",
            "cleanup.policy",
            "Configs that differ from the defaults",
        ],
        &[false, true, true, true, true, false, false],
        &rows,
    ));
    if !read_only {
        page.push(&create_form());
    }
    Ok(page.render(&caller))
}

fn create_form() -> String {
    let mut options = String::from("<option value=\"\">(broker default)</option>");
    for p in POLICIES {
        let _ = write!(options, "<option value=\"{p}\">{p}</option>");
    }
    format!(
        "<h2>Create a topic</h2>\
         <form id=\"create-topic\" class=\"topic-form\" method=\"post\" action=\"/console/topics\">\
         <label for=\"create-name\">Name</label>\
         <input id=\"create-name\" name=\"name\" required maxlength=\"249\" \
         pattern=\"[a-zA-Z0-9._\\-]+\" autocomplete=\"off\">\
         <label for=\"create-partitions\">Partitions</label>\
         <input id=\"create-partitions\" name=\"partitions\" type=\"number\" min=\"1\" value=\"1\">\
         <label for=\"create-policy\">cleanup.policy</label>\
         <select id=\"create-policy\" name=\"cleanup.policy\">{options}</select>\
         <label for=\"create-configs\">Other configs (one <code>key=value</code> a line)</label>\
         <textarea id=\"create-configs\" name=\"configs\" rows=\"3\" cols=\"40\" \
         placeholder=\"retention.ms=86400000\"></textarea>\
         <button type=\"submit\">Create topic</button></form>"
    )
}

#[derive(Deserialize)]
struct CreateForm {
    name: Option<String>,
    partitions: Option<String>,
    #[serde(rename = "cleanup.policy")]
    cleanup_policy: Option<String>,
    configs: Option<String>,
}

/// `key=value` lines (blank lines skipped), or a 400 naming the bad line.
pub fn parse_pairs(text: &str, what: &str) -> Result<Vec<(String, String)>, PageError> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (k, v) = line.split_once('=').ok_or_else(|| {
            PageError::bad_request(format!("{what}: {line:?} is not a key=value line"))
        })?;
        let k = k.trim();
        if k.is_empty() {
            return Err(PageError::bad_request(format!(
                "{what}: {line:?} has no key"
            )));
        }
        out.push((k.to_string(), v.trim().to_string()));
    }
    Ok(out)
}

/// POST /console/topics: CreateTopics as the caller.
async fn create(Action(caller): Action, Form(f): Form<CreateForm>) -> Result<Response, PageError> {
    let name = forms::required(&f.name, "name")?.to_string();
    let partitions = match f
        .partitions
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        None => -1,
        Some(p) => p.parse::<i32>().map_err(|_| {
            PageError::bad_request(format!("partitions: {p:?} is not a whole number"))
        })?,
    };
    let mut configs = Vec::new();
    if let Some(policy) = f
        .cleanup_policy
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        configs.push(("cleanup.policy".to_string(), policy.to_string()));
    }
    configs.extend(parse_pairs(f.configs.as_deref().unwrap_or(""), "configs")?);
    let topic = CreatableTopic::default()
        .with_name(topic_name(&name))
        .with_num_partitions(partitions)
        .with_replication_factor(-1)
        .with_configs(
            configs
                .iter()
                .map(|(k, v)| {
                    CreatableTopicConfig::default()
                        .with_name(str_bytes(k))
                        .with_value(Some(str_bytes(v)))
                })
                .collect(),
        );
    let request = CreateTopicsRequest::default()
        .with_topics(vec![topic])
        .with_timeout_ms(30_000)
        .with_validate_only(false);
    let response = expect_response!(
        caller
            .kafka(ApiKey::CreateTopics, 7, RequestKind::CreateTopics(request))
            .await?,
        CreateTopics
    )?;
    let result = response
        .topics
        .first()
        .ok_or_else(|| PageError::internal("CreateTopics answered no topic"))?;
    if result.error_code != 0 {
        return Err(kafka_failure(
            result.error_code,
            result.error_message.as_deref(),
        ));
    }
    Ok(forms::done(
        &format!("/console/topics/{}", url(&name)),
        &format!(
            "Created topic {name} with {} partition(s)",
            result.num_partitions
        ),
    )
    .into_response())
}

// ---------------------------------------------------------------------------------------
// One topic.

/// GET /console/topics/{topic}.
async fn detail(
    caller: Caller,
    Path(topic): Path<String>,
    Query(q): Query<Done>,
) -> Result<Response, PageError> {
    let read_only = caller.console()?.read_only;
    let count = partition_count(&caller, &topic).await?;
    let parts: Vec<(String, i32)> = (0..count).map(|p| (topic.clone(), p)).collect();
    let ranges = offset_ranges(&caller, &parts).await?;
    let sizes = partition_sizes(&caller, &parts).await?;
    // Segment counts: no Kafka request reports them; DESCRIBE was checked above.
    let local = caller.broker().topics.get(&topic);
    let mut rows = Vec::with_capacity(parts.len());
    for key in &parts {
        let (start, end) = match ranges.get(key) {
            Some((s, e)) => (format::count(*s), format::count(*e)),
            None => ("-".to_string(), "-".to_string()),
        };
        let size = sizes
            .get(key)
            .map(|s| esc(&format::bytes(*s)))
            .unwrap_or_else(|| "-".to_string());
        let segments = local
            .as_ref()
            .and_then(|t| t.partition(key.1))
            .map(|p| format::count(i64::try_from(p.log.segment_count()).unwrap_or(i64::MAX)))
            .unwrap_or_else(|| "-".to_string());
        let browse = format!(
            "<a href=\"/console/topics/{}/messages?partition={}\">messages</a>",
            url(&topic),
            key.1
        );
        rows.push(vec![key.1.to_string(), start, end, size, segments, browse]);
    }
    let configs = describe_configs(&caller, &[topic.as_str()]).await?;
    let entries = configs.get(&topic);
    let policy = match entries {
        Some(Ok(e)) => e
            .iter()
            .find(|c| c.name == "cleanup.policy")
            .and_then(|c| c.value.clone())
            .unwrap_or_default(),
        _ => String::new(),
    };

    let mut page = Page::new(Section::Topics, format!("Topic {topic}"));
    page.push(&notice(q.done.as_deref()));
    let mut links = format!(
        "<ul class=\"topic-links\"><li><a href=\"/console/topics/{}/messages\">Browse messages</a></li>",
        url(&topic)
    );
    if policy.split(',').any(|p| p.trim() == "compact") {
        let _ = write!(
            links,
            "<li><a href=\"/console/topics/{}/compaction\">Compaction</a></li>",
            url(&topic)
        );
    }
    links.push_str("<li><a href=\"/console/topics\">All topics</a></li></ul>");
    page.push(&links);
    let records: i64 = ranges.values().map(|(s, e)| (e - s).max(0)).sum();
    let size: u64 = sizes.values().sum();
    let rate = topic_record_rate(&caller.console()?.history, &topic)
        .map(format::rate)
        .unwrap_or_else(|| "-".to_string());
    let _ = write!(
        page.body,
        "<dl class=\"cards\" id=\"topic-summary\">\
         <div><dt>Partitions</dt><dd>{}</dd></div>\
         <div><dt>Records</dt><dd>{}</dd></div>\
         <div><dt>Size</dt><dd>{}</dd></div>\
         <div><dt>Records produced</dt><dd>{}</dd></div>\
         <div><dt>cleanup.policy</dt><dd>{}</dd></div></dl>",
        format::count(i64::from(count)),
        format::count(records),
        esc(&format::bytes(size)),
        esc(&rate),
        esc(&policy),
    );
    page.push("<h2>Partitions</h2>");
    page.push(&table_with_id(
        "partitions",
        "Partitions: offsets from ListOffsets, sizes from DescribeLogDirs",
        &[
            "Partition",
            "Log start offset",
            "End offset (high watermark)",
            "Size",
            "Segments",
            "Browse",
        ],
        &[true, true, true, true, true, false],
        &rows,
    ));
    page.push("<h2>Last minutes</h2>");
    let _ = write!(
        page.body,
        "<div class=\"charts\" data-refresh=\"/console/topics/{}/charts\" \
         data-interval=\"{}\">{}</div>",
        url(&topic),
        INTERVAL.as_millis(),
        charts(&caller, &topic)?
    );
    page.push("<h2>Configs</h2>");
    page.push(&topic_configs::configs_section(
        &caller, &topic, entries, read_only,
    ));
    if !read_only && caller.may(AclOperation::Delete, ResourceType::Topic, &topic) {
        page.push(&format!(
            "<h2>Delete</h2>\
             <form id=\"delete-topic\" method=\"post\" action=\"/console/topics/{u}/delete\" \
             data-confirm=\"Delete topic {e} and all its records? This cannot be undone.\">\
             <button type=\"submit\" class=\"danger\">Delete topic {e}</button></form>",
            u = url(&topic),
            e = esc(&topic),
        ));
    }
    Ok(page.render(&caller))
}

/// Per-interval rates of a counter series: `(t, increase per second)` at each later point
/// (a counter that went back, as after a restart, counts as no increase).
fn counter_rates(points: &[(i64, f64)]) -> Vec<(i64, f64)> {
    points
        .windows(2)
        .filter_map(|w| {
            let seconds = (w[1].0 - w[0].0) as f64 / 1000.0;
            (seconds > 0.0).then(|| (w[1].0, (w[1].1 - w[0].1).max(0.0) / seconds))
        })
        .collect()
}

/// The topic's charts: its size and the records produced to it, from the history.
fn charts(caller: &Caller, topic: &str) -> Result<String, PageError> {
    let history: &History = &caller.console()?.history;
    let size = history.series(&topic_size_series(topic));
    let produced = counter_rates(&history.series(&topic_records_series(topic)));
    let now = caller.broker().clock.now_ms();
    let span = i64::try_from(INTERVAL.as_millis()).unwrap_or(5000) * KEEP as i64;
    let mut out = line_chart(
        "Topic size",
        &[Line {
            name: "size",
            points: &size,
        }],
        now,
        span,
        |v| format::bytes(v.max(0.0) as u64),
    );
    out.push_str(&line_chart(
        "Records produced",
        &[Line {
            name: "records",
            points: &produced,
        }],
        now,
        span,
        format::rate,
    ));
    if size.is_empty() {
        out.push_str("<p class=\"muted\">The charts fill in as samples are taken (every 5 s).</p>");
    }
    Ok(out)
}

/// GET /console/topics/{topic}/charts: the charts alone, for the script's periodic reload.
async fn charts_fragment(caller: Caller, Path(topic): Path<String>) -> Result<Response, PageError> {
    require_topic(&caller, AclOperation::Describe, &topic)?;
    Ok(html_response(StatusCode::OK, charts(&caller, &topic)?))
}

/// POST /console/topics/{topic}/delete: DeleteTopics as the caller.
async fn delete(Action(caller): Action, Path(topic): Path<String>) -> Result<Response, PageError> {
    let request = DeleteTopicsRequest::default()
        .with_topics(vec![
            DeleteTopicState::default().with_name(Some(topic_name(&topic)))
        ])
        .with_timeout_ms(30_000);
    let response = expect_response!(
        caller
            .kafka(ApiKey::DeleteTopics, 6, RequestKind::DeleteTopics(request))
            .await?,
        DeleteTopics
    )?;
    let result = response
        .responses
        .first()
        .ok_or_else(|| PageError::internal("DeleteTopics answered no topic"))?;
    match result.error_code {
        0 => Ok(forms::done("/console/topics", &format!("Deleted topic {topic}")).into_response()),
        29 => Err(topic_denied()),
        code => Err(kafka_failure(code, result.error_message.as_deref())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_names_are_kafkas() {
        assert_eq!(error_name(29), "TOPIC_AUTHORIZATION_FAILED");
        assert_eq!(error_name(36), "TOPIC_ALREADY_EXISTS");
        assert_eq!(error_name(40), "INVALID_CONFIG");
    }

    #[test]
    fn pairs_and_rates() {
        assert_eq!(
            parse_pairs("a=1\n\n b = x=y \n", "c").unwrap(),
            vec![("a".into(), "1".into()), ("b".into(), "x=y".into())]
        );
        assert!(parse_pairs("nope", "c").is_err());
        assert_eq!(
            counter_rates(&[(0, 0.0), (10_000, 1000.0), (15_000, 900.0)]),
            vec![(10_000, 100.0), (15_000, 0.0)]
        );
    }
}
