//! Progress of long work (a single run, a stress test, a sweep) on stderr: on a terminal a
//! bar rewritten in place (`[#####.....] 12/40 runs, 1m02s elapsed, ~3m10s left`), plain
//! lines every ten seconds when stderr is a file or a pipe (no escape codes), nothing with
//! `--quiet`. Nothing is shown for work done within two seconds. Wall time here only paces
//! the display; it never reaches the emulation.
//!
//! Hand-written rather than a crate such as `indicatif`: the display is one formatted line,
//! the formatting is a pure function tested as such, and the plain-lines mode for logs and
//! batch jobs (which such crates hide when stderr is not a terminal) is what sweeps on a
//! cluster need.

use std::io::Write as _;

use crate::time::Stopwatch;

/// How progress is shown.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Style {
    /// A bar rewritten in place about once a second (stderr is a terminal).
    Terminal,
    /// A plain line every ten seconds (stderr is a file or a pipe).
    Lines,
    /// Nothing.
    Quiet,
}

impl Style {
    /// `Quiet` if `quiet`, else by whether stderr is a terminal.
    pub fn detect(quiet: bool) -> Style {
        if quiet {
            Style::Quiet
        } else if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            Style::Terminal
        } else {
            Style::Lines
        }
    }
}

/// Wall seconds before anything is shown.
const QUIET_START_S: f64 = 2.0;

/// Cells in a progress bar.
const BAR_CELLS: usize = 10;

/// A progress display for one piece of work.
pub struct Progress {
    style: Style,
    watch: Stopwatch,
    next_at: f64,
    shown: bool,
}

impl Progress {
    /// A display in `style`, its clock started now.
    pub fn new(style: Style) -> Progress {
        Progress {
            style,
            watch: Stopwatch::start(),
            next_at: QUIET_START_S,
            shown: false,
        }
    }

    /// Shows `what` (such as `3/12 runs`) with the elapsed time and, when `fraction` (done,
    /// 0-1) is known and above zero, an estimate of the time left — if it is time to.
    pub fn update(&mut self, what: &str, fraction: Option<f64>) {
        self.show(|elapsed| {
            (
                what.to_string(),
                fraction,
                Left::extrapolated(elapsed, fraction),
            )
        });
    }

    /// Shows what `status` makes of the elapsed wall seconds (what, fraction done, time left)
    /// — if it is time to.
    fn show(&mut self, status: impl FnOnce(f64) -> (String, Option<f64>, Left)) {
        let elapsed = self.watch.elapsed_secs();
        if self.style == Style::Quiet || elapsed < self.next_at {
            return;
        }
        let (what, fraction, left) = status(elapsed);
        if self.style == Style::Terminal {
            let _ = write!(
                std::io::stderr(),
                "\r\x1b[2K{}",
                bar_text(&what, elapsed, fraction, left)
            );
            self.next_at = elapsed + 1.0;
        } else {
            let _ = writeln!(std::io::stderr(), "  {}", status_text(&what, elapsed, left));
            self.next_at = elapsed + 10.0;
        }
        self.shown = true;
    }

    /// Ends the display: on a terminal, clears the line if one was shown.
    pub fn finish(&mut self) {
        if self.style == Style::Terminal && self.shown {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
        self.shown = false;
    }
}

/// How much wall time a piece of work has left, as far as it is known.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Left {
    /// About this many wall seconds.
    About(f64),
    /// Not known, but at least this many wall seconds.
    AtLeast(f64),
    /// Not known at all.
    Unknown,
}

impl Left {
    /// What is left of work a `fraction` done (0-1) after `elapsed_s`, if it goes on at the
    /// pace it went: unknown while the fraction is unknown or zero.
    pub fn extrapolated(elapsed_s: f64, fraction: Option<f64>) -> Left {
        match known(fraction) {
            Some(f) => Left::About((elapsed_s * (1.0 - f.min(1.0)) / f).max(0.0)),
            None => Left::Unknown,
        }
    }
}

/// A plain progress line: `  WHAT, 1m05s elapsed, ~30s left` (`time left unknown` when the
/// fraction done is unknown or zero).
pub fn line(what: &str, elapsed_s: f64, fraction: Option<f64>) -> String {
    format!(
        "  {}",
        status_text(what, elapsed_s, Left::extrapolated(elapsed_s, fraction))
    )
}

