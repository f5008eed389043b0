//! `runs.csv` checked for a sweep's page, a row at a time: a sweep's columns, each run once,
//! each seed once per point, metric cells that are numbers within bounds (as `igemu sweep
//! merge` checks them); and the runs that measured each metric counted, which the `n` of
//! `points.csv` must add up to. To find a run met twice it keeps a hash of each run (about
//! 40 bytes a run), the places of a duplicate found again by reading the file once more.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::Path;

use super::read::{text_shown, Rows, REGENERATE};
use crate::Error;

/// A run's point and seed, hashed to 128 bits (two hashes of it).
fn sample_hash(record: &csv::StringRecord, params: &[usize]) -> u128 {
    let cells: Vec<&str> = std::iter::once(1)
        .chain(params.iter().copied())
        .map(|c| record.get(c).unwrap_or_default())
        .collect();
    let half = |salt: u8| {
        let mut h = DefaultHasher::new();
        (salt, &cells).hash(&mut h);
        h.finish()
    };
    (u128::from(half(1)) << 64) | u128::from(half(2))
}

/// Checks the `runs.csv` at `path`, if there, against `n`, the sums of `n` per metric of
/// the `points.csv` at `points`.
pub(super) fn check(path: &Path, points: &Path, n: &HashMap<String, u64>) -> Result<(), Error> {
    if !path.exists() {
        return Ok(());
    }
    let measured = tally(path)?;
    let differ = |metric: &str, sum: u64, runs: u64| {
        Error::Input(format!(
            "{}: error: the `n` of metric `{}` add up to {sum}, but {} holds {runs} runs that measured it; the two files are not of one sweep\n    hint: `igemu sweep merge --out DIR DIR/runs.csv` writes points.csv anew from runs.csv",
            points.display(),
            text_shown(metric),
            path.display()
        ))
    };
    for (metric, runs) in &measured {
        let sum = n.get(metric).copied().unwrap_or(0);
        if sum != *runs {
            return Err(differ(metric, sum, *runs));
        }
    }
    let mut unknown: Vec<&String> = (n.keys())
        .filter(|m| !measured.iter().any(|(known, _)| known == *m))
        .collect();
    unknown.sort();
    if let Some(metric) = unknown.first() {
        return Err(Error::Input(format!(
            "{}: error: metric `{}` is not a column of {}; the two files are not of one sweep\n    {REGENERATE}",
            points.display(),
            text_shown(metric),
            path.display()
        )));
    }
    Ok(())
}

/// Per metric column, in order, the runs without error whose cell holds a number.
fn tally(path: &Path) -> Result<Vec<(String, u64)>, Error> {
    let mut rows = Rows::open(path)?;
    let header: Vec<String> = rows.headers.iter().map(String::from).collect();
    let bad = |e: String| Error::Input(format!("{e}\n    {REGENERATE}"));
    crate::sweep::check_header(path, &mut None, header.clone()).map_err(bad)?;
    let (err_col, params, metrics) = crate::sweep::columns(&header);
    let (mut runs, mut samples) = (HashSet::<u64>::new(), HashSet::<u128>::new());
    let mut measured = vec![0u64; metrics.len()];
    let mut record = csv::StringRecord::new();
    while rows.next(&mut record)? {
        let at = format!("{}:{}", path.display(), rows.line);
        let cell = record.get(0).unwrap_or_default();
        let Ok(run) = cell.parse::<u64>() else {
            return Err(rows.at_line(&format!(
                "error: run `{}` is not a run number (an integer ≥ 0)",
                text_shown(cell)
            )));
        };
        if !runs.insert(run) {
            let first = first_line(path, |r| r.get(0) == Some(cell))?;
            return Err(rows.at_line(&format!(
                "error: run {run} again (also at line {first}); a run file holds each run once, merge each shard once"
            )));
        }
        crate::sweep::check_metric_cells(&at, &record, &header, &metrics).map_err(bad)?;
        if !samples.insert(sample_hash(&record, &params)) {
            return Err(seed_twice(&rows, &record, (&header, &params)));
        }
        if record.get(err_col).is_some_and(str::is_empty) {
            for (i, &c) in metrics.iter().enumerate() {
                measured[i] += u64::from(record.get(c).is_some_and(|v| v.parse::<f64>().is_ok()));
            }
        }
    }
    Ok(metrics
        .iter()
        .map(|&c| header[c].clone())
        .zip(measured)
        .collect())
}

/// The error for the row last read, whose point and seed an earlier run has.
fn seed_twice(
    rows: &Rows,
    record: &csv::StringRecord,
    (header, params): (&[String], &[usize]),
) -> Error {
    let hash = sample_hash(record, params);
    let first = first_line(rows.path(), |r| sample_hash(r, params) == hash);
    let point: Vec<String> = (params.iter())
        .map(|&c| format!("{}={}", &header[c][4..], record.get(c).unwrap_or_default()))
        .collect();
    let also = first.map_or(String::new(), |l| format!(" of the run at line {l}"));
    rows.at_line(&format!(
        "error: run {} has the point ({}) and seed {}{also}: a seed runs once per point, so one of them is not this sweep's; remove it",
        text_shown(record.get(0).unwrap_or_default()),
        text_shown(&point.join(", ")),
        text_shown(record.get(1).unwrap_or_default())
    ))
}

/// The line of the first row of the CSV file at `path` that `is` takes (read again: only
/// when an error names it).
fn first_line(path: &Path, is: impl Fn(&csv::StringRecord) -> bool) -> Result<usize, Error> {
    let mut rows = Rows::open(path)?;
    let mut record = csv::StringRecord::new();
    while rows.next(&mut record)? {
        if is(&record) {
            return Ok(rows.line);
        }
    }
    Ok(0)
}
