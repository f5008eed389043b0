//! igemu — an actor-based emulator of InterGrid: federated, virtualised Grids whose gateways
//! (IGGs) place external VM leases on clusters whose LRMSs also serve local users.
//!
//! The library API: describe a federation (a topology file through [`topology::load_file`],
//! or in code with [`topology::Federation`]), run it ([`run`]), and read or write the results
//! ([`RunResult`], [`RunResult::write_outputs`]). The `igemu` binary is a thin CLI over this.
//!
//! The modules: [`topology`] (reading and building federations), [`model`] (requests, lease
//! types, VM states), [`lrms`] and [`igg`] (the pure cores of the LRMS and the gateway, usable
//! on their own), [`metrics`] (records and the papers' figures), [`trace`] (records and their
//! rendering), [`workload`] (workload models and SWF), [`sweep`] and [`stress`] (many runs),
//! [`fault`] (link faults), [`time`] (emulated time and the clock), [`progress`] (progress of
//! long work on stderr).
//!
//! # Running a federation in code
//!
//! One Grid of two 4-core clusters; a cancellable external lease lands on the first cluster,
//! then a local request there needs all four cores and the LRMS cancels the lease for it.
//!
//! ```
//! use igemu::model::RequestState;
//! use igemu::topology::{Federation, Hosts, Request, Users};
//!
//! let topo = Federation::new("demo")
//!     .lrms("preemption", "mov")
//!     .grid("g", &[("c1", Hosts::new(1, 4, 8192)), ("c2", Hosts::new(1, 4, 8192))])
//!     .workload(
//!         Users::external("ext", "g")
//!             .request(Request::new("victim", 0, 2, 1024, 7200).kind("cancellable")),
//!     )
//!     .workload(Users::local("users", "g", "c1").request(Request::new("local", 1800, 4, 1024, 3600)))
//!     .build()
//!     .map_err(igemu::Error::from)?;
//! let result = igemu::run(topo, &igemu::RunOptions::default())?;
//! assert_eq!(result.summary.invariant_violations, 0);
//! let state = |label: &str| {
//!     let i = result.topology.request_labels.iter().position(|l| l == label);
//!     i.and_then(|i| result.records[i].state)
//! };
//! assert_eq!(state("victim"), Some(RequestState::Cancelled));
//! assert_eq!(state("local"), Some(RequestState::Completed));
//! # Ok::<(), igemu::Error>(())
//! ```

//! # Bring your own policy
//!
//! Every decision point — preemption, admission, dispatch, and the two sides of a
//! negotiation — is a trait ([`policy`] lists them). Implement one, register it by name, and
//! name it where a topology names a policy; [`cli::main_with`] gives it the whole command
//! line. The shortest, a preemption policy that takes the newest leases first:
//!
//! ```
//! use igemu::lrms::preemption::{Ask, Preemption};
//! use igemu::lrms::{Choice, Contention};
//! use igemu::topology::{Federation, Hosts, Request, Users};
//!
//! struct NewestFirst;
//!
//! impl Preemption for NewestFirst {
//!     fn name(&self) -> String {
//!         "newest-first".into()
//!     }
//!     fn choose(&mut self, c: &Contention, _: &Ask<'_>) -> Option<Choice> {
//!         let mut set = Vec::new();
//!         for i in (0..c.candidates.len()).rev() {
//!             set.push(i);
//!             if c.makes_room(&set) {
//!                 set.sort_unstable();
//!                 return Some(Choice { set, exact: true });
//!             }
//!         }
//!         None
//!     }
//! }
//!
//! let mut registry = igemu::policy::Registry::builtin();
//! registry.preemption("newest-first", |_| Box::new(NewestFirst));
//! let topo = Federation::new("mine")
//!     .registry(&registry)
//!     .lrms("preemption", "newest-first")
//!     .grid("g", &[("c", Hosts::new(1, 4, 8192))])
//!     .workload(
//!         Users::external("ext", "g")
//!             .request(Request::new("old", 0, 2, 1024, 7200).kind("cancellable"))
//!             .request(Request::new("new", 60, 2, 1024, 7200).kind("cancellable")),
//!     )
//!     .workload(Users::local("users", "g", "c").request(Request::new("local", 1800, 2, 1024, 600)))
//!     .build()
//!     .map_err(igemu::Error::from)?;
//! let result = igemu::run(topo, &igemu::RunOptions::default())?;
//! let preempted = &result.decisions[0].decision.set;
//! assert_eq!(result.topology.label(preempted[0].0), "new");
//! assert_eq!(result.summary.plugins[0].policy, "newest-first");
//! # Ok::<(), igemu::Error>(())
//! ```
//!
//! Or in any language: `external:CMD ARGS` runs a process asked each decision over a line
//! protocol (`docs/policies.md`; a Python module in `examples/policies/`).

// Items of private modules are `pub(crate)`: what is public is exported on purpose.
#![warn(unreachable_pub)]

/// Defines a policy-name enum: its variants, their names in topologies, parsing, and the
/// list of names for "did you mean" hints. Adding a policy touches its module and one line.
macro_rules! named_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// Every variant.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// Names accepted in topologies.
            pub const NAMES: &'static [&'static str] = &[$($text),+];
            /// The name used in topologies.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
            /// Parses a name from [`Self::NAMES`].
            pub fn parse(name: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.as_str() == name)
            }
        }

        impl $crate::Named for $name {
            const NAMES: &'static [&'static str] = $name::NAMES;
            fn parse(name: &str) -> Option<Self> {
                $name::parse(name)
            }
        }
    };
}

// The actix shell. Public only so the runtime benchmark can build actors of its own on the
// one send path; it is not part of the library's API.
#[doc(hidden)]
pub mod actors;
pub mod build_info;
pub mod cli;
mod csvout;
mod error;
mod fasthash;
pub mod fault;
#[doc(hidden)]
pub mod fuzzing;
pub mod igg;
pub mod input;
pub mod lrms;
pub mod metrics;
pub mod model;
pub mod policy;
pub mod progress;
pub mod report;
pub mod serve;
pub mod stress;
pub mod sweep;
pub mod threads;
pub mod time;
pub mod topology;
pub mod trace;
pub mod workload;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use serde::Serialize;
use tokio::sync::oneshot;

use actors::Emu;
use csvout::{csv_field, CsvOut};
use metrics::{DecisionRecord, PaperMetrics, RequestCounts, RequestRecord};
use time::{Clock, ClockMode, EmuTime, Lateness};
use topology::Topology;

pub use actors::graph::Broken;
pub use error::Error;

/// Cases a property test runs: `PROPTEST_CASES` when set, else `default` (what CI runs).
#[cfg(test)]
pub(crate) fn proptest_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A fixed choice of names, as topologies write them (`"mov"`, `"pap-rtdp"`, `"external"`):
/// each is one enum, parsed in one place.
pub trait Named: Sized + Copy {
    /// Every accepted name.
    const NAMES: &'static [&'static str];
    /// The value a name stands for.
    fn parse(name: &str) -> Option<Self>;
}
pub use input::{Diagnostic, Report};
use trace::Tracer;

/// The files a run writes into its output directory, in the order they are put in place:
/// `summary.json` last, so a directory with a `summary.json` holds one whole run.
pub const RUN_OUTPUTS: [&str; 7] = [
    "trace.jsonl",
    "requests.csv",
    "decisions.csv",
    "intervals.csv",
    "utilization.csv",
    "leases.csv",
    "summary.json",
];

/// Where output `name` is written before it is put in place: a hidden file beside it, on the
/// same file system, so that putting it in place is a rename.
pub fn staged(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!(".{name}.tmp"))
}

/// Refuses a directory where a file igemu reads back or replaces (each name `is_ours` says
/// yes to) is not a regular file: reading a FIFO blocks until something writes to it, and
/// renaming a new file into place would replace a device, FIFO or socket.
pub fn check_regular_files(dir: &Path, is_ours: impl Fn(&str) -> bool) -> Result<(), Error> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_ours(&name) && std::fs::metadata(entry.path()).is_ok_and(|m| !m.is_file()) {
            return Err(Error::Usage(format!(
                "{}: not a regular file (a directory, device, FIFO or socket) where igemu keeps \
                 its {name}; remove it, or choose another directory",
                entry.path().display()
            )));
        }
    }
    Ok(())
}

/// Names [`create_temp_beside`] tries before it gives up.
const TEMP_TRIES: u64 = 64;

/// Creates a temporary file beside `path`, to write `path` whole and then rename it into
/// place: a hidden name of its own (`.NAME.PID-N.tmp`, so two writers never share one),
/// created only where nothing is, so that a file or link already there — a user's file, a
/// link planted to any other file, the command's own input — is never written through.
pub fn create_temp_beside(path: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy());
    // A name taken by something else is skipped; a bound, so a directory full of them ends.
    for _ in 0..TEMP_TRIES {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = staged(dir, &format!("{name}.{}-{n}", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        format!("no free temporary name beside {}", path.display()),
    ))
}

