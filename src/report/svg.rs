//! Static SVG charts for reports: a per-host Gantt chart of VM states, step series over time,
//! and lines with 95 % confidence intervals. Pure: data in, SVG text out. Every chart is
//! bounded by its pixels, not by its input — spans narrower than a pixel merge, series are
//! averaged per pixel column — so a run of a million spans still draws in a few megabytes.

use std::collections::{BTreeSet, BinaryHeap};
use std::fmt::Write;

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

/// Round tick times (seconds) within `[start, end]`: steps of seconds, minutes, hours or days.
pub fn time_ticks(start: f64, end: f64, want: usize) -> Vec<f64> {
    const STEPS: [f64; 22] = [
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
    if !(start.is_finite() && end.is_finite()) || end <= start {
        return vec![start];
    }
    let raw = (end - start) / want.max(1) as f64;
    let step = STEPS
        .iter()
        .copied()
        .find(|s| *s >= raw)
        .unwrap_or_else(|| (raw / 2_592_000.0).ceil() * 2_592_000.0);
    let (first, last) = ((start / step).ceil() as u64, (end / step).floor() as u64);
    (first..=last).map(|i| i as f64 * step).collect()
}

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

/// A state a VM spends on a host, grouped by how the Gantt chart draws it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Drawn {
    /// Booting: drawn pale.
    Booting,
    /// Running: drawn solid.
    Running,
    /// A preemption operation (paused, suspending, resuming, migrating): drawn striped.
    Operation,
}

impl Drawn {
    /// How a state of `intervals.csv` is drawn on its host, or `None` for states that hold
    /// no place on the host (pending, suspended).
    pub fn of(state: &str) -> Option<Drawn> {
        match state {
            "booting" => Some(Drawn::Booting),
            "running" => Some(Drawn::Running),
            "paused" | "pausing" | "suspending" | "resuming" | "migrating" => {
                Some(Drawn::Operation)
            }
            _ => None,
        }
    }

    fn class(self) -> char {
        match self {
            Drawn::Booting => 'b',
            Drawn::Running => 'r',
            Drawn::Operation => 'o',
        }
    }
}

/// One span of one VM instance on a host, for the Gantt chart.
#[derive(Clone, Debug)]
pub struct HostSpan {
    /// The host's index in its cluster.
    pub host: u32,
    /// Which VM instance: spans of one instance share a lane. Index into the caller's names.
    pub instance: usize,
    /// The lease type's index in [`LEASE_TYPES`].
    pub lease: usize,
    /// The state's name as in `intervals.csv` (shared: a chart holds a span per VM state).
    pub state: std::rc::Rc<str>,
    /// How it is drawn.
    pub drawn: Drawn,
    /// Start, seconds.
    pub start: f64,
    /// End, seconds (≥ start).
    pub end: f64,
}

/// A preemption to mark on the Gantt chart.
#[derive(Clone, Debug)]
pub struct Mark {
    /// The host it happened on.
    pub host: u32,
    /// The VM instance it hit (its lane).
    pub instance: usize,
    /// When, seconds.
    pub at: f64,
    /// What the tooltip says.
    pub text: String,
}

/// Assigns each VM instance on a host a lane so that no two instances in one lane overlap,
/// using as few lanes as the most instances alive at once (intervals sorted by start, each
/// into the lowest free lane). Returns the lane of each of `lifetimes` (start, end) and the
/// number of lanes.
pub fn lanes(lifetimes: &[(f64, f64)]) -> (Vec<usize>, usize) {
    let mut order: Vec<usize> = (0..lifetimes.len()).collect();
    // Ties by end, so that an instant instance frees its lane for one starting then.
    order.sort_by(|&a, &b| {
        let (x, y) = (lifetimes[a], lifetimes[b]);
        x.0.total_cmp(&y.0)
            .then(x.1.total_cmp(&y.1))
            .then(a.cmp(&b))
    });
    let mut lane_of = vec![0; lifetimes.len()];
    let mut free: BTreeSet<usize> = BTreeSet::new();
    // Busy lanes by end time (min-heap through Reverse on the bit pattern of a finite,
    // non-negative f64, which orders like the number).
    let mut busy: BinaryHeap<std::cmp::Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut used = 0;
    for i in order {
        let (start, end) = lifetimes[i];
        while let Some(std::cmp::Reverse((e, lane))) = busy.peek().copied() {
            if f64::from_bits(e) <= start {
                busy.pop();
                free.insert(lane);
            } else {
                break;
            }
        }
        let lane = match free.pop_first() {
            Some(l) => l,
            None => {
                used += 1;
                used - 1
            }
        };
        lane_of[i] = lane;
        busy.push(std::cmp::Reverse((end.max(start).max(0.0).to_bits(), lane)));
    }
    (lane_of, used)
}

