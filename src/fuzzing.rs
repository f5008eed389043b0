//! The bodies of the fuzz targets (`fuzz/`, cargo-fuzz) and of the corpus replay that CI runs
//! on stable (`tests/workloads.rs`): each feeds arbitrary bytes to one reader and checks that
//! it answers — a value whose invariants hold, or an error that renders — and never panics.
//! Not part of the library's API.

use std::path::Path;

use crate::topology::{self, Overrides};
use crate::workload::{gwf, swf};

/// Fuzzed text: only UTF-8 reaches the readers (files are read as UTF-8 and refused
/// otherwise).
fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// A topology file: loads (parse, overrides none, validation, workload generation); an error
/// report renders and names its file; a topology has at least one cluster with hosts and
/// every request's id is its index.
pub fn check_topology(data: &[u8]) {
    let Some(text) = text(data) else { return };
    match topology::load_str(text, "fuzz.toml", "fuzz", None, &Overrides::default()) {
        Ok(topo) => {
            assert!(!topo.grids.is_empty(), "a loaded topology has a Grid");
            for (i, r) in topo.requests.iter().enumerate() {
                assert_eq!(r.id.0 as usize, i, "request ids are their indices");
            }
        }
        Err(report) => {
            let shown = report.to_string();
            assert!(shown.contains("fuzz.toml"), "the report names its file");
        }
    }
}

/// An SWF or GWF workload trace: parses or names its bad lines; a parsed trace maps to leases
/// that arrive in order, each with at least one VM, and its summary counts its jobs.
pub fn check_swf(data: &[u8]) {
    let Some(text) = text(data) else { return };
    match swf::parse(text) {
        Ok(trace) => {
            // Fuzzed inputs are small: their jobs always fit in memory.
            let Ok((jobs, skipped)) = swf::to_jobs(&trace, 64, usize::MAX, 1) else {
                panic!("the jobs of a small trace fit in memory");
            };
            assert_eq!(jobs.len() + skipped, trace.jobs.len());
            assert!(jobs.windows(2).all(|w| w[0].arrival <= w[1].arrival));
            assert!(jobs.iter().all(|j| (1..=64).contains(&j.vms)));
            let summary = swf::summarize(&trace).map(|s| s.jobs);
            assert_eq!(summary, Ok(trace.jobs.len()));
        }
        Err(errors) => {
            assert!(!errors.is_empty(), "a refused trace names a line");
            for e in errors.iter().take(3) {
                let _ = e.to_string();
            }
        }
    }
    if let Ok(trace) = gwf::parse(text) {
        let Ok((jobs, skipped)) = gwf::to_jobs(&trace, None, 64, usize::MAX, 1) else {
            panic!("the jobs of a small trace fit in memory");
        };
        assert_eq!(jobs.len() + skipped, trace.jobs.len());
        assert!(gwf::summarize(&trace).is_ok());
    }
}

/// A sweep file (its topology resolved beside `fuzz/`, where none exists unless named
/// absolutely): parses or reports; a parsed sweep lists points × seeds runs, numbered in
/// order.
pub fn check_sweep(data: &[u8]) {
    let Some(text) = text(data) else { return };
    match crate::sweep::parse_text(text, Path::new("fuzz/sweep.toml")) {
        Ok(sweep) => {
            let points = sweep
                .vary
                .iter()
                .fold(1usize, |n, (_, v)| n.saturating_mul(v.len()));
            let expected = points.saturating_mul(sweep.seeds.len());
            // Listing a million runs is allowed, but too slow to do for every input.
            if expected <= 100_000 {
                let runs = sweep.runs();
                assert_eq!(runs.len(), expected);
                assert!(runs.iter().enumerate().all(|(i, r)| r.index == i));
            }
        }
        Err(report) => {
            let _ = report.to_string();
        }
    }
}

/// A `trace.jsonl`: the streaming reader and the whole-file parser agree; a parsed trace
/// renders as text, Mermaid, Chrome JSON and the negotiation list.
pub fn check_trace(data: &[u8]) {
    use crate::trace::render;
    let streamed: Result<Vec<_>, _> = render::events(data).collect();
    let Some(text) = text(data) else { return };
    let parsed = render::parse(text);
    assert_eq!(streamed.is_ok(), parsed.is_ok(), "both readers agree");
    let Ok(events) = parsed else { return };
    let rows = render::negotiations(&events);
    let _ = render::negotiations_csv(&rows);
    let first = events.iter().find_map(|e| e.negotiation);
    if let Some(n) = first {
        let lines = render::negotiation(&events, n, true);
        for l in &lines {
            let _ = render::text_line(l);
        }
        let _ = render::mermaid(&lines, true);
        let _ = render::chrome(&lines);
    }
    if let Some(r) = events.iter().find_map(|e| e.request.clone()) {
        let kept = render::filter(&events, &r);
        assert!(!kept.is_empty(), "a request named in the trace has events");
    }
    if let Some(e) = events.last() {
        let _ = render::why(std::io::Cursor::new(data), e.seq);
    }
}