/// Writes `bytes` to `path` whole or not at all: through a temporary file of its own beside
/// it ([`create_temp_beside`]) renamed into place; a failure removes the temporary file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let (tmp, mut file) = create_temp_beside(path)?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.flush())
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A kind of single-file output: its name ("a Mermaid diagram") and a test of a file's first
/// bytes telling whether it is one.
pub type OutputKind = (&'static str, fn(&[u8]) -> bool);

/// Refuses `path` for a single-file output (`option` names the flag) where writing it through
/// a temporary file renamed into place would destroy something, and says what to give
/// instead: a directory; something that is not a regular file (a device such as
/// `/dev/null`, a FIFO or a socket: the rename would put a plain file in its place); one of
/// the command's own `inputs` (followed through links); or an existing file that is not an
/// earlier output of the same kind (`kind` names it, `is_kind` tells it by its first bytes).
/// An empty file holds nothing to lose. A path that does not exist is fine when its folder
/// does: one that does not is refused too (naming the folder to create), before any work, so
/// that a run does not end failing to write its temporary file there, leaving its other
/// outputs behind.
pub fn check_output_file(
    option: &str,
    path: &Path,
    inputs: &[PathBuf],
    (kind, is_kind): OutputKind,
) -> Result<(), Error> {
    let refuse = |why: String| Err(Error::Usage(format!("{option} {}: {why}", path.display())));
    let Ok(meta) = std::fs::metadata(path) else {
        // `x.json` is in the working directory, whose path is "".
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        return match std::fs::metadata(folder) {
            Ok(m) if m.is_dir() => Ok(()),
            Ok(_) => refuse(format!(
                "{} is a file, not a folder; give a path in a folder",
                folder.display()
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => refuse(format!(
                "the folder {0} does not exist; create it first (mkdir -p {0}), or give a path \
                 in an existing folder",
                folder.display()
            )),
            Err(e) => refuse(format!(
                "cannot reach the folder {} ({e}); give a path in a folder you can write to",
                folder.display()
            )),
        };
    };
    if meta.is_dir() {
        return refuse("that is a directory; give the path of a file".into());
    }
    if !meta.is_file() {
        return refuse(format!(
            "that is not a regular file (a device, FIFO or socket): igemu writes a file beside \
             it and renames it into place, which would replace it. Give the path of a file; to \
             discard the output, leave {option} out"
        ));
    }
    let canonical = std::fs::canonicalize(path).ok();
    if let Some(input) = inputs
        .iter()
        .find(|i| canonical.is_some() && std::fs::canonicalize(i).ok() == canonical)
    {
        return refuse(format!(
            "that is this command's own input {}; writing it would destroy it. Give another path",
            input.display()
        ));
    }
    let mut head = Vec::with_capacity(4096);
    let read = std::fs::File::open(path)
        .and_then(|f| std::io::Read::read_to_end(&mut std::io::Read::take(f, 4096), &mut head));
    if read.is_ok() && !head.is_empty() && !is_kind(&head) {
        return refuse(format!(
            "that file exists and is not {kind}; it is not replaced. Give another name, or \
             remove it first"
        ));
    }
    Ok(())
}

/// Puts a run's staged outputs in place: the old `summary.json` goes first (a directory
/// without one holds no whole run), then each output is renamed over the old one — or an old
/// one this run did not write (a trace, intervals) is removed, with the report drawn from the
/// old run — and `summary.json` comes last.
fn put_in_place(dir: &Path, keep_trace: bool) -> Result<(), Error> {
    let remove = |path: PathBuf| match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::output(path)(e)),
        _ => Ok(()),
    };
    remove(dir.join("summary.json"))?;
    remove(dir.join("report.html"))?;
    for name in RUN_OUTPUTS {
        let (from, to) = (staged(dir, name), dir.join(name));
        if from.exists() {
            std::fs::rename(&from, &to).map_err(Error::output(to))?;
        } else if !(keep_trace && name == "trace.jsonl") {
            remove(to)?;
        }
    }
    Ok(())
}

/// How to run, beyond the topology.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Write `trace.jsonl` here (the directory must exist).
    pub trace_dir: Option<PathBuf>,
    /// Write the trace under a temporary name instead, for [`RunResult::write_outputs`] to
    /// put in place with the other outputs (so a directory never holds a new trace beside an
    /// old summary).
    pub stage_trace: bool,
    /// Which messages the trace holds (all by default); see [`trace::TraceFilter`].
    pub trace_filter: trace::TraceFilter,
    /// Test-only: a deliberately broken variant of the protocols, to prove the invariant
    /// checker (and the exploration of interleavings) bites.
    #[doc(hidden)]
    pub broken: Broken,
    /// Record every VM instance's state spans (`intervals.csv`; memory grows with them).
    pub intervals: bool,
    /// Record every lease's events (`leases.csv`; memory grows with them, a few per lease).
    pub lease_log: bool,
    /// What was run, to record in the summary (the caller knows the file and the overrides).
    pub provenance: Option<Provenance>,
    /// If given, the run stores its emulated time (µs) here as it goes, for a progress
    /// display on another thread.
    pub progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// Virtual mode: record each instant's handling time ([`RunResult::load`]), what
    /// [`choose_speedup`] calibrates from.
    pub record_load: bool,
    /// Record the order of every delivery to this file (`--record`): a header line saying
    /// what ran ([`RecordHeader`], from [`RunOptions::provenance`]), then one line per
    /// delivery ([`time::record`]). Written under a temporary name and renamed when whole.
    pub record: Option<PathBuf>,
    /// Follow the order of deliveries recorded in this file (`replay` sets it).
    pub replay: Option<PathBuf>,
    /// Realtime mode: publish live frames here as the run goes ([`serve`]).
    pub live: Option<std::sync::Arc<serve::Feed>>,
    /// Realtime mode: run the Grids on this many threads (at most one per Grid); 0 or 1
    /// runs everything on one. Not with a trace, a record or a live view.
    pub threads: usize,
}

/// The first line of a record file: what ran, so that `igemu replay` can run it again.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct RecordHeader {
    /// The record format's version ([`RECORD_FORMAT`]).
    pub igemu_record: u32,
    /// The topology file, its hash and the overrides.
    pub provenance: Provenance,
    /// The run's seed.
    pub seed: u64,
    /// `virtual` or `realtime`.
    pub mode: String,
    /// Emulated seconds per wall second (realtime).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup: Option<f64>,
    /// The explored schedule (`emulation.interleaving`); 0: deliveries were made as they
    /// came (FIFO), so a replay checks its own order against the record rather than
    /// choosing by it.
    pub interleaving: u64,
    /// The deliberately broken variant that ran (`none` for the protocols as they are).
    pub broken: String,
}

/// The version of the record format this igemu writes and reads.
pub const RECORD_FORMAT: u32 = 3;

/// How a replay went: the deliveries made in the record's order, or where it first left it.
pub type ReplayOutcome = Result<u64, String>;

/// How a replay followed its record, as `summary.json` says it.
#[derive(Clone, Debug, Serialize)]
pub struct ReplaySummary {
    /// The record file.
    pub record: String,
    /// Deliveries made in the recorded order, when it followed the record to its end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub followed: Option<u64>,
    /// Where the run first left the record (the rest ran in its own order), if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diverged: Option<String>,
}

/// What was run: enough to run it again.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct Provenance {
    /// igemu's version.
    pub igemu: String,
    /// The commit igemu was built from (`None` when the build could not tell).
    #[serde(default)]
    pub commit: Option<String>,
    /// Whether igemu's build files differed from that commit (`None`: unknown).
    #[serde(default)]
    pub dirty: Option<bool>,
    /// The topology file, or `None` for the embedded quickstart.
    pub topology_path: Option<String>,
    /// FNV-1a 64 of the topology file's bytes (hex), to tell two versions of a file apart.
    pub topology_hash: Option<String>,
    /// Every `--set`, in order.
    pub overrides: Vec<String>,
    /// The last `emulation.speedup` override is the one `--speedup auto` chose (measured
    /// anew by each run, so not compared: the same command run again is the same run).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub speedup_auto: bool,
    /// The plug-ins the run named (policies igemu does not ship), `<where> <point>:
    /// <policy>` each (filled in by the run; `summary.json`'s `plugins` has their counts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plugins: Vec<String>,
}

impl Provenance {
    /// The provenance of a run of the file at `path` (or the embedded topology) with `sets`.
    pub fn of(path: Option<&Path>, sets: &[String]) -> Provenance {
        let hash = path.and_then(file_hash);
        let build = build_info::Build::this();
        Provenance {
            igemu: build_info::VERSION.to_string(),
            commit: build.commit,
            dirty: build.dirty,
            topology_path: path.map(|p| p.display().to_string()),
            topology_hash: hash,
            overrides: sets.to_vec(),
            speedup_auto: false,
            plugins: Vec::new(),
        }
    }

    /// Whether `self` and `other` are runs of the same inputs, so that one's outputs may
    /// replace the other's without `--overwrite`: the same topology — the embedded one, or a
    /// file with the same contents (its hash) at the same path as written, `.` aside
    /// (`./topologies/x.toml` is `topologies/x.toml`; the path counts because the paths a
    /// topology names, its traces and profiles, are read from its folder, and a path written
    /// otherwise may be another folder's copy) — and the same overrides in the same
    /// order, each compared as the setting it makes (its key and its value as a run reads them:
    /// `lrms.cp_alpha = 0.1` is `lrms.cp_alpha=0.1`). igemu's version and build (commit) are not compared: the
    /// same command run again after an upgrade is the same run, as a sweep's record has it.
    pub fn same_run(&self, other: &Provenance) -> bool {
        let topology = match (&self.topology_path, &other.topology_path) {
            (None, None) => true,
            (Some(a), Some(b)) => {
                self.topology_hash.is_some()
                    && self.topology_hash == other.topology_hash
                    && same_spelling(Path::new(a), Path::new(b))
            }
            _ => false,
        };
        let canonical = |p: &Provenance| -> Vec<String> {
            let mut sets: Vec<String> = (p.overrides.iter())
                .map(|s| input::node::canonical_override(s))
                .collect();
            let chosen = |s: &String| s.starts_with("emulation.speedup=");
            if let Some(i) = sets.iter().rposition(chosen).filter(|_| p.speedup_auto) {
                sets[i] = "emulation.speedup=auto".into();
            }
            sets
        };
        topology && canonical(self) == canonical(other)
    }
}

