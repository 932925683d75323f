//! Share-group load (KIP-932): a minimal share consumer that speaks the protocol itself, with
//! the kafka-protocol crate over one blocking `TcpStream` (librdkafka has no share consumer).
//!
//! Owns: [`run`] and the wire client under it. One run: ApiVersions (the share APIs must be
//! advertised at v1) → Metadata (the topic id) → IncrementalAlterConfigs of the group's
//! `share.auto.offset.reset=earliest`, then DescribeConfigs until it shows (Kafka applies group
//! configs asynchronously) → ShareGroupHeartbeat v1 join (a fresh UUID member id) until the
//! partition is assigned → the timed part → the session closed (epoch -1) → leave (epoch -1).
//! On one node the bootstrap broker is the coordinator and every partition's leader, so the
//! FindCoordinator answer's address is not used; it is still sent, until it answers without
//! error, because Kafka creates its group coordinator (`__consumer_offsets`) on that request
//! and answers heartbeats with NOT_COORDINATOR until then.
//!
//! The timed part is one of [`AckMode`]: ShareFetch v1 in a loop that piggybacks the ACCEPT of
//! everything the previous fetch acquired, or one ShareAcknowledge v1 per record.
//!
//! Every response is untrusted: frames are size-checked before they are read, bodies decoded
//! by kafka-protocol (errors propagated, nothing unwrapped), offsets and error codes checked.
//! Every wait is bounded by the spec's deadline and the socket's read timeout.
//!
//! Thread-safety: single-threaded, one connection. Writes nothing to disk.

use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use kafka_protocol::error::ParseResponseErrorCode;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use crate::rawconn::Conn;

/// How the records are acknowledged in the timed part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckMode {
    /// ACCEPT of the previous fetch's acquired records rides on the next ShareFetch.
    Piggyback,
    /// Each acquired record gets its own ShareAcknowledge (one round trip per record).
    PerRecord,
}

/// One share-consume phase.
#[derive(Debug, Clone)]
pub struct ShareSpec {
    pub bootstrap: String,
    pub topic: String,
    pub group: String,
    /// Records the topic holds; the phase ends when all of them are accepted.
    pub expected: u64,
    /// Value size of every record (the producer's fixed size), for the MB figure.
    pub value_size: usize,
    pub ack: AckMode,
    /// Upper bound on the whole phase, set-up included.
    pub timeout: Duration,
}

/// What a phase achieved. `secs` covers the timed part only: for [`AckMode::Piggyback`] from
/// the first ShareFetch to the answer confirming the last ACCEPT, for [`AckMode::PerRecord`]
/// the sum of the ShareAcknowledge round trips.
#[derive(Debug, Clone, Copy)]
pub struct ShareResult {
    pub records: u64,
    pub bytes: u64,
    pub secs: f64,
}

/// The request sizes the brief fixes (the Java share consumer's defaults).
const MAX_RECORDS: i32 = 500;
const BATCH_SIZE: i32 = 500;
const MAX_WAIT_MS: i32 = 500;
const MIN_BYTES: i32 = 1;
/// 500 records of up to ~16 KiB fit; the broker may return less.
const MAX_BYTES: i32 = 8 << 20;
/// ACCEPT in KIP-932's acknowledge types (1 accept, 2 release, 3 reject).
const ACCEPT: i8 = 1;
/// IncrementalAlterConfigs/DescribeConfigs resource type of a group.
const RESOURCE_GROUP: i8 = 32;
const FINAL_EPOCH: i32 = -1;
/// Group errors a coordinator gives while it is being created or loaded: retried until the
/// deadline (COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR).
const COORDINATOR_STARTING: [i16; 3] = [14, 15, 16];
/// Pause between polls while waiting for the coordinator, the config and the assignment.
const POLL: Duration = Duration::from_millis(50);

