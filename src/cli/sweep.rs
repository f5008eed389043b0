//! `igemu sweep` and `igemu sweep merge`: a sweep's runs, shards, resumption and the merged
//! results.

use super::*;

#[derive(Subcommand)]
pub(super) enum SweepCommand {
    /// Join the runs.csv files of several shards and recompute the per-point summary (and
    /// sweep.json from the shards' sweep-I-of-N.json records, which must agree).
    Merge {
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        /// Replace what --out holds of another sweep or of a run (without it, such a
        /// directory is refused, so two never mix).
        #[arg(long)]
        overwrite: bool,
        /// The shards' runs.csv files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

pub(super) fn parse_shard(text: &str) -> Option<(usize, usize)> {
    let (i, n) = text.split_once('/')?;
    let (i, n) = (i.trim().parse().ok()?, n.trim().parse().ok()?);
    (n > 0 && i < n).then_some((i, n))
}

/// How a sweep runs, beyond what and where.
pub(super) struct SweepFlags {
    /// Keep the finished runs of the output's run file.
    pub(super) resume: bool,
    /// Replace another sweep's or a run's outputs in the output folder.
    pub(super) overwrite: bool,
    /// How progress is shown.
    pub(super) style: Style,
}

pub(super) fn sweep(
    file: &Path,
    out: Option<PathBuf>,
    jobs: Option<usize>,
    shard: Option<String>,
    flags: SweepFlags,
    registry: &Registry,
) -> Result<(), Error> {
    let jobs = jobs_or_cores(jobs)?;
    let spec = crate::sweep::parse_with(file, registry)?;
    let shard = sweep_shard(shard.as_deref())?;
    let first = check_sweep_points(&spec, registry)?;
    let files = SweepFiles::new(file, &spec, out, shard, first.as_ref());
    crate::sweep::preflight(&spec, &files.header, &files.metrics).map_err(|e| {
        Error::Input(format!(
            "igemu: {}: the sweep would fail after its runs: {e}",
            file.display()
        ))
    })?;
    let mut record =
        crate::sweep::SweepRecord::new(file, &spec, &files.metrics, first.as_ref(), shard);
    // Nothing below writes before `start_sweep_out`, so the run file is there or not
    // throughout these checks.
    let resuming = flags.resume && files.runs.exists();
    let mut done = if resuming {
        resumed_runs(&spec, &files, &mut record)?
    } else {
        BTreeMap::new()
    };
    start_sweep_out(&files, &mut record, &done, resuming, flags.overwrite)?;
    let resume = resume_command(file, &files);
    let skipped = done.len();
    let (ran, failed) = run_sweep(&spec, &files, &mut done, jobs, flags.style, &resume)?;
    finish_sweep(&files, &mut record, (ran, skipped, failed))
}

/// The command that goes on with an interrupted sweep: its file, folder and shard.
pub(super) fn resume_command(file: &Path, files: &SweepFiles) -> String {
    let shard = match files.shard {
        (_, 1) => String::new(),
        (i, n) => format!(" --shard {i}/{n}"),
    };
    format!(
        "igemu sweep {} --out {} --resume{shard}",
        file.display(),
        files.out.display()
    )
}

/// The shard `--shard I/N` asks for, `(0, 1)` (the whole sweep) without it.
pub(super) fn sweep_shard(shard: Option<&str>) -> Result<(usize, usize), Error> {
    match shard.map(parse_shard) {
        None => Ok((0, 1)),
        Some(Some(s)) => Ok(s),
        Some(None) => Err(Error::Usage(
            "--shard takes I/N with 0 ≤ I < N, e.g. --shard 0/4".into(),
        )),
    }
}

/// Loads the topology with every varied value of the first seed, returning the first point's.
pub(super) fn check_sweep_points(
    spec: &crate::sweep::Sweep,
    registry: &Registry,
) -> Result<Option<Topology>, Error> {
    // Check the topology and every varied value once before running anything.
    let mut first = None;
    for r in spec.runs().iter().filter(|r| r.seed == spec.seeds[0]) {
        let t = topology::load_file(&spec.topology, &overrides(spec.overrides(r), registry))?;
        first.get_or_insert(t);
    }
    Ok(first)
}

/// Where a sweep (or one shard of it) writes, and what its run file holds.
pub(super) struct SweepFiles {
    /// The output folder.
    pub(super) out: PathBuf,
    /// The run file: `runs.csv`, or a shard's `runs-I-of-N.csv`.
    pub(super) runs: PathBuf,
    /// The record beside it: `sweep.json`, or a shard's `sweep-I-of-N.json`.
    pub(super) record_path: PathBuf,
    /// The run file's columns.
    pub(super) header: Vec<String>,
    /// The summary keys each run's row holds.
    pub(super) metrics: Vec<String>,
    /// The shard run: (I, N), `(0, 1)` for the whole sweep.
    pub(super) shard: (usize, usize),
}

impl SweepFiles {
    /// The files of sweep `spec` (read from `file`) into `--out` (`out/sweep-<stem>` without).
    fn new(
        file: &Path,
        spec: &crate::sweep::Sweep,
        out: Option<PathBuf>,
        shard: (usize, usize),
        first: Option<&Topology>,
    ) -> SweepFiles {
        let stem = file
            .file_stem()
            .map_or("sweep".into(), |s| s.to_string_lossy().to_string());
        let out = out.unwrap_or_else(|| PathBuf::from("out").join(format!("sweep-{stem}")));
        let metrics: Vec<String> = if spec.metrics.is_empty() {
            first
                .map(crate::sweep::default_metric_names)
                .unwrap_or_default()
        } else {
            spec.metrics.clone()
        };
        let runs = if shard.1 > 1 {
            out.join(format!("runs-{}-of-{}.csv", shard.0, shard.1))
        } else {
            out.join("runs.csv")
        };
        SweepFiles {
            header: crate::sweep::runs_header(spec, &metrics),
            record_path: out.join(crate::sweep::record_name(shard)),
            out,
            runs,
            metrics,
            shard,
        }
    }
}

/// The finished runs `--resume` keeps from the run file, refused if made from other inputs.
pub(super) fn resumed_runs(
    spec: &crate::sweep::Sweep,
    files: &SweepFiles,
    record: &mut crate::sweep::SweepRecord,
) -> Result<BTreeMap<usize, Vec<String>>, Error> {
    // The run file shows the varied values, seeds and metrics; what it cannot show — the
    // topology file's contents and the fixed [set] — the record beside it does.
    let old = crate::sweep::SweepRecord::read(&files.record_path)
        .map_err(|e| Error::Input(format!("igemu: {e}")))?;
    let changes = old.as_ref().map(|o| o.changes(record)).unwrap_or_default();
    if !changes.is_empty() {
        return Err(Error::Input(format!(
            "igemu: {}: its runs were made from other inputs: {}; resume only with the \
             inputs that made them, or give another --out to start over",
            files.record_path.display(),
            changes.join("; ")
        )));
    }
    let done = crate::sweep::read_done(spec, &files.header, &files.runs)
        .map_err(|e| Error::Input(format!("igemu: {e}")))?;
    if let Some(old) = old.filter(|_| !done.is_empty()) {
        record.carry_builds(&old);
    }
    Ok(done)
}

/// Readies the output folder, then writes the record and the run file of the runs `done`.
pub(super) fn start_sweep_out(
    files: &SweepFiles,
    record: &mut crate::sweep::SweepRecord,
    done: &BTreeMap<usize, Vec<String>>,
    resuming: bool,
    overwrite: bool,
) -> Result<(), Error> {
    let SweepFiles { out, runs, .. } = files;
    // Resumed, the run file and its record were checked: they are this sweep's, and so are
    // a whole sweep's points.csv and paired.csv, rewritten from them at the end (with or
    // without a record: an older igemu wrote none).
    let mut keep = Vec::new();
    if resuming {
        keep.extend([runs.clone(), files.record_path.clone()]);
        if runs.ends_with("runs.csv") {
            keep.extend(["points.csv", "paired.csv"].map(|n| out.join(n)));
        }
    }
    let keep: Vec<&Path> = keep.iter().map(PathBuf::as_path).collect();
    prepare_sweep_out(out, record, &keep, overwrite)?;
    create_dir(out)?;
    let file_name = runs
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().to_string());
    record.outputs = vec![file_name];
    // The record first: a run file never stands without the record of what made it (which
    // a later sweep into this folder would take for another sweep's).
    record.write(&files.record_path).map_err(Error::Failed)?;
    // The whole sweep's points, paired differences and report are rewritten at its end:
    // left while it runs, an interrupted re-run left them beside a partial run file, and the
    // report drew them as if whole.
    remove_outputs(out, &["points.csv", "paired.csv"])?;
    // The run file holds the finished runs (none, or those kept for --resume), and every
    // run's row is appended and flushed as it finishes: an interrupted sweep (Ctrl-C ends the
    // process) loses only the runs in flight.
    crate::sweep::write_rows(&files.header, done, runs).map_err(Error::Failed)
}

/// Runs this shard's runs not in `done`, appending each row as it ends; returns (ran, failed).
pub(super) fn run_sweep(
    spec: &crate::sweep::Sweep,
    files: &SweepFiles,
    done: &mut BTreeMap<usize, Vec<String>>,
    jobs: usize,
    style: Style,
    resume: &str,
) -> Result<(usize, usize), Error> {
    let (i, n) = files.shard;
    let todo: Vec<crate::sweep::RunSpec> = spec
        .runs()
        .into_iter()
        .filter(|r| r.index % n == i && !done.contains_key(&r.index))
        .collect();
    let kept = interrupted_sweep_keeps(files, done.len(), done.len() + todo.len(), resume);
    let mut sink = crate::sweep::RowSink::append(&files.runs).map_err(Error::Failed)?;
    let mut write_error = None;
    let (ran, failed) = crate::sweep::execute(spec, todo, jobs, style, |o| {
        let row = crate::sweep::run_row(o, &files.metrics);
        if let Err(e) = sink.write(&row) {
            write_error.get_or_insert(e);
        }
        done.insert(o.0.index, row);
        kept.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    });
    if let Some(e) = write_error {
        return Err(Error::Failed(e));
    }
    // Finished: the file again in run order, so it is the same whatever order runs ended in.
    crate::sweep::write_rows(&files.header, done, &files.runs).map_err(Error::Failed)?;
    Ok((ran, failed))
}

/// Says, for an interruption, how many of the `total` runs are kept in the run file (`kept`
/// so far; the returned counter counts the rest as they end) and the command going on.
pub(super) fn interrupted_sweep_keeps(
    files: &SweepFiles,
    kept: usize,
    total: usize,
    resume: &str,
) -> std::sync::Arc<std::sync::atomic::AtomicUsize> {
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(kept));
    let (count, runs, resume) = (counter.clone(), files.runs.clone(), resume.to_string());
    interrupt::keeps(move || {
        let kept = count.load(std::sync::atomic::Ordering::Relaxed);
        format!(
            "{kept} of {total} runs are kept in {} (runs in flight are lost); go on with `{resume}`",
            runs.display()
        )
    });
    counter
}

