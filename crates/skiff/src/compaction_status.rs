//! `skiff compaction-status`: reads a running broker's `/metrics` and prints one row per
//! compacted partition — dirty ratio, cleanable bytes, last clean, its duration, bytes read
//! and written, records and tombstones removed, and the state with its reason.
//!
//! Pure table building over parsed samples ([`crate::exposition`]); the only I/O is the scrape
//! in [`run`] and printing.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Result};

use crate::exposition::{self, Sample};
use crate::scrape;

/// How long connecting and each read may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// A family every Skiff `/metrics` has, even with no compacted topic.
const MARKER: &str = "skiff_log_cleaner_backlog_partitions";

/// What the metrics say about one compacted partition.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    pub topic: String,
    pub partition: i32,
    pub dirty_ratio: f64,
    pub min_cleanable_ratio: f64,
    pub cleanable_bytes: f64,
    pub last_start_s: Option<f64>,
    pub last_duration_s: Option<f64>,
    pub read_bytes: f64,
    /// Bytes of clean segments left unread thanks to their key summaries.
    pub skipped_bytes: f64,
    pub written_bytes: f64,
    pub records_removed: f64,
    pub tombstones_removed: f64,
    pub in_progress: bool,
    pub uncleanable: Option<String>,
    pub limit: Option<String>,
}

pub fn run(addr: &str, topic: Option<&str>) -> Result<()> {
    let text = scrape::fetch_metrics(addr, TIMEOUT)?;
    let now_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    print!("{}", report(&text, topic, now_s)?);
    Ok(())
}

/// The whole printed report for one scrape.
pub fn report(text: &str, topic: Option<&str>, now_s: f64) -> Result<String> {
    let samples = exposition::parse(text)?;
    if !text.contains(MARKER) {
        bail!("the metrics have no {MARKER}: this is not a Skiff broker's /metrics");
    }
    let backlog = samples
        .iter()
        .find(|s| s.name == MARKER)
        .map_or(0.0, |s| s.value);
    let rows: Vec<Row> = rows(&samples)
        .into_iter()
        .filter(|r| topic.is_none_or(|t| r.topic == t))
        .collect();
    let mut out = String::new();
    if rows.is_empty() {
        out.push_str("no compacted partitions");
        if let Some(t) = topic {
            out.push_str(&format!(" for topic {t}"));
        }
        out.push('\n');
    } else {
        out.push_str(&table(&rows, now_s));
    }
    out.push_str(&format!(
        "cleaner backlog: {backlog} partition(s) waiting to be cleaned\n"
    ));
    Ok(out)
}

/// Groups the `skiff_compaction_*` samples by topic and partition.
pub fn rows(samples: &[Sample]) -> Vec<Row> {
    let mut by: BTreeMap<(String, i32), Row> = BTreeMap::new();
    for s in samples {
        let Some(field) = s.name.strip_prefix("skiff_compaction_") else {
            continue;
        };
        let (Some(topic), Some(partition)) = (
            s.label("topic"),
            s.label("partition").and_then(|p| p.parse::<i32>().ok()),
        ) else {
            continue;
        };
        let r = by
            .entry((topic.to_string(), partition))
            .or_insert_with(|| Row {
                topic: topic.to_string(),
                partition,
                ..Row::default()
            });
        let v = s.value;
        match field {
            "dirty_ratio" => r.dirty_ratio = v,
            "min_cleanable_dirty_ratio" => r.min_cleanable_ratio = v,
            "cleanable_bytes" => r.cleanable_bytes = v,
            "last_clean_start_timestamp_seconds" => r.last_start_s = Some(v),
            "last_clean_duration_seconds" => r.last_duration_s = Some(v),
            "read_bytes_total" => r.read_bytes = v,
            "skipped_bytes_total" => r.skipped_bytes = v,
            "written_bytes_total" => r.written_bytes = v,
            "records_removed_total" => r.records_removed = v,
            "tombstones_removed_total" => r.tombstones_removed = v,
            "in_progress" => r.in_progress = v > 0.0,
            "uncleanable" if v > 0.0 => r.uncleanable = s.label("reason").map(str::to_string),
            "first_uncleanable_offset" => r.limit = s.label("limit").map(str::to_string),
            _ => {}
        }
    }
    by.into_values().collect()
}

/// The state column: what the cleaner does with this log now, and what limits it.
pub fn state(r: &Row) -> String {
    let state = if r.in_progress {
        "cleaning".to_string()
    } else if r.uncleanable.as_deref() == Some("marked_uncleanable") {
        // A pass panicked (a bug): skipped until the topic is deleted or the broker restarts.
        "FAILED: marked uncleanable until restart (see the broker log)".to_string()
    } else if let Some(reason) = &r.uncleanable {
        format!("blocked: {}", reason.replace('_', " "))
    } else if r.dirty_ratio > r.min_cleanable_ratio {
        "waiting to clean".to_string()
    } else {
        "clean enough".to_string()
    };
    match r.limit.as_deref() {
        Some(limit) if limit != "none" => format!("{state} (up to {})", limit.replace('_', " ")),
        _ => state,
    }
}

