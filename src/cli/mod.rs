//! The `igemu` command line: parses arguments and dispatches to the library; an
//! [`crate::Error`] names its own exit code (0 success, 1 failure while running or writing,
//! 2 bad input). [`main_with`] runs it with a [`Registry`] of policies: the `igemu` binary's
//! has those igemu ships, a user's own binary adds its own.

mod interrupt;
mod owned;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::policy::Registry;
use crate::progress::Style;

/// `println!` that ignores a reader that went away (`igemu validate ... | head`): the output
/// is for that reader, and its leaving is not an error.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}
/// `eprintln!` that ignores a standard error gone away (`igemu validate ... 2>&1 | head`):
/// the exit code still tells the outcome.
macro_rules! tell {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}
use crate::threads::why;
use crate::topology::{self, Overrides, Topology};
use crate::{run, Error, RunOptions};

#[derive(Parser)]
#[command(name = "igemu", version = crate::build_info::long_version(), about = "An actor-based emulator of InterGrid", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Copy, Clone, ValueEnum)]
enum Mode {
    Virtual,
    Realtime,
}

/// The deliberately broken variants `--broken-protocol[=FLAW]` runs (tests only).
#[derive(Copy, Clone, ValueEnum)]
enum FlawArg {
    /// A requester serves a request itself when a redirection's acknowledgement is late.
    LateAck,
    /// A host judges capacity at each arrival, assuming one leaving at the same instant has
    /// left first.
    EagerCapacity,
}

/// The variant `--broken-protocol[=FLAW]` asks for (none without the flag).
fn broken(flaw: Option<FlawArg>) -> crate::Broken {
    match flaw {
        None => crate::Broken::None,
        Some(FlawArg::LateAck) => crate::Broken::LateAck,
        Some(FlawArg::EagerCapacity) => crate::Broken::EagerCapacity,
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run an emulation (the embedded quickstart topology when no file is given).
    Run(RunArgs),
    /// Re-run a recorded run (`run --record FILE`) in virtual time, delivering every message,
    /// timer and task in the recorded order: a failure seen once is seen again, and can be
    /// traced (--trace).
    Replay(ReplayArgs),
    /// Run a parameter sweep (see docs/sweeps.md), or merge shards' results.
    #[command(args_conflicts_with_subcommands = true)]
    Sweep {
        #[command(subcommand)]
        command: Option<SweepCommand>,
        /// The sweep file (TOML).
        file: Option<PathBuf>,
        /// Output directory (runs.csv, points.csv, paired.csv, sweep.json).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Parallel runs (default: the number of cores).
        #[arg(long)]
        jobs: Option<usize>,
        /// Run only shard I of N (runs whose index ≡ I mod N), e.g. --shard 0/4.
        #[arg(long, value_name = "I/N")]
        shard: Option<String>,
        /// Keep the finished runs already in the output's run file and run only the others
        /// (refused if the file, or sweep.json, was written for a different sweep).
        #[arg(long)]
        resume: bool,
        /// Replace what --out holds of another sweep (other inputs, as its sweep.json says) or
        /// of a run (without it, such a directory is refused, so two never mix).
        #[arg(long)]
        overwrite: bool,
        /// Show no progress (shown on stderr when the sweep takes over two seconds).
        #[arg(long)]
        quiet: bool,
    },
    /// Stress-test peering: run a topology over seeds and fault settings in parallel and
    /// report invariant violations with the commands that reproduce them.
    Stress {
        /// Topology file.
        topology: PathBuf,
        /// Number of seeds: S..=S+N-1, S being --first-seed (1..=N by default).
        #[arg(long, default_value_t = 10)]
        seeds: u64,
        /// The first seed (each run's emulation.seed; `--set emulation.seed` is refused, as
        /// stress sets the seed of every run): with --seeds, a stress test over other seeds
        /// than 1..=N, e.g. --first-seed 100001 --seeds 100000 after a first 100000.
        #[arg(long, value_name = "S", default_value_t = 1)]
        first_seed: u64,
        /// Fault settings: none, lossy, slow, late, partition, crash, chaos (comma-separated).
        #[arg(
            long,
            default_value = "none,lossy,slow,late,partition,crash,chaos",
            value_delimiter = ','
        )]
        faults: Vec<String>,
        /// Parallel runs (default: the number of cores).
        #[arg(long)]
        jobs: Option<usize>,
        /// Explore K orders of same-time deliveries per seed and fault setting (schedules
        /// 1..=K, each a seeded PCT-style perturbation; emulation.interleaving) instead of
        /// the FIFO order alone.
        #[arg(long, value_name = "K", default_value_t = 0)]
        interleavings: u64,
        /// Time mode of the runs: virtual (deterministic; the default) or realtime (with
        /// --speedup, and --threads for true concurrency).
        #[arg(long, value_enum, default_value = "virtual")]
        mode: Mode,
        /// Realtime mode: emulated seconds per wall second.
        #[arg(long, value_name = "S", value_parser = parse_speedup_number)]
        speedup: Option<f64>,
        /// Realtime mode: run each run's Grids on N threads (as `run --threads`).
        #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
        threads: u16,
        /// Overrides applied to every run.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Also write the results to this directory as stress.csv and stress.json (each
        /// written whole or not at all).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Replace what --out holds of another stress test (other inputs, as its stress.json
        /// says), a run or a sweep (without it, such a directory is refused, so two never
        /// mix; the same stress test's results are replaced).
        #[arg(long)]
        overwrite: bool,
        /// Show no progress (shown on stderr when the runs take over two seconds).
        #[arg(long)]
        quiet: bool,
        /// Run a deliberately broken variant (late-ack, the default: a requester may serve a
        /// request it has redirected; eager-capacity: hosts judge capacity at each
        /// arrival), to check that the invariant checker catches it.
        #[arg(long, hide = true, value_name = "FLAW", num_args = 0..=1, require_equals = true, default_missing_value = "late-ack")]
        broken_protocol: Option<FlawArg>,
    },
    /// Filter a trace.jsonl to one request or negotiation, or list its negotiations as CSV;
    /// render it as text, a Mermaid sequence diagram or a Gantt chart for Perfetto (Chrome
    /// trace-event JSON). Reads the file as a stream: any size will do.
    Trace(TraceArgs),
    /// Work with workload traces.
    Workload {
        #[command(subcommand)]
        command: WorkloadCommand,
    },
    /// Write report.html into a run's or a sweep's output directory: one self-contained page
    /// (provenance, key figures, a Gantt chart per cluster, utilisation over time, peering;
    /// for a sweep, each metric against the varied key with 95 % CIs) that opens offline.
    Report {
        /// The directory: `igemu run --out`'s (summary.json) or `igemu sweep --out`'s
        /// (points.csv).
        dir: PathBuf,
        /// Draw only this window of emulated time in a run's Gantt and utilisation charts:
        /// FROM..TO, ..TO or FROM.. (durations such as 12h, 1d6h).
        #[arg(long, value_name = "FROM..TO")]
        window: Option<String>,
        /// Write the page here instead of DIR/report.html.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Check topology files; exit 0 when all are valid, 2 otherwise.
    Validate {
        /// Topology files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Overrides to apply before checking (as for `run`).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
    },
}