/// Writes a whole sweep's points and the finished record; says how the runs went.
pub(super) fn finish_sweep(
    files: &SweepFiles,
    record: &mut crate::sweep::SweepRecord,
    (ran, skipped, failed): (usize, usize, usize),
) -> Result<(), Error> {
    let SweepFiles { out, runs, .. } = files;
    let ran = if skipped > 0 {
        format!("{ran} runs ({skipped} already done, kept)")
    } else {
        format!("{ran} runs")
    };
    record.finished = true;
    if files.shard.1 > 1 {
        // A shard's points would be partial: only `sweep merge` of every shard writes them.
        record.write(&files.record_path).map_err(Error::Failed)?;
        say!(
            "{ran} ({failed} failed): {} (join the shards with `igemu sweep merge`)",
            runs.display()
        );
    } else {
        let points = crate::sweep::summarize(std::slice::from_ref(runs), &out.join("points.csv"))
            .map_err(Error::Failed)?;
        let paired = write_paired(std::slice::from_ref(runs), out).map_err(Error::Failed)?;
        record.outputs.push("points.csv".into());
        record
            .outputs
            .extend(paired.then(|| "paired.csv".to_string()));
        record.write(&files.record_path).map_err(Error::Failed)?;
        say!(
            "{ran} ({failed} failed), {points} points: {} and {}",
            runs.display(),
            out.join("points.csv").display()
        );
        print_sweep_table(out);
    }
    if failed > 0 {
        return Err(Error::Failed(format!(
            "{failed} run(s) failed; their errors are in the `error` column of {}",
            runs.display()
        )));
    }
    Ok(())
}

