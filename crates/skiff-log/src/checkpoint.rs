//! Kafka's offset checkpoint text files (`recovery-point-offset-checkpoint`,
//! `log-start-offset-checkpoint`): a version line `0`, a count line, then one
//! `topic partition offset` line per partition. Written atomically via `fsutil`.
//!
//! Pure encode/decode plus file helpers; no shared state.

use crate::error::{LogError, Result};
use crate::fsutil::write_atomically;
use std::collections::HashMap;
use std::path::Path;

/// Checkpointed offsets keyed by (topic, partition).
pub(crate) type Offsets = HashMap<(String, i32), i64>;

const VERSION: &str = "0";

pub(crate) fn encode(entries: &[(String, i32, i64)]) -> String {
    let mut s = format!("{VERSION}\n{}\n", entries.len());
    for (topic, partition, offset) in entries {
        s.push_str(&format!("{topic} {partition} {offset}\n"));
    }
    s
}

pub(crate) fn decode(file: &Path, text: &str) -> Result<Offsets> {
    let bad = |message: String| LogError::MalformedFile {
        file: file.display().to_string(),
        message,
    };
    let mut lines = text.lines();
    match lines.next() {
        Some(v) if v.trim() == VERSION => {}
        other => return Err(bad(format!("unsupported version line {other:?}"))),
    }
    let count: usize = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| bad("missing or invalid entry count".to_string()))?;
    let mut out = Offsets::with_capacity(count);
    for (i, line) in lines.filter(|l| !l.trim().is_empty()).enumerate() {
        let mut parts = line.split_whitespace();
        let (Some(topic), Some(p), Some(o), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad(format!(
                "line {} is not `topic partition offset`",
                i + 3
            )));
        };
        let (Ok(p), Ok(o)) = (p.parse::<i32>(), o.parse::<i64>()) else {
            return Err(bad(format!(
                "line {} has a non-numeric partition or offset",
                i + 3
            )));
        };
        out.insert((topic.to_string(), p), o);
    }
    if out.len() != count {
        return Err(bad(format!(
            "declares {count} entries but holds {}",
            out.len()
        )));
    }
    Ok(out)
}

/// Reads a checkpoint file; a missing file is an empty checkpoint.
pub(crate) fn read(path: &Path) -> Result<Offsets> {
    match std::fs::read_to_string(path) {
        Ok(text) => decode(path, &text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Offsets::new()),
        Err(e) => Err(LogError::io("read checkpoint", path, e)),
    }
}

pub(crate) fn write(path: &Path, entries: &[(String, i32, i64)]) -> Result<()> {
    write_atomically(path, encode(entries).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_rejects_garbage() {
        let entries = vec![("my-topic".to_string(), 3, 42), ("t".to_string(), 0, 0)];
        let text = encode(&entries);
        assert!(text.starts_with("0\n2\nmy-topic 3 42\n"));
        let m = decode(Path::new("x"), &text).unwrap();
        assert_eq!(m.get(&("my-topic".to_string(), 3)), Some(&42));
        assert!(decode(Path::new("x"), "1\n0\n").is_err());
        assert!(decode(Path::new("x"), "0\n2\nt 0 1\n").is_err());
        assert!(decode(Path::new("x"), "0\n1\nt zero 1\n").is_err());
    }
}
