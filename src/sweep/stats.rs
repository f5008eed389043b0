//! A sweep's statistics: per point the mean and 95 % confidence interval of each metric
//! (`points.csv`), and, for every policy-like varied key, the mean per-seed difference
//! between each pair of its values (`paired.csv`).

use super::*;

/// Student's t quantile t_{0.975, df} (NaN for df = 0).
pub fn t975(df: usize) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    StudentsT::new(0.0, 1.0, df as f64).map_or(f64::NAN, |t| t.inverse_cdf(0.975))
}

/// Mean and 95 % confidence half-width of `xs`.
pub fn mean_ci(xs: &[f64]) -> (f64, f64) {
    let n = xs.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return (mean, f64::NAN);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    (mean, t975(n - 1) * (var / n as f64).sqrt())
}

/// The cells `metric, n, mean, ci95_low, ci95_high` of `xs`.
pub(super) fn stats_cells(metric: &str, xs: &[f64]) -> [String; 5] {
    let (mean, half) = mean_ci(xs);
    // Adding +0.0 turns a negative zero (an f64 sum's starting value) into "0".
    let (mean, half) = (mean + 0.0, half + 0.0);
    [
        metric.to_string(),
        xs.len().to_string(),
        mean.to_string(),
        (mean - half).to_string(),
        (mean + half).to_string(),
    ]
}

/// The largest metric value a run file may hold, in magnitude: far above anything a run
/// measures (seconds up to 10^12, costs well under 10^40), and low enough that means and
/// variances over a million runs stay finite.
pub const MAX_METRIC: f64 = 1e100;

/// Reads run files (from one or more shards): the common header and every row in run order,
/// whatever order the rows were written in (so sums are reproducible). Hand-made or damaged
/// files are refused at the place, `file:line`: a column named twice, a run number that is
/// not an integer ≥ 0 or that comes twice, a seed run twice at one point, a metric value that
/// is not finite or beyond ±[`MAX_METRIC`], a line longer than
/// [`crate::input::MAX_CSV_LINE`] bytes.
pub fn read_runs(run_files: &[PathBuf]) -> Result<(Vec<String>, Vec<Vec<String>>), String> {
    let mut header: Option<Vec<String>> = None;
    let mut rows: Vec<(usize, Vec<String>)> = Vec::new();
    // Where each run number was first met, to name both places of a duplicate.
    let mut first_at: std::collections::HashMap<usize, (usize, u64)> = Default::default();
    // Each (seed, point) with the run, file and line it was first met at.
    let mut first_sample: std::collections::HashMap<Vec<String>, (usize, usize, u64)> =
        Default::default();
    for (file_no, f) in run_files.iter().enumerate() {
        let file = crate::input::open_csv(f).map_err(|e| format!("{}: {e}", f.display()))?;
        let mut r = csv::Reader::from_reader(file);
        let h: Vec<String> = r
            .headers()
            .map_err(|e| crate::input::csv_problem(f, &e))?
            .iter()
            .map(str::to_string)
            .collect();
        check_header(f, &mut header, h)?;
        let (_, param_cols, metric_cols) = header.as_deref().map_or_else(Default::default, columns);
        for rec in r.records() {
            let rec = rec.map_err(|e| crate::input::csv_problem(f, &e))?;
            let line = rec.position().map_or(0, |p| p.line());
            let at = format!("{}:{line}", f.display());
            let run = rec.get(0).unwrap_or_default();
            let Ok(index) = run.parse::<usize>() else {
                return Err(format!(
                    "{at}: run `{run}` is not a run number (an integer ≥ 0)"
                ));
            };
            if let Some((other, other_line)) = first_at.insert(index, (file_no, line)) {
                return Err(format!(
                    "{at}: run {index} again (also at {}:{other_line}); a run file holds each run once, merge each shard once",
                    run_files[other].display()
                ));
            }
            check_metric_cells(
                &at,
                &rec,
                header.as_deref().unwrap_or_default(),
                &metric_cols,
            )?;
            // A seed runs once per point: two rows of one would count one run as two samples.
            let sample: Vec<String> = std::iter::once(1)
                .chain(param_cols.iter().copied())
                .map(|c| rec.get(c).unwrap_or_default().to_string())
                .collect();
            if let Some((other, other_file, other_line)) =
                first_sample.insert(sample, (index, file_no, line))
            {
                let names = header.as_deref().unwrap_or_default();
                let point: Vec<String> = (param_cols.iter())
                    .map(|&c| format!("{}={}", &names[c][4..], rec.get(c).unwrap_or_default()))
                    .collect();
                return Err(format!(
                    "{at}: run {index} has the point ({}) and seed {} of run {other} (at {}:{other_line}): a seed runs once per point, so one of them is not this sweep's; remove it",
                    point.join(", "),
                    rec.get(1).unwrap_or_default(),
                    run_files[other_file].display()
                ));
            }
            rows.push((index, rec.iter().map(str::to_string).collect()));
        }
    }
    let header = header.ok_or("no run files")?;
    rows.sort_by_key(|(index, _)| *index);
    Ok((header, rows.into_iter().map(|(_, row)| row).collect()))
}