/// Writes `paired.csv` beside `points.csv` when a varied key is policy-like (and removes a
/// stale one when none is); says whether it wrote one.
pub(super) fn write_paired(runs: &[PathBuf], out: &Path) -> Result<bool, String> {
    let path = out.join("paired.csv");
    let written = crate::sweep::paired(runs, &path)?.is_some();
    if !written && path.exists() {
        std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(written)
}

pub(super) fn merge(out: &Path, files: &[PathBuf], overwrite: bool) -> Result<(), Error> {
    let record = merged_record(files).map_err(|e| Error::Input(format!("igemu: {e}")))?;
    create_dir(out)?;
    // A folder holds one sweep: the shards merged (beside their records) and an earlier
    // merge of the same sweep may be there; another sweep's results or a run's may not.
    match &record {
        Some(record) => {
            // The files merged, and their records, are read, not replaced.
            let records: Vec<PathBuf> = files
                .iter()
                .map(|f| crate::sweep::record_beside(f))
                .collect();
            let keep: Vec<&Path> = files.iter().chain(&records).map(PathBuf::as_path).collect();
            prepare_sweep_out(out, record, &keep, overwrite)?
        }
        None => {
            let stress = stress_results_in(out, overwrite)?;
            let run = run_files(out);
            match (run.is_empty(), overwrite) {
                (true, _) => {}
                (false, false) => return Err(holds_a_run(out, &run)),
                (false, true) => remove_outputs(out, &run)?,
            }
            if !stress.is_empty() {
                remove_outputs(out, &stress)?;
            }
        }
    }
    let merged = out.join("runs.csv");
    let (points, paired) = merge_runs(files, &merged)
        .and_then(|_| {
            crate::sweep::summarize(std::slice::from_ref(&merged), &out.join("points.csv"))
        })
        .and_then(|p| write_paired(std::slice::from_ref(&merged), out).map(|w| (p, w)))
        .map_err(|e| Error::Input(format!("igemu: {e}")))?;
    match record {
        Some(mut record) => {
            record.outputs = vec!["runs.csv".into(), "points.csv".into()];
            record
                .outputs
                .extend(paired.then(|| "paired.csv".to_string()));
            record
                .write(&out.join("sweep.json"))
                .map_err(Error::Failed)?;
        }
        None => tell!(
            "igemu: no shard recorded its inputs (sweep-I-of-N.json beside its run file), so \
             no sweep.json is written"
        ),
    }
    say!(
        "merged {} files, {points} points: {}",
        files.len(),
        out.join("points.csv").display()
    );
    print_sweep_table(out);
    Ok(())
}

/// Columns the table printed after a sweep fits in, and the points it lists at most.
pub(super) const SWEEP_TABLE: (usize, usize) = (100, 20);

/// Prints the sweep in `out` as a compact table (points, the first metrics) on stdout, as
/// `run` prints its summary: always, whatever `--quiet` (which hides progress, on stderr).
pub(super) fn print_sweep_table(out: &Path) {
    let (width, rows) = SWEEP_TABLE;
    match crate::report::sweep_table(out, width, rows) {
        Ok(table) => say!("{table}"),
        // The outputs are written; a table that cannot be made is only said.
        Err(e) => tell!("igemu: no table of the points: {e}"),
    }
}

/// `I/N` as a shard (`0 ≤ I < N`).
pub(super) fn shard_of(text: &str) -> Option<(usize, usize)> {
    parse_shard(text).filter(|&(_, n)| n > 1)
}

/// The shard a run file holds: its record's `shard`, else its name's `runs-I-of-N.csv` (a
/// shard written by an older igemu, without a record); `None` for a whole sweep's.
pub(super) fn file_shard(
    file: &Path,
    record: Option<&crate::sweep::SweepRecord>,
) -> Option<(usize, usize)> {
    if let Some(r) = record {
        return r.shard.as_deref().and_then(shard_of);
    }
    let name = file.file_name()?.to_str()?;
    let (i, n) = name
        .strip_prefix("runs-")?
        .strip_suffix(".csv")?
        .split_once("-of-")?;
    shard_of(&format!("{i}/{n}"))
}

/// Refuses shards that are not every shard of one split: shards of two splits (`--shard
/// I/2` and `--shard J/3`), or a split with a shard missing — merged, it would read as the
/// whole sweep with runs missing and nothing to say so.
pub(super) fn check_shards(shards: &[(&Path, Option<(usize, usize)>)]) -> Result<(), String> {
    let mut split: Option<(&Path, usize, usize)> = None;
    let mut present = std::collections::BTreeSet::new();
    for &(f, shard) in shards {
        let Some((i, n)) = shard else { continue };
        match split {
            Some((g, j, m)) if m != n => {
                return Err(format!(
                    "{} is shard {i}/{n} and {} shard {j}/{m}: shards of two splits; merge \
                     the shards of one split (one N in --shard I/N)",
                    f.display(),
                    g.display()
                ))
            }
            Some(_) => {}
            None => split = Some((f, i, n)),
        }
        present.insert(i);
    }
    let Some((_, _, n)) = split else {
        return Ok(());
    };
    let missing: Vec<String> = (0..n)
        .filter(|i| !present.contains(i))
        .map(|i| format!("{i}/{n}"))
        .collect();
    match missing.len() {
        0 => Ok(()),
        1 => Err(format!(
            "shard {} is missing: give every shard's run file (runs-I-of-{n}.csv for I from 0 \
             to {})",
            missing[0],
            n - 1
        )),
        _ => Err(format!(
            "shards {} are missing: give every shard's run file (runs-I-of-{n}.csv for I from \
             0 to {})",
            missing.join(", "),
            n - 1
        )),
    }
}

/// The record of a merge: the shards' records (`sweep-I-of-N.json` beside each run file)
/// must agree on what was run, and every shard of the split must be there (as the records,
/// or else the files' names, say); `None` when no shard has a record.
pub(super) fn merged_record(
    files: &[PathBuf],
) -> Result<Option<crate::sweep::SweepRecord>, String> {
    let mut merged: Option<(PathBuf, crate::sweep::SweepRecord)> = None;
    let mut finished = true;
    let mut shards = Vec::new();
    for f in files {
        let path = crate::sweep::record_beside(f);
        let record = crate::sweep::SweepRecord::read(&path)?;
        shards.push((f.as_path(), file_shard(f, record.as_ref())));
        let Some(r) = record else {
            finished = false;
            continue;
        };
        finished &= r.finished;
        match &mut merged {
            None => merged = Some((path, r)),
            Some((first, m)) => {
                let differ = m.shard_mismatch(&r);
                m.carry_builds(&r);
                if !differ.is_empty() {
                    return Err(format!(
                        "{} and {} record different sweeps: {}; merge only the shards of one sweep",
                        first.display(),
                        path.display(),
                        differ.join("; ")
                    ));
                }
            }
        }
    }
    check_shards(&shards)?;
    Ok(merged.map(|(_, mut r)| {
        r.shard = None;
        r.finished = finished;
        r.merged_from = files.iter().map(|f| f.display().to_string()).collect();
        r
    }))
}

/// The files a whole sweep or a merge writes into its folder (`report.html` aside); a shard
/// writes `runs-I-of-N.csv` and `sweep-I-of-N.json` instead ([`shard_file`]).
pub(super) const SWEEP_OUTPUTS: [&str; 4] = ["sweep.json", "runs.csv", "points.csv", "paired.csv"];

/// Whether `name` is a shard's run file or record: `runs-I-of-N.csv`, `sweep-I-of-N.json`.
pub(super) fn shard_file(name: &str) -> bool {
    [("runs-", ".csv"), ("sweep-", ".json")]
        .iter()
        .any(|(head, tail)| {
            name.strip_prefix(head)
                .and_then(|n| n.strip_suffix(tail))
                .and_then(|n| n.split_once("-of-"))
                .is_some_and(|(i, n)| shard_of(&format!("{i}/{n}")).is_some())
        })
}

/// The sweep files in `dir` (a sweep's, a merge's or shards'), records first, then in name
/// order: removed in this order, a folder without a record holds no whole sweep.
pub(super) fn sweep_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| SWEEP_OUTPUTS.contains(&n.as_str()) || shard_file(n))
                .collect()
        })
        .unwrap_or_default();
    names.sort_by_key(|n| (!n.ends_with(".json"), n.clone()));
    names
}

