//! `igemu report`: one self-contained `report.html` of a run directory (provenance, key
//! figures, a Gantt chart per cluster, utilisation over time, peering) or of a sweep
//! directory (each metric against the varied key with 95 % confidence intervals, and the
//! table behind it).
//!
//! The charts are static SVG written here ([`svg`]) rather than drawn by a charting script
//! or a plotting crate: a Gantt chart of VM lanes is not a chart type such crates offer, SVG
//! needs no script to render (the page opens offline, in any browser, and prints), tooltips
//! come free with `<title>`, and merging spans per pixel keeps a large run's page small. The
//! page's one script only checks, for tests, that every chart drew.
//!
//! Whatever a run's or sweep's size, the page and the memory that draws it stay bounded:
//! files are read a row at a time and nothing is kept per row beyond what a chart draws (a
//! per-pixel aggregate where a chart would hold more), tables show their first rows, charts
//! merge what falls into one pixel, and the page holds at most [`PAGE_CAP`] bytes; the
//! page says wherever it left something out or merged it. Every number the page shows is
//! checked as read: a file that is not what igemu writes, or two files that are not of one
//! run, are refused (exit code 2) at their place.

mod hosts;
mod html;
mod labels;
mod leases;
mod peering;
mod read;
mod reqmetrics;
mod requests;
mod run;
mod runs;
mod spans;
mod summary;
pub mod svg;
mod sweep;
mod usage;

use std::path::{Path, PathBuf};

use crate::Error;

pub use html::PAGE_CAP;

/// What a report shows and where it goes.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Only this window of emulated time in the Gantt and utilisation charts (a run's report).
    pub window: Option<Window>,
    /// The file to write (default `report.html` in the directory).
    pub out: Option<PathBuf>,
}

/// A window of emulated time, seconds: `from`, to `to` or the end of the run.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Window {
    /// Its start.
    pub from: f64,
    /// Its end; `None` for the end of the run.
    pub to: Option<f64>,
}

impl Window {
    /// Parses `FROM..TO`, `..TO` or `FROM..`, each a duration (`12h`, `1d6h`, `5400`).
    pub fn parse(text: &str) -> Result<Window, String> {
        let hint = "write FROM..TO with durations, e.g. `12h..1d`, `..6h` or `2d..`";
        let Some((a, b)) = text.split_once("..") else {
            return Err(format!("`{text}` is not a window; {hint}"));
        };
        let secs = |t: &str| -> Result<Option<f64>, String> {
            if t.trim().is_empty() {
                return Ok(None);
            }
            crate::time::parse_duration(t)
                .map(|d| Some(d.as_secs_f64()))
                .map_err(|e| format!("`{text}`: {e}; {hint}"))
        };
        let (from, to) = (secs(a)?.unwrap_or(0.0), secs(b)?);
        match to {
            Some(t) if t == from => {
                return Err(format!(
                    "`{text}` is empty: it ends where it starts; {hint}"
                ))
            }
            Some(t) if t < from => return Err(format!("`{text}` ends before it starts; {hint}")),
            _ => {}
        }
        Ok(Window { from, to })
    }

    /// The time scale of the window in a run that ended at `end`.
    pub(crate) fn scale(window: Option<Window>, end: f64) -> svg::TimeScale {
        match window {
            None => svg::TimeScale::to(end),
            Some(w) => svg::TimeScale::between(w.from, w.to.unwrap_or(end.max(w.from + 1.0))),
        }
    }
}

/// Writes the report of `dir` (a run's or a sweep's output directory) — into `report.html`
/// there unless `options` say otherwise — and returns its path. The file is written whole or
/// not at all.
pub fn write(dir: &Path, options: &Options) -> Result<PathBuf, Error> {
    // Every file the report may read from `dir`, and the one it replaces there.
    let read = || {
        (crate::RUN_OUTPUTS.iter()).chain(&["runs.csv", "points.csv", "paired.csv", "sweep.json"])
    };
    crate::check_regular_files(dir, |name| {
        name == "report.html" || read().any(|r| *r == name)
    })?;
    if let Some(out) = &options.out {
        let inputs: Vec<PathBuf> = read().map(|name| dir.join(name)).collect();
        let report: crate::OutputKind = ("an igemu report", |h| {
            h.starts_with(b"<!DOCTYPE html>") && h.windows(12).any(|w| w == b"<title>igemu")
        });
        crate::check_output_file("--out", out, &inputs, report)?;
    }
    let html = render(dir, options)?;
    let path = options
        .out
        .clone()
        .unwrap_or_else(|| dir.join("report.html"));
    crate::write_atomically(&path, html.as_bytes()).map_err(Error::output(&path))?;
    Ok(path)
}