/// Whether paths `a` and `b`, as a run recorded them, are spelled alike once `.` components
/// are dropped (`./t/x.toml` is `t/x.toml`). Nothing is resolved: a recorded relative path
/// was relative to the folder that run was started in, which is not known here.
fn same_spelling(a: &Path, b: &Path) -> bool {
    let parts = |p: &Path| -> Vec<std::ffi::OsString> {
        p.components()
            .filter(|c| *c != std::path::Component::CurDir)
            .map(|c| c.as_os_str().to_os_string())
            .collect()
    };
    parts(a) == parts(b)
}

/// FNV-1a 64 of a file's bytes, as 16 hex digits (`None` if it cannot be read): enough to
/// tell two versions of a topology or sweep file apart, as [`Provenance`] and `sweep.json`
/// record them.
pub fn file_hash(path: &Path) -> Option<String> {
    // Capped as the file's reader caps it: an endless file has no hash, not an endless read.
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(
            std::fs::File::open(path).ok()?,
            crate::input::MAX_TOML_BYTES + 1,
        ),
        &mut bytes,
    )
    .ok()?;
    if bytes.len() as u64 > crate::input::MAX_TOML_BYTES {
        return None;
    }
    let h = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    Some(format!("{h:016x}"))
}

/// Timer lateness in realtime runs, emulated milliseconds.
pub type TimerLateness = Lateness;

/// The p99 timer lateness, in emulated milliseconds, up to which a realtime run's speed-up is
/// called sustainable: one emulated second, finer than any VM operation, negotiation timeout or
/// request the papers model, so that timers this late change no decision's outcome.
pub const SUSTAINABLE_P99_LATENESS_MS: f64 = 1000.0;

/// The verdict on a realtime run's lateness: `sustainable`, or `too fast: p99 timer lateness
/// N s, over 1 s: this machine did not keep the pace — try a lower --speedup` when the p99
/// lateness exceeds [`SUSTAINABLE_P99_LATENESS_MS`].
pub fn lateness_verdict(lateness: &TimerLateness) -> String {
    if lateness.p99 <= SUSTAINABLE_P99_LATENESS_MS {
        // The same test as `Summary::speedup_sustainable`.
        "sustainable".to_string()
    } else {
        format!(
            "too fast: p99 timer lateness {:.3} s, over {} s: this machine did not keep the pace — try a lower --speedup",
            lateness.p99 / 1000.0,
            SUSTAINABLE_P99_LATENESS_MS / 1000.0
        )
    }
}

/// The printed summary's negotiation line: the Grids' `negotiations` counters summed (each
/// request offered is counted by its requester's Grid alone), under their summary keys'
/// names; empty when no Grid negotiated. `rejected after redirect` and `late answers declined`
/// appear when non-zero.
fn negotiations_line<'a>(grids: impl Iterator<Item = &'a igg::Outcomes>) -> String {
    let mut t = igg::Outcomes::default();
    for o in grids {
        t.offers += o.offers;
        t.accepted += o.accepted;
        t.countered_taken += o.countered_taken;
        t.countered_declined += o.countered_declined;
        t.rejected += o.rejected;
        t.timeouts += o.timeouts;
        t.redirected += o.redirected;
        t.rejected_after_redirect += o.rejected_after_redirect;
        t.late_declined += o.late_declined;
    }
    if t == igg::Outcomes::default() {
        return String::new();
    }
    let mut line = format!(
        "  negotiations: offers {} (timeouts {}); requests offered: accepted {}, countered-taken {}, countered-declined {}, rejected {}; redirected {}",
        t.offers,
        t.timeouts,
        t.accepted,
        t.countered_taken,
        t.countered_declined,
        t.rejected,
        t.redirected
    );
    if t.rejected_after_redirect > 0 {
        line += &format!(" (rejected after redirect {})", t.rejected_after_redirect);
    }
    if t.late_declined > 0 {
        line += &format!("; late answers declined {}", t.late_declined);
    }
    line.push('\n');
    line
}

/// The p99 timer lateness, emulated milliseconds, `--speedup auto` aims at: half of
/// [`SUSTAINABLE_P99_LATENESS_MS`], a margin for what its measures cannot foresee (the
/// machine's load changing while the run goes on).
pub const AUTO_P99_LATENESS_MS: f64 = SUSTAINABLE_P99_LATENESS_MS / 2.0;

/// The longest wall time `--speedup auto` runs for unless `--max-wall` allows more: past
/// it, it refuses and names the options (a larger `--max-wall`, a virtual run, a shorter
/// workload) rather than start a run of unforeseen length.
pub const AUTO_MAX_WALL: std::time::Duration = std::time::Duration::from_secs(600);

/// What `--speedup auto` chose, and from what (`summary.json`'s `speedup_auto`).
#[derive(Clone, Debug, Serialize)]
pub struct SpeedupChoice {
    /// The highest speed-up whose predicted p99 timer lateness is at most
    /// [`AUTO_P99_LATENESS_MS`].
    pub speedup: f64,
    /// That prediction, emulated milliseconds.
    pub predicted_p99_ms: f64,
    /// Where the virtual run it was measured on ended, emulated seconds: where the realtime
    /// run ends too when it repeats that run ([`realtime_repeats_virtual`]).
    pub emulated_end_s: f64,
    /// The wall time the realtime run is predicted to take, seconds: `emulated_end_s /
    /// speedup` (its timers late by at most [`AUTO_P99_LATENESS_MS`] at p99 add nothing
    /// to speak of).
    pub predicted_wall_s: f64,
    /// Whether the realtime run repeats the virtual run, so that its end (and the
    /// prediction) is exact rather than an estimate (set by the caller, who knows the
    /// threads it runs on).
    pub end_exact: bool,
    /// The bound on the predicted wall time it was checked against, seconds (set by the
    /// caller: `--max-wall`, else [`AUTO_MAX_WALL`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_wall_s: Option<f64>,
    /// Wall seconds of the virtual run it was measured on.
    pub calibration_wall_s: f64,
    /// How late this machine met the deadlines it was probed on ([`WAKE_PROBE_WAITS`]), wall
    /// milliseconds: at their [`WAKE_QUANTILE`] (at least [`time::pacing::WAKE_NS`]). The
    /// model draws from all of them; this is what a run that keeps the pace met is compared
    /// with after it.
    pub wake_ms: f64,
    /// How late it met the latest of those deadlines, wall milliseconds.
    pub wake_latest_ms: f64,
}

/// Deadlines the machine's wake-ups are probed on before `--speedup auto` chooses: this many,
/// the gap before each cycling through [`WAKE_PROBE_GAPS`] (about 5 s in all). A run's p99
/// lateness is set by the waits the machine meets late about once in a hundred (a busy
/// machine's scheduler ticks, an idle virtual machine's halted vCPU), so the probe must meet
/// several of them (docs/performance.md, "Honest time").
pub const WAKE_PROBE_WAITS: usize = 540;

/// The gaps between the probe's deadlines, cycled. A realtime run's clock waits mostly
/// milliseconds to tens of milliseconds between instants (paper 000 at x115: median 27 ms),
/// napping then spinning the last stretch; deadlines 1.5 ms apart alone (the probe until
/// 2026-11-29) keep it spinning, which a busy machine delays less often than a nap, so they
/// under-read the wakes a run meets: auto chose x129-x179 for paper 000 on a busy machine and
/// every run was too fast (docs/performance.md, "Honest time").
pub const WAKE_PROBE_GAPS: [std::time::Duration; 4] = [
    std::time::Duration::from_millis(2),
    std::time::Duration::from_millis(5),
    std::time::Duration::from_millis(10),
    std::time::Duration::from_millis(20),
];

/// The quantile of the probe's lateness reported as the machine's wake (`wake_ms`): about
/// the third latest of [`WAKE_PROBE_WAITS`] (the latest alone swings with one stall). It is
/// what the run's own lateness is compared with after it; the model draws from all of them.
pub const WAKE_QUANTILE: f64 = 0.995;

/// Chooses a realtime speed-up for `topo` (given in virtual mode): runs it in virtual time
/// recording how long each instant's handling takes on this machine, measures how late this
/// machine meets deadlines the realtime clock waits for ([`WAKE_PROBE_WAITS`] of them), then
/// finds the highest speed-up at which the realtime clock's model ([`time::pacing`], drawing
/// each waited instant's wake from those measures) predicts a p99 timer lateness of at most
/// [`AUTO_P99_LATENESS_MS`], and the wall time the run takes at it. `broken`: the variant the
/// realtime run will run (the virtual run must be the same run).
pub fn choose_speedup(topo: Topology, broken: Broken) -> Result<SpeedupChoice, Error> {
    let options = RunOptions {
        record_load: true,
        broken,
        ..RunOptions::default()
    };
    let result = run(topo, &options)?;
    let gaps = WAKE_PROBE_GAPS
        .iter()
        .copied()
        .cycle()
        .take(WAKE_PROBE_WAITS);
    let mut late = time::wait_lateness_probe(gaps);
    late.sort();
    let at = |q: f64| {
        let i = ((q * late.len() as f64).ceil() as usize).clamp(1, late.len().max(1)) - 1;
        late.get(i).copied().unwrap_or_default()
    };
    let ns = |d: std::time::Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let wakes: Vec<u64> = late.iter().map(|&d| ns(d)).collect();
    let range = (topology::MIN_SPEEDUP, topology::MAX_SPEEDUP);
    let speedup =
        time::pacing::highest_sustainable(&result.load, AUTO_P99_LATENESS_MS, range, &wakes);
    let emulated_end_s = result.summary.emulated_end_s;
    Ok(SpeedupChoice {
        speedup,
        predicted_p99_ms: time::pacing::predicted_p99_ms(&result.load, speedup, &wakes),
        emulated_end_s,
        predicted_wall_s: predicted_wall_s(emulated_end_s, speedup),
        end_exact: false,
        max_wall_s: None,
        calibration_wall_s: result.summary.wall_s,
        wake_ms: ns(at(WAKE_QUANTILE)).max(time::pacing::WAKE_NS) as f64 / 1e6,
        wake_latest_ms: at(1.0).as_secs_f64() * 1e3,
    })
}

