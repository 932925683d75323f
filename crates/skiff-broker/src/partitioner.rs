//! Which partition a producer client puts a key in, so a key lookup can find it without
//! being told: the Java client's default (murmur2) and librdkafka's `consistent` /
//! `consistent_random` (CRC-32 of the key). Pure functions; thread-safe.
//!
//! Both are computed from the key bytes alone, as the clients do for non-null keys. The
//! Java rule: `toPositive(murmur2(key)) % numPartitions`, where `toPositive` clears the sign
//! bit (it is not `abs`). librdkafka: `crc32(key) % partition_cnt` on unsigned 32 bits.

/// How the producers of the topic chose partitions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Partitioner {
    /// The Java client's default partitioner (also librdkafka's `murmur2` and
    /// `murmur2_random`).
    #[default]
    Murmur2,
    /// librdkafka's `consistent` and `consistent_random` (its default is
    /// `consistent_random`).
    Crc32,
}

impl std::str::FromStr for Partitioner {
    type Err = String;

    /// The names clients use: `murmur2` (also `murmur2_random`, `default`, `java`) and
    /// `crc32` (also librdkafka's `consistent` and `consistent_random`); case-insensitive.
    fn from_str(s: &str) -> Result<Partitioner, String> {
        match s.to_ascii_lowercase().as_str() {
            "murmur2" | "murmur2_random" | "default" | "java" => Ok(Partitioner::Murmur2),
            "crc32" | "consistent" | "consistent_random" => Ok(Partitioner::Crc32),
            other => Err(format!(
                "unknown partitioner {other:?}: use murmur2 (the Java client's default) or \
                 crc32 (librdkafka's consistent / consistent_random)"
            )),
        }
    }
}

impl Partitioner {
    /// The partition of `key` among `partitions` (> 0), or None when there are none.
    pub fn partition(self, key: &[u8], partitions: i32) -> Option<i32> {
        let n = u32::try_from(partitions).ok().filter(|n| *n > 0)?;
        let p = match self {
            Partitioner::Murmur2 => (murmur2(key) as u32 & 0x7fff_ffff) % n,
            Partitioner::Crc32 => crc32fast::hash(key) % n,
        };
        i32::try_from(p).ok()
    }
}

/// MurmurHash2 (32-bit) exactly as Kafka's Java client computes it (`Utils.murmur2`):
/// seed 0x9747b28c, little-endian 4-byte blocks, the tail folded in last.
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    // Java uses the length as an int; keys never reach 2^31 bytes (bounded by batch size).
    let mut h = SEED ^ (data.len() as u32);
    let mut blocks = data.chunks_exact(4);
    for b in &mut blocks {
        let mut k = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = blocks.remainder();
    if tail.len() >= 3 {
        h ^= u32::from(tail[2]) << 16;
    }
    if tail.len() >= 2 {
        h ^= u32::from(tail[1]) << 8;
    }
    if let Some(first) = tail.first() {
        h ^= u32::from(*first);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hashes the Java client gives (published with Kafka's and Akka's murmur2 tests).
    #[test]
    fn murmur2_matches_the_java_client() {
        for (key, want) in [
            ("1", -1_993_445_489),
            ("12", 126_087_238),
            ("123", -267_702_483),
            ("1234", -1_614_185_708),
            ("12345", -1_188_365_604),
            ("21", -973_932_308),
            ("foobar", -790_332_482),
            ("a-little-bit-long-string", -985_981_536),
            ("a-little-bit-longer-string", -1_486_304_829),
            (
                "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
                -58_897_971,
            ),
            ("abc", 479_470_107),
        ] {
            assert_eq!(murmur2(key.as_bytes()), want, "murmur2({key:?})");
        }
    }

    #[test]
    fn murmur2_partition_clears_the_sign_bit_instead_of_taking_abs() {
        // murmur2("1") is negative: -1993445489 & 0x7fffffff = 154038159.
        assert_eq!(Partitioner::Murmur2.partition(b"1", 1000), Some(159));
        assert_eq!(
            Partitioner::Murmur2.partition(b"1", i32::MAX),
            Some(154_038_159)
        );
        // "12": positive hash, plain remainder.
        assert_eq!(
            Partitioner::Murmur2.partition(b"12", 7),
            Some(126_087_238 % 7)
        );
        assert_eq!(Partitioner::Murmur2.partition(b"12", 0), None);
        assert_eq!(Partitioner::Murmur2.partition(b"12", -3), None);
    }

    #[test]
    fn partitioner_names_parse_as_clients_spell_them() {
        for (name, want) in [
            ("murmur2", Partitioner::Murmur2),
            ("Murmur2_Random", Partitioner::Murmur2),
            ("consistent_random", Partitioner::Crc32),
            ("CRC32", Partitioner::Crc32),
        ] {
            assert_eq!(name.parse::<Partitioner>(), Ok(want), "{name}");
        }
        let e = "random".parse::<Partitioner>().unwrap_err();
        assert!(e.contains("murmur2") && e.contains("crc32"), "{e}");
    }

    #[test]
    fn crc32_is_the_ieee_checksum_modulo_partitions() {
        // The standard CRC-32 check value.
        assert_eq!(crc32fast::hash(b"123456789"), 0xCBF4_3926);
        assert_eq!(
            Partitioner::Crc32.partition(b"123456789", 10),
            Some((0xCBF4_3926u32 % 10) as i32)
        );
        assert_eq!(Partitioner::Crc32.partition(b"", 3), Some(0));
    }
}
