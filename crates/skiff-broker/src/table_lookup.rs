//! Key lookups on compacted topics (issue 16, docs/key-index.md): the latest value of one key,
//! served from the partition's key index (`skiff.key.index.enable`) with one batch read. The
//! HTTP route calls [`Broker::lookup_key`] and turns its answer into a response: a hit as
//! JSON (the same fields as a table snapshot line), `None` as "not found", and a
//! [`LookupError`] by its [`LookupError::kind`] and [`LookupError::http_status`].
//!
//! Blocking: a lookup may read one batch from disk (and, rarely, catch the index up with
//! appends that are still applying it): call it from a blocking thread
//! (`tokio::task::spawn_blocking`), not on a runtime worker, or use
//! [`Broker::lookup_key_async`], which does that. Typical cost: a hash probe and
//! one positioned read of a page-cached batch.
//!
//! Thread-safety: takes the topic registry's read lock briefly and the partition index's
//! mutex (never a log's append lock).

use std::borrow::Cow;

use bytes::Bytes;
use serde::Serialize;
use skiff_log::KeyLookup;

use crate::broker::Broker;
pub use crate::partitioner::Partitioner;
use crate::table_snapshot::{Encoding, RecordJson};

/// One lookup.
#[derive(Clone, Debug)]
pub struct LookupRequest {
    pub topic: String,
    /// The partition to look in; None computes it from the key with `partitioner`.
    pub partition: Option<i32>,
    pub key: Bytes,
    pub partitioner: Partitioner,
    /// true: only committed data (non-transactional records and committed transactions);
    /// false: open transactions' records too. Aborted records are never returned.
    pub read_committed: bool,
}

/// The latest record of the key. Serializes as
/// `{"partition":p,"offset":o,"timestamp":t,"key":..,"value":..,"headers":[{"key":..,"value":..}]}`
/// with key and values as UTF-8 text, or base64 flagged `"key_encoding":"base64"` (etc.) when
/// not valid UTF-8, exactly like a table snapshot line; [`LookupHit::view`] for always-base64.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LookupHit {
    pub partition: i32,
    pub offset: i64,
    pub timestamp: i64,
    pub key: Bytes,
    pub value: Bytes,
    /// Header keys as text (lossy UTF-8, as clients decode them); values possibly null.
    pub headers: Vec<(String, Option<Bytes>)>,
}

/// Why a lookup could not answer found / not found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    #[error("topic {0} does not exist")]
    UnknownTopic(String),
    #[error("topic {topic} has no partition {partition} (it has {count})")]
    UnknownPartition {
        topic: String,
        partition: i32,
        count: i32,
    },
    #[error(
        "topic {0} is not compacted (cleanup.policy has no compact): keys have no single \
         latest value to look up"
    )]
    NotCompacted(String),
    #[error(
        "topic {0} has no key index: set the topic config skiff.key.index.enable=true \
         (AlterConfigs or CreateTopics), then retry once it is built"
    )]
    IndexDisabled(String),
    #[error(
        "the key index of {topic}-{partition} is still being built (after a restart or after \
         it was enabled); retry shortly"
    )]
    Loading { topic: String, partition: i32 },
    #[error(
        "the key index of {topic}-{partition} was dropped: it needed more than \
         skiff.key.index.memory.bytes ({limit_bytes} bytes, shared by all indexed \
         partitions). Raise it and restart, or index fewer topics; switching \
         skiff.key.index.enable off and on rebuilds it"
    )]
    OverBudget {
        topic: String,
        partition: i32,
        limit_bytes: u64,
    },
    #[error("key lookup failed reading the log: {0}")]
    Storage(String),
}

impl LookupError {
    /// A stable snake_case code for a JSON body.
    pub fn kind(&self) -> &'static str {
        match self {
            LookupError::UnknownTopic(_) => "unknown_topic",
            LookupError::UnknownPartition { .. } => "unknown_partition",
            LookupError::NotCompacted(_) => "not_compacted",
            LookupError::IndexDisabled(_) => "index_disabled",
            LookupError::Loading { .. } => "loading",
            LookupError::OverBudget { .. } => "over_budget",
            LookupError::Storage(_) => "storage",
        }
    }

    /// The HTTP status a route should answer with: 404 for what does not exist, 409 for a
    /// topic that is not compacted or has no index (as the snapshot and compaction routes
    /// answer a topic in the wrong state), 503 while loading or over budget, 500 for a
    /// storage failure.
    pub fn http_status(&self) -> u16 {
        match self {
            LookupError::UnknownTopic(_) | LookupError::UnknownPartition { .. } => 404,
            LookupError::NotCompacted(_) | LookupError::IndexDisabled(_) => 409,
            LookupError::Loading { .. } | LookupError::OverBudget { .. } => 503,
            LookupError::Storage(_) => 500,
        }
    }
}

