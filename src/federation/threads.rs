//! Realtime runs on several threads (`--threads N`): the Grids are split into N shards, each
//! run on its own thread by its own actix system (an arbiter with its own tokio runtime),
//! clock, tracer, observations and fault injector; messages between Grids of different
//! shards cross threads through the receiving clock's mailbox (see
//! [`crate::actors::shard`]). Every shard's clock has the same wall origin, so emulated time
//! means the same instant everywhere. When every shard's requests are done, all end; their
//! observations are merged ([`crate::metrics::Metrics::merge`]), which checks the invariants
//! that span Grids (served twice, confirmed twice, ended twice, money) across shards.
//!
//! Unlike a single-threaded run, such a run is not deterministic: handlers really run in
//! parallel, and a message between shards arrives when its thread gets to it.

use std::rc::Rc;
use std::sync::{mpsc, Arc, Mutex};

use tokio::sync::oneshot;

use crate::actors::graph::Graph;
use crate::actors::igg::Igg;
use crate::actors::shard::{Door, Federation};
use crate::actors::{Emu, Peer};
use crate::model::GridId;
use crate::plan::RunPlan;
use crate::results::Observed;
use crate::time::{self, Clock, ClockMode, EmuTime, Lateness};
use crate::topology::Topology;
use crate::trace::Tracer;
use crate::{fault, Error, RunOptions};

/// Why each feature that follows one thread's order needs the run on one thread, as
/// [`check`] says it.
pub mod why {
    /// `--trace`.
    pub const TRACE: &str = "its records are numbered in one order";
    /// `--record`.
    pub const RECORD: &str = "it records the order of one thread's deliveries";
    /// `igemu replay`.
    pub const REPLAY: &str = "it replays the order of one thread's deliveries";
    /// `--serve`.
    pub const SERVE: &str = "it draws one thread's emulation as it goes";
    /// `emulation.interleaving`, `stress --interleavings`.
    pub const INTERLEAVING: &str = "it reorders the same-time deliveries of one thread's clock";
}

/// Whether a run may go on `threads` threads in `mode` with the features `uses` names as on
/// (each: whether it is on, its flag, why it needs one thread): several threads need realtime
/// mode (virtual mode stays on one, to be deterministic), and no feature that follows one
/// thread's order (a trace, a record, the live view, explored interleavings).
pub fn check(threads: usize, mode: ClockMode, uses: &[(bool, &str, &str)]) -> Result<(), Error> {
    if threads <= 1 {
        return Ok(());
    }
    if mode == ClockMode::Virtual {
        return Err(Error::Usage(format!(
            "--threads {threads} runs a realtime run on several threads, and this run is in virtual mode (which stays on one thread, to be deterministic); add --mode realtime"
        )));
    }
    match uses.iter().find(|(on, _, _)| *on) {
        Some((_, what, why)) => Err(Error::Usage(format!(
            "{what} needs the run on one thread ({why}), and --threads {threads} asks for several; drop one of them"
        ))),
        None => Ok(()),
    }
}

/// Splits the Grids of `topo` into at most `threads` shards of about equal weight (cores,
/// then requests; see [`assign`]). Returns the shard of each Grid and the number of shards
/// (never more than the Grids).
pub fn partition(topo: &Topology, threads: usize) -> (Vec<usize>, usize) {
    let weights: Vec<u64> = (0..topo.grids.len())
        .map(|g| {
            let cores: u64 = topo.grids[g]
                .clusters
                .iter()
                .map(|&c| topo.cluster(c).cores())
                .sum();
            let requests = topo
                .workloads
                .iter()
                .filter(|w| usize::from(w.grid.0) == g)
                .map(|w| w.requests.len() as u64)
                .sum::<u64>();
            cores.saturating_mul(1 << 20).saturating_add(requests)
        })
        .collect();
    assign(&weights, threads)
}

/// Longest processing time first: items by weight, heaviest first, each to the lightest
/// shard so far (ties: the lower index), over `min(threads, items)` shards (at least one).
/// The heaviest shard weighs at most 4/3 of the best split's. Returns the shard of each item
/// and the number of shards.
pub fn assign(weights: &[u64], threads: usize) -> (Vec<usize>, usize) {
    let shards = threads.clamp(1, weights.len().max(1));
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by_key(|&g| (std::cmp::Reverse(weights[g]), g));
    let mut load = vec![0u64; shards];
    let mut shard_of = vec![0usize; weights.len()];
    for g in order {
        let lightest = (0..shards).min_by_key(|&s| (load[s], s)).unwrap_or(0);
        shard_of[g] = lightest;
        load[lightest] = load[lightest].saturating_add(weights[g]);
    }
    (shard_of, shards)
}