/// Runs one phase: set-up, the timed part, close and leave.
pub fn run(spec: &ShareSpec) -> Result<ShareResult> {
    let deadline = Instant::now() + spec.timeout;
    let mut c = Conn::connect(&spec.bootstrap)?;
    c.check_versions()?;
    let topic_id = c.topic_id(&spec.topic)?;
    c.find_coordinator(&spec.group, deadline)?;
    c.set_earliest(&spec.group, deadline)?;
    let mut member = Member::join(&mut c, &spec.group, &spec.topic, topic_id, deadline)?;
    let mut session = Session {
        group: spec.group.clone(),
        member_id: member.id.clone(),
        topic_id,
        epoch: 0,
    };
    let (accepted, secs) = match spec.ack {
        AckMode::Piggyback => piggyback(&mut c, &mut session, &mut member, spec, deadline)?,
        AckMode::PerRecord => per_record(&mut c, &mut session, &mut member, spec, deadline)?,
    };
    member.leave(&mut c)?;
    Ok(ShareResult {
        records: accepted,
        bytes: accepted.saturating_mul(spec.value_size as u64),
        secs,
    })
}

/// Fetch and accept, acknowledgements riding on the next fetch; the last ones close the
/// session. Returns (records accepted, seconds).
fn piggyback(
    c: &mut Conn,
    s: &mut Session,
    m: &mut Member,
    spec: &ShareSpec,
    deadline: Instant,
) -> Result<(u64, f64)> {
    let start = Instant::now();
    let mut accepted = 0u64;
    let mut pending: Vec<(i64, i64)> = Vec::new();
    while accepted + count(&pending) < spec.expected {
        ensure_before(deadline, accepted + count(&pending), spec)?;
        m.heartbeat_if_due(c)?;
        let acquired = s.fetch(c, &pending)?;
        accepted += count(&pending);
        pending = acquired;
    }
    s.acknowledge(c, &pending, FINAL_EPOCH)?;
    accepted += count(&pending);
    Ok((accepted, start.elapsed().as_secs_f64()))
}

/// Fetch without acknowledgements, then one ShareAcknowledge per acquired record; only the
/// acknowledgements are timed. Returns (records accepted, seconds).
fn per_record(
    c: &mut Conn,
    s: &mut Session,
    m: &mut Member,
    spec: &ShareSpec,
    deadline: Instant,
) -> Result<(u64, f64)> {
    let mut accepted = 0u64;
    let mut acking = Duration::ZERO;
    while accepted < spec.expected {
        ensure_before(deadline, accepted, spec)?;
        m.heartbeat_if_due(c)?;
        for (first, last) in s.fetch(c, &[])? {
            for offset in first..=last {
                let t = Instant::now();
                let epoch = s.epoch;
                s.acknowledge(c, &[(offset, offset)], epoch)?;
                acking += t.elapsed();
                accepted += 1;
            }
        }
    }
    s.acknowledge(c, &[], FINAL_EPOCH)?;
    Ok((accepted, acking.as_secs_f64()))
}

fn ensure_before(deadline: Instant, done: u64, spec: &ShareSpec) -> Result<()> {
    if Instant::now() > deadline {
        bail!(
            "share group {}: {done} of {} records of {} accepted before the {:?} deadline",
            spec.group,
            spec.expected,
            spec.topic,
            spec.timeout
        );
    }
    Ok(())
}

/// Records in inclusive offset ranges (validated non-empty when received).
fn count(ranges: &[(i64, i64)]) -> u64 {
    ranges.iter().map(|&(f, l)| (l - f + 1).max(0) as u64).sum()
}

fn code_name(code: i16) -> String {
    match code.err() {
        Some(e) => format!("{e:?} ({code})"),
        None => format!("error code {code}"),
    }
}

/// `Ok` for 0, else an error naming the code, the broker's message and what failed.
fn check(code: i16, message: &Option<StrBytes>, what: &str) -> Result<()> {
    if code == 0 {
        return Ok(());
    }
    match message {
        Some(msg) => bail!("{what}: {} — {}", code_name(code), msg.as_str()),
        None => bail!("{what}: {}", code_name(code)),
    }
}