/// Makes `out` ready for the sweep `record` describes, so that it holds one whole sweep: a
/// run's outputs there, or another sweep's — a record of other inputs with its files, or
/// results with no record to say what made them — are refused unless `overwrite`, which
/// removes just those. The files of the same sweep stay (shards share a folder), and so do
/// those in `keep` (the run file and record `--resume` goes on with, the files a merge reads).
pub(super) fn prepare_sweep_out(
    out: &Path,
    record: &crate::sweep::SweepRecord,
    keep: &[&Path],
    overwrite: bool,
) -> Result<(), Error> {
    let kept = |name: &str| keep.iter().any(|k| same_file(k, &out.join(name)));
    owned::refuse_foreign(out)?;
    // The record saying what made a file: points.csv and paired.csv are the whole sweep's.
    let record_of = |name: &str| -> String {
        match name {
            "points.csv" | "paired.csv" => "sweep.json".to_string(),
            _ => crate::sweep::record_beside(&out.join(name))
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        }
    };
    let stress = stress_results_in(out, overwrite)?;
    let files = sweep_files(out);
    // Records of other inputs (or unreadable), with why.
    let mut differing: BTreeMap<String, String> = BTreeMap::new();
    for name in files.iter().filter(|n| n.ends_with(".json")) {
        let why = match crate::sweep::SweepRecord::read(&out.join(name)) {
            Ok(Some(old)) => Some(old.shard_mismatch(record).join("; ")).filter(|d| !d.is_empty()),
            Ok(None) => None,
            Err(e) => Some(e),
        };
        if let Some(why) = why {
            differing.insert(name.clone(), why);
        }
    }
    // Why the folder holds another sweep's results, and those files.
    let mut other = Vec::new();
    let mut theirs = Vec::new();
    for name in files.iter().filter(|n| !kept(n)) {
        if let Some(why) = differing.get(name) {
            other.push(format!("{name}: {why}"));
        } else if name.ends_with(".json") {
            continue; // a record of the same sweep
        } else {
            let record = record_of(name);
            if !files.contains(&record) {
                other.push(format!("{name} without the {record} saying what made it"));
            } else if !differing.contains_key(&record) {
                continue; // the same sweep's
            }
        }
        theirs.push(name.as_str());
    }
    let run = run_files(out);
    if !overwrite {
        if !run.is_empty() {
            return Err(holds_a_run(out, &run));
        }
        if !other.is_empty() {
            return Err(Error::Usage(format!(
                "{} holds another sweep's results ({}); pass --overwrite to replace them, or choose another --out",
                out.display(),
                other.join("; ")
            )));
        }
        return Ok(());
    }
    if !run.is_empty() {
        remove_outputs(out, &run)?;
    }
    if !stress.is_empty() {
        remove_outputs(out, &stress)?;
    }
    if !theirs.is_empty() {
        // Records first (`sweep_files` lists them first): a folder without one holds no
        // whole sweep.
        remove_outputs(out, &theirs)?;
    }
    Ok(())
}

/// Joins shards' run files (same columns) into one with one header and the rows in run
/// order, as the unsharded sweep writes them. Each file is read once (a pipe given as
/// `<(...)` can be), and refused at the place where it is no sweep's run file
/// ([`crate::sweep::read_runs`]). Written through a temporary file renamed at the end, so
/// `out` may be one of `files` (`sweep merge --out D D/runs.csv`) and a failed merge leaves
/// the old file whole.
pub(super) fn merge_runs(files: &[PathBuf], out: &Path) -> Result<(), String> {
    let (header, rows) = crate::sweep::read_runs(files)?;
    if rows.is_empty() {
        let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        return Err(format!(
            "no runs in {}: nothing to merge; give the run files of shards that ran",
            names.join(", ")
        ));
    }
    let (tmp, file) =
        crate::create_temp_beside(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut w = csv::Writer::from_writer(file);
    let result = std::iter::once(&header)
        .chain(&rows)
        .try_for_each(|row| w.write_record(row))
        .and_then(|()| w.flush().map_err(csv::Error::from))
        .map_err(|e| e.to_string())
        .and_then(|()| std::fs::rename(&tmp, out).map_err(|e| format!("{}: {e}", out.display())));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
