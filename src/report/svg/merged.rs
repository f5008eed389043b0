//! A Gantt chart merged per pixel, for a cluster with more spans than a page draws one by
//! one. Each row stands for a band of hosts and each cell for a pixel column of time (or a
//! few, when the chart must draw fewer bars); a cell takes the colour of the lease type that
//! held the most VM time in it, striped where preemption operations took most of that time
//! and pale where booting did, in one of four shades by how many VMs a host held there on
//! average. It is built a span at a time in memory fixed by its cells, not by its spans.

use std::fmt::Write;

use super::{
    duration, escape, number, open_svg, time_axis, Drawn, TimeScale, BOTTOM, LEASE_TYPES, LEFT, TOP,
};

/// What a cell sums VM time by: the four lease types, then booting, then preemption
/// operations (a span's time counts under its lease type and, when not running, its state).
const CATEGORIES: usize = 6;

/// Rows of hosts a merged chart draws at most.
pub const MAX_BANDS: usize = 200;

/// VM time per cell of a cluster's hosts × time, gathered a span at a time.
pub struct HostRaster {
    scale: TimeScale,
    hosts: u32,
    /// Hosts per row.
    per_band: u32,
    bands: usize,
    columns: usize,
    /// Per cell (row-major), the VM-seconds of the spans that start or end in it.
    part: Vec<[f32; CATEGORIES]>,
    /// Per cell, the change there in the number of spans covering whole columns (summed
    /// along the row when drawn, so that a long span costs two updates, not one per column).
    whole: Vec<[i32; CATEGORIES]>,
}

impl HostRaster {
    /// An empty raster of `hosts` hosts over `scale`: a column per pixel, and as many rows
    /// of hosts as fit `max_cells` cells (at most [`MAX_BANDS`], at least one).
    pub fn new(scale: TimeScale, hosts: u32, max_cells: usize) -> HostRaster {
        let columns = (scale.width().round() as usize).max(1);
        let hosts = hosts.max(1);
        let fit = (max_cells / columns).clamp(1, MAX_BANDS);
        let per_band = hosts.div_ceil(fit.min(hosts as usize) as u32);
        let bands = hosts.div_ceil(per_band) as usize;
        HostRaster {
            scale,
            hosts,
            per_band,
            bands,
            columns,
            part: vec![[0.0; CATEGORIES]; bands * columns],
            whole: vec![[0; CATEGORIES]; bands * columns],
        }
    }

    /// Hosts per row.
    pub fn hosts_per_row(&self) -> u32 {
        self.per_band
    }

    /// Adds a span of host `host` (a lease of type `lease`, drawn as `drawn`) from `start`
    /// to `end`; the part outside the time scale is left out.
    pub fn add(&mut self, host: u32, lease: usize, drawn: Drawn, start: f64, end: f64) {
        let scale = self.scale;
        let (s, e) = (start.max(scale.start), end.min(scale.end));
        if e <= s {
            return;
        }
        let band = ((host / self.per_band) as usize).min(self.bands - 1);
        let width = (scale.end - scale.start) / self.columns as f64;
        let column = |t: f64| (((t - scale.start) / width) as usize).min(self.columns - 1);
        let (c0, c1) = (column(s), column(e));
        let edge = |c: usize| scale.start + c as f64 * width;
        let class = match drawn {
            Drawn::Booting => Some(4),
            Drawn::Operation => Some(5),
            Drawn::Running => None,
        };
        let row = band * self.columns;
        for cat in std::iter::once(lease.min(3)).chain(class) {
            if c0 == c1 {
                self.part[row + c0][cat] += (e - s) as f32;
                continue;
            }
            self.part[row + c0][cat] += (edge(c0 + 1) - s).max(0.0) as f32;
            self.part[row + c1][cat] += (e - edge(c1)).max(0.0) as f32;
            if c1 > c0 + 1 {
                self.whole[row + c0 + 1][cat] += 1;
                self.whole[row + c1][cat] -= 1;
            }
        }
    }

    /// The VM-seconds of each cell of row `band`, by category.
    fn row(&self, band: usize) -> Vec<[f64; CATEGORIES]> {
        let width = (self.scale.end - self.scale.start) / self.columns as f64;
        let mut covering = [0i64; CATEGORIES];
        let at = band * self.columns;
        (0..self.columns)
            .map(|c| {
                let mut cell = [0.0; CATEGORIES];
                for k in 0..CATEGORIES {
                    covering[k] += i64::from(self.whole[at + c][k]);
                    cell[k] = covering[k] as f64 * width + f64::from(self.part[at + c][k]);
                }
                cell
            })
            .collect()
    }

    /// The hosts of row `band`: first and last.
    fn band_hosts(&self, band: usize) -> (u32, u32) {
        let first = band as u32 * self.per_band;
        (first, (first + self.per_band).min(self.hosts) - 1)
    }
}

