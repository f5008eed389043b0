//! Peering between Grids drawn: the negotiation outcomes per Grid (from `summary.json`),
//! offers by outcome over time and the prices offered and agreed over time (from a trace),
//! and the money each Grid paid each other. Bounded by pixels like every chart here: time is
//! binned, prices are drawn a mark per occupied cell, the matrix has a cell per pair of the
//! first [`MAX_GRIDS`] Grids.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::{
    duration, escape, number, open_svg, ticks, time_axis, title_element, y_axis, TimeScale, BOTTOM,
    LEFT, RIGHT, TOP, WIDTH,
};

/// Grids a money matrix or an outcome chart draws at most.
pub const MAX_GRIDS: usize = 30;

/// Time bins of an outcomes-over-time chart.
pub const TIME_BINS: usize = 80;

/// Marks a price chart draws at most: past it, its cells grow until they fit.
pub const MAX_PRICE_MARKS: usize = 6_000;

/// The outcomes of an offered request (`igemu trace --negotiations`'s `outcome`), with a
/// colour each and the words a legend gives them.
pub const OUTCOMES: [(&str, &str, &str); 6] = [
    (
        "accepted",
        "#009E73",
        "accepted (redirected at the offered price)",
    ),
    ("countered-taken", "#0072B2", "counter-offer taken"),
    ("countered-declined", "#56B4E9", "counter-offer declined"),
    ("rejected", "#D55E00", "rejected"),
    ("timed-out", "#E69F00", "timed out"),
    ("pending", "#999999", "pending at the end"),
];

/// A row of coloured swatches with their names, under a chart at `top`.
fn swatches(svg: &mut String, entries: &[(&str, &str)], top: f64) -> f64 {
    const PER_ROW: usize = 3;
    let column = (WIDTH - LEFT) / PER_ROW as f64;
    for (k, (colour, name)) in entries.iter().enumerate() {
        let x = LEFT + (k % PER_ROW) as f64 * column;
        let y = top + (k / PER_ROW) as f64 * 18.0 + 4.0;
        let _ = write!(
            svg,
            r#"<rect x="{x:.1}" y="{y:.1}" width="14" height="10" fill="{colour}"/><text class="tick" x="{:.1}" y="{:.1}" dominant-baseline="middle">{}</text>"#,
            x + 20.0,
            y + 5.0,
            escape(name)
        );
    }
    entries.len().div_ceil(PER_ROW) as f64 * 18.0 + 6.0
}

/// Time bins of `step` seconds from `origin` over a chart's time scale: offered requests
/// counted per bin and outcome ([`OUTCOMES`]).
#[derive(Clone, Debug)]
pub struct TimeBins {
    /// The first bin's start, seconds.
    pub origin: f64,
    /// A bin's length, seconds.
    pub step: f64,
    /// Per bin, the count of each outcome.
    pub counts: Vec<[u64; 6]>,
}

impl TimeBins {
    /// Empty bins of a round length over `scale`, at most [`TIME_BINS`] of them.
    pub fn over(scale: &TimeScale) -> TimeBins {
        let step = super::time_step(scale.start, scale.end, TIME_BINS);
        let origin = (scale.start / step).floor() * step;
        let bins = (((scale.end - origin) / step).ceil().max(1.0) as usize).min(4 * TIME_BINS);
        TimeBins {
            origin,
            step,
            counts: vec![[0; 6]; bins],
        }
    }

    /// Counts a request first offered at `t` that ended in outcome `o`.
    pub fn add(&mut self, t: f64, o: usize) {
        let last = self.counts.len() - 1;
        let b = (((t - self.origin) / self.step).floor().max(0.0) as usize).min(last);
        self.counts[b][o] += 1;
    }
}