/// The wall seconds a realtime run at `speedup` takes to its emulated end `emulated_end_s`
/// when it keeps up: each instant fires no earlier than its emulated time / speed-up, and the
/// last is the end.
pub fn predicted_wall_s(emulated_end_s: f64, speedup: f64) -> f64 {
    if speedup > 0.0 {
        emulated_end_s.max(0.0) / speedup
    } else {
        f64::INFINITY
    }
}

/// Whether a realtime run of `topo` on `threads` threads repeats its virtual run: decides as
/// it does, however late its timers (logical time: see [`time::Clock`]), so it ends at the
/// same emulated time with the same outputs (but the lateness and wall time). `Err` says why
/// not: Grids on threads of their own (messages between them cross threads when the wall
/// says), or policies decided by processes (their answers arrive at the emulated time the wall
/// time they took makes).
pub fn realtime_repeats_virtual(topo: &Topology, threads: usize) -> Result<(), &'static str> {
    if threads > 1 && topo.grids.len() > 1 {
        Err("its Grids run on threads of their own (--threads), and messages between them cross when the wall clock says")
    } else if actors::graph::asks_processes(topo) {
        Err("its policies ask external processes, whose answers arrive when the wall clock says")
    } else {
        Ok(())
    }
}

/// The machine-readable summary of a run (`summary.json`).
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Topology name.
    pub topology: String,
    /// `virtual` or `realtime`.
    pub mode: &'static str,
    /// Emulated seconds per wall second (realtime only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speedup: Option<f64>,
    /// The run's seed.
    pub seed: u64,
    /// The explored order of same-time deliveries (`emulation.interleaving`), when not FIFO.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interleaving: Option<u64>,
    /// The threads the Grids ran on (`--threads`), when more than one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    /// A replay's (`igemu replay`): the record it followed and how far; its outputs are
    /// the record's run only if `diverged` is absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplaySummary>,
    /// What was run (version, topology file and hash, overrides), when the caller said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    /// The policies in force: per Grid its dispatch and provider policy, per cluster its
    /// scheduler, preemption, admission and local requests' treatment, and the contracts.
    pub policies: BTreeMap<String, String>,
    /// The plug-ins in force (policies igemu does not ship: a program's own, or external
    /// processes), each with where it decides, its fallback, and how many decisions it was
    /// asked and its fallback made; absent when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plugins: Vec<policy::PluginRecord>,
    /// Emulated time at the end of the run, seconds.
    pub emulated_end_s: f64,
    /// Wall-clock duration of the run, seconds (not deterministic).
    pub wall_s: f64,
    /// Messages sent between actors.
    pub messages: u64,
    /// Timed events fired by the clock.
    pub timed_events: u64,
    /// Request counts by origin and state.
    pub requests: RequestCounts,
    /// From the first arrival to the last terminal event, seconds.
    pub makespan_s: f64,
    /// The paper metrics over the whole run (utilisation, preemptions, overhead, rates, ...).
    #[serde(flatten)]
    pub metrics: PaperMetrics,
    /// The same per cluster, by `grid/cluster`.
    pub clusters: BTreeMap<String, PaperMetrics>,
    /// Peering figures per Grid.
    pub grids: BTreeMap<String, metrics::GridFigures>,
    /// The per-request metrics (waiting time, turnaround, slowdown, bounded slowdown,
    /// stretch): mean and percentiles overall and per Grid, origin and lease type.
    pub request_metrics: metrics::RequestMetrics,
    /// What the fault injector did.
    pub faults: fault::FaultCounts,
    /// Number of invariant violations (host over capacity, request ended twice, ...).
    pub invariant_violations: u64,
    /// The first few violations, described.
    pub violation_examples: Vec<String>,
    /// Timer lateness percentiles (realtime only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timer_lateness_ms: Option<TimerLateness>,
    /// Realtime only: whether the speed-up was sustainable (p99 lateness at most
    /// [`SUSTAINABLE_P99_LATENESS_MS`]; see [`lateness_verdict`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speedup_sustainable: Option<bool>,
    /// With `--speedup auto`: what it chose, predicted and measured (set by the command).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speedup_auto: Option<SpeedupChoice>,
}

/// Everything a run produced.
pub struct RunResult {
    /// Each instant's handling time, with [`RunOptions::record_load`] (else empty).
    pub load: Vec<time::InstantLoad>,
    /// The topology that ran.
    pub topology: Rc<Topology>,
    /// One record per request, indexed like the topology's requests.
    pub records: Vec<RequestRecord>,
    /// Every preemption decision, in the order made.
    pub decisions: Vec<DecisionRecord>,
    /// Every VM instance's state spans (empty unless [`RunOptions::intervals`]).
    pub intervals: Vec<metrics::VmSpan>,
    /// Every lease's events (empty unless [`RunOptions::lease_log`]).
    pub lease_log: metrics::LeaseLog,
    /// Whether they were recorded (`leases.csv` is written then, even with no event).
    lease_logged: bool,
    /// The summary.
    pub summary: Summary,
    /// The directory this run wrote `trace.jsonl` into directly (not staged): that trace is
    /// this run's, so putting outputs in place there keeps it.
    trace_in_place: Option<PathBuf>,
    /// With [`RunOptions::record`]: the deliveries recorded, or why the record could not be
    /// written whole (the run's results stand; the partial record is removed).
    pub recorded: Option<Result<u64, String>>,
    /// With [`RunOptions::replay`]: how the replay followed its record.
    pub replayed: Option<ReplayOutcome>,
}

/// `requests.csv`'s columns: one row per request.
const REQUEST_COLUMNS: [&str; 25] = [
    "request_id",
    "grid",
    "cluster",
    "origin",
    "lease_type",
    "vms",
    "mem_mb",
    "submit_s",
    "start_s",
    "end_s",
    "state",
    "preemptions",
    "overhead_s",
    "duration_s",
    "deadline_s",
    "served_by",
    "hosts",
    // Added after the others, so readers that take columns by position keep working.
    "outcome",
    "reason",
    "displacements",
    // The per-request metrics ([`metrics::Measures`]), in [`metrics::METRIC_NAMES`]' order.
    "wait_s",
    "turnaround_s",
    "slowdown",
    "bounded_slowdown",
    "stretch",
];

/// `decisions.csv`'s columns: one row per preemption decision.
const DECISION_COLUMNS: [&str; 11] = [
    "at_s",
    "cluster",
    "local_request",
    "requested_start_s",
    "local_start_s",
    "vacated_by_s",
    "preempted",
    "operations",
    "cost_s",
    "reschedule_s",
    "exact",
];

/// `leases.csv`'s columns: one row per event of each lease.
const LEASE_COLUMNS: [&str; 10] = [
    "time_s",
    "request_id",
    "event",
    "grid",
    "cluster",
    "hosts",
    "vms",
    "cause",
    "operation",
    "planned_s",
];

/// `intervals.csv`'s columns: one row per span a VM spent in one state.
const INTERVAL_COLUMNS: [&str; 9] = [
    "request_id",
    "vm",
    "grid",
    "cluster",
    "host",
    "lease_type",
    "state",
    "start_s",
    "end_s",
];

/// Creates the csv file `path`; its errors name it.
fn csv_file(path: &Path) -> Result<CsvOut<std::fs::File>, Error> {
    let file = std::fs::File::create(path).map_err(Error::output(path))?;
    Ok(CsvOut::new(file))
}

impl RunResult {
    /// Writes `requests.csv`: one row per request, in id order.
    // Called once a run: out of line so that a profile shows each file's cost.
    #[inline(never)]
    fn write_requests(&self, path: &Path) -> Result<(), Error> {
        let io = |e: std::io::Error| Error::output(path.to_path_buf())(e);
        let mut w = csv_file(path)?;
        let topo = &self.topology;
        // The hosts each request's VMs held last (from the spans, when recorded), by request.
        let mut hosts: Vec<Option<(model::ClusterId, Vec<u16>)>> = vec![None; topo.requests.len()];
        for s in self.intervals.iter().filter(|s| s.state.holds_host()) {
            let e = hosts[s.lease.0 as usize].get_or_insert_with(|| (s.cluster, Vec::new()));
            if e.0 != s.cluster {
                *e = (s.cluster, Vec::new());
            }
            e.1.push(s.host);
        }
        for (_, list) in hosts.iter_mut().flatten() {
            list.sort_unstable();
            list.dedup();
        }
        // A csv writer serialising rows writes the header with the first row: none without.
        if !topo.requests.is_empty() {
            w.header(&REQUEST_COLUMNS).map_err(io)?;
        }
        let grid_name = |c: model::ClusterId| &topo.grids[usize::from(topo.cluster(c).grid.0)].name;
        let mut list = Vec::new();
        let measures = metrics::measures(topo, &self.records);
        for ((req, rec), m) in topo.requests.iter().zip(&self.records).zip(&measures) {
            w.text(topo.label(req.id));
            w.text(&topo.grids[usize::from(req.grid.0)].name);
            w.text(rec.cluster.map_or("", |c| &topo.cluster(c).name));
            w.text(req.origin.as_str());
            w.text(req.lease_type.as_str());
            w.uint(u64::from(req.vms));
            w.uint(u64::from(req.mem_mb));
            w.secs(req.arrival.as_micros());
            w.opt_secs(rec.start);
            w.opt_secs(rec.end);
            w.text(
                rec.state
                    .unwrap_or(model::RequestState::Unfinished)
                    .as_str(),
            );
            w.uint(u64::from(rec.preemptions));
            w.secs(rec.overhead.as_micros());
            w.secs(req.duration.as_micros());
            w.opt_secs(rec.deadline.or(req.deadline));
            w.text(rec.cluster.map_or("", |c| grid_name(c)));
            // Host numbers apart by spaces: digits and spaces need no quotes.
            list.clear();
            if let Some((_, held)) = &hosts[req.id.0 as usize] {
                for (n, host) in held.iter().enumerate() {
                    if n > 0 {
                        list.push(b' ');
                    }
                    let mut buf = [0u8; 20];
                    let at = time::write_digits(u64::from(*host), &mut buf, 20);
                    list.extend_from_slice(&buf[at..]);
                }
            }
            w.raw(&list);
            w.text(metrics::Outcome::of(req, rec).as_str());
            w.text(rec.reason.map_or("", model::RejectReason::as_str));
            w.uint(u64::from(rec.displacements));
            w.opt_secs_f64(m.wait_s);
            w.opt_secs_f64(m.turnaround_s);
            for ratio in [m.slowdown, m.bounded_slowdown, m.stretch] {
                w.ratio(ratio);
            }
            w.end_row().map_err(io)?;
        }
        w.finish().map_err(io)?;
        Ok(())
    }

