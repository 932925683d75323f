//! Table snapshots of compacted topics as NDJSON (issue 16, docs/snapshots.md): the line
//! producer an HTTP route streams. The route is not here; it calls [`TableSnapshots::start`]
//! and forwards the chunks of the returned [`SnapshotStream`] as the response body.
//!
//! Output, UTF-8, one JSON object per line:
//! - per live key, partitions in order: `{"partition":p,"offset":o,"timestamp":t,"key":..,
//!   "value":..,"headers":[{"key":..,"value":..}]}`. With [`Encoding::Text`] key, value and
//!   header values are strings; a field that is not valid UTF-8 is written in base64 instead
//!   and flagged (`"key_encoding":"base64"`, `"value_encoding":"base64"`, per header
//!   `"value_encoding":"base64"`). With [`Encoding::Base64`] they are always base64 (standard
//!   alphabet, padded) and never flagged. Header keys are always text (lossy UTF-8, as Kafka
//!   clients decode them); a null header value is `null`.
//! - last, `{"end_offsets":{"0":E0,"1":E1,..}}`: consuming partition p from `E_p` (same
//!   isolation level) continues the table with nothing missed. A response without this line
//!   is incomplete (the snapshot failed or was cut) and must be discarded.
//!
//! Thread-safety: `start` pins every partition on the caller's thread (cheap, no I/O) and runs
//! the scans on a tokio blocking thread, which pushes chunks of whole lines into a bounded
//! channel: a slow client stalls the scan, never grows memory. Dropping the stream cancels the
//! scan at its next chunk. A semaphore bounds the snapshots running at once
//! (`skiff.snapshot.max.concurrent`); memory per snapshot is the map bound
//! (`skiff.snapshot.memory.bytes`) + one decoded batch + the channel's chunks.

use std::borrow::Cow;
use std::sync::Arc;
use std::task::{Context, Poll};

use base64::Engine;
use bytes::Bytes;
use serde::Serialize;
use skiff_cleaner::{snapshot_partition, SnapshotError, SnapshotLimits, TableRecord};
use skiff_config::BrokerConfig;
use skiff_log::PinnedLog;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

use crate::broker::Broker;

/// Bytes of lines gathered before a chunk is handed to the channel.
const CHUNK_BYTES: usize = 64 << 10;
/// Chunks the channel holds: with `CHUNK_BYTES`, about 0.5 MiB waiting per snapshot.
const CHANNEL_CHUNKS: usize = 8;
/// Segment read size of a snapshot scan (the cleaner's default I/O buffer).
const IO_BUFFER: usize = 512 << 10;

/// Which records count, as for a consumer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Isolation {
    /// Up to the high watermark, aborted and open transactional data included.
    ReadUncommitted,
    /// Up to the last stable offset, aborted transactional data skipped.
    #[default]
    ReadCommitted,
}

/// How keys, values and header values are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-8 text, falling back to flagged base64 for bytes that are not UTF-8.
    #[default]
    Text,
    /// Always base64.
    Base64,
}

/// What to snapshot.
#[derive(Clone, Debug)]
pub struct SnapshotRequest {
    pub topic: String,
    pub isolation: Isolation,
    pub encoding: Encoding,
}

/// Why a snapshot could not start (the route's status code: 404, 400, 503).
#[derive(Debug, thiserror::Error)]
pub enum SnapshotStartError {
    #[error("topic {0} does not exist")]
    UnknownTopic(String),
    #[error("topic {0} is not compacted (cleanup.policy has no compact): it has no table view")]
    NotCompacted(String),
    #[error(
        "{0} table snapshots are already running (skiff.snapshot.max.concurrent); retry later"
    )]
    Busy(usize),
}

/// The snapshot service: limits from the broker config and the concurrency bound. Create one
/// per HTTP server and share it.
pub struct TableSnapshots {
    limits: SnapshotLimits,
    permits: Arc<Semaphore>,
    max_concurrent: usize,
}