/// Offered requests by outcome over time: per bin, a stacked bar of how many requests first
/// offered in it ended in each outcome ([`OUTCOMES`]).
pub fn outcomes_over_time(name: &str, scale: &TimeScale, bins: &TimeBins) -> String {
    const HEIGHT: f64 = 240.0;
    let most = (bins.counts.iter())
        .map(|b| b.iter().sum::<u64>())
        .max()
        .unwrap_or(0);
    let top = (most.max(1)) as f64 * 1.05;
    let y = |v: f64| TOP + (1.0 - (v / top).clamp(0.0, 1.0)) * HEIGHT;
    let mut svg = String::new();
    let legend_h = OUTCOMES.len().div_ceil(3) as f64 * 18.0 + 6.0;
    open_svg(
        &mut svg,
        TOP + HEIGHT + BOTTOM + legend_h,
        name,
        "requests offered to peers over time, stacked by how their negotiation ended",
    );
    let label = format!("offered per {} (count)", duration(bins.step));
    y_axis(
        &mut svg,
        &ticks(0.0, top, 5),
        &y,
        (
            &label,
            "requests offered to a peer, each counted in the bin of its negotiation's first message",
        ),
        HEIGHT,
    );
    for (b, counts) in bins.counts.iter().enumerate() {
        let total: u64 = counts.iter().sum();
        if total == 0 {
            continue;
        }
        let t0 = bins.origin + b as f64 * bins.step;
        let t1 = t0 + bins.step;
        let (x0, x1) = (scale.x(t0), scale.x(t1));
        let mut title = format!("{} – {}: {total} offered", duration(t0), duration(t1));
        for (o, n) in counts.iter().enumerate().filter(|(_, n)| **n > 0) {
            let _ = write!(title, ", {n} {}", OUTCOMES[o].0);
        }
        let _ = write!(svg, "<g><title>{}</title>", escape(&title));
        let mut below = 0u64;
        for (o, n) in counts.iter().enumerate().filter(|(_, n)| **n > 0) {
            let (ya, yb) = (y((below + n) as f64), y(below as f64));
            let _ = write!(
                svg,
                r#"<rect x="{:.1}" y="{ya:.1}" width="{:.1}" height="{:.1}" fill="{}"/>"#,
                x0 + 0.5,
                (x1 - x0 - 1.0).max(0.5),
                (yb - ya).max(0.5),
                OUTCOMES[o].1
            );
            below += n;
        }
        svg.push_str("</g>");
    }
    time_axis(&mut svg, scale, TOP + HEIGHT);
    let entries: Vec<(&str, &str)> = OUTCOMES.iter().map(|(_, c, n)| (*c, *n)).collect();
    swatches(&mut svg, &entries, TOP + HEIGHT + BOTTOM);
    svg.push_str("</svg>");
    svg
}

/// A price of one negotiation at one time: offered (the opening price) or agreed (the
/// price a request was redirected at).
#[derive(Copy, Clone, Debug)]
pub struct PricePoint {
    /// Emulated seconds.
    pub t: f64,
    /// Price per resource unit.
    pub price: f64,
    /// Whether it was agreed (else offered).
    pub agreed: bool,
}

/// The prices of a price chart's cell: how many, their lowest and highest, their first and
/// last time.
type Cell = (usize, f64, f64, f64, f64);

/// The occupied cells of a price chart, by (agreed, column, row).
type Cells = BTreeMap<(bool, i64, i64), Cell>;

