//! The side-by-side result matrix of the `compare` mode: one row per (scenario, metric), one
//! column per broker configuration, each cell the median of the runs with min–max, plus
//! columns with Skiff's median as a ratio to each peer's median from the same invocation.
//!
//! Owns: [`Matrix`] (collecting values and "not run" reasons) and its text and markdown
//! renderings. Pure; no I/O. Not shared between threads.

use std::fmt::Write as _;

use crate::stats::summarize;

/// Which direction is better, so the report can say who leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

#[derive(Debug)]
struct Row {
    scenario: String,
    metric: String,
    better: Better,
    /// Values per broker column (same order as `Matrix::brokers`).
    values: Vec<Vec<f64>>,
}

/// All figures of a comparison, in first-recorded order.
#[derive(Debug)]
pub struct Matrix {
    brokers: Vec<String>,
    /// The column every ratio is computed from (Skiff's default configuration).
    reference: usize,
    rows: Vec<Row>,
    /// Brokers that were not measured at all, and why.
    not_run: Vec<(String, String)>,
}

impl Matrix {
    /// `brokers` are the column labels; `reference` must be one of them.
    pub fn new(brokers: &[&str], reference: &str) -> Matrix {
        Matrix {
            brokers: brokers.iter().map(|s| s.to_string()).collect(),
            reference: brokers.iter().position(|b| *b == reference).unwrap_or(0),
            rows: Vec::new(),
            not_run: Vec::new(),
        }
    }

    pub fn brokers(&self) -> &[String] {
        &self.brokers
    }

    /// Records one run's value. Unknown broker labels are ignored (a programming error that
    /// must not abort a long benchmark).
    pub fn add(&mut self, scenario: &str, metric: &str, better: Better, broker: &str, v: f64) {
        let Some(col) = self.brokers.iter().position(|b| b == broker) else {
            return;
        };
        let idx = match self
            .rows
            .iter()
            .position(|r| r.scenario == scenario && r.metric == metric)
        {
            Some(i) => i,
            None => {
                self.rows.push(Row {
                    scenario: scenario.to_string(),
                    metric: metric.to_string(),
                    better,
                    values: vec![Vec::new(); self.brokers.len()],
                });
                self.rows.len() - 1
            }
        };
        self.rows[idx].values[col].push(v);
    }

    /// Marks a broker as not measured, with the reason (shown under the table).
    pub fn not_run(&mut self, broker: &str, why: &str) {
        self.not_run.push((broker.to_string(), why.to_string()));
    }

    /// Why `broker` was not measured (in part or at all); empty when it ran everything.
    pub fn not_run_for(&self, broker: &str) -> Vec<&str> {
        self.not_run
            .iter()
            .filter(|(b, _)| b == broker)
            .map(|(_, why)| why.as_str())
            .collect()
    }

    /// Median of one cell.
    pub fn median(&self, scenario: &str, metric: &str, broker: &str) -> Option<f64> {
        let col = self.brokers.iter().position(|b| b == broker)?;
        let row = self
            .rows
            .iter()
            .find(|r| r.scenario == scenario && r.metric == metric)?;
        summarize(&row.values[col]).map(|s| s.median)
    }

    /// (scenario, metric) pairs in order, for plots.
    pub fn keys(&self) -> Vec<(String, String)> {
        self.rows
            .iter()
            .map(|r| (r.scenario.clone(), r.metric.clone()))
            .collect()
    }

    fn cell(values: &[f64]) -> String {
        match summarize(values) {
            None => "—".to_string(),
            Some(s) if values.len() == 1 => fmt_num(s.median),
            Some(s) => format!(
                "{} ({}–{})",
                fmt_num(s.median),
                fmt_num(s.min),
                fmt_num(s.max)
            ),
        }
    }

    /// Skiff's median over the peer's: for "lower is better" metrics the ratio is inverted so
    /// that above 1 always means Skiff leads (shown with an `x`).
    fn ratio(&self, row: &Row, peer: usize) -> String {
        let own = summarize(&row.values[self.reference]).map(|s| s.median);
        let other = summarize(&row.values[peer]).map(|s| s.median);
        match (own, other) {
            (Some(a), Some(b)) if a > 0.0 && b > 0.0 => {
                let r = match row.better {
                    Better::Higher => a / b,
                    Better::Lower => b / a,
                };
                format!("{r:.2}x")
            }
            _ => "—".to_string(),
        }
    }

