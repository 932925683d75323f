//! The console's consumer groups pages over real HTTP: the list and a group's page show the
//! committed offsets, log end offsets and lag OffsetFetch and ListOffsets report, a stable
//! group's member and assignment, and the lag chart the history samples (`total_lags`);
//! resetting an empty group's offsets (earliest, latest, timestamp, offset; all topics or one)
//! changes what OffsetFetch answers, a non-empty group's reset is refused 409, read-only mode
//! and cross-origin posts 403; with an authorizer a group the user may not describe is not
//! listed and its page is the same 403 as a group that does not exist.
#![allow(clippy::unwrap_used)]

mod acl_support;
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use acl_support::{create_acls, creation, send_as, ALLOW, DESCRIBE, GROUP, LITERAL, TOPIC};
use bytes::{BufMut, Bytes, BytesMut};
use common::call;
use common::http::{basic, get, post_form, send, serve_api, Api};
use hyper::header::LOCATION;
use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Encodable, StrBytes};
use skiff_broker::Broker;
use skiff_log::AppendValidation;
use skiff_records::{BatchBuilder, Compression};

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

const SETS: [&str; 2] = [
    "offsets.topic.num.partitions=1",
    "group.initial.rebalance.delay.ms=0",
];

async fn start(dir: &std::path::Path, extra: &[&str]) -> Arc<Broker> {
    let mut sets = SETS.to_vec();
    sets.extend_from_slice(extra);
    common::broker(dir).sets(&sets).wait_groups().start().await
}

/// Appends one record per timestamp, each in its own batch, to `topic`-`partition`.
async fn produce_at(broker: &Arc<Broker>, topic: &str, partition: i32, timestamps: &[i64]) {
    let (b, topic, timestamps) = (broker.clone(), topic.to_string(), timestamps.to_vec());
    tokio::task::spawn_blocking(move || {
        let p = b.topics.get(&topic).unwrap().partition(partition).unwrap();
        for ts in timestamps {
            let mut builder = BatchBuilder::new(0, Compression::None);
            builder.push(ts, Some(b"k"), Some(b"v"), &[]);
            p.log
                .append(
                    &builder.build().unwrap(),
                    0,
                    &AppendValidation { now_ms: 10_000 },
                )
                .unwrap();
        }
    })
    .await
    .unwrap();
}

fn commit_request(
    group: &str,
    generation: i32,
    member: &str,
    offsets: &[(&str, i32, i64)],
) -> RequestKind {
    let topics = offsets
        .iter()
        .map(|(t, p, o)| {
            offset_commit_request::OffsetCommitRequestTopic::default()
                .with_name(TopicName(s(t)))
                .with_partitions(vec![
                    offset_commit_request::OffsetCommitRequestPartition::default()
                        .with_partition_index(*p)
                        .with_committed_offset(*o)
                        .with_committed_metadata(Some(s("console-test"))),
                ])
        })
        .collect();
    RequestKind::OffsetCommit(
        OffsetCommitRequest::default()
            .with_group_id(GroupId(s(group)))
            .with_generation_id_or_member_epoch(generation)
            .with_member_id(s(member))
            .with_topics(topics),
    )
}

/// A standalone commit (generation −1, no member), as the anonymous client.
async fn commit(broker: &Arc<Broker>, group: &str, offsets: &[(&str, i32, i64)]) {
    match call(
        broker,
        ApiKey::OffsetCommit,
        9,
        commit_request(group, -1, "", offsets),
    )
    .await
    {
        ResponseKind::OffsetCommit(r) => {
            for t in &r.topics {
                for p in &t.partitions {
                    assert_eq!(p.error_code, 0, "commit {group} {:?}", t.name);
                }
            }
        }
        other => panic!("{other:?}"),
    }
}