/// Offered and agreed unit prices over time, a mark per occupied cell of the plot (hollow:
/// offered; filled: agreed), cells growing from one pixel until at most
/// [`MAX_PRICE_MARKS`] are drawn; the y axis from zero.
pub fn prices_over_time(name: &str, scale: &TimeScale, points: &[PricePoint]) -> String {
    const HEIGHT: f64 = 240.0;
    let most = points
        .iter()
        .map(|p| p.price)
        .filter(|p| p.is_finite())
        .fold(0.0f64, f64::max);
    let top = if most > 0.0 { most * 1.08 } else { 1.0 };
    let y = |v: f64| TOP + (1.0 - (v / top).clamp(0.0, 1.0)) * HEIGHT;
    let (cell, cells) = price_cells(points, scale, &y);
    let mut svg = String::new();
    open_svg(
        &mut svg,
        TOP + HEIGHT + BOTTOM + 24.0,
        name,
        "unit prices offered and agreed in negotiations over time",
    );
    y_axis(
        &mut svg,
        &ticks(0.0, top, 5),
        &y,
        (
            "price (currency units/core-s)",
            "the unit price: currency units per resource unit, one core for one second (paper 004)",
        ),
        HEIGHT,
    );
    for (key, prices) in &cells {
        price_mark(&mut svg, *key, prices, cell);
    }
    time_axis(&mut svg, scale, TOP + HEIGHT);
    price_legend(&mut svg, TOP + HEIGHT + BOTTOM + 8.0);
    if cell > 1.0 {
        let _ = write!(svg, r#"<desc>merged into cells of {cell} pixels</desc>"#);
    }
    svg.push_str("</svg>");
    svg
}

/// The prices of `points` within `scale` (at height `y` of a price) gathered into square
/// cells, the cells doubling from one pixel until at most [`MAX_PRICE_MARKS`] are occupied
/// (or they are 64 pixels): the cells' size and the occupied cells.
fn price_cells(points: &[PricePoint], scale: &TimeScale, y: &dyn Fn(f64) -> f64) -> (f64, Cells) {
    let mut cell = 1.0;
    loop {
        let mut cells = Cells::new();
        for p in points.iter().filter(|p| p.price.is_finite()) {
            if !scale.overlaps(p.t, p.t) {
                continue;
            }
            let key = (
                p.agreed,
                (scale.x(p.t) / cell).floor() as i64,
                (y(p.price) / cell).floor() as i64,
            );
            let c = cells.entry(key).or_insert((0, p.price, p.price, p.t, p.t));
            c.0 += 1;
            (c.1, c.2) = (c.1.min(p.price), c.2.max(p.price));
            (c.3, c.4) = (c.3.min(p.t), c.4.max(p.t));
        }
        if cells.len() <= MAX_PRICE_MARKS || cell >= 64.0 {
            return (cell, cells);
        }
        cell *= 2.0;
    }
}

/// The mark of one occupied cell (of `cell` pixels) of a price chart, titled with its prices.
fn price_mark(
    svg: &mut String,
    (agreed, cx, cy): (bool, i64, i64),
    &(n, lo, hi, t0, t1): &Cell,
    cell: f64,
) {
    let (px, py) = ((cx as f64 + 0.5) * cell, (cy as f64 + 0.5) * cell);
    let what = if agreed { "agreed" } else { "offered" };
    let title = if n == 1 {
        format!("{what} {} at {}", number(lo), duration(t0))
    } else {
        format!(
            "{n} {what}, {}–{} from {} to {}",
            number(lo),
            number(hi),
            duration(t0),
            duration(t1)
        )
    };
    let style = if agreed {
        r##"fill="#009E73""##
    } else {
        r##"fill="none" stroke="#0072B2" stroke-width="1.2""##
    };
    let _ = write!(
        svg,
        r#"<circle cx="{px:.1}" cy="{py:.1}" r="2.6" {style}>{}</circle>"#,
        title_element(&title)
    );
}

/// A price chart's key at height `key_y`: the hollow mark offered, the filled one agreed.
fn price_legend(svg: &mut String, key_y: f64) {
    let _ = write!(
        svg,
        r##"<circle cx="{0}" cy="{key_y}" r="3" fill="none" stroke="#0072B2" stroke-width="1.2"/><text class="tick" x="{1}" y="{key_y}" dominant-baseline="middle">offered (the opening price: the contract's minimum)</text><circle cx="{2}" cy="{key_y}" r="3" fill="#009E73"/><text class="tick" x="{3}" y="{key_y}" dominant-baseline="middle">agreed (the price a request was redirected at)</text>"##,
        LEFT + 6.0,
        LEFT + 14.0,
        LEFT + 420.0,
        LEFT + 428.0
    );
}

/// Money paid between Grids: a cell per (payer row, payee column) of `grids`, shaded by
/// the amount (the darkest: the most) and labelled with it, in `unit`; row and column totals
/// at the ends.
pub fn money_matrix(name: &str, grids: &[String], paid: &[Vec<f64>], unit: &str) -> String {
    let m = Matrix::new(grids, paid, unit);
    let height = m.head + (m.n as f64 + 1.0) * m.cell_h + 34.0;
    let mut svg = String::new();
    open_svg(
        &mut svg,
        height,
        name,
        &format!("money paid by each Grid (rows) to each other (columns), {unit}"),
    );
    m.heads(&mut svg);
    let mut received = vec![0.0; m.n];
    for i in 0..m.n {
        m.row(&mut svg, i, &mut received);
    }
    m.received_row(&mut svg, &received);
    let _ = write!(
        svg,
        r#"<text class="label" x="{LEFT}" y="{:.1}">in {}</text>"#,
        height - 10.0,
        escape(unit)
    );
    svg.push_str("</svg>");
    svg
}

/// A money matrix to draw: what it shows and where its parts go (pixels).
struct Matrix<'a> {
    /// The Grids, payers by row and payees by column.
    grids: &'a [String],
    /// The amounts, `paid[payer][payee]`.
    paid: &'a [Vec<f64>],
    /// The amounts' unit.
    unit: &'a str,
    /// The largest finite amount drawn (the darkest cell).
    most: f64,
    /// Grids drawn: the first [`MAX_GRIDS`].
    n: usize,
    /// A cell's width.
    cell_w: f64,
    /// A cell's height.
    cell_h: f64,
    /// The column heads' height, above the first row.
    head: f64,
    /// The first column's left edge.
    x0: f64,
    /// The middle of the column of row totals.
    total_x: f64,
}

