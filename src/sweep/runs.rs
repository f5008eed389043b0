//! Running a sweep: its runs spread over threads, one CSV row per run, written as they finish,
//! and the rows of an earlier attempt read back to resume.

use super::*;

/// The numeric entries of a summary, nested ones under dotted keys
/// (`grids.das2.awrt_grid_s`, `clusters.g/c1.utilization_pct`).
pub fn numeric(summary: &serde_json::Value) -> BTreeMap<String, f64> {
    fn walk(prefix: &str, v: &serde_json::Value, out: &mut BTreeMap<String, f64>) {
        match v {
            serde_json::Value::Object(o) => {
                for (k, v) in o {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&key, v, out);
                }
            }
            other => {
                if let Some(x) = other.as_f64() {
                    out.insert(prefix.to_string(), x);
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    walk("", summary, &mut out);
    out
}

/// Runs `todo` on `jobs` threads, showing progress on stderr in `style` and handing every
/// outcome to `sink` on the calling thread as soon as its run finishes (so a caller can write
/// it to disk at once). Outcomes are not kept (a run's numeric summary is kilobytes, and a
/// sweep may hold a million runs): returns how many runs ran and how many failed.
pub fn execute(
    sweep: &Sweep,
    todo: Vec<RunSpec>,
    jobs: usize,
    style: crate::progress::Style,
    mut sink: impl FnMut(&Outcome),
) -> (usize, usize) {
    let total = todo.len();
    let queue = Arc::new(Mutex::new(todo.into_iter()));
    let (tx, rx) = std::sync::mpsc::channel::<Outcome>();
    let mut done = 0;
    let mut progress = crate::progress::Progress::new(style);
    let mut failed = 0;
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            let (queue, tx) = (Arc::clone(&queue), tx.clone());
            scope.spawn(move || loop {
                let next = queue.lock().map(|mut q| q.next()).unwrap_or(None);
                let Some(spec) = next else { break };
                let sets = sweep.overrides(&spec);
                let registry = sweep.registry.clone();
                let outcome = topology::load_file(&sweep.topology, &Overrides { sets, registry })
                    .map_err(|r| r.to_string())
                    .and_then(|t| run(t, &RunOptions::default()).map_err(|e| e.to_string()))
                    .and_then(|r| serde_json::to_value(&r.summary).map_err(|e| e.to_string()))
                    .map(|v| numeric(&v));
                if tx.send((spec, outcome)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for outcome in rx {
            sink(&outcome);
            failed += usize::from(outcome.1.is_err());
            done += 1;
            let what = if failed > 0 {
                format!("sweep: {done}/{total} runs ({failed} failed)")
            } else {
                format!("sweep: {done}/{total} runs")
            };
            progress.update(&what, Some(done as f64 / total.max(1) as f64));
        }
    });
    progress.finish();
    (done, failed)
}

/// The columns of a run file: run, seed, each varied key (`set:<key>`), the metrics, error.
pub fn runs_header(sweep: &Sweep, metrics: &[String]) -> Vec<String> {
    let mut header = vec!["run".to_string(), "seed".to_string()];
    header.extend(sweep.vary.iter().map(|(k, _)| format!("set:{k}")));
    header.extend(metrics.iter().cloned());
    header.push("error".into());
    header
}

/// The values a run's row shows for its varied keys.
pub(super) fn shown_point(spec: &RunSpec) -> impl Iterator<Item = String> + '_ {
    spec.point.iter().map(|v| v.trim_matches('"').to_string())
}

/// One run's row, matching [`runs_header`].
pub fn run_row(outcome: &Outcome, metrics: &[String]) -> Vec<String> {
    let (spec, result) = outcome;
    let mut row = vec![spec.index.to_string(), spec.seed.to_string()];
    row.extend(shown_point(spec));
    match result {
        Ok(m) => {
            row.extend(
                metrics
                    .iter()
                    .map(|k| m.get(k).map_or_else(String::new, |v| v.to_string())),
            );
            row.push(String::new());
        }
        Err(e) => {
            row.extend(metrics.iter().map(|_| String::new()));
            row.push(e.lines().next().unwrap_or_default().to_string());
        }
    }
    row
}

/// The finished runs already in the run file at `path`, by run index, for `--resume`: rows
/// whose run failed, and a last row cut short by an interruption, are left out (so they run
/// again). A file written for another sweep (other columns, or a row whose seed and varied
/// values are not those of its run here) is refused with an error saying so.
pub fn read_done(
    sweep: &Sweep,
    header: &[String],
    path: &Path,
) -> Result<BTreeMap<usize, Vec<String>>, String> {
    let other = |why: String| {
        format!(
            "{}: written for a different sweep ({why}); resume only the sweep that wrote it, \
             or give another --out (or delete the file) to start over",
            path.display()
        )
    };
    let file = crate::input::open_csv(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut r = csv::ReaderBuilder::new().flexible(true).from_reader(file);
    let found: Vec<String> = r
        .headers()
        .map_err(|e| crate::input::csv_problem(path, &e))?
        .iter()
        .map(str::to_string)
        .collect();
    if found != header {
        return Err(other(format!(
            "its columns are {}; this sweep's are {}",
            found.join(","),
            header.join(",")
        )));
    }
    let runs = sweep.runs();
    let (_, _, metric_cols) = columns(header);
    let mut done = BTreeMap::new();
    // The line each run was met at: a second row of one run is refused, not let replace it.
    let mut met: BTreeMap<usize, u64> = BTreeMap::new();
    for rec in r.records() {
        let rec = match rec {
            Ok(rec) => rec,
            // A line past the cap, or a read that failed: the file cannot be trusted further.
            Err(e) if matches!(e.kind(), csv::ErrorKind::Io(_)) => {
                return Err(crate::input::csv_problem(path, &e))
            }
            Err(_) => continue, // a row cut short by an interruption, mid-character
        };
        if rec.len() != header.len() {
            continue; // cut short by an interruption
        }
        let row: Vec<String> = rec.iter().map(str::to_string).collect();
        let spec = row[0].parse::<usize>().ok().and_then(|i| runs.get(i));
        let matches = spec.is_some_and(|s| {
            row[1] == s.seed.to_string()
                && shown_point(s).eq(row[2..2 + s.point.len()].iter().cloned())
        });
        let Some(spec) = spec.filter(|_| matches) else {
            return Err(other(format!(
                "run {} there has seed {} and values {:?}, not this sweep's",
                row[0],
                row[1],
                &row[2..2 + sweep.vary.len()]
            )));
        };
        let line = rec.position().map_or(0, |p| p.line());
        let at = format!("{}:{line}", path.display());
        if let Some(before) = met.insert(spec.index, line) {
            return Err(format!(
                "{at}: run {} again (also at line {before}); a run file holds each run once — \
                 remove one of the rows, or give another --out to start over",
                spec.index
            ));
        }
        check_metric_cells(&at, &rec, header, &metric_cols)?;
        if row[header.len() - 1].is_empty() {
            done.insert(spec.index, row);
        }
    }
    Ok(done)
}

/// Writes a run file with `rows` in run order (through a temporary file, so an interruption
/// leaves the old file whole).
pub fn write_rows(
    header: &[String],
    rows: &BTreeMap<usize, Vec<String>>,
    path: &Path,
) -> Result<(), String> {
    let (tmp, file) =
        crate::create_temp_beside(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", tmp.display());
    let mut w = csv::Writer::from_writer(file);
    w.write_record(header).map_err(|e| fail(&e))?;
    for row in rows.values() {
        w.write_record(row).map_err(|e| fail(&e))?;
    }
    w.flush().map_err(|e| fail(&e))?;
    drop(w);
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Runs what a sweep does after its last run — points.csv and paired.csv from the run file
/// — on stand-in rows for every run (each metric a number), in a temporary folder, so a
/// sweep that would fail there fails before its first run, not after hours of work.
pub fn preflight(sweep: &Sweep, header: &[String], metrics: &[String]) -> Result<(), String> {
    let dir = TempDir::new()?;
    let rows: BTreeMap<usize, Vec<String>> = sweep
        .runs()
        .into_iter()
        .map(|spec| {
            // Values that differ between seeds, so spreads and intervals are computed too.
            let value = 1.0 + (spec.seed % 7) as f64;
            let m = metrics.iter().map(|k| (k.clone(), value)).collect();
            let index = spec.index;
            (index, run_row(&(spec, Ok(m)), metrics))
        })
        .collect();
    let runs = dir.0.join("runs.csv");
    write_rows(header, &rows, &runs)?;
    let runs = [runs];
    summarize(&runs, &dir.0.join("points.csv"))?;
    paired(&runs, &dir.0.join("paired.csv"))?;
    Ok(())
}

/// A folder of its own under the system's temporary folder, removed when dropped.
pub(super) struct TempDir(pub(super) PathBuf);

impl TempDir {
    pub(super) fn new() -> Result<TempDir, String> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("igemu-preflight-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(TempDir(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Appends rows to a run file, flushing each to the operating system as it is written, so
/// an interrupted sweep keeps every finished run's row.
pub struct RowSink {
    pub(super) w: csv::Writer<std::fs::File>,
    pub(super) path: PathBuf,
}

impl RowSink {
    /// Opens the run file at `path` (which must exist, with its header) for appending.
    pub fn append(path: &Path) -> Result<RowSink, String> {
        let f = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(RowSink {
            w: csv::WriterBuilder::new().has_headers(false).from_writer(f),
            path: path.to_path_buf(),
        })
    }

    /// Writes one row and flushes it.
    pub fn write(&mut self, row: &[String]) -> Result<(), String> {
        self.w
            .write_record(row)
            .and_then(|_| self.w.flush().map_err(csv::Error::from))
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }
}
