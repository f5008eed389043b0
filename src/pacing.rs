//! Realtime pacing, as a run reports it: timer lateness and its verdict (whether a realtime
//! run kept its pace), and the record of what `--speedup auto` chose ([`crate::speedup`]
//! measures and chooses).

use serde::Serialize;

use crate::time::Lateness;

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
    /// run ends too when it repeats that run ([`crate::speedup::realtime_repeats_virtual`]).
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
    /// How late this machine met the deadlines it was probed on ([`crate::speedup::WAKE_PROBE_WAITS`]), wall
    /// milliseconds: at their [`crate::speedup::WAKE_QUANTILE`] (at least [`crate::time::pacing::WAKE_NS`]). The
    /// model draws from all of them; this is what a run that keeps the pace met is compared
    /// with after it.
    pub wake_ms: f64,
    /// How late it met the latest of those deadlines, wall milliseconds.
    pub wake_latest_ms: f64,
}
