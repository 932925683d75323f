//! Apache Kafka's log cleaner seen from its own report: the multi-line INFO message that
//! `kafka-log-cleaner-thread-N` logs after every cleaning (in `log-cleaner.log` with Kafka's
//! stock log4j config; in `kafka.out` with the repo's `tests/kafka` config, which sends every
//! logger to the console):
//!
//! ```text
//!     Log cleaner thread 0 cleaned log t-0 (dirty section = [0, 900000])
//!     1,024.0 MB of log processed in 12.3 seconds (83.2 MB/sec).
//!     Indexed ... / Buffer utilization: 19.1% / Cleaned ... / Start size: ... MB (n messages)
//!     End size: 102.4 MB (100,000 messages)
//!     90.0% size reduction (90.0% fewer messages)
//! ```
//!
//! Owns: [`KafkaReports`], a line-fed parser that yields one [`KafkaPass`] per complete
//! report. Numbers use Java's `%,.1f` (thousands separators); MB are 2^20 bytes.
//!
//! Thread-safety: plain values, used by the bench's main thread. On-disk: none (the caller
//! reads the log file, see `cleanlog::LogTail`).

use crate::cleanlog::PassSummary;

const MIB: f64 = 1024.0 * 1024.0;

/// One cleaning, as Kafka's cleaner reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct KafkaPass {
    pub summary: PassSummary,
    /// "Buffer utilization": share of the dedupe buffer (offset map) the pass filled, 0..=1.
    pub buffer_utilization: f64,
    pub start_messages: u64,
    pub end_messages: u64,
}

/// Collects the lines of one report at a time; feed every line of the log in order.
#[derive(Debug, Default)]
pub struct KafkaReports {
    cur: Option<Partial>,
}

#[derive(Debug, Default)]
struct Partial {
    name: String,
    from: i64,
    to: i64,
    read_mb: Option<f64>,
    secs: Option<f64>,
    rate: Option<f64>,
    buffer: Option<f64>,
    start_msgs: Option<u64>,
    end_mb: Option<f64>,
    end_msgs: Option<u64>,
}

impl KafkaReports {
    /// Feeds one log line; returns the pass when this line completes a report.
    pub fn feed(&mut self, line: &str) -> Option<KafkaPass> {
        let l = line.trim();
        if let Some(rest) = after(l, "cleaned log ") {
            // "NAME (dirty section = [A, B])"
            self.cur = parse_header(rest);
            return None;
        }
        let cur = self.cur.as_mut()?;
        if let Some(rest) = l.split_once(" MB of log processed in ") {
            cur.read_mb = num(rest.0);
            let (secs, tail) = rest.1.split_once(" seconds (")?;
            cur.secs = num(secs);
            cur.rate = tail.split_once(" MB/sec").and_then(|(r, _)| num(r));
        } else if let Some(rest) = after(l, "Buffer utilization: ") {
            cur.buffer = num(rest.trim_end_matches('%'));
        } else if let Some(rest) = after(l, "Start size: ") {
            cur.start_msgs = messages(rest);
        } else if let Some(rest) = after(l, "End size: ") {
            cur.end_mb = rest.split_once(" MB").and_then(|(v, _)| num(v));
            cur.end_msgs = messages(rest);
        } else if l.contains("% size reduction") {
            let p = self.cur.take()?;
            return p.finish();
        }
        None
    }
}

impl Partial {
    fn finish(self) -> Option<KafkaPass> {
        let (topic, partition) = self.name.rsplit_once('-')?;
        let read_mb = self.read_mb?;
        // The printed rate keeps more precision than the seconds (%.1f): derive the time from
        // it when it is non-zero.
        let secs = match self.rate {
            Some(r) if r > 0.0 => read_mb / r,
            _ => self.secs?,
        };
        Some(KafkaPass {
            summary: PassSummary {
                topic: topic.to_string(),
                partition: partition.parse().ok()?,
                secs,
                read_bytes: (read_mb * MIB).round() as u64,
                written_bytes: (self.end_mb? * MIB).round() as u64,
                first_dirty: self.from,
                end_offset: self.to,
                partial: false,
                // Kafka has no archive topic.
                archived_bytes: 0,
                skipped_bytes: 0,
                logged_at: None,
            },
            buffer_utilization: self.buffer? / 100.0,
            start_messages: self.start_msgs?,
            end_messages: self.end_msgs?,
        })
    }
}