/// A bar of equal cells in a row of a merged chart.
struct Bar {
    /// Its first and last bucket (inclusive).
    from: usize,
    to: usize,
    /// Lease type, drawing class (`r`, `b`, `o`) and shade (1–4).
    look: (usize, char, u8),
    /// Its VM-seconds.
    vm_secs: f64,
}

/// How a cell of `vm_secs` by category looks when a host holds `mean` VMs there on average
/// and `peak` at most in the chart: `None` when empty.
fn look(cell: &[f64; CATEGORIES], mean: f64, peak: f64) -> Option<(usize, char, u8)> {
    let total: f64 = cell[..4].iter().sum();
    if total <= 0.0 || peak <= 0.0 {
        return None;
    }
    let lease = (0..4).fold(0, |best, k| if cell[k] > cell[best] { k } else { best });
    let class = if cell[5] * 2.0 > total {
        'o'
    } else if cell[4] * 2.0 > total {
        'b'
    } else {
        'r'
    };
    let shade = (4.0 * mean / peak).ceil().clamp(1.0, 4.0) as u8;
    Some((lease, class, shade))
}

/// A merged Gantt chart of `raster`, named `name`, with at most `max_bars` bars: cells of one
/// pixel column, or of 2, 4, ... columns when that would draw more; `None` when even one
/// bar per row is too many. Also returns the columns a cell took.
pub fn merged_gantt(name: &str, raster: &HostRaster, max_bars: usize) -> Option<(String, usize)> {
    let rows: Vec<Vec<[f64; CATEGORIES]>> = (0..raster.bands).map(|b| raster.row(b)).collect();
    let width = (raster.scale.end - raster.scale.start) / raster.columns as f64;
    // The most VMs a host held on average in a cell: the darkest shade.
    let peak = (rows.iter().enumerate())
        .flat_map(|(b, row)| {
            let (first, last) = raster.band_hosts(b);
            let hosts = f64::from(last - first + 1);
            row.iter()
                .map(move |c| c[..4].iter().sum::<f64>() / (width * hosts))
        })
        .fold(0.0, f64::max);
    let mut bucket = 1;
    while bucket <= raster.columns {
        if let Some(svg) = draw(name, raster, &rows, (peak, bucket), max_bars) {
            return Some((svg, bucket));
        }
        bucket *= 2;
    }
    None
}

/// The chart of `rows` with cells of `bucket` columns; `None` past `max_bars` bars.
fn draw(
    name: &str,
    raster: &HostRaster,
    rows: &[Vec<[f64; CATEGORIES]>],
    (peak, bucket): (f64, usize),
    max_bars: usize,
) -> Option<String> {
    let band_h = (600.0 / raster.bands as f64).clamp(2.0, 10.0);
    let bottom = TOP + raster.bands as f64 * band_h;
    let mut svg = String::new();
    let description = format!(
        "Gantt chart of {name} merged per pixel: {} hosts in {} rows, VM time coloured by lease type",
        raster.hosts, raster.bands
    );
    open_svg(&mut svg, bottom + BOTTOM, name, &description);
    let label_every = (12.0 / band_h).ceil() as usize;
    let mut bars = 0;
    for (b, row) in rows.iter().enumerate() {
        let top = TOP + b as f64 * band_h;
        let (first, last) = raster.band_hosts(b);
        if b % label_every.max(1) == 0 {
            // Host numbers alone: a range is too wide for the margin with a word before it.
            let label = if first == last {
                format!("host {first}")
            } else {
                format!("{first}–{last}")
            };
            let _ = write!(
                svg,
                r#"<text class="tick" x="{}" y="{:.1}" text-anchor="end" dominant-baseline="middle">{label}</text>"#,
                LEFT - 6.0,
                top + band_h / 2.0
            );
        }
        let geometry = Geometry {
            raster,
            top,
            band_h,
            bucket,
            hosts: f64::from(last - first + 1),
        };
        bars += draw_row(
            &mut svg,
            &geometry,
            row,
            peak,
            (first, last),
            max_bars.checked_sub(bars)?,
        )?;
    }
    time_axis(&mut svg, &raster.scale, bottom);
    svg.push_str("</svg>");
    Some(svg)
}

/// Where a row of a merged chart goes.
struct Geometry<'r> {
    raster: &'r HostRaster,
    top: f64,
    band_h: f64,
    bucket: usize,
    /// Hosts in the row.
    hosts: f64,
}

impl Geometry<'_> {
    /// The emulated time bucket `i` starts at.
    fn time(&self, i: usize) -> f64 {
        let scale = &self.raster.scale;
        let width = (scale.end - scale.start) / self.raster.columns as f64;
        (scale.start + (i * self.bucket) as f64 * width).min(scale.end)
    }
}

