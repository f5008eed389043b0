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
        let elapsed = self.watch.elapsed_secs();
        if self.style == Style::Quiet || elapsed < self.next_at {
            return;
        }
        if self.style == Style::Terminal {
            let _ = write!(
                std::io::stderr(),
                "\r\x1b[2K{}",
                bar_line(what, elapsed, fraction)
            );
            self.next_at = elapsed + 1.0;
        } else {
            let _ = writeln!(std::io::stderr(), "{}", line(what, elapsed, fraction));
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

/// A plain progress line: `  WHAT, 1m05s elapsed, ~30s left` (`time left unknown` when the
/// fraction done is unknown or zero).
pub fn line(what: &str, elapsed_s: f64, fraction: Option<f64>) -> String {
    format!("  {}", status(what, elapsed_s, fraction))
}

/// A terminal's progress line: the fraction done as a bar of ten cells, then what [`line()`]
/// says: `[#####.....] 12/40 runs, 1m02s elapsed, ~3m10s left` (`[??????????]` when the
/// fraction is unknown). Plain ASCII; the caller adds the escape codes that rewrite it.
pub fn bar_line(what: &str, elapsed_s: f64, fraction: Option<f64>) -> String {
    let bar = match known(fraction) {
        Some(f) => {
            let full = ((f.min(1.0) * BAR_CELLS as f64).floor() as usize).min(BAR_CELLS);
            format!("{}{}", "#".repeat(full), ".".repeat(BAR_CELLS - full))
        }
        None => "?".repeat(BAR_CELLS),
    };
    format!("[{bar}] {}", status(what, elapsed_s, fraction))
}

/// A fraction done that can be used for an estimate: finite and above zero.
fn known(fraction: Option<f64>) -> Option<f64> {
    fraction.filter(|f| f.is_finite() && *f > 0.0)
}

/// `WHAT, 1m05s elapsed, ~30s left`.
fn status(what: &str, elapsed_s: f64, fraction: Option<f64>) -> String {
    let left = match known(fraction) {
        Some(f) => {
            let left = (elapsed_s * (1.0 - f.min(1.0)) / f).max(0.0);
            format!("~{} left", clock(left))
        }
        None => "time left unknown".to_string(),
    };
    format!("{what}, {} elapsed, {left}", clock(elapsed_s))
}

/// Whole seconds as `45s`, `3m07s` or `2h05m`.
fn clock(secs: f64) -> String {
    let s = secs.round().min(1e9) as u64;
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
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
    /// Starts watching a run of `topo` in `style` (no thread at all when `Quiet`). The time
    /// left is estimated against the run's fixed end, or else its last request's arrival
    /// (unknown once past it: the run then waits for the last leases to end).
    pub fn start(topo: &crate::topology::Topology, style: Style) -> RunWatch {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        use std::sync::Arc;
        let now = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let target_us = match topo.emulation.end {
            crate::topology::EndCondition::At(t) => t.as_micros(),
            crate::topology::EndCondition::AllDone { .. } => topo
                .requests
                .iter()
                .map(|r| r.arrival.as_micros())
                .max()
                .unwrap_or(0),
        };
        let thread = (style != Style::Quiet).then(|| {
            let (now, stop) = (Arc::clone(&now), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut p = Progress::new(style);
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    let t = now.load(Ordering::Relaxed);
                    let hours = |us: u64| us as f64 / 3.6e9;
                    let (what, fraction) = if t < target_us {
                        let what = format!(
                            "run: emulated {:.1} h of ~{:.1} h",
                            hours(t),
                            hours(target_us)
                        );
                        (what, Some(t as f64 / target_us as f64))
                    } else {
                        let what = format!("run: emulated {:.1} h, finishing", hours(t));
                        (what, None)
                    };
                    p.update(&what, fraction);
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
}
