//! Static SVG charts for reports: a per-host Gantt chart of VM states, step series over time,
//! and lines with 95 % confidence intervals. Pure: data in, SVG text out. Every chart is
//! bounded by its pixels, not by its input — spans narrower than a pixel merge, series are
//! averaged per pixel column — so a run of a million spans still draws in a few megabytes.

use std::fmt::Write;

mod ci;
mod gantt;
mod merged;
pub mod peering;

pub use ci::{ci_chart, CiAxes, CiLine, CiPoint, CiSeries, Extent, Merged};
pub use gantt::{gantt, lanes, Drawn, HostSpan, Link, Mark};
pub use merged::{merged_gantt, HostRaster, MAX_BANDS};

/// Width of every chart, in SVG user units (pixels at 100 % zoom).
pub const WIDTH: f64 = 1100.0;
/// Left margin: room for host names and y-axis labels.
const LEFT: f64 = 96.0;
/// Right margin.
const RIGHT: f64 = 16.0;
/// Top margin.
const TOP: f64 = 12.0;
/// Bottom margin: room for the time axis and its label.
const BOTTOM: f64 = 40.0;

/// Colour-blind-safe colours (Okabe and Ito) for series, in the order they are used.
pub const SERIES_COLOURS: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#8C6D1F",
];

/// The colour of each lease type, in the papers' order (cancellable, suspendable, migratable,
/// non-preemptable).
pub const LEASE_COLOURS: [&str; 4] = ["#E69F00", "#0072B2", "#009E73", "#CC79A7"];

/// The lease types' names as the outputs write them, in the order of [`LEASE_COLOURS`].
pub const LEASE_TYPES: [&str; 4] = [
    "cancellable",
    "suspendable",
    "migratable",
    "non-preemptable",
];

/// Escapes text for SVG and HTML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Emulated seconds as a short duration: `45 s`, `12 min`, `3.5 h`, `2 d 6 h`.
pub fn duration(secs: f64) -> String {
    if !secs.is_finite() {
        return "–".into();
    }
    let a = secs.abs();
    let sign = if secs < 0.0 { "-" } else { "" };
    if a < 120.0 {
        format!("{sign}{} s", trim(a, 1))
    } else if a < 7_200.0 {
        format!("{sign}{} min", trim(a / 60.0, 1))
    } else if a < 172_800.0 {
        format!("{sign}{} h", trim(a / 3_600.0, 1))
    } else {
        let days = (a / 86_400.0).floor();
        let hours = ((a - days * 86_400.0) / 3_600.0).round();
        if hours == 0.0 {
            format!("{sign}{days} d")
        } else {
            format!("{sign}{days} d {hours} h")
        }
    }
}

/// A point in emulated time for an axis: its two largest non-zero parts of days, hours,
/// minutes and seconds (`0`, `45 s`, `20 h 15 min`, `1 d 6 h`), exact for round ticks.
pub fn clock(secs: f64) -> String {
    if !secs.is_finite() {
        return "–".into();
    }
    let mut rest = secs.max(0.0).round() as u64;
    if rest == 0 {
        return "0".into();
    }
    let mut parts = Vec::new();
    for (unit, size) in [("d", 86_400), ("h", 3_600), ("min", 60), ("s", 1)] {
        if rest >= size {
            parts.push(format!("{} {unit}", rest / size));
            rest %= size;
        }
    }
    parts.truncate(2);
    parts.join(" ")
}