    fn header(&self) -> Vec<String> {
        let mut h = vec!["scenario".to_string(), "metric".to_string()];
        h.extend(self.brokers.iter().cloned());
        for (i, b) in self.brokers.iter().enumerate() {
            if i != self.reference {
                h.push(format!("{} vs {b}", self.brokers[self.reference]));
            }
        }
        h
    }

    fn lines(&self) -> Vec<Vec<String>> {
        self.rows
            .iter()
            .map(|row| {
                let mut l = vec![row.scenario.clone(), row.metric.clone()];
                l.extend(row.values.iter().map(|v| Self::cell(v)));
                for i in 0..self.brokers.len() {
                    if i != self.reference {
                        l.push(self.ratio(row, i));
                    }
                }
                l
            })
            .collect()
    }

    /// Fixed-width text for the terminal.
    pub fn render_text(&self) -> String {
        let header = self.header();
        let lines = self.lines();
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for l in &lines {
            for (w, c) in widths.iter_mut().zip(l) {
                *w = (*w).max(c.chars().count());
            }
        }
        let mut out = String::new();
        let fmt_line = |cells: &[String]| {
            let mut s = String::new();
            for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
                let pad = w.saturating_sub(c.chars().count());
                if i < 2 {
                    s.push_str(c);
                    s.push_str(&" ".repeat(pad));
                } else {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(c);
                }
                s.push_str("  ");
            }
            s.trim_end().to_string()
        };
        let _ = writeln!(out, "{}", fmt_line(&header));
        let _ = writeln!(out, "{}", "-".repeat(widths.iter().map(|w| w + 2).sum()));
        let mut last = String::new();
        for mut l in lines {
            if l[0] == last {
                l[0] = String::new();
            } else {
                last = l[0].clone();
            }
            let _ = writeln!(out, "{}", fmt_line(&l));
        }
        for (b, why) in &self.not_run {
            let _ = writeln!(out, "not run: {b}: {why}");
        }
        out
    }

    /// A GitHub markdown table (ratios > 1 mean Skiff leads).
    pub fn render_markdown(&self) -> String {
        let header = self.header();
        let mut out = String::new();
        let _ = writeln!(out, "| {} |", header.join(" | "));
        let aligns: Vec<&str> = header
            .iter()
            .enumerate()
            .map(|(i, _)| if i < 2 { "---" } else { "---:" })
            .collect();
        let _ = writeln!(out, "|{}|", aligns.join("|"));
        let mut last = String::new();
        for mut l in self.lines() {
            if l[0] == last {
                l[0] = String::new();
            } else {
                last = l[0].clone();
            }
            let _ = writeln!(out, "| {} |", l.join(" | "));
        }
        if !self.not_run.is_empty() {
            out.push('\n');
            for (b, why) in &self.not_run {
                let _ = writeln!(out, "- not run: **{b}**: {why}");
            }
        }
        out
    }
}

/// Three significant-ish digits without scientific notation.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".to_string()
    } else if a >= 1000.0 {
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
    fn cells_ratios_and_not_run() {
        let mut m = Matrix::new(&["skiff", "kafka", "tansu"], "skiff");
        for v in [100.0, 300.0, 200.0] {
            m.add("produce", "MB/s", Better::Higher, "skiff", v);
        }
        m.add("produce", "MB/s", Better::Higher, "kafka", 50.0);
        m.add("produce", "CPU s/GB", Better::Lower, "skiff", 2.0);
        m.add("produce", "CPU s/GB", Better::Lower, "kafka", 6.0);
        m.not_run("tansu", "binary missing");
        assert_eq!(m.median("produce", "MB/s", "skiff"), Some(200.0));
        let md = m.render_markdown();
        assert!(
            md.contains("| produce | MB/s | 200.0 (100.0–300.0) | 50.0 | — | 4.00x | — |"),
            "{md}"
        );
        // Lower is better: kafka 6 vs skiff 2 is a 3x lead for skiff.
        assert!(
            md.contains("|  | CPU s/GB | 2.00 | 6.00 | — | 3.00x | — |"),
            "{md}"
        );
        assert!(md.contains("not run: **tansu**: binary missing"), "{md}");
        assert_eq!(m.not_run_for("tansu"), vec!["binary missing"]);
        assert!(m.not_run_for("skiff").is_empty());
        let text = m.render_text();
        assert!(text.lines().count() >= 5, "{text}");
        assert!(text.contains("skiff vs kafka"), "{text}");
    }
}
