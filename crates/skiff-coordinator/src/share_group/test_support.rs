//! Helpers shared by the share group tests: a topic catalogue and request builders.

use std::collections::BTreeMap;
use std::sync::Mutex;

use kafka_protocol::messages::{GroupId, ShareGroupHeartbeatRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::*;
use crate::host::TopicCatalog;

/// Topics by name: (id, partition count). Ids are fixed per name so tests can build them.
#[derive(Default)]
pub struct Topics(pub Mutex<BTreeMap<String, (Uuid, i32)>>);

impl Topics {
    pub fn with(topics: &[(&str, i32)]) -> Topics {
        let t = Topics::default();
        for (name, count) in topics {
            t.set(name, *count);
        }
        t
    }

    pub fn set(&self, name: &str, count: i32) {
        self.0
            .lock()
            .unwrap()
            .insert(name.to_string(), (id(name), count));
    }

    pub fn drop_topic(&self, name: &str) {
        self.0.lock().unwrap().remove(name);
    }
}

impl TopicCatalog for Topics {
    fn topic_id(&self, name: &str) -> Option<Uuid> {
        self.0.lock().unwrap().get(name).map(|t| t.0)
    }
    fn topic_name(&self, id: Uuid) -> Option<String> {
        let topics = self.0.lock().unwrap();
        topics
            .iter()
            .find(|(_, t)| t.0 == id)
            .map(|(n, _)| n.clone())
    }
    fn partition_count(&self, name: &str) -> Option<i32> {
        self.0.lock().unwrap().get(name).map(|t| t.1)
    }
}

/// The id a test topic gets: derived from its name, so it is known without a catalogue.
pub fn id(name: &str) -> Uuid {
    let mut bytes = [0u8; 16];
    for (i, b) in name.bytes().enumerate() {
        bytes[i % 15] ^= b;
    }
    bytes[15] = name.len() as u8;
    Uuid::from_bytes(bytes)
}

/// topic name → partitions, as an assignment by topic id.
pub fn tps(parts: &[(&str, &[i32])]) -> TopicAssignment {
    parts
        .iter()
        .map(|(t, ps)| (id(t), ps.iter().copied().collect()))
        .collect()
}

/// Settings with assignment computed on every change (the interval is tested on its own).
pub fn eager() -> ShareGroupSettings {
    ShareGroupSettings {
        assignment_interval_ms: 0,
        ..ShareGroupSettings::default()
    }
}

pub fn join_hb(member: &str, topics: &[&str]) -> Heartbeat {
    Heartbeat {
        member_id: member.into(),
        member_epoch: 0,
        subscribed: Some(topics.iter().map(|t| t.to_string()).collect()),
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
        ..Heartbeat::default()
    }
}

pub fn beat_hb(member: &str, epoch: i32) -> Heartbeat {
    Heartbeat {
        member_id: member.into(),
        member_epoch: epoch,
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
        ..Heartbeat::default()
    }
}

pub fn request(
    group: &str,
    member: &str,
    epoch: i32,
    topics: Option<&[&str]>,
) -> ShareGroupHeartbeatRequest {
    ShareGroupHeartbeatRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.into())))
        .with_member_id(StrBytes::from_string(member.into()))
        .with_member_epoch(epoch)
        .with_subscribed_topic_names(topics.map(|ts| {
            ts.iter()
                .map(|t| TopicName(StrBytes::from_string(t.to_string())))
                .collect()
        }))
}
