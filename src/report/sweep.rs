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

use super::html::{left_out_note, page, plain, push_chart, table_of, TABLE_ROWS};
use super::read::{read_text, text_shown, Rows, REGENERATE};
use super::svg::{self, escape, number, CiLine, CiPoint, CiSeries};
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
                Some(x) => charted.into_iter().for_each(|m| widen(&mut f.x[m][k], x)),
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
    lines: Vec<(String, CiLine)>,
    line_at: HashMap<String, usize>,
    /// Lines not drawn (hashed), and points left out for a category past the axis's.
    hidden_lines: HashSet<u64>,
    off_axis: usize,
    x: Option<(f64, f64)>,
    y: Option<(f64, f64)>,
    /// Its first rows of the table.
    rows: Vec<Vec<String>>,
}

/// The charts of the metrics charted, from a second pass over `points.csv`.
fn second_pass(
    path: &Path,
    f: &First,
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
            rows: Vec::new(),
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
        if chart.rows.len() < TABLE_ROWS {
            chart.rows.push(table_row(&values, &p));
        }
        let x = match (x_key, categories) {
            (Some(k), Some(_)) => match category_at.get(values[k]) {
                Some(i) => *i as f64,
                None => {
                    chart.off_axis += 1;
                    return Ok(());
                }
            },
            (Some(k), None) => values[k].parse().unwrap_or(f64::NAN),
            (None, _) => 0.0,
        };
        let line = line_name(&f.names, &values, x_key);
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
            (x_key.and_then(|k| f.x[m][k]), categories.is_some()),
        );
        Ok(())
    })?;
    Ok(charts)
}

/// A point's row of the table behind the plots.
fn table_row(values: &[&str], p: &Point) -> Vec<String> {
    let mut row: Vec<String> = values.iter().map(|v| v.to_string()).collect();
    row.extend([
        p.metric.to_string(),
        p.n.to_string(),
        p.mean.map_or("–".into(), number),
        p.low.map_or("–".into(), number),
        p.high.map_or("–".into(), number),
    ]);
    row
}