/// `x` with at most `decimals` decimals and no trailing zeros.
pub fn trim(x: f64, decimals: usize) -> String {
    let text = format!("{x:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// A number for a label or a table: integers as such, others with four significant digits.
pub fn number(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    if x == x.trunc() && x.abs() < 1e15 {
        return format!("{x:.0}");
    }
    let digits = (3 - x.abs().log10().floor() as i32).clamp(0, 6) as usize;
    trim(x, digits)
}

/// About `want` round tick values covering `[lo, hi]` (1, 2 or 5 times a power of ten).
pub fn ticks(lo: f64, hi: f64, want: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![lo];
    }
    let raw = (hi - lo) / want.max(1) as f64;
    let power = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * power);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

/// The round step of time (seconds) that cuts `[start, end]` into at most `want` parts, as
/// [`time_ticks`] steps.
pub fn time_step(start: f64, end: f64, want: usize) -> f64 {
    let raw = (end - start) / want.max(1) as f64;
    TIME_STEPS
        .iter()
        .copied()
        .find(|s| *s >= raw)
        .unwrap_or_else(|| (raw / 2_592_000.0).ceil() * 2_592_000.0)
}

/// Round tick times (seconds) within `[start, end]`: steps of seconds, minutes, hours or days.
pub fn time_ticks(start: f64, end: f64, want: usize) -> Vec<f64> {
    if !(start.is_finite() && end.is_finite()) || end <= start {
        return vec![start];
    }
    let step = time_step(start, end, want);
    let (first, last) = ((start / step).ceil() as u64, (end / step).floor() as u64);
    (first..=last).map(|i| i as f64 * step).collect()
}

/// The steps of [`time_ticks`].
const TIME_STEPS: [f64; 22] = [
    1.0,
    2.0,
    5.0,
    10.0,
    15.0,
    30.0,
    60.0,
    120.0,
    300.0,
    600.0,
    900.0,
    1_800.0,
    3_600.0,
    7_200.0,
    10_800.0,
    21_600.0,
    43_200.0,
    86_400.0,
    172_800.0,
    432_000.0,
    604_800.0,
    1_209_600.0,
];

/// A horizontal mapping from emulated time to x.
#[derive(Copy, Clone, Debug)]
pub struct TimeScale {
    /// Time at the left edge of the plot area, seconds.
    pub start: f64,
    /// Time at the right edge, seconds (greater than `start`).
    pub end: f64,
}

impl TimeScale {
    /// The scale over `[0, end]` (at least one second wide).
    pub fn to(end: f64) -> TimeScale {
        TimeScale::between(0.0, end)
    }

    /// The scale over `[start, end]`, widened to a second when narrower.
    pub fn between(start: f64, end: f64) -> TimeScale {
        let start = if start.is_finite() {
            start.max(0.0)
        } else {
            0.0
        };
        let end = if end.is_finite() && end >= start + 1.0 {
            end
        } else {
            start + 1.0
        };
        TimeScale { start, end }
    }

    /// Whether `[from, to]` shows in the window.
    pub fn overlaps(&self, from: f64, to: f64) -> bool {
        to >= self.start && from <= self.end
    }

    /// The plot area's width.
    pub fn width(&self) -> f64 {
        WIDTH - LEFT - RIGHT
    }

    /// x of time `t`, clamped to the plot area.
    pub fn x(&self, t: f64) -> f64 {
        let f = ((t - self.start) / (self.end - self.start)).clamp(0.0, 1.0);
        LEFT + f * self.width()
    }

    /// The time one plot pixel stands for.
    pub fn per_pixel(&self) -> f64 {
        (self.end - self.start) / self.width()
    }

    /// The plot area's pixel columns.
    pub fn pixels(&self) -> usize {
        self.width().round() as usize
    }
}

/// The time axis under a plot whose bottom is at `y`.
fn time_axis(svg: &mut String, scale: &TimeScale, y: f64) {
    let _ = write!(
        svg,
        r#"<line class="axis" x1="{LEFT}" y1="{y}" x2="{}" y2="{y}"/>"#,
        LEFT + scale.width()
    );
    for t in time_ticks(scale.start, scale.end, 10) {
        let x = scale.x(t);
        let _ = write!(
            svg,
            r#"<line class="axis" x1="{x:.1}" y1="{y}" x2="{x:.1}" y2="{}"/><text class="tick" x="{x:.1}" y="{}" text-anchor="middle">{}</text>"#,
            y + 4.0,
            y + 16.0,
            escape(&clock(t))
        );
    }
    let _ = write!(
        svg,
        r#"<text class="label" x="{}" y="{}" text-anchor="middle">emulated time</text>"#,
        LEFT + scale.width() / 2.0,
        y + 32.0
    );
}

fn open_svg(svg: &mut String, height: f64, name: &str, description: &str) {
    let _ = write!(
        svg,
        r#"<svg class="chart" data-chart="{}" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" viewBox="0 0 {WIDTH} {height:.0}" role="img"><desc>{}</desc>"#,
        escape(name),
        escape(description)
    );
}

/// A series of a step function over time, averaged per pixel column ([`Resampler`]).
#[derive(Clone, Debug)]
pub struct StepSeries {
    /// Its name in the legend.
    pub name: String,
    /// Its value in each pixel column of the chart's time scale; `None` before its first point.
    pub columns: Vec<Option<f64>>,
}

/// A step function — `(time, value)` change points fed in time order, each value holding
/// until the next — averaged over each of `columns` equal slices of `[start, end]`
/// (time-weighted) as the points come: a slice's sums are kept, not the points, and they are
/// the sums a pass over all the points would make, in the same order.
pub struct Resampler {
    start: f64,
    width: f64,
    valid: bool,
    sum: Vec<f64>,
    covered: Vec<f64>,
    /// The point in force.
    last: Option<(f64, f64)>,
}

impl Resampler {
    /// An empty step function over `columns` slices of `[start, end]`.
    pub fn new(start: f64, end: f64, columns: usize) -> Resampler {
        Resampler {
            start,
            width: (end - start) / columns as f64,
            valid: columns > 0 && end > start,
            sum: vec![0.0; columns],
            covered: vec![0.0; columns],
            last: None,
        }
    }

    /// A new change point, at `t` (not before the last one's time) to `value`.
    pub fn push(&mut self, t: f64, value: f64) {
        if let Some((from, v)) = self.last.replace((t, value)) {
            self.segment(from, v, Some(t));
        }
    }

    /// Each slice's time-weighted mean, `None` for a slice before the first point.
    pub fn finish(mut self) -> Vec<Option<f64>> {
        if !self.valid {
            return vec![None; self.sum.len()];
        }
        if let Some((from, v)) = self.last {
            self.segment(from, v, None);
        }
        (self.sum.iter().zip(&self.covered))
            .map(|(s, c)| (*c > 0.0).then(|| s / c))
            .collect()
    }

    /// Adds `value` from `from` to `to` (the end when `None`) to the slices it covers.
    fn segment(&mut self, from: f64, value: f64, to: Option<f64>) {
        let columns = self.sum.len();
        if !self.valid || columns == 0 {
            return;
        }
        // The slices around the ones it covers, by index: float casts saturate, and the
        // sums below skip any slice it does not reach.
        let last = (columns - 1) as f64;
        let index = |t: f64| ((t - self.start) / self.width).floor();
        let first = (index(from) - 1.0).clamp(0.0, last) as usize;
        let end = to.map_or(last, |t| (index(t) + 1.0).clamp(0.0, last)) as usize;
        for c in first..=end {
            let a = self.start + c as f64 * self.width;
            let b = self.start + (c + 1) as f64 * self.width;
            let (lo, hi) = (from.max(a), to.map_or(b, |t| t.min(b)));
            if hi > lo {
                self.sum[c] += value * (hi - lo);
                self.covered[c] += hi - lo;
            }
        }
    }
}

/// The step function `points` averaged over each of `columns` equal slices of `[start, end]`
/// (time-weighted), `None` for a slice before the first point: what [`Resampler`] computes,
/// from all the points at once (the reference its test compares with).
#[cfg(test)]
fn resample(points: &[(f64, f64)], start: f64, end: f64, columns: usize) -> Vec<Option<f64>> {
    let mut out = vec![None; columns];
    if columns == 0 || end <= start || points.is_empty() {
        return out;
    }
    let width = (end - start) / columns as f64;
    let mut k = 0; // the point in force
    for (c, cell) in out.iter_mut().enumerate() {
        let (a, b) = (start + c as f64 * width, start + (c + 1) as f64 * width);
        while k + 1 < points.len() && points[k + 1].0 <= a {
            k += 1;
        }
        if points[0].0 > a && points[0].0 >= b {
            continue;
        }
        let (mut sum, mut covered, mut j) = (0.0, 0.0, k);
        loop {
            let from = points[j].0.max(a);
            let to = points.get(j + 1).map_or(b, |p| p.0.min(b));
            if to > from {
                sum += points[j].1 * (to - from);
                covered += to - from;
            }
            if j + 1 >= points.len() || points[j + 1].0 >= b {
                break;
            }
            j += 1;
        }
        if covered > 0.0 {
            *cell = Some(sum / covered);
        }
    }
    out
}

/// A line chart of step series over time, averaged per pixel column; `y_max` fixes the top
/// of the y axis (e.g. 100 for percents), else it fits the data.
pub fn step_chart(
    name: &str,
    scale: &TimeScale,
    series: &[StepSeries],
    y_label: &str,
    y_max: Option<f64>,
) -> String {
    const HEIGHT: f64 = 170.0;
    let sampled: Vec<&[Option<f64>]> = series.iter().map(|s| &s.columns[..]).collect();
    let data_max = sampled
        .iter()
        .flat_map(|c| c.iter())
        .flatten()
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let top = y_max.unwrap_or(if data_max > 0.0 { data_max * 1.05 } else { 1.0 });
    let y = |v: f64| TOP + (1.0 - (v / top).clamp(0.0, 1.0)) * HEIGHT;
    let mut svg = String::new();
    let legend_h = legend_height(series.len());
    open_svg(
        &mut svg,
        TOP + HEIGHT + BOTTOM + legend_h,
        name,
        &format!("{y_label} over time, one line per series"),
    );
    y_axis(&mut svg, &ticks(0.0, top, 5), &y, (y_label, ""), HEIGHT);
    for (k, line) in sampled.iter().enumerate() {
        let colour = SERIES_COLOURS[k % SERIES_COLOURS.len()];
        let dash = if k >= SERIES_COLOURS.len() {
            r#" stroke-dasharray="5 3""#
        } else {
            ""
        };
        let mut d = String::new();
        let mut pen_down = false;
        for (c, v) in line.iter().enumerate() {
            match v {
                Some(v) => {
                    let _ = write!(
                        d,
                        "{}{:.1} {:.1}",
                        if pen_down { "L" } else { "M" },
                        LEFT + c as f64 + 0.5,
                        y(*v)
                    );
                    pen_down = true;
                }
                None => pen_down = false,
            }
        }
        let _ = write!(
            svg,
            r#"<path class="line" stroke="{colour}"{dash} d="{d}"><title>{}</title></path>"#,
            escape(&series[k].name)
        );
    }
    time_axis(&mut svg, scale, TOP + HEIGHT);
    legend(
        &mut svg,
        series.iter().map(|s| (s.name.as_str(), "")),
        TOP + HEIGHT + BOTTOM,
    );
    svg.push_str("</svg>");
    svg
}

/// The y axis's grid lines, ticks and label (with a tooltip when `title` is not empty).
fn y_axis(
    svg: &mut String,
    ticks: &[f64],
    y: &dyn Fn(f64) -> f64,
    (label, title): (&str, &str),
    height: f64,
) {
    for t in ticks {
        let _ = write!(
            svg,
            r#"<line class="grid" x1="{LEFT}" y1="{0:.1}" x2="{1}" y2="{0:.1}"/><text class="tick" x="{2}" y="{0:.1}" text-anchor="end" dominant-baseline="middle">{3}</text>"#,
            y(*t),
            WIDTH - RIGHT,
            LEFT - 6.0,
            escape(&number(*t))
        );
    }
    let _ = write!(
        svg,
        r#"<text class="label" transform="translate(14 {:.1}) rotate(-90)" text-anchor="middle">{}{}</text>"#,
        TOP + height / 2.0,
        title_element(title),
        escape(label)
    );
}

/// A `<title>` (a tooltip) of `text`, or nothing when it is empty.
fn title_element(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!("<title>{}</title>", escape(text))
    }
}

