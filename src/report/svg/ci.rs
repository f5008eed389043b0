//! Lines of means with 95 % confidence intervals against a swept value, for a sweep's page.
//! A line's points that fall into one pixel column merge into one mark ([`CiLine`]), so a
//! chart draws at most a mark per pixel column and line, whatever the sweep.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::{
    escape, legend, legend_height, number, open_svg, ticks, y_axis, BOTTOM, LEFT, RIGHT,
    SERIES_COLOURS, TOP, WIDTH,
};

/// Height of a chart's plot area.
const HEIGHT: f64 = 240.0;

/// One point of a line with a confidence interval, or several merged.
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
    /// When it stands for several points, what they were.
    pub merged: Option<Merged>,
}

/// The points a merged [`CiPoint`] stands for.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Merged {
    /// How many.
    pub count: usize,
    /// Their x range.
    pub x: (f64, f64),
    /// Their means' range.
    pub means: (f64, f64),
}

/// The range of some data, `None` without data.
pub type Extent = Option<(f64, f64)>;

/// A line of [`CiPoint`]s: one policy, say.
#[derive(Clone, Debug)]
pub struct CiSeries {
    /// Its name in the legend.
    pub name: String,
    /// Its legend entry's tooltip (the raw keys and values it stands for).
    pub title: String,
    /// Its points, in x order.
    pub points: Vec<CiPoint>,
}

/// What a chart of [`CiSeries`] says on and around its axes.
pub struct CiAxes<'a> {
    /// The chart's name (`data-chart`).
    pub name: &'a str,
    /// The x axis's label, and its tooltip (the raw key).
    pub x_label: &'a str,
    /// The x label's tooltip.
    pub x_title: &'a str,
    /// The y axis's label (name and unit), and its tooltip (the raw metric).
    pub y_label: &'a str,
    /// The y label's tooltip.
    pub y_title: &'a str,
    /// The unit written after values in tooltips (empty for none).
    pub unit: &'a str,
    /// A point's x position as its tooltip gives it (the raw key and value).
    pub x_value: &'a dyn Fn(f64) -> String,
}

/// The x range a chart shows for data from `lo` to `hi` (`None` without data): categories
/// half a step beyond their first and last, numbers a little beyond theirs.
fn x_extent(data: Extent, categorical: bool) -> (f64, f64) {
    let (lo, hi) = data.unwrap_or((0.0, 1.0));
    if categorical {
        (-0.5, hi + 0.5)
    } else if hi <= lo {
        (lo - 1.0, hi + 1.0)
    } else {
        let pad = (hi - lo) * 0.04;
        (lo - pad, hi + pad)
    }
}

/// The y range a chart shows for means down to `lo` and intervals up to `hi`: from zero (every
/// value axis of a report starts at zero; docs/outputs.md), or from the lowest mean when one
/// is below it, to a little above `hi`. Interval bounds below the axis are drawn to it.
fn y_extent(data: Extent) -> (f64, f64) {
    let (lo, hi) = data.unwrap_or((0.0, 1.0));
    let lo = lo.min(0.0);
    let hi = hi.max(lo);
    if hi <= lo {
        return (lo, lo + 1.0);
    }
    let pad = (hi - lo) * 0.05;
    (if lo < 0.0 { lo - pad } else { lo }, hi + pad)
}

/// A mapping from data to a position on the page.
type Map<'a> = &'a dyn Fn(f64) -> f64;

/// The plot area's width.
const PLOT_W: f64 = WIDTH - LEFT - RIGHT;

/// A line's points as they come, gathered per pixel column of a chart whose x data run over
/// `data` (categories: one column each).
pub struct CiLine {
    extent: (f64, f64),
    categorical: bool,
    cells: BTreeMap<i64, Cell>,
}

/// The points of one pixel column of a line.
struct Cell {
    count: usize,
    x_sum: f64,
    mean_sum: f64,
    x: (f64, f64),
    means: (f64, f64),
    low: f64,
    high: f64,
    first: CiPoint,
}

impl CiLine {
    /// An empty line of a chart whose x data run over `data`.
    pub fn new(data: Extent, categorical: bool) -> CiLine {
        CiLine {
            extent: x_extent(data, categorical),
            categorical,
            cells: BTreeMap::new(),
        }
    }

