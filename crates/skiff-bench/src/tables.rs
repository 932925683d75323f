//! The measurements behind the "compacted topics as tables" rows (issue 16): reading a
//! compacted topic as a table through Skiff's HTTP snapshot, rebuilding the same table the
//! way a Kafka user has to (an rdkafka consumer from offset 0 to the high watermark filling
//! a `HashMap`), and point lookups through Skiff's key index over HTTP.
//!
//! Owns: [`read_snapshot`], [`rebuild_with_consumer`], [`lookups`], [`misses`], [`wait_index_ready`],
//! [`index_memory_bytes`] and [`log_bytes`]. Each one checks what it read (line counts, the
//! final `end_offsets` line, distinct keys, the offset a lookup answers), so a fast wrong
//! answer cannot pass for a result. The rows and their labels are in `tablerows`.
//!
//! Thread-safety: blocking calls on the caller's thread. On-disk: only reads the broker's
//! partition directory (for the log size).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rdkafka::consumer::Consumer;
use rdkafka::message::Message;

use crate::http;
use crate::keyed::{partition0_reader, LastWrite, Workload};

/// What one full read of the table found and how long it took.
#[derive(Debug, Clone, Copy)]
pub struct TableRead {
    /// Live keys in the table (snapshot lines before `end_offsets`, or the map's size).
    pub keys: u64,
    /// Response body bytes (snapshot) or key + value bytes consumed (consumer).
    pub bytes: u64,
    pub secs: f64,
}

/// Sizes of the `.log` files of partition 0 of `topic` under the broker's log dir: the
/// bytes a full read of the log has to get through, the same yardstick for both readers.
pub fn log_bytes(data_dir: &Path, topic: &str) -> Result<u64> {
    let dir = data_dir.join(format!("{topic}-0"));
    let mut total = 0;
    for e in std::fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))? {
        let e = e?;
        if e.file_name().to_string_lossy().ends_with(".log") {
            total += e.metadata()?.len();
        }
    }
    Ok(total)
}

/// `GET /v1/topics/{topic}/snapshot`, reading the whole body: counts the lines, checks that
/// the last one is `{"end_offsets":{"0":end,...}}` and that the lines before it are exactly
/// `keys` records. Time = connect to the last byte.
pub fn read_snapshot(
    addr: SocketAddr,
    topic: &str,
    keys: u64,
    end: i64,
    timeout: Duration,
) -> Result<TableRead> {
    let start = Instant::now();
    let (mut lines, mut bytes) = (0u64, 0u64);
    // The bytes after the last newline, and the last complete line.
    let (mut partial, mut last) = (Vec::new(), Vec::new());
    let path = format!("/v1/topics/{topic}/snapshot");
    let status = http::get_streaming(addr, &path, start + timeout, |b| {
        bytes += b.len() as u64;
        let mut from = 0;
        for (i, _) in b.iter().enumerate().filter(|(_, &c)| c == b'\n') {
            lines += 1;
            last.clear();
            last.extend_from_slice(&partial);
            last.extend_from_slice(&b[from..i]);
            partial.clear();
            from = i + 1;
        }
        partial.extend_from_slice(&b[from..]);
        // Only an error body can be large without newlines; do not keep it all.
        if partial.len() > 1 << 20 {
            bail!("a snapshot line over 1 MiB");
        }
        Ok(())
    })?;
    let secs = start.elapsed().as_secs_f64();
    if status != 200 {
        bail!(
            "snapshot of {topic}: HTTP {status}: {}",
            String::from_utf8_lossy(&last)
        );
    }
    if !partial.is_empty() {
        bail!("snapshot of {topic}: the body does not end with a newline");
    }
    let want = format!("{{\"end_offsets\":{{\"0\":{end}}}}}");
    if last != want.as_bytes() {
        bail!(
            "snapshot of {topic}: last line {:?}, expected {want} (incomplete snapshot?)",
            String::from_utf8_lossy(&last[..last.len().min(200)])
        );
    }
    let found = lines - 1;
    if found != keys {
        bail!("snapshot of {topic}: {found} key lines, expected {keys} live keys");
    }
    Ok(TableRead {
        keys: found,
        bytes,
        secs,
    })
}

/// Rebuilds the table with an rdkafka consumer: partition 0 assigned at offset 0, every
/// record put in a `HashMap` key → value (a record without a value removes its key), until
/// the high watermark read before the clock started. Time = `assign()` to the last record.
/// Checks that the map ends with `keys` entries.
pub fn rebuild_with_consumer(
    bootstrap: &str,
    topic: &str,
    keys: u64,
    timeout: Duration,
) -> Result<TableRead> {
    let (consumer, high, tpl) = partition0_reader(bootstrap, "skiff-bench-table", topic)?;
    let mut table: HashMap<Vec<u8>, Vec<u8>> = HashMap::with_capacity(keys as usize);
    let start = Instant::now();
    let deadline = start + timeout;
    consumer.assign(&tpl).context("assign()")?;
    let (mut next, mut bytes, mut errors) = (0i64, 0u64, 0u32);
    let mut last = start;
    while next < high {
        if Instant::now() > deadline {
            bail!("table consumer: at offset {next} of {high} at the deadline");
        }
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                next = m.offset() + 1;
                let Some(k) = m.key() else { continue };
                bytes += (k.len() + m.payload_len()) as u64;
                match m.payload() {
                    Some(v) => {
                        table.insert(k.to_vec(), v.to_vec());
                    }
                    None => {
                        table.remove(k);
                    }
                }
                last = Instant::now();
            }
            Some(Err(e)) => {
                errors += 1;
                if errors <= 3 {
                    eprintln!("  table consumer error (continuing): {e}");
                }
            }
            None => {}
        }
    }
    if table.len() as u64 != keys {
        bail!(
            "table consumer: {} keys in the map, expected {keys}",
            table.len()
        );
    }
    Ok(TableRead {
        keys: table.len() as u64,
        bytes,
        secs: last.duration_since(start).as_secs_f64(),
    })
}