    /// Writes `decisions.csv`: one row per preemption decision, in the order made (the
    /// header even when none was made, so the file always loads).
    // Called once a run: out of line so that a profile shows each file's cost.
    #[inline(never)]
    fn write_decisions(&self, path: &Path) -> Result<(), Error> {
        let io = |e: std::io::Error| Error::output(path.to_path_buf())(e);
        let mut w = csv_file(path)?;
        let topo = &self.topology;
        w.header(&DECISION_COLUMNS).map_err(io)?;
        for r in &self.decisions {
            let d = &r.decision;
            let preempted: Vec<&str> = d.set.iter().map(|(id, _)| topo.label(*id)).collect();
            let operations: Vec<&str> = d.set.iter().map(|(_, op)| op.as_str()).collect();
            w.secs(r.at.as_micros());
            w.text(&topo.cluster(r.cluster).qualified_name(topo));
            w.text(topo.label(d.local));
            w.secs(d.window.0.as_micros());
            w.secs(d.local_start.as_micros());
            w.secs(d.vacated_by.as_micros());
            w.text(&preempted.join(" "));
            w.text(&operations.join(" "));
            w.secs(d.cost.as_micros());
            w.secs(d.reschedule.as_micros());
            w.bool(d.exact);
            w.end_row().map_err(io)?;
        }
        w.finish().map_err(io)?;
        Ok(())
    }

    /// Writes `utilization.csv`: per cluster, at every change point, what its hosts give VMs
    /// and the requests waiting for it.
    // Called once a run: out of line so that a profile shows each file's cost.
    #[inline(never)]
    fn write_utilization(&self, path: &Path) -> Result<(), Error> {
        let io = |e: std::io::Error| Error::output(path.to_path_buf())(e);
        let mut w = csv_file(path)?;
        let topo = &self.topology;
        let mut header = vec![
            "time_s".to_string(),
            "grid".into(),
            "cluster".into(),
            "cores_used".into(),
            "cores_total".into(),
            "mem_mb_used".into(),
            "mem_mb_total".into(),
        ];
        header.extend(
            (model::LeaseType::ALL.iter()).map(|t| format!("vms_{}", t.as_str().replace('-', "_"))),
        );
        header.push("queued".into());
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        w.header(&header).map_err(io)?;
        // Per cluster, the bytes that stay the same on each of its rows.
        let fixed: Vec<[Vec<u8>; 4]> = (topo.clusters.iter())
            .map(|c| {
                let mem: u64 = c.hosts.iter().map(|h| h.memory_mb).sum();
                [
                    csv_field(&topo.grids[usize::from(c.grid.0)].name),
                    csv_field(&c.name),
                    c.cores().to_string().into_bytes(),
                    mem.to_string().into_bytes(),
                ]
            })
            .collect();
        for r in metrics::usage(topo, &self.intervals, &self.records) {
            let [grid, cluster, cores_total, mem_total] = &fixed[usize::from(r.cluster.0)];
            w.secs(r.at.as_micros());
            w.raw(grid);
            w.raw(cluster);
            w.int(r.cores);
            w.raw(cores_total);
            w.int(r.mem_mb);
            w.raw(mem_total);
            for n in r.vms {
                w.int(n);
            }
            w.int(r.queued);
            w.end_row().map_err(io)?;
        }
        w.finish().map_err(io)?;
        Ok(())
    }

    /// Writes `leases.csv`: one row per event of each lease, in time order
    /// ([`metrics::lease_rows`]).
    // Called once a run: out of line so that a profile shows each file's cost.
    #[inline(never)]
    fn write_leases(&self, path: &Path) -> Result<(), Error> {
        let io = |e: std::io::Error| Error::output(path.to_path_buf())(e);
        let mut w = csv_file(path)?;
        let topo = &self.topology;
        w.header(&LEASE_COLUMNS).map_err(io)?;
        let grids: Vec<Vec<u8>> = (topo.grids.iter()).map(|g| csv_field(&g.name)).collect();
        let clusters: Vec<Vec<u8>> = (topo.clusters.iter()).map(|c| csv_field(&c.name)).collect();
        let mut list = Vec::new();
        // Each request's label in csv form, made at its first row (a lease has about five).
        let mut labels: Vec<Option<Vec<u8>>> = vec![None; topo.requests.len()];
        fn label<'l>(
            labels: &'l mut [Option<Vec<u8>>],
            topo: &Topology,
            id: model::RequestId,
        ) -> &'l [u8] {
            labels[id.0 as usize].get_or_insert_with(|| csv_field(topo.label(id)))
        }
        for row in metrics::lease_rows(topo, &self.records, &self.lease_log) {
            w.secs(row.at.as_micros());
            w.raw(label(&mut labels, topo, row.lease));
            w.raw(row.kind.as_str().as_bytes());
            w.raw(&grids[usize::from(row.grid.0)]);
            w.raw(
                row.cluster
                    .map_or(&b""[..], |c| &clusters[usize::from(c.0)]),
            );
            // Host numbers apart by spaces, as requests.csv writes them.
            list.clear();
            for (n, host) in row.hosts.iter().enumerate() {
                if n > 0 {
                    list.push(b' ');
                }
                let mut buf = [0u8; 20];
                let at = time::write_digits(u64::from(*host), &mut buf, 20);
                list.extend_from_slice(&buf[at..]);
            }
            w.raw(&list);
            match row.vms {
                Some(n) => w.uint(u64::from(n)),
                None => w.raw(b""),
            }
            match row.cause {
                Some(metrics::Cause::Request(id)) => w.raw(label(&mut labels, topo, id)),
                Some(metrics::Cause::Grid(g)) => w.raw(&grids[usize::from(g.0)]),
                Some(metrics::Cause::Cluster(c)) => w.text(&topo.cluster(c).qualified_name(topo)),
                Some(metrics::Cause::Reason(r)) => w.raw(r.as_str().as_bytes()),
                None => w.raw(b""),
            }
            w.raw(row.operation.map_or("", |o| o.as_str()).as_bytes());
            w.opt_secs(row.planned);
            w.end_row().map_err(io)?;
        }
        w.finish().map_err(io)?;
        Ok(())
    }

    /// Writes `intervals.csv`: one row per VM instance and state span, in the order the
    /// spans ended (sorted by start for a Gantt chart).
    // Called once a run: out of line so that a profile shows each file's cost.
    #[inline(never)]
    fn write_intervals(&self, path: &Path) -> Result<(), Error> {
        let io = |e: std::io::Error| Error::output(path.to_path_buf())(e);
        let mut w = csv_file(path)?;
        let topo = &self.topology;
        // A run can have millions of spans: each row is put together from bytes prepared
        // once (names quoted by the csv writer itself, where they need it) and numbers
        // written without allocating; a csv writer's per-field pass was most of the cost.
        // Per cluster `grid,cluster` (two fields, the comma between them included).
        let names: Vec<Vec<u8>> = (topo.clusters.iter())
            .map(|c| {
                let mut both = csv_field(&topo.grids[usize::from(c.grid.0)].name);
                both.push(b',');
                both.extend_from_slice(&csv_field(&c.name));
                both
            })
            .collect();
        let mut labels: Vec<Option<Vec<u8>>> = vec![None; topo.requests.len()];
        w.header(&INTERVAL_COLUMNS).map_err(io)?;
        for s in &self.intervals {
            let i = s.lease.0 as usize;
            let req = &topo.requests[i];
            let label = labels[i].get_or_insert_with(|| csv_field(topo.label(s.lease)));
            w.raw(label);
            w.uint(u64::from(s.vm));
            w.raw(&names[usize::from(s.cluster.0)]);
            w.uint(u64::from(s.host));
            w.raw(req.lease_type.as_str().as_bytes());
            w.raw(s.state.as_str().as_bytes());
            w.secs(s.start.as_micros());
            w.secs(s.end.as_micros());
            w.end_row().map_err(io)?;
        }
        w.finish().map_err(io)?;
        Ok(())
    }

    /// Writes `requests.csv`, `decisions.csv`, `intervals.csv` and `utilization.csv` (when
    /// spans were recorded), `leases.csv` (when lease events were) and `summary.json` into
    /// `dir` (created if needed).
    pub fn write_outputs(&self, dir: &Path) -> Result<(), Error> {
        std::fs::create_dir_all(dir).map_err(Error::output(dir))?;
        let written = self.write_staged(dir);
        if written.is_err() {
            // The previous outputs stay whole; this run's partial files go.
            for name in RUN_OUTPUTS {
                let _ = std::fs::remove_file(staged(dir, name));
            }
            return written;
        }
        // A trace this run wrote straight into `dir` (not staged) is its own: kept.
        let same = |a: &Path| a.canonicalize().ok() == dir.canonicalize().ok();
        put_in_place(dir, self.trace_in_place.as_deref().is_some_and(same))
    }

    /// Writes every output under its temporary name ([`staged`]).
    fn write_staged(&self, dir: &Path) -> Result<(), Error> {
        let io = |path: &Path| Error::output(path.to_path_buf());
        self.write_requests(&staged(dir, "requests.csv"))?;
        self.write_decisions(&staged(dir, "decisions.csv"))?;
        if !self.intervals.is_empty() {
            self.write_intervals(&staged(dir, "intervals.csv"))?;
            self.write_utilization(&staged(dir, "utilization.csv"))?;
        }
        if self.lease_logged {
            self.write_leases(&staged(dir, "leases.csv"))?;
        }
        let summary_path = staged(dir, "summary.json");
        let mut text =
            serde_json::to_string_pretty(&self.summary).map_err(|e| io(&summary_path)(e.into()))?;
        text.push('\n');
        std::fs::write(&summary_path, text).map_err(io(&summary_path))?;
        Ok(())
    }

    /// A few lines for a person.
    pub fn human_summary(&self) -> String {
        let s = &self.summary;
        let r = &s.requests;
        let mut out = format!(
            "igemu: {} ({} mode, seed {})\n  emulated {:.1} s in {:.3} s wall, {} messages, {} timed events\n",
            s.topology, s.mode, s.seed, s.emulated_end_s, s.wall_s, s.messages, s.timed_events
        );
        // The policies in force, each distinct setting once (most runs have one per kind).
        let mut distinct: Vec<&str> = s.policies.values().map(String::as_str).collect();
        distinct.sort_unstable();
        distinct.dedup();
        out += &format!("  policies: {}\n", distinct.join("; "));
        for (name, c) in [("local", &r.local), ("external", &r.external)] {
            out += &format!(
                "  {name:<8} completed {:>4}  rejected {:>4}  cancelled {:>4}  unfinished {:>4}\n",
                c.completed, c.rejected, c.cancelled, c.unfinished
            );
        }
        // Each figure under its summary key's name: preemptions are of running leases
        // (`lease_preemptions`, `vm_preemptions`), displacements of waiting reservations
        // (`lease_displacements`, `vm_displacements`).
        let m = &s.metrics;
        out += &format!(
            "  decisions {}, preemptions {} leases / {} VMs, displacements {} leases / {} VMs, overhead {:.1} s, AWRT {:.1} s\n",
            m.decisions,
            m.lease_preemptions,
            m.vm_preemptions,
            m.lease_displacements,
            m.vm_displacements,
            m.overhead_s,
            m.awrt_s
        );
        out += &negotiations_line(s.grids.values().map(|g| &g.negotiations));
        out += &format!(
            "  utilization {:.1} %, makespan {:.1} s, invariant violations {}",
            s.metrics.utilization_pct, s.makespan_s, s.invariant_violations
        );
        if let Some(l) = &s.timer_lateness_ms {
            out += &format!(
                "\n  timer lateness (emulated ms): p50 {:.3}  p99 {:.3}  max {:.3}\n  speed-up: {}",
                l.p50,
                l.p99,
                l.max,
                lateness_verdict(l)
            );
        }
        out
    }
}