impl TableSnapshots {
    pub fn new(config: &BrokerConfig) -> TableSnapshots {
        let max_concurrent =
            usize::try_from(config.skiff_snapshot_max_concurrent.max(1)).unwrap_or(1);
        TableSnapshots {
            limits: SnapshotLimits {
                memory_bytes: u64::try_from(config.skiff_snapshot_memory_bytes).unwrap_or(1024),
                io_buffer_size: IO_BUFFER,
            },
            permits: Arc::new(Semaphore::new(max_concurrent)),
            max_concurrent,
        }
    }

    /// Pins every partition of the topic now (the snapshot's "as of") and starts producing
    /// lines on a blocking thread. Must be called within a tokio runtime.
    pub fn start(
        &self,
        broker: &Broker,
        request: SnapshotRequest,
    ) -> Result<SnapshotStream, SnapshotStartError> {
        let topic = broker
            .topics
            .get(&request.topic)
            .ok_or_else(|| SnapshotStartError::UnknownTopic(request.topic.clone()))?;
        let partitions = topic.partitions();
        if !partitions
            .iter()
            .all(|p| p.log.config().cleanup_policy.compact)
        {
            return Err(SnapshotStartError::NotCompacted(request.topic));
        }
        let permit = self
            .permits
            .clone()
            .try_acquire_owned()
            .map_err(|_| SnapshotStartError::Busy(self.max_concurrent))?;
        let read_committed = request.isolation == Isolation::ReadCommitted;
        let pinned: Vec<(i32, PinnedLog)> = partitions
            .iter()
            .map(|p| (p.index, p.log.pin(read_committed)))
            .collect();
        let end_offsets = pinned.iter().map(|(p, v)| (*p, v.end_offset())).collect();
        let (tx, rx) = mpsc::channel(CHANNEL_CHUNKS);
        let limits = self.limits;
        let encoding = request.encoding;
        let topic_name = request.topic;
        tokio::task::spawn_blocking(move || {
            produce(topic_name, pinned, limits, encoding, tx, permit);
        });
        Ok(SnapshotStream { rx, end_offsets })
    }
}

/// The running snapshot: chunks of whole NDJSON lines, then the end of the stream. An `Err`
/// item ends it early (the route must then abort the body so the client sees a cut response).
pub struct SnapshotStream {
    rx: mpsc::Receiver<Result<Bytes, SnapshotError>>,
    /// `(partition, end offset)`, as the last line will say (e.g. for a response header).
    pub end_offsets: Vec<(i32, i64)>,
}

impl SnapshotStream {
    /// The next chunk; `None` after the last line.
    pub async fn next_chunk(&mut self) -> Option<Result<Bytes, SnapshotError>> {
        self.rx.recv().await
    }

    /// Poll form of [`SnapshotStream::next_chunk`], for a `Stream` adapter
    /// (`futures::stream::poll_fn(move |cx| s.poll_chunk(cx))`).
    pub fn poll_chunk(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, SnapshotError>>> {
        self.rx.poll_recv(cx)
    }
}

/// The blocking side: runs the snapshot and pushes chunks until done, failed or cancelled.
fn produce(
    topic: String,
    pinned: Vec<(i32, PinnedLog)>,
    limits: SnapshotLimits,
    encoding: Encoding,
    tx: mpsc::Sender<Result<Bytes, SnapshotError>>,
    _permit: OwnedSemaphorePermit,
) {
    let started = std::time::Instant::now();
    let mut send = |chunk: Bytes| {
        tx.blocking_send(Ok(chunk))
            .map_err(|_| SnapshotError::Cancelled("the reader went away".to_string()))
    };
    match write_ndjson(&pinned, &limits, encoding, &mut send) {
        Ok(summary) => tracing::info!(
            topic,
            partitions = pinned.len(),
            records = summary.records,
            bytes_read = summary.bytes_read,
            slices = summary.slices,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "table snapshot"
        ),
        Err(SnapshotError::Cancelled(why)) => {
            tracing::info!(topic, why, "table snapshot cancelled");
        }
        Err(e) => {
            tracing::warn!(topic, error = %e, "table snapshot failed");
            let _ = tx.blocking_send(Err(e));
        }
    }
}

/// Totals of one snapshot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SnapshotSummary {
    pub records: u64,
    pub bytes_read: u64,
    pub slices: u64,
}