impl Broker {
    /// The latest record of `req.key`, or None when the key never existed, its latest record
    /// is a tombstone, or the topic no longer holds it. Blocking: see the module docs.
    pub fn lookup_key(&self, req: &LookupRequest) -> Result<Option<LookupHit>, LookupError> {
        let topic = self
            .topics
            .get(&req.topic)
            .ok_or_else(|| LookupError::UnknownTopic(req.topic.clone()))?;
        let count = topic.partition_count();
        let index = match req.partition {
            Some(p) => p,
            None => req.partitioner.partition(&req.key, count).unwrap_or(-1),
        };
        let partition = topic
            .partition(index)
            .ok_or_else(|| LookupError::UnknownPartition {
                topic: req.topic.clone(),
                partition: index,
                count,
            })?;
        if !partition.log.config().cleanup_policy.compact {
            return Err(LookupError::NotCompacted(req.topic.clone()));
        }
        let found = partition
            .log
            .lookup_key(&req.key, req.read_committed)
            .map_err(|e| LookupError::Storage(e.to_string()))?;
        match found {
            KeyLookup::Found(r) => Ok(Some(LookupHit {
                partition: index,
                offset: r.offset,
                timestamp: r.timestamp,
                key: r.key,
                value: r.value,
                headers: r
                    .headers
                    .into_iter()
                    .map(|(k, v)| (String::from_utf8_lossy(&k).into_owned(), v))
                    .collect(),
            })),
            KeyLookup::NotFound => Ok(None),
            KeyLookup::Disabled => Err(LookupError::IndexDisabled(req.topic.clone())),
            KeyLookup::Loading => Err(LookupError::Loading {
                topic: req.topic.clone(),
                partition: index,
            }),
            KeyLookup::OverBudget { limit_bytes } => Err(LookupError::OverBudget {
                topic: req.topic.clone(),
                partition: index,
                limit_bytes,
            }),
        }
    }
}

impl Broker {
    /// [`Broker::lookup_key`] on tokio's blocking pool, for async callers (the HTTP route).
    pub async fn lookup_key_async(
        self: &std::sync::Arc<Self>,
        req: LookupRequest,
    ) -> Result<Option<LookupHit>, LookupError> {
        let broker = self.clone();
        tokio::task::spawn_blocking(move || broker.lookup_key(&req))
            .await
            .map_err(|e| LookupError::Storage(format!("the lookup task failed: {e}")))?
    }
}

/// A [`LookupHit`] as JSON with a chosen encoding of keys and values.
pub struct LookupHitView<'a> {
    hit: &'a LookupHit,
    encoding: Encoding,
}

impl LookupHit {
    /// Serializes with `encoding` (`Text`: UTF-8 with flagged base64 fallback, the default
    /// `Serialize`; `Base64`: always base64, never flagged).
    pub fn view(&self, encoding: Encoding) -> LookupHitView<'_> {
        LookupHitView {
            hit: self,
            encoding,
        }
    }
}

impl Serialize for LookupHit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.view(Encoding::Text).serialize(s)
    }
}

impl Serialize for LookupHitView<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let h = self.hit;
        let headers = h
            .headers
            .iter()
            .map(|(k, v)| (Cow::Borrowed(k.as_str()), v.as_deref()));
        RecordJson::new(
            h.partition,
            h.offset,
            h.timestamp,
            (&h.key, &h.value),
            headers,
            self.encoding,
        )
        .serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hit_serializes_like_a_snapshot_line() {
        let hit = LookupHit {
            partition: 2,
            offset: 7,
            timestamp: 1000,
            key: Bytes::from_static(b"k"),
            value: Bytes::from_static(&[0xff, 0x00]),
            headers: vec![
                ("h".into(), None),
                ("t".into(), Some(Bytes::from_static(b"x"))),
            ],
        };
        assert_eq!(
            serde_json::to_string(&hit).unwrap(),
            r#"{"partition":2,"offset":7,"timestamp":1000,"key":"k","value":"/wA=","value_encoding":"base64","headers":[{"key":"h","value":null},{"key":"t","value":"x"}]}"#
        );
        assert_eq!(
            serde_json::to_string(&hit.view(Encoding::Base64)).unwrap(),
            r#"{"partition":2,"offset":7,"timestamp":1000,"key":"aw==","value":"/wA=","headers":[{"key":"h","value":null},{"key":"t","value":"eA=="}]}"#
        );
    }

    #[test]
    fn error_kinds_are_stable_and_messages_name_the_config() {
        let e = LookupError::IndexDisabled("t".into());
        assert_eq!(e.kind(), "index_disabled");
        assert!(e.to_string().contains("skiff.key.index.enable=true"));
        let e = LookupError::OverBudget {
            topic: "t".into(),
            partition: 0,
            limit_bytes: 10,
        };
        assert_eq!((e.kind(), e.http_status()), ("over_budget", 503));
        assert!(e.to_string().contains("skiff.key.index.memory.bytes"));
    }
}