/// Builds the actor graph for `topo` and runs it to its end; returns the end time.
async fn emulate(emu: Rc<Emu>, topo: &Topology, broken: Broken) -> Result<EmuTime, Error> {
    let (done_tx, done_rx) = oneshot::channel();
    let _graph = actors::graph::Graph::build(&emu, topo, done_tx, broken).map_err(Error::Policy)?;
    let driver = actix::spawn(emu.clock.clone().drive());
    let stop = emu.plugins.stopped();
    let capped = emu.cap.stopped();
    let end = tokio::select! {
        // Invariant: the director holds the sender until it fires; if it were dropped the
        // run is over anyway, so "now" is the end.
        end = done_rx => end.unwrap_or_else(|_| emu.now()),
        // The driver runs until the runtime drops it: it ended only by panicking. Carry
        // the panic on rather than wait forever for an end no event can bring.
        ended = driver => match ended {
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            _ => emu.now(),
        },
        // A plug-in failed and no fallback may decide: the run stops here.
        () = stop.notified() => {
            emu.clock.halt();
            emu.now()
        }
        // The run passed its message cap (its clock is halted already).
        () = capped.notified() => emu.now(),
    };
    if let Some((at, cap)) = emu.cap.passed() {
        return Err(Error::Input(format!(
            "igemu: the run sent more than {cap} messages (emulation.max_messages) by {at} \
             emulated, and was stopped there; its outputs are not written\n    hint: settings \
             that make a run send this many messages are worth a look (timeouts, rates, \
             periods; `igemu validate` warns of some); raise emulation.max_messages if the run \
             is meant to be this long"
        )));
    }
    match emu.plugins.failure() {
        Some(f) => Err(Error::Policy(f.to_string())),
        None => Ok(end),
    }
}

/// What a run observed, gathered from its context (or its shards' contexts, merged).
pub(crate) struct Observed {
    /// The observations.
    metrics: metrics::Metrics,
    /// Messages sent.
    messages: u64,
    /// Timed events fired.
    timed_events: u64,
    /// Timer lateness (realtime).
    lateness: Option<Lateness>,
    /// What the fault injector did.
    faults: fault::FaultCounts,
    /// The plug-ins in force, with their counts.
    plugins: Vec<policy::PluginRecord>,
}

impl Observed {
    /// What `emu` observed (its metrics are taken).
    fn of(emu: &Emu) -> Observed {
        Observed {
            metrics: std::mem::take(&mut *emu.metrics.borrow_mut()),
            messages: emu.tracer.messages(),
            timed_events: emu.clock.fired(),
            lateness: emu.clock.lateness(),
            faults: emu.faults.borrow().counts.clone(),
            plugins: emu.plugins.records(),
        }
    }

    /// Adds what another shard of the run observed (but its metrics and lateness).
    pub(crate) fn add_counts(&mut self, other: &Observed) {
        self.messages += other.messages;
        self.timed_events += other.timed_events;
        self.faults.add(&other.faults);
        self.plugins.extend(other.plugins.iter().cloned());
        self.plugins
            .sort_by(|a, b| (&a.at, &a.point).cmp(&(&b.at, &b.point)));
    }
}

/// The run's summary, per-request records and decisions, from what it observed.
fn summarize(
    topo: &Topology,
    observed: Observed,
    end: EmuTime,
    wall_s: f64,
) -> (
    Summary,
    Vec<RequestRecord>,
    Vec<DecisionRecord>,
    Vec<metrics::VmSpan>,
    metrics::LeaseLog,
) {
    let mode = topo.emulation.mode;
    let Observed {
        metrics,
        messages,
        timed_events,
        lateness,
        faults: fault_counts,
        plugins,
    } = observed;
    let metrics::Finished {
        spans,
        records,
        clusters: counters,
        grids,
        violations,
        decisions,
        leases,
    } = metrics.finish();
    let figures = metrics::figures(topo, &records, &counters);
    let grid_figures = metrics::grid_figures(topo, &records, &grids);
    let request_metrics = metrics::request_metrics(topo, &metrics::measures(topo, &records));
    let summary = Summary {
        topology: topo.name.clone(),
        mode: match mode {
            ClockMode::Virtual => "virtual",
            ClockMode::Realtime { .. } => "realtime",
        },
        speedup: match mode {
            ClockMode::Virtual => None,
            ClockMode::Realtime { speedup } => Some(speedup),
        },
        seed: topo.emulation.seed,
        interleaving: Some(topo.emulation.interleaving).filter(|&k| k > 0),
        threads: None,
        replay: None,
        provenance: None,
        policies: policies(topo),
        plugins,
        emulated_end_s: end.as_secs_f64(),
        wall_s,
        messages,
        timed_events,
        requests: figures.requests,
        makespan_s: figures.makespan_s,
        metrics: figures.all,
        clusters: figures.clusters,
        grids: grid_figures,
        request_metrics,
        faults: fault_counts,
        invariant_violations: violations.len() as u64,
        violation_examples: violations.iter().take(10).map(|v| v.to_string()).collect(),
        speedup_sustainable: lateness
            .as_ref()
            .map(|l| l.p99 <= SUSTAINABLE_P99_LATENESS_MS),
        timer_lateness_ms: lateness,
        speedup_auto: None,
    };
    (summary, records, decisions, spans, leases)
}