#[derive(Subcommand)]
enum SweepCommand {
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

fn parse_shard(text: &str) -> Option<(usize, usize)> {
    let (i, n) = text.split_once('/')?;
    let (i, n) = (i.trim().parse().ok()?, n.trim().parse().ok()?);
    (n > 0 && i < n).then_some((i, n))
}

/// Makes the output directory `dir` (of a run, sweep, merge or stress test): refused if it
/// is a file, a link to nothing, a folder igemu cannot write files in (known now, not after
/// a run of hours), or holds something that is not a file where igemu keeps one of its
/// outputs.
fn create_dir(dir: &Path) -> Result<(), Error> {
    // The root of the file system (`/`, or a path that resolves to it) is no output folder:
    // a run's files would land among the system's.
    if std::fs::canonicalize(dir).is_ok_and(|c| c.parent().is_none()) {
        return Err(Error::Usage(format!(
            "--out {}: that is the root of the file system; give a folder of its own for the \
             outputs, e.g. --out out/run1 (it is created if needed)",
            dir.display()
        )));
    }
    if std::fs::metadata(dir).is_ok_and(|m| !m.is_dir()) {
        return Err(Error::Usage(format!(
            "--out {}: that is a file, not a directory; give a directory (it is created if needed)",
            dir.display()
        )));
    }
    if std::fs::metadata(dir).is_err() && std::fs::symlink_metadata(dir).is_ok() {
        let target = std::fs::read_link(dir).unwrap_or_default();
        return Err(Error::Usage(format!(
            "--out {}: that is a link to {}, which does not exist; create the folder it points to, remove the link, or choose another --out",
            dir.display(),
            target.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(Error::output(dir))?;
    // A file of igemu's own, created and removed at once: the outputs are written as files
    // beside each other in `dir`, so a folder that takes none is refused before the work.
    match crate::create_temp_beside(&dir.join("probe")) {
        Ok((probe, file)) => {
            drop(file);
            let _ = std::fs::remove_file(probe);
        }
        Err(e) => {
            return Err(Error::Usage(format!(
                "--out {}: igemu cannot create files there ({e}); give a folder you may write in",
                dir.display()
            )))
        }
    }
    crate::check_regular_files(dir, |name| {
        crate::RUN_OUTPUTS.contains(&name)
            || SWEEP_OUTPUTS.contains(&name)
            || shard_file(name)
            || ["report.html", "stress.csv", "stress.json"].contains(&name)
    })
}

/// The most schedules `stress --interleavings` explores per seed.
const MAX_STRESS_INTERLEAVINGS: u64 = 10_000;
/// The most runs one stress test makes (fault settings × seeds × schedules).
const MAX_STRESS_RUNS: u64 = 1_000_000;

/// Parallel runs: `--jobs` or the cores, at most four per core (each job is a thread; more
/// would only contend for the cores and memory). `--jobs 0` is refused: it would run nothing.
fn jobs_or_cores(jobs: Option<usize>) -> Result<usize, Error> {
    if jobs == Some(0) {
        return Err(Error::Usage(
            "--jobs 0 would run nothing; give at least 1 (or leave --jobs out for one per core)"
                .into(),
        ));
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    Ok(jobs.unwrap_or(cores).clamp(1, 4 * cores))
}

/// How a sweep runs, beyond what and where.
struct SweepFlags {
    /// Keep the finished runs of the output's run file.
    resume: bool,
    /// Replace another sweep's or a run's outputs in the output folder.
    overwrite: bool,
    /// How progress is shown.
    style: Style,
}

fn sweep(
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
fn resume_command(file: &Path, files: &SweepFiles) -> String {
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
fn sweep_shard(shard: Option<&str>) -> Result<(usize, usize), Error> {
    match shard.map(parse_shard) {
        None => Ok((0, 1)),
        Some(Some(s)) => Ok(s),
        Some(None) => Err(Error::Usage(
            "--shard takes I/N with 0 ≤ I < N, e.g. --shard 0/4".into(),
        )),
    }
}

/// Loads the topology with every varied value of the first seed, returning the first point's.
fn check_sweep_points(
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
struct SweepFiles {
    /// The output folder.
    out: PathBuf,
    /// The run file: `runs.csv`, or a shard's `runs-I-of-N.csv`.
    runs: PathBuf,
    /// The record beside it: `sweep.json`, or a shard's `sweep-I-of-N.json`.
    record_path: PathBuf,
    /// The run file's columns.
    header: Vec<String>,
    /// The summary keys each run's row holds.
    metrics: Vec<String>,
    /// The shard run: (I, N), `(0, 1)` for the whole sweep.
    shard: (usize, usize),
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
fn resumed_runs(
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
fn start_sweep_out(
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
fn run_sweep(
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
fn interrupted_sweep_keeps(
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
fn finish_sweep(
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
fn write_paired(runs: &[PathBuf], out: &Path) -> Result<bool, String> {
    let path = out.join("paired.csv");
    let written = crate::sweep::paired(runs, &path)?.is_some();
    if !written && path.exists() {
        std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(written)
}

fn merge(out: &Path, files: &[PathBuf], overwrite: bool) -> Result<(), Error> {
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
const SWEEP_TABLE: (usize, usize) = (100, 20);

/// Prints the sweep in `out` as a compact table (points, the first metrics) on stdout, as
/// `run` prints its summary: always, whatever `--quiet` (which hides progress, on stderr).
fn print_sweep_table(out: &Path) {
    let (width, rows) = SWEEP_TABLE;
    match crate::report::sweep_table(out, width, rows) {
        Ok(table) => say!("{table}"),
        // The outputs are written; a table that cannot be made is only said.
        Err(e) => tell!("igemu: no table of the points: {e}"),
    }
}

/// `I/N` as a shard (`0 ≤ I < N`).
fn shard_of(text: &str) -> Option<(usize, usize)> {
    parse_shard(text).filter(|&(_, n)| n > 1)
}

/// The shard a run file holds: its record's `shard`, else its name's `runs-I-of-N.csv` (a
/// shard written by an older igemu, without a record); `None` for a whole sweep's.
fn file_shard(file: &Path, record: Option<&crate::sweep::SweepRecord>) -> Option<(usize, usize)> {
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
fn check_shards(shards: &[(&Path, Option<(usize, usize)>)]) -> Result<(), String> {
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
fn merged_record(files: &[PathBuf]) -> Result<Option<crate::sweep::SweepRecord>, String> {
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

#[derive(Subcommand)]
enum WorkloadCommand {
    /// Summarise an SWF or GWF trace (jobs, span, arrival rate, sizes, runtimes; a GWF
    /// trace's sites); exit 2 on a malformed file, naming the lines, or on a file that is no
    /// trace at all.
    Inspect {
        /// The trace: Grid Workload Format if its name ends in `.gwf`, else Standard
        /// Workload Format.
        file: PathBuf,
    },
    /// Write one workload of a topology — generated by its model and seed, or listed — as
    /// an SWF trace, to freeze it or to use it elsewhere.
    Export {
        /// Topology file.
        topology: PathBuf,
        /// The workload's name.
        #[arg(long)]
        workload: String,
        /// The SWF file to write, or `-` for standard output.
        #[arg(long)]
        out: PathBuf,
        /// Overrides applied before generating (as for `run`).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
    },
}

/// `--set` overrides with the program's policies.
fn overrides(sets: Vec<String>, registry: &Registry) -> Overrides {
    Overrides {
        sets,
        registry: registry.clone(),
    }
}

fn export(path: &Path, name: &str, out: &Path, overrides: Overrides) -> Result<(), Error> {
    // An input trace could be the file named: only an earlier export is replaced.
    let export: crate::OutputKind = ("an SWF file igemu exported", |h| {
        h.starts_with(b"; Version: 2.2\n; Computer: igemu export of workload")
    });
    let topo = topology::load_file(path, &overrides)?;
    // `-` is standard output (`--out - | gzip`), not a file of that name.
    let to_stdout = out == Path::new("-");
    // The topology and every trace it replays are inputs: an earlier export replayed by a
    // workload is still an input, and must not be replaced by its own re-export.
    let mut inputs = vec![path.to_path_buf()];
    inputs.extend(topo.workloads.iter().filter_map(|w| w.trace_file.clone()));
    if !to_stdout {
        // A FIFO or a device takes the trace through standard output (the check below
        // would advise leaving --out out, which this command needs).
        if std::fs::metadata(out).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
            return Err(Error::Usage(format!(
                "--out {0}: that is not a regular file (a device, FIFO or socket): igemu writes a file beside it and renames it into place, which would replace it. Give the path of a file, or write to it through standard output: --out - > {0}",
                out.display()
            )));
        }
        crate::check_output_file("--out", out, &inputs, export)?;
    }
    let Some(w) = topo.workloads.iter().find(|w| w.name == name) else {
        let names: Vec<&str> = topo.workloads.iter().map(|w| w.name.as_str()).collect();
        return Err(Error::Usage(format!(
            "{} has no workload `{name}`; its workloads are: {}",
            path.display(),
            names.join(", ")
        )));
    };
    let jobs: Vec<crate::workload::Job> = w
        .requests
        .iter()
        .map(|id| {
            let r = &topo.requests[id.0 as usize];
            crate::workload::Job {
                arrival: r.arrival.since(crate::time::EmuTime::ZERO),
                vms: r.vms * r.cores_per_vm,
                duration: r.duration,
            }
        })
        .collect();
    let header = vec![
        (
            "Computer".to_string(),
            format!("igemu export of workload `{name}` of {}", path.display()),
        ),
        (
            "Installation".to_string(),
            "igemu (synthetic; no real users)".to_string(),
        ),
        (
            "Note".to_string(),
            format!(
                "seed {}; one processor per core; every job completed",
                topo.emulation.seed
            ),
        ),
    ];
    let text = crate::workload::swf::write(&jobs, &header);
    if to_stdout {
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        let written = stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush());
        match written {
            // The count on standard error: standard output is the trace.
            Ok(()) => tell!("{} jobs written to standard output", jobs.len()),
            // The reader went away (`| head`): the export ends quietly, as `trace` does.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            Err(e) => return Err(Error::output("standard output")(e)),
        }
        return Ok(());
    }
    write_atomically(out, text.as_bytes())?;
    say!("{} jobs written to {}", jobs.len(), out.display());
    Ok(())
}

/// The error for a trace with malformed lines: each as `file:line: error: ...` with its fix,
/// then a count and what a job line looks like.
fn malformed(file: &Path, errors: &[crate::workload::tracefile::LineError], shape: &str) -> Error {
    let mut lines = Vec::new();
    for e in errors {
        lines.push(format!(
            "{}:{}: error: {}",
            file.display(),
            e.line,
            e.message
        ));
        lines.push(format!("    hint: {}", e.fix));
    }
    lines.push(format!(
        "{}: {} malformed line(s); {shape}",
        file.display(),
        errors.len()
    ));
    Error::Input(lines.join("\n"))
}

/// The trace `reading` read from `file`, or the error to print: a file that is no trace (no
/// line read looks like a job line) says so in one line; a line that stopped the reading is
/// named with its fix; malformed lines are listed (`shape` says what a job line looks like).
fn read_trace<J>(
    file: &Path,
    reading: crate::workload::tracefile::Reading<J>,
    shape: &str,
) -> Result<crate::workload::tracefile::TraceFile<J>, Error> {
    use crate::workload::tracefile::ReadError;
    let neither = || {
        Error::Input(format!(
            "{}: neither an SWF nor a GWF trace: no job line (whitespace-separated numbers, 18 per line in SWF, 29 in GWF)",
            file.display()
        ))
    };
    match reading.trace {
        Ok(trace) if reading.looks_like_trace => Ok(trace),
        Err(ReadError::Io(e)) => Err(Error::Input(format!(
            "{}: cannot read the file: {e}",
            file.display()
        ))),
        Err(ReadError::Stop(e)) => Err(Error::Input(format!(
            "{}:{}: error: {}\n    hint: {}",
            file.display(),
            e.line,
            e.message,
            e.fix
        ))),
        Err(ReadError::Malformed(errors)) if reading.looks_like_trace => {
            Err(malformed(file, &errors, shape))
        }
        Ok(_) | Err(ReadError::Malformed(_)) => Err(neither()),
    }
}

fn inspect(file: &Path) -> Result<(), Error> {
    use crate::workload::tracefile;
    // Streamed a line at a time: `/dev/zero` is refused at its first line, and memory holds
    // the jobs, not the file.
    let reader = tracefile::open(file)
        .map_err(|e| Error::Input(format!("{}: cannot read the file: {e}", file.display())))?;
    let is_gwf = file
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gwf"));
    let s = if is_gwf {
        inspect_gwf(file, reader)?
    } else {
        inspect_swf(file, reader)?
    };
    if s.jobs == 0 {
        return Err(Error::Input(format!(
            "{}: no job line (only comments or blank lines): an empty trace",
            file.display()
        )));
    }
    print_trace_summary(&s);
    Ok(())
}

/// The error for a trace too large to summarise in memory.
fn out_of_memory(file: &Path) -> impl Fn(crate::workload::tracefile::OutOfMemory) -> Error + '_ {
    use crate::workload::tracefile::OutOfMemory;
    move |e: OutOfMemory| Error::Input(format!("{}: {e}; {}", file.display(), OutOfMemory::FIX))
}

/// Reads a GWF trace, prints its header and sites, and returns its summary.
fn inspect_gwf(file: &Path, reader: std::fs::File) -> Result<crate::workload::swf::Summary, Error> {
    use crate::workload::gwf;
    let trace = read_trace(
        file,
        gwf::read(reader),
        "GWF job lines have 29 whitespace-separated fields",
    )?;
    say!("{}", file.display());
    for (k, v) in trace.header.iter().take(10) {
        say!("  {k}: {v}");
    }
    let sites = trace.sites();
    let mut shown: Vec<String> = sites
        .iter()
        .take(20)
        .map(|(site, n)| format!("{site}: {n} jobs"))
        .collect();
    if sites.len() > shown.len() {
        shown.push(format!("and {} more", sites.len() - shown.len()));
    }
    if shown.is_empty() {
        shown.push("none given".into());
    }
    say!("  sites           {} (OrigSiteID)", shown.join(", "));
    gwf::summarize(&trace).map_err(out_of_memory(file))
}

/// Reads an SWF trace, prints its header's main fields, and returns its summary.
fn inspect_swf(file: &Path, reader: std::fs::File) -> Result<crate::workload::swf::Summary, Error> {
    use crate::workload::swf;
    let trace = read_trace(
        file,
        swf::read(reader),
        "SWF job lines have 18 numeric fields",
    )?;
    say!("{}", file.display());
    for (k, v) in trace.header.iter().filter(|(k, _)| {
        ["Computer", "MaxProcs", "MaxNodes", "UnixStartTime"].contains(&k.as_str())
    }) {
        say!("  {k}: {v}");
    }
    swf::summarize(&trace).map_err(out_of_memory(file))
}

/// Prints a trace's job count and, if any job is usable, their statistics.
fn print_trace_summary(s: &crate::workload::swf::Summary) {
    say!(
        "  jobs            {} ({} usable as leases, {} skipped: no size or no run time)",
        s.jobs,
        s.usable,
        s.jobs - s.usable
    );
    if s.usable == 0 {
        // Nothing to take statistics of.
        return;
    }
    say!(
        "  span            {:.0} s ({:.2} days)",
        s.span_s,
        s.span_s / 86_400.0
    );
    say!("  arrival rate    {:.2} jobs/hour", s.arrivals_per_hour);
    say!(
        "  size (VMs)      min {}  mean {:.2}  max {}  (serial {:.1} %, power of two {:.1} %)",
        s.size.0,
        s.size.1,
        s.size.2,
        100.0 * s.serial_share,
        100.0 * s.pow2_share
    );
    say!(
        "  runtime (s)     min {:.0}  mean {:.0}  max {:.0}",
        s.runtime.0,
        s.runtime.1,
        s.runtime.2
    );
}

/// Prints what validation warned about a topology it accepted, on standard error.
fn warn(topo: &Topology) {
    for w in &topo.warnings {
        tell!("{w}");
    }
}

fn load(path: Option<&PathBuf>, overrides: &Overrides) -> Result<Topology, Error> {
    let topo = load_quiet(path, overrides)?;
    warn(&topo);
    Ok(topo)
}

/// [`load`] without printing its warnings.
fn load_quiet(path: Option<&PathBuf>, overrides: &Overrides) -> Result<Topology, Error> {
    Ok(match path {
        Some(p) => topology::load_file(p, overrides)?,
        None => topology::load_str(
            topology::QUICKSTART,
            "<embedded quickstart>",
            "quickstart",
            None,
            overrides,
        )?,
    })
}

fn validate(files: &[PathBuf], sets: Vec<String>, registry: &Registry) -> Result<(), Error> {
    let overrides = overrides(sets, registry);
    let mut reports = Vec::new();
    for f in files {
        match topology::load_file(f, &overrides) {
            Ok(t) => {
                warn(&t);
                say!(
                    "{}: ok ({} grids, {} clusters, {} requests)",
                    f.display(),
                    t.grids.len(),
                    t.clusters.len(),
                    t.requests.len()
                )
            }
            Err(report) => reports.push(report.to_string()),
        }
    }
    if reports.is_empty() {
        Ok(())
    } else {
        Err(Error::Input(reports.join("\n")))
    }
}

/// `--speedup`: a number, or `auto`.
#[derive(Clone, Copy, Debug)]
enum SpeedupArg {
    /// Chosen by [`crate::choose_speedup`].
    Auto,
    /// As given.
    Fixed(f64),
}

fn parse_speedup(text: &str) -> Result<SpeedupArg, String> {
    if text == "auto" {
        return Ok(SpeedupArg::Auto);
    }
    match text.parse::<f64>() {
        Ok(_) => parse_speedup_number(text).map(SpeedupArg::Fixed),
        Err(_) => Err(format!("`{text}` is neither a number nor `auto`")),
    }
}

/// A speed-up given as a flag: a finite number in the range `emulation.speedup` takes (the
/// flag becomes that override, and NaN or infinity could not be written as one).
fn parse_speedup_number(text: &str) -> Result<f64, String> {
    let (lo, hi) = (topology::MIN_SPEEDUP, topology::MAX_SPEEDUP);
    match text.parse::<f64>() {
        Ok(x) if (lo..=hi).contains(&x) => Ok(x),
        Ok(_) => Err(format!(
            "`{text}` is not in {lo:e} ..= {hi:e} (emulated seconds per wall second)"
        )),
        Err(_) => Err(format!("`{text}` is not a number")),
    }
}

/// `--max-wall`: a wall-clock duration above zero (`30s`, `10m`, `2h`, `1h30m`).
fn parse_max_wall(text: &str) -> Result<std::time::Duration, String> {
    let d = crate::time::parse_duration(text)?;
    if d.as_micros() == 0 {
        return Err(format!(
            "`{text}` is no time at all: give a wall time above zero, such as 10m"
        ));
    }
    Ok(std::time::Duration::from_micros(d.as_micros()))
}

/// `igemu run`'s arguments.
#[derive(Args)]
struct RunArgs {
    /// Topology file (TOML).
    topology: Option<PathBuf>,
    /// Directory for requests.csv, decisions.csv, intervals.csv, utilization.csv,
    /// leases.csv, summary.json and (with --trace) trace.jsonl.
    #[arg(long, default_value = "out")]
    out: PathBuf,
    /// Seed of every random stream (overrides emulation.seed).
    #[arg(long)]
    seed: Option<u64>,
    /// Time mode (overrides emulation.mode).
    #[arg(long, value_enum)]
    mode: Option<Mode>,
    /// Emulated seconds per wall second in realtime mode (overrides emulation.speedup), or
    /// `auto`: the highest this machine sustains, measured on a virtual run of the same
    /// topology first (p99 timer lateness predicted at most 0.5 s), with the wall time the
    /// run will take at it; refused when that is more than --max-wall.
    #[arg(long, value_parser = parse_speedup)]
    speedup: Option<SpeedupArg>,
    /// With --speedup auto: the longest wall time the run may take (30s, 10m, 2h; 10m if not
    /// given). When the speed-up this machine sustains would take longer, nothing runs: the
    /// message names the wall time it would take and the options.
    #[arg(long, value_name = "DURATION", value_parser = parse_max_wall)]
    max_wall: Option<std::time::Duration>,
    /// Write every message to trace.jsonl.
    #[arg(long)]
    trace: bool,
    /// With --trace: write only messages of these kinds, e.g. PeerOffer,PeerAnswer (the
    /// `kind` field; docs/trace-format.md lists them).
    #[arg(long, value_name = "KIND,...", requires = "trace")]
    trace_kinds: Option<String>,
    /// With --trace: write only messages whose sender or receiver matches one of these
    /// patterns: an exact name (igg:das2), or a prefix ending in `:`, `/` or `*` (igg:,
    /// host:das2/, lrms:das2/fs*).
    #[arg(long, value_name = "PATTERN,...", requires = "trace")]
    trace_actors: Option<String>,
    /// With --trace: write only messages sent in this window of emulated time, FROM..TO
    /// with either end optional (1h..2h, ..6h, 30m..).
    #[arg(
        long,
        value_name = "FROM..TO",
        requires = "trace",
        allow_hyphen_values = true
    )]
    trace_window: Option<String>,
    /// Show no progress (shown on stderr for runs longer than two seconds).
    #[arg(long)]
    quiet: bool,
    /// Also write report.html (as `igemu report` does) into --out.
    #[arg(long)]
    report: bool,
    /// Replace the outputs of an earlier run in --out (without it, a directory that holds
    /// another run's outputs is refused, so two runs never mix).
    #[arg(long)]
    overwrite: bool,
    /// Override any topology key: --set lrms.preemption=nop (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Run a deliberately broken variant (what `stress --broken-protocol` ran; its reproduce
    /// lines pass this).
    #[arg(long, hide = true, value_name = "FLAW", num_args = 0..=1, require_equals = true, default_missing_value = "late-ack")]
    broken_protocol: Option<FlawArg>,
    /// Record the order in which every actor received its messages, timers and tasks to
    /// this file, for `igemu replay` (docs/architecture.md, "Record and replay").
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Realtime mode: serve a live view of the run at this address (e.g. 127.0.0.1:8080;
    /// port 0 picks a free one): per-cluster utilisation, queues, preemptions, negotiations
    /// in flight and the last messages, updated four times a second. A loopback address
    /// only (127.0.0.1, ::1, localhost) unless --serve-public is given; it stops with the
    /// run.
    #[arg(long, value_name = "ADDR")]
    serve: Option<String>,
    /// Let --serve listen on an address that is not loopback (0.0.0.0, ::, a LAN address):
    /// anyone who can reach it can watch the run (no password, no encryption).
    /// Without it such an address is refused (exit 2); with it a warning is printed.
    #[arg(long, requires = "serve")]
    serve_public: bool,
    /// Realtime mode: run the Grids on N threads (each Grid with its clusters, hosts and VMs
    /// on one; at most one per Grid: N above the number of Grids runs one thread per Grid, as
    /// summary.json's `threads` then says), so that handlers run in parallel and messages
    /// between Grids cross threads. Not deterministic; not with --trace, --record or --serve.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    threads: u16,
    /// Set by `igemu replay`: follow the order recorded in this file.
    #[arg(skip)]
    replay: Option<PathBuf>,
}

/// `igemu replay`'s arguments.
#[derive(Args)]
struct ReplayArgs {
    /// A record written by `igemu run --record FILE`.
    record: PathBuf,
    /// Directory for the replay's outputs (as `run` writes them).
    #[arg(long, default_value = "out/replay")]
    out: PathBuf,
    /// Write every message to trace.jsonl.
    #[arg(long)]
    trace: bool,
    /// Replace the outputs of an earlier run in --out.
    #[arg(long)]
    overwrite: bool,
    /// Show no progress.
    #[arg(long)]
    quiet: bool,
    /// Also write report.html into --out.
    #[arg(long)]
    report: bool,
}

/// Replays a record: the run it names (topology file, overrides, broken variant), in
/// virtual time, delivering in the recorded order.
fn replay(args: ReplayArgs, registry: &Registry) -> Result<(), Error> {
    // The record is read twice (its header says what to run, then the run reads its
    // deliveries): a pipe's second reading began past the header, and was refused as "line 1
    // is not an igemu record header" after the first had been shown.
    if std::fs::metadata(&args.record).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return Err(Error::Usage(format!(
            "{}: igemu replay reads the record twice (its header, to know what to run, then its deliveries), so it needs a regular file, not a pipe or a device; save the record to a file first",
            args.record.display()
        )));
    }
    let header = crate::read_record_header(&args.record)?;
    let p = &header.provenance;
    let topology = recorded_topology(&args.record, p)?;
    let flaw = match crate::Broken::from_name(&header.broken) {
        Some(crate::Broken::None) => None,
        Some(crate::Broken::LateAck) => Some(FlawArg::LateAck),
        Some(crate::Broken::EagerCapacity) => Some(FlawArg::EagerCapacity),
        None => {
            return Err(Error::Input(format!(
                "igemu: {}: unknown broken variant `{}` in the header",
                args.record.display(),
                header.broken
            )))
        }
    };
    let mut sets = p.overrides.clone();
    sets.push("emulation.mode=\"virtual\"".into());
    say!(
        "replay of a {} run{} (igemu {}, seed {}){}",
        header.mode,
        header
            .speedup
            .map_or(String::new(), |s| format!(" at x{s}")),
        p.igemu,
        header.seed,
        if header.interleaving > 0 {
            format!(", schedule {}", header.interleaving)
        } else {
            String::new()
        }
    );
    run_one(
        RunArgs {
            topology,
            out: args.out,
            seed: None,
            mode: None,
            speedup: None,
            trace: args.trace,
            trace_kinds: None,
            trace_actors: None,
            trace_window: None,
            quiet: args.quiet,
            report: args.report,
            overwrite: args.overwrite,
            sets,
            broken_protocol: flaw,
            record: None,
            replay: Some(args.record),
            serve: None,
            serve_public: false,
            threads: 1,
            max_wall: None,
        },
        registry,
    )
}

/// The topology file a record names, refused unless it is readable and unchanged since.
fn recorded_topology(record: &Path, p: &crate::Provenance) -> Result<Option<PathBuf>, Error> {
    let topology = p.topology_path.as_ref().map(PathBuf::from);
    if let Some(path) = &topology {
        if !path.is_file() {
            return Err(Error::Input(format!(
                "igemu: {}: the record names the topology {}, which cannot be read from here; run igemu replay from the directory the record was made in",
                record.display(),
                path.display()
            )));
        }
        let now = crate::file_hash(path);
        if now != p.topology_hash {
            return Err(Error::Input(format!(
                "igemu: {}: the topology {} has changed since the record was made (hash {} then, {} now); replay needs the file as it was",
                record.display(),
                path.display(),
                p.topology_hash.as_deref().unwrap_or("none"),
                now.as_deref().unwrap_or("none (unreadable)")
            )));
        }
    }
    Ok(topology)
}

/// Refuses a record path the run would lose or that would destroy something else
/// ([`crate::check_output_file`], which also refuses a missing folder — but not the `--out`
/// folder `out`, which the run makes: `--record D/run.rec --out D`), one of the run's own
/// outputs in `out` (written over the record), or an existing file that is not a record (an
/// old record is replaced, as a run replaces its own outputs).
fn check_record_path(record: &Path, out: &Path, inputs: &[PathBuf]) -> Result<(), Error> {
    crate::record_file_name(record)?;
    // Where a directory really is: through links and `..` where it exists; else its
    // absolute path with `.` and `..` taken out as written.
    let absolute = |p: &Path| {
        std::fs::canonicalize(p).unwrap_or_else(|_| {
            let whole = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
            let mut out = PathBuf::new();
            for part in whole.components() {
                match part {
                    std::path::Component::CurDir => {}
                    std::path::Component::ParentDir => {
                        out.pop();
                    }
                    other => out.push(other),
                }
            }
            out
        })
    };
    let parent = record.parent().unwrap_or(Path::new(""));
    // The run makes a missing --out, so a record in it needs no folder yet; only if the path
    // reaches it without `..` (`out/sub/../x.rec` needs `out/sub`, which nothing makes).
    let through_parent = parent
        .components()
        .any(|c| c == std::path::Component::ParentDir);
    let in_new_out =
        out.symlink_metadata().is_err() && !through_parent && absolute(parent) == absolute(out);
    if !in_new_out {
        crate::check_output_file("--record", record, inputs, ("a record", |_| true))?;
    }
    let name = record.file_name().map(|n| n.to_string_lossy().into_owned());
    let output = name
        .as_deref()
        .is_some_and(|n| crate::RUN_OUTPUTS.contains(&n) || n == "report.html");
    if output && absolute(parent) == absolute(out) {
        return Err(Error::Usage(format!(
            "--record {}: the run writes its own {} there; record to another name, e.g. {}",
            record.display(),
            name.unwrap_or_default(),
            out.join("run.rec").display()
        )));
    }
    if record.is_file() && crate::read_record_header(record).is_err() {
        return Err(Error::Usage(format!(
            "--record {}: that file exists and is not an igemu record; it is not replaced. Give another name",
            record.display()
        )));
    }
    Ok(())
}

/// The files a whole sweep or a merge writes into its folder (`report.html` aside); a shard
/// writes `runs-I-of-N.csv` and `sweep-I-of-N.json` instead ([`shard_file`]).
const SWEEP_OUTPUTS: [&str; 4] = ["sweep.json", "runs.csv", "points.csv", "paired.csv"];

/// Whether `name` is a shard's run file or record: `runs-I-of-N.csv`, `sweep-I-of-N.json`.
fn shard_file(name: &str) -> bool {
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
fn sweep_files(dir: &Path) -> Vec<String> {
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

/// The run outputs in `dir`, `summary.json` first: removed in this order, a folder without
/// it holds no whole run.
fn run_files(dir: &Path) -> Vec<&'static str> {
    let mut names: Vec<&str> = crate::RUN_OUTPUTS
        .into_iter()
        .filter(|f| dir.join(f).exists())
        .collect();
    names.sort_by_key(|n| *n != "summary.json");
    names
}

/// The refusal of a folder `out` holding a run's outputs (`run`) for a sweep's.
fn holds_a_run(out: &Path, run: &[&str]) -> Error {
    Error::Usage(format!(
        "{} holds a run's outputs ({}), and a folder holds one run or one sweep; pass --overwrite to replace them, or choose another --out",
        out.display(),
        run.join(", ")
    ))
}

/// A stress test's results in `dir`, `stress.json` first: removed in this order, a folder
/// without it holds no whole stress test.
fn stress_files(dir: &Path) -> Vec<&'static str> {
    ["stress.json", "stress.csv"]
        .into_iter()
        .filter(|f| dir.join(f).exists())
        .collect()
}

/// Refuses a folder holding a stress test's results for a run's or a sweep's outputs unless
/// `overwrite` (a folder holds one run, sweep or stress test); says which files to remove
/// once the new outputs are whole.
fn stress_results_in(dir: &Path, overwrite: bool) -> Result<Vec<&'static str>, Error> {
    let found = stress_files(dir);
    if found.is_empty() || overwrite {
        return Ok(found);
    }
    Err(Error::Usage(format!(
        "{} holds a stress test's results ({}), and a folder holds one run, sweep or stress \
         test; pass --overwrite to replace them, or choose another --out",
        dir.display(),
        found.join(", ")
    )))
}

/// What a stress test replaces in its `--out` folder once its results are whole.
#[derive(Default)]
struct Replaced {
    /// A run's or a sweep's files (`--overwrite`), records first.
    others: Vec<String>,
    /// Whether `stress.json` is another stress test's (`--overwrite`), removed before the
    /// new results are written.
    their_record: bool,
}

/// Makes `dir` ready for the results of the stress test `inputs` describes: the results of
/// the same stress test there are replaced; another's — a `stress.json` of other inputs, or
/// results with none saying what made them — and a run's or a sweep's outputs are refused
/// unless `overwrite`, as `run` and `sweep` refuse each other's. Nothing is removed yet.
fn prepare_stress_out(
    dir: &Path,
    inputs: &crate::stress::StressInputs,
    overwrite: bool,
) -> Result<Replaced, Error> {
    create_dir(dir)?;
    owned::refuse_foreign(dir)?;
    let others: Vec<String> = (sweep_files(dir).into_iter())
        .chain(run_files(dir).into_iter().map(str::to_string))
        .collect();
    let found = stress_files(dir);
    let record = dir.join("stress.json");
    // Why the results there are another stress test's, if they are.
    let theirs = if found.is_empty() {
        None
    } else if !found.contains(&"stress.json") {
        Some("stress.csv without the stress.json saying what made it".to_string())
    } else {
        // Capped: a stress.json that is no stress test's (a link to /dev/zero) is another's.
        let old = crate::input::read_capped(&record, crate::input::MAX_JSON_BYTES)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| {
                serde_json::from_value::<crate::stress::StressInputs>(v["inputs"].clone()).ok()
            });
        match old {
            Some(old) if old.same_test(inputs) => None,
            Some(_) => Some("stress.json: made from other inputs".to_string()),
            None => Some("stress.json without the inputs that made it".to_string()),
        }
    };
    if !overwrite {
        if !others.is_empty() {
            return Err(Error::Usage(format!(
                "{} holds a run's or a sweep's outputs ({}), and a folder holds one run, sweep \
                 or stress test; pass --overwrite to replace them, or choose another --out",
                dir.display(),
                others.join(", ")
            )));
        }
        if let Some(why) = theirs {
            return Err(Error::Usage(format!(
                "{} holds another stress test's results ({why}); pass --overwrite to replace \
                 them, or choose another --out",
                dir.display()
            )));
        }
    }
    Ok(Replaced {
        others,
        their_record: theirs.is_some() && found.contains(&"stress.json"),
    })
}

/// Removes `names` from `dir`, in order, then `report.html` (drawn from what they held).
fn remove_outputs(dir: &Path, names: &[impl AsRef<str>]) -> Result<(), Error> {
    for name in names.iter().map(AsRef::as_ref).chain(["report.html"]) {
        let path = dir.join(name);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::output(path)(e))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Whether `a` and `b` name one file (also through links or `..`).
fn same_file(a: &Path, b: &Path) -> bool {
    a == b || std::fs::canonicalize(a).is_ok_and(|a| std::fs::canonicalize(b).is_ok_and(|b| a == b))
}

/// Makes `out` ready for the sweep `record` describes, so that it holds one whole sweep: a
/// run's outputs there, or another sweep's — a record of other inputs with its files, or
/// results with no record to say what made them — are refused unless `overwrite`, which
/// removes just those. The files of the same sweep stay (shards share a folder), and so do
/// those in `keep` (the run file and record `--resume` goes on with, the files a merge reads).
fn prepare_sweep_out(
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

/// Makes `out` ready for a run's outputs: refuses one holding another run's, or a sweep's,
/// unless `overwrite`; the outputs of the same run — the same topology contents and
/// overrides, as [`crate::Provenance::same_run`] compares them — may be replaced. Nothing is
/// removed before the new outputs are whole ([`crate::RunResult::write_outputs`] replaces
/// them, and a sweep's files go after that), only temporary files a run that was stopped
/// left behind.
fn prepare_out(
    out: &Path,
    overwrite: bool,
    provenance: &crate::Provenance,
) -> Result<Option<std::fs::File>, Error> {
    create_dir(out)?;
    let held = hold_out(out)?;
    owned::refuse_foreign(out)?;
    stress_results_in(out, overwrite)?;
    for name in crate::RUN_OUTPUTS {
        let _ = std::fs::remove_file(crate::staged(out, name));
    }
    let sweep = sweep_files(out);
    if !sweep.is_empty() && !overwrite {
        return Err(Error::Usage(format!(
            "{} holds a sweep's outputs ({}), and a folder holds one run or one sweep; pass --overwrite to replace them, or choose another --out",
            out.display(),
            sweep.join(", ")
        )));
    }
    let present: Vec<&str> = crate::RUN_OUTPUTS
        .into_iter()
        .chain(["report.html"])
        .filter(|f| out.join(f).exists())
        .collect();
    if present.is_empty() {
        return Ok(held);
    }
    // Capped: a summary.json that is no run's (a link to /dev/zero) is just another's.
    let same_run =
        crate::input::read_capped(&out.join("summary.json"), crate::input::MAX_JSON_BYTES)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|old| {
                serde_json::from_value::<crate::Provenance>(old["provenance"].clone()).ok()
            })
            .is_some_and(|old| old.same_run(provenance));
    if !overwrite && !same_run {
        return Err(Error::Usage(format!(
            "{} holds another run's outputs ({}); pass --overwrite to replace them, or choose another --out",
            out.display(),
            present.join(", ")
        )));
    }
    Ok(held)
}

/// Holds the run directory `out` for this run alone until the returned lock is dropped (at
/// the process's end at the latest, however it ends): a run stages its outputs at fixed
/// names in `out` (`.requests.csv.tmp`, ...) and removes a killed run's first, so two runs
/// into one folder at once removed and renamed each other's files — both said their outputs
/// were written, and the folder held no trace, or files of both. The second is refused.
/// `None` where the file system takes no locks (the run goes on as before).
fn hold_out(out: &Path) -> Result<Option<std::fs::File>, Error> {
    #[cfg(unix)]
    {
        // A directory opens read-only on Unix, and flock(2) locks it like a file.
        let Ok(dir) = std::fs::File::open(out) else {
            return Ok(None);
        };
        match dir.try_lock() {
            Ok(()) => Ok(Some(dir)),
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::Usage(format!(
                "--out {}: another igemu run is writing its outputs there now; wait for it to end, or choose another --out",
                out.display()
            ))),
            Err(std::fs::TryLockError::Error(_)) => Ok(None),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = out;
        Ok(None)
    }
}

/// The trace filter `run`'s flags ask for (checked before anything runs).
fn trace_filter(args: &RunArgs) -> Result<crate::trace::TraceFilter, Error> {
    use crate::trace::TraceFilter;
    let flag = |name: &'static str| move |e: String| Error::Usage(format!("--{name}: {e}"));
    let mut f = TraceFilter::default();
    if let Some(k) = &args.trace_kinds {
        f.kinds = Some(TraceFilter::parse_kinds(k).map_err(flag("trace-kinds"))?);
    }
    if let Some(a) = &args.trace_actors {
        f.actors = TraceFilter::parse_actors(a).map_err(flag("trace-actors"))?;
    }
    if let Some(w) = &args.trace_window {
        (f.from, f.to) = TraceFilter::parse_window(w).map_err(flag("trace-window"))?;
    }
    Ok(f)
}

/// Refuses `--trace-actors` patterns that name no actor of the run of `topo`.
fn check_trace_actors(filter: &crate::trace::TraceFilter, topo: &Topology) -> Result<(), Error> {
    if filter.actors.is_empty() {
        return Ok(());
    }
    crate::trace::check_actor_patterns(&filter.actors, &crate::trace::actor_catalogue(topo))
        .map_err(|e| Error::Usage(format!("--trace-actors: {e}")))
}

fn run_one(args: RunArgs, registry: &Registry) -> Result<(), Error> {
    let trace_filter = trace_filter(&args)?;
    let mut sets = run_sets(&args);
    check_max_wall_flag(&args)?;
    let (topo, auto) = load_run_topology(&args, &mut sets, registry)?;
    check_run_flags(&args, &topo)?;
    check_trace_actors(&trace_filter, &topo)?;
    let serve_at = live_view_addresses(&args)?;
    let (end, foresight) = run_end(&args, &topo, auto.as_ref(), &sets, registry)?;
    let provenance = crate::Provenance {
        speedup_auto: matches!(args.speedup, Some(SpeedupArg::Auto)),
        ..crate::Provenance::of(args.topology.as_deref(), &sets)
    };
    let out = &args.out;
    // Held until the outputs (and the report) are in place.
    let _held = prepare_out(out, args.overwrite, &provenance)?;
    let dir = out.display().to_string();
    interrupt::keeps(move || {
        format!(
            "the run stopped before writing its outputs; {dir} holds what it held before \
             (the next run into it removes the temporary files left)"
        )
    });
    let server = start_live_view(serve_at)?;
    if let Some(line) = foresight {
        say!("{line}");
    }
    let speedup = match topo.emulation.mode {
        crate::time::ClockMode::Realtime { speedup } => Some(speedup),
        crate::time::ClockMode::Virtual => None,
    };
    let watch = crate::progress::RunWatch::start(end, speedup, Style::detect(args.quiet));
    let options = RunOptions {
        trace_dir: args.trace.then(|| out.clone()),
        stage_trace: true,
        trace_filter,
        intervals: true,
        lease_log: true,
        provenance: Some(provenance),
        progress: Some(watch.now()),
        broken: broken(args.broken_protocol),
        record_load: false,
        record: args.record.clone(),
        replay: args.replay.clone(),
        live: server.as_ref().map(crate::serve::LiveServer::feed),
        threads: usize::from(args.threads),
    };
    let result = run(topo, &options);
    watch.finish();
    if let Some(server) = server {
        server.stop();
    }
    let mut result = result?;
    result.summary.speedup_auto = auto;
    write_run_outputs(&result, out, args.overwrite)?;
    let dir = out.display().to_string();
    interrupt::keeps(move || format!("the run's outputs are whole in {dir}/"));
    tell_run_results(&result, &args)
}

/// `--max-wall` only bounds what `--speedup auto` chooses: refused with any other speed-up.
fn check_max_wall_flag(args: &RunArgs) -> Result<(), Error> {
    if args.max_wall.is_some() && !matches!(args.speedup, Some(SpeedupArg::Auto)) {
        return Err(Error::Usage(
            "--max-wall bounds the wall time --speedup auto may choose to take; with a fixed --speedup S a realtime run takes its emulated length / S, which it prints before it starts".into(),
        ));
    }
    Ok(())
}

/// After a run's outputs are written: its summary on stdout (with how `--speedup auto`'s
/// prediction came out), where the outputs are, the record, the report; exit 1 on an
/// invariant violation.
fn tell_run_results(result: &crate::RunResult, args: &RunArgs) -> Result<(), Error> {
    let out = &args.out;
    say!("{}", result.human_summary());
    if let (Some(c), Some(l)) = (
        &result.summary.speedup_auto,
        &result.summary.timer_lateness_ms,
    ) {
        say!("{}", auto_outcome(c, l));
    }
    say!("  outputs in {}/", out.display());
    tell_record_and_replay(result, args)?;
    if args.report {
        say!(
            "  report: {}",
            crate::report::write(out, &crate::report::Options::default())?.display()
        );
    }
    if result.summary.invariant_violations > 0 {
        return Err(Error::Failed(format!(
            "invariant violations: {:?}",
            result.summary.violation_examples
        )));
    }
    Ok(())
}

/// The `--set` overrides with `run`'s own flags (seed, mode, speed-up) added after them.
fn run_sets(args: &RunArgs) -> Vec<String> {
    let mut sets = args.sets.clone();
    // Explicit flags are overrides like any other, applied last so they win.
    if let Some(s) = args.seed {
        sets.push(crate::topology::seed_override(s));
    }
    if let Some(m) = args.mode {
        let name = match m {
            Mode::Virtual => "virtual",
            Mode::Realtime => "realtime",
        };
        sets.push(format!("emulation.mode=\"{name}\""));
    }
    match args.speedup {
        Some(SpeedupArg::Fixed(x)) => sets.push(format!("emulation.speedup={x:?}")),
        // A placeholder until the mode is known to be realtime and the speed-up chosen.
        Some(SpeedupArg::Auto) => sets.push("emulation.speedup=1.0".into()),
        None => {}
    }
    sets
}

/// Loads the run's topology; `--speedup auto` replaces its placeholder in `sets` first, with
/// the speed-up it chose (and what it predicted), or refuses when the run would take longer
/// than `--max-wall`.
fn load_run_topology(
    args: &RunArgs,
    sets: &mut Vec<String>,
    registry: &Registry,
) -> Result<(Topology, Option<crate::SpeedupChoice>), Error> {
    let topo = load(args.topology.as_ref(), &overrides(sets.clone(), registry))?;
    if args.speedup.is_some() && topo.emulation.mode == crate::time::ClockMode::Virtual {
        return Err(Error::Usage(
            "--speedup applies to realtime mode only, and this run is in virtual mode; add --mode realtime, or drop --speedup".into(),
        ));
    }
    let Some(SpeedupArg::Auto) = args.speedup else {
        return Ok((topo, None));
    };
    let mut calibration = sets.clone();
    calibration.push("emulation.mode=\"virtual\"".into());
    let calibration = load_quiet(args.topology.as_ref(), &overrides(calibration, registry))?;
    let mut choice = crate::choose_speedup(calibration, broken(args.broken_protocol))?;
    choice.end_exact = crate::realtime_repeats_virtual(&topo, usize::from(args.threads)).is_ok();
    let max_wall = args.max_wall.unwrap_or(crate::AUTO_MAX_WALL);
    choice.max_wall_s = Some(max_wall.as_secs_f64());
    check_max_wall(&choice, max_wall, args.max_wall.is_some())?;
    say!("{}", auto_line(&choice));
    sets.pop(); // the placeholder
    sets.push(format!("emulation.speedup={:?}", choice.speedup));
    let topo = load_quiet(args.topology.as_ref(), &overrides(sets.clone(), registry))?;
    Ok((topo, Some(choice)))
}

/// What `--speedup auto` says it chose: `speed-up auto: x115 chosen: 66.6 emulated hours in
/// ~34m45s of wall time (...)`.
fn auto_line(c: &crate::SpeedupChoice) -> String {
    format!(
        "speed-up auto: x{:.0} chosen: {} in {}{} of wall time (predicted p99 timer lateness {:.3} s; from a virtual run of {:.2} s and this machine's waits, {:.3} ms late at p99.5, {:.3} ms at the latest)",
        c.speedup,
        emulated_span(c.emulated_end_s),
        if c.end_exact { "~" } else { "an estimated ~" },
        wall_span(c.predicted_wall_s),
        c.predicted_p99_ms / 1000.0,
        c.calibration_wall_s,
        c.wake_ms,
        c.wake_latest_ms,
    )
}

/// How a `--speedup auto` run's lateness `l` came out against what `c` predicted: when it
/// was too fast, how late the run met its deadlines in wall time against how late the machine
/// met them when measured (a machine busier during the run than then).
fn auto_outcome(c: &crate::SpeedupChoice, l: &crate::TimerLateness) -> String {
    let head = format!(
        "  speed-up auto: predicted p99 timer lateness {:.3} s, measured {:.3} s",
        c.predicted_p99_ms / 1000.0,
        l.p99 / 1000.0
    );
    if l.p99 <= crate::SUSTAINABLE_P99_LATENESS_MS {
        return head;
    }
    format!(
        "{head}: its timers fired {:.1} ms late at p99 in wall time, where this machine met deadlines {:.1} ms late (p99.5) when measured just before — it kept a slower pace during the run than then (busier){}",
        l.p99 / c.speedup,
        c.wake_ms,
        if c.end_exact {
            "; the figures are still the virtual run's"
        } else {
            ""
        }
    )
}

/// Refuses a `--speedup auto` run predicted to take longer than `max_wall` (`given`: by
/// `--max-wall`, else the default), naming the prediction and the options.
fn check_max_wall(
    c: &crate::SpeedupChoice,
    max_wall: std::time::Duration,
    given: bool,
) -> Result<(), Error> {
    let bound = max_wall.as_secs_f64();
    if c.predicted_wall_s <= bound {
        return Ok(());
    }
    let fits = bound * c.speedup;
    Err(Error::Usage(format!(
        "--speedup auto: x{:.0} is the highest speed-up this machine keeps up with now (predicted p99 timer lateness {:.3} s), and at x{:.0} the run's {} take {}~{} of wall time, more than --max-wall {}{} allows. Give a larger --max-wall (--max-wall {}), run it in virtual time (drop --mode realtime: {} in about {:.1} s), or shorten the run (--set emulation.end={}: what fits in {} at x{:.0})",
        c.speedup,
        c.predicted_p99_ms / 1000.0,
        c.speedup,
        emulated_span(c.emulated_end_s),
        if c.end_exact { "" } else { "an estimated " },
        wall_span(c.predicted_wall_s),
        wall_span(bound),
        if given { "" } else { " (the default)" },
        crate::progress::clock(c.predicted_wall_s * 1.1 + 60.0),
        if c.end_exact { "the same results" } else { "results without the wall clock's pacing" },
        c.calibration_wall_s.max(0.1),
        emulated_end_text(fits),
        wall_span(bound),
        c.speedup,
    )))
}

/// Wall seconds as `0.150s`, `4.1s`, `3m07s` or `2h05m`.
fn wall_span(secs: f64) -> String {
    if secs < 1.0 {
        format!("{secs:.3}s")
    } else if secs < 60.0 {
        format!("{secs:.1}s")
    } else {
        crate::progress::clock(secs)
    }
}

/// Emulated seconds as words: `66.6 emulated hours`, `12.5 emulated minutes`, `45.0
/// emulated seconds`.
fn emulated_span(secs: f64) -> String {
    if secs >= 7200.0 {
        format!("{:.1} emulated hours", secs / 3600.0)
    } else if secs >= 120.0 {
        format!("{:.1} emulated minutes", secs / 60.0)
    } else {
        format!("{secs:.1} emulated seconds")
    }
}

/// An `emulation.end` value of at most `secs` (rounded down): `5.3h`, `45m`, `30s`.
fn emulated_end_text(secs: f64) -> String {
    if secs >= 7200.0 {
        format!("{:.1}h", (secs / 360.0).floor() / 10.0)
    } else if secs >= 120.0 {
        format!("{}m", (secs / 60.0).floor())
    } else {
        format!("{}s", secs.floor().max(1.0))
    }
}

/// What is known ahead of the run's emulated end, for its progress, and for a realtime run
/// (but `--speedup auto`'s, which says it itself) the line that says it with the wall time
/// that makes, to print before it starts. A realtime run that repeats its
/// virtual run ([`crate::realtime_repeats_virtual`]) ends where that run ends: known from
/// `--speedup auto`'s calibration, or else from a virtual run first (cheap beside the
/// realtime run: the same work, without the waits — paper 000's 66 hours take 0.5 s). Any
/// other ends when it ends: unknown ahead, at least its last arrival.
fn run_end(
    args: &RunArgs,
    topo: &Topology,
    auto: Option<&crate::SpeedupChoice>,
    sets: &[String],
    registry: &Registry,
) -> Result<(crate::progress::RunEnd, Option<String>), Error> {
    use crate::progress::RunEnd;
    let own = RunEnd::of(topo);
    let crate::time::ClockMode::Realtime { speedup } = topo.emulation.mode else {
        return Ok((own, None));
    };
    let repeats = crate::realtime_repeats_virtual(topo, usize::from(args.threads));
    let end = match (own, auto, repeats) {
        (RunEnd::AfterArrivals(_), Some(c), Ok(())) => RunEnd::Known(micros(c.emulated_end_s)),
        (RunEnd::AfterArrivals(_), None, Ok(())) => {
            let mut virtual_sets = sets.to_vec();
            virtual_sets.push("emulation.mode=\"virtual\"".into());
            let twin = load_quiet(args.topology.as_ref(), &overrides(virtual_sets, registry))?;
            let options = RunOptions {
                broken: broken(args.broken_protocol),
                ..RunOptions::default()
            };
            let ran = crate::run(twin, &options)?.summary;
            let line = format!(
                "realtime at x{speedup}: {} in ~{} of wall time (the end from a virtual run of the same topology, {:.2} s)",
                emulated_span(ran.emulated_end_s),
                wall_span(crate::predicted_wall_s(ran.emulated_end_s, speedup)),
                ran.wall_s
            );
            return Ok((RunEnd::Known(micros(ran.emulated_end_s)), Some(line)));
        }
        _ => own,
    };
    let line = auto
        .is_none()
        .then(|| realtime_line(speedup, end, repeats.err()));
    Ok((end, line))
}

/// Emulated seconds as whole µs.
fn micros(secs: f64) -> u64 {
    (secs * 1e6).round() as u64
}

/// What a realtime run at `speedup` toward `end` will take, said before it starts (`why`: why
/// its end is not its virtual run's, when it is not).
fn realtime_line(speedup: f64, end: crate::progress::RunEnd, why: Option<&str>) -> String {
    use crate::progress::RunEnd;
    let wall = |us: u64| wall_span(crate::predicted_wall_s(us as f64 / 1e6, speedup));
    match end {
        RunEnd::Known(us) => format!(
            "realtime at x{speedup}: {} (the topology's end) in ~{} of wall time",
            emulated_span(us as f64 / 1e6),
            wall(us)
        ),
        RunEnd::AfterArrivals(us) => format!(
            "realtime at x{speedup}: the end is not known ahead ({}), only that it comes after the last arrival, at {}: at least {} of wall time",
            why.unwrap_or("the run ends when its last lease ends"),
            emulated_span(us as f64 / 1e6),
            wall(us)
        ),
    }
}

/// Refuses flags the run's mode cannot honour (`--serve`, `--threads`) and a bad `--record`.
fn check_run_flags(args: &RunArgs, topo: &Topology) -> Result<(), Error> {
    if args.serve.is_some() && topo.emulation.mode == crate::time::ClockMode::Virtual {
        return Err(Error::Usage(
            "--serve shows a realtime run as it goes, and this run is in virtual mode; add --mode realtime".into(),
        ));
    }
    crate::threads::check(
        usize::from(args.threads),
        topo.emulation.mode,
        &[
            (args.trace, "--trace", why::TRACE),
            (args.record.is_some(), "--record", why::RECORD),
            (args.serve.is_some(), "--serve", why::SERVE),
            (
                topo.emulation.interleaving > 0,
                "emulation.interleaving",
                why::INTERLEAVING,
            ),
        ],
    )?;
    if let Some(record) = &args.record {
        let inputs: Vec<PathBuf> = args.topology.iter().cloned().collect();
        check_record_path(record, &args.out, &inputs)?;
    }
    Ok(())
}

/// Where `--serve ADDR` is to listen: every address ADDR resolves to, refused unless each is
/// loopback or `--serve-public` allows others (before anything is written).
fn live_view_addresses(args: &RunArgs) -> Result<Option<(&str, Vec<SocketAddr>)>, Error> {
    let Some(addr) = args.serve.as_deref() else {
        return Ok(None);
    };
    let addrs = crate::serve::resolve(addr).map_err(|e| {
        Error::Usage(format!(
            "--serve {addr}: not an address to listen on ({e}); give one such as 127.0.0.1:8080 (port 0 picks a free port)"
        ))
    })?;
    let public = crate::serve::not_loopback(&addrs);
    if !public.is_empty() && !args.serve_public {
        let list: Vec<String> = public.iter().map(|a| a.ip().to_string()).collect();
        return Err(Error::Usage(format!(
            "--serve {addr}: {} is not a loopback address, so the live view would be reachable from other machines; \
             give 127.0.0.1:PORT (or [::1]:PORT, localhost:PORT), or add --serve-public to allow it",
            list.join(", ")
        )));
    }
    Ok(Some((addr, addrs)))
}

/// Starts the live view `--serve ADDR` asks for, and says where it is (and, when it is not
/// loopback, that other machines can reach it).
fn start_live_view(
    at: Option<(&str, Vec<SocketAddr>)>,
) -> Result<Option<crate::serve::LiveServer>, Error> {
    let Some((addr, addrs)) = at else {
        return Ok(None);
    };
    let server = crate::serve::LiveServer::start(&addrs).map_err(|e| {
        Error::Usage(format!(
            "--serve {addr}: cannot listen there ({e}); give a free address such as 127.0.0.1:8080 (port 0 picks one)"
        ))
    })?;
    if !crate::serve::not_loopback(&[server.addr()]).is_empty() {
        tell!(
            "igemu: warning: the live view listens on {} (--serve-public), which is not loopback: \
             the page is reachable from other machines, and anyone who can reach it can watch \
             the run (no password, no encryption)",
            server.addr()
        );
    }
    say!("live view: http://{}/", server.addr());
    Ok(Some(server))
}

/// Writes the run's outputs into `out`, then removes what `--overwrite` replaces there.
fn write_run_outputs(result: &crate::RunResult, out: &Path, overwrite: bool) -> Result<(), Error> {
    result.write_outputs(out)?;
    let theirs: Vec<String> = (sweep_files(out).into_iter())
        .chain(stress_files(out).into_iter().map(str::to_string))
        .collect();
    if overwrite && !theirs.is_empty() {
        // The run is whole: a sweep's files or a stress test's, which --overwrite replaces,
        // go (records first).
        remove_outputs(out, &theirs)?;
    }
    Ok(())
}

/// Says how the record (`--record`) and the replay (`igemu replay`) went; fails if either failed.
fn tell_record_and_replay(result: &crate::RunResult, args: &RunArgs) -> Result<(), Error> {
    let out = &args.out;
    match (&result.recorded, &args.record) {
        (Some(Ok(n)), Some(path)) => say!(
            "  record: {n} deliveries in {} (igemu replay {0})",
            path.display()
        ),
        (Some(Err(e)), Some(path)) => {
            return Err(Error::Failed(format!(
                "the record {} could not be written whole, so there is none ({e}); the run's outputs are in {}",
                path.display(),
                out.display()
            )))
        }
        _ => {}
    }
    match (&result.replayed, &args.replay) {
        (Some(Ok(n)), _) => say!("  replay: {n} deliveries, each in the recorded order"),
        (Some(Err(d)), Some(path)) => {
            // A delivery that cannot be read is damage; one that differs, another origin.
            let why = if d.starts_with("line ") {
                "The record is damaged"
            } else {
                "The run did not repeat the record: it was made by another igemu or of another topology, or it was edited or cut (a record cut at a line's end reads whole), or igemu was not deterministic here — if none of these, please report it"
            };
            return Err(Error::Input(format!(
                "igemu: the replay left the record {}: {d}. {why} (outputs in {} are a run in its own order)",
                path.display(),
                out.display()
            )));
        }
        _ => {}
    }
    Ok(())
}

/// Logs to stderr (`RUST_LOG`), unless the program embedding the CLI set up its own.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, not in a log file or a pipe.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .without_time()
        .try_init();
}

fn dispatch(command: Command, registry: &Registry) -> Result<(), Error> {
    match command {
        Command::Workload {
            command: WorkloadCommand::Inspect { file },
        } => inspect(&file),
        Command::Workload {
            command:
                WorkloadCommand::Export {
                    topology,
                    workload,
                    out,
                    sets,
                },
        } => export(&topology, &workload, &out, overrides(sets, registry)),
        Command::Trace(args) => trace(args),
        Command::Stress {
            topology: path,
            seeds,
            first_seed,
            faults,
            jobs,
            interleavings,
            mode,
            speedup,
            threads,
            sets,
            out,
            overwrite,
            quiet,
            broken_protocol,
        } => stress(
            &path,
            ((first_seed, seeds), &faults, interleavings, jobs, &sets),
            (mode, speedup, threads),
            out.as_deref().map(|o| (o, overwrite)),
            quiet,
            broken(broken_protocol),
            registry,
        ),
        Command::Sweep {
            command:
                Some(SweepCommand::Merge {
                    out,
                    overwrite,
                    files,
                }),
            ..
        } => merge(&out, &files, overwrite),
        Command::Sweep {
            command: None,
            file,
            out,
            jobs,
            shard,
            resume,
            overwrite,
            quiet,
        } => sweep(
            &file.ok_or_else(|| {
                Error::Usage("sweep needs a sweep file (or `igemu sweep merge`)".into())
            })?,
            out,
            jobs,
            shard,
            SweepFlags {
                resume,
                overwrite,
                style: Style::detect(quiet),
            },
            registry,
        ),
        Command::Validate { files, sets } => validate(&files, sets, registry),
        Command::Report { dir, window, out } => report(&dir, window.as_deref(), out),
        Command::Run(args) => run_one(args, registry),
        Command::Replay(args) => replay(args, registry),
    }
}

/// `igemu report DIR`: writes the run's or sweep's report page and prints its path.
fn report(dir: &Path, window: Option<&str>, out: Option<PathBuf>) -> Result<(), Error> {
    let window = window
        .map(crate::report::Window::parse)
        .transpose()
        .map_err(|e| Error::Usage(format!("--window: {e}")))?;
    let path = crate::report::write(dir, &crate::report::Options { window, out })?;
    say!("{}", path.display());
    Ok(())
}

/// Runs the `igemu` command line on this process's arguments with the policies of
/// `registry` (where every policy name given to the commands is looked up), and returns the
/// exit code: 0 success, 1 a failure while running or writing, 2 bad input.
///
/// ```no_run
/// use igemu::lrms::preemption::{Ask, Preemption};
/// use igemu::lrms::{Choice, Contention};
///
/// /// Preempts the newest leases first until the local request fits.
/// struct NewestFirst;
///
/// impl Preemption for NewestFirst {
///     fn name(&self) -> String {
///         "newest-first".into()
///     }
///     fn choose(&mut self, c: &Contention, _: &Ask<'_>) -> Option<Choice> {
///         let mut set = Vec::new();
///         for i in (0..c.candidates.len()).rev() {
///             set.push(i);
///             if c.makes_room(&set) {
///                 set.sort_unstable();
///                 return Some(Choice { set, exact: true });
///             }
///         }
///         None
///     }
/// }
///
/// fn main() -> std::process::ExitCode {
///     let mut registry = igemu::policy::Registry::builtin();
///     registry.preemption("newest-first", |_| Box::new(NewestFirst));
///     // `my-igemu run topologies/paper003-testbed.toml --set lrms.preemption=newest-first`
///     igemu::cli::main_with(registry)
/// }
/// ```
pub fn main_with(registry: Registry) -> ExitCode {
    init_logging();
    if let Some(problem) = registry.problems().first() {
        tell!("igemu: the program's policy registry: {problem}; register the policy under another name");
        return ExitCode::from(2);
    }
    let command = Cli::parse().command;
    interrupt::install();
    match dispatch(command, &registry) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tell!("{e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// Joins shards' run files (same columns) into one with one header and the rows in run
/// order, as the unsharded sweep writes them. Each file is read once (a pipe given as
/// `<(...)` can be), and refused at the place where it is no sweep's run file
/// ([`crate::sweep::read_runs`]). Written through a temporary file renamed at the end, so
/// `out` may be one of `files` (`sweep merge --out D D/runs.csv`) and a failed merge leaves
/// the old file whole.
fn merge_runs(files: &[PathBuf], out: &Path) -> Result<(), String> {
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

/// What `stress` runs: (first seed, seeds), fault settings, interleavings, `--jobs`, and the
/// `--set` overrides.
type StressRuns<'a> = ((u64, u64), &'a [String], u64, Option<usize>, &'a [String]);

fn stress(
    path: &Path,
    ((first_seed, seeds), faults, interleavings, jobs, sets): StressRuns<'_>,
    (mode, speedup, threads): (Mode, Option<f64>, u16),
    out: Option<(&Path, bool)>,
    quiet: bool,
    broken: crate::Broken,
    registry: &Registry,
) -> Result<(), Error> {
    let threads = usize::from(threads);
    // Checked first, so that a bad --jobs wastes no loading.
    let jobs = match jobs {
        Some(j) => jobs_or_cores(Some(j))?,
        // Realtime runs each take `threads` threads (paced by the wall, so not all busy).
        None => (jobs_or_cores(None)? / threads).max(1),
    };
    // Every run's seed is set last, from --first-seed and --seeds: a seed among the overrides
    // would be ignored while the report and its reproduce lines claimed it.
    if let Some(set) = sets.iter().find(|s| topology::override_sets_seed(s)) {
        return Err(Error::Usage(format!(
            "--set {set}: stress sets each run's seed itself (--first-seed S --seeds N runs \
             seeds S to S+N-1), so this seed would be ignored; drop it and give --first-seed \
             (e.g. --first-seed 7 --seeds 1 runs seed 7 alone)"
        )));
    }
    let pace = stress_pace(mode, speedup, threads)?;
    let topo = load_stress_topology(path, sets, (pace, threads), interleavings, registry)?;
    let chosen = chosen_faults(&crate::stress::presets(&topo), faults)?;
    check_stress_sets(sets, &chosen)?;
    let count = seeds;
    let seeds =
        crate::stress::seed_range(first_seed, seeds).map_err(|e| Error::Usage(e.message))?;
    let schedules = stress_schedules(interleavings)?;
    let seeds: Vec<u64> = seeds.collect();
    let plan = crate::stress::StressPlan {
        pace,
        settings: &chosen,
        seeds: &seeds,
        schedules: &schedules,
        registry,
    };
    if plan.runs() as u64 > MAX_STRESS_RUNS {
        return Err(Error::Usage(format!(
            "{} runs ({} fault settings x {} seeds x {} schedules) is more than {MAX_STRESS_RUNS}; ask for fewer",
            plan.runs(),
            chosen.len(),
            seeds.len(),
            schedules.len()
        )));
    }
    let inputs = stress_inputs(
        (path, sets),
        (first_seed, count),
        &chosen,
        interleavings,
        (pace, threads),
        broken,
    );
    // Before the runs, so that a bad directory wastes none.
    let replaced = match out {
        Some((dir, overwrite)) => prepare_stress_out(dir, &inputs, overwrite)?,
        None => Replaced::default(),
    };
    interrupt::keeps(|| STRESS_INTERRUPTED.into());
    let style = Style::detect(quiet);
    let runs = crate::stress::stress(path, sets, &plan, jobs, broken, style);
    print!("{}", crate::stress::report(path, &runs));
    if let Some((dir, _)) = out {
        write_stress_out(dir, path, &inputs, &runs, &replaced)?;
    }
    if runs.iter().all(|r| matches!(r.outcome, Ok((0, _)))) {
        Ok(())
    } else {
        Err(Error::Failed(
            "invariant violations or failed runs (report above)".into(),
        ))
    }
}

/// What an interrupted stress test keeps.
const STRESS_INTERRUPTED: &str = "a stress test prints its table and writes its results once \
    every run has ended, so none was kept; ask for fewer runs, or split them with --first-seed";

/// What stress.json records as the inputs of a stress test.
fn stress_inputs(
    (path, sets): (&Path, &[String]),
    (first_seed, count): (u64, u64),
    chosen: &[crate::stress::FaultSetting],
    interleavings: u64,
    (pace, threads): (crate::stress::Pace, usize),
    broken: crate::Broken,
) -> crate::stress::StressInputs {
    let (mode_name, speedup) = match pace {
        crate::stress::Pace::Virtual => ("virtual", None),
        crate::stress::Pace::Realtime { speedup, .. } => ("realtime", Some(speedup)),
    };
    crate::stress::StressInputs {
        provenance: crate::Provenance::of(Some(path), sets),
        first_seed,
        seeds: count,
        faults: chosen.iter().map(|p| p.name.clone()).collect(),
        interleavings,
        mode: mode_name.into(),
        speedup,
        threads,
        broken: broken.name().into(),
    }
}

/// The topology with the runs' own mode and speed-up, checked once here rather than failing
/// every run; with `--threads`, checked against what needs one thread.
fn load_stress_topology(
    path: &Path,
    sets: &[String],
    (pace, threads): (crate::stress::Pace, usize),
    interleavings: u64,
    registry: &Registry,
) -> Result<Topology, Error> {
    let mut checked = sets.to_vec();
    if let crate::stress::Pace::Realtime { speedup, .. } = pace {
        checked.push("emulation.mode=\"realtime\"".into());
        checked.push(format!("emulation.speedup={speedup:?}"));
    }
    let topo = topology::load_file(path, &overrides(checked, registry))?;
    let virtual_mode = matches!(pace, crate::stress::Pace::Virtual);
    let mode_of_runs = if virtual_mode {
        crate::time::ClockMode::Virtual
    } else {
        topo.emulation.mode
    };
    crate::threads::check(
        threads,
        mode_of_runs,
        &[(
            interleavings > 0 || topo.emulation.interleaving > 0,
            "--interleavings (or emulation.interleaving)",
            why::INTERLEAVING,
        )],
    )?;
    Ok(topo)
}

/// The interleaving schedules `--interleavings N` asks for: schedule 0 (the natural order)
/// without it, 1..=N with it.
fn stress_schedules(interleavings: u64) -> Result<Vec<u64>, Error> {
    if interleavings > MAX_STRESS_INTERLEAVINGS {
        return Err(Error::Usage(format!(
            "--interleavings {interleavings} is more than {MAX_STRESS_INTERLEAVINGS}; run several stress tests with more seeds instead"
        )));
    }
    Ok(if interleavings == 0 {
        vec![0]
    } else {
        (1..=interleavings).collect()
    })
}

/// How stress runs are paced: `--mode` and `--speedup` must agree.
fn stress_pace(
    mode: Mode,
    speedup: Option<f64>,
    threads: usize,
) -> Result<crate::stress::Pace, Error> {
    match (mode, speedup) {
        (Mode::Virtual, Some(_)) => {
            Err(Error::Usage(
                "--speedup applies to realtime mode only, and stress runs in virtual mode by default; add --mode realtime, or drop --speedup".into(),
            ))
        }
        (Mode::Virtual, None) => Ok(crate::stress::Pace::Virtual),
        (Mode::Realtime, Some(speedup)) => Ok(crate::stress::Pace::Realtime { speedup, threads }),
        (Mode::Realtime, None) => {
            Err(Error::Usage(
                "stress --mode realtime needs --speedup S (emulated seconds per wall second; each run takes its emulated length / S of wall time)".into(),
            ))
        }
    }
}

/// The fault settings `--faults` names, each once, in the order given.
fn chosen_faults(
    presets: &[crate::stress::FaultSetting],
    faults: &[String],
) -> Result<Vec<crate::stress::FaultSetting>, Error> {
    let mut chosen = Vec::new();
    for f in faults {
        match presets.iter().find(|p| p.name == *f) {
            // A setting named twice would run the same runs twice.
            Some(p) if chosen.contains(p) => {}
            Some(p) => chosen.push(p.clone()),
            None => {
                let names: Vec<&str> = presets.iter().map(|p| p.name.as_str()).collect();
                return Err(Error::Usage(format!(
                    "unknown fault setting `{f}`; expected one of: {}",
                    names.join(", ")
                )));
            }
        }
    }
    Ok(chosen)
}

/// Refuses a `--set` of a key stress sets itself in every run after the user's overrides:
/// it would be ignored while the reproduce lines listed it.
fn check_stress_sets(sets: &[String], chosen: &[crate::stress::FaultSetting]) -> Result<(), Error> {
    let mut own: Vec<(String, String)> = [
        ("emulation.mode", "--mode"),
        ("emulation.speedup", "--speedup"),
        ("emulation.interleaving", "--interleavings"),
    ]
    .map(|(k, by)| (k.to_string(), by.to_string()))
    .to_vec();
    for p in chosen {
        for set in &p.sets {
            if let Some((key, _)) = set.split_once('=') {
                own.push((key.trim().to_string(), format!("--faults {}", p.name)));
            }
        }
    }
    for set in sets {
        if let Some((key, by)) = own.iter().find(|(k, _)| topology::override_sets(set, k)) {
            return Err(Error::Usage(format!(
                "--set {set}: stress sets {key} itself in the runs of {by}, so this \
                 override would be ignored there; drop it, or use {by} to choose"
            )));
        }
    }
    Ok(())
}

/// Writes stress.csv and stress.json into `dir`, then removes what `--overwrite` replaces.
fn write_stress_out(
    dir: &Path,
    path: &Path,
    inputs: &crate::stress::StressInputs,
    runs: &[crate::stress::StressRun],
    replaced: &Replaced,
) -> Result<(), Error> {
    if replaced.their_record {
        // Another stress test's record goes first: a stress.csv never stands beside a
        // stress.json saying other inputs made it.
        remove_outputs(dir, &["stress.json"])?;
    }
    let csv = crate::stress::to_csv(path, runs).map_err(|e| Error::Failed(e.to_string()))?;
    write_atomically(&dir.join("stress.csv"), &csv)?;
    let json = crate::stress::to_json(path, inputs, runs).to_string() + "\n";
    write_atomically(&dir.join("stress.json"), json.as_bytes())?;
    if !replaced.others.is_empty() {
        // The results are whole: a run's or a sweep's files, which --overwrite replaces,
        // go (records first).
        remove_outputs(dir, &replaced.others)?;
    }
    say!("results in {}/stress.csv and stress.json", dir.display());
    Ok(())
}

/// `igemu trace`'s arguments.
#[derive(Args)]
struct TraceArgs {
    /// The trace (trace.jsonl from `run --trace`).
    file: PathBuf,
    /// Keep the messages about this request id (the offers and answers it was part of too);
    /// an id the trace does not name is an error (exit 2) with the closest one it does.
    #[arg(long, conflicts_with = "negotiation")]
    request: Option<String>,
    /// Keep the messages of this negotiation between IGGs and, for each request it
    /// redirected, one line for what followed (where the lease ran and how it ended).
    #[arg(long)]
    negotiation: Option<u64>,
    /// With --negotiation: every message that followed a redirection instead of one line
    /// per lease (the LRMS's and the VMs' steps).
    #[arg(long, requires = "negotiation")]
    vm_steps: bool,
    /// Write a Mermaid sequence diagram here.
    #[arg(long)]
    mermaid: Option<PathBuf>,
    /// In the diagram, one lane per VM (default: one per lease's VMs). With --mermaid (alone
    /// it changed nothing, silently).
    #[arg(long, requires = "mermaid")]
    vm_lanes: bool,
    /// Write Chrome trace-event JSON here: a Gantt chart for ui.perfetto.dev (a process per
    /// Grid, a track per host, VM states as slices; docs/trace-format.md).
    #[arg(long)]
    chrome: Option<PathBuf>,
    /// Print the chain of messages that caused message SEQ (by the trace's `cause` links).
    #[arg(long, value_name = "SEQ", conflicts_with_all = ["request", "negotiation"])]
    why: Option<u64>,
    /// List every negotiation as CSV, one row per offered request: negotiation, requester,
    /// provider, request, outcome, redirect, price, contract, messages, duration.
    #[arg(long, conflicts_with_all = ["request", "negotiation", "why", "mermaid", "chrome"])]
    negotiations: bool,
    /// With --negotiations: write the CSV to this file instead of standard output.
    #[arg(long, requires = "negotiations")]
    out: Option<PathBuf>,
}

/// Where `igemu trace` sends the lines of a selection, as they come: standard output, or a
/// Mermaid diagram and a Chrome export, each written through a temporary file beside its
/// path and renamed at the end, so that an error never leaves half a file behind.
struct LineSink {
    print: bool,
    /// Standard output went away (`| head`): not an error, but nothing more to print.
    closed: bool,
    /// The diagram so far, its body in a temporary file, and where it goes.
    mermaid: Option<(crate::trace::render::Mermaid, TempOut, PathBuf)>,
    /// The export so far, where it goes, and its temporary file.
    chrome: Option<(crate::trace::chrome::Chrome<TempOut>, PathBuf, PathBuf)>,
    messages: usize,
    leases: usize,
    collapsed: usize,
}

/// A buffered temporary file beside a path, of its own ([`crate::create_temp_beside`]).
struct TempOut {
    tmp: PathBuf,
    w: std::io::BufWriter<std::fs::File>,
}

impl std::io::Write for TempOut {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.w.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}

impl TempOut {
    fn beside(path: &Path) -> Result<TempOut, Error> {
        let (tmp, file) = crate::create_temp_beside(path).map_err(Error::output(path))?;
        Ok(TempOut {
            tmp,
            w: std::io::BufWriter::with_capacity(1 << 16, file),
        })
    }
}

impl LineSink {
    fn new(args: &TraceArgs) -> Result<LineSink, Error> {
        let mut sink = LineSink {
            print: args.mermaid.is_none() && args.chrome.is_none(),
            closed: false,
            mermaid: None,
            chrome: None,
            messages: 0,
            leases: 0,
            collapsed: 0,
        };
        if let Some(p) = &args.mermaid {
            let body = TempOut::beside(p)?;
            let m = crate::trace::render::Mermaid::new(args.vm_lanes);
            sink.mermaid = Some((m, body, p.clone()));
        }
        if let Some(p) = &args.chrome {
            let out = TempOut::beside(p)?;
            let tmp = out.tmp.clone();
            sink.chrome = Some((crate::trace::chrome::Chrome::new(out), p.clone(), tmp));
        }
        Ok(sink)
    }

    /// Whether more lines are wanted (not when only standard output wanted them and it went
    /// away).
    fn wants_more(&self) -> bool {
        !(self.print && self.closed)
    }

    fn push(&mut self, line: &crate::trace::render::Line) -> Result<(), Error> {
        use crate::trace::render::{text_line, Line};
        use std::io::Write;
        match line {
            Line::Message(_) => self.messages += 1,
            Line::Lease(l) => {
                (self.leases, self.collapsed) = (self.leases + 1, self.collapsed + l.messages)
            }
        }
        if self.print && !self.closed {
            let text = text_line(line);
            if let Err(e) = writeln!(std::io::stdout().lock(), "{text}") {
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    return Err(Error::output("standard output")(e));
                }
                self.closed = true; // the reader went away (e.g. `| head`)
            }
        }
        if let Some((m, body, path)) = &mut self.mermaid {
            body.write_all(m.body_line(line).as_bytes())
                .map_err(Error::output(&*path))?;
        }
        if let Some((c, path, _)) = &mut self.chrome {
            c.push(line).map_err(Error::output(&*path))?;
        }
        Ok(())
    }

    /// Completes the files: the diagram's head then its body, the Chrome array's end; each
    /// renamed to its path.
    fn finish(mut self) -> Result<(), Error> {
        use std::io::Write;
        if self.print && !self.closed {
            if let Err(e) = std::io::stdout().lock().flush() {
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    return Err(Error::output("standard output")(e));
                }
            }
        }
        if let Some((m, body, path)) = self.mermaid.take() {
            let body_tmp = body.tmp.clone();
            let done = (|| -> Result<(), Error> {
                let body = body
                    .w
                    .into_inner()
                    .map_err(|e| Error::output(&path)(e.into_error()))?;
                drop(body);
                let mut out = TempOut::beside(&path)?;
                let tmp = out.tmp.clone();
                let copied = out
                    .write_all(m.head().as_bytes())
                    .and_then(|_| std::io::copy(&mut std::fs::File::open(&body_tmp)?, &mut out))
                    .and_then(|_| out.flush())
                    .and_then(|_| std::fs::rename(&tmp, &path));
                if copied.is_err() {
                    let _ = std::fs::remove_file(&tmp);
                }
                copied.map_err(Error::output(&path))
            })();
            let _ = std::fs::remove_file(&body_tmp);
            done?;
        }
        if let Some((c, path, tmp)) = self.chrome.take() {
            let done = c
                .finish()
                .map(drop)
                .and_then(|_| std::fs::rename(&tmp, &path));
            if done.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            done.map_err(Error::output(&path))?;
        }
        if self.leases > 0 {
            tell!(
                "{} message(s) and {} lease line(s) standing for {} more (--vm-steps shows them)",
                self.messages,
                self.leases,
                self.collapsed
            );
        } else {
            tell!("{} message(s)", self.messages);
        }
        Ok(())
    }

    /// Removes the temporary files (after an error).
    fn abandon(mut self) {
        if let Some((_, body, _)) = self.mermaid.take() {
            let _ = std::fs::remove_file(&body.tmp);
        }
        if let Some((c, _, tmp)) = self.chrome.take() {
            drop(c); // closes the file
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

/// Opens the trace for reading, one line at a time.
fn open_trace(file: &Path) -> Result<std::io::BufReader<std::fs::File>, Error> {
    std::fs::File::open(file)
        .map(|f| std::io::BufReader::with_capacity(1 << 16, f))
        .map_err(|e| {
            Error::Input(format!(
                "igemu: {}: cannot read the file: {e}",
                file.display()
            ))
        })
}

fn trace(args: TraceArgs) -> Result<(), Error> {
    use crate::trace::render::Line;
    check_trace_outputs(&args)?;
    let file = args.file.as_path();
    if args.negotiations {
        return trace_negotiations(file, args.out.as_deref());
    }
    let mut sink = LineSink::new(&args)?;
    let selected = match (args.why, args.negotiation, args.request.as_deref()) {
        (Some(seq), _, _) => trace_why(file, seq, &mut sink),
        (None, Some(n), _) => trace_negotiation(file, n, args.vm_steps, &mut sink),
        (None, None, Some(r)) => trace_request(file, r, &mut sink),
        (None, None, None) => (|| {
            for e in crate::trace::render::events(open_trace(file)?) {
                sink.push(&Line::Message(e.map_err(trace_error(file))?))?;
                if !sink.wants_more() {
                    break;
                }
            }
            Ok(())
        })(),
    };
    match selected {
        Ok(()) => sink.finish(),
        Err(e) => {
            sink.abandon();
            Err(e)
        }
    }
}

/// Refuses an output file of `igemu trace` that would overwrite its input or a file that is
/// not one of its own kind.
fn check_trace_outputs(args: &TraceArgs) -> Result<(), Error> {
    let inputs = [args.file.clone()];
    let outputs: [(&str, &Option<PathBuf>, crate::OutputKind); 3] = [
        (
            "--mermaid",
            &args.mermaid,
            ("a Mermaid diagram", |h| h.starts_with(b"sequenceDiagram")),
        ),
        (
            "--chrome",
            &args.chrome,
            ("a Chrome trace export", |h| {
                h.starts_with(b"{\"displayTimeUnit\"")
            }),
        ),
        (
            "--out",
            &args.out,
            ("a negotiations CSV", |h| h.starts_with(b"negotiation,")),
        ),
    ];
    for (option, path, kind) in outputs {
        if let Some(path) = path {
            crate::check_output_file(option, path, &inputs, kind)?;
        }
    }
    Ok(())
}

/// `igemu: file:line: problem`, prefixed as the CLI's plain errors are (a file's
/// diagnostics, `file:line: error:`, are not); line 0 is the file as a whole (it could not
/// be read), so no line is named.
fn trace_error(file: &Path) -> impl Fn(crate::trace::render::ReadError) -> Error + '_ {
    move |e| {
        let place = match e.line {
            0 => file.display().to_string(),
            n => format!("{}:{n}", file.display()),
        };
        Error::Input(format!(
            "igemu: {place}: {} (each line of a trace is one JSON record; see docs/trace-format.md)",
            e.message
        ))
    }
}

/// `igemu trace --negotiations`: one CSV row per offered request, to `out` or stdout.
fn trace_negotiations(file: &Path, out: Option<&Path>) -> Result<(), Error> {
    use crate::trace::render;
    let mut tally = render::NegotiationTally::new();
    for e in render::events(open_trace(file)?) {
        tally.push(&e.map_err(trace_error(file))?);
    }
    let rows = match out {
        Some(path) => {
            let out = TempOut::beside(path)?;
            let tmp = out.tmp.clone();
            let written = render::write_negotiations_csv(tally.rows(), out)
                .map_err(std::io::Error::from)
                .and_then(|(out, n)| {
                    drop(out);
                    std::fs::rename(&tmp, path).map(|_| n)
                });
            if written.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            written.map_err(Error::output(path))?
        }
        None => {
            let stdout = std::io::BufWriter::new(std::io::stdout().lock());
            match render::write_negotiations_csv(tally.rows(), stdout) {
                Ok((_, n)) => n,
                Err(e) => match e.kind() {
                    // The reader went away (`| head`): not an error.
                    csv::ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::BrokenPipe => {
                        return Ok(())
                    }
                    _ => return Err(Error::output("standard output")(e.into())),
                },
            }
        }
    };
    tell!("{rows} offered request(s) in negotiations");
    Ok(())
}

/// `igemu trace --why SEQ`: the chain of messages that led to message `seq`.
fn trace_why(file: &Path, seq: u64, sink: &mut LineSink) -> Result<(), Error> {
    use crate::trace::render::{self, Line};
    // --why reads backwards from the end, seeking: a pipe cannot seek (it said
    // "line 0: Illegal seek") and a device reads as empty (`/dev/zero` had "no
    // message 0"), so only a regular file is read.
    let meta = std::fs::metadata(file);
    if meta.as_ref().is_ok_and(|m| m.is_dir()) {
        return Err(Error::Usage(format!(
            "{}: that is a folder; give its trace.jsonl",
            file.display()
        )));
    }
    if meta.is_ok_and(|m| !m.is_file()) {
        return Err(Error::Usage(format!(
            "{}: --why reads the trace backwards from its end, so it needs a regular file, not a pipe or a device; save the trace to a file first (--request, --negotiation and --negotiations read a pipe)",
            file.display()
        )));
    }
    let chain = render::why(open_trace(file)?, seq).map_err(trace_error(file))?;
    if chain.events.is_empty() {
        return Err(Error::Usage(format!(
            "{} has no message {seq} (messages are numbered by `seq`)",
            file.display()
        )));
    }
    if let Some(c) = chain.cut_at {
        tell!(
            "the chain goes on with message {c}, which {} does not hold (a trace written with --trace-kinds, --trace-actors or --trace-window)",
            file.display()
        );
    }
    chain
        .events
        .into_iter()
        .try_for_each(|e| sink.push(&Line::Message(e)))
}

/// `igemu trace --negotiation N`: its messages and one line per redirected lease.
fn trace_negotiation(
    file: &Path,
    n: u64,
    vm_steps: bool,
    sink: &mut LineSink,
) -> Result<(), Error> {
    use crate::trace::render;
    let mut view = render::NegotiationView::new(n, vm_steps);
    for e in render::events(open_trace(file)?) {
        view.push(e.map_err(trace_error(file))?);
    }
    let lines = view.finish();
    if lines.is_empty() {
        return Err(Error::Usage(format!(
            "{} has no negotiation {n} (`igemu trace {} --negotiations` lists them)",
            file.display(),
            file.display()
        )));
    }
    lines.iter().try_for_each(|l| sink.push(l))
}

/// `igemu trace --request ID`: the messages about one request.
fn trace_request(file: &Path, request: &str, sink: &mut LineSink) -> Result<(), Error> {
    use crate::trace::render::{self, Line};
    let mut filter = render::RequestFilter::new(request);
    for e in render::events(open_trace(file)?) {
        let e = e.map_err(trace_error(file))?;
        if filter.keep(&e) {
            sink.push(&Line::Message(e))?;
            if !sink.wants_more() {
                return Ok(());
            }
        }
    }
    match filter.unknown() {
        Some(why) => Err(Error::Usage(format!("{}: {why}", file.display()))),
        None => Ok(()),
    }
}

/// Writes `bytes` to `path` through a temporary file beside it, so that a failure never
/// leaves half a file behind.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    crate::write_atomically(path, bytes).map_err(Error::output(path))
}