/// A Gantt chart of one cluster: one row per host (hosts with no VM included when listed in
/// `hosts`), one lane per VM alive at once, VM states coloured by lease type; `marks` as
/// red triangles. `names` labels instances in tooltips.
pub fn gantt(
    name: &str,
    scale: &TimeScale,
    hosts: &[u32],
    spans: &[HostSpan],
    marks: &[Mark],
    names: &[String],
) -> String {
    // Each instance's lifetime on its host, then lanes per host.
    let mut lifetime: Vec<(f64, f64)> = vec![(f64::INFINITY, f64::NEG_INFINITY); names.len()];
    let mut host_of: Vec<u32> = vec![0; names.len()];
    for s in spans {
        let l = &mut lifetime[s.instance];
        *l = (l.0.min(s.start), l.1.max(s.end));
        host_of[s.instance] = s.host;
    }
    let mut instances_of: std::collections::BTreeMap<u32, Vec<usize>> =
        hosts.iter().map(|h| (*h, Vec::new())).collect();
    for (i, l) in lifetime.iter().enumerate() {
        if l.0.is_finite() {
            instances_of.entry(host_of[i]).or_default().push(i);
        }
    }
    let mut lane = vec![0usize; names.len()];
    let mut rows: Vec<(u32, usize)> = Vec::with_capacity(instances_of.len());
    for (host, instances) in &instances_of {
        let spans_of: Vec<(f64, f64)> = instances.iter().map(|i| lifetime[*i]).collect();
        let (lanes_of, count) = lanes(&spans_of);
        for (i, l) in instances.iter().zip(lanes_of) {
            lane[*i] = l;
        }
        rows.push((*host, count.max(1)));
    }
    let total_lanes: usize = rows.iter().map(|r| r.1).sum();
    // Lanes as tall as fit about 600 px, between 1 and 10 px; a gap between hosts when room.
    let lane_h = (600.0 / total_lanes.max(1) as f64).clamp(1.0, 10.0);
    let gap = if lane_h >= 3.0 { 2.0 } else { 0.0 };
    let mut row_top = std::collections::BTreeMap::new();
    let mut y = TOP;
    for (host, count) in &rows {
        row_top.insert(*host, y);
        y += *count as f64 * lane_h + gap;
    }
    let plot_bottom = y;
    let mut svg = String::new();
    open_svg(
        &mut svg,
        plot_bottom + BOTTOM,
        name,
        &format!(
            "Gantt chart of {name}: {} hosts, VM states coloured by lease type",
            rows.len()
        ),
    );
    // Host labels and row backgrounds; labels thinned so they never overlap.
    let label_every = (12.0 / (plot_bottom - TOP).max(1.0) * rows.len() as f64).ceil() as usize;
    for (k, (host, count)) in rows.iter().enumerate() {
        let top = row_top[host];
        let h = *count as f64 * lane_h;
        if k % 2 == 1 {
            let _ = write!(
                svg,
                r#"<rect class="row" x="{LEFT}" y="{top:.1}" width="{:.1}" height="{h:.1}"/>"#,
                scale.width()
            );
        }
        if k % label_every.max(1) == 0 {
            let _ = write!(
                svg,
                r#"<text class="tick" x="{}" y="{:.1}" text-anchor="end" dominant-baseline="middle">host {host}</text>"#,
                LEFT - 6.0,
                top + h / 2.0
            );
        }
    }
    // Spans by lane, merged within a pixel.
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by(|&a, &b| {
        let (sa, sb) = (&spans[a], &spans[b]);
        (sa.host, lane[sa.instance])
            .cmp(&(sb.host, lane[sb.instance]))
            .then(sa.start.total_cmp(&sb.start))
    });
    let mut run: Option<Run> = None;
    for i in order {
        let s = &spans[i];
        let Some(top) = row_top
            .get(&s.host)
            .filter(|_| scale.overlaps(s.start, s.end))
        else {
            continue;
        };
        let y = top + lane[s.instance] as f64 * lane_h;
        let (x0, x1) = (scale.x(s.start), scale.x(s.end));
        let class = (s.lease, s.drawn.class());
        if let Some(r) = &mut run {
            let same_lane = r.y == y;
            if same_lane && r.class == class && x0 - r.x1 < 0.5 {
                r.x1 = r.x1.max(x1);
                r.count += 1;
                r.end = r.end.max(s.end);
                continue;
            }
            if same_lane && x1 - x0 < 1.0 && x0 < r.x1 + 1.0 {
                // Narrower than a pixel and inside the last drawn one: counted, not drawn.
                r.count += 1;
                r.end = r.end.max(s.end);
                continue;
            }
            r.draw(&mut svg, lane_h);
        }
        run = Some(Run {
            x0,
            x1,
            y,
            class,
            count: 1,
            first: format!(
                "{} · {} · {}",
                names[s.instance],
                LEASE_TYPES[s.lease.min(3)],
                s.state
            ),
            start: s.start,
            end: s.end,
        });
    }
    if let Some(r) = &run {
        r.draw(&mut svg, lane_h);
    }
    for m in marks {
        let Some(top) = row_top.get(&m.host).filter(|_| scale.overlaps(m.at, m.at)) else {
            continue;
        };
        let y = top + lane[m.instance] as f64 * lane_h;
        let x = scale.x(m.at);
        let _ = write!(
            svg,
            r#"<path class="mark" d="M{:.1} {:.1}l4 -7h-8z"><title>{}</title></path>"#,
            x,
            y + lane_h.min(4.0),
            escape(&m.text)
        );
    }
    time_axis(&mut svg, scale, plot_bottom);
    svg.push_str("</svg>");
    svg
}