/// The policies in force, by where they apply (`grid:<g>`, `cluster:<g>/<c>`, `peering`), as
/// `summary.json`'s `policies` and `sweep.json` record them.
pub fn policies(topo: &Topology) -> BTreeMap<String, String> {
    let mut p = BTreeMap::new();
    p.insert(
        "peering".to_string(),
        format!("contracts {}", topo.peering.contracts.as_str()),
    );
    for g in &topo.grids {
        let provider = g.igg.provider.map_or("none", |x| x.as_str());
        if g.igg.implementation.name != policy::registry::GATEWAY {
            let text = format!("gateway {}, provider {provider}", g.igg.implementation.name);
            p.insert(format!("grid:{}", g.name), text);
            continue;
        }
        let mut text = format!(
            "dispatch {}, provider {provider}",
            policy::describe(&g.igg.dispatch, None)
        );
        // The negotiation policies are named where a Grid does not use igemu's own.
        for (point, chosen, shipped) in [
            (
                "answer",
                &g.igg.answer,
                igg::negotiation::AnswerName::MarginalCost.as_str(),
            ),
            (
                "offer",
                &g.igg.offer,
                igg::negotiation::OfferName::CheapestContract.as_str(),
            ),
        ] {
            if chosen.name != shipped || chosen.fallback.is_some() {
                text += &format!(", {point} {}", policy::describe(chosen, None));
            }
        }
        p.insert(format!("grid:{}", g.name), text);
    }
    for c in &topo.clusters {
        let l = &c.lrms;
        let mut scheduler = match l.backfilling {
            lrms::Backfilling::Fcfs => "fcfs".to_string(),
            lrms::Backfilling::Conservative => "conservative".to_string(),
            lrms::Backfilling::Easy { pivots } => format!("easy ({pivots} pivots)"),
        };
        if let Some(depth) = l.backfill_depth {
            scheduler += &format!(", backfill depth {depth}");
        }
        if l.moldable != lrms::Moldable::Spread {
            // Named only when not the default, so that other runs' summaries stay as they were.
            scheduler += &format!(", moldable {}", l.moldable.as_str());
        }
        let shipped = |point| {
            policy::registry::described(
                point,
                &l.preemption.name,
                l.cp_alpha,
                (l.pacp, l.queue_limit),
            )
        };
        p.insert(
            format!("cluster:{}", c.qualified_name(topo)),
            format!(
                "scheduler {scheduler}, preemption {}, admission {}, locals {}",
                policy::describe(&l.preemption, shipped(policy::Point::Preemption)),
                policy::describe(
                    &l.admission,
                    policy::registry::described(
                        policy::Point::Admission,
                        &l.admission.name,
                        l.cp_alpha,
                        (l.pacp, l.queue_limit)
                    )
                ),
                l.locals.as_str()
            ),
        );
    }
    p
}

/// Runs `topo` to its end and gathers the results.
pub fn run(topo: Topology, options: &RunOptions) -> Result<RunResult, Error> {
    // One Grid has nothing to run beside it: one thread, exact (as a virtual run decides).
    if options.threads > 1 && topo.grids.len() > 1 {
        return run_on_threads(topo, options);
    }
    let topo = Rc::new(topo);
    let mode = topo.emulation.mode;
    let labels = topo.request_labels.clone();
    let tracer = match &options.trace_dir {
        Some(dir) => {
            let path = if options.stage_trace {
                staged(dir, "trace.jsonl")
            } else {
                dir.join("trace.jsonl")
            };
            Tracer::to_file(&path, labels)
                .map_err(|source| Error::Output { path, source })?
                .with_filter(options.trace_filter.clone())
        }
        None => Tracer::counting(labels),
    };
    let (mut order_log, record_at) = match &options.record {
        Some(path) => {
            let (log, staged) = open_record(path, &topo, options)?;
            (Some(log), Some((staged, path)))
        }
        None => (None, None),
    };
    let mut order_script = match &options.replay {
        Some(path) => Some(open_replay(path, &topo)?),
        None => None,
    };
    let wall = time::Stopwatch::start();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(mode == ClockMode::Virtual)
        .build()
        .map_err(Error::Runtime)?;
    let system = actix::System::with_tokio_rt(|| rt);
    let (end, emu) = system.block_on(async {
        let faults = fault::Faults::new(
            topo.faults.clone(),
            time::stream_seed(topo.emulation.seed, "faults"),
        );
        let clock = Clock::new(mode);
        if topo.emulation.interleaving > 0 {
            let name = format!("interleaving-{}", topo.emulation.interleaving);
            clock.interleave(time::stream_seed(topo.emulation.seed, &name));
        }
        if options.record_load {
            clock.record_load();
        }
        if let Some(log) = order_log.take() {
            clock.record_order(log);
        }
        if let Some((script, held)) = order_script.take() {
            clock.replay_order(script, held);
        }
        if let Some(p) = &options.progress {
            clock.mirror_now(std::sync::Arc::clone(p));
        }
        let emu = Rc::new(Emu::new(
            clock,
            tracer,
            topo.requests.clone().into(),
            faults,
        ));
        if let Some(cap) = topo.emulation.max_messages {
            emu.cap.set(cap);
        }
        if options.lease_log {
            // About four events a request: accepted, scheduled, started, ended.
            let expected = topo.requests.len().saturating_mul(4);
            emu.metrics.borrow_mut().record_lease_events(expected);
        }
        if options.intervals {
            // A span per VM instance as a rule (preempted ones have more).
            let vms = topo.requests.iter().map(|r| r.vms as usize);
            let expected = vms.fold(0usize, usize::saturating_add);
            emu.metrics.borrow_mut().record_spans(expected);
        }
        if let (Some(feed), ClockMode::Realtime { speedup }) = (&options.live, mode) {
            emu.tracer.keep_recent(serve::RECENT_MESSAGES);
            let (feed, weak, topo) = (
                std::sync::Arc::clone(feed),
                Rc::downgrade(&emu),
                Rc::clone(&topo),
            );
            emu.clock.every_wall(serve::FRAME_EVERY, move |now, wall| {
                if let Some(emu) = weak.upgrade() {
                    serve::publish_frame(&feed, (&emu, &topo), (now, wall, speedup), false);
                }
            });
        }
        let end = emulate(Rc::clone(&emu), &topo, options.broken).await;
        (end, emu)
    });
    // The run's processes end with it, whatever its outcome.
    emu.plugins.finish();
    policy::realtime::on_arrival(None);
    let end = match end {
        Ok(end) => end,
        Err(e) => {
            abandon(
                &emu,
                options,
                record_at.as_ref().map(|(staged, _)| staged.as_path()),
            );
            return Err(e);
        }
    };
    let wall_s = wall.elapsed_secs();
    if let (Some(feed), ClockMode::Realtime { speedup }) = (&options.live, mode) {
        serve::publish_frame(feed, (&emu, &topo), (end, end, speedup), true);
    }
    // Timers still pending hold the actors' state, which holds the clock: drop them so the
    // run's state is freed with the runtime (sweeps run many runs in one process).
    emu.clock.discard_pending();
    let load = emu.clock.take_load();
    let order = emu.clock.finish_order();
    let recorded = match (order.recorded, record_at) {
        (Some(written), Some((staged, path))) => {
            let put = written
                .map_err(|e| Error::output(staged.clone())(e).to_string())
                .and_then(|n| {
                    std::fs::rename(&staged, path)
                        .map(|()| n)
                        .map_err(|e| Error::output(path.clone())(e).to_string())
                });
            if put.is_err() {
                // Never leave a partial record behind (on a full disk it keeps it full).
                let _ = std::fs::remove_file(&staged);
            }
            Some(put)
        }
        _ => None,
    };
    let replayed = order
        .replayed
        .map(|r| r.map_err(|d| name_actors(&d, &emu.tracer)));
    emu.tracer.finish().map_err(Error::Trace)?;
    let (mut summary, records, decisions, intervals, lease_log) =
        summarize(&topo, Observed::of(&emu), end, wall_s);
    summary.provenance = provenance(options, &summary.plugins);
    summary.replay = match (&replayed, &options.replay) {
        (Some(outcome), Some(path)) => Some(ReplaySummary {
            record: path.display().to_string(),
            followed: outcome.as_ref().ok().copied(),
            diverged: outcome.as_ref().err().cloned(),
        }),
        _ => None,
    };
    drop(emu);
    drop(system);
    Ok(RunResult {
        load,
        topology: topo,
        records,
        decisions,
        intervals,
        lease_log,
        lease_logged: options.lease_log,
        summary,
        trace_in_place: options.trace_dir.clone().filter(|_| !options.stage_trace),
        recorded,
        replayed,
    })
}

/// The run's provenance as the caller gave it, with the plug-ins in force.
fn provenance(options: &RunOptions, plugins: &[policy::PluginRecord]) -> Option<Provenance> {
    let mut p = options.provenance.clone()?;
    p.plugins = (plugins.iter())
        .map(|r| format!("{} {}: {}", r.at, r.point, r.policy))
        .collect();
    Some(p)
}

/// Ends a run that failed (a plug-in stopped it): its pending events dropped, and what it
/// began to write — its trace, its record (`staged_record`) — removed, so that a failed
/// run's outputs are absent rather than partial.
fn abandon(emu: &Emu, options: &RunOptions, staged_record: Option<&Path>) {
    emu.clock.discard_pending();
    let _ = emu.clock.finish_order();
    let _ = emu.tracer.finish();
    if let Some(dir) = &options.trace_dir {
        let trace = match options.stage_trace {
            true => staged(dir, "trace.jsonl"),
            false => dir.join("trace.jsonl"),
        };
        let _ = std::fs::remove_file(trace);
    }
    if let Some(record) = staged_record {
        let _ = std::fs::remove_file(record);
    }
}

/// [`run`] on several threads ([`RunOptions::threads`]).
fn run_on_threads(topo: Topology, options: &RunOptions) -> Result<RunResult, Error> {
    let wall = time::Stopwatch::start();
    let (end, observed, threads) = threads::run(&topo, options, options.threads)?;
    let wall_s = wall.elapsed_secs();
    let topo = Rc::new(topo);
    let (mut summary, records, decisions, intervals, lease_log) =
        summarize(&topo, observed, end, wall_s);
    summary.provenance = provenance(options, &summary.plugins);
    summary.threads = Some(threads);
    Ok(RunResult {
        load: Vec::new(),
        topology: topo,
        records,
        decisions,
        intervals,
        lease_log,
        lease_logged: options.lease_log,
        summary,
        trace_in_place: None,
        recorded: None,
        replayed: None,
    })
}