fn after<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    s.find(prefix).map(|i| &s[i + prefix.len()..])
}

fn parse_header(rest: &str) -> Option<Partial> {
    let (name, sect) = rest.split_once(" (dirty section = [")?;
    let (from, to) = sect.split_once(']')?.0.split_once(',')?;
    Some(Partial {
        name: name.trim().to_string(),
        from: from.trim().parse().ok()?,
        to: to.trim().parse().ok()?,
        ..Partial::default()
    })
}

/// A `%,.1f` / `%,d` number: thousands separators dropped.
fn num(s: &str) -> Option<f64> {
    let v: f64 = s.trim().replace(',', "").parse().ok()?;
    v.is_finite().then_some(v)
}

/// "12.3 MB (1,000,000 messages)" → 1000000.
fn messages(s: &str) -> Option<u64> {
    let inner = s.split_once('(')?.1.split_once(" messages")?.0;
    inner.replace(',', "").trim().parse().ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const REPORT: &str = "[2026-12-02 17:40:01,123] INFO [kafka-log-cleaner-thread-0]: \n\
        \tLog cleaner thread 0 cleaned log bench-compact-0 (dirty section = [0, 934123])\n\
        \t1,024.5 MB of log processed in 12.3 seconds (83.25 MB/sec).\n\
        \tIndexed 1,024.5 MB in 6.0 seconds (170.8 Mb/sec, 48.8% of total time)\n\
        \tBuffer utilization: 19.1%\n\
        \tCleaned 1,024.5 MB in 6.3 seconds (162.6 Mb/sec, 51.2% of total time)\n\
        \tStart size: 1,024.5 MB (1,000,000 messages)\n\
        \tEnd size: 102.4 MB (100,000 messages)\n\
        \t90.0% size reduction (90.0% fewer messages)\n\
        \x20(kafka.log.LogCleaner)\n";

    fn feed_all(text: &str) -> Vec<KafkaPass> {
        let mut p = KafkaReports::default();
        text.lines().filter_map(|l| p.feed(l)).collect()
    }

    #[test]
    fn a_complete_report_is_parsed_with_thousands_separators() {
        let passes = feed_all(REPORT);
        assert_eq!(passes.len(), 1);
        let k = &passes[0];
        let s = &k.summary;
        assert_eq!((s.topic.as_str(), s.partition), ("bench-compact", 0));
        assert_eq!((s.first_dirty, s.end_offset), (0, 934_123));
        assert_eq!(s.read_bytes, (1024.5 * MIB) as u64);
        assert_eq!(s.written_bytes, (102.4 * MIB).round() as u64);
        assert!((s.secs - 1024.5 / 83.25).abs() < 1e-9, "{}", s.secs);
        assert!((k.buffer_utilization - 0.191).abs() < 1e-9);
        assert_eq!((k.start_messages, k.end_messages), (1_000_000, 100_000));
    }

    #[test]
    fn other_lines_and_truncated_reports_yield_nothing() {
        assert!(
            feed_all("[x] INFO Cleaner 0: Cleaning log t-0 (cleaning prior to ...)").is_empty()
        );
        let cut: String = REPORT
            .lines()
            .filter(|l| !l.contains("End size"))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(feed_all(&cut).is_empty());
        // Two reports in a row, the second for another partition.
        let two = format!("{REPORT}{}", REPORT.replace("bench-compact-0", "other-3"));
        let passes = feed_all(&two);
        assert_eq!(passes.len(), 2);
        assert_eq!(
            (
                passes[1].summary.topic.as_str(),
                passes[1].summary.partition
            ),
            ("other", 3)
        );
    }
}
