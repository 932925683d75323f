//! Issue 7's targets checked against the medians of a comparison: each target gets the
//! figures it was judged on and a verdict (met, missed, or not measured in this run).
//!
//! Owns: [`evaluate`]. Pure. Not shared between threads.

use crate::compaction::{METRIC_PEAK_RSS, METRIC_READ_MB_S};
use crate::compare::{scenario_label, KAFKA, SCENARIOS, SKIFF};
use crate::matrix::{fmt_num, Matrix};
use crate::produce::Acks;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Met,
    Missed,
    NotMeasured,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::Missed => "MISSED",
            Verdict::NotMeasured => "not measured",
        }
    }
}

/// One target's outcome: its wording, the evidence and the verdict.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub target: &'static str,
    pub evidence: String,
    pub verdict: Verdict,
}

/// Physical limits measured in the same invocation (medians, MB/s).
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    pub loopback: Option<f64>,
    pub disk: Option<f64>,
}

fn verdict(all: bool, any: bool) -> Verdict {
    match (any, all) {
        (false, _) => Verdict::NotMeasured,
        (true, true) => Verdict::Met,
        (true, false) => Verdict::Missed,
    }
}

/// Evaluates every target of issue 7 that the comparison can judge.
pub fn evaluate(m: &Matrix, limits: Limits, latency_label: Option<&str>) -> Vec<Outcome> {
    let med = |s: &str, metric: &str, b: &str| m.median(s, metric, b);
    let mut out = Vec::new();

    // Produce acks=1: >= 2x Kafka's MB/s and <= 1/3 of its CPU s/GB, in every scenario.
    let (mut ok, mut any, mut ev) = (true, false, Vec::new());
    for &(size, parts, acks) in SCENARIOS.iter().filter(|s| s.2 == Acks::Leader) {
        let l = scenario_label(size, parts, acks);
        if let (Some(a), Some(b), Some(ca), Some(cb)) = (
            med(&l, "MB/s", SKIFF),
            med(&l, "MB/s", KAFKA),
            med(&l, "broker CPU s/GB", SKIFF),
            med(&l, "broker CPU s/GB", KAFKA),
        ) {
            any = true;
            let good = a >= 2.0 * b && ca * 3.0 <= cb;
            ok &= good;
            ev.push(format!(
                "{}: {:.2}x MB/s, {:.2}x less CPU/GB",
                l.trim_start_matches("produce "),
                a / b,
                cb / ca.max(1e-9)
            ));
        }
    }
    out.push(Outcome {
        target: "produce acks=1: >= 2x Kafka's throughput, <= 1/3 of its CPU s/GB",
        evidence: ev.join("; "),
        verdict: verdict(ok, any),
    });

    // acks=all: Skiff with fsync at least as fast as Kafka without.
    let (mut ok, mut any, mut ev) = (true, false, Vec::new());
    for &(size, parts, acks) in SCENARIOS.iter().filter(|s| s.2 == Acks::All) {
        let l = scenario_label(size, parts, acks);
        if let (Some(a), Some(b)) = (med(&l, "MB/s", SKIFF), med(&l, "MB/s", KAFKA)) {
            any = true;
            ok &= a >= b;
            ev.push(format!(
                "{}: {:.2}x",
                l.trim_start_matches("produce "),
                a / b
            ));
        }
    }
    out.push(Outcome {
        target: "produce acks=all: Skiff with fsync >= Kafka without fsync",
        evidence: ev.join("; "),
        verdict: verdict(ok, any),
    });

    // p99 produce latency at the fixed rate (acks=1): <= 1/3 of Kafka's.
    let (ok, any, ev) = match latency_label.and_then(|l| {
        Some((
            med(l, "produce p99 ms", SKIFF)?,
            med(l, "produce p99 ms", KAFKA)?,
        ))
    }) {
        Some((a, b)) => (
            a * 3.0 <= b,
            true,
            format!("skiff {} ms vs kafka {} ms", fmt_num(a), fmt_num(b)),
        ),
        None => (false, false, String::new()),
    };
    out.push(Outcome {
        target: "p99 produce latency at the fixed rate: <= 1/3 of Kafka's",
        evidence: ev,
        verdict: verdict(ok, any),
    });

    // Consume catch-up: >= Kafka's MB/s at <= 1/3 of its CPU/GB.
    let consume = m
        .keys()
        .into_iter()
        .map(|(s, _)| s)
        .find(|s| s.starts_with("consume") && s.ends_with("default"));
    let (ok, any, ev) = match consume.as_deref().and_then(|l| {
        Some((
            med(l, "MB/s", SKIFF)?,
            med(l, "MB/s", KAFKA)?,
            med(l, "broker CPU s/GB", SKIFF)?,
            med(l, "broker CPU s/GB", KAFKA)?,
        ))
    }) {
        Some((a, b, ca, cb)) => (
            a >= b && ca * 3.0 <= cb,
            true,
            format!("{:.2}x MB/s, {:.2}x less CPU/GB", a / b, cb / ca.max(1e-9)),
        ),
        None => (false, false, String::new()),
    };
    out.push(Outcome {
        target: "consume catch-up: >= Kafka's MB/s at <= 1/3 of its CPU s/GB",
        evidence: ev,
        verdict: verdict(ok, any),
    });

    // Idle RSS and start-up.
    let idle = med("start-up", "idle RSS MiB (1 s after start)", SKIFF);
    out.push(Outcome {
        target: "idle RSS under 20 MB",
        evidence: idle
            .map(|v| format!("{} MiB", fmt_num(v)))
            .unwrap_or_default(),
        verdict: verdict(idle.is_some_and(|v| v * 1.048_576 < 20.0), idle.is_some()),
    });
    let empty = med("start-up", "to first request, empty ms", SKIFF);
    out.push(Outcome {
        target: "start-up under 20 ms (empty)",
        evidence: empty
            .map(|v| format!("{} ms", fmt_num(v)))
            .unwrap_or_default(),
        verdict: verdict(empty.is_some_and(|v| v < 20.0), empty.is_some()),
    });
    // Of the kill -9 rows, the slowest recovery is the one judged.
    let unclean = m
        .keys()
        .into_iter()
        .filter(|(s, metric)| s == "start-up" && metric.contains("kill -9"))
        .filter_map(|(s, metric)| Some((metric.clone(), med(&s, &metric, SKIFF)?)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    out.push(Outcome {
        target: "unclean recovery of 10 GB under 5 s (run here at the size shown)",
        evidence: unclean
            .as_ref()
            .map(|(metric, v)| format!("{}: {} ms", metric.trim_end_matches(" ms"), fmt_num(*v)))
            .unwrap_or_default(),
        verdict: verdict(
            unclean.as_ref().is_some_and(|(_, v)| *v < 5000.0),
            unclean.is_some(),
        ),
    });

    // Produce throughput >= half of the lower physical limit.
    let best = SCENARIOS
        .iter()
        .filter_map(|&(s, p, a)| med(&scenario_label(s, p, a), "MB/s", SKIFF))
        .fold(None, |acc: Option<f64>, v| {
            Some(acc.map_or(v, |a| a.max(v)))
        });
    let limit = match (limits.loopback, limits.disk) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let (ok, any, ev) = match (best, limit) {
        (Some(b), Some(l)) => (
            b * 2.0 >= l,
            true,
            format!("best {} MB/s vs limit {} MB/s", fmt_num(b), fmt_num(l)),
        ),
        _ => (false, false, String::new()),
    };
    out.push(Outcome {
        target: "produce throughput >= half of min(loopback, disk write+fsync)",
        evidence: ev,
        verdict: verdict(ok, any),
    });
    out.push(compaction(m, None));
    out
}

/// Kafka's default `log.cleaner.dedupe.buffer.size`.
pub const KAFKA_DEFAULT_DEDUPE: u64 = 128 * 1024 * 1024;

/// Compaction: in every "compaction ..." scenario of `m`, Skiff's cleaner read MB/s at least
/// 3x Kafka's, and Skiff's whole-broker peak RSS within the dedupe buffer (`dedupe_buffer`,
/// else Kafka's default 128 MiB) that both brokers were given.
pub fn compaction(m: &Matrix, dedupe_buffer: Option<u64>) -> Outcome {
    let buffer = dedupe_buffer.unwrap_or(KAFKA_DEFAULT_DEDUPE) as f64 / (1024.0 * 1024.0);
    let (mut ok, mut any, mut ev) = (true, false, Vec::new());
    for (s, metric) in m.keys() {
        if !s.starts_with("compaction ") || metric != METRIC_READ_MB_S {
            continue;
        }
        if let (Some(a), Some(b), Some(rss)) = (
            m.median(&s, METRIC_READ_MB_S, SKIFF),
            m.median(&s, METRIC_READ_MB_S, KAFKA),
            m.median(&s, METRIC_PEAK_RSS, SKIFF),
        ) {
            any = true;
            ok &= a >= 3.0 * b && rss <= buffer;
            ev.push(format!(
                "{}: {:.2}x Kafka's cleaner MB/s ({} vs {}), skiff peak RSS {} MiB vs buffer {} MiB",
                s.trim_start_matches("compaction "),
                a / b.max(1e-9),
                fmt_num(a),
                fmt_num(b),
                fmt_num(rss),
                fmt_num(buffer)
            ));
        }
    }
    if !any {
        ev.push(
            "no Skiff and Kafka compaction figures in this invocation \
             (`skiff-bench compaction --kafka` measures them)"
                .into(),
        );
    }
    Outcome {
        target: "compaction: >= 3x Kafka's cleaner throughput, memory within the dedupe buffer",
        evidence: ev.join("; "),
        verdict: verdict(ok, any),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::compare::COLUMNS;
    use crate::matrix::Better;

    #[test]
    fn compaction_target_needs_3x_throughput_and_rss_within_the_buffer() {
        let mut m = Matrix::new(&COLUMNS, SKIFF);
        assert_eq!(compaction(&m, None).verdict, Verdict::NotMeasured);
        let s = "compaction 1074 MB, 100000 keys, 10% live, t=1 deferred";
        m.add(s, METRIC_READ_MB_S, Better::Higher, SKIFF, 400.0);
        m.add(s, METRIC_READ_MB_S, Better::Higher, KAFKA, 100.0);
        m.add(s, METRIC_PEAK_RSS, Better::Lower, SKIFF, 60.0);
        let o = compaction(&m, None);
        assert_eq!(o.verdict, Verdict::Met, "{o:?}");
        assert!(o.evidence.contains("4.00x"), "{}", o.evidence);
        // 60 MiB of RSS does not fit a 32 MiB buffer.
        assert_eq!(compaction(&m, Some(32 << 20)).verdict, Verdict::Missed);
        m.add(s, METRIC_READ_MB_S, Better::Higher, KAFKA, 200.0);
        m.add(s, METRIC_READ_MB_S, Better::Higher, KAFKA, 200.0);
        assert_eq!(compaction(&m, None).verdict, Verdict::Missed);
    }

    #[test]
    fn produce_target_needs_both_throughput_and_cpu() {
        let mut m = Matrix::new(&COLUMNS, SKIFF);
        let l = scenario_label(1024, 1, Acks::Leader);
        m.add(&l, "MB/s", Better::Higher, SKIFF, 300.0);
        m.add(&l, "MB/s", Better::Higher, KAFKA, 100.0);
        m.add(&l, "broker CPU s/GB", Better::Lower, SKIFF, 1.0);
        m.add(&l, "broker CPU s/GB", Better::Lower, KAFKA, 2.0);
        let o = evaluate(&m, Limits::default(), None);
        assert_eq!(o[0].verdict, Verdict::Missed, "{:?}", o[0]);
        assert_eq!(o[1].verdict, Verdict::NotMeasured);
        m.add(&l, "broker CPU s/GB", Better::Lower, KAFKA, 4.0);
        m.add(&l, "broker CPU s/GB", Better::Lower, KAFKA, 4.0);
        let o = evaluate(
            &m,
            Limits {
                loopback: Some(1000.0),
                disk: Some(500.0),
            },
            None,
        );
        assert_eq!(o[0].verdict, Verdict::Met, "{:?}", o[0]);
        let last = o
            .iter()
            .find(|x| x.target.starts_with("produce throughput"))
            .unwrap();
        assert_eq!(last.verdict, Verdict::Met, "{last:?}");
    }
}