/// The sweep whose outputs are in `dir` as a table for a terminal, at most `width` characters
/// wide (the swept values and the first metrics, `mean ± half-width`) and `rows` points long.
pub fn sweep_table(dir: &Path, width: usize, rows: usize) -> Result<String, Error> {
    sweep::terminal_table(dir, width, rows)
}

/// The report of `dir` as HTML: a run's if it holds `summary.json`, a sweep's if it holds
/// `points.csv`.
pub fn render(dir: &Path, options: &Options) -> Result<String, Error> {
    if !dir.is_dir() {
        return Err(Error::Usage(format!(
            "{} is not a directory; give a run's --out directory (with summary.json) or a sweep's (with points.csv)",
            dir.display()
        )));
    }
    if dir.join("summary.json").exists() {
        run::report(dir, options.window)
    } else if dir.join("points.csv").exists() {
        sweep::report(dir)
    } else if dir.join("stress.json").exists() || dir.join("stress.csv").exists() {
        // `igemu run --out` into it would be refused (a folder holds one run, sweep or
        // stress test), so the usual advice does not apply.
        Err(Error::Usage(format!(
            "{} holds a stress test's results (stress.csv, stress.json), which have no report \
             page: read stress.csv, or replay a run it lists (its `reproduce` command, with an \
             --out folder of its own) and report that folder",
            dir.display()
        )))
    } else if let Some(record) = unfinished_sweep(dir) {
        // Its points are written when its last run ends (a sweep started again removes the
        // last ones first): drawn now, they would be another sweep's, or none.
        Err(Error::Usage(format!(
            "{} holds an unfinished sweep ({record} says so: it was interrupted, or is still \
             running); resume it with `igemu sweep {} --out {0} --resume`, then report it",
            dir.display(),
            crate::sweep::SweepRecord::read(&dir.join(&record))
                .ok()
                .flatten()
                .map_or_else(|| "SWEEP_FILE".to_string(), |r| r.sweep_path.clone())
        )))
    } else {
        Err(Error::Usage(format!(
            "{} holds neither a run's outputs (summary.json) nor a finished sweep's (points.csv); run `igemu run --out {0}` or `igemu sweep FILE --out {0}` first",
            dir.display()
        )))
    }
}

/// The record (`sweep.json`, or a shard's) of an unfinished sweep in `dir`, if one is there.
fn unfinished_sweep(dir: &Path) -> Option<String> {
    let names = std::fs::read_dir(dir).ok()?;
    let mut records: Vec<String> = names
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("sweep") && n.ends_with(".json"))
        .collect();
    records.sort();
    records.into_iter().find(|n| {
        crate::sweep::SweepRecord::read(&dir.join(n))
            .ok()
            .flatten()
            .is_some_and(|r| !r.finished)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_parse_from_durations_and_refuse_nonsense() {
        let w = Window::parse("12h..1d").expect("valid");
        assert_eq!((w.from, w.to), (43_200.0, Some(86_400.0)));
        assert_eq!(Window::parse("..6h").expect("valid").from, 0.0);
        assert_eq!(Window::parse("2d..").expect("valid").to, None);
        for bad in ["6h", "5h..2h", "x..2h", "1h..1h", "0..0", "..0"] {
            let e = Window::parse(bad).expect_err(bad);
            assert!(e.contains("FROM..TO"), "{bad}: {e}");
        }
        // An empty window is not a reversed one.
        let e = Window::parse("1h..1h").expect_err("empty");
        assert!(
            e.starts_with("`1h..1h` is empty: it ends where it starts"),
            "{e}"
        );
        assert!(Window::parse("0..0")
            .expect_err("empty")
            .contains("is empty"));
        let e = Window::parse("5h..2h").expect_err("reversed");
        assert!(e.contains("ends before it starts"), "{e}");
    }
}