/// A terminal's progress line: the fraction done as a bar of ten cells, then what [`line()`]
/// says: `[#####.....] 12/40 runs, 1m02s elapsed, ~3m10s left` (`[??????????]` when the
/// fraction is unknown). Plain ASCII; the caller adds the escape codes that rewrite it.
pub fn bar_line(what: &str, elapsed_s: f64, fraction: Option<f64>) -> String {
    bar_text(
        what,
        elapsed_s,
        fraction,
        Left::extrapolated(elapsed_s, fraction),
    )
}

/// [`bar_line`] with the time left given.
fn bar_text(what: &str, elapsed_s: f64, fraction: Option<f64>, left: Left) -> String {
    let bar = match known(fraction) {
        Some(f) => {
            let full = ((f.min(1.0) * BAR_CELLS as f64).floor() as usize).min(BAR_CELLS);
            format!("{}{}", "#".repeat(full), ".".repeat(BAR_CELLS - full))
        }
        None => "?".repeat(BAR_CELLS),
    };
    format!("[{bar}] {}", status_text(what, elapsed_s, left))
}

/// A fraction done that can be used for an estimate: finite and above zero.
fn known(fraction: Option<f64>) -> Option<f64> {
    fraction.filter(|f| f.is_finite() && *f > 0.0)
}

/// `WHAT, 1m05s elapsed, ~30s left` (`time left unknown`, or `time left unknown, at least
/// 30s`).
fn status_text(what: &str, elapsed_s: f64, left: Left) -> String {
    let left = match left {
        Left::About(s) => format!("~{} left", clock(s.max(0.0))),
        Left::AtLeast(s) if s >= 0.5 => format!("time left unknown, at least {}", clock(s)),
        Left::AtLeast(_) | Left::Unknown => "time left unknown".to_string(),
    };
    format!("{what}, {} elapsed, {left}", clock(elapsed_s))
}

/// Whole seconds as `45s`, `3m07s` or `2h05m`.
pub(crate) fn clock(secs: f64) -> String {
    let s = secs.round().min(1e9) as u64;
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    }
}

/// What is known ahead of a single run's emulated end, for its progress.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum RunEnd {
    /// Known, µs: the topology's fixed end (`emulation.end = "12h"`), or the end of a virtual
    /// run of the same topology that the run repeats (a realtime run does: see
    /// [`crate::realtime_repeats_virtual`]).
    Known(u64),
    /// Not known ahead (`end = "all-done"`: the run ends when its last lease does): only that
    /// it comes after the last request's arrival, µs — a lower bound.
    AfterArrivals(u64),
}

impl RunEnd {
    /// What `topo` says of its own end: fixed, or after its last arrival.
    pub fn of(topo: &crate::topology::Topology) -> RunEnd {
        match topo.emulation.end {
            crate::topology::EndCondition::At(t) => RunEnd::Known(t.as_micros()),
            crate::topology::EndCondition::AllDone { .. } => RunEnd::AfterArrivals(
                topo.requests
                    .iter()
                    .map(|r| r.arrival.as_micros())
                    .max()
                    .unwrap_or(0),
            ),
        }
    }
}

/// A single run's progress at emulated time `now_us`, `elapsed_s` wall seconds after it
/// began, toward `end`, in realtime at `speedup` (`None`: virtual time): what to show, the
/// fraction done (where the end is known) and the time left.
///
/// The time left comes from emulated progress toward the run's end, never from anything
/// else: in realtime with the end known, (end − now) / speed-up; in virtual time with the end
/// known, the pace so far carried on to it; with the end unknown, `Unknown` — in realtime at
/// least what the last arrival is away (the run goes on past it until its last lease ends).
pub fn run_status(
    now_us: u64,
    end: RunEnd,
    speedup: Option<f64>,
    elapsed_s: f64,
) -> (String, Option<f64>, Left) {
    let wall = |emulated_us: u64| match speedup {
        Some(s) if s > 0.0 => Some(emulated_us as f64 / 1e6 / s),
        _ => None,
    };
    match end {
        RunEnd::Known(end_us) => {
            let unit = Unit::for_span(end_us);
            let what = format!(
                "run: emulated {} of {}",
                unit.show(now_us.min(end_us)),
                unit.show(end_us)
            );
            let fraction = (end_us > 0).then(|| (now_us as f64 / end_us as f64).min(1.0));
            let left = match wall(end_us.saturating_sub(now_us)) {
                Some(w) => Left::About(w),
                None if end_us == 0 => Left::About(0.0),
                None => Left::extrapolated(elapsed_s, fraction),
            };
            (what, fraction, left)
        }
        RunEnd::AfterArrivals(last_us) => {
            let unit = Unit::for_span(last_us.max(now_us));
            if now_us < last_us {
                let what = format!(
                    "run: emulated {}, requests arrive until {}",
                    unit.show(now_us),
                    unit.show(last_us)
                );
                let left = wall(last_us - now_us).map_or(Left::Unknown, Left::AtLeast);
                (what, None, left)
            } else {
                let what = format!(
                    "run: emulated {}, past the last arrival ({}), until the last leases end",
                    unit.show(now_us),
                    unit.show(last_us)
                );
                (what, None, Left::Unknown)
            }
        }
    }
}

