//! A sweep's page: `sweep.json`'s provenance, each metric of `points.csv` against the varied
//! key with 95 % confidence intervals, the table behind the plots, and `paired.csv`'s
//! differences. `points.csv` is read twice a row at a time — the keys' values and the
//! metrics first, then each point into its chart's pixel column ([`svg::CiLine`]) — each row
//! checked; `runs.csv`, when there, is checked too ([`super::runs`]) and the `n` of
//! `points.csv` must add up to the runs it holds.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};
use std::path::Path;

use serde_json::Value;

use super::html::{left_out_note, page, plain, push_chart, section, table_of, TABLE_ROWS};
use super::labels::{self, Context, KeyAxis, Transform};
use super::read::{read_text, text_shown, Rows, REGENERATE};
use super::svg::{self, escape, number, CiAxes, CiLine, CiPoint, CiSeries};
use crate::Error;

/// Metrics a sweep's page draws at most (a chart each, in the order they first appear).
pub(super) const MAX_CHARTS: usize = 40;

/// Lines a chart draws at most (a combination of the other keys' values each).
pub(super) const MAX_LINES: usize = 20;

/// Categories an x axis of names shows at most.
pub(super) const MAX_CATEGORIES: usize = 100;

/// Values of a key counted one by one to choose the x axis; past this many, keys tie.
const MAX_DISTINCT: usize = 65_536;

/// The columns of `points.csv`.
struct Columns {
    /// The varied keys' columns, and their names (without `set:`).
    keys: Vec<usize>,
    names: Vec<String>,
    metric: usize,
    n: usize,
    mean: usize,
    low: usize,
    high: usize,
}

impl Columns {
    fn of(rows: &Rows) -> Result<Columns, Error> {
        let what = "a sweep's points.csv";
        let keys: Vec<usize> = (0..rows.headers.len())
            .filter(|k| rows.headers[*k].starts_with("set:"))
            .collect();
        Ok(Columns {
            names: (keys.iter())
                .map(|k| rows.headers[*k].trim_start_matches("set:").to_string())
                .collect(),
            keys,
            metric: rows.column("metric", what)?,
            n: rows.column("n", what)?,
            mean: rows.column("mean", what)?,
            low: rows.column("ci95_low", what)?,
            high: rows.column("ci95_high", what)?,
        })
    }
}

/// A row of `points.csv`, checked: a count `n` of runs, and a mean and interval that are
/// numbers where `n` says they must be (a mean of one run or more; an interval of two).
struct Point<'r> {
    metric: &'r str,
    n: u64,
    mean: Option<f64>,
    low: Option<f64>,
    high: Option<f64>,
}

/// The number in the cell of `column`, `None` when empty.
fn cell(rows: &Rows, record: &csv::StringRecord, column: usize) -> Result<Option<f64>, Error> {
    let text = record.get(column).unwrap_or_default();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse().map(Some).map_err(|_| {
        rows.at_line(&format!(
            "error: `{}` is `{}`, not a number",
            &rows.headers[column],
            text_shown(text)
        ))
    })
}

fn point<'r>(rows: &Rows, record: &'r csv::StringRecord, c: &Columns) -> Result<Point<'r>, Error> {
    let text = record.get(c.n).unwrap_or_default();
    let n: u64 = text.parse().map_err(|_| {
        rows.at_line(&format!(
            "error: `n` is `{}`; it counts the runs behind the point, a whole number ≥ 0",
            text_shown(text)
        ))
    })?;
    let (mean, low, high) = (
        cell(rows, record, c.mean)?,
        cell(rows, record, c.low)?,
        cell(rows, record, c.high)?,
    );
    let must = |what: &str, v: Option<f64>, from: u64| -> Result<(), Error> {
        match v {
            Some(x) if !x.is_finite() && n >= from => Err(rows.at_line(&format!(
                "error: `{what}` is {x}, but `n` is {n}: over {from} run{} or more it is a finite number",
                if from == 1 { "" } else { "s" }
            ))),
            None if n >= from => Err(rows.at_line(&format!("error: `{what}` is empty, but `n` is {n}"))),
            _ => Ok(()),
        }
    };
    must("mean", mean, 1)?;
    must("ci95_low", low, 2)?;
    must("ci95_high", high, 2)?;
    if let (Some(l), Some(m), Some(h)) = (low, mean, high) {
        if n >= 2 && !(l <= m && m <= h) {
            return Err(rows.at_line(&format!(
                "error: the interval [{l}, {h}] does not hold the mean {m}"
            )));
        }
    }
    let metric = record.get(c.metric).unwrap_or_default();
    Ok(Point {
        metric,
        n,
        mean,
        low,
        high,
    })
}