/// A folder of this process's own for readers that take paths: emptied before each input.
fn scratch() -> &'static Path {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("igemu-fuzz-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&d);
        d
    })
}

/// Writes `parts` into the scratch folder as the files `names` (one each, in order; the rest
/// absent), after removing what the last input left.
fn files_of(names: &[&str], parts: &[&[u8]]) -> &'static Path {
    let dir = scratch();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let _ = std::fs::remove_file(e.path());
        }
    }
    for (name, part) in names.iter().zip(parts) {
        let _ = std::fs::write(dir.join(name), part);
    }
    dir
}

/// A record (`run --record`): its header is read or refused with a message naming the file,
/// and its deliveries stream to the end line or stop at a named line; a record whose
/// deliveries read whole has exactly the deliveries its end line counts.
pub fn check_record(data: &[u8]) {
    let dir = files_of(&["run.rec"], &[data]);
    let path = dir.join("run.rec");
    if let Err(e) = crate::read_record_header(&path) {
        assert!(
            e.to_string().contains("run.rec"),
            "the error names the record"
        );
    }
    let (first, rest) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => data.split_at(i + 1),
        None => (data, &[][..]),
    };
    let body = std::io::Cursor::new(rest.to_vec());
    let mut script = crate::time::record::OrderScript::new(Box::new(body), 2, first);
    loop {
        match script.next_delivery() {
            Ok(Some(_)) => {}
            Ok(None) => {
                let end = String::from_utf8_lossy(rest);
                let counted = end.lines().rev().find(|l| !l.trim().is_empty());
                let n = counted.and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok());
                assert_eq!(n, Some(script.read()), "the end line counts the deliveries");
                break;
            }
            Err(e) => {
                assert!(e.starts_with("line "), "a bad record names its line: {e}");
                break;
            }
        }
    }
}

/// A sweep's run file, as `--resume` reads it (against a sweep of two points and three
/// seeds) and as `sweep merge` reads it (then summarised): each keeps only rows of runs the
/// sweep has, with every column, or says why not; the points of a merge are written or
/// refused, never half.
pub fn check_run_file(data: &[u8]) {
    const SWEEP: &str = "topology = \"t.toml\"\nseeds = 3\nmetrics = [\"m\", \"k\"]\n\
                         [vary]\n\"igg.dispatch\" = [\"rr\", \"lrf\"]\n";
    // Invariant: the sweep above is valid (its topology is never read here).
    let sweep = crate::sweep::parse_text(SWEEP, Path::new("fuzz/s.toml")).expect("a valid sweep");
    let header = crate::sweep::runs_header(&sweep, &sweep.metrics);
    let dir = files_of(&["runs.csv"], &[data]);
    let runs = dir.join("runs.csv");
    if let Ok(done) = crate::sweep::read_done(&sweep, &header, &runs) {
        assert!(done.len() <= sweep.runs().len());
        for (i, row) in &done {
            assert!(*i < sweep.runs().len() && row.len() == header.len());
            assert!(
                row[header.len() - 1].is_empty(),
                "only finished runs are kept"
            );
        }
    }
    let files = [runs];
    let points = dir.join("points.csv");
    match crate::sweep::summarize(&files, &points) {
        Ok(_) => assert!(points.exists(), "summarised points are written"),
        Err(e) => {
            assert!(!e.is_empty());
            assert!(!points.exists(), "refused points are not written");
        }
    }
    let _ = crate::sweep::paired(&files, &dir.join("paired.csv"));
}

/// A run's or a sweep's output folder for `igemu report`: the input's first byte chooses
/// which (even: a run, odd: a sweep) and its NUL-separated parts are the files; the page is
/// made or refused with a message naming a file of the folder, and a made page is HTML.
pub fn check_report(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let parts: Vec<&[u8]> = rest.split(|&b| b == 0).collect();
    let names: &[&str] = if which % 2 == 0 {
        &[
            "summary.json",
            "requests.csv",
            "intervals.csv",
            "utilization.csv",
            "decisions.csv",
            "trace.jsonl",
            "leases.csv",
        ]
    } else {
        &["points.csv", "runs.csv", "sweep.json", "paired.csv"]
    };
    let dir = files_of(names, &parts);
    let options = crate::report::Options::default();
    match crate::report::render(dir, &options) {
        Ok(page) => assert!(page.starts_with("<!DOCTYPE html>"), "a page is HTML"),
        Err(e) => {
            let _ = e.to_string();
        }
    }
}