/// A run of merged spans in one lane, drawn as one rectangle.
struct Run {
    x0: f64,
    x1: f64,
    y: f64,
    class: (usize, char),
    count: usize,
    first: String,
    start: f64,
    end: f64,
}

impl Run {
    fn draw(&self, svg: &mut String, lane_h: f64) {
        let width = (self.x1 - self.x0).max(0.6);
        let title = if self.count == 1 {
            format!(
                "{} {}–{}",
                self.first,
                duration(self.start),
                duration(self.end)
            )
        } else {
            format!(
                "{} spans, the first {}, {}–{}",
                self.count,
                self.first,
                duration(self.start),
                duration(self.end)
            )
        };
        let _ = write!(
            svg,
            r#"<rect class="{}{}" x="{:.1}" y="{:.1}" width="{width:.1}" height="{:.1}"><title>{}</title></rect>"#,
            self.class.1,
            self.class.0,
            self.x0,
            self.y,
            (lane_h - if lane_h >= 3.0 { 0.5 } else { 0.0 }).max(0.5),
            escape(&title)
        );
    }
}

/// A series of a step function over time: `(time, value)` change points, each value holding
/// until the next point.
#[derive(Clone, Debug)]
pub struct StepSeries {
    /// Its name in the legend.
    pub name: String,
    /// Change points in time order.
    pub points: Vec<(f64, f64)>,
}

/// The step function `points` averaged over each of `columns` equal slices of `[start, end]`
/// (time-weighted), `None` for a slice before the first point.
pub fn resample(points: &[(f64, f64)], start: f64, end: f64, columns: usize) -> Vec<Option<f64>> {
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
    let columns = scale.width().round() as usize;
    let sampled: Vec<Vec<Option<f64>>> = series
        .iter()
        .map(|s| resample(&s.points, scale.start, scale.end, columns))
        .collect();
    let data_max = sampled
        .iter()
        .flatten()
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
    y_axis(&mut svg, &ticks(0.0, top, 5), &y, y_label, HEIGHT);
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
        series.iter().map(|s| s.name.as_str()),
        TOP + HEIGHT + BOTTOM,
    );
    svg.push_str("</svg>");
    svg
}

fn y_axis(svg: &mut String, ticks: &[f64], y: &dyn Fn(f64) -> f64, label: &str, height: f64) {
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
        r#"<text class="label" transform="translate(14 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        TOP + height / 2.0,
        escape(label)
    );
}

const LEGEND_PER_ROW: usize = 4;

fn legend_height(entries: usize) -> f64 {
    entries.div_ceil(LEGEND_PER_ROW) as f64 * 18.0 + 4.0
}

fn legend<'a>(svg: &mut String, names: impl Iterator<Item = &'a str>, top: f64) {
    let column = (WIDTH - LEFT) / LEGEND_PER_ROW as f64;
    for (k, name) in names.enumerate() {
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
            r#"<line class="line" stroke="{colour}"{dash} x1="{x:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}"/><text class="tick" x="{:.1}" y="{y:.1}" dominant-baseline="middle">{}</text>"#,
            x + 22.0,
            x + 28.0,
            escape(name)
        );
    }
}