/// What one shard observed.
struct ShardResult {
    end: EmuTime,
    observed: Observed,
    lateness: Option<hdrhistogram::Histogram<u64>>,
    thread: std::thread::ThreadId,
}

/// What a shard tells the others once built.
struct Built {
    shard: usize,
    iggs: Vec<(GridId, Peer<Igg>)>,
    door: Door,
}

/// What the coordinator tells each shard once all are built: every IGG, and when emulated
/// time zero is on the wall.
type Go = (Vec<(GridId, Peer<Igg>)>, std::time::Instant);

/// Runs realtime `topo` on `threads` threads; returns the end, the merged observations and
/// the threads the shards ran on.
pub(crate) fn run(
    topo: &Topology,
    options: &RunOptions,
    threads: usize,
) -> Result<(EmuTime, Observed, usize), Error> {
    check(
        threads,
        topo.emulation.mode,
        &[
            (options.trace_dir.is_some(), "--trace", why::TRACE),
            (options.record.is_some(), "--record", why::RECORD),
            (options.replay.is_some(), "replay", why::REPLAY),
            (options.live.is_some(), "--serve", why::SERVE),
            (
                topo.emulation.interleaving > 0,
                "emulation.interleaving",
                why::INTERLEAVING,
            ),
        ],
    )?;
    let (shard_of, shards) = partition(topo, threads);
    // Compiled once, shared by every shard.
    let plan = &crate::plan::compile(topo);
    let federation = Arc::new(Federation::new(shard_of.clone(), shards));
    let (built_tx, built_rx) = mpsc::channel::<Built>();
    let mut go_txs = Vec::new();
    let mut go_rxs = Vec::new();
    for _ in 0..shards {
        let (tx, rx) = mpsc::channel::<Go>();
        go_txs.push(tx);
        go_rxs.push(Some(rx));
    }
    let go_rxs = Mutex::new(go_rxs);
    let results: Vec<std::thread::Result<Result<ShardResult, Error>>> =
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..shards)
                .map(|i| {
                    let (built_tx, federation) = (built_tx.clone(), Arc::clone(&federation));
                    let grids: Vec<GridId> = (0..topo.grids.len())
                        .filter(|&g| shard_of[g] == i)
                        .map(|g| GridId(g as u16))
                        .collect();
                    // Invariant: one receiver per shard, taken once by its own thread.
                    let go = go_rxs.lock().map(|mut v| v[i].take()).ok().flatten();
                    std::thread::Builder::new()
                        .name(format!("igemu-shard-{i}"))
                        .spawn_scoped(scope, move || {
                            let go = go.ok_or_else(|| Error::Failed("shard set-up".into()))?;
                            run_shard((topo, plan), options, (i, &grids), federation, built_tx, go)
                        })
                })
                .collect();
            drop(built_tx);
            coordinate(shards, &federation, &built_rx, go_txs);
            handles
                .into_iter()
                .map(|h| match h {
                    Ok(h) => h.join(),
                    Err(e) => Ok(Err(Error::Runtime(e))),
                })
                .collect()
        });
    merge(policy_failure_first(results)?)
}