/// Polls a lookup of key 0 until the key index answers (not `503 loading`); returns how long
/// that took.
pub fn wait_index_ready(addr: SocketAddr, topic: &str, within: Duration) -> Result<Duration> {
    let start = Instant::now();
    let path = format!("/v1/topics/{topic}/keys/{}?partition=0", Workload::key(0));
    loop {
        let (status, body) = http::get(addr, &path, start + within)?;
        match status {
            200 => return Ok(start.elapsed()),
            503 if body.windows(7).any(|w| w == b"loading") => {}
            _ => bail!(
                "lookup while waiting for the index: HTTP {status}: {}",
                String::from_utf8_lossy(&body)
            ),
        }
        if start.elapsed() > within {
            bail!("the key index of {topic} was still loading after {within:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `skiff_key_index_memory_bytes` from `GET /metrics`: what the broker charges the indexes.
pub fn index_memory_bytes(addr: SocketAddr) -> Result<u64> {
    let (status, body) = http::get(addr, "/metrics", Instant::now() + Duration::from_secs(30))?;
    if status != 200 {
        bail!("GET /metrics: HTTP {status}");
    }
    let text = String::from_utf8_lossy(&body);
    text.lines()
        .find_map(|l| {
            l.strip_prefix("skiff_key_index_memory_bytes ")
                .and_then(|v| v.trim().parse::<f64>().ok())
        })
        .map(|v| v as u64)
        .context("no skiff_key_index_memory_bytes sample in /metrics")
}

/// Per-lookup latencies in microseconds, in the order they were made.
pub struct Lookups {
    pub micros: Vec<f64>,
    pub secs: f64,
}

/// `n` sequential lookups of keys spread over the whole key space (a fixed xorshift
/// sequence, so every run asks the same keys), each on a new connection (the API serves one
/// request per connection). Every answer must be 200 with the offset of the key's last
/// acknowledged write.
pub fn lookups(
    addr: SocketAddr,
    topic: &str,
    latest: &[LastWrite],
    n: u64,
    timeout: Duration,
) -> Result<Lookups> {
    let start = Instant::now();
    let deadline = start + timeout;
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut micros = Vec::with_capacity(n as usize);
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = x % latest.len() as u64;
        let path = format!("/v1/topics/{topic}/keys/{}?partition=0", Workload::key(k));
        let t = Instant::now();
        let (status, body) = http::get(addr, &path, deadline)?;
        micros.push(t.elapsed().as_secs_f64() * 1e6);
        let want = format!("\"offset\":{},", latest[k as usize].offset);
        if status != 200 || !body.windows(want.len()).any(|w| w == want.as_bytes()) {
            bail!(
                "lookup of {}: HTTP {status}, expected offset {}: {}",
                Workload::key(k),
                latest[k as usize].offset,
                String::from_utf8_lossy(&body[..body.len().min(300)])
            );
        }
    }
    Ok(Lookups {
        micros,
        secs: start.elapsed().as_secs_f64(),
    })
}

/// `n` sequential lookups of keys that were never written (`key-` numbers past the
/// workload's): the index answers them from memory without reading the log, so against
/// [`lookups`] they separate the HTTP round trip from the record read. Each must be `404`.
pub fn misses(
    addr: SocketAddr,
    topic: &str,
    keys: u64,
    n: u64,
    timeout: Duration,
) -> Result<Lookups> {
    let start = Instant::now();
    let mut micros = Vec::with_capacity(n as usize);
    for i in 0..n {
        let key = Workload::key(keys + i);
        let path = format!("/v1/topics/{topic}/keys/{key}?partition=0");
        let t = Instant::now();
        let (status, body) = http::get(addr, &path, start + timeout)?;
        micros.push(t.elapsed().as_secs_f64() * 1e6);
        if status != 404 || !body.windows(13).any(|w| w == b"key_not_found") {
            bail!(
                "lookup of absent {key}: HTTP {status}, expected 404 key_not_found: {}",
                String::from_utf8_lossy(&body[..body.len().min(300)])
            );
        }
    }
    Ok(Lookups {
        micros,
        secs: start.elapsed().as_secs_f64(),
    })
}

/// The `q`-quantile (0..=1) of `v` by the nearest-rank rule; 0 for an empty slice.
pub fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = ((q * s.len() as f64).ceil() as usize).clamp(1, s.len());
    s[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_use_the_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), 50.0);
        assert_eq!(quantile(&v, 0.99), 99.0);
        assert_eq!(quantile(&v, 1.0), 100.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
    }
}