/// One point of a line with a confidence interval.
#[derive(Clone, Debug)]
pub struct CiPoint {
    /// Position on the x axis: a number, or the index of a category.
    pub x: f64,
    /// The mean.
    pub mean: f64,
    /// The interval's bounds (equal to the mean when it has none).
    pub low: f64,
    /// Upper bound.
    pub high: f64,
}

/// A line of [`CiPoint`]s: one policy, say.
#[derive(Clone, Debug)]
pub struct CiSeries {
    /// Its name in the legend.
    pub name: String,
    /// Its points, in x order.
    pub points: Vec<CiPoint>,
}

/// A chart of means with 95 % confidence intervals (whiskers) against `x_label`, one line per
/// series. With `categories`, x values are indices into them (an axis of policies, say).
pub fn ci_chart(
    name: &str,
    x_label: &str,
    y_label: &str,
    series: &[CiSeries],
    categories: Option<&[String]>,
) -> String {
    const HEIGHT: f64 = 240.0;
    let finite = |v: f64| v.is_finite();
    let xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.x))
        .filter(|v| finite(*v))
        .collect();
    let ys: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().flat_map(|p| [p.low, p.high, p.mean]))
        .filter(|v| finite(*v))
        .collect();
    let (mut x_lo, mut x_hi) = min_max(&xs).unwrap_or((0.0, 1.0));
    if categories.is_some() {
        (x_lo, x_hi) = (-0.5, x_hi + 0.5);
    } else if x_hi <= x_lo {
        (x_lo, x_hi) = (x_lo - 1.0, x_hi + 1.0);
    } else {
        let pad = (x_hi - x_lo) * 0.04;
        (x_lo, x_hi) = (x_lo - pad, x_hi + pad);
    }
    let (mut y_lo, mut y_hi) = min_max(&ys).unwrap_or((0.0, 1.0));
    // From zero when the data are all of one sign and not far from it, as the papers draw.
    if y_lo > 0.0 && y_lo < 0.5 * y_hi {
        y_lo = 0.0;
    }
    if y_hi <= y_lo {
        (y_lo, y_hi) = (y_lo - 1.0, y_hi + 1.0);
    } else {
        let pad = (y_hi - y_lo) * 0.05;
        y_hi += pad;
        if y_lo != 0.0 {
            y_lo -= pad;
        }
    }
    let plot_w = WIDTH - LEFT - RIGHT;
    let x = |v: f64| LEFT + (v - x_lo) / (x_hi - x_lo) * plot_w;
    let y = |v: f64| TOP + (1.0 - (v - y_lo) / (y_hi - y_lo)) * HEIGHT;
    let mut svg = String::new();
    let legend_h = legend_height(series.len());
    open_svg(
        &mut svg,
        TOP + HEIGHT + BOTTOM + legend_h,
        name,
        &format!("{y_label} against {x_label}: means with 95 % confidence intervals"),
    );
    y_axis(&mut svg, &ticks(y_lo, y_hi, 5), &y, y_label, HEIGHT);
    let bottom = TOP + HEIGHT;
    let _ = write!(
        svg,
        r#"<line class="axis" x1="{LEFT}" y1="{bottom}" x2="{}" y2="{bottom}"/>"#,
        WIDTH - RIGHT
    );
    let x_ticks: Vec<(f64, String)> = match categories {
        Some(names) => names
            .iter()
            .enumerate()
            .map(|(i, n)| (i as f64, n.clone()))
            .collect(),
        None => ticks(x_lo, x_hi, 8)
            .into_iter()
            .map(|t| (t, number(t)))
            .collect(),
    };
    for (t, text) in x_ticks {
        let _ = write!(
            svg,
            r#"<line class="axis" x1="{0:.1}" y1="{bottom}" x2="{0:.1}" y2="{1}"/><text class="tick" x="{0:.1}" y="{2}" text-anchor="middle">{3}</text>"#,
            x(t),
            bottom + 4.0,
            bottom + 16.0,
            escape(&text)
        );
    }
    let _ = write!(
        svg,
        r#"<text class="label" x="{}" y="{}" text-anchor="middle">{}</text>"#,
        LEFT + plot_w / 2.0,
        bottom + 32.0,
        escape(x_label)
    );
    // Offset series sideways a little so their whiskers do not hide one another.
    let spread = (plot_w / (x_hi - x_lo)).min(60.0) * 0.3;
    let count = series.len().max(1) as f64;
    for (k, s) in series.iter().enumerate() {
        let colour = SERIES_COLOURS[k % SERIES_COLOURS.len()];
        let shift = if count > 1.0 {
            (k as f64 / (count - 1.0) - 0.5) * spread
        } else {
            0.0
        };
        let mut d = String::new();
        for p in s.points.iter().filter(|p| finite(p.x) && finite(p.mean)) {
            let _ = write!(
                d,
                "{}{:.1} {:.1}",
                if d.is_empty() { "M" } else { "L" },
                x(p.x) + shift,
                y(p.mean)
            );
        }
        let dash = if k >= SERIES_COLOURS.len() {
            r#" stroke-dasharray="5 3""#
        } else {
            ""
        };
        let _ = write!(
            svg,
            r#"<path class="line" stroke="{colour}"{dash} d="{d}"/>"#
        );
        for p in s.points.iter().filter(|p| finite(p.x) && finite(p.mean)) {
            let px = x(p.x) + shift;
            let (lo, hi) = (
                if finite(p.low) { p.low } else { p.mean },
                if finite(p.high) { p.high } else { p.mean },
            );
            let _ = write!(
                svg,
                r#"<g class="point"><title>{}: {} [{}, {}]</title><path class="whisker" stroke="{colour}" d="M{px:.1} {:.1}V{:.1}M{:.1} {:.1}h6M{:.1} {:.1}h6"/><circle cx="{px:.1}" cy="{:.1}" r="3" fill="{colour}"/></g>"#,
                escape(&s.name),
                number(p.mean),
                number(lo),
                number(hi),
                y(lo),
                y(hi),
                px - 3.0,
                y(lo),
                px - 3.0,
                y(hi),
                y(p.mean)
            );
        }
    }
    legend(
        &mut svg,
        series.iter().map(|s| s.name.as_str()),
        bottom + BOTTOM,
    );
    svg.push_str("</svg>");
    svg
}