/// The member's side of the group: id, epoch, heartbeat schedule.
struct Member {
    group: String,
    id: String,
    epoch: i32,
    interval: Duration,
    next_heartbeat: Instant,
}

impl Member {
    /// Joins with epoch 0 and heartbeats until the topic's partition 0 is assigned.
    fn join(
        c: &mut Conn,
        group: &str,
        topic: &str,
        topic_id: Uuid,
        deadline: Instant,
    ) -> Result<Member> {
        let mut m = Member {
            group: group.to_string(),
            id: Uuid::new_v4().to_string(),
            epoch: 0,
            interval: Duration::from_secs(5),
            next_heartbeat: Instant::now(),
        };
        loop {
            let r = m.send_heartbeat(c, Some(topic))?;
            if COORDINATOR_STARTING.contains(&r.error_code) && Instant::now() < deadline {
                std::thread::sleep(POLL);
                continue;
            }
            let r = m.accept_heartbeat(r)?;
            let assigned = r.assignment.as_ref().is_some_and(|a| {
                a.topic_partitions
                    .iter()
                    .any(|tp| tp.topic_id == topic_id && tp.partitions.contains(&0))
            });
            if assigned {
                return Ok(m);
            }
            if Instant::now() > deadline {
                bail!("share group {group}: {topic}/0 was not assigned before the deadline");
            }
            std::thread::sleep(POLL);
        }
    }

    fn heartbeat(&mut self, c: &mut Conn) -> Result<ShareGroupHeartbeatResponse> {
        let r = self.send_heartbeat(c, None)?;
        self.accept_heartbeat(r)
    }

    /// One heartbeat at the member's epoch, its answer not yet checked.
    fn send_heartbeat(
        &self,
        c: &mut Conn,
        subscribe: Option<&str>,
    ) -> Result<ShareGroupHeartbeatResponse> {
        let req = ShareGroupHeartbeatRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(self.group.clone())))
            .with_member_id(StrBytes::from_string(self.id.clone()))
            .with_member_epoch(self.epoch)
            .with_subscribed_topic_names(
                subscribe.map(|t| vec![TopicName(StrBytes::from_string(t.to_string()))]),
            );
        c.call(ApiKey::ShareGroupHeartbeat, 1, &req)
    }

    /// Checks a heartbeat's answer and takes its epoch and interval.
    fn accept_heartbeat(
        &mut self,
        r: ShareGroupHeartbeatResponse,
    ) -> Result<ShareGroupHeartbeatResponse> {
        check(r.error_code, &r.error_message, "ShareGroupHeartbeat")?;
        self.epoch = r.member_epoch;
        // The broker's interval, bounded so a strange value neither spins nor lapses.
        let ms = r.heartbeat_interval_ms.clamp(100, 30_000) as u64;
        self.interval = Duration::from_millis(ms);
        self.next_heartbeat = Instant::now() + self.interval;
        Ok(r)
    }

    fn heartbeat_if_due(&mut self, c: &mut Conn) -> Result<()> {
        if Instant::now() >= self.next_heartbeat {
            self.heartbeat(c)?;
        }
        Ok(())
    }

    fn leave(&mut self, c: &mut Conn) -> Result<()> {
        self.epoch = FINAL_EPOCH;
        let req = ShareGroupHeartbeatRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(self.group.clone())))
            .with_member_id(StrBytes::from_string(self.id.clone()))
            .with_member_epoch(FINAL_EPOCH);
        let r: ShareGroupHeartbeatResponse = c.call(ApiKey::ShareGroupHeartbeat, 1, &req)?;
        check(
            r.error_code,
            &r.error_message,
            "ShareGroupHeartbeat (leave)",
        )
    }
}

/// The share session on the one partition: its epoch moves with every request.
struct Session {
    group: String,
    member_id: String,
    topic_id: Uuid,
    epoch: i32,
}