/// What OffsetFetch v9 answers for `group`: (topic, partition, offset), sorted.
async fn fetched(broker: &Arc<Broker>, group: &str) -> Vec<(String, i32, i64)> {
    let request = OffsetFetchRequest::default().with_groups(vec![
        offset_fetch_request::OffsetFetchRequestGroup::default()
            .with_group_id(GroupId(s(group)))
            .with_topics(None),
    ]);
    let r = match call(
        broker,
        ApiKey::OffsetFetch,
        9,
        RequestKind::OffsetFetch(request),
    )
    .await
    {
        ResponseKind::OffsetFetch(r) => r,
        other => panic!("{other:?}"),
    };
    assert_eq!(r.groups[0].error_code, 0);
    let mut out: Vec<(String, i32, i64)> = r.groups[0]
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.0.to_string(), p.partition_index, p.committed_offset))
        })
        .collect();
    out.sort();
    out
}

/// What ListOffsets v8 answers for `timestamp` on one partition.
async fn list_offset(broker: &Arc<Broker>, topic: &str, partition: i32, timestamp: i64) -> i64 {
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![list_offsets_request::ListOffsetsTopic::default()
            .with_name(TopicName(s(topic)))
            .with_partitions(vec![
                list_offsets_request::ListOffsetsPartition::default()
                    .with_partition_index(partition)
                    .with_timestamp(timestamp),
            ])]);
    match call(
        broker,
        ApiKey::ListOffsets,
        8,
        RequestKind::ListOffsets(request),
    )
    .await
    {
        ResponseKind::ListOffsets(r) => {
            let p = &r.topics[0].partitions[0];
            assert_eq!(p.error_code, 0);
            p.offset
        }
        other => panic!("{other:?}"),
    }
}

/// A classic group with one member (client id empty, range protocol) assigned `partitions`
/// of `topic`, Stable; returns (member id, generation).
async fn stable_member(
    broker: &Arc<Broker>,
    group: &str,
    topic: &str,
    partitions: &[i32],
) -> (String, i32) {
    let join = |member: String| {
        RequestKind::JoinGroup(
            JoinGroupRequest::default()
                .with_group_id(GroupId(s(group)))
                .with_session_timeout_ms(60_000)
                .with_rebalance_timeout_ms(60_000)
                .with_member_id(s(&member))
                .with_protocol_type(s("consumer"))
                .with_protocols(vec![join_group_request::JoinGroupRequestProtocol::default(
                )
                .with_name(s("range"))
                .with_metadata(Bytes::new())]),
        )
    };
    let first = match call(broker, ApiKey::JoinGroup, 9, join(String::new())).await {
        ResponseKind::JoinGroup(r) => r,
        other => panic!("{other:?}"),
    };
    assert_eq!(first.error_code, 79, "MEMBER_ID_REQUIRED");
    let member = first.member_id.to_string();
    let joined = match call(broker, ApiKey::JoinGroup, 9, join(member.clone())).await {
        ResponseKind::JoinGroup(r) => r,
        other => panic!("{other:?}"),
    };
    assert_eq!(joined.error_code, 0);
    assert_eq!(joined.leader.as_str(), member);
    let mut assignment = BytesMut::new();
    assignment.put_i16(0);
    ConsumerProtocolAssignment::default()
        .with_assigned_partitions(vec![TopicPartition::default()
            .with_topic(TopicName(s(topic)))
            .with_partitions(partitions.to_vec())])
        .encode(&mut assignment, 0)
        .unwrap();
    let sync = SyncGroupRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_generation_id(joined.generation_id)
        .with_member_id(s(&member))
        .with_protocol_type(Some(s("consumer")))
        .with_protocol_name(Some(s("range")))
        .with_assignments(vec![
            sync_group_request::SyncGroupRequestAssignment::default()
                .with_member_id(s(&member))
                .with_assignment(assignment.freeze()),
        ]);
    match call(broker, ApiKey::SyncGroup, 5, RequestKind::SyncGroup(sync)).await {
        ResponseKind::SyncGroup(r) => assert_eq!(r.error_code, 0),
        other => panic!("{other:?}"),
    }
    (member, joined.generation_id)
}