/// Reads every row of the `points.csv` at `path`, checked, into `visit`.
fn each_point(
    path: &Path,
    mut visit: impl FnMut(&Columns, &csv::StringRecord, Point) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut rows = Rows::open(path)?;
    let columns = Columns::of(&rows)?;
    let mut record = csv::StringRecord::new();
    while rows.next(&mut record)? {
        let p = point(&rows, &record, &columns)?;
        visit(&columns, &record, p)?;
    }
    Ok(())
}

/// A 64-bit hash of `value` (to count distinct values in little memory).
fn hash64(value: impl Hash) -> u64 {
    let mut h = DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

/// A varied key as the first pass finds it.
#[derive(Default)]
struct Key {
    /// Whether some value is not a finite number.
    named: bool,
    /// Its distinct values (hashed), up to [`MAX_DISTINCT`].
    distinct: HashSet<u64>,
    /// Its first values, in the order met, up to one past [`MAX_CATEGORIES`].
    first: Vec<String>,
}

/// What the first pass over `points.csv` finds.
#[derive(Default)]
struct First {
    names: Vec<String>,
    keys: Vec<Key>,
    /// The metrics charted, in the order they first appear, and their index by name.
    metrics: Vec<String>,
    metric_at: HashMap<String, usize>,
    /// Per metric charted and key, the range of the key's numeric values.
    x: Vec<Vec<Option<(f64, f64)>>>,
    /// Per key, the range of its numeric values (all metrics').
    range: Vec<Option<(f64, f64)>>,
    /// Per metric (all of them), the sum of `n`.
    n: HashMap<String, u64>,
    rows: usize,
}

fn widen(range: &mut Option<(f64, f64)>, v: f64) {
    let (lo, hi) = range.get_or_insert((v, v));
    (*lo, *hi) = (lo.min(v), hi.max(v));
}

fn first_pass(path: &Path) -> Result<First, Error> {
    let mut f = First::default();
    each_point(path, |c, record, p| {
        if f.rows == 0 {
            f.names = c.names.clone();
            f.keys = c.keys.iter().map(|_| Key::default()).collect();
            f.range = vec![None; c.keys.len()];
        }
        f.rows += 1;
        *f.n.entry(p.metric.to_string()).or_default() += p.n;
        if !f.metric_at.contains_key(p.metric) && f.metrics.len() < MAX_CHARTS {
            f.metric_at.insert(p.metric.to_string(), f.metrics.len());
            f.metrics.push(p.metric.to_string());
            f.x.push(vec![None; c.keys.len()]);
        }
        let charted = f.metric_at.get(p.metric).copied();
        for (k, key) in f.keys.iter_mut().enumerate() {
            let v = record.get(c.keys[k]).unwrap_or_default();
            match v.parse::<f64>().ok().filter(|x| x.is_finite()) {
                Some(x) => {
                    widen(&mut f.range[k], x);
                    charted.into_iter().for_each(|m| widen(&mut f.x[m][k], x));
                }
                None => key.named = true,
            }
            if key.distinct.len() < MAX_DISTINCT
                && key.distinct.insert(hash64(v))
                && key.first.len() <= MAX_CATEGORIES
            {
                key.first.push(v.to_string());
            }
        }
        Ok(())
    })?;
    Ok(f)
}

/// The x axis: the numeric key with the most values (the papers' swept parameter; the last
/// of equals); with no numeric key, the first key's values as categories. The other keys'
/// combinations are the lines.
fn x_axis(f: &First) -> (Option<usize>, Option<Vec<String>>) {
    let x_key = (0..f.keys.len())
        .filter(|k| !f.keys[*k].named)
        .max_by_key(|k| f.keys[*k].distinct.len())
        .or(if f.keys.is_empty() { None } else { Some(0) });
    let categories = x_key.filter(|k| f.keys[*k].named).map(|k| {
        f.keys[k]
            .first
            .iter()
            .take(MAX_CATEGORIES)
            .cloned()
            .collect()
    });
    (x_key, categories)
}

/// A metric's chart as the second pass builds it.
struct Chart {
    /// Its lines: legend name, the raw keys and values it stands for, and its points.
    lines: Vec<(String, String, CiLine)>,
    line_at: HashMap<String, usize>,
    /// Lines not drawn (hashed), and points left out for a category past the axis's.
    hidden_lines: HashSet<u64>,
    off_axis: usize,
    x: Option<(f64, f64)>,
    /// The lowest mean and the highest interval bound (or mean).
    y: Option<(f64, f64)>,
}

/// The charts of the metrics charted, from a second pass over `points.csv`, each key's
/// values drawn on its axis (`axes`).
fn second_pass(
    path: &Path,
    f: &First,
    axes: &[KeyAxis],
    (x_key, categories): (Option<usize>, Option<&[String]>),
) -> Result<Vec<Chart>, Error> {
    let mut charts: Vec<Chart> = (0..f.metrics.len())
        .map(|_| Chart {
            lines: Vec::new(),
            line_at: HashMap::new(),
            hidden_lines: HashSet::new(),
            off_axis: 0,
            x: None,
            y: None,
        })
        .collect();
    let category_at: HashMap<&str, usize> = (categories.unwrap_or_default().iter().enumerate())
        .map(|(i, c)| (c.as_str(), i))
        .collect();
    each_point(path, |c, record, p| {
        let Some(&m) = f.metric_at.get(p.metric) else {
            return Ok(());
        };
        let chart = &mut charts[m];
        let values: Vec<&str> = c
            .keys
            .iter()
            .map(|k| record.get(*k).unwrap_or_default())
            .collect();
        let x = match (x_key, categories) {
            (Some(k), Some(_)) => match category_at.get(values[k]) {
                Some(i) => *i as f64,
                None => {
                    chart.off_axis += 1;
                    return Ok(());
                }
            },
            (Some(k), None) => values[k]
                .parse()
                .map_or(f64::NAN, |v| axes[k].transform.apply(v)),
            (None, _) => 0.0,
        };
        let line = line_name(axes, &values, x_key);
        let x_data = x_key.and_then(|k| axes[k].transform.range(f.x[m][k]));
        add_point(
            chart,
            (line, p.metric),
            CiPoint {
                x,
                mean: p.mean.unwrap_or(f64::NAN),
                low: p.low.or(p.mean).unwrap_or(f64::NAN),
                high: p.high.or(p.mean).unwrap_or(f64::NAN),
                merged: None,
            },
            (x_data, categories.is_some()),
        );
        Ok(())
    })?;
    Ok(charts)
}

/// The name of a point's line — the other keys' values, as a legend shows them
/// (`dispatch: rr`) — and as the keys are written (`igg.dispatch=rr`, its tooltip).
fn line_name(axes: &[KeyAxis], values: &[&str], x_key: Option<usize>) -> (String, String) {
    let others = || (values.iter().enumerate()).filter(|(k, _)| Some(*k) != x_key);
    let shown = others()
        .map(|(k, v)| format!("{}: {v}", axes[k].short))
        .collect::<Vec<_>>()
        .join(", ");
    let raw = others()
        .map(|(k, v)| format!("{}={v}", axes[k].key))
        .collect::<Vec<_>>()
        .join(", ");
    (shown, raw)
}

/// Adds point `p` of line `line` (legend name and raw keys; of `metric`) to `chart`, whose x
/// data run over `x_data`.
fn add_point(
    chart: &mut Chart,
    ((shown, raw), metric): ((String, String), &str),
    p: CiPoint,
    (x_data, categorical): (Option<(f64, f64)>, bool),
) {
    if p.x.is_finite() {
        widen(&mut chart.x, p.x);
    }
    if p.mean.is_finite() {
        widen(&mut chart.y, p.mean);
    }
    if let (Some((lo, hi)), true) = (&mut chart.y, p.high.is_finite()) {
        *hi = hi.max(p.high);
        *lo = lo.min(p.high);
    }
    let at = match chart.line_at.get(&raw) {
        Some(at) => *at,
        None if chart.lines.len() < MAX_LINES => {
            let (name, title) = if raw.is_empty() {
                (metric.to_string(), metric.to_string())
            } else {
                (shown, raw.clone())
            };
            chart
                .lines
                .push((name, title, CiLine::new(x_data, categorical)));
            chart.line_at.insert(raw, chart.lines.len() - 1);
            chart.lines.len() - 1
        }
        None => {
            if chart.hidden_lines.len() < MAX_DISTINCT {
                chart.hidden_lines.insert(hash64(&raw));
            }
            return;
        }
    };
    chart.lines[at].2.add(p);
}

/// The page of the sweep whose outputs are in `dir`.
pub(super) fn report(dir: &Path) -> Result<String, Error> {
    let path = dir.join("points.csv");
    let first = first_pass(&path)?;
    super::runs::check(&dir.join("runs.csv"), &path, &first.n)?;
    let (x_key, categories) = x_axis(&first);
    let axes = key_axes(&first, &Context::of_sweep(dir));
    let charts = second_pass(&path, &first, &axes, (x_key, categories.as_deref()))?;
    let mut body = String::new();
    section(&mut body, "provenance", |b| sweep_provenance(b, dir))?;
    section(&mut body, "plots", |body| {
        plots(body, &first, (&axes, x_key), charts, categories.as_deref());
        Ok::<_, Error>(())
    })?;
    let wide = wide_table(&path, &first, &axes)?;
    section(&mut body, "table", |body| {
        body.push_str("<h2 id=\"table\">The table behind the plots</h2><p class=\"note\">One row per point (the swept values), one column per metric: the mean over the seeds ± the half-width of its 95 % confidence interval, in the metric's own unit (its key's suffix: <code>_s</code> seconds, <code>_pct</code> percent; counts without). <code>n</code> counts the seeds; a metric measured by fewer says so. points.csv has a row per point and metric.</p>");
        let header: Vec<&str> = wide.header.iter().map(String::as_str).collect();
        table_of(
            body,
            &header,
            &wide.rows,
            wide.numeric_from,
            (wide.points, "points.csv"),
        );
        Ok::<_, Error>(())
    })?;
    section(&mut body, "paired", |b| paired_section(b, dir))?;
    let nav = [
        ("provenance", "Provenance"),
        ("plots", "Plots"),
        ("table", "Table"),
        ("paired", "Paired differences"),
    ];
    let nav: Vec<(&str, &str)> = (nav.into_iter())
        .filter(|(anchor, _)| body.contains(&format!("id=\"{anchor}\"")))
        .collect();
    let name = dir
        .file_name()
        .map_or("sweep".into(), |n| n.to_string_lossy().to_string());
    Ok(page(&format!("igemu sweep: {name}"), &nav, &body))
}

/// The plots: a chart per metric charted, against the x key (`x_key` of `axes`).
fn plots(
    body: &mut String,
    first: &First,
    (axes, x_key): (&[KeyAxis], Option<usize>),
    charts: Vec<Chart>,
    categories: Option<&[String]>,
) {
    let x_axis = x_key.map(|k| &axes[k]);
    let x_label = x_axis.map_or("point".to_string(), |a| a.label.clone());
    let others: Vec<&str> = (axes.iter().enumerate())
        .filter(|(k, _)| Some(*k) != x_key)
        .map(|(_, a)| a.short.as_str())
        .collect();
    let _ = write!(
        body,
        "<h2 id=\"plots\">Metrics against {}</h2><p class=\"note\">Means over the seeds with 95 % confidence intervals (Student's t); one line per {}. Every value axis starts at zero; hover an axis's label for the key it draws, a point for its values.</p>",
        escape(&x_label),
        if axes.len() > 1 { escape(&others.join(" × ")) } else { "sweep".into() }
    );
    let mut left_out = 0;
    for (metric, chart) in first.metrics.iter().zip(charts) {
        let block = metric_block(metric, x_axis, chart, categories);
        push_chart(body, &block, &mut left_out);
    }
    left_out_note(body, left_out, "metrics' charts are", "points.csv");
    let more = first.n.len().saturating_sub(first.metrics.len());
    if more > 0 {
        let _ = write!(body, "<p class=\"note\">{more} more metrics are not drawn: a page draws at most {MAX_CHARTS}, those that first appear in points.csv.</p>");
    }
}

/// Each varied key as an axis (its numeric values' range; a key of names has none).
fn key_axes(f: &First, context: &Context) -> Vec<KeyAxis> {
    (f.names.iter().enumerate())
        .map(|(k, name)| {
            let range = if f.keys[k].named { None } else { f.range[k] };
            KeyAxis::of(name, range, context)
        })
        .collect()
}

/// A metric's heading, chart and what its chart merged or left out: the y axis named for
/// the metric with its unit ([`labels::metric`]), times drawn in the unit that suits them.
fn metric_block(
    metric: &str,
    x_axis: Option<&KeyAxis>,
    chart: Chart,
    categories: Option<&[String]>,
) -> String {
    let quantity = labels::metric(metric);
    let max = chart.y.map_or(0.0, |(lo, hi)| lo.abs().max(hi.abs()));
    let (y_label, factor) = quantity.axis(max);
    let (unit, _) = quantity.unit_text(max);
    let mut block = format!(
        "<h3 title=\"{}\">{} <span class=\"note\">({})</span></h3>",
        escape(metric),
        escape(&quantity.name),
        escape(metric)
    );
    let (mut marks, mut merged) = (0, 0);
    let scaled = |v: f64| v / factor;
    let series: Vec<CiSeries> = (chart.lines.into_iter())
        .map(|(name, title, line)| {
            let (m, p) = line.merged();
            (marks, merged) = (marks + m, merged + p);
            CiSeries {
                name,
                title,
                points: (line.points().into_iter())
                    .map(|p| CiPoint {
                        mean: scaled(p.mean),
                        low: scaled(p.low),
                        high: scaled(p.high),
                        merged: p.merged.map(|m| svg::Merged {
                            means: (scaled(m.means.0), scaled(m.means.1)),
                            ..m
                        }),
                        ..p
                    })
                    .collect(),
            }
        })
        .collect();
    let x_label = x_axis.map_or("point", |a| a.label.as_str());
    let x_title = x_axis.map_or(String::new(), |a| a.about.clone());
    let x_value = |x: f64| match (x_axis, categories) {
        (Some(a), Some(names)) => a.value_title(names.get(x as usize).map_or("", |s| s.as_str())),
        (Some(a), None) => format!(
            "{} ({} on the axis)",
            a.value_title(&number(a.transform.invert(x))),
            number(x)
        ),
        (None, _) => "the sweep's one point".to_string(),
    };
    let axes = CiAxes {
        name: metric,
        x_label,
        x_title: &x_title,
        y_label: &y_label,
        y_title: metric,
        unit: &unit,
        x_value: &x_value,
    };
    let y = chart.y.map(|(lo, hi)| (scaled(lo), scaled(hi)));
    block.push_str(&svg::ci_chart(&axes, &series, categories, (chart.x, y)));
    if merged > 0 {
        let _ = write!(block, "<p class=\"note\">{merged} points lie within a pixel of another of their line and are drawn merged, as {marks} hollow points (a point per pixel column and line; hover one for the points it stands for). Every point is in points.csv.</p>");
    }
    if !chart.hidden_lines.is_empty() {
        let _ = write!(block, "<p class=\"note\">{} more lines are not drawn (a chart draws at most {MAX_LINES}); their points are in points.csv.</p>", chart.hidden_lines.len());
    }
    if chart.off_axis > 0 {
        let _ = write!(block, "<p class=\"note\">{} points of values past the first {MAX_CATEGORIES} of {x_label} are not drawn; they are in points.csv.</p>", chart.off_axis);
    }
    block
}

/// The table behind the plots, wide: a row per point, a column per metric.
struct Wide {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Cells from this column on are numbers.
    numeric_from: usize,
    /// Points in the file.
    points: usize,
}

/// The wide table of the first [`TABLE_ROWS`] points of the `points.csv` at `path` (a third
/// pass, keeping only those rows): the keys' values (and, for a key drawn transformed, its
/// value on the axis), the seeds, then per metric charted `mean ± half-width`. Points are
/// counted as igemu writes them, each point's metrics on consecutive rows.
fn wide_table(path: &Path, f: &First, axes: &[KeyAxis]) -> Result<Wide, Error> {
    let mut header: Vec<String> = Vec::new();
    for a in axes {
        header.push(a.key.clone());
        if a.transform != Transform::Same {
            header.push(a.label.clone());
        }
    }
    header.push("n".into());
    let n_at = header.len() - 1;
    let numeric_from = n_at;
    header.extend(f.metrics.iter().cloned());
    let mut rows: Vec<Vec<String>> = Vec::new();
    // Per row shown: its point's values, and each metric's n.
    let mut ns: Vec<Vec<Option<u64>>> = Vec::new();
    let mut at: HashMap<Vec<String>, usize> = HashMap::new();
    let (mut points, mut last): (usize, Option<u64>) = (0, None);
    each_point(path, |c, record, p| {
        let values: Vec<String> = (c.keys.iter())
            .map(|k| record.get(*k).unwrap_or_default().to_string())
            .collect();
        let hash = hash64(&values);
        let row = match at.get(&values) {
            Some(row) => Some(*row),
            None if last != Some(hash) => {
                points += 1;
                (rows.len() < TABLE_ROWS).then(|| {
                    let mut cells = Vec::with_capacity(header.len());
                    for (k, a) in axes.iter().enumerate() {
                        cells.push(values[k].clone());
                        if a.transform != Transform::Same {
                            let v = values[k].parse::<f64>().ok();
                            cells.push(v.map_or("–".into(), |v| number(a.transform.apply(v))));
                        }
                    }
                    cells.resize(header.len(), "–".into());
                    rows.push(cells);
                    ns.push(vec![None; f.metrics.len()]);
                    at.insert(values.clone(), rows.len() - 1);
                    rows.len() - 1
                })
            }
            None => None,
        };
        last = Some(hash);
        if let (Some(row), Some(&m)) = (row, f.metric_at.get(p.metric)) {
            rows[row][n_at + 1 + m] = mean_cell(&p);
            ns[row][m] = Some(p.n);
        }
        Ok(())
    })?;
    for (cells, ns) in rows.iter_mut().zip(&ns) {
        let most = ns.iter().flatten().copied().max().unwrap_or(0);
        cells[n_at] = most.to_string();
        for (m, n) in ns.iter().enumerate() {
            if let Some(n) = n.filter(|n| *n < most) {
                cells[n_at + 1 + m].push_str(&format!(" (n = {n})"));
            }
        }
    }
    Ok(Wide {
        header,
        rows,
        numeric_from,
        points,
    })
}

/// A point's metric as a cell: `mean ± half-width`, the mean alone from one run.
fn mean_cell(p: &Point) -> String {
    match (p.mean, p.low, p.high) {
        (Some(m), Some(l), Some(h)) if l.is_finite() && h.is_finite() && p.n >= 2 => {
            format!("{} ± {}", number(m), number((h - l) / 2.0))
        }
        (Some(m), ..) if m.is_finite() => number(m),
        _ => "–".into(),
    }
}

/// The sweep in `dir` as a table for a terminal, at most `width` characters wide: a row per
/// point (the first `max_rows`), its swept values and seeds, then as many metrics (`mean ±
/// half-width`) as fit; a last line says what was left out and where it all is.
pub(super) fn terminal_table(dir: &Path, width: usize, max_rows: usize) -> Result<String, Error> {
    let path = dir.join("points.csv");
    let first = first_pass(&path)?;
    let axes = key_axes(&first, &Context::default());
    let wide = wide_table(&path, &first, &axes)?;
    let (columns, fixed) = table_columns(&wide, &axes, max_rows);
    let shown = columns_fitting(&columns, fixed, width);
    let rows = wide.rows.len().min(max_rows);
    let mut out = String::new();
    write_columns(&mut out, &columns[..shown], fixed, rows);
    let points_left = wide.points.saturating_sub(rows);
    let metrics_left = first.n.len().saturating_sub(shown.saturating_sub(fixed));
    out.push_str(&table_footer(points_left, metrics_left, &path, dir));
    Ok(out)
}

/// A column of the terminal table: its head and its cells, top down.
type Column<'a> = (String, Vec<&'a str>);