/// The unit a run's emulated times are shown in: hours, minutes or seconds, by the span.
#[derive(Copy, Clone)]
enum Unit {
    Hours,
    Minutes,
    Seconds,
}

impl Unit {
    fn for_span(us: u64) -> Unit {
        if us >= 7_200_000_000 {
            Unit::Hours
        } else if us >= 120_000_000 {
            Unit::Minutes
        } else {
            Unit::Seconds
        }
    }

    fn show(self, us: u64) -> String {
        let s = us as f64 / 1e6;
        match self {
            Unit::Hours => format!("{:.1} h", s / 3600.0),
            Unit::Minutes => format!("{:.1} min", s / 60.0),
            Unit::Seconds => format!("{s:.1} s"),
        }
    }
}

/// A thread showing a single run's progress in emulated time, from the time the run mirrors
/// into [`RunWatch::now`] (give it as [`crate::RunOptions::progress`]).
pub struct RunWatch {
    now: std::sync::Arc<std::sync::atomic::AtomicU64>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RunWatch {
    /// Starts watching a run toward `end`, in realtime at `speedup` (`None`: virtual time),
    /// in `style` (no thread at all when `Quiet`); see [`run_status`].
    pub fn start(end: RunEnd, speedup: Option<f64>, style: Style) -> RunWatch {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        use std::sync::Arc;
        let now = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = (style != Style::Quiet).then(|| {
            let (now, stop) = (Arc::clone(&now), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut p = Progress::new(style);
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    let t = now.load(Ordering::Relaxed);
                    p.show(|elapsed| run_status(t, end, speedup, elapsed));
                }
                p.finish();
            })
        });
        RunWatch { now, stop, thread }
    }

    /// Where the run stores its emulated time.
    pub fn now(&self) -> std::sync::Arc<std::sync::atomic::AtomicU64> {
        std::sync::Arc::clone(&self.now)
    }

    /// Stops the display (clearing its line on a terminal); dropping it does the same.
    pub fn finish(self) {}
}

impl Drop for RunWatch {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_show_elapsed_time_and_an_estimate_of_what_is_left() {
        assert_eq!(
            line("3/12 runs", 30.0, Some(0.25)),
            "  3/12 runs, 30s elapsed, ~1m30s left"
        );
        assert_eq!(
            line("x", 7300.0, None),
            "  x, 2h01m elapsed, time left unknown"
        );
        assert_eq!(
            line("x", 5.0, Some(0.0)),
            "  x, 5s elapsed, time left unknown"
        );
        assert_eq!(line("x", 5.0, Some(1.5)), "  x, 5s elapsed, ~0s left");
    }

    #[test]
    fn a_terminal_shows_a_bar_of_the_fraction_done() {
        assert_eq!(
            bar_line("12/40 runs", 62.0, Some(12.0 / 40.0)),
            "[###.......] 12/40 runs, 1m02s elapsed, ~2m25s left"
        );
        assert_eq!(
            bar_line("40/40 runs", 10.0, Some(1.0)),
            "[##########] 40/40 runs, 10s elapsed, ~0s left"
        );
        assert_eq!(
            bar_line("run: emulated 9.0 h, finishing", 3.0, None),
            "[??????????] run: emulated 9.0 h, finishing, 3s elapsed, time left unknown"
        );
        // Never more than ten cells, nor any escape code (the caller adds those).
        let over = bar_line("x", 1.0, Some(7.0));
        assert!(
            over.starts_with("[##########] ") && !over.contains('\x1b'),
            "{over}"
        );
    }