impl<'a> Matrix<'a> {
    /// The matrix of `paid` between `grids`, in `unit`, laid out.
    fn new(grids: &'a [String], paid: &'a [Vec<f64>], unit: &'a str) -> Self {
        let n = grids.len().min(MAX_GRIDS);
        let label_w = 150.0;
        let cell_w = ((WIDTH - LEFT - RIGHT - label_w - 110.0) / (n.max(1) as f64)).min(130.0);
        let most = (paid.iter().take(n))
            .flat_map(|r| r.iter().take(n))
            .copied()
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max);
        let x0 = LEFT + label_w;
        Matrix {
            grids,
            paid,
            unit,
            most,
            n,
            cell_w,
            cell_h: 28.0,
            head: 40.0,
            x0,
            total_x: x0 + n as f64 * cell_w + 55.0,
        }
    }

    /// The top of row `i` (`n`: the row of totals received).
    fn row_y(&self, i: usize) -> f64 {
        TOP + self.head + i as f64 * self.cell_h
    }

    /// The axis labels, a payee's name above each column and the head of the row totals.
    fn heads(&self, svg: &mut String) {
        let (x0, cell_w, n) = (self.x0, self.cell_w, self.n);
        let _ = write!(
            svg,
            r#"<text class="label" x="{:.1}" y="{:.1}" text-anchor="middle">paid to →</text><text class="label" x="{:.1}" y="{:.1}" text-anchor="end">paid by ↓</text>"#,
            x0 + cell_w * n as f64 / 2.0,
            TOP + 10.0,
            x0 - 8.0,
            TOP + self.head - 8.0
        );
        for (j, g) in self.grids.iter().take(n).enumerate() {
            let _ = write!(
                svg,
                r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                x0 + (j as f64 + 0.5) * cell_w,
                TOP + self.head - 8.0,
                escape(g)
            );
        }
        let _ = write!(
            svg,
            r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="middle">paid in all</text>"#,
            self.total_x,
            TOP + self.head - 8.0
        );
    }

    /// Payer `i`'s row: its name, a cell per payee (blank on the diagonal) and its total;
    /// adds what each payee received to `received`.
    fn row(&self, svg: &mut String, i: usize, received: &mut [f64]) {
        let (x0, cell_w, cell_h) = (self.x0, self.cell_w, self.cell_h);
        let yy = self.row_y(i);
        let _ = write!(
            svg,
            r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="end" dominant-baseline="middle">{}</text>"#,
            x0 - 8.0,
            yy + cell_h / 2.0,
            escape(&self.grids[i])
        );
        let mut row_total = 0.0;
        // `received` holds a total per Grid drawn: `n` of them.
        for (j, got) in received.iter_mut().enumerate() {
            let v = self
                .paid
                .get(i)
                .and_then(|r| r.get(j))
                .copied()
                .unwrap_or(0.0);
            let xx = x0 + j as f64 * cell_w;
            if i == j {
                let _ = write!(
                    svg,
                    r##"<rect x="{xx:.1}" y="{yy:.1}" width="{cell_w:.1}" height="{cell_h}" fill="#f4f4f6" stroke="#fff"/>"##
                );
                continue;
            }
            row_total += v;
            *got += v;
            self.cell(svg, (i, j), (xx, yy), v);
        }
        let _ = write!(
            svg,
            r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="middle" dominant-baseline="middle">{}</text>"#,
            self.total_x,
            yy + cell_h / 2.0,
            number(row_total)
        );
    }

    /// The cell at (`xx`, `yy`) of `v` paid by Grid `i` to Grid `j`: shaded by its share of
    /// the most, labelled with it, titled with both names.
    fn cell(&self, svg: &mut String, (i, j): (usize, usize), (xx, yy): (f64, f64), v: f64) {
        let (cell_w, cell_h, unit) = (self.cell_w, self.cell_h, self.unit);
        let share = if self.most > 0.0 { v / self.most } else { 0.0 };
        let fill = if v > 0.0 {
            format!("rgba(0,114,178,{:.3})", 0.12 + 0.78 * share)
        } else {
            "#fff".into()
        };
        let ink = if share > 0.55 { "#fff" } else { "#222" };
        let _ = write!(
            svg,
            r##"<g><title>{} paid {}: {} {unit}</title><rect x="{xx:.1}" y="{yy:.1}" width="{cell_w:.1}" height="{cell_h}" fill="{fill}" stroke="#ddd"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="middle" dominant-baseline="middle" style="fill:{ink}">{}</text></g>"##,
            escape(&self.grids[i]),
            escape(&self.grids[j]),
            number(v),
            xx + cell_w / 2.0,
            yy + cell_h / 2.0,
            if v > 0.0 { number(v) } else { "–".into() }
        );
    }

    /// The last row: what each payee `received` in all.
    fn received_row(&self, svg: &mut String, received: &[f64]) {
        let (x0, cell_w, cell_h) = (self.x0, self.cell_w, self.cell_h);
        let yy = self.row_y(self.n);
        let _ = write!(
            svg,
            r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="end" dominant-baseline="middle">received in all</text>"#,
            x0 - 8.0,
            yy + cell_h / 2.0
        );
        for (j, r) in received.iter().enumerate() {
            let _ = write!(
                svg,
                r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="middle" dominant-baseline="middle">{}</text>"#,
                x0 + (j as f64 + 0.5) * cell_w,
                yy + cell_h / 2.0,
                number(*r)
            );
        }
    }
}