const LEGEND_PER_ROW: usize = 4;

fn legend_height(entries: usize) -> f64 {
    entries.div_ceil(LEGEND_PER_ROW) as f64 * 18.0 + 4.0
}

/// A legend entry per series, `(name, tooltip)` (no tooltip when empty).
fn legend<'a>(svg: &mut String, names: impl Iterator<Item = (&'a str, &'a str)>, top: f64) {
    let column = (WIDTH - LEFT) / LEGEND_PER_ROW as f64;
    for (k, (name, title)) in names.enumerate() {
        let x = LEFT + (k % LEGEND_PER_ROW) as f64 * column;
        let y = top + (k / LEGEND_PER_ROW) as f64 * 18.0 + 9.0;
        let colour = SERIES_COLOURS[k % SERIES_COLOURS.len()];
        let dash = if k >= SERIES_COLOURS.len() {
            r#" stroke-dasharray="5 3""#
        } else {
            ""
        };
        let _ = write!(
            svg,
            r#"<g><line class="line" stroke="{colour}"{dash} x1="{x:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}"/><text class="tick" x="{:.1}" y="{y:.1}" dominant-baseline="middle">{}{}</text></g>"#,
            x + 22.0,
            x + 28.0,
            title_element(title),
            escape(name)
        );
    }
}

