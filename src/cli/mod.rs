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

use crate::federation::threads::why;
use crate::topology::{self, Overrides, Topology};
use crate::{run, Error, RunOptions};

// One module per subcommand (after the macros, which they use).
mod outdir;
mod replay;
mod run;
mod stress;
mod sweep;
mod trace;
mod workload;

use outdir::*;
use replay::*;
use run::*;
use stress::*;
use sweep::*;
use trace::*;
use workload::*;

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

/// `--set` overrides with the program's policies.
fn overrides(sets: Vec<String>, registry: &Registry) -> Overrides {
    Overrides {
        sets,
        registry: registry.clone(),
    }
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