/// `text` with each "actor N" followed by the actor's trace name, where the run has one.
fn name_actors(text: &str, tracer: &Tracer) -> String {
    const MARK: &str = "actor ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(MARK) {
        let after = &rest[i + MARK.len()..];
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        out.push_str(&rest[..i + MARK.len() + digits]);
        let name = after[..digits]
            .parse::<u32>()
            .ok()
            .and_then(|n| tracer.name_if_any(trace::ActorId(n)));
        if let Some(name) = name {
            out.push_str(&format!(" ({name})"));
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

/// Opens the record file `path` under a temporary name beside it and writes its header
/// (what ran); returns the log of deliveries that follows and the temporary name.
fn open_record(
    path: &Path,
    topo: &Topology,
    options: &RunOptions,
) -> Result<(time::record::OrderLog, PathBuf), Error> {
    use std::io::Write;
    record_file_name(path)?;
    // A name of its own, so that two runs recording to one file do not write into one
    // temporary file (the last to finish wins, whole).
    let (staged, file) = create_temp_beside(path).map_err(Error::output(path))?;
    let (mode, speedup) = match topo.emulation.mode {
        ClockMode::Virtual => ("virtual", None),
        ClockMode::Realtime { speedup } => ("realtime", Some(speedup)),
    };
    let header = RecordHeader {
        igemu_record: RECORD_FORMAT,
        provenance: options.provenance.clone().unwrap_or_default(),
        seed: topo.emulation.seed,
        mode: mode.to_string(),
        speedup,
        interleaving: topo.emulation.interleaving,
        broken: options.broken.name().to_string(),
    };
    let mut out = std::io::BufWriter::new(file);
    // Invariant: the header is plain data; serialising it cannot fail.
    let line = serde_json::to_string(&header).expect("a record header serialises");
    let line = line + "\n";
    out.write_all(line.as_bytes())
        .map_err(Error::output(staged.clone()))?;
    Ok((
        time::record::OrderLog::new(Box::new(out), line.as_bytes()),
        staged,
    ))
}

/// The file name a record at `path` gets; an error, known before the run rather than after
/// it, if `path` is a directory (or names none, as `.` does).
pub fn record_file_name(path: &Path) -> Result<String, Error> {
    match path.file_name() {
        Some(n) if !path.is_dir() => Ok(n.to_string_lossy().into_owned()),
        _ => Err(Error::Usage(format!(
            "--record {}: that is a directory; give a file name, e.g. {}",
            path.display(),
            path.join("run.rec").display()
        ))),
    }
}

/// Reads a record file's header: what ran and how to replay it.
pub fn read_record_header(path: &Path) -> Result<RecordHeader, Error> {
    let file = std::fs::File::open(path).map_err(|e| unreadable(path, e))?;
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(std::io::Read::take(file, MAX_RECORD_HEADER)),
        &mut first,
    )
    .map_err(|e| unreadable(path, e))?;
    let not_one = |why: String| {
        Error::Input(format!(
            "igemu: {}: line 1 is not an igemu record header ({why}); records are written by `igemu run --record FILE`",
            path.display()
        ))
    };
    let value: serde_json::Value =
        serde_json::from_str(first.trim_end()).map_err(|e| not_one(e.to_string()))?;
    // Its strings are shown (the mode, the igemu that wrote it) before the end line's hash
    // is checked.
    if let Some(place) = input::unshowable_json(&value) {
        return Err(not_one(format!(
            "`{place}` holds a control or invisible character"
        )));
    }
    let header: RecordHeader = serde_json::from_value(value).map_err(|e| not_one(e.to_string()))?;
    if header.igemu_record != RECORD_FORMAT {
        return Err(Error::Input(format!(
            "igemu: {}: record format {} (this igemu reads format {RECORD_FORMAT}); replay it with the igemu that wrote it ({})",
            path.display(),
            header.igemu_record,
            header.provenance.igemu
        )));
    }
    Ok(header)
}

/// The error for a record that cannot be read.
fn unreadable(path: &Path, e: std::io::Error) -> Error {
    Error::Input(format!(
        "igemu: cannot read the record {}: {e}",
        path.display()
    ))
}

/// The longest header line a record may have (the overrides are in it).
const MAX_RECORD_HEADER: u64 = 1 << 20;

/// Opens a record for a replay: the script of its deliveries (after the header) and whether
/// the recorded run held them and chose their order.
fn open_replay(path: &Path, topo: &Topology) -> Result<(time::record::OrderScript, bool), Error> {
    let header = read_record_header(path)?;
    // The header is not in the end line's hash: the seed it says was run must be the run it
    // names (its topology and overrides), or the replay shows one seed and runs another.
    // (Its `interleaving` only says whether the order was chosen: the order itself comes
    // from the deliveries, whatever schedule the overrides name.)
    if header.seed != topo.emulation.seed {
        return Err(Error::Input(format!(
            "igemu: {}: line 1 says seed {}, but the run it names (its topology and overrides) has seed {}: the header was edited, and the record is damaged; record the run again with `igemu run --record FILE`",
            path.display(),
            header.seed,
            topo.emulation.seed
        )));
    }
    let file = std::fs::File::open(path).map_err(|e| unreadable(path, e))?;
    let mut reader = std::io::BufReader::new(file);
    let mut skip = String::new();
    std::io::BufRead::read_line(
        &mut std::io::Read::take(&mut reader, MAX_RECORD_HEADER),
        &mut skip,
    )
    .map_err(|e| unreadable(path, e))?;
    Ok((
        // As a delivery line is, the header is hashed without its line end (CRLF reads
        // the same), newline added.
        time::record::OrderScript::new(
            Box::new(reader),
            2,
            format!("{}\n", skip.trim_end_matches(['\r', '\n'])).as_bytes(),
        ),
        header.interleaving > 0,
    ))
}

#[cfg(test)]
mod tests {
    use super::Provenance;

    #[test]
    fn the_same_run_is_the_same_contents_and_settings_however_spelled() {
        let p = |path: Option<&str>, hash: Option<&str>, sets: &[&str]| Provenance {
            igemu: "0".into(),
            commit: None,
            dirty: None,
            topology_path: path.map(String::from),
            topology_hash: hash.map(String::from),
            overrides: sets.iter().map(|s| s.to_string()).collect(),
            speedup_auto: false,
            plugins: Vec::new(),
        };
        let base = p(
            Some("t/a.toml"),
            Some("01"),
            &["lrms.cp_alpha=0.1", "igg.dispatch=rr"],
        );
        let mut newer = p(
            Some("./t/a.toml"),
            Some("01"),
            &["lrms . cp_alpha = 1e-1", "igg.dispatch=\"rr\""],
        );
        newer.igemu = "1".into();
        assert!(base.same_run(&newer));
        for other in [
            p(
                Some("t/a.toml"),
                Some("02"),
                &["lrms.cp_alpha=0.1", "igg.dispatch=rr"],
            ),
            p(
                Some("t/a.toml"),
                None,
                &["lrms.cp_alpha=0.1", "igg.dispatch=rr"],
            ),
            p(None, None, &["lrms.cp_alpha=0.1", "igg.dispatch=rr"]),
            p(
                Some("t/a.toml"),
                Some("01"),
                &["lrms.cp_alpha=0.2", "igg.dispatch=rr"],
            ),
            p(
                Some("t/a.toml"),
                Some("01"),
                &["igg.dispatch=rr", "lrms.cp_alpha=0.1"],
            ),
            p(Some("t/a.toml"), Some("01"), &["lrms.cp_alpha=0.1"]),
            // Another path: perhaps another folder's copy, whose traces differ.
            p(
                Some("u/a.toml"),
                Some("01"),
                &["lrms.cp_alpha=0.1", "igg.dispatch=rr"],
            ),
        ] {
            assert!(!base.same_run(&other), "{other:?}");
        }
        assert!(p(None, None, &[]).same_run(&p(None, None, &[])));
        // `--speedup auto` measures its speed-up anew each time: two runs of the command are
        // one run, but not a run with that speed-up given, nor one that also sets another.
        let auto = |sets: &[&str]| Provenance {
            speedup_auto: true,
            ..p(None, None, sets)
        };
        let chose = |x: &str| {
            [
                "emulation.mode=\"realtime\"".to_string(),
                format!("emulation.speedup={x}"),
            ]
        };
        let [mode, a] = chose("2044.0");
        let [_, b] = chose("1871.0");
        assert!(auto(&[&mode, &a]).same_run(&auto(&[&mode, &b])));
        assert!(!auto(&[&mode, &a]).same_run(&p(None, None, &[&mode, &a])));
        assert!(!auto(&[&mode, &a]).same_run(&auto(&[&mode, "lrms.cp_alpha=0.1", &b])));
    }

    /// A link at every name the next temporary files could take is skipped, never written
    /// through: the file the links point to stays as it was, and the file is written whole.
    #[cfg(unix)]
    #[test]
    fn temporary_files_never_write_through_a_link_at_their_name() {
        let dir = tempfile::tempdir().expect("temp dir");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "victim").expect("written");
        let out = dir.path().join("x.json");
        // Other tests may take names meanwhile: plant well past the counter.
        let from = super::create_temp_beside(&dir.path().join("probe"))
            .map(|(tmp, _)| tmp)
            .expect("created");
        let next: u64 = (from.to_string_lossy().rsplit('-').next())
            .and_then(|n| n.strip_suffix(".tmp")?.parse().ok())
            .expect("a numbered name");
        for n in next + 1..next + super::TEMP_TRIES / 2 {
            let name = format!(".x.json.{}-{n}.tmp", std::process::id());
            std::os::unix::fs::symlink(&victim, dir.path().join(name)).expect("symlink");
        }
        super::write_atomically(&out, b"whole").expect("written beside the links");
        assert_eq!(std::fs::read(&victim).expect("victim"), b"victim");
        assert_eq!(std::fs::read(&out).expect("out"), b"whole");
        assert!(!std::fs::symlink_metadata(&out).expect("out").is_symlink());
    }
}
