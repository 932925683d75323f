//! The comparison plot: grouped bars per broker, top panel produce throughput (MB/s,
//! linear), bottom panel fixed-rate latency percentiles (ms, log scale), each bar labelled
//! with its median.
//!
//! Owns: [`render`] (matrix → PNG file) and the heading and colours the scaling plot shares.
//! Pure apart from writing the PNG. Not shared between threads.

use std::path::Path;

use anyhow::Result;

use crate::canvas::{Canvas, Rgb};
use crate::matrix::{fmt_num, Matrix};

const W: i64 = 1400;
const H: i64 = 900;
pub(crate) const BG: Rgb = [255, 255, 255];
pub(crate) const INK: Rgb = [30, 30, 30];
pub(crate) const GRID: Rgb = [225, 225, 225];
/// Colours per broker column, in the matrix's column order.
pub(crate) const COLOURS: [Rgb; 6] = [
    [214, 96, 38],
    [52, 101, 164],
    [120, 160, 210],
    [78, 154, 6],
    [117, 80, 123],
    [193, 125, 17],
];

/// One group of bars: its label and one optional value per broker.
struct Group {
    label: String,
    values: Vec<Option<f64>>,
}

/// Draws the plot of `m` to `path`; `title` goes on top.
pub fn render(m: &Matrix, title: &str, path: &Path) -> Result<()> {
    let brokers = m.brokers().to_vec();
    let keys = m.keys();
    let group = |scenario: &str, metric: &str, label: String| Group {
        label,
        values: brokers
            .iter()
            .map(|b| m.median(scenario, metric, b))
            .collect(),
    };
    let throughput: Vec<Group> = keys
        .iter()
        .filter(|(s, metric)| s.starts_with("produce") && metric == "MB/s")
        .map(|(s, metric)| group(s, metric, s.trim_start_matches("produce ").to_string()))
        .collect();
    let latency: Vec<Group> = keys
        .iter()
        .filter(|(s, metric)| {
            s.starts_with("latency")
                && [
                    "produce p50 ms",
                    "produce p99 ms",
                    "produce p99.9 ms",
                    "end-to-end p99 ms",
                ]
                .contains(&metric.as_str())
        })
        .map(|(s, metric)| {
            let acks = s.rsplit(' ').next().unwrap_or("");
            let what = metric.trim_end_matches(" ms").replace("end-to-end", "e2e");
            group(s, metric, format!("{acks} {what}"))
        })
        .collect();
    let rate = keys
        .iter()
        .find(|(s, _)| s.starts_with("latency"))
        .map(|(s, _)| {
            let after = s.split('@').nth(1).unwrap_or("");
            after.split(" acks").next().unwrap_or("").trim().to_string()
        })
        .unwrap_or_default();

    let mut c = Canvas::new(W as usize, H as usize, BG);
    heading(&mut c, title, &brokers);
    panel(
        &mut c,
        80,
        380,
        "produce throughput, MB/s (median; higher is better)",
        &throughput,
        false,
    );
    let lat_title = format!("latency at {rate}, ms (median; log scale; lower is better)");
    panel(&mut c, 500, 360, &lat_title, &latency, true);
    c.save_png(path)
}

/// One bar panel at vertical offset `top` and height `height`.
/// The title on top and, under it, one colour swatch per broker (the matrix's column order).
pub(crate) fn heading(c: &mut Canvas, title: &str, brokers: &[String]) {
    c.text(20, 14, title, 2, INK);
    let mut x = 20;
    for (i, b) in brokers.iter().enumerate() {
        c.rect(x, 44, 14, 14, COLOURS[i % COLOURS.len()]);
        c.text(x + 20, 47, b, 1, INK);
        x += 40 + Canvas::text_width(b, 1);
    }
}