pub fn table(rows: &[Row], now_s: f64) -> String {
    let header = [
        "TOPIC",
        "PARTITION",
        "DIRTY",
        "CLEANABLE",
        "LAST CLEAN",
        "DURATION",
        "READ",
        "WRITTEN",
        "REMOVED",
        "STATE",
    ];
    let body: Vec<[String; 10]> = rows
        .iter()
        .map(|r| {
            [
                r.topic.clone(),
                r.partition.to_string(),
                format!("{:.2}/{:.2}", r.dirty_ratio, r.min_cleanable_ratio),
                bytes(r.cleanable_bytes),
                r.last_start_s
                    .map_or("never".to_string(), |t| format!("{} ago", age(now_s - t))),
                r.last_duration_s
                    .map_or("-".to_string(), |d| format!("{:.3}s", d)),
                if r.skipped_bytes > 0.0 {
                    format!(
                        "{} (+{} unread)",
                        bytes(r.read_bytes),
                        bytes(r.skipped_bytes)
                    )
                } else {
                    bytes(r.read_bytes)
                },
                bytes(r.written_bytes),
                format!(
                    "{} rec, {} tomb",
                    r.records_removed as u64, r.tombstones_removed as u64
                ),
                state(r),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &body {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[&str]| {
        let mut l = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                l.push_str(cell);
            } else {
                l.push_str(&format!("{cell:<w$}  "));
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&header);
    for row in &body {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        line(&cells);
    }
    out
}

fn bytes(v: f64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if v < 1024.0 {
        return format!("{} B", v.max(0.0) as u64);
    }
    let mut v = v / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

fn age(seconds: f64) -> String {
    let s = seconds.max(0.0) as u64;
    match s {
        0..=119 => format!("{s}s"),
        120..=7199 => format!("{}m", s / 60),
        _ => format!("{}h", s / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRAPE: &str = "\
# TYPE skiff_compaction_dirty_ratio gauge
skiff_compaction_dirty_ratio{topic=\"users\",partition=\"0\"} 0
skiff_compaction_dirty_ratio{topic=\"users\",partition=\"1\"} 0.75
skiff_compaction_min_cleanable_dirty_ratio{topic=\"users\",partition=\"0\"} 0.5
skiff_compaction_min_cleanable_dirty_ratio{topic=\"users\",partition=\"1\"} 0.5
skiff_compaction_cleanable_bytes{topic=\"users\",partition=\"1\"} 3145728
skiff_compaction_last_clean_start_timestamp_seconds{topic=\"users\",partition=\"0\"} 1000
skiff_compaction_last_clean_duration_seconds{topic=\"users\",partition=\"0\"} 0.125
skiff_compaction_read_bytes_total{topic=\"users\",partition=\"0\"} 2048
skiff_compaction_written_bytes_total{topic=\"users\",partition=\"0\"} 512
skiff_compaction_records_removed_total{topic=\"users\",partition=\"0\"} 30
skiff_compaction_tombstones_removed_total{topic=\"users\",partition=\"0\"} 4
skiff_compaction_in_progress{topic=\"users\",partition=\"0\"} 0
skiff_compaction_first_uncleanable_offset{topic=\"users\",partition=\"0\",limit=\"active_segment\"} 40
skiff_compaction_uncleanable{topic=\"users\",partition=\"1\",reason=\"cleaning_failed\"} 1
skiff_compaction_dirty_ratio{topic=\"users\",partition=\"2\"} 0.9
skiff_compaction_min_cleanable_dirty_ratio{topic=\"users\",partition=\"2\"} 0.5
skiff_compaction_uncleanable{topic=\"users\",partition=\"2\",reason=\"marked_uncleanable\"} 1
skiff_partition_produced_records_total{topic=\"users\",partition=\"0\"} 40
skiff_log_cleaner_backlog_partitions 1
";

    #[test]
    fn report_has_one_row_per_partition() {
        let out = report(SCRAPE, None, 1_065.0).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 5, "{out}");
        assert!(lines[0].starts_with("TOPIC  PARTITION  DIRTY"), "{out}");
        let p0 = lines[1];
        for cell in [
            "users",
            "0.00/0.50",
            "65s ago",
            "0.125s",
            "2.0 KiB",
            "512 B",
            "30 rec, 4 tomb",
            "clean enough (up to active segment)",
        ] {
            assert!(p0.contains(cell), "{cell:?} not in {p0:?}");
        }
        let p1 = lines[2];
        for cell in ["0.75/0.50", "3.0 MiB", "never", "blocked: cleaning failed"] {
            assert!(p1.contains(cell), "{cell:?} not in {p1:?}");
        }
        let p2 = lines[3];
        assert!(
            p2.contains("FAILED: marked uncleanable until restart"),
            "{p2:?}"
        );
        assert_eq!(
            lines[4],
            "cleaner backlog: 1 partition(s) waiting to be cleaned"
        );
    }

    #[test]
    fn topic_filter_and_empty() {
        let out = report(SCRAPE, Some("other"), 0.0).unwrap();
        assert!(
            out.starts_with("no compacted partitions for topic other\n"),
            "{out}"
        );
        let e = report("x 1\n", None, 0.0).unwrap_err().to_string();
        assert!(e.contains("not a Skiff broker"), "{e}");
    }

    #[test]
    fn units() {
        assert_eq!(bytes(0.0), "0 B");
        assert_eq!(bytes(1536.0), "1.5 KiB");
        assert_eq!(age(7200.0), "2h");
    }
}
