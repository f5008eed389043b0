//! The utilisation section of a run's page: per Grid, each cluster's cores and memory in use
//! and its queue over time, from `utilization.csv` read twice a row at a time — the run's end
//! and the series first, then each series averaged per pixel column as its rows come
//! ([`svg::Resampler`]) — so memory grows with the charts, not with the rows.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Deserialize;

use super::html::{left_out_note, push_chart};
use super::read::{check_time, check_value, Rows};
use super::spans::ClusterIndex;
use super::summary::Summary;
use super::svg::{self, escape, Resampler, StepSeries};
use super::Window;
use crate::Error;

/// Grids whose utilisation a page draws at most (three charts each).
pub(super) const MAX_GRIDS: usize = 100;

/// Lines a chart draws at most (a cluster each); the others are counted.
pub(super) const MAX_LINES: usize = 20;

#[derive(Deserialize)]
struct UsageRow<'a> {
    time_s: f64,
    grid: &'a str,
    cluster: &'a str,
    cores_used: f64,
    cores_total: f64,
    mem_mb_used: f64,
    mem_mb_total: f64,
    queued: f64,
}

/// A checked row: its cluster's index in the summary, time, and the three values drawn
/// (cores and memory in use, percent; requests queued).
struct Row {
    cluster: usize,
    time: f64,
    values: [f64; 3],
}

/// Reads every row of the `utilization.csv` at `path`, checked (each cluster's rows in time
/// order), into `visit`.
fn each_row(
    path: &Path,
    index: &ClusterIndex,
    clusters: usize,
    mut visit: impl FnMut(&UsageRow, Row),
) -> Result<(), Error> {
    let mut rows = Rows::open(path)?;
    let mut record = csv::StringRecord::new();
    let mut last = vec![f64::NEG_INFINITY; clusters];
    while rows.next(&mut record)? {
        let r: UsageRow = rows.parse(&record)?;
        check_time(path, rows.line, "time_s", r.time_s)?;
        for (what, v) in [
            ("cores_used", r.cores_used),
            ("cores_total", r.cores_total),
            ("mem_mb_used", r.mem_mb_used),
            ("mem_mb_total", r.mem_mb_total),
            ("queued", r.queued),
        ] {
            check_value(path, rows.line, what, v)?;
        }
        let (cluster, _) = index.find(&rows, r.grid, r.cluster)?;
        if r.time_s < last[cluster] {
            return Err(rows.at_line(&format!(
                "error: `time_s` {} comes after {} for {}/{}; igemu writes each cluster's rows in time order",
                r.time_s, last[cluster], r.grid, r.cluster
            )));
        }
        last[cluster] = r.time_s;
        let share = |used: f64, total: f64| {
            if total > 0.0 {
                100.0 * used / total
            } else {
                0.0
            }
        };
        let values = [
            share(r.cores_used, r.cores_total),
            share(r.mem_mb_used, r.mem_mb_total),
            r.queued,
        ];
        visit(
            &r,
            Row {
                cluster,
                time: r.time_s,
                values,
            },
        );
    }
    Ok(())
}

/// What the first pass finds: the latest time, and the Grids drawn (in the order they first
/// appear) with their clusters drawn (likewise), each cluster's line by summary index.
struct Series {
    end: f64,
    grids: Vec<(String, Vec<usize>)>,
    /// Each cluster's line (index into the resamplers), if drawn.
    line: Vec<Option<usize>>,
    lines: usize,
    /// Grids and clusters seen but not drawn.
    hidden: (usize, usize),
}