fn panel(c: &mut Canvas, top: i64, height: i64, title: &str, groups: &[Group], log: bool) {
    c.text(20, top, title, 2, INK);
    let (left, right) = (70, W - 20);
    let (plot_top, plot_bottom) = (top + 40, top + height - 40);
    if groups.is_empty() {
        c.text(left, plot_top + 20, "not measured", 2, INK);
        return;
    }
    let max = groups
        .iter()
        .flat_map(|g| g.values.iter().flatten())
        .fold(0.0f64, |a, &b| a.max(b));
    let (lo, hi) = if log {
        let lo = groups
            .iter()
            .flat_map(|g| g.values.iter().flatten())
            .filter(|v| **v > 0.0)
            .fold(f64::MAX, |a, &b| a.min(b));
        let lo = 10f64.powf(lo.max(1e-3).log10().floor());
        (lo, 10f64.powf(max.max(lo * 10.0).log10().ceil()))
    } else {
        (0.0, nice_ceiling(max))
    };
    let span = (plot_bottom - plot_top) as f64;
    let y_of = |v: f64| -> i64 {
        let f = if log {
            (v.max(lo).log10() - lo.log10()) / (hi.log10() - lo.log10())
        } else {
            v / hi.max(1e-9)
        };
        plot_bottom - (f.clamp(0.0, 1.0) * span) as i64
    };
    // Grid lines with their values.
    let ticks: Vec<f64> = if log {
        let mut t = Vec::new();
        let mut v = lo;
        while v <= hi * 1.0001 {
            t.push(v);
            v *= 10.0;
        }
        t
    } else {
        (0..=4).map(|i| hi * f64::from(i) / 4.0).collect()
    };
    for t in ticks {
        let y = y_of(t);
        c.rect(left, y, right - left, 1, GRID);
        let s = fmt_num(t);
        c.text(left - 8 - Canvas::text_width(&s, 1), y - 3, &s, 1, INK);
    }
    c.rect(left, plot_bottom, right - left, 1, INK);
    let gw = (right - left) / groups.len() as i64;
    let n = groups[0].values.len().max(1) as i64;
    let bw = ((gw - 16) / n).max(2);
    for (gi, g) in groups.iter().enumerate() {
        let gx = left + gi as i64 * gw + 8;
        for (bi, v) in g.values.iter().enumerate() {
            let Some(v) = v else { continue };
            let x = gx + bi as i64 * bw;
            let y = y_of(*v);
            c.rect(
                x + 1,
                y,
                bw - 2,
                plot_bottom - y,
                COLOURS[bi % COLOURS.len()],
            );
            let s = fmt_num(*v);
            let tx = x + (bw - Canvas::text_width(&s, 1)) / 2;
            c.text(tx, y - 10, &s, 1, INK);
        }
        let lw = Canvas::text_width(&g.label, 1);
        c.text(
            left + gi as i64 * gw + (gw - lw) / 2,
            plot_bottom + 8,
            &g.label,
            1,
            INK,
        );
    }
}

/// A round axis maximum at or above `v` (1, 2 or 5 times a power of ten).
fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|c| *c >= v)
        .unwrap_or(10.0 * p)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::matrix::Better;

    #[test]
    fn nice_ceilings() {
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(130.0), 200.0);
        assert_eq!(nice_ceiling(480.0), 500.0);
        assert_eq!(nice_ceiling(501.0), 1000.0);
    }

    #[test]
    fn renders_a_png_file() {
        let mut m = Matrix::new(&["skiff", "kafka"], "skiff");
        m.add(
            "produce 1 KiB p1 acks=1",
            "MB/s",
            Better::Higher,
            "skiff",
            400.0,
        );
        m.add(
            "produce 1 KiB p1 acks=1",
            "MB/s",
            Better::Higher,
            "kafka",
            150.0,
        );
        m.add(
            "latency 1 KiB @ 1000/s acks=1",
            "produce p99 ms",
            Better::Lower,
            "skiff",
            0.4,
        );
        m.add(
            "latency 1 KiB @ 1000/s acks=1",
            "produce p99 ms",
            Better::Lower,
            "kafka",
            3.0,
        );
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.png");
        render(&m, "test", &p).unwrap();
        assert!(std::fs::metadata(&p).unwrap().len() > 100);
    }
}
