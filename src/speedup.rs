//! `--speedup auto`: measures this machine's timers and a virtual run's load, and predicts
//! the fastest sustainable speed-up and the wall time it takes (what a run reports of its
//! pacing is in [`crate::pacing`]).

use crate::federation::{run, RunOptions};
use crate::pacing::{SpeedupChoice, AUTO_P99_LATENESS_MS};
use crate::topology::Topology;
use crate::{time, topology, Broken, Error};

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
    } else if topo.asks_processes() {
        Err("its policies ask external processes, whose answers arrive when the wall clock says")
    } else {
        Ok(())
    }
}