fn min_max(values: &[f64]) -> Option<(f64, f64)> {
    let mut it = values.iter().copied();
    let first = it.next()?;
    Some(it.fold((first, first), |(lo, hi), v| (lo.min(v), hi.max(v))))
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

    #[test]
    fn lanes_use_as_many_as_are_alive_at_once_and_never_overlap() {
        // Brute force: the number of lanes equals the largest number of intervals covering
        // a point, and intervals in one lane are disjoint.
        let mut seed = 7u64;
        for _ in 0..200 {
            let n = (seed % 30) as usize + 1;
            let mut spans = Vec::new();
            for _ in 0..n {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let start = (seed >> 40) as f64 % 100.0;
                let len = ((seed >> 20) % 30) as f64;
                spans.push((start, start + len));
            }
            let (lane, count) = lanes(&spans);
            // Alive just after each start; an instant instance at s meets those alive
            // strictly around s.
            let most = spans
                .iter()
                .map(|&(s, e)| {
                    if s < e {
                        spans.iter().filter(|(a, b)| *a <= s && s < *b).count()
                    } else {
                        1 + spans.iter().filter(|(a, b)| *a < s && s < *b).count()
                    }
                })
                .max()
                .unwrap_or(0);
            assert_eq!(count, most, "{count} lanes for {most} at once");
            for i in 0..n {
                for j in 0..i {
                    if lane[i] == lane[j] {
                        let (a, b) = (spans[i], spans[j]);
                        assert!(a.1 <= b.0 || b.1 <= a.0, "{a:?} and {b:?} share a lane");
                    }
                }
            }
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
    fn gantt_merges_spans_narrower_than_a_pixel() {
        // 10 000 back-to-back 1 s spans of one VM over 10 000 s: far fewer rectangles than
        // spans (the plot is under 1 000 px wide), and every one present in the count.
        let spans: Vec<HostSpan> = (0..10_000)
            .map(|i| HostSpan {
                host: 0,
                instance: 0,
                lease: (i / 2_500) as usize,
                state: "running".into(),
                drawn: Drawn::Running,
                start: i as f64,
                end: i as f64 + 1.0,
            })
            .collect();
        let svg = gantt(
            "c",
            &TimeScale::to(10_000.0),
            &[0],
            &spans,
            &[],
            &["r".to_string()],
        );
        let rects = svg.matches("<rect class=\"r").count();
        assert!((4..=8).contains(&rects), "{rects} rectangles");
        assert!(svg.contains("2500 spans"), "merged count missing");
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