/// The terminal table's columns, each of the first `max_rows` rows of `wide`: the swept
/// values as written (a transformed value is the report's), then n, then the metrics; with
/// how many come before the metrics (always shown).
fn table_columns<'a>(
    wide: &'a Wide,
    axes: &[KeyAxis],
    max_rows: usize,
) -> (Vec<Column<'a>>, usize) {
    let cells_of = |k: usize| -> Vec<&'a str> {
        wide.rows
            .iter()
            .take(max_rows)
            .map(|r| r[k].as_str())
            .collect()
    };
    let mut columns: Vec<Column> = Vec::new();
    let mut c = 0;
    for a in axes {
        let name = a.key.rsplit('.').next().unwrap_or(&a.key);
        columns.push((name.to_string(), cells_of(c)));
        c += if a.transform == Transform::Same { 1 } else { 2 };
    }
    let fixed = columns.len() + 1;
    for (k, h) in wide.header.iter().enumerate().skip(c) {
        columns.push((h.clone(), cells_of(k)));
    }
    (columns, fixed)
}

/// A column's width: its widest cell or head, in characters.
fn column_width((h, cells): &Column) -> usize {
    cells
        .iter()
        .map(|s| s.chars().count())
        .chain([h.chars().count()])
        .max()
        .unwrap_or(0)
}