/// The `<tr>` of a table row that contains `marker`.
fn row_with<'a>(html: &'a str, marker: &str) -> &'a str {
    let at = html
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker} in {html}"));
    let start = html[..at].rfind("<tr>").unwrap();
    let end = at + html[at..].find("</tr>").unwrap();
    &html[start..end]
}

/// The table `<table id="{id}">…</table>`.
fn table_with_id<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<table id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no table {id} in {html}"));
    let end = start + html[start..].find("</table>").unwrap();
    &html[start..end]
}

/// Polls a page until its body contains `text` (the history samples every 5 s).
async fn wait_for_text(api: &Api, path: &str, text: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let html = get(api, path).await.text();
        if html.contains(text) {
            return;
        }
        assert!(Instant::now() < deadline, "no {text} on {path}: {html}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_show_what_offset_fetch_and_list_offsets_report() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    common::create_topic(&broker, "orders", 2).await;
    common::create_topic(&broker, "payments", 1).await;
    produce_at(&broker, "orders", 0, &[1000; 5]).await;
    produce_at(&broker, "orders", 1, &[1000; 3]).await;
    produce_at(&broker, "payments", 0, &[1000; 4]).await;
    commit(
        &broker,
        "simple",
        &[("orders", 0, 2), ("orders", 1, 3), ("payments", 0, 1)],
    )
    .await;
    let (member, _) = stable_member(&broker, "live", "orders", &[0, 1]).await;
    let api = serve_api(broker.clone()).await;

    // The group's page: every committed partition as OffsetFetch and ListOffsets answer it.
    let r = get(&api, "/console/groups/simple").await;
    assert_eq!(r.status, 200);
    let html = r.text();
    let offsets = table_with_id(&html, "offsets");
    let mut total = 0;
    let committed = fetched(&broker, "simple").await;
    assert_eq!(committed.len(), 3);
    for (topic, partition, offset) in &committed {
        let end = list_offset(&broker, topic, *partition, -1).await;
        let lag = (end - offset).max(0);
        total += lag;
        let row = format!(
            "<tr><td><a href=\"/console/topics/{topic}\">{topic}</a></td>\
             <td class=\"num\">{partition}</td><td class=\"num\">{offset}</td>\
             <td class=\"num\">{end}</td><td class=\"num\">{lag}</td><td>console-test</td></tr>"
        );
        assert!(offsets.contains(&row), "{row} not in {offsets}");
    }
    assert_eq!(total, 3 + 3);
    assert!(html.contains(&format!("<dt>Total lag</dt><dd>{total}</dd>")));
    assert!(html.contains("<dt>State</dt><dd>Empty</dd>"), "{html}");
    assert!(html.contains("id=\"reset-offsets\""));
    assert!(html.contains("data-confirm="));
    assert!(html.contains("<option value=\"payments\">payments</option>"));

    // The list: both groups, their state, members and total lag.
    let r = get(&api, "/console/groups").await;
    assert_eq!(r.status, 200);
    let html = r.text();
    let groups = table_with_id(&html, "groups");
    let simple = row_with(groups, "href=\"/console/groups/simple\"");
    assert!(simple.contains("<td>classic</td>"), "{simple}");
    assert!(
        simple.contains(&format!(
            "<td>Empty</td><td class=\"num\">0</td><td class=\"num\">{total}</td>"
        )),
        "{simple}"
    );
    let live = row_with(groups, "href=\"/console/groups/live\"");
    assert!(
        live.contains(
            "<td>consumer</td><td>Stable</td><td class=\"num\">1</td><td class=\"num\">-</td>"
        ),
        "{live}"
    );

    // A stable group: its member and assignment; no reset while it runs (409 on post).
    let r = get(&api, "/console/groups/live").await;
    assert_eq!(r.status, 200);
    let html = r.text();
    let members = table_with_id(&html, "members");
    let row = row_with(members, &member);
    assert!(row.contains("<td>/127.0.0.1</td>"), "{row}");
    assert!(row.contains("<td>orders: 0, 1</td>"), "{row}");
    assert!(html.contains("<dt>State</dt><dd>Stable</dd>"));
    assert!(
        html.contains("<dt>Protocol (assignor)</dt><dd>range</dd>"),
        "{html}"
    );
    assert!(html.contains("A reset will be refused."));

    assert_eq!(get(&api, "/console/groups/nope").await.status, 404);

    // The lag chart comes from total_lags, sampled every 5 s.
    wait_for_text(&api, "/console/groups/simple", "Total lag: now total lag 6").await;
    commit(&broker, "simple", &[("orders", 0, 5)]).await;
    wait_for_text(&api, "/console/groups/simple", "Total lag: now total lag 3").await;
    wait_for_text(&api, "/console/groups/live", "Total lag: now total lag 0").await;
    // The chart alone, for the script's reload.
    assert!(get(&api, "/console/groups/simple")
        .await
        .text()
        .contains("data-refresh=\"/console/groups/simple/lag-chart\""));
    let r = get(&api, "/console/groups/simple/lag-chart").await;
    assert_eq!(r.status, 200);
    assert!(
        r.text().starts_with("<figure class=\"chart\">"),
        "{}",
        r.text()
    );
    assert!(r.text().contains("now total lag 3"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_offsets_of_an_empty_group_only() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    common::create_topic(&broker, "events", 1).await;
    common::create_topic(&broker, "other", 1).await;
    produce_at(&broker, "events", 0, &[1000, 2000, 3000, 4000, 5000]).await;
    produce_at(&broker, "other", 0, &[1000, 1000]).await;
    // Records before offset 1 are deleted: the earliest offset is 1, not 0.
    let delete = DeleteRecordsRequest::default().with_topics(vec![
        delete_records_request::DeleteRecordsTopic::default()
            .with_name(TopicName(s("events")))
            .with_partitions(vec![
                delete_records_request::DeleteRecordsPartition::default()
                    .with_partition_index(0)
                    .with_offset(1),
            ]),
    ]);
    match call(
        &broker,
        ApiKey::DeleteRecords,
        2,
        RequestKind::DeleteRecords(delete),
    )
    .await
    {
        ResponseKind::DeleteRecords(r) => assert_eq!(r.topics[0].partitions[0].error_code, 0),
        other => panic!("{other:?}"),
    }
    assert_eq!(list_offset(&broker, "events", 0, -2).await, 1);
    commit(&broker, "app", &[("events", 0, 2), ("other", 0, 1)]).await;
    let api = serve_api(broker.clone()).await;
    let path = "/console/groups/app/reset";
    let reset = |fields: Vec<(&'static str, &'static str)>| {
        let api = &api;
        async move { post_form(api, path, &fields, true, None).await }
    };
    let offsets = |events: i64, other: i64| {
        vec![
            ("events".to_string(), 0, events),
            ("other".to_string(), 0, other),
        ]
    };

    let r = reset(vec![("to", "earliest"), ("topic", "")]).await;
    assert_eq!(r.status, 303, "{}", r.text());
    let location = r.headers[LOCATION].to_str().unwrap().to_string();
    assert!(
        location.starts_with("/console/groups/app?done="),
        "{location}"
    );
    assert_eq!(fetched(&broker, "app").await, offsets(1, 0));
    let html = get(&api, &location).await.text();
    assert!(
        html.contains("Reset 2 partitions of consumer group app to the earliest offset."),
        "{html}"
    );

    let r = reset(vec![("to", "latest")]).await;
    assert_eq!(r.status, 303, "{}", r.text());
    assert_eq!(fetched(&broker, "app").await, offsets(5, 2));

    // The first record at or after 2500 is offset 2 (3000); other has none: its log end.
    let r = reset(vec![("to", "timestamp"), ("timestamp", "2500")]).await;
    assert_eq!(r.status, 303, "{}", r.text());
    assert_eq!(list_offset(&broker, "events", 0, 2500).await, 2);
    assert_eq!(fetched(&broker, "app").await, offsets(2, 2));

    // One topic only; a given offset stays inside the log.
    let r = reset(vec![("to", "offset"), ("offset", "3"), ("topic", "events")]).await;
    assert_eq!(r.status, 303, "{}", r.text());
    assert_eq!(fetched(&broker, "app").await, offsets(3, 2));
    let r = reset(vec![
        ("to", "offset"),
        ("offset", "99"),
        ("topic", "events"),
    ])
    .await;
    assert_eq!(r.status, 303, "{}", r.text());
    assert_eq!(fetched(&broker, "app").await, offsets(5, 2));

    // Bad forms change nothing.
    assert_eq!(reset(vec![("to", "timestamp")]).await.status, 400);
    assert_eq!(reset(vec![("to", "sideways")]).await.status, 400);
    assert_eq!(
        reset(vec![("to", "earliest"), ("topic", "nope")])
            .await
            .status,
        400
    );
    // Cross-origin: refused before anything is read.
    let r = post_form(&api, path, &[("to", "earliest")], false, None).await;
    assert_eq!(r.status, 403);
    assert_eq!(fetched(&broker, "app").await, offsets(5, 2));

    // A group with a running member: 409, its offsets unchanged.
    let (member, generation) = stable_member(&broker, "busy", "events", &[0]).await;
    match call(
        &broker,
        ApiKey::OffsetCommit,
        9,
        commit_request("busy", generation, &member, &[("events", 0, 4)]),
    )
    .await
    {
        ResponseKind::OffsetCommit(r) => assert_eq!(r.topics[0].partitions[0].error_code, 0),
        other => panic!("{other:?}"),
    }
    let r = post_form(
        &api,
        "/console/groups/busy/reset",
        &[("to", "earliest")],
        true,
        None,
    )
    .await;
    assert_eq!(r.status, 409);
    assert!(r.text().contains("is Stable"), "{}", r.text());
    assert!(r.text().contains("Nothing was changed."));
    assert_eq!(
        fetched(&broker, "busy").await,
        vec![("events".to_string(), 0, 4)]
    );
    // An unknown group: 404, nothing created.
    let r = post_form(
        &api,
        "/console/groups/ghost/reset",
        &[("to", "earliest")],
        true,
        None,
    )
    .await;
    assert_eq!(r.status, 404);
    assert!(fetched(&broker, "ghost").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_console_hides_and_refuses_the_reset() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &["skiff.console.read.only=true"]).await;
    common::create_topic(&broker, "events", 1).await;
    produce_at(&broker, "events", 0, &[1000; 3]).await;
    commit(&broker, "app", &[("events", 0, 2)]).await;
    let api = serve_api(broker.clone()).await;
    let html = get(&api, "/console/groups/app").await.text();
    assert!(html.contains("<table id=\"offsets\">"));
    assert!(!html.contains("reset-offsets"), "{html}");
    let r = post_form(
        &api,
        "/console/groups/app/reset",
        &[("to", "earliest")],
        true,
        None,
    )
    .await;
    assert_eq!(r.status, 403);
    assert!(r.text().contains("read-only"));
    assert_eq!(
        fetched(&broker, "app").await,
        vec![("events".to_string(), 0, 2)]
    );
}

const AUTH: [&str; 4] = [
    "listeners=SASL_PLAINTEXT://127.0.0.1:0",
    "listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"alice-secret\" user_admin=\"admin-secret\";",
    "skiff.http.authentication=basic",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_the_user_may_not_describe_is_hidden_and_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut sets = AUTH.to_vec();
    sets.push("group.initial.rebalance.delay.ms=0");
    let broker = acl_support::start(dir.path(), &sets).await;
    common::create_topic(&broker, "t", 1).await;
    produce_at(&broker, "t", 0, &[1000; 4]).await;
    for group in ["visible", "hidden"] {
        let r = send_as(
            &broker,
            "admin",
            ApiKey::OffsetCommit,
            9,
            commit_request(group, -1, "", &[("t", 0, 1)]),
        )
        .await;
        match r {
            ResponseKind::OffsetCommit(r) => assert_eq!(r.topics[0].partitions[0].error_code, 0),
            other => panic!("{other:?}"),
        }
    }
    let codes = create_acls(
        &broker,
        "admin",
        vec![
            creation(GROUP, "visible", LITERAL, "User:alice", DESCRIBE, ALLOW),
            creation(TOPIC, "t", LITERAL, "User:alice", DESCRIBE, ALLOW),
        ],
    )
    .await;
    assert_eq!(codes, vec![0, 0]);
    let api = serve_api(broker.clone()).await;
    let alice = basic("alice", "alice-secret");
    let admin = basic("admin", "admin-secret");

    assert_eq!(get(&api, "/console/groups").await.status, 401);
    let html = send(&api, "GET", "/console/groups", Some(&alice))
        .await
        .text();
    assert!(html.contains("href=\"/console/groups/visible\""), "{html}");
    assert!(!html.contains("hidden"), "{html}");
    let html = send(&api, "GET", "/console/groups", Some(&admin))
        .await
        .text();
    assert!(html.contains("href=\"/console/groups/hidden\""), "{html}");

    // The same refusal for a group that exists and one that does not.
    let hidden = send(&api, "GET", "/console/groups/hidden", Some(&alice)).await;
    let ghost = send(&api, "GET", "/console/groups/ghost", Some(&alice)).await;
    assert_eq!((hidden.status, ghost.status), (403, 403));
    assert_eq!(
        hidden.text().replace("hidden", "X"),
        ghost.text().replace("ghost", "X")
    );
    assert!(hidden.text().contains("GROUP_AUTHORIZATION_FAILED"));
    let chart = send(
        &api,
        "GET",
        "/console/groups/hidden/lag-chart",
        Some(&alice),
    )
    .await;
    assert_eq!(chart.status, 403);
    assert_eq!(
        send(&api, "GET", "/console/groups/ghost", Some(&admin))
            .await
            .status,
        404
    );

    // Alice may describe, not read: offsets shown, no reset form, a reset refused.
    let html = send(&api, "GET", "/console/groups/visible", Some(&alice))
        .await
        .text();
    assert!(
        html.contains("<td class=\"num\">1</td><td class=\"num\">4</td><td class=\"num\">3</td>"),
        "{html}"
    );
    assert!(!html.contains("id=\"reset-offsets\""));
    assert!(html.contains("Resetting offsets needs READ on the group."));
    for group in ["visible", "hidden"] {
        let r = post_form(
            &api,
            &format!("/console/groups/{group}/reset"),
            &[("to", "latest")],
            true,
            Some(&alice),
        )
        .await;
        assert_eq!(r.status, 403, "{group}: {}", r.text());
    }
    let r = send_as(
        &broker,
        "admin",
        ApiKey::OffsetFetch,
        9,
        RequestKind::OffsetFetch(OffsetFetchRequest::default().with_groups(vec![
            offset_fetch_request::OffsetFetchRequestGroup::default()
                .with_group_id(GroupId(s("visible")))
                .with_topics(None),
        ])),
    )
    .await;
    match r {
        ResponseKind::OffsetFetch(r) => {
            assert_eq!(r.groups[0].topics[0].partitions[0].committed_offset, 1)
        }
        other => panic!("{other:?}"),
    }
    // The admin (a super user) may reset it.
    let r = post_form(
        &api,
        "/console/groups/visible/reset",
        &[("to", "latest")],
        true,
        Some(&admin),
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_and_share_groups_show_their_members() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    common::create_topic(&broker, "orders", 2).await;
    produce_at(&broker, "orders", 0, &[1000; 3]).await;
    // A KIP-848 consumer group with one member (it commits with its epoch).
    let heartbeat = ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(s("modern")))
        .with_member_id(s("m-1"))
        .with_member_epoch(0)
        .with_rebalance_timeout_ms(60_000)
        .with_subscribed_topic_names(Some(vec![TopicName(s("orders"))]))
        .with_topic_partitions(Some(Vec::new()));
    let r = match call(
        &broker,
        ApiKey::ConsumerGroupHeartbeat,
        1,
        RequestKind::ConsumerGroupHeartbeat(heartbeat),
    )
    .await
    {
        ResponseKind::ConsumerGroupHeartbeat(r) => r,
        other => panic!("{other:?}"),
    };
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    match call(
        &broker,
        ApiKey::OffsetCommit,
        9,
        commit_request("modern", r.member_epoch, "m-1", &[("orders", 0, 1)]),
    )
    .await
    {
        ResponseKind::OffsetCommit(r) => assert_eq!(r.topics[0].partitions[0].error_code, 0),
        other => panic!("{other:?}"),
    }
    // A share group with one member.
    let share = ShareGroupHeartbeatRequest::default()
        .with_group_id(GroupId(s("shared")))
        .with_member_id(s("s-1"))
        .with_member_epoch(0)
        .with_subscribed_topic_names(Some(vec![TopicName(s("orders"))]));
    match call(
        &broker,
        ApiKey::ShareGroupHeartbeat,
        1,
        RequestKind::ShareGroupHeartbeat(share),
    )
    .await
    {
        ResponseKind::ShareGroupHeartbeat(r) => assert_eq!(r.error_code, 0, "{r:?}"),
        other => panic!("{other:?}"),
    }
    let api = serve_api(broker.clone()).await;

    let html = get(&api, "/console/groups").await.text();
    let groups = table_with_id(&html, "groups");
    let modern = row_with(groups, "href=\"/console/groups/modern\"");
    assert!(
        modern.contains("<td>consumer</td><td>consumer</td>"),
        "{modern}"
    );
    assert!(
        modern.ends_with("<td class=\"num\">1</td><td class=\"num\">2</td>"),
        "{modern}"
    );
    let shared = row_with(groups, "href=\"/console/groups/shared\"");
    assert!(shared.contains("<td>share</td>"), "{shared}");
    assert!(
        shared.ends_with("<td class=\"num\">1</td><td class=\"num\">-</td>"),
        "{shared}"
    );

    let r = get(&api, "/console/groups/modern").await;
    assert_eq!(r.status, 200, "{}", r.text());
    let html = r.text();
    let row = row_with(table_with_id(&html, "members"), "m-1");
    assert!(row.contains("<td>orders: 0, 1</td>"), "{row}");
    assert!(html.contains("<dt>Assignor</dt><dd>uniform</dd>"), "{html}");
    assert!(table_with_id(&html, "offsets").contains(
        "<td class=\"num\">0</td><td class=\"num\">1</td><td class=\"num\">3</td><td class=\"num\">2</td>"
    ));
    // Running: the reset is refused.
    let r = post_form(
        &api,
        "/console/groups/modern/reset",
        &[("to", "earliest")],
        true,
        None,
    )
    .await;
    assert_eq!(r.status, 409, "{}", r.text());

    let r = get(&api, "/console/groups/shared").await;
    assert_eq!(r.status, 200, "{}", r.text());
    let html = r.text();
    let row = row_with(table_with_id(&html, "members"), "s-1");
    assert!(row.contains("<td>orders: 0, 1</td>"), "{row}");
    assert!(html.contains("<dt>Type</dt><dd>share</dd>"), "{html}");
    assert!(!html.contains("reset-offsets"));
}