/// The `<defs>` every Gantt chart's striped states refer to: one stripe pattern per lease
/// type. Written once per page.
pub fn shared_defs() -> String {
    let mut svg = String::from(
        r#"<svg width="0" height="0" style="position:absolute" aria-hidden="true"><defs>"#,
    );
    for (k, colour) in LEASE_COLOURS.iter().enumerate() {
        let _ = write!(
            svg,
            r#"<pattern id="op{k}" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="4" height="4" fill="white"/><rect width="2" height="4" fill="{colour}"/></pattern>"#
        );
    }
    svg.push_str("</defs></svg>");
    svg
}

/// The CSS classes charts use (colours of lease types and states).
pub fn style() -> String {
    let mut css = String::from(
        ".chart text{font:11px system-ui,sans-serif;fill:#333}.chart .label{font-size:12px}\
         .chart .axis{stroke:#555;stroke-width:1}.chart .grid{stroke:#e4e4e4;stroke-width:1}\
         .chart .row{fill:#f4f4f6}.chart .line{fill:none;stroke-width:1.6}\
         .chart .whisker{fill:none;stroke-width:1.3}.chart .mark{fill:#d00;stroke:#600;stroke-width:.6}",
    );
    for (k, colour) in LEASE_COLOURS.iter().enumerate() {
        let _ = write!(
            css,
            ".chart .r{k}{{fill:{colour}}}.chart .b{k}{{fill:{colour};opacity:.4}}.chart .o{k}{{fill:url(#op{k})}}"
        );
    }
    css
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A resampler fed points one at a time makes exactly the sums of a pass over all of
    /// them (the page stays the same byte for byte).
    #[test]
    fn resampling_as_points_come_matches_resampling_them_all() {
        let mut seed = 11u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as f64 / f64::from(1u32 << 31)
        };
        for case in 0..300 {
            let n = case % 40;
            let mut t = next() * 50.0 - 10.0;
            let points: Vec<(f64, f64)> = (0..n)
                .map(|_| {
                    // Repeated times too (a step and its undo at one instant).
                    t += if next() < 0.2 { 0.0 } else { next() * 30.0 };
                    (t, (next() * 100.0).round())
                })
                .collect();
            let (start, end, columns) = (next() * 20.0, 50.0 + next() * 400.0, 1 + case % 97);
            let mut r = Resampler::new(start, end, columns);
            points.iter().for_each(|&(t, v)| r.push(t, v));
            let (streamed, whole) = (r.finish(), resample(&points, start, end, columns));
            let bits =
                |v: &[Option<f64>]| v.iter().map(|x| x.map(f64::to_bits)).collect::<Vec<_>>();
            assert_eq!(bits(&streamed), bits(&whole), "case {case}: {points:?}");
        }
    }

    #[test]
    fn resample_averages_a_step_function_over_time() {
        // 0 until 5, then 10: the column [0, 10) averages 5; the column [10, 20) is 10.
        let v = resample(&[(0.0, 0.0), (5.0, 10.0)], 0.0, 20.0, 2);
        assert_eq!(v, vec![Some(5.0), Some(10.0)]);
        // Nothing before the first point.
        let v = resample(&[(10.0, 4.0)], 0.0, 20.0, 2);
        assert_eq!(v, vec![None, Some(4.0)]);
        // A change in the middle of the second column.
        let v = resample(&[(0.0, 2.0), (15.0, 4.0)], 0.0, 20.0, 2);
        assert_eq!(v, vec![Some(2.0), Some(3.0)]);
    }

    #[test]
    fn time_ticks_are_round() {
        assert_eq!(
            time_ticks(0.0, 86_400.0, 4),
            vec![0.0, 21_600.0, 43_200.0, 64_800.0, 86_400.0]
        );
        assert_eq!(
            ticks(0.0, 100.0, 5),
            vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
        );
        assert_eq!(clock(20.25 * 3_600.0), "20 h 15 min");
        assert_eq!(clock(86_400.0 + 6.0 * 3_600.0), "1 d 6 h");
        assert_eq!(clock(0.0), "0");
        assert_eq!(duration(90.0), "90 s");
        assert_eq!(duration(5_400.0), "90 min");
        assert_eq!(duration(3.0 * 86_400.0 + 7_200.0), "3 d 2 h");
    }
}