/// Draws a row's bars (equal neighbouring cells merged); `None` past `max_bars` of them.
fn draw_row(
    svg: &mut String,
    g: &Geometry,
    row: &[[f64; CATEGORIES]],
    peak: f64,
    hosts: (u32, u32),
    max_bars: usize,
) -> Option<usize> {
    let mut bars = 0;
    let mut bar: Option<Bar> = None;
    for (i, cells) in row.chunks(g.bucket).enumerate() {
        let mut cell = [0.0; CATEGORIES];
        for c in cells {
            (0..CATEGORIES).for_each(|k| cell[k] += c[k]);
        }
        let secs = g.time(i + 1) - g.time(i);
        let total: f64 = cell[..4].iter().sum();
        let now = look(&cell, total / (secs * g.hosts), peak);
        match (&mut bar, now) {
            (Some(b), Some(l)) if b.look == l && b.to + 1 == i => {
                b.to = i;
                b.vm_secs += total;
                continue;
            }
            _ => {}
        }
        if let Some(b) = bar.take() {
            bars += 1;
            if bars > max_bars {
                return None;
            }
            draw_bar(svg, g, &b, hosts);
        }
        bar = now.map(|look| Bar {
            from: i,
            to: i,
            look,
            vm_secs: total,
        });
    }
    if let Some(b) = bar {
        bars += 1;
        if bars > max_bars {
            return None;
        }
        draw_bar(svg, g, &b, hosts);
    }
    Some(bars)
}

/// Draws bar `b` of a row of hosts `first` to `last`.
fn draw_bar(svg: &mut String, g: &Geometry, b: &Bar, (first, last): (u32, u32)) {
    let (start, end) = (g.time(b.from), g.time(b.to + 1));
    let (x0, x1) = (g.raster.scale.x(start), g.raster.scale.x(end));
    let (lease, class, shade) = b.look;
    let state = match class {
        'o' => "mostly preemption operations",
        'b' => "mostly booting",
        _ => "running",
    };
    let hosts = if first == last {
        format!("host {first}")
    } else {
        format!("hosts {first}–{last}")
    };
    let mean = b.vm_secs / ((end - start).max(f64::MIN_POSITIVE) * g.hosts);
    let _ = write!(
        svg,
        r#"<rect class="{class}{lease}" fill-opacity="{}" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}"><title>{}</title></rect>"#,
        f64::from(shade) / 4.0,
        g.top,
        (x1 - x0).max(0.6),
        (g.band_h - if g.band_h >= 3.0 { 0.5 } else { 0.0 }).max(0.5),
        escape(&format!(
            "{hosts}, {}–{}: {} VMs a host on average, most of the time {} ({state})",
            duration(start),
            duration(end),
            number(mean),
            LEASE_TYPES[lease]
        ))
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// VM time lands in the cells it covers, and a chart draws within its bar budget by
    /// widening its cells.
    #[test]
    fn a_raster_sums_vm_time_per_cell_and_draws_within_its_budget() {
        let scale = TimeScale::to(988.0);
        let mut r = HostRaster::new(scale, 4, 1_000_000);
        assert_eq!((r.bands, r.columns, r.per_band), (4, 988, 1));
        // Host 1: a suspendable VM from 10.5 to 20.25, then an operation over 20.25–21.
        r.add(1, 1, Drawn::Running, 10.5, 20.25);
        r.add(1, 1, Drawn::Operation, 20.25, 21.0);
        let row = r.row(1);
        assert_eq!(row[10][1], 0.5);
        assert_eq!(row[15][1], 1.0);
        assert_eq!(row[20][1], 1.0);
        assert_eq!(row[20][5], 0.75);
        assert_eq!(row[21][1], 0.0);
        assert_eq!(r.row(0)[15], [0.0; CATEGORIES]);
        // A VM on every host for the whole time, alternating lease types per second: 988
        // cells of changing colour per row, merged into wider cells to fit 500 bars.
        for h in 0..4 {
            for t in 0..988 {
                r.add(h, t % 2, Drawn::Running, t as f64, t as f64 + 1.0);
            }
        }
        let (svg, bucket) = merged_gantt("c", &r, 500).expect("drawn");
        assert!(bucket > 1, "{bucket}");
        let bars = svg.matches("<rect class=").count();
        assert!(bars <= 500, "{bars} bars");
        // Fewer hosts per row than rows allowed: one row per host.
        let small = HostRaster::new(scale, 1_000, 988 * 50);
        assert_eq!((small.bands, small.per_band), (50, 20));
        assert!(
            merged_gantt("c", &small, 0).is_some(),
            "an empty chart has no bars"
        );
    }
}
