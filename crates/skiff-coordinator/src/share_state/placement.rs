//! Which `__share_group_state` partition holds a share partition's records: Kafka's choice,
//! so a topic written by either broker is read back from the partition the other expects.
//!
//! Kafka hashes the string `"{group}:{topic id}:{partition}"` (the topic id in Kafka's own
//! text form: URL-safe base64 without padding) with Java's `String.hashCode`, maps
//! `i32::MIN` to 0 (`Utils.abs`) and takes it modulo the partition count.

use uuid::Uuid;

use super::records::SharePartitionKey;
use crate::groups::records::partition_for as hash_to_partition;

/// Kafka's `Uuid.toString()`: the 16 bytes in URL-safe base64, no padding (22 characters).
pub fn kafka_uuid_string(id: Uuid) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bytes = id.as_bytes();
    let mut out = String::with_capacity(22);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        let chars = chunk.len() + 1;
        for i in 0..chars {
            let index = (n >> (18 - 6 * i)) & 0x3f;
            out.push(char::from(ALPHABET[index as usize]));
        }
    }
    out
}

/// Kafka's `SharePartitionKey.asCoordinatorKey()`.
pub fn coordinator_key(key: &SharePartitionKey) -> String {
    format!(
        "{}:{}:{}",
        key.group,
        kafka_uuid_string(key.topic_id),
        key.partition
    )
}

/// The `__share_group_state` partition of `key` among `partitions`.
pub fn partition_for(key: &SharePartitionKey, partitions: i32) -> i32 {
    hash_to_partition(&coordinator_key(key), partitions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_text_is_kafkas() {
        // Kafka's Uuid.ZERO_UUID prints as "AAAAAAAAAAAAAAAAAAAAAA"; METADATA_TOPIC_ID (0, 1)
        // as "AAAAAAAAAAAAAAAAAAAAAQ".
        assert_eq!(kafka_uuid_string(Uuid::nil()), "AAAAAAAAAAAAAAAAAAAAAA");
        assert_eq!(
            kafka_uuid_string(Uuid::from_u64_pair(0, 1)),
            "AAAAAAAAAAAAAAAAAAAAAQ"
        );
        // All ones uses the URL-safe characters.
        assert_eq!(
            kafka_uuid_string(Uuid::from_bytes([0xff; 16])),
            "_____________________w"
        );
        // A mixed value, checked against a standard base64url encoder.
        let id = Uuid::from_bytes([
            0xfb, 0xef, 0xbe, 0x00, 0x10, 0x83, 0x10, 0x51, 0x87, 0x20, 0x92, 0x8b, 0x30, 0xd3,
            0x8f, 0x41,
        ]);
        assert_eq!(kafka_uuid_string(id), "----ABCDEFGHIJKLMNOPQQ");
    }

    #[test]
    fn partition_hashes_the_coordinator_key() {
        let key = SharePartitionKey {
            group: "g".into(),
            topic_id: Uuid::nil(),
            partition: 3,
        };
        assert_eq!(coordinator_key(&key), "g:AAAAAAAAAAAAAAAAAAAAAA:3");
        let expected = crate::groups::records::java_string_hash("g:AAAAAAAAAAAAAAAAAAAAAA:3");
        assert_eq!(partition_for(&key, 50), expected.abs() % 50);
        assert!((0..50).contains(&partition_for(&key, 50)));
    }

    /// Partitions Kafka 4.4.0 computes (`SharePartitionKey.asCoordinatorKey().hashCode()`,
    /// `Utils.abs`, modulo 50) for this topic id, whose Kafka text form is
    /// "AQIDBAUGBwgJCgsMDQ4PEA".
    #[test]
    fn partitions_match_kafka() {
        let topic_id = Uuid::from_bytes([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
        assert_eq!(kafka_uuid_string(topic_id), "AQIDBAUGBwgJCgsMDQ4PEA");
        let cases = [
            ("orders", [38, 39, 40]),
            ("g", [46, 47, 48]),
            ("share-group-1", [44, 45, 46]),
        ];
        for (group, want) in cases {
            for (partition, want) in want.into_iter().enumerate() {
                let key = SharePartitionKey {
                    group: group.into(),
                    topic_id,
                    partition: partition as i32,
                };
                assert_eq!(partition_for(&key, 50), want, "{group}:{partition}");
            }
        }
    }
}
