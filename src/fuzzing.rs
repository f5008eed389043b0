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