/// Negotiation counters per Grid (`summary.json`'s `negotiations`), as grouped bars: a group
/// per Grid, a bar per counter (`counters`: name, colour, words), y a count from zero.
pub fn counters_per_grid(
    name: &str,
    grids: &[String],
    counts: &[Vec<u64>],
    counters: &[(&str, &str, &str)],
) -> String {
    const HEIGHT: f64 = 170.0;
    let n = grids.len().min(MAX_GRIDS);
    let most = (counts.iter().take(n))
        .flat_map(|c| c.iter())
        .copied()
        .max()
        .unwrap_or(0);
    let top = (most.max(1) as f64) * 1.05;
    let y = |v: f64| TOP + (1.0 - (v / top).clamp(0.0, 1.0)) * HEIGHT;
    let legend_h = counters.len().div_ceil(3) as f64 * 18.0 + 6.0;
    let mut svg = String::new();
    open_svg(
        &mut svg,
        TOP + HEIGHT + 30.0 + legend_h,
        name,
        "negotiation counters per Grid",
    );
    y_axis(
        &mut svg,
        &ticks(0.0, top, 5),
        &y,
        (
            "requests (count)",
            "summary.json's grids.<Grid>.negotiations, counted per request",
        ),
        HEIGHT,
    );
    let group = (WIDTH - LEFT - RIGHT) / n.max(1) as f64;
    let bar = (group * 0.8 / counters.len().max(1) as f64).min(28.0);
    for (g, grid) in grids.iter().take(n).enumerate() {
        let gx = LEFT + g as f64 * group + (group - bar * counters.len() as f64) / 2.0;
        for (k, (key, colour, _)) in counters.iter().enumerate() {
            let v = counts.get(g).and_then(|c| c.get(k)).copied().unwrap_or(0);
            let (ya, yb) = (y(v as f64), y(0.0));
            let _ = write!(
                svg,
                r#"<rect x="{:.1}" y="{ya:.1}" width="{:.1}" height="{:.1}" fill="{colour}"><title>{}: {v} {}</title></rect>"#,
                gx + k as f64 * bar,
                (bar - 1.0).max(0.5),
                (yb - ya).max(0.0),
                escape(grid),
                escape(key)
            );
        }
        let _ = write!(
            svg,
            r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="middle">Grid {}</text>"#,
            LEFT + (g as f64 + 0.5) * group,
            TOP + HEIGHT + 16.0,
            escape(grid)
        );
    }
    let _ = write!(
        svg,
        r#"<line class="axis" x1="{LEFT}" y1="{0}" x2="{1}" y2="{0}"/>"#,
        TOP + HEIGHT,
        WIDTH - RIGHT
    );
    let entries: Vec<(&str, &str)> = counters.iter().map(|(_, c, n)| (*c, *n)).collect();
    swatches(&mut svg, &entries, TOP + HEIGHT + 30.0);
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each chart draws, bounded by its pixels: a price chart of a million negotiations
    /// draws at most its cap of marks; a matrix draws a cell per pair.
    #[test]
    fn peering_charts_stay_within_their_marks() {
        let scale = TimeScale::to(86_400.0);
        let points: Vec<PricePoint> = (0..1_000_000)
            .map(|i| PricePoint {
                t: f64::from(i) * 0.0864,
                price: 1.0 + f64::from(i % 1000) / 500.0,
                agreed: i % 3 == 0,
            })
            .collect();
        let svg = prices_over_time("p", &scale, &points);
        assert!(svg.matches("<circle").count() <= MAX_PRICE_MARKS + 2);
        assert!(svg.contains("price (currency units/core-s)"));
        let mut bins = TimeBins::over(&scale);
        assert_eq!((bins.step, bins.counts.len()), (1_800.0, 48));
        for (t, o) in [(0.0, 0), (10.0, 3), (3_600.0, 3), (1e9, 5)] {
            bins.add(t, o);
        }
        assert_eq!(bins.counts[0], [1, 0, 0, 1, 0, 0]);
        assert_eq!(bins.counts[47], [0, 0, 0, 0, 0, 1]);
        let svg = outcomes_over_time("o", &scale, &bins);
        assert_eq!(svg.matches("<rect").count(), 4 + OUTCOMES.len());
        assert!(svg.contains("offered per 30 min (count)"));
        let grids = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        let paid = vec![vec![0.0, 5.0, 2.5], vec![0.0; 3], vec![1.0, 0.0, 0.0]];
        let svg = money_matrix("m", &grids, &paid, "currency units");
        assert!(svg.contains("<title>a paid b: 5 currency units</title>"));
        assert_eq!(svg.matches("<g><title>").count(), 6);
        assert!(svg.contains(">7.5</text>"), "a's total");
    }
}