/// The name of a point's line: the other keys' values.
fn line_name(names: &[String], values: &[&str], x_key: Option<usize>) -> String {
    (values.iter().enumerate())
        .filter(|(k, _)| Some(*k) != x_key)
        .map(|(k, v)| format!("{}={v}", names[k]))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Adds point `p` of line `line` (of `metric`) to `chart`, whose x data run over `x_data`.
fn add_point(
    chart: &mut Chart,
    (line, metric): (String, &str),
    p: CiPoint,
    (x_data, categorical): (Option<(f64, f64)>, bool),
) {
    if p.x.is_finite() {
        widen(&mut chart.x, p.x);
    }
    for v in [p.low, p.high, p.mean]
        .into_iter()
        .filter(|v| v.is_finite())
    {
        widen(&mut chart.y, v);
    }
    let at = match chart.line_at.get(&line) {
        Some(at) => *at,
        None if chart.lines.len() < MAX_LINES => {
            let name = if line.is_empty() {
                metric.to_string()
            } else {
                line.clone()
            };
            chart.lines.push((name, CiLine::new(x_data, categorical)));
            chart.line_at.insert(line, chart.lines.len() - 1);
            chart.lines.len() - 1
        }
        None => {
            if chart.hidden_lines.len() < MAX_DISTINCT {
                chart.hidden_lines.insert(hash64(&line));
            }
            return;
        }
    };
    chart.lines[at].1.add(p);
}

/// The page of the sweep whose outputs are in `dir`.
pub(super) fn report(dir: &Path) -> Result<String, Error> {
    let path = dir.join("points.csv");
    let first = first_pass(&path)?;
    super::runs::check(&dir.join("runs.csv"), &path, &first.n)?;
    let (x_key, categories) = x_axis(&first);
    let charts = second_pass(&path, &first, (x_key, categories.as_deref()))?;
    let mut body = String::new();
    sweep_provenance(&mut body, dir)?;
    let x_label = x_key.map_or("point".to_string(), |k| first.names[k].clone());
    let others: Vec<&str> = (first.names.iter().enumerate())
        .filter(|(k, _)| Some(*k) != x_key)
        .map(|(_, n)| n.as_str())
        .collect();
    let _ = write!(
        body,
        "<h2 id=\"plots\">Metrics against {}</h2><p class=\"note\">Means over the seeds with 95 % confidence intervals (Student's t); one line per {}. Hover a point for its values.</p>",
        escape(&x_label),
        if first.names.len() > 1 { escape(&others.join(" × ")) } else { "sweep".into() }
    );
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut left_out = 0;
    for (metric, chart) in first.metrics.iter().zip(charts) {
        rows.extend(
            chart
                .rows
                .iter()
                .take(TABLE_ROWS.saturating_sub(rows.len()))
                .cloned(),
        );
        let block = metric_block(metric, &x_label, chart, categories.as_deref());
        push_chart(&mut body, &block, &mut left_out);
    }
    left_out_note(&mut body, left_out, "metrics' charts are", "points.csv");
    let more = first.n.len().saturating_sub(first.metrics.len());
    if more > 0 {
        let _ = write!(body, "<p class=\"note\">{more} more metrics are not drawn: a page draws at most {MAX_CHARTS}, those that first appear in points.csv.</p>");
    }
    body.push_str("<h2 id=\"table\">The table behind the plots</h2><p class=\"note\">points.csv: per point and metric, the seeds that ran (n), the mean and its 95 % confidence interval.</p>");
    let mut header: Vec<&str> = first.names.iter().map(|s| s.as_str()).collect();
    header.extend(["metric", "n", "mean", "ci95_low", "ci95_high"]);
    table_of(
        &mut body,
        &header,
        &rows,
        first.names.len() + 1,
        (first.rows, "points.csv"),
    );
    paired_section(&mut body, dir)?;
    let nav = [
        ("provenance", "Provenance"),
        ("plots", "Plots"),
        ("table", "Table"),
        ("paired", "Paired differences"),
    ];
    let name = dir
        .file_name()
        .map_or("sweep".into(), |n| n.to_string_lossy().to_string());
    Ok(page(&format!("igemu sweep: {name}"), &nav, &body))
}

/// A metric's heading, chart and what its chart merged or left out.
fn metric_block(
    metric: &str,
    x_label: &str,
    chart: Chart,
    categories: Option<&[String]>,
) -> String {
    let mut block = format!("<h3>{}</h3>", escape(metric));
    // The heading names the metric; the axis its last part, short enough to fit.
    let y_label: String = metric
        .rsplit('.')
        .next()
        .unwrap_or(metric)
        .chars()
        .take(28)
        .collect();
    let (mut marks, mut merged) = (0, 0);
    let series: Vec<CiSeries> = (chart.lines.into_iter())
        .map(|(name, line)| {
            let (m, p) = line.merged();
            (marks, merged) = (marks + m, merged + p);
            CiSeries {
                name,
                points: line.points(),
            }
        })
        .collect();
    block.push_str(&svg::ci_chart(
        (metric, x_label, &y_label),
        &series,
        categories,
        (chart.x, chart.y),
    ));
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

/// `sweep.json`'s provenance: every key, as a reader wants it; a file there that is no
/// sweep's record is refused.
fn sweep_provenance(body: &mut String, dir: &Path) -> Result<(), Error> {
    body.push_str("<h2 id=\"provenance\">Provenance</h2>");
    let path = dir.join("sweep.json");
    if !path.exists() {
        body.push_str(
            "<p class=\"note\">No sweep.json in this directory: what was run is not recorded.</p>",
        );
        return Ok(());
    }
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
    body.push_str("<h2 id=\"paired\">Paired differences</h2>");
    let path = dir.join("paired.csv");
    if !path.exists() {
        body.push_str(
            "<p class=\"note\">No paired.csv (written when a policy-like key is varied).</p>",
        );
        return Ok(());
    }
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
}