/// How many of `columns` a table `width` characters wide shows: the first `fixed` always,
/// then metrics while they fit (each column with two spaces before it).
fn columns_fitting(columns: &[Column], fixed: usize, width: usize) -> usize {
    let mut used = 0;
    let mut shown = 0;
    for (k, col) in columns.iter().enumerate() {
        let w = column_width(col) + 2;
        if k >= fixed && used + w > width {
            break;
        }
        used += w;
        shown += 1;
    }
    shown
}

/// Writes `columns` to `out`: a line of heads, then `rows` lines of cells, each column
/// padded to its width, numbers (from the last of the `fixed` columns on) to the right.
fn write_columns(out: &mut String, columns: &[Column], fixed: usize, rows: usize) {
    let line = |out: &mut String, cells: Vec<&str>| {
        let mut text = String::new();
        for (k, cell) in cells.iter().enumerate() {
            let w = column_width(&columns[k]);
            let pad = w.saturating_sub(cell.chars().count());
            // Numbers to the right, names to the left.
            if k + 1 >= fixed {
                text.push_str(&format!("  {}{cell}", " ".repeat(pad)));
            } else {
                text.push_str(&format!("  {cell}{}", " ".repeat(pad)));
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(out, columns.iter().map(|(h, _)| h.as_str()).collect());
    for r in 0..rows {
        line(out, columns.iter().map(|(_, cells)| cells[r]).collect());
    }
}

/// The terminal table's last lines: what the cells are, the points and metrics left out,
/// and where the points are (`path`, in the sweep's `dir`).
fn table_footer(points_left: usize, metrics_left: usize, path: &Path, dir: &Path) -> String {
    let mut left: Vec<String> = Vec::new();
    if points_left > 0 {
        left.push(format!("{points_left} more point{}", plural(points_left)));
    }
    if metrics_left > 0 {
        left.push(format!(
            "{metrics_left} more metric{}",
            plural(metrics_left)
        ));
    }
    format!(
        "  mean ± 95 % CI half-width over the seeds{}\n  all in {}; `igemu report {}` draws them",
        if left.is_empty() {
            String::new()
        } else {
            format!("; {} not shown", left.join(", "))
        },
        path.display(),
        dir.display()
    )
}

/// `s` for a count other than one.
fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `sweep.json`'s provenance: every key, as a reader wants it; a file there that is no
/// sweep's record is refused.
fn sweep_provenance(body: &mut String, dir: &Path) -> Result<(), Error> {
    let path = dir.join("sweep.json");
    if !path.exists() {
        return Ok(());
    }
    body.push_str("<h2 id=\"provenance\">Provenance</h2>");
    let manifest: Value = serde_json::from_str(&read_text(&path)?).map_err(|e| {
        Error::Input(format!(
            "{}:{}: error: not JSON: {e}\n    {REGENERATE}",
            path.display(),
            e.line()
        ))
    })?;
    let Some(manifest) = manifest.as_object() else {
        return Err(Error::Input(format!(
            "{}: error: not a sweep's record (a JSON object)\n    {REGENERATE}",
            path.display()
        )));
    };
    let rows: Vec<Vec<String>> = manifest
        .iter()
        .map(|(k, v)| vec![k.clone(), plain(v)])
        .collect();
    table_of(
        body,
        &["what", "value"],
        &rows,
        9,
        (rows.len(), "sweep.json"),
    );
    Ok(())
}

/// `paired.csv`'s differences: its first rows, each checked (from `n` on, numbers where `n`
/// says they must be).
fn paired_section(body: &mut String, dir: &Path) -> Result<(), Error> {
    let path = dir.join("paired.csv");
    if !path.exists() {
        return Ok(());
    }
    body.push_str("<h2 id=\"paired\">Paired differences</h2>");
    let mut rows = Rows::open(&path)?;
    let header: Vec<String> = (rows.headers.iter())
        .map(|h| h.trim_start_matches("set:").to_string())
        .collect();
    let n_at = rows.column("n", "a sweep's paired.csv")?;
    let (mut shown, mut total) = (Vec::new(), 0);
    let mut record = csv::StringRecord::new();
    while rows.next(&mut record)? {
        let cells = paired_row(&rows, &record, n_at)?;
        total += 1;
        if shown.len() < TABLE_ROWS {
            shown.push(cells);
        }
    }
    body.push_str("<p class=\"note\">Per-seed differences b − a between two values of a policy-like key, the other keys fixed: mean and 95 % CI. An interval that excludes 0 is a difference the seeds agree on.</p>");
    let header: Vec<&str> = header.iter().map(|s| s.as_str()).collect();
    table_of(body, &header, &shown, n_at, (total, "paired.csv"));
    Ok(())
}

/// A row of `paired.csv` as table cells, checked: `n` a count of seeds ≥ 1, the mean
/// difference a number, the interval numbers from two seeds on.
fn paired_row(rows: &Rows, record: &csv::StringRecord, n_at: usize) -> Result<Vec<String>, Error> {
    let text = record.get(n_at).unwrap_or_default();
    let n: u64 = text.parse().ok().filter(|n| *n >= 1).ok_or_else(|| {
        rows.at_line(&format!(
            "error: `n` is `{}`; it counts the seeds compared, a whole number ≥ 1",
            text_shown(text)
        ))
    })?;
    for k in n_at + 1..record.len() {
        let v = cell(rows, record, k)?;
        let needed = if k == n_at + 1 { 1 } else { 2 };
        if n >= needed && !v.is_some_and(f64::is_finite) {
            return Err(rows.at_line(&format!(
                "error: `{}` is `{}`, but `n` is {n}: it is a finite number",
                &rows.headers[k],
                text_shown(record.get(k).unwrap_or_default())
            )));
        }
    }
    Ok(record
        .iter()
        .map(|c| c.parse::<f64>().map_or(c.to_string(), number))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The x axis is the numeric key with the most values, found a row at a time (300 000
    /// values of a key took a list search per point before, over 60 s); names make
    /// categories, the first of them shown.
    #[test]
    fn the_x_axis_is_the_numeric_key_with_the_most_values() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("points.csv");
        let mut text = String::from("set:policy,set:x,set:y,metric,n,mean,ci95_low,ci95_high\n");
        for i in 0..300_000 {
            let _ = writeln!(text, "p{},{},{i},m,1,{i},NaN,NaN", i % 3, i % 5);
        }
        std::fs::write(&path, text).expect("written");
        let started = std::time::Instant::now();
        let first = first_pass(&path).expect("read");
        assert_eq!(
            (first.rows, first.metrics.len(), first.n["m"]),
            (300_000, 1, 300_000)
        );
        let (x_key, categories) = x_axis(&first);
        assert_eq!((x_key, categories), (Some(2), None));
        assert_eq!(first.x[0][2], Some((0.0, 299_999.0)));
        assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
        // Names only: the first key's values are categories, in the order met.
        std::fs::write(
            &path,
            "set:policy,metric,n,mean,ci95_low,ci95_high\nb,m,0,NaN,NaN,NaN\na,m,1,2,,\n",
        )
        .expect("written");
        let first = first_pass(&path).expect("read");
        assert_eq!(
            x_axis(&first),
            (Some(0), Some(vec!["b".to_string(), "a".to_string()]))
        );
    }

    /// The table behind the plots is wide: a row per point, a column per metric with its
    /// mean ± half-width; a metric measured by fewer seeds says so. The terminal's table
    /// keeps to its width and rows, and says what it left out.
    #[test]
    fn the_table_is_a_row_per_point_and_a_column_per_metric() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("points.csv");
        let mut text = String::from("set:policy,set:x,metric,n,mean,ci95_low,ci95_high\n");
        for p in ["a", "b"] {
            for x in 0..30 {
                let _ = writeln!(text, "{p},{x},awrt_s,3,{x},{},{}", x - 1, x + 1);
                let _ = writeln!(text, "{p},{x},vm_preemptions,2,5,1,9");
                let _ = writeln!(text, "{p},{x},a_metric_with_a_long_name_pct,3,1.5,1,2");
            }
        }
        std::fs::write(&path, text).expect("written");
        let first = first_pass(&path).expect("read");
        let axes = key_axes(&first, &Context::default());
        let wide = wide_table(&path, &first, &axes).expect("table");
        assert_eq!(wide.points, 60);
        assert_eq!(wide.rows.len(), 60);
        assert_eq!(
            wide.header,
            [
                "policy",
                "x",
                "n",
                "awrt_s",
                "vm_preemptions",
                "a_metric_with_a_long_name_pct"
            ]
        );
        assert_eq!(
            wide.rows[1],
            ["a", "1", "3", "1 ± 1", "5 ± 4 (n = 2)", "1.5 ± 0.5"]
        );
        let table = terminal_table(dir.path(), 60, 5).expect("table");
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 1 + 5 + 2, "{table}");
        assert!(
            lines[..6].iter().all(|l| l.chars().count() <= 60),
            "{table}"
        );
        assert!(
            lines[0].contains("awrt_s") && !lines[0].contains("long_name"),
            "{table}"
        );
        assert!(
            lines[6].contains("55 more points, 1 more metric not shown"),
            "{table}"
        );
    }
}
