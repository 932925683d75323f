//! Line charts as inline SVG, drawn on the server from [`super::history`] points: no chart
//! library, no script needed to see them (the script only reloads them). Each chart is an
//! image with a text alternative that states the latest value, and a legend in text.

use std::fmt::Write as _;

use super::page::esc;

const WIDTH: f64 = 600.0;
const HEIGHT: f64 = 160.0;
/// Room for the axis labels.
const LEFT: f64 = 70.0;
const BOTTOM: f64 = 20.0;
const TOP: f64 = 10.0;

/// One line: its legend name and its points `(t_ms, value)`, oldest first.
pub struct Line<'a> {
    pub name: &'a str,
    pub points: &'a [(i64, f64)],
}

/// A chart titled `title` of `lines` over the window that ends at `now_ms` and spans
/// `span_ms`, values printed with `label` (e.g. bytes per second).
pub fn line_chart(
    title: &str,
    lines: &[Line<'_>],
    now_ms: i64,
    span_ms: i64,
    label: fn(f64) -> String,
) -> String {
    let start = now_ms - span_ms;
    let max = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(0.0_f64, f64::max);
    let top = if max > 0.0 { max * 1.1 } else { 1.0 };
    let x = |t: i64| LEFT + (t - start).max(0) as f64 / span_ms.max(1) as f64 * (WIDTH - LEFT);
    let y = |v: f64| TOP + (1.0 - v / top) * (HEIGHT - TOP - BOTTOM);
    let latest: Vec<String> = lines
        .iter()
        .map(|l| match l.points.last() {
            Some(p) => format!("{} {}", l.name, label(p.1)),
            None => format!("{} no data yet", l.name),
        })
        .collect();
    let summary = format!("{title}: now {}", latest.join(", "));
    let mut svg = format!(
        "<figure class=\"chart\"><svg viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" \
         aria-label=\"{label_text}\" preserveAspectRatio=\"none\"><title>{label_text}</title>",
        label_text = esc(&summary),
    );
    // Axes and the top value.
    let _ = write!(
        svg,
        "<line class=\"axis\" x1=\"{LEFT}\" y1=\"{b}\" x2=\"{WIDTH}\" y2=\"{b}\"/>\
         <line class=\"axis\" x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{b}\"/>\
         <text class=\"tick\" x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\">{top_label}</text>\
         <text class=\"tick\" x=\"{lx}\" y=\"{b}\" text-anchor=\"end\">0</text>\
         <text class=\"tick\" x=\"{LEFT}\" y=\"{HEIGHT}\">-{minutes} min</text>\
         <text class=\"tick\" x=\"{WIDTH}\" y=\"{HEIGHT}\" text-anchor=\"end\">now</text>",
        b = HEIGHT - BOTTOM,
        lx = LEFT - 4.0,
        ty = TOP + 8.0,
        top_label = esc(&label(top)),
        minutes = span_ms / 60_000,
    );
    for (i, line) in lines.iter().enumerate() {
        let points: Vec<String> = line
            .points
            .iter()
            .filter(|p| p.0 >= start)
            .map(|&(t, v)| format!("{:.1},{:.1}", x(t), y(v)))
            .collect();
        if !points.is_empty() {
            let _ = write!(
                svg,
                "<polyline class=\"line s{}\" points=\"{}\"/>",
                i % 4,
                points.join(" ")
            );
        }
        // The latest point as a dot: a line of one sample draws nothing otherwise.
        if let Some(&(t, v)) = line.points.last().filter(|p| p.0 >= start) {
            let _ = write!(
                svg,
                "<circle class=\"dot s{}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\"/>",
                i % 4,
                x(t),
                y(v)
            );
        }
    }
    svg.push_str("</svg><figcaption>");
    let _ = write!(svg, "<strong>{}</strong>", esc(title));
    for (i, text) in latest.iter().enumerate() {
        let _ = write!(svg, " <span class=\"key s{}\">{}</span>", i % 4, esc(text));
    }
    svg.push_str("</figcaption></figure>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_each_line_and_states_the_latest_value() {
        let a = [(1_000, 1.0), (2_000, 4.0)];
        let svg = line_chart(
            "Produce <rate>",
            &[
                Line {
                    name: "bytes",
                    points: &a,
                },
                Line {
                    name: "empty",
                    points: &[],
                },
            ],
            2_000,
            60_000,
            |v| format!("{v:.0}"),
        );
        assert_eq!(svg.matches("<polyline").count(), 1);
        assert!(svg.contains("aria-label=\"Produce &lt;rate&gt;: now bytes 4, empty no data yet\""));
        assert!(!svg.contains("<rate>"));
    }
}