/// Checks run file `f`'s columns `h`: the first file's must be a sweep's (run, seed, …,
/// error; no column twice) and become `header`; every later file's must equal them.
pub(crate) fn check_header(
    f: &std::path::Path,
    header: &mut Option<Vec<String>>,
    h: Vec<String>,
) -> Result<(), String> {
    match header {
        None if h.len() < 3
            || h[0] != "run"
            || h[1] != "seed"
            || h.last().is_some_and(|e| e != "error") =>
        {
            Err(format!(
                "{}: not a sweep's run file (its columns must start with run,seed and end \
                 with error)",
                f.display()
            ))
        }
        None => {
            let mut names = std::collections::HashSet::new();
            if let Some(twice) = h.iter().find(|c| !names.insert(c.as_str())) {
                return Err(format!(
                    "{}:1: column `{twice}` comes twice; each column is one metric or varied key",
                    f.display()
                ));
            }
            *header = Some(h);
            Ok(())
        }
        Some(prev) if *prev != h => Err(format!(
            "{}: columns differ from the first file's",
            f.display()
        )),
        Some(_) => Ok(()),
    }
}

/// Checks the metric cells of row `rec` (at `at`): each is empty (not reported, or a failed
/// run's) or a finite number within ±[`MAX_METRIC`].
pub(crate) fn check_metric_cells(
    at: &str,
    rec: &csv::StringRecord,
    names: &[String],
    metric_cols: &[usize],
) -> Result<(), String> {
    for &c in metric_cols {
        let cell = rec.get(c).unwrap_or_default();
        let column = names.get(c).map_or("", String::as_str);
        // Empty is a metric the run did not report, or a failed run's; anything else must be
        // a number (text was once dropped silently, the point's mean made of fewer runs).
        if cell.is_empty() {
            continue;
        }
        let Ok(x) = cell.parse::<f64>() else {
            return Err(format!(
                "{at}: `{}` in column {column} is not a number (a metric cell is a number, or \
                 empty for a run that did not report it)",
                crate::input::diag::shown(cell)
            ));
        };
        if !x.is_finite() {
            return Err(format!(
                "{at}: `{cell}` in column {column} is not a finite number"
            ));
        }
        if x.abs() > MAX_METRIC {
            return Err(format!(
                "{at}: `{cell}` in column {column} is beyond ±{MAX_METRIC:e}, more than any run measures"
            ));
        }
    }
    Ok(())
}

/// A run file's columns — run, seed, the varied keys (prefixed `set:`), the metrics, error —
/// as the error column and the varied keys' and metrics' columns.
pub(crate) fn columns(header: &[String]) -> (usize, Vec<usize>, Vec<usize>) {
    let err_col = header.len() - 1;
    let param_cols: Vec<usize> = (2..err_col)
        .filter(|&c| header[c].starts_with("set:"))
        .collect();
    let metric_cols = (2..err_col).filter(|c| !param_cols.contains(c)).collect();
    (err_col, param_cols, metric_cols)
}