/// Writes the NDJSON of pinned partitions to `sink` in chunks of whole lines (at most about
/// `CHUNK_BYTES`, or one line when a line is larger), the `end_offsets` line last. The
/// synchronous core of [`TableSnapshots::start`].
pub fn write_ndjson(
    pinned: &[(i32, PinnedLog)],
    limits: &SnapshotLimits,
    encoding: Encoding,
    sink: &mut dyn FnMut(Bytes) -> Result<(), SnapshotError>,
) -> Result<SnapshotSummary, SnapshotError> {
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK_BYTES);
    let mut summary = SnapshotSummary::default();
    for (partition, view) in pinned {
        let stats = snapshot_partition(
            view,
            limits,
            &mut |r| {
                write_record(&mut buf, *partition, &r, encoding)?;
                if buf.len() >= CHUNK_BYTES {
                    sink(Bytes::from(std::mem::take(&mut buf)))?;
                }
                Ok(())
            },
            &mut || {},
        )?;
        summary.records += stats.records;
        summary.bytes_read += stats.bytes_read;
        summary.slices += u64::from(stats.slices);
    }
    let ends: Vec<String> = pinned
        .iter()
        .map(|(p, v)| format!("\"{p}\":{}", v.end_offset()))
        .collect();
    buf.extend_from_slice(format!("{{\"end_offsets\":{{{}}}}}\n", ends.join(",")).as_bytes());
    sink(Bytes::from(buf))?;
    Ok(summary)
}

/// `bytes` as asked: text when allowed and valid UTF-8, else base64 with the flag.
pub(crate) fn encode(bytes: &[u8], encoding: Encoding) -> (String, Option<&'static str>) {
    let b64 = || base64::engine::general_purpose::STANDARD.encode(bytes);
    match encoding {
        Encoding::Base64 => (b64(), None),
        Encoding::Text => match std::str::from_utf8(bytes) {
            Ok(s) => (s.to_string(), None),
            Err(_) => (b64(), Some("base64")),
        },
    }
}

fn write_record(
    out: &mut Vec<u8>,
    partition: i32,
    r: &TableRecord,
    encoding: Encoding,
) -> Result<(), SnapshotError> {
    let headers = r
        .headers
        .iter()
        .map(|(k, v)| (String::from_utf8_lossy(k), v.as_deref()));
    let line = RecordJson::new(
        partition,
        r.offset,
        r.timestamp,
        (&r.key, &r.value),
        headers,
        encoding,
    );
    serde_json::to_writer(&mut *out, &line)
        .map_err(|e| SnapshotError::Cancelled(format!("could not encode a line: {e}")))?;
    out.push(b'\n');
    Ok(())
}

/// One record as the tables API writes it: a snapshot line, and a key lookup's answer
/// (`table_lookup`), so both read the same.
#[derive(Serialize)]
pub(crate) struct RecordJson<'a> {
    partition: i32,
    offset: i64,
    timestamp: i64,
    key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_encoding: Option<&'static str>,
    value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    value_encoding: Option<&'static str>,
    headers: Vec<HeaderJson<'a>>,
}

#[derive(Serialize)]
struct HeaderJson<'a> {
    key: Cow<'a, str>,
    value: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value_encoding: Option<&'static str>,
}

impl<'a> RecordJson<'a> {
    /// Key, value and header values written as `encoding` asks ([`encode`]); header keys
    /// are given as text.
    pub(crate) fn new(
        partition: i32,
        offset: i64,
        timestamp: i64,
        (key, value): (&[u8], &[u8]),
        headers: impl Iterator<Item = (Cow<'a, str>, Option<&'a [u8]>)>,
        encoding: Encoding,
    ) -> RecordJson<'a> {
        let (key, key_encoding) = encode(key, encoding);
        let (value, value_encoding) = encode(value, encoding);
        let headers = headers
            .map(|(key, v)| {
                let (value, value_encoding) = match v.map(|v| encode(v, encoding)) {
                    Some((text, enc)) => (Some(text), enc),
                    None => (None, None),
                };
                HeaderJson {
                    key,
                    value,
                    value_encoding,
                }
            })
            .collect();
        RecordJson {
            partition,
            offset,
            timestamp,
            key,
            key_encoding,
            value,
            value_encoding,
            headers,
        }
    }
}