/// The shards' results as one run's: the latest end, the observations added up (lateness
/// histograms too) and how many threads they ran on. A shard's error is the run's; a
/// shard's panic goes on.
fn merge(
    results: Vec<std::thread::Result<Result<ShardResult, Error>>>,
) -> Result<(EmuTime, Observed, usize), Error> {
    let mut merged: Option<(EmuTime, Observed, Option<hdrhistogram::Histogram<u64>>)> = None;
    let mut seen = std::collections::HashSet::new();
    for r in results {
        let r = match r {
            Ok(r) => r?,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        seen.insert(r.thread);
        merged = Some(match merged {
            None => (r.end, r.observed, r.lateness),
            Some((end, mut all, hist)) => {
                all.add_counts(&r.observed);
                all.metrics.merge(r.observed.metrics);
                let hist = match (hist, r.lateness) {
                    (Some(mut a), Some(b)) => {
                        // Every clock's histogram grows as needed: adding cannot fail.
                        let _ = a.add(&b);
                        Some(a)
                    }
                    (a, b) => a.or(b),
                };
                (end.max(r.end), all, hist)
            }
        });
    }
    let (end, mut observed, hist) =
        merged.ok_or_else(|| Error::Failed("a run on threads had no shard".into()))?;
    observed.lateness = hist.as_ref().map(Lateness::of);
    Ok((end, observed, seen.len()))
}

/// Waits until every shard is built, tells them how to reach each other and when time
/// starts. A shard that failed before saying it was built ends the wait (the others are
/// then told nothing, and end with an error).
fn coordinate(
    shards: usize,
    federation: &Federation,
    built: &mpsc::Receiver<Built>,
    go: Vec<mpsc::Sender<Go>>,
) {
    let mut parts: Vec<Option<Built>> = (0..shards).map(|_| None).collect();
    for _ in 0..shards {
        match built.recv() {
            Ok(b) => {
                let i = b.shard;
                parts[i] = Some(b);
            }
            // Every sender is gone: a shard failed.
            Err(_) => return,
        }
    }
    let mut iggs = Vec::new();
    let mut doors = Vec::new();
    for b in parts.into_iter().flatten() {
        iggs.extend(b.iggs);
        doors.push(b.door);
    }
    iggs.sort_by_key(|(g, _)| *g);
    federation.open(doors);
    // Shared by every clock: emulated time zero, a little after now (each shard still has
    // to introduce its IGGs and start its driver).
    let origin = std::time::Instant::now() + std::time::Duration::from_millis(5);
    for tx in go {
        let _ = tx.send((iggs.clone(), origin));
    }
}

/// Shard `i`'s run context (on the thread that runs it): its clock — sleeping to its
/// deadlines rather than spinning where `spin_less` — its faults and its observations.
fn shard_context(
    topo: &Topology,
    options: &RunOptions,
    (i, spin_less, mode): (usize, bool, time::ClockMode),
) -> Rc<Emu> {
    let seed = topo.emulation.seed;
    let clock = Clock::new(mode);
    if spin_less {
        clock.sleep_without_spinning();
    }
    if topo.emulation.interleaving > 0 {
        let name = format!("interleaving-{}:shard-{i}", topo.emulation.interleaving);
        clock.interleave(time::stream_seed(seed, &name));
    }
    if let Some(p) = &options.progress {
        clock.mirror_now(Arc::clone(p));
    }
    let faults = fault::Faults::new(
        topo.faults.clone(),
        time::stream_seed(seed, &format!("faults:shard-{i}")),
    );
    let labels = topo.request_labels.clone();
    let requests: Rc<[_]> = topo.requests.clone().into();
    let emu = Rc::new(Emu::new(clock, Tracer::counting(labels), requests, faults));
    if options.intervals {
        // No room made ahead: each thread holds only its Grids' share.
        emu.metrics.borrow_mut().record_spans(0);
    }
    if options.lease_log {
        // No room made ahead: each thread holds only its Grids' share.
        emu.metrics.borrow_mut().record_lease_events(0);
    }
    emu
}

/// The shards' results, or the failure of a plug-in in one of them: it ended the others,
/// whose own errors only echo it.
fn policy_failure_first<T>(
    mut results: Vec<std::thread::Result<Result<T, Error>>>,
) -> Result<Vec<std::thread::Result<Result<T, Error>>>, Error> {
    if let Some(i) = (results.iter()).position(|r| matches!(r, Ok(Err(Error::Policy(_))))) {
        if let Ok(Err(e)) = results.swap_remove(i) {
            return Err(e);
        }
    }
    Ok(results)
}

/// A shard's run is over: its pending events dropped, its processes ended; a plug-in's
/// failure is its error.
fn shard_over(emu: &Emu) -> Result<(), Error> {
    emu.clock.discard_pending();
    emu.plugins.finish();
    crate::policy::realtime::on_arrival(None);
    match emu.plugins.failure() {
        Some(f) => Err(Error::Policy(f.to_string())),
        None => Ok(()),
    }
}

/// Ends every shard when this one panics (the others would wait for it forever).
struct EndAllOnPanic(Arc<Federation>);

impl Drop for EndAllOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.end_all();
        }
    }
}