    /// Adds a point; one with no finite position or mean is not drawn.
    pub fn add(&mut self, p: CiPoint) {
        if !(p.x.is_finite() && p.mean.is_finite()) {
            return;
        }
        let (lo, hi) = self.extent;
        let column = if self.categorical {
            p.x as i64
        } else {
            ((p.x - lo) / (hi - lo) * PLOT_W).floor() as i64
        };
        let (low, high) = bounds(&p);
        let cell = self.cells.entry(column).or_insert_with(|| Cell {
            count: 0,
            x_sum: 0.0,
            mean_sum: 0.0,
            x: (p.x, p.x),
            means: (p.mean, p.mean),
            low,
            high,
            first: p.clone(),
        });
        cell.count += 1;
        cell.x_sum += p.x;
        cell.mean_sum += p.mean;
        cell.x = (cell.x.0.min(p.x), cell.x.1.max(p.x));
        cell.means = (cell.means.0.min(p.mean), cell.means.1.max(p.mean));
        (cell.low, cell.high) = (cell.low.min(low), cell.high.max(high));
    }

    /// Its marks in x order: a column's point as it came, or its points merged (at their
    /// mean position and mean, the interval spanning theirs).
    pub fn points(self) -> Vec<CiPoint> {
        (self.cells.into_values())
            .map(|c| match c.count {
                1 => c.first,
                n => CiPoint {
                    x: c.x_sum / n as f64,
                    mean: c.mean_sum / n as f64,
                    low: c.low,
                    high: c.high,
                    merged: Some(Merged {
                        count: n,
                        x: c.x,
                        means: c.means,
                    }),
                },
            })
            .collect()
    }

    /// Marks merged from more than one point, and the points they stand for.
    pub fn merged(&self) -> (usize, usize) {
        (self.cells.values().filter(|c| c.count > 1)).fold((0, 0), |(m, p), c| (m + 1, p + c.count))
    }
}

/// The interval drawn for `p`: its bounds, or its mean where one is not finite.
fn bounds(p: &CiPoint) -> (f64, f64) {
    let finite_or_mean = |v: f64| if v.is_finite() { v } else { p.mean };
    (finite_or_mean(p.low), finite_or_mean(p.high))
}

/// A chart of means with 95 % confidence intervals (whiskers) against the x axis, one line
/// per series; the axes cover `data`, the x extent of the points and the y extent of their
/// means (low) and intervals (high), drawn or not. With `categories`, x values are indices
/// into them (an axis of policies, say).
pub fn ci_chart(
    axes: &CiAxes,
    series: &[CiSeries],
    categories: Option<&[String]>,
    data: (Extent, Extent),
) -> String {
    let (x_lo, x_hi) = x_extent(data.0, categories.is_some());
    let (y_lo, y_hi) = y_extent(data.1);
    let x = |v: f64| LEFT + (v - x_lo) / (x_hi - x_lo) * PLOT_W;
    let y = |v: f64| TOP + (1.0 - (v.clamp(y_lo, y_hi) - y_lo) / (y_hi - y_lo)) * HEIGHT;
    let mut svg = String::new();
    open_svg(
        &mut svg,
        TOP + HEIGHT + BOTTOM + legend_height(series.len()),
        axes.name,
        &format!(
            "{} against {}: means with 95 % confidence intervals",
            axes.y_label, axes.x_label
        ),
    );
    y_axis(
        &mut svg,
        &ticks(y_lo, y_hi, 5),
        &y,
        (axes.y_label, axes.y_title),
        HEIGHT,
    );
    x_axis(&mut svg, &x, (x_lo, x_hi), axes, categories);
    // Offset series sideways a little so their whiskers do not hide one another.
    let spread = (PLOT_W / (x_hi - x_lo)).min(60.0) * 0.3;
    let count = series.len().max(1) as f64;
    for (k, s) in series.iter().enumerate() {
        let shift = if count > 1.0 {
            (k as f64 / (count - 1.0) - 0.5) * spread
        } else {
            0.0
        };
        draw_series(&mut svg, s, k, (&|v| x(v) + shift, &y, y_lo), axes);
    }
    legend(
        &mut svg,
        series.iter().map(|s| (s.name.as_str(), s.title.as_str())),
        TOP + HEIGHT + BOTTOM,
    );
    svg.push_str("</svg>");
    svg
}

/// The x axis under the plot: category names, or round ticks over `(lo, hi)`.
fn x_axis(
    svg: &mut String,
    x: &dyn Fn(f64) -> f64,
    (lo, hi): (f64, f64),
    axes: &CiAxes,
    categories: Option<&[String]>,
) {
    let bottom = TOP + HEIGHT;
    let _ = write!(
        svg,
        r#"<line class="axis" x1="{LEFT}" y1="{bottom}" x2="{}" y2="{bottom}"/>"#,
        WIDTH - RIGHT
    );
    let x_ticks: Vec<(f64, String)> = match categories {
        Some(names) => (names.iter().enumerate())
            .map(|(i, n)| (i as f64, n.clone()))
            .collect(),
        None => (ticks(lo, hi, 8).into_iter())
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
        r#"<text class="label" x="{}" y="{}" text-anchor="middle"><title>{}</title>{}</text>"#,
        LEFT + PLOT_W / 2.0,
        bottom + 32.0,
        escape(axes.x_title),
        escape(axes.x_label)
    );
}

