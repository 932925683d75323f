//! Structs that several streams group messages share, with the same layout in each of the
//! Kafka 4.4 schemas that declare them (as `commonStructs`): key/value configs, internal
//! topic descriptions, endpoints, task offsets and task id sets.
//!
//! Thread-safety: plain data. No on-disk format.

use crate::wire::ALL;

message! {
    /// A string key and value (a topic config, a client tag).
    pub struct KeyValue {
        /// The key.
        key: String [ALL] = String::new(),
        /// The value.
        value: String [ALL] = String::new(),
    }
}

message! {
    /// An internal topic a streams application needs (changelog or repartition topic).
    pub struct TopicInfo {
        /// The topic name.
        name: String [ALL] = String::new(),
        /// Partition count; 0 when not fixed by the application (always 0 for changelogs).
        partitions: i32 [ALL] = 0,
        /// Replication factor; 0 for the broker's default.
        replication_factor: i16 [ALL] = 0,
        /// Topic configs to create it with.
        topic_configs: Vec<KeyValue> [ALL] = Vec::new(),
    }
}

message! {
    /// A host and port (the Interactive Queries endpoint of a streams client).
    pub struct Endpoint {
        /// The host.
        host: String [ALL] = String::new(),
        /// The port (uint16 on the wire).
        port: u16 [ALL] = 0,
    }
}

message! {
    /// A changelog offset of one task.
    pub struct TaskOffset {
        /// The subtopology.
        subtopology_id: String [ALL] = String::new(),
        /// The partition (task) within the subtopology.
        partition: i32 [ALL] = 0,
        /// The offset.
        offset: i64 [ALL] = 0,
    }
}

message! {
    /// The tasks of one subtopology: its id and the partitions of its input topics.
    pub struct TaskIds {
        /// The subtopology.
        subtopology_id: String [ALL] = String::new(),
        /// The partitions.
        partitions: Vec<i32> [ALL] = Vec::new(),
    }
}