impl Session {
    /// The next session epoch after a successful request (after i32::MAX comes 1).
    fn advance(&mut self) {
        self.epoch = if self.epoch == i32::MAX {
            1
        } else {
            self.epoch + 1
        };
    }

    /// One ShareFetch carrying ACCEPT for `acks`; returns the acquired offset ranges.
    fn fetch(&mut self, c: &mut Conn, acks: &[(i64, i64)]) -> Result<Vec<(i64, i64)>> {
        use share_fetch_request::{AcknowledgementBatch, FetchPartition, FetchTopic};
        let batches = acks
            .iter()
            .map(|&(f, l)| {
                AcknowledgementBatch::default()
                    .with_first_offset(f)
                    .with_last_offset(l)
                    .with_acknowledge_types(vec![ACCEPT])
            })
            .collect();
        let req = ShareFetchRequest::default()
            .with_group_id(Some(GroupId(StrBytes::from_string(self.group.clone()))))
            .with_member_id(Some(StrBytes::from_string(self.member_id.clone())))
            .with_share_session_epoch(self.epoch)
            .with_max_wait_ms(MAX_WAIT_MS)
            .with_min_bytes(MIN_BYTES)
            .with_max_bytes(MAX_BYTES)
            .with_max_records(MAX_RECORDS)
            .with_batch_size(BATCH_SIZE)
            .with_topics(vec![FetchTopic::default()
                .with_topic_id(self.topic_id)
                .with_partitions(vec![FetchPartition::default()
                    .with_partition_index(0)
                    .with_acknowledgement_batches(batches)])]);
        let r: ShareFetchResponse = c.call(ApiKey::ShareFetch, 1, &req)?;
        check(r.error_code, &r.error_message, "ShareFetch")?;
        self.advance();
        let mut acquired = Vec::new();
        for t in r.responses.iter().filter(|t| t.topic_id == self.topic_id) {
            for p in t.partitions.iter().filter(|p| p.partition_index == 0) {
                check(
                    p.acknowledge_error_code,
                    &p.acknowledge_error_message,
                    "ShareFetch acknowledgements",
                )?;
                check(p.error_code, &p.error_message, "ShareFetch partition 0")?;
                for a in &p.acquired_records {
                    ensure!(
                        0 <= a.first_offset && a.first_offset <= a.last_offset,
                        "ShareFetch: acquired range {}..={} is not a valid offset range",
                        a.first_offset,
                        a.last_offset
                    );
                    acquired.push((a.first_offset, a.last_offset));
                }
            }
        }
        Ok(acquired)
    }

    /// One ShareAcknowledge with ACCEPT for `acks` at `epoch` (the session's, or -1 to close).
    fn acknowledge(&mut self, c: &mut Conn, acks: &[(i64, i64)], epoch: i32) -> Result<()> {
        use share_acknowledge_request::{
            AcknowledgePartition, AcknowledgeTopic, AcknowledgementBatch,
        };
        let batches: Vec<_> = acks
            .iter()
            .map(|&(f, l)| {
                AcknowledgementBatch::default()
                    .with_first_offset(f)
                    .with_last_offset(l)
                    .with_acknowledge_types(vec![ACCEPT])
            })
            .collect();
        let topics = if batches.is_empty() {
            Vec::new()
        } else {
            vec![AcknowledgeTopic::default()
                .with_topic_id(self.topic_id)
                .with_partitions(vec![AcknowledgePartition::default()
                    .with_partition_index(0)
                    .with_acknowledgement_batches(batches)])]
        };
        let req = ShareAcknowledgeRequest::default()
            .with_group_id(Some(GroupId(StrBytes::from_string(self.group.clone()))))
            .with_member_id(Some(StrBytes::from_string(self.member_id.clone())))
            .with_share_session_epoch(epoch)
            .with_topics(topics);
        let r: ShareAcknowledgeResponse = c.call(ApiKey::ShareAcknowledge, 1, &req)?;
        check(r.error_code, &r.error_message, "ShareAcknowledge")?;
        for t in &r.responses {
            for p in &t.partitions {
                check(p.error_code, &p.error_message, "ShareAcknowledge partition")?;
            }
        }
        if !acks.is_empty() {
            let answered = r
                .responses
                .iter()
                .any(|t| t.topic_id == self.topic_id && !t.partitions.is_empty());
            ensure!(answered, "ShareAcknowledge: no answer for the partition");
        }
        if epoch == FINAL_EPOCH {
            self.epoch = FINAL_EPOCH;
        } else {
            self.advance();
        }
        Ok(())
    }
}