    const H: u64 = 3_600_000_000;

    #[test]
    fn a_realtime_run_with_a_known_end_has_left_its_emulated_distance_over_the_speedup() {
        // 12 h of 66 h at x115: 54 h / 115 = 1690 s, whatever the elapsed wall time says.
        let (what, fraction, left) = run_status(12 * H, RunEnd::Known(66 * H), Some(115.0), 400.0);
        assert_eq!(what, "run: emulated 12.0 h of 66.0 h");
        assert_eq!(fraction, Some(12.0 / 66.0));
        assert_eq!(left, Left::About(54.0 * 3600.0 / 115.0));
        assert_eq!(
            status_text(&what, 400.0, left),
            "run: emulated 12.0 h of 66.0 h, 6m40s elapsed, ~28m10s left"
        );
        // At its end, or past it (a mirror read late): nothing left, never negative.
        let (_, f, left) = run_status(70 * H, RunEnd::Known(66 * H), Some(115.0), 9.0);
        assert_eq!((f, left), (Some(1.0), Left::About(0.0)));
    }

    #[test]
    fn a_virtual_run_with_a_known_end_carries_its_pace_on() {
        let (what, fraction, left) = run_status(3 * H, RunEnd::Known(12 * H), None, 10.0);
        assert_eq!(what, "run: emulated 3.0 h of 12.0 h");
        assert_eq!(fraction, Some(0.25));
        assert_eq!(left, Left::About(30.0));
    }

    #[test]
    fn an_unknown_end_is_said_to_be_unknown_with_the_last_arrival_as_a_lower_bound() {
        // Paper 004's report: "~7s left" from the last arrival at 48 h while the run went on
        // to 240 h. Now: unknown, at least what the last arrival is away (realtime).
        let (what, fraction, left) =
            run_status(12 * H, RunEnd::AfterArrivals(48 * H), Some(20_000.0), 3.0);
        assert_eq!(what, "run: emulated 12.0 h, requests arrive until 48.0 h");
        assert_eq!(fraction, None);
        assert_eq!(left, Left::AtLeast(36.0 * 3600.0 / 20_000.0));
        assert_eq!(
            bar_text(&what, 3.0, fraction, left),
            "[??????????] run: emulated 12.0 h, requests arrive until 48.0 h, 3s elapsed, time left unknown, at least 6s"
        );
        // Virtual time has no lower bound in wall time.
        let (_, _, left) = run_status(12 * H, RunEnd::AfterArrivals(48 * H), None, 3.0);
        assert_eq!(left, Left::Unknown);
        // Past the last arrival nothing bounds it: the run waits for its last leases.
        let (what, fraction, left) =
            run_status(50 * H, RunEnd::AfterArrivals(48 * H), Some(20_000.0), 9.0);
        assert_eq!(
            what,
            "run: emulated 50.0 h, past the last arrival (48.0 h), until the last leases end"
        );
        assert_eq!((fraction, left), (None, Left::Unknown));
        assert_eq!(
            status_text(&what, 9.0, left),
            "run: emulated 50.0 h, past the last arrival (48.0 h), until the last leases end, 9s elapsed, time left unknown"
        );
    }

    #[test]
    fn short_runs_show_minutes_or_seconds_of_emulated_time() {
        let (what, _, left) = run_status(30_000_000, RunEnd::Known(120_000_000), Some(10.0), 3.0);
        assert_eq!(what, "run: emulated 0.5 min of 2.0 min");
        assert_eq!(left, Left::About(9.0));
        let (what, _, _) = run_status(5_000_000, RunEnd::AfterArrivals(60_000_000), None, 3.0);
        assert_eq!(what, "run: emulated 5.0 s, requests arrive until 60.0 s");
        // An end at zero is reached at once.
        assert_eq!(
            run_status(0, RunEnd::Known(0), None, 3.0),
            (
                "run: emulated 0.0 s of 0.0 s".to_string(),
                None,
                Left::About(0.0)
            )
        );
    }

    #[test]
    fn a_lower_bound_under_a_second_is_no_bound_worth_showing() {
        assert_eq!(
            status_text("x", 5.0, Left::AtLeast(0.2)),
            "x, 5s elapsed, time left unknown"
        );
    }
}