/// Runs shard `i` (Grids `grids`) on this thread.
fn run_shard(
    (topo, plan): (&Topology, &RunPlan),
    options: &RunOptions,
    (i, grids): (usize, &[GridId]),
    federation: Arc<Federation>,
    built: mpsc::Sender<Built>,
    go: mpsc::Receiver<Go>,
) -> Result<ShardResult, Error> {
    let _guard = EndAllOnPanic(Arc::clone(&federation));
    // With more shards than cores, a shard spinning for its deadline takes a core
    // another shard needs.
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let spin_less = federation.shards() > cores;
    let mode = topo.emulation.mode;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(Error::Runtime)?;
    let system = actix::System::with_tokio_rt(|| rt);
    let result = system.block_on(async {
        let emu = shard_context(topo, options, (i, spin_less, mode));
        emu.join(i, Arc::clone(&federation));
        let mailbox = emu.clock.mailbox();
        let (done_tx, done_rx) = oneshot::channel();
        let graph =
            Graph::build_part(&emu, plan, grids, done_tx, options.broken).map_err(Error::Policy)?;
        let door = Door {
            mailbox,
            director: graph.director.clone(),
        };
        let iggs = graph.iggs.clone();
        if built
            .send(Built {
                shard: i,
                iggs,
                door,
            })
            .is_err()
        {
            return Err(Error::Failed("a shard's coordinator is gone".into()));
        }
        drop(built);
        // Blocks this thread until every shard is built; no actor of it has run yet.
        let (all_iggs, origin) = go
            .recv()
            .map_err(|_| Error::Failed("another shard failed to start".into()))?;
        graph.introduce(plan, &all_iggs);
        emu.clock.start_at(origin);
        let driver = actix::spawn(emu.clock.clone().drive());
        let stop = emu.plugins.stopped();
        let end = tokio::select! {
            // Invariant: the director holds the sender until it fires.
            end = done_rx => end.unwrap_or_else(|_| emu.now()),
            ended = driver => match ended {
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                _ => emu.now(),
            },
            // A plug-in failed: this shard ends, and the others with it.
            () = stop.notified() => {
                federation.end_all();
                emu.now()
            }
        };
        shard_over(&emu)?;
        let lateness = emu.clock.lateness_histogram();
        let observed = Observed::of(&emu);
        Ok(ShardResult {
            end,
            observed,
            lateness,
            thread: std::thread::current().id(),
        })
    });
    drop(system);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{load_file, Overrides};

    fn shipped(name: &str) -> Topology {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("topologies")
            .join(name);
        load_file(&path, &Overrides::default()).expect("a shipped topology loads")
    }

    #[test]
    fn every_shard_of_a_shipped_topology_has_a_grid() {
        let topo = shipped("paper004-three-grids.toml");
        for threads in 1..=5 {
            let (shard_of, shards) = partition(&topo, threads);
            assert_eq!(shards, threads.min(3));
            for s in 0..shards {
                assert!(shard_of.contains(&s), "{threads} threads: shard {s} empty");
            }
        }
    }

    /// The heaviest shard of the best split, by trying every split.
    fn best_heaviest(weights: &[u64], shards: usize) -> u64 {
        let n = weights.len();
        let mut best = u64::MAX;
        let mut split = vec![0usize; n];
        loop {
            let mut load = vec![0u64; shards];
            for (g, &s) in split.iter().enumerate() {
                load[s] += weights[g];
            }
            best = best.min(load.into_iter().max().unwrap_or(0));
            // Next split, counting in base `shards`.
            let mut i = 0;
            while i < n && split[i] == shards - 1 {
                split[i] = 0;
                i += 1;
            }
            if i == n {
                return best;
            }
            split[i] += 1;
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: crate::proptest_cases(300), failure_persistence: None, ..Default::default() })]

        /// Against every split: no shard is empty and the heaviest is within Graham's 4/3
        /// bound of the best.
        #[test]
        fn assignment_is_within_four_thirds_of_the_best_split(
            weights in proptest::collection::vec(1u64..1000, 1..8),
            threads in 1usize..5,
        ) {
            let (shard_of, shards) = assign(&weights, threads);
            proptest::prop_assert_eq!(shards, threads.min(weights.len()));
            let mut load = vec![0u64; shards];
            for (g, &s) in shard_of.iter().enumerate() {
                load[s] += weights[g];
            }
            proptest::prop_assert!(load.iter().all(|&l| l > 0));
            let heaviest = *load.iter().max().unwrap_or(&0);
            let best = best_heaviest(&weights, shards);
            proptest::prop_assert!(3 * heaviest <= 4 * best, "{:?}: {} vs best {}", load, heaviest, best);
        }
    }

    #[test]
    fn several_threads_need_realtime_and_no_trace_record_or_live_view() {
        let realtime = ClockMode::Realtime { speedup: 10.0 };
        let trace = |on| (on, "--trace", why::TRACE);
        assert!(check(1, ClockMode::Virtual, &[trace(true)]).is_ok());
        assert!(check(4, realtime, &[trace(false)]).is_ok());
        let virtual_ = check(2, ClockMode::Virtual, &[]).unwrap_err();
        assert_eq!(virtual_.exit_code(), 2);
        assert!(virtual_.to_string().contains("--mode realtime"));
        let record = (false, "--record", why::RECORD);
        let traced = check(2, realtime, &[record, trace(true)]).unwrap_err();
        let text = traced.to_string();
        assert!(
            text.contains("--trace needs the run on one thread"),
            "{text}"
        );
        assert!(text.contains(why::TRACE), "{text}");
    }
}
