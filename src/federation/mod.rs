//! Running a federation: one run of a topology on one thread, or on several ([`threads`]), in
//! virtual or realtime mode, with its trace, record or replay; owns [`RunOptions`] and [`run`].

use std::path::{Path, PathBuf};
use std::rc::Rc;

use tokio::sync::oneshot;

use crate::actors::Emu;
use crate::files::staged;
use crate::plan::RunPlan;
use crate::provenance::Provenance;
use crate::record::{open_record, open_replay, ReplaySummary};
use crate::results::{summarize, Observed, RunResult};
use crate::time::{Clock, ClockMode, EmuTime};
use crate::topology::Topology;
use crate::trace::Tracer;
use crate::{actors, fault, policy, serve, time, trace, Broken, Error};

pub mod threads;

/// Builds the actor graph of `plan` and runs it to its end; returns the end time.
async fn emulate(emu: Rc<Emu>, plan: &RunPlan, broken: Broken) -> Result<EmuTime, Error> {
    let (done_tx, done_rx) = oneshot::channel();
    let _graph = actors::graph::Graph::build(&emu, plan, done_tx, broken).map_err(Error::Policy)?;
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
    /// [`choose_speedup`](crate::choose_speedup) calibrates from.
    pub record_load: bool,
    /// Record the order of every delivery to this file (`--record`): a header line saying
    /// what ran ([`RecordHeader`](crate::RecordHeader), from [`RunOptions::provenance`]), then one line per
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

/// Runs `topo` to its end and gathers the results.
pub fn run(topo: Topology, options: &RunOptions) -> Result<RunResult, Error> {
    // One Grid has nothing to run beside it: one thread, exact (as a virtual run decides).
    if options.threads > 1 && topo.grids.len() > 1 {
        return run_on_threads(topo, options);
    }
    let topo = Rc::new(topo);
    let mode = topo.emulation.mode;
    let tracer = open_tracer(&topo, options)?;
    let (order_log, record_at) = match &options.record {
        Some(path) => {
            let (log, staged) = open_record(
                path,
                &topo,
                options.provenance.as_ref(),
                options.broken.name(),
            )?;
            (Some(log), Some((staged, path)))
        }
        None => (None, None),
    };
    let order_script = match &options.replay {
        Some(path) => Some(open_replay(path, &topo)?),
        None => None,
    };
    let wall = time::Stopwatch::start();
    let plan = crate::plan::compile(&topo);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(mode == ClockMode::Virtual)
        .build()
        .map_err(Error::Runtime)?;
    let system = actix::System::with_tokio_rt(|| rt);
    let (end, emu) = system.block_on(async {
        let emu = new_emu(&topo, options, tracer, (order_log, order_script));
        watch_live(&emu, &topo, options);
        let end = emulate(Rc::clone(&emu), &plan, options.broken).await;
        (end, emu)
    });
    // The run's processes end with it, whatever its outcome.
    emu.plugins.finish();
    policy::realtime::on_arrival(None);
    let end = match end {
        Ok(end) => end,
        Err(e) => {
            let staged = record_at.as_ref().map(|(staged, _)| staged.as_path());
            abandon(&emu, options, staged);
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
    let result = gather(&emu, &topo, options, (end, wall_s), record_at);
    drop(emu);
    drop(system);
    result
}

/// The run's tracer: writing `trace.jsonl` (staged or in place) where a trace is asked
/// for, else only counting.
fn open_tracer(topo: &Topology, options: &RunOptions) -> Result<Tracer, Error> {
    let labels = topo.request_labels.clone();
    Ok(match &options.trace_dir {
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
    })
}

/// The run's context: its clock (interleaving, recording or replaying its order as asked),
/// tracer, requests and faults, with the observations `options` asks for sized up front.
fn new_emu(
    topo: &Topology,
    options: &RunOptions,
    tracer: Tracer,
    (order_log, order_script): (
        Option<time::record::OrderLog>,
        Option<(time::record::OrderScript, bool)>,
    ),
) -> Rc<Emu> {
    let seed = topo.emulation.seed;
    let faults = fault::Faults::new(topo.faults.clone(), time::stream_seed(seed, "faults"));
    let clock = Clock::new(topo.emulation.mode);
    if topo.emulation.interleaving > 0 {
        let name = format!("interleaving-{}", topo.emulation.interleaving);
        clock.interleave(time::stream_seed(seed, &name));
    }
    if options.record_load {
        clock.record_load();
    }
    if let Some(log) = order_log {
        clock.record_order(log);
    }
    if let Some((script, held)) = order_script {
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
    emu
}

/// In a realtime run with a live view, publishes a frame every [`serve::FRAME_EVERY`] of
/// wall time (the recent messages kept for it).
fn watch_live(emu: &Rc<Emu>, topo: &Rc<Topology>, options: &RunOptions) {
    let (Some(feed), ClockMode::Realtime { speedup }) = (&options.live, topo.emulation.mode) else {
        return;
    };
    emu.tracer.keep_recent(serve::RECENT_MESSAGES);
    let (feed, weak, topo) = (
        std::sync::Arc::clone(feed),
        Rc::downgrade(emu),
        Rc::clone(topo),
    );
    emu.clock.every_wall(serve::FRAME_EVERY, move |now, wall| {
        if let Some(emu) = weak.upgrade() {
            serve::publish_frame(&feed, (&emu, &topo), (now, wall, speedup), false);
        }
    });
}

/// What an ended run gives: its record put in place, its replay's outcome, its trace
/// finished, and its summary and records.
fn gather(
    emu: &Rc<Emu>,
    topo: &Rc<Topology>,
    options: &RunOptions,
    (end, wall_s): (EmuTime, f64),
    record_at: Option<(PathBuf, &PathBuf)>,
) -> Result<RunResult, Error> {
    let load = emu.clock.take_load();
    let order = emu.clock.finish_order();
    let recorded = match (order.recorded, record_at) {
        (Some(written), Some((staged, path))) => Some(put_record(written, &staged, path)),
        _ => None,
    };
    let replayed = order
        .replayed
        .map(|r| r.map_err(|d| name_actors(&d, &emu.tracer)));
    emu.tracer.finish().map_err(Error::Trace)?;
    let (mut summary, records, decisions, intervals, lease_log) =
        summarize(topo, Observed::of(emu), end, wall_s);
    summary.provenance = provenance(options, &summary.plugins);
    summary.replay = match (&replayed, &options.replay) {
        (Some(outcome), Some(path)) => Some(ReplaySummary {
            record: path.display().to_string(),
            followed: outcome.as_ref().ok().copied(),
            diverged: outcome.as_ref().err().cloned(),
        }),
        _ => None,
    };
    Ok(RunResult {
        load,
        topology: Rc::clone(topo),
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

/// Puts a record written under its temporary name `staged` in place at `path`: the number
/// of deliveries it holds, or why it could not be written (then nothing is left behind).
fn put_record(written: std::io::Result<u64>, staged: &Path, path: &Path) -> Result<u64, String> {
    let put = written
        .map_err(|e| Error::output(staged.to_path_buf())(e).to_string())
        .and_then(|n| {
            std::fs::rename(staged, path)
                .map(|()| n)
                .map_err(|e| Error::output(path.to_path_buf())(e).to_string())
        });
    if put.is_err() {
        // Never leave a partial record behind (on a full disk it keeps it full).
        let _ = std::fs::remove_file(staged);
    }
    put
}

/// The run's provenance as the caller gave it, with the plug-ins in force.
pub(crate) fn provenance(
    options: &RunOptions,
    plugins: &[policy::PluginRecord],
) -> Option<Provenance> {
    let mut p = options.provenance.clone()?;
    p.plugins = (plugins.iter())
        .map(|r| format!("{} {}: {}", r.at, r.point, r.policy))
        .collect();
    Some(p)
}

/// Ends a run that failed (a plug-in stopped it): its pending events dropped, and what it
/// began to write — its trace, its record (`staged_record`) — removed, so that a failed
/// run's outputs are absent rather than partial.
pub(crate) fn abandon(emu: &Emu, options: &RunOptions, staged_record: Option<&Path>) {
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
pub(crate) fn run_on_threads(topo: Topology, options: &RunOptions) -> Result<RunResult, Error> {
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
pub(crate) fn name_actors(text: &str, tracer: &Tracer) -> String {
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