/// Series `s` (the `k`-th): its line through the means, then each point with its whisker
/// (cut at the axis's bottom `y_lo`, without its cap there); merged points hollow.
fn draw_series(
    svg: &mut String,
    s: &CiSeries,
    k: usize,
    (x, y, y_lo): (Map, Map, f64),
    axes: &CiAxes,
) {
    let colour = SERIES_COLOURS[k % SERIES_COLOURS.len()];
    let drawn = || (s.points.iter()).filter(|p| p.x.is_finite() && p.mean.is_finite());
    let mut d = String::new();
    for p in drawn() {
        let pen = if d.is_empty() { "M" } else { "L" };
        let _ = write!(d, "{pen}{:.1} {:.1}", x(p.x), y(p.mean));
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
    let unit = if axes.unit.is_empty() {
        String::new()
    } else {
        format!(" {}", axes.unit)
    };
    for p in drawn() {
        let px = x(p.x);
        let (lo, hi) = bounds(p);
        let (title, fill) = match p.merged {
            None => (
                format!(
                    "{}, {}: {}{unit} [{}, {}]",
                    s.name,
                    (axes.x_value)(p.x),
                    number(p.mean),
                    number(lo),
                    number(hi)
                ),
                format!(r#"fill="{colour}""#),
            ),
            Some(Merged {
                count: n,
                x: (x0, x1),
                means: (m0, m1),
            }) => (
                format!(
                    "{}: {n} points merged within a pixel, from {} to {}: means {}–{}{unit}, intervals from {} to {}",
                    s.name,
                    (axes.x_value)(x0),
                    (axes.x_value)(x1),
                    number(m0),
                    number(m1),
                    number(lo),
                    number(hi)
                ),
                format!(r##"fill="#fff" stroke="{colour}""##),
            ),
        };
        let low_cap = if lo >= y_lo {
            format!("M{:.1} {:.1}h6", px - 3.0, y(lo))
        } else {
            String::new()
        };
        let _ = write!(
            svg,
            r#"<g class="point"><title>{}</title><path class="whisker" stroke="{colour}" d="M{px:.1} {:.1}V{:.1}{low_cap}M{:.1} {:.1}h6"/><circle cx="{px:.1}" cy="{:.1}" r="3" {fill}/></g>"#,
            escape(&title),
            y(lo),
            y(hi),
            px - 3.0,
            y(hi),
            y(p.mean)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(x: f64, mean: f64) -> CiPoint {
        CiPoint {
            x,
            mean,
            low: mean - 1.0,
            high: mean + 1.0,
            merged: None,
        }
    }

    /// Points a pixel apart stay as they are; points within one pixel merge into a mark
    /// spanning them, and a chart draws a mark per column at most.
    #[test]
    fn a_lines_points_merge_within_a_pixel_column() {
        let mut line = CiLine::new(Some((0.0, 100_000.0)), false);
        for i in 0..100_000 {
            line.add(point(f64::from(i), f64::from(i % 7)));
        }
        let (merged, points) = line.merged();
        assert_eq!(points, 100_000);
        let marks = line.points();
        assert!(marks.len() <= PLOT_W as usize + 1, "{} marks", marks.len());
        assert_eq!(merged, marks.len());
        let m = &marks[1];
        let Merged {
            count: n,
            x: (x0, x1),
            means: (lo, hi),
        } = m.merged.expect("merged");
        assert!(n > 90 && x0 < m.x && m.x < x1, "{m:?}");
        assert_eq!((lo, hi, m.low, m.high), (0.0, 6.0, -1.0, 7.0));
        // Ten points over the whole axis: each drawn as it is.
        let mut line = CiLine::new(Some((0.0, 9.0)), false);
        (0..10).for_each(|i| line.add(point(f64::from(i), 1.0)));
        assert!(line.points().iter().all(|p| p.merged.is_none()));
        let x_value = |x: f64| format!("x = {x}");
        let axes = CiAxes {
            name: "c",
            x_label: "x",
            x_title: "x",
            y_label: "y",
            y_title: "y",
            unit: "",
            x_value: &x_value,
        };
        let svg = ci_chart(
            &axes,
            &[CiSeries {
                name: "s".into(),
                title: "s".into(),
                points: marks,
            }],
            None,
            (Some((0.0, 100_000.0)), Some((-1.0, 7.0))),
        );
        assert!(svg.matches("<g class=\"point\">").count() <= PLOT_W as usize + 1);
        assert!(svg.contains("points merged within a pixel"));
    }
}