/// Reads run CSVs (from one or more shards) and writes the per-point summary: for every point
/// (combination of varied values) and metric, n, mean, and 95 % CI bounds.
pub fn summarize(run_files: &[PathBuf], out: &Path) -> Result<usize, String> {
    let (header, rows) = read_runs(run_files)?;
    let (err_col, param_cols, metric_cols) = columns(&header);
    // Points in the order their first runs come, which is the order the sweep file lists
    // the values in (not the values' text order, which puts 10 before 3).
    let mut points: Vec<(Vec<String>, Vec<&Vec<String>>)> = Vec::new();
    let mut point_at: BTreeMap<Vec<String>, usize> = BTreeMap::new();
    let mut seen = std::collections::BTreeSet::new();
    for row in &rows {
        if !row[err_col].is_empty() || !seen.insert(row[0].clone()) {
            continue;
        }
        let point: Vec<String> = param_cols.iter().map(|&c| row[c].clone()).collect();
        let at = *point_at.entry(point.clone()).or_insert_with(|| {
            points.push((point, Vec::new()));
            points.len() - 1
        });
        points[at].1.push(row);
    }
    // Written whole or not at all: a temporary file beside it, renamed at the end.
    let (tmp, file) =
        crate::create_temp_beside(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut w = csv::Writer::from_writer(file);
    let mut h: Vec<String> = param_cols.iter().map(|&c| header[c].clone()).collect();
    h.extend(["metric", "n", "mean", "ci95_low", "ci95_high"].map(str::to_string));
    w.write_record(&h).map_err(|e| e.to_string())?;
    for (point, runs) in &points {
        for &c in &metric_cols {
            let xs: Vec<f64> = runs
                .iter()
                .filter_map(|r| r[c].parse::<f64>().ok())
                .collect();
            let mut rec = point.clone();
            rec.extend(stats_cells(&header[c], &xs));
            w.write_record(&rec).map_err(|e| e.to_string())?;
        }
    }
    w.flush().map_err(|e| e.to_string())?;
    drop(w);
    std::fs::rename(&tmp, out).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(points.len())
}

/// Reads run CSVs and writes paired comparisons: for every policy-like varied key (one whose
/// values are not all numbers), every pair of its values `a`, `b` (in order of appearance)
/// with the other varied keys fixed, and every metric, the mean per-seed difference `b − a`
/// over the seeds both ran successfully, with its 95 % CI (Student's t). The varied key's own
/// `set:` column is left empty. Returns the number of rows, or `None` (nothing written) when
/// no key is policy-like.
pub fn paired(run_files: &[PathBuf], out: &Path) -> Result<Option<usize>, String> {
    let (header, rows) = read_runs(run_files)?;
    let (err_col, param_cols, metric_cols) = columns(&header);
    let ok: Vec<&Vec<String>> = {
        let mut seen = std::collections::BTreeSet::new();
        rows.iter()
            .filter(|r| r[err_col].is_empty() && seen.insert(r[0].clone()))
            .collect()
    };
    let policy_like: Vec<usize> = param_cols
        .iter()
        .copied()
        .filter(|&c| ok.iter().any(|r| r[c].parse::<f64>().is_err()))
        .collect();
    if policy_like.is_empty() {
        return Ok(None);
    }
    // Written whole or not at all: a temporary file beside it, renamed at the end.
    let (tmp, file) =
        crate::create_temp_beside(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut w = csv::Writer::from_writer(file);
    let mut h: Vec<String> = ["key", "a", "b"].map(str::to_string).to_vec();
    h.extend(param_cols.iter().map(|&c| header[c].clone()));
    h.extend(["metric", "n", "mean_diff", "ci95_low", "ci95_high"].map(str::to_string));
    w.write_record(&h).map_err(|e| e.to_string())?;
    let mut written = 0;
    for &k in &policy_like {
        let mut values: Vec<&str> = Vec::new();
        for r in &ok {
            if !values.contains(&r[k].as_str()) {
                values.push(&r[k]);
            }
        }
        // Runs by the other keys' values, then by this key's value and seed.
        let mut groups: BTreeMap<Vec<&str>, BySeed<'_>> = BTreeMap::new();
        for r in &ok {
            let others = param_cols
                .iter()
                .map(|&c| if c == k { "" } else { r[c].as_str() })
                .collect();
            groups
                .entry(others)
                .or_default()
                .insert((r[k].as_str(), r[1].as_str()), r);
        }
        for (others, runs) in &groups {
            for (i, a) in values.iter().enumerate() {
                for b in &values[i + 1..] {
                    for &c in &metric_cols {
                        let diffs: Vec<f64> = runs
                            .iter()
                            .filter(|((v, _), _)| v == a)
                            .filter_map(|((_, seed), ra)| {
                                let rb = runs.get(&(*b, *seed))?;
                                Some(rb[c].parse::<f64>().ok()? - ra[c].parse::<f64>().ok()?)
                            })
                            .collect();
                        if diffs.is_empty() {
                            continue;
                        }
                        let mut rec = vec![header[k].clone(), a.to_string(), b.to_string()];
                        rec.extend(others.iter().map(|v| v.to_string()));
                        rec.extend(stats_cells(&header[c], &diffs));
                        w.write_record(&rec).map_err(|e| e.to_string())?;
                        written += 1;
                    }
                }
            }
        }
    }
    w.flush().map_err(|e| e.to_string())?;
    drop(w);
    std::fs::rename(&tmp, out).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(Some(written))
}