impl Conn {
    /// The broker must advertise v1 of the three share APIs this client speaks.
    fn check_versions(&mut self) -> Result<()> {
        let req = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("skiff-bench"))
            .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")));
        let r: ApiVersionsResponse = self.call(ApiKey::ApiVersions, 3, &req)?;
        check(r.error_code, &None, "ApiVersions")?;
        for key in [
            ApiKey::ShareGroupHeartbeat,
            ApiKey::ShareFetch,
            ApiKey::ShareAcknowledge,
            ApiKey::IncrementalAlterConfigs,
            ApiKey::DescribeConfigs,
            ApiKey::Metadata,
            ApiKey::FindCoordinator,
        ] {
            let want = match key {
                ApiKey::IncrementalAlterConfigs => 1,
                ApiKey::DescribeConfigs => 4,
                ApiKey::Metadata => 12,
                ApiKey::FindCoordinator => 4,
                _ => 1,
            };
            let ok = r
                .api_keys
                .iter()
                .any(|v| v.api_key == key as i16 && v.min_version <= want && want <= v.max_version);
            ensure!(ok, "the broker does not advertise {key:?} v{want}");
        }
        Ok(())
    }

    /// The topic's id (ShareFetch names topics by id).
    fn topic_id(&mut self, topic: &str) -> Result<Uuid> {
        let req = MetadataRequest::default()
            .with_topics(Some(vec![metadata_request::MetadataRequestTopic::default(
            )
            .with_name(Some(TopicName(StrBytes::from_string(topic.to_string()))))]));
        let r: MetadataResponse = self.call(ApiKey::Metadata, 12, &req)?;
        let t = r
            .topics
            .iter()
            .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == topic))
            .with_context(|| format!("Metadata: no answer for {topic}"))?;
        check(t.error_code, &None, &format!("Metadata for {topic}"))?;
        ensure!(!t.topic_id.is_nil(), "Metadata: {topic} has no topic id");
        Ok(t.topic_id)
    }

    /// FindCoordinator for `group` until it answers without error (its address is this
    /// broker's on one node).
    fn find_coordinator(&mut self, group: &str, deadline: Instant) -> Result<()> {
        let req = FindCoordinatorRequest::default()
            .with_key_type(0)
            .with_coordinator_keys(vec![StrBytes::from_string(group.to_string())]);
        loop {
            let r: FindCoordinatorResponse = self.call(ApiKey::FindCoordinator, 4, &req)?;
            let found = r
                .coordinators
                .iter()
                .find(|c| c.key.as_str() == group)
                .with_context(|| format!("FindCoordinator: no answer for group {group}"))?;
            if found.error_code == 0 {
                return Ok(());
            }
            if !COORDINATOR_STARTING.contains(&found.error_code) || Instant::now() > deadline {
                check(
                    found.error_code,
                    &found.error_message,
                    &format!("FindCoordinator for group {group}"),
                )?;
            }
            std::thread::sleep(POLL);
        }
    }

    /// Sets the group's `share.auto.offset.reset=earliest` (the records are produced before
    /// the group exists) and waits until DescribeConfigs shows it.
    fn set_earliest(&mut self, group: &str, deadline: Instant) -> Result<()> {
        use incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig};
        const KEY: &str = "share.auto.offset.reset";
        let name = StrBytes::from_string(group.to_string());
        let req = IncrementalAlterConfigsRequest::default().with_resources(vec![
            AlterConfigsResource::default()
                .with_resource_type(RESOURCE_GROUP)
                .with_resource_name(name.clone())
                .with_configs(vec![AlterableConfig::default()
                    .with_name(StrBytes::from_static_str(KEY))
                    .with_config_operation(0)
                    .with_value(Some(StrBytes::from_static_str("earliest")))]),
        ]);
        let r: IncrementalAlterConfigsResponse =
            self.call(ApiKey::IncrementalAlterConfigs, 1, &req)?;
        for res in &r.responses {
            check(
                res.error_code,
                &res.error_message,
                "IncrementalAlterConfigs",
            )?;
        }
        loop {
            let req = DescribeConfigsRequest::default().with_resources(vec![
                describe_configs_request::DescribeConfigsResource::default()
                    .with_resource_type(RESOURCE_GROUP)
                    .with_resource_name(name.clone())
                    .with_configuration_keys(Some(vec![StrBytes::from_static_str(KEY)])),
            ]);
            let r: DescribeConfigsResponse = self.call(ApiKey::DescribeConfigs, 4, &req)?;
            for res in &r.results {
                check(res.error_code, &res.error_message, "DescribeConfigs")?;
            }
            let shown = r.results.iter().flat_map(|res| &res.configs).any(|c| {
                c.name.as_str() == KEY && c.value.as_ref().is_some_and(|v| v.as_str() == "earliest")
            });
            if shown {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("group {group}: {KEY}=earliest not visible before the deadline");
            }
            std::thread::sleep(POLL);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn ranges_count_inclusively() {
        assert_eq!(count(&[]), 0);
        assert_eq!(count(&[(0, 0), (5, 9)]), 6);
    }

    /// A one-shot server on port 0 that reads one request frame and answers `reply`.
    fn serve_once(reply: Vec<u8>) -> (String, std::thread::JoinHandle<()>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let h = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut size = [0u8; 4];
            s.read_exact(&mut size).unwrap();
            let mut req = vec![0u8; i32::from_be_bytes(size) as usize];
            s.read_exact(&mut req).unwrap();
            s.write_all(&reply).unwrap();
        });
        (addr, h)
    }

    fn api_versions(c: &mut Conn) -> Result<ApiVersionsResponse> {
        c.call(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default())
    }

    #[test]
    fn oversized_and_negative_frames_are_refused_before_reading() {
        for size in [i32::MAX, -1, 2] {
            let (addr, h) = serve_once(size.to_be_bytes().to_vec());
            let e = api_versions(&mut Conn::connect(&addr).unwrap()).unwrap_err();
            assert!(format!("{e:#}").contains("out of bounds"), "{e:#}");
            h.join().unwrap();
        }
    }

    #[test]
    fn wrong_correlation_id_and_garbage_bodies_are_errors() {
        // Correlation id 7 where 1 is expected (ApiVersions answers have header v0).
        let mut frame = 4i32.to_be_bytes().to_vec();
        frame.extend_from_slice(&7i32.to_be_bytes());
        let (addr, h) = serve_once(frame);
        let e = api_versions(&mut Conn::connect(&addr).unwrap()).unwrap_err();
        assert!(format!("{e:#}").contains("correlation id 7"), "{e:#}");
        h.join().unwrap();
        // The right correlation id, then a truncated body.
        let mut frame = 7i32.to_be_bytes().to_vec();
        frame.extend_from_slice(&1i32.to_be_bytes());
        frame.extend_from_slice(&[0, 0, 0]);
        let (addr, h) = serve_once(frame);
        let e = api_versions(&mut Conn::connect(&addr).unwrap()).unwrap_err();
        assert!(format!("{e:#}").contains("decoding"), "{e:#}");
        h.join().unwrap();
    }

    #[test]
    fn error_codes_are_named() {
        assert!(code_name(58).contains("58"));
        assert!(check(0, &None, "x").is_ok());
        let e = check(3, &Some(StrBytes::from_static_str("gone")), "Fetch").unwrap_err();
        assert!(format!("{e}").contains("gone"));
    }
}
