//! Parameter sweeps: a sweep file names a topology, the `--set` keys to vary (lists or
//! ranges) and the seeds; every combination runs (spread over threads), one CSV row per run,
//! and a summary with the mean and 95 % confidence interval of each metric per point.
//! `--shard i/n` runs only runs with index ≡ i (mod n), so a sweep can be split across
//! machines; `merge` joins the shards' run files.
//!
//! Sweep file format (documented in `docs/sweeps.md`):
//!
//! ```toml
//! topology = "../topologies/paper000-three-clusters.toml"   # relative to this file
//! seeds = 10                        # or a list: [1, 2, 3]
//! metrics = ["vm_preemptions", "utilization_pct"]   # default: every numeric summary key
//! [set]                             # fixed overrides
//! "emulation.end" = "3d"
//! [vary]                            # one run per combination
//! "igg.dispatch" = ["rr", "pap-rtdp"]
//! "workload.0.das2.arrival_scale" = { from = 3.8, to = 7.0, step = 0.8 }
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::input::diag::{did_you_mean, Diags, Loc};
use crate::input::node::{parse_document, Node, NodeKind, Origin};
use crate::input::table::Table;
use crate::input::Report;
use crate::topology::{self, Overrides};
use crate::{run, RunOptions};

mod file;
mod record;
mod runs;
mod stats;

pub use file::*;
pub use record::*;
pub use runs::*;
pub use stats::*;

#[cfg(test)]
mod tests;

/// A parsed sweep file.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    /// The topology file.
    pub topology: PathBuf,
    /// Seeds to run every point with.
    pub seeds: Vec<u64>,
    /// Summary keys to aggregate (empty: every numeric top-level key).
    pub metrics: Vec<String>,
    /// Fixed overrides.
    pub set: Vec<(String, String)>,
    /// Keys to vary and their values (as TOML text for `--set`).
    pub vary: Vec<(String, Vec<String>)>,
    /// The policies its runs may name.
    pub registry: crate::policy::Registry,
}

/// One run of a sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSpec {
    /// Index in the sweep (stable across shards).
    pub index: usize,
    /// The varied values, in `vary` order.
    pub point: Vec<String>,
    /// The seed.
    pub seed: u64,
}

/// Reads a sweep file; every problem is reported at once, at its `file:line:col`.
pub fn parse(path: &Path) -> Result<Sweep, Box<Report>> {
    parse_with(path, &crate::policy::Registry::builtin())
}

/// [`parse`], with the policies its runs may name.
pub fn parse_with(path: &Path, registry: &crate::policy::Registry) -> Result<Sweep, Box<Report>> {
    let shown = path.display().to_string();
    let text = crate::input::read_toml(path, "check the sweep file's path")?;
    let diags = Diags::default();
    match parse_str(&text, path, &diags, registry) {
        Some(s) if diags.is_empty() => {
            check_topology_file(&s.topology, &text, path, &diags);
            if diags.is_empty() {
                return Ok(s);
            }
        }
        _ => {}
    }
    Err(Box::new(Report::of_file(&shown, &text, diags.into_vec())))
}

/// Every metric a run of `topo` can report: the numeric keys of `summary.json` as dotted
/// paths, known from the topology alone (its Grids and clusters name the nested keys), so a
/// sweep's metric names are checked before anything runs. Realtime-only keys (`speedup`,
/// `timer_lateness_ms.*`) are not included.
pub fn metric_names(topo: &topology::Topology) -> Vec<String> {
    let none = BTreeMap::new();
    let figures = crate::metrics::figures(topo, &[], &none);
    let mut grids = crate::metrics::grid_figures(topo, &[], &BTreeMap::new());
    for (name, g) in grids.iter_mut() {
        // Redirections and payments per peer appear for the peers a run redirected to: any
        // other Grid.
        g.redirected_pct_by_peer = topo
            .grids
            .iter()
            .filter(|p| &p.name != name)
            .map(|p| (p.name.clone(), 0.0))
            .collect();
        g.paid_by_peer = g.redirected_pct_by_peer.clone();
    }
    let skeleton = crate::Summary {
        topology: topo.name.clone(),
        mode: "virtual",
        speedup: None,
        seed: 0,
        interleaving: None,
        warm_up_s: None,
        threads: None,
        replay: None,
        emulated_end_s: 0.0,
        wall_s: 0.0,
        messages: 0,
        timed_events: 0,
        requests: figures.requests,
        makespan_s: 0.0,
        metrics: figures.all,
        clusters: figures.clusters,
        grids,
        request_metrics: crate::metrics::RequestMetrics::skeleton(topo),
        faults: Default::default(),
        invariant_violations: 0,
        violation_examples: Vec::new(),
        timer_lateness_ms: None,
        speedup_sustainable: None,
        speedup_auto: None,
        provenance: None,
        policies: Default::default(),
        plugins: Vec::new(),
    };
    // The summary's `seed` is the run's own, which the run file shows in its `seed` column:
    // a metric of that name would make the column twice.
    serde_json::to_value(&skeleton)
        .map(|v| {
            numeric(&v)
                .into_keys()
                .filter(|k| !is_run_column(k))
                .collect()
        })
        .unwrap_or_default()
}

