//! Writer for the Prometheus text exposition format 0.0.4: `# HELP` / `# TYPE` once per
//! family, then its samples, label values escaped, histograms as `_bucket{le}` / `_sum` /
//! `_count`.
//!
//! Plain data (a `String` being built); one writer per scrape, no shared state.

use std::fmt::Write;

use super::histogram::HistogramSnapshot;

/// The `Content-Type` of this format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

#[derive(Default)]
pub struct Exposition {
    out: String,
}

impl Exposition {
    /// Starts a family. Call it once, then add all of the family's samples.
    pub fn family(&mut self, name: &str, kind: Kind, help: &str) {
        let help = help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {}", kind.as_str());
    }

    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(name);
        write_labels(&mut self.out, labels, None);
        let _ = writeln!(self.out, " {}", format_value(value));
    }

    /// An integer sample (counters and offsets), printed exactly even above 2^53.
    pub fn sample_int(&mut self, name: &str, labels: &[(&str, &str)], value: i128) {
        self.out.push_str(name);
        write_labels(&mut self.out, labels, None);
        let _ = writeln!(self.out, " {value}");
    }

    /// The samples of one histogram series (the family must be of kind `Histogram`).
    pub fn histogram(&mut self, name: &str, labels: &[(&str, &str)], h: &HistogramSnapshot) {
        for (bound, count) in &h.cumulative {
            let _ = write!(self.out, "{name}_bucket");
            write_labels(&mut self.out, labels, Some(&format_value(*bound)));
            let _ = writeln!(self.out, " {count}");
        }
        let _ = write!(self.out, "{name}_bucket");
        write_labels(&mut self.out, labels, Some("+Inf"));
        let _ = writeln!(self.out, " {}", h.count);
        let _ = write!(self.out, "{name}_sum");
        write_labels(&mut self.out, labels, None);
        let _ = writeln!(self.out, " {}", format_value(h.sum_seconds));
        let _ = write!(self.out, "{name}_count");
        write_labels(&mut self.out, labels, None);
        let _ = writeln!(self.out, " {}", h.count);
    }

    pub fn finish(self) -> String {
        self.out
    }
}

fn write_labels(out: &mut String, labels: &[(&str, &str)], le: Option<&str>) {
    if labels.is_empty() && le.is_none() {
        return;
    }
    out.push('{');
    let mut first = true;
    for (k, v) in labels.iter().copied().chain(le.map(|le| ("le", le))) {
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(k);
        out.push_str("=\"");
        for c in v.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    out.push('}');
}

/// Go's `ParseFloat` reads Rust's shortest round-trip form; only the specials differ.
fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_string()
    } else if v == f64::INFINITY {
        "+Inf".to_string()
    } else if v == f64::NEG_INFINITY {
        "-Inf".to_string()
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_samples_and_escaping() {
        let mut e = Exposition::default();
        e.family("skiff_x_total", Kind::Counter, "Things.\nCounted.");
        e.sample_int("skiff_x_total", &[("topic", "a\"b\\c\nd")], 7);
        e.family("skiff_ratio", Kind::Gauge, "A ratio.");
        e.sample("skiff_ratio", &[], 0.25);
        e.sample("skiff_ratio", &[("k", "v")], f64::NAN);
        let text = e.finish();
        assert_eq!(
            text,
            "# HELP skiff_x_total Things.\\nCounted.\n# TYPE skiff_x_total counter\n\
             skiff_x_total{topic=\"a\\\"b\\\\c\\nd\"} 7\n\
             # HELP skiff_ratio A ratio.\n# TYPE skiff_ratio gauge\n\
             skiff_ratio 0.25\nskiff_ratio{k=\"v\"} NaN\n"
        );
    }

    #[test]
    fn histogram_series() {
        let h = HistogramSnapshot {
            cumulative: vec![(0.5, 1), (1.0, 2)],
            count: 3,
            sum_seconds: 4.5,
        };
        let mut e = Exposition::default();
        e.family("skiff_d_seconds", Kind::Histogram, "D.");
        e.histogram("skiff_d_seconds", &[("api", "Produce")], &h);
        let text = e.finish();
        assert!(text.contains("skiff_d_seconds_bucket{api=\"Produce\",le=\"0.5\"} 1\n"));
        assert!(text.contains("skiff_d_seconds_bucket{api=\"Produce\",le=\"1\"} 2\n"));
        assert!(text.contains("skiff_d_seconds_bucket{api=\"Produce\",le=\"+Inf\"} 3\n"));
        assert!(text.contains("skiff_d_seconds_sum{api=\"Produce\"} 4.5\n"));
        assert!(text.contains("skiff_d_seconds_count{api=\"Produce\"} 3\n"));
    }
}
