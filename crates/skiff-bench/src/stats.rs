//! Summary statistics over repeated runs (median, min, max) and the printed result table.
//!
//! Owns: [`Measurement`] (what one throughput phase of one run measured) and [`Table`] (all
//! values of all runs, grouped by phase and then metric in first-seen order; throughput
//! phases record a `Measurement`, other phases record named values directly). Pure; no I/O apart from
//! returning the rendered text. Not shared between threads.

use std::fmt::Write as _;

/// What one phase (e.g. "produce acks=1") of one run measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    pub records: u64,
    /// Payload (value) bytes moved; keys and protocol overhead are not counted.
    pub bytes: u64,
    /// Wall time of the phase as defined by the phase (first send to last delivery report,
    /// or assign to last record received).
    pub secs: f64,
    /// Broker user + system CPU seconds spent during the phase.
    pub broker_cpu_secs: f64,
    /// Broker peak RSS (VmHWM) at the end of the phase: the peak since the broker started.
    pub broker_peak_rss_bytes: u64,
}

impl Measurement {
    /// Megabytes (10^6 bytes) of payload per second.
    pub fn mb_per_sec(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.secs.max(1e-9)
    }

    pub fn records_per_sec(&self) -> f64 {
        self.records as f64 / self.secs.max(1e-9)
    }

    /// Broker CPU seconds per GB (10^9 bytes) of payload.
    pub fn cpu_secs_per_gb(&self) -> f64 {
        if self.bytes == 0 {
            return 0.0;
        }
        self.broker_cpu_secs / (self.bytes as f64 / 1e9)
    }
}

/// Median, minimum and maximum of a non-empty sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

/// Summarises `values`; `None` for an empty slice. NaNs sort last and never panic. The median
/// of an even count is the mean of the two middle values.
pub fn summarize(values: &[f64]) -> Option<Summary> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some(Summary {
        median,
        min: v[0],
        max: v[n - 1],
    })
}

/// One phase's metrics: label and the values of every run, in first-recorded order.
type Metrics = Vec<(String, Vec<f64>)>;

/// All values, grouped by phase name and metric in the order they were first recorded.
#[derive(Debug, Default)]
pub struct Table {
    phases: Vec<(String, Metrics)>,
}

/// One row of the table: its label and how to derive the value from a measurement.
type Metric = (&'static str, fn(&Measurement) -> f64);

const METRICS: [Metric; 6] = [
    ("MB/s", Measurement::mb_per_sec),
    ("records/s", Measurement::records_per_sec),
    ("wall s", |m| m.secs),
    ("broker CPU s", |m| m.broker_cpu_secs),
    ("broker CPU s/GB", Measurement::cpu_secs_per_gb),
    ("broker peak RSS MiB", |m| {
        m.broker_peak_rss_bytes as f64 / (1024.0 * 1024.0)
    }),
];

impl Table {
    /// Records every derived metric of one throughput measurement.
    pub fn record(&mut self, phase: &str, m: Measurement) {
        for (label, get) in METRICS {
            self.record_value(phase, label, get(&m));
        }
    }

    /// Records one run's value of `metric` in `phase`.
    pub fn record_value(&mut self, phase: &str, metric: &str, value: f64) {
        let idx = match self.phases.iter().position(|(p, _)| p == phase) {
            Some(i) => i,
            None => {
                self.phases.push((phase.to_string(), Vec::new()));
                self.phases.len() - 1
            }
        };
        let metrics = &mut self.phases[idx].1;
        match metrics.iter_mut().find(|(m, _)| m == metric) {
            Some((_, vs)) => vs.push(value),
            None => metrics.push((metric.to_string(), vec![value])),
        }
    }

    /// The table as fixed-width text: one block per phase, one line per metric.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<28} {:<26} {:>12} {:>12} {:>12}  {:>4}",
            "phase", "metric", "median", "min", "max", "runs"
        );
        let _ = writeln!(out, "{}", "-".repeat(28 + 1 + 26 + 3 * 13 + 6));
        for (phase, metrics) in &self.phases {
            for (i, (label, values)) in metrics.iter().enumerate() {
                let Some(s) = summarize(values) else {
                    continue;
                };
                let name = if i == 0 { phase.as_str() } else { "" };
                let _ = writeln!(
                    out,
                    "{:<28} {:<26} {:>12} {:>12} {:>12}  {:>4}",
                    name,
                    label,
                    fmt_num(s.median),
                    fmt_num(s.min),
                    fmt_num(s.max),
                    values.len()
                );
            }
        }
        out
    }
}

/// Three significant-ish digits without scientific notation: 1234567 → "1234567",
/// 12.345 → "12.35", 0.01234 → "0.0123".
fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_samples() {
        let s = summarize(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        let s = summarize(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.5, 1.0, 4.0));
        assert_eq!(summarize(&[]), None);
        let s = summarize(&[7.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (7.0, 7.0, 7.0));
    }

    #[test]
    fn nan_does_not_panic() {
        let s = summarize(&[1.0, f64::NAN, 2.0]).unwrap();
        assert_eq!(s.min, 1.0);
    }

    #[test]
    fn rates_are_derived_from_bytes_records_and_time() {
        let m = Measurement {
            records: 1000,
            bytes: 2_000_000_000,
            secs: 2.0,
            broker_cpu_secs: 3.0,
            broker_peak_rss_bytes: 10 * 1024 * 1024,
        };
        assert_eq!(m.mb_per_sec(), 1000.0);
        assert_eq!(m.records_per_sec(), 500.0);
        assert_eq!(m.cpu_secs_per_gb(), 1.5);
    }

    #[test]
    fn table_groups_runs_by_phase_in_order() {
        let mut t = Table::default();
        let m = |secs| Measurement {
            records: 10,
            bytes: 10_000_000,
            secs,
            broker_cpu_secs: 0.5,
            broker_peak_rss_bytes: 1 << 20,
        };
        t.record("produce acks=1", m(1.0));
        t.record("consume", m(2.0));
        t.record("produce acks=1", m(4.0));
        let text = t.render();
        let produce = text.find("produce acks=1").unwrap();
        let consume = text.find("consume").unwrap();
        assert!(produce < consume, "{text}");
        // produce: 10 MB over 1 s and 4 s → median 6.25 MB/s (mean of 10 and 2.5), 2 runs.
        let line = text
            .lines()
            .find(|l| l.starts_with("produce acks=1"))
            .unwrap();
        assert!(line.contains("6.25"), "{line}");
        assert!(line.trim_end().ends_with('2'), "{line}");
    }

    #[test]
    fn named_values_keep_metric_order_and_run_counts() {
        let mut t = Table::default();
        t.record_value("compaction threads=1", "s to clean", 3.0);
        t.record_value("compaction threads=1", "passes", 2.0);
        t.record_value("compaction threads=1", "s to clean", 5.0);
        let text = t.render();
        let clean = text.lines().find(|l| l.contains("s to clean")).unwrap();
        assert!(clean.starts_with("compaction threads=1"), "{clean}");
        assert!(
            clean.contains("4.00") && clean.trim_end().ends_with('2'),
            "{clean}"
        );
        let passes = text.lines().find(|l| l.contains("passes")).unwrap();
        assert!(passes.trim_end().ends_with('1'), "{passes}");
        assert!(text.find("s to clean").unwrap() < text.find("passes").unwrap());
    }
}
