//! The scaling plot of the `partitions` and `connections` sweeps: cost against size. One
//! panel per metric, the size (the number leading each scenario, "10000 partitions") on a
//! log x axis, the metric's median on a log y axis, one line per broker. A line stops where
//! a broker stopped (a failed step has no point); a size of 0 has no place on a log axis.
//!
//! Owns: [`render`] (matrix → PNG file). Pure apart from writing the PNG. Not shared between
//! threads.

use std::path::Path;

use anyhow::Result;

use crate::canvas::{Canvas, Rgb};
use crate::matrix::{fmt_num, Matrix};
use crate::plot::{heading, BG, COLOURS, GRID, INK};

const W: i64 = 1400;
const PANEL_H: i64 = 380;

/// Draws one panel per entry of `metrics` (two per row) to `path`; `title` goes on top.
pub fn render(m: &Matrix, title: &str, metrics: &[&str], path: &Path) -> Result<()> {
    let brokers = m.brokers().to_vec();
    let rows = i64::try_from(metrics.len().div_ceil(2)).unwrap_or(1);
    let mut c = Canvas::new(W as usize, (80 + rows * PANEL_H) as usize, BG);
    heading(&mut c, title, &brokers);
    for (i, metric) in metrics.iter().enumerate() {
        let i = i64::try_from(i).unwrap_or(0);
        let series: Vec<Vec<(f64, f64)>> = brokers.iter().map(|b| points(m, metric, b)).collect();
        let area = Area {
            left: (i % 2) * (W / 2) + 80,
            right: (i % 2) * (W / 2) + W / 2 - 30,
            top: 80 + (i / 2) * PANEL_H,
        };
        panel(&mut c, &area, metric, &series);
    }
    c.save_png(path)
}

/// (size, median) of `metric` for `broker`, by size.
fn points(m: &Matrix, metric: &str, broker: &str) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = m
        .keys()
        .iter()
        .filter(|(_, k)| k == metric)
        .filter_map(|(scenario, _)| {
            let size: f64 = scenario.split_whitespace().next()?.parse().ok()?;
            let v = m.median(scenario, metric, broker)?;
            (size > 0.0 && v > 0.0).then_some((size, v))
        })
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out.dedup_by(|a, b| a.0 == b.0);
    out
}

struct Area {
    left: i64,
    right: i64,
    top: i64,
}

/// Decades that hold every value: (10^floor(log10 min), 10^ceil(log10 max)).
fn decades(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if lo > hi {
        return (1.0, 10.0);
    }
    let lo = 10f64.powf(lo.log10().floor());
    let hi = 10f64.powf(hi.log10().ceil()).max(lo * 10.0);
    (lo, hi)
}

fn panel(c: &mut Canvas, a: &Area, metric: &str, series: &[Vec<(f64, f64)>]) {
    c.text(
        a.left - 60,
        a.top,
        &format!("{metric} (log scales)"),
        2,
        INK,
    );
    let (plot_top, plot_bottom) = (a.top + 40, a.top + PANEL_H - 60);
    let all = || series.iter().flatten();
    if all().next().is_none() {
        c.text(a.left, plot_top + 20, "not measured", 2, INK);
        return;
    }
    let (xlo, xhi) = decades(all().map(|p| p.0));
    let (ylo, yhi) = decades(all().map(|p| p.1));
    let scale = |v: f64, lo: f64, hi: f64| (v.log10() - lo.log10()) / (hi.log10() - lo.log10());
    let x_of = |v: f64| a.left + (scale(v, xlo, xhi) * (a.right - a.left) as f64) as i64;
    let y_of = |v: f64| plot_bottom - (scale(v, ylo, yhi) * (plot_bottom - plot_top) as f64) as i64;
    let mut t = ylo;
    while t <= yhi * 1.0001 {
        let y = y_of(t);
        c.rect(a.left, y, a.right - a.left, 1, GRID);
        let s = fmt_num(t);
        c.text(a.left - 8 - Canvas::text_width(&s, 1), y - 3, &s, 1, INK);
        t *= 10.0;
    }
    let mut t = xlo;
    while t <= xhi * 1.0001 {
        let x = x_of(t);
        c.rect(x, plot_top, 1, plot_bottom - plot_top, GRID);
        let s = fmt_num(t);
        c.text(
            x - Canvas::text_width(&s, 1) / 2,
            plot_bottom + 8,
            &s,
            1,
            INK,
        );
        t *= 10.0;
    }
    c.rect(a.left, plot_bottom, a.right - a.left, 1, INK);
    for (bi, points) in series.iter().enumerate() {
        let colour = COLOURS[bi % COLOURS.len()];
        let xy: Vec<(i64, i64)> = points.iter().map(|&(x, y)| (x_of(x), y_of(y))).collect();
        for w in xy.windows(2) {
            if let [p, q] = w {
                line(c, *p, *q, colour);
            }
        }
        for (&(x, y), &(_, v)) in xy.iter().zip(points) {
            c.rect(x - 3, y - 3, 7, 7, colour);
            let label = fmt_num(v);
            let width = Canvas::text_width(&label, 1);
            // Left of the point where the label would run off the panel.
            let lx = if x + 6 + width > a.right {
                x - 6 - width
            } else {
                x + 6
            };
            c.text(lx, y - 12, &label, 1, colour);
        }
    }
}

/// A 2-pixel line from `p` to `q`.
fn line(c: &mut Canvas, p: (i64, i64), q: (i64, i64), colour: Rgb) {
    let steps = (q.0 - p.0).abs().max((q.1 - p.1).abs()).max(1);
    for s in 0..=steps {
        let x = p.0 + (q.0 - p.0) * s / steps;
        let y = p.1 + (q.1 - p.1) * s / steps;
        c.rect(x, y, 2, 2, colour);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::matrix::Better;

    #[test]
    fn sizes_come_from_the_scenario_and_a_failed_step_has_no_point() {
        let mut m = Matrix::new(&["skiff", "kafka"], "skiff");
        for (n, s, k) in [(1, 0.1, Some(4.0)), (10, 0.2, Some(5.0)), (100, 0.3, None)] {
            let scenario = format!("{n} partitions");
            m.add(&scenario, "restart s", Better::Lower, "skiff", s);
            if let Some(k) = k {
                m.add(&scenario, "restart s", Better::Lower, "kafka", k);
            }
        }
        assert_eq!(
            points(&m, "restart s", "skiff"),
            vec![(1.0, 0.1), (10.0, 0.2), (100.0, 0.3)]
        );
        assert_eq!(
            points(&m, "restart s", "kafka"),
            vec![(1.0, 4.0), (10.0, 5.0)]
        );
        assert_eq!(decades([0.2, 0.3].into_iter()), (0.1, 1.0));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scale.png");
        render(&m, "t", &["restart s", "RSS MiB"], &path).unwrap();
        assert_eq!(&std::fs::read(&path).unwrap()[..4], b"\x89PNG");
    }
}