/// The metrics a sweep records when it names none: [`metric_names`] but the per-request
/// metrics' statistics (`request_metrics.…`, several hundred in a topology of a few Grids),
/// which a sweep records when it names them.
pub fn default_metric_names(topo: &topology::Topology) -> Vec<String> {
    (metric_names(topo).into_iter())
        .filter(|n| !n.starts_with("request_metrics."))
        .collect()
}

/// Whether `name` is a column every run file has (run, seed, error) or a varied key's
/// (`set:…`), so no metric may take it.
pub fn is_run_column(name: &str) -> bool {
    matches!(name, "run" | "seed" | "error") || name.starts_with("set:")
}

/// The most runs a sweep may have (points × seeds): far beyond any study, small enough that
/// listing them cannot exhaust memory.
pub const MAX_SWEEP_RUNS: u64 = 1_000_000;

impl Sweep {
    /// Every run, in a stable order: points in the order of `vary` (last key fastest), each
    /// with every seed.
    pub fn runs(&self) -> Vec<RunSpec> {
        let mut points: Vec<Vec<String>> = vec![Vec::new()];
        for (_, values) in &self.vary {
            points = points
                .into_iter()
                .flat_map(|p| {
                    values.iter().map(move |v| {
                        let mut q = p.clone();
                        q.push(v.clone());
                        q
                    })
                })
                .collect();
        }
        let mut runs = Vec::new();
        for point in points {
            for &seed in &self.seeds {
                runs.push(RunSpec {
                    index: runs.len(),
                    point: point.clone(),
                    seed,
                });
            }
        }
        runs
    }

    /// The `--set` overrides of one run.
    pub fn overrides(&self, r: &RunSpec) -> Vec<String> {
        let mut sets: Vec<String> = self.set.iter().map(|(k, v)| format!("{k}={v}")).collect();
        sets.extend(
            self.vary
                .iter()
                .zip(&r.point)
                .map(|((k, _), v)| format!("{k}={v}")),
        );
        sets.push(crate::topology::seed_override(r.seed));
        sets
    }
}

/// One finished run: its spec and the metrics it produced (or the error).
pub type Outcome = (RunSpec, Result<BTreeMap<String, f64>, String>);

/// A point's runs by (value of the compared key, seed).
type BySeed<'a> = BTreeMap<(&'a str, &'a str), &'a Vec<String>>;

#[cfg(test)]
mod build_tests {
    use super::SweepRecord;

    fn record(commit: &str, dirty: bool) -> SweepRecord {
        serde_json::from_value(serde_json::json!({
            "igemu": "0.1.0", "commit": commit, "dirty": dirty, "sweep_path": "s.toml",
            "sweep_hash": null, "topology_path": "t.toml", "topology_hash": null, "set": {},
            "vary": [], "seeds": [1], "metrics": [], "runs": 1, "shard": null,
            "policies": {}, "outputs": [], "finished": false
        }))
        .expect("a record")
    }

    #[test]
    fn a_sweep_made_by_more_than_one_build_lists_each_once() {
        let mut now = record("bbbbbbbbbbbbbbbb", false);
        now.carry_builds(&record("bbbbbbbbbbbbbbbb", false));
        assert!(now.builds.is_empty(), "one build: nothing to list");
        now.carry_builds(&record("aaaaaaaaaaaaaaaa", true));
        assert_eq!(
            now.builds,
            [
                "0.1.0 (commit aaaaaaaaaaaa, dirty)",
                "0.1.0 (commit bbbbbbbbbbbb)"
            ]
        );
        // Resumed once more by the same build: each build still once, the earliest first.
        let mut later = record("bbbbbbbbbbbbbbbb", false);
        later.carry_builds(&now);
        assert_eq!(later.builds, now.builds);
        // An older record (no commit) still counts as a build of its own.
        let older: SweepRecord = serde_json::from_value({
            let mut v = serde_json::to_value(record("x", false)).expect("json");
            let o = v.as_object_mut().expect("object");
            o.remove("commit");
            o.remove("dirty");
            v
        })
        .expect("an older record reads");
        later.carry_builds(&older);
        assert_eq!(later.builds[0], "0.1.0 (commit unknown)");
    }
}