fn first_pass(path: &Path, index: &ClusterIndex, summary: &Summary) -> Result<Series, Error> {
    let n = summary.clusters.len();
    let mut s = Series {
        end: 0.0,
        grids: Vec::new(),
        line: vec![None; n],
        lines: 0,
        hidden: (0, 0),
    };
    let (mut grid_at, mut seen) = (BTreeMap::<String, Option<usize>>::new(), vec![false; n]);
    each_row(path, index, n, |r, row| {
        s.end = s.end.max(row.time);
        if std::mem::replace(&mut seen[row.cluster], true) {
            return;
        }
        let grid = *grid_at.entry(r.grid.to_string()).or_insert_with(|| {
            let drawn = s.grids.len() < MAX_GRIDS;
            if drawn {
                s.grids.push((r.grid.to_string(), Vec::new()));
            } else {
                s.hidden.0 += 1;
            }
            drawn.then(|| s.grids.len() - 1)
        });
        match grid.map(|g| &mut s.grids[g].1) {
            Some(clusters) if clusters.len() < MAX_LINES => {
                clusters.push(row.cluster);
                s.line[row.cluster] = Some(s.lines);
                s.lines += 1;
            }
            Some(_) => s.hidden.1 += 1,
            None => {}
        }
    })?;
    Ok(s)
}

/// Appends the utilisation section of the run whose outputs are in `dir`.
pub(super) fn section(
    body: &mut String,
    dir: &Path,
    summary: &Summary,
    window: Option<Window>,
) -> Result<(), Error> {
    // No section without a row to draw: no utilization.csv, or none in it.
    let path = dir.join("utilization.csv");
    if !path.exists() {
        return Ok(());
    }
    let index = ClusterIndex::new(summary);
    let series = first_pass(&path, &index, summary)?;
    if series.grids.is_empty() && series.hidden == (0, 0) {
        return Ok(());
    }
    body.push_str("<h2 id=\"utilisation\">Utilisation over time</h2>");
    let scale = Window::scale(window, summary.end.max(series.end));
    let new = || Resampler::new(scale.start, scale.end, scale.pixels());
    let mut sampled: Vec<[Resampler; 3]> =
        (0..series.lines).map(|_| [new(), new(), new()]).collect();
    each_row(&path, &index, summary.clusters.len(), |_, row| {
        if let Some(line) = series.line[row.cluster] {
            for (k, r) in sampled[line].iter_mut().enumerate() {
                r.push(row.time, row.values[k]);
            }
        }
    })?;
    let mut columns: Vec<[Vec<Option<f64>>; 3]> = sampled
        .into_iter()
        .map(|s| s.map(Resampler::finish))
        .collect();
    body.push_str("<p class=\"note\">From utilization.csv, averaged over the time each pixel stands for: the share of each cluster's cores and memory held by VMs (booting, running, paused, suspending, resuming), and its queue (requests arrived, not yet started).</p>");
    draw(body, summary, &series, &mut columns, scale);
    Ok(())
}

/// The charts: three per Grid, a line per cluster.
fn draw(
    body: &mut String,
    summary: &Summary,
    series: &Series,
    columns: &mut [[Vec<Option<f64>>; 3]],
    scale: svg::TimeScale,
) {
    let mut left_out = 0;
    let charts = [
        ("cores", "cores in use (%)", Some(100.0)),
        ("memory", "memory in use (%)", Some(100.0)),
        ("queue", "requests queued (count)", None),
    ];
    for (grid, clusters) in &series.grids {
        let _ = write!(body, "<h3>Grid {}</h3>", escape(grid));
        for (k, (chart, label, y_max)) in charts.iter().enumerate() {
            let lines: Vec<StepSeries> = (clusters.iter())
                .map(|&c| StepSeries {
                    name: summary.clusters[c].0 .1.clone(),
                    columns: series.line[c]
                        .map_or_else(Vec::new, |l| std::mem::take(&mut columns[l][k])),
                })
                .collect();
            let svg = svg::step_chart(&format!("{chart} {grid}"), &scale, &lines, label, *y_max);
            push_chart(body, &svg, &mut left_out);
        }
    }
    left_out_note(body, left_out, "utilisation charts are", "utilization.csv");
    let (grids, lines) = series.hidden;
    if grids + lines > 0 {
        let _ = write!(
            body,
            "<p class=\"note\">Not drawn: {grids} more Grids and {lines} more clusters of the Grids drawn (a page draws at most {MAX_GRIDS} Grids and {MAX_LINES} clusters a chart, those that first appear in utilization.csv); their rows are in utilization.csv.</p>"
        );
    }
}
