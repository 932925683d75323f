//! Every request runs inside one `request` span carrying its API key (by name), version,
//! correlation id, client id and listener, and the handler's own logs are emitted inside it.
//! A small recording subscriber (installed for this thread only) captures spans and events.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, MetadataRequest, RequestHeader, RequestKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use skiff_broker::dispatch::{dispatch_on, Reply};
use skiff_protocol::DecodedRequest;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

type Fields = BTreeMap<String, String>;

#[derive(Default)]
struct State {
    next_id: u64,
    /// Span id -> (name, fields).
    spans: HashMap<u64, (String, Fields)>,
    /// Entered spans, innermost last.
    stack: Vec<u64>,
    /// (message, the innermost entered span when it was emitted).
    events: Vec<(String, Option<u64>)>,
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<State>>);

struct Collect<'a>(&'a mut Fields);

impl Visit for Collect<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut state = self.0.lock().unwrap();
        state.next_id += 1;
        let id = state.next_id;
        let mut fields = Fields::new();
        span.record(&mut Collect(&mut fields));
        state
            .spans
            .insert(id, (span.metadata().name().to_string(), fields));
        Id::from_u64(id)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut state = self.0.lock().unwrap();
        if let Some((_, fields)) = state.spans.get_mut(&span.into_u64()) {
            values.record(&mut Collect(fields));
        }
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields::new();
        event.record(&mut Collect(&mut fields));
        let mut state = self.0.lock().unwrap();
        let current = state.stack.last().copied();
        let message = fields.remove("message").unwrap_or_default();
        state.events.push((message, current));
    }
    fn enter(&self, span: &Id) {
        self.0.lock().unwrap().stack.push(span.into_u64());
    }
    fn exit(&self, span: &Id) {
        let mut state = self.0.lock().unwrap();
        if let Some(i) = state.stack.iter().rposition(|s| *s == span.into_u64()) {
            state.stack.remove(i);
        }
    }
}

fn request(key: ApiKey, version: i16, correlation_id: i32, body: RequestKind) -> DecodedRequest {
    DecodedRequest {
        api_key: key.into(),
        api_version: version,
        header: RequestHeader::default()
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("span-test"))),
        body: body.into(),
    }
}

async fn answer(reply: Reply) {
    match reply {
        Reply::Respond(_) => {}
        Reply::Later(f) => {
            f.await;
        }
        Reply::LaterInFiles(f) => {
            f.await;
        }
        Reply::NoResponse => panic!("no response"),
        Reply::Close(why) => panic!("closed: {why}"),
        Reply::Own(f) => {
            f.await;
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn each_request_has_a_span_with_api_key_version_and_correlation_id() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path())
        .sets(&["auto.create.topics.enable=true"])
        .start()
        .await;
    let recorder = Recorder::default();
    let guard = tracing::subscriber::set_default(recorder.clone());

    let versions = request(
        ApiKey::ApiVersions,
        3,
        41,
        RequestKind::ApiVersions(ApiVersionsRequest::default()),
    );
    answer(dispatch_on(&broker, versions, "/127.0.0.1", "INTERNAL").await).await;
    // An invalid name with auto-creation on: the handler logs that creation was refused.
    let metadata = MetadataRequest::default()
        .with_topics(Some(vec![MetadataRequestTopic::default()
            .with_name(Some(TopicName(StrBytes::from_static_str("bad name!"))))]))
        .with_allow_auto_topic_creation(true);
    let metadata = request(ApiKey::Metadata, 12, 4242, RequestKind::Metadata(metadata));
    answer(dispatch_on(&broker, metadata, "/127.0.0.1", "EXTERNAL").await).await;
    drop(guard);

    let state = recorder.0.lock().unwrap();
    let requests: Vec<(&u64, &Fields)> = state
        .spans
        .iter()
        .filter(|(_, (name, _))| name == "request")
        .map(|(id, (_, fields))| (id, fields))
        .collect();
    assert_eq!(requests.len(), 2, "one span per request: {:?}", state.spans);
    let find = |correlation_id: &str| {
        requests
            .iter()
            .find(|(_, f)| f.get("correlation_id").map(String::as_str) == Some(correlation_id))
            .unwrap_or_else(|| panic!("no span for correlation id {correlation_id}"))
    };
    let (_, versions) = find("41");
    assert_eq!(versions["api_key"], "ApiVersions");
    assert_eq!(versions["api_version"], "3");
    assert_eq!(versions["client_id"], "span-test");
    assert_eq!(versions["listener"], "INTERNAL");
    let (metadata_id, metadata) = find("4242");
    assert_eq!(metadata["api_key"], "Metadata");
    assert_eq!(metadata["api_version"], "12");
    assert_eq!(metadata["listener"], "EXTERNAL");
    let refused = state
        .events
        .iter()
        .find(|(message, _)| message == "auto-create refused")
        .unwrap_or_else(|| panic!("the handler's log line: {:?}", state.events));
    assert_eq!(
        refused.1,
        Some(**metadata_id),
        "the handler logs inside the request's span"
    );
}
